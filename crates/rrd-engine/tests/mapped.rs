//! Mapped updates (`rrd_engine::mapped`) against the real rrdtool 1.7.2 and
//! against direct updates, byte for byte.
//!
//! - rrdtool: files made by `rrdtool create`, then a seeded stream of
//!   updates (several arguments per call, unknowns, gaps longer than the
//!   heartbeat, consolidations of every archive) applied by `rrdtool update`
//!   to one copy and by `MappedFiles::update` to another; the files must be
//!   equal after every call, with headers kept and without.
//! - Holt-Winters: the seasonal smoother's row depends on the file name as
//!   typed, so there the mapped update and the direct one run on the *same*
//!   path, one after the other, the file being put back by renaming a copy
//!   over it in between (which the mapped cache must notice).
//!
//! A missing rrdtool fails the tests loudly.

use std::path::{Path, PathBuf};

use rrd_engine::mapped::MappedFiles;
use rrd_engine::update::{update_file, UpdateOptions};

use rrd_testkit::Rng;

mod common;
use common::rrdtool;

const START: i64 = 1_000_000_000;

/// Update calls for `ds_count` data sources: 1 to 3 arguments each, steps
/// of 60 to 700 s (some beyond a 600 s heartbeat), about 5% unknowns, and
/// counters that only grow.
fn stream(seed: u64, ds_count: usize, calls: usize) -> Vec<Vec<String>> {
    let mut rng = Rng::new(seed);
    let mut t = START;
    let mut counters = vec![0u64; ds_count];
    (0..calls)
        .map(|_| {
            (0..1 + rng.below(3))
                .map(|_| {
                    t += [60, 300, 300, 300, 420, 700][rng.below(6) as usize];
                    let mut arg = t.to_string();
                    for c in counters.iter_mut() {
                        *c += rng.below(50_000);
                        if rng.below(20) == 0 {
                            arg.push_str(":U");
                        } else {
                            arg.push_str(&format!(":{c}"));
                        }
                    }
                    arg
                })
                .collect()
        })
        .collect()
}

fn check_against_rrdtool(defs: &str, ds_count: usize, seed: u64, keep_headers: bool) {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("rrdtool.rrd");
    let ours = dir.path().join("mapped.rrd");
    let t = theirs.to_str().unwrap();
    let mut args = vec!["create", t, "--start", "1000000000", "--step", "300"];
    args.extend(defs.split(' '));
    rrdtool(&args);
    std::fs::copy(&theirs, &ours).unwrap();
    let mut files = MappedFiles::new(4, u64::MAX);
    files.keep_headers = keep_headers;
    for (i, call) in stream(seed, ds_count, 80).iter().enumerate() {
        let mut args = vec!["update", t];
        args.extend(call.iter().map(String::as_str));
        rrdtool(&args);
        let r = files.update(&ours, call, &UpdateOptions::default(), false).unwrap();
        assert!(r.error.is_none(), "call {i} {call:?}: {:?}", r.error.map(|e| e.to_string()));
        assert!(
            std::fs::read(&theirs).unwrap() == std::fs::read(&ours).unwrap(),
            "{defs}: the files differ after call {i} ({call:?}), keep_headers {keep_headers}"
        );
    }
    if keep_headers {
        assert!(files.counters.headers_kept >= 70, "{:?}", files.counters);
    }
}

#[test]
fn mapped_updates_equal_rrdtool() {
    let schemas = [
        (
            "DS:g:GAUGE:600:U:U DS:c:COUNTER:600:U:U RRA:AVERAGE:0.5:1:20 RRA:MAX:0.5:3:10 \
             RRA:MIN:0.5:3:10 RRA:LAST:0.5:6:5",
            2,
        ),
        ("DS:d:DERIVE:600:0:U DS:a:ABSOLUTE:600:U:U DS:g:GAUGE:600:0:100000 RRA:AVERAGE:0.4:1:50 RRA:AVERAGE:0.5:12:10", 3),
        (
            "DS:in:GAUGE:600:U:U DS:out:GAUGE:600:U:U RRA:AVERAGE:0.5:1:600 RRA:AVERAGE:0.5:6:600 \
             RRA:MAX:0.5:6:600 RRA:AVERAGE:0.5:24:600 RRA:MAX:0.5:24:600 RRA:AVERAGE:0.5:144:600 \
             RRA:MAX:0.5:144:600",
            2,
        ),
    ];
    for (i, (defs, n)) in schemas.iter().enumerate() {
        let defs = defs.split_whitespace().collect::<Vec<_>>().join(" ");
        check_against_rrdtool(&defs, *n, 17 + i as u64, false);
        check_against_rrdtool(&defs, *n, 17 + i as u64, true);
    }
}

fn copy_over(from: &Path, to: &Path) {
    // A new inode renamed over the path, as `rrdtool create`/`restore` do.
    let tmp = to.with_extension("tmp");
    std::fs::copy(from, &tmp).unwrap();
    std::fs::rename(&tmp, to).unwrap();
}

#[test]
fn holt_winters_mapped_equals_direct_on_the_same_path() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("hw.rrd");
    let p = path.to_str().unwrap();
    rrdtool(&[
        "create",
        p,
        "--start",
        "1000000000",
        "--step",
        "300",
        "DS:v:GAUGE:600:U:U",
        "RRA:AVERAGE:0.5:1:40",
        "RRA:HWPREDICT:40:0.5:0.5:6",
        "RRA:MHWPREDICT:40:0.3:0.2:6",
    ]);
    let mut state = std::fs::read(&path).unwrap();
    let saved = dir.path().join("state.rrd");
    let mut files = MappedFiles::default();
    files.keep_headers = true;
    for (i, call) in stream(5, 1, 40).iter().enumerate() {
        std::fs::write(&saved, &state).unwrap();
        copy_over(&saved, &path);
        files.update(&path, call, &UpdateOptions::default(), false).unwrap();
        let mapped = std::fs::read(&path).unwrap();
        copy_over(&saved, &path);
        update_file(&path, call, &UpdateOptions::default(), false).unwrap();
        let direct = std::fs::read(&path).unwrap();
        assert!(mapped == direct, "Holt-Winters file differs after call {i} ({call:?})");
        state = direct;
    }
    assert_eq!(files.counters.replaced, 39, "{:?}", files.counters);
}
