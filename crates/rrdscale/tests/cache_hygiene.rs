//! Cache hygiene (issue 3): `create` leaves no pages of the new file in the
//! page cache; an update brings in only the pages it needs; `dump` and
//! `fetch` of a cold file leave nothing behind and keep what was hot.
//! Runs on the real disk (DONTNEED does nothing on tmpfs).

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};

use common::tools::rrdscale_ok as rrdscale;
use std::process::Command;

use rrd_engine::pagecache;

fn disk_dir() -> tempfile::TempDir {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(base).expect("temp dir under the target dir");
    let out = Command::new("stat").args(["-f", "-c", "%T"]).arg(dir.path()).output().expect("stat -f");
    let fs = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_ne!(fs, "tmpfs", "this test needs a disk-backed directory; {} is on tmpfs", dir.path().display());
    dir
}

fn resident(path: &Path) -> Vec<u64> {
    let f = File::open(path).unwrap();
    pagecache::resident_pages(&f)
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, r)| **r)
        .map(|(i, _)| i as u64)
        .collect()
}

#[test]
fn create_update_dump_fetch_leave_only_needed_pages() {
    let dir = disk_dir();
    let file = dir.path().join("p.rrd");
    // The perftest schema: 69,824 bytes = 18 pages.
    let schema = rrd_bench::schema::perftest();
    let mut create = vec!["create", "p.rrd", "-b", "1000000200", "-s", "300"];
    create.extend(schema.iter().map(String::as_str));
    rrdscale(dir.path(), &create);
    assert_eq!(resident(&file), Vec::<u64>::new(), "create must leave no pages cached");

    // One step: the header page and one row of RRA 0 (at most two pages).
    rrdscale(dir.path(), &["update", "p.rrd", "1000000500:1:2"]);
    let after_update = resident(&file);
    assert!(after_update.contains(&0), "the header page is needed: {after_update:?}");
    assert!(
        after_update.len() <= 2,
        "an update with readahead off touches <= 2 pages here: {after_update:?}"
    );

    // dump and fetch read every archive but leave exactly what was hot.
    rrdscale(dir.path(), &["dump", "p.rrd"]);
    assert_eq!(resident(&file), after_update, "dump must not leave pages behind");
    rrdscale(dir.path(), &["fetch", "p.rrd", "AVERAGE", "-s", "1000000000", "-e", "1000300000"]);
    assert_eq!(resident(&file), after_update, "fetch must not leave pages behind");

    // A completely cold file stays cold after a dump.
    pagecache::evict(&File::open(&file).unwrap()).unwrap();
    assert_eq!(resident(&file), Vec::<u64>::new());
    let xml = rrdscale(dir.path(), &["dump", "p.rrd"]);
    assert!(xml.len() > 10_000, "the dump really read the archives");
    assert_eq!(resident(&file), Vec::<u64>::new(), "a dump of a cold file leaves it cold");
}
