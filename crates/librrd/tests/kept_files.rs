//! What our library keeps between `rrd_update_r` calls (descriptors and
//! decoded headers) never outlives a change another process made: a file
//! replaced by rename (same schema and another), truncated, locked,
//! deleted and created again, or updated in between. `kept_files.py` runs
//! the same calls on our library and on Debian's librrd 1.7.2 (which keeps
//! nothing); every return value, error text and file must be equal, and
//! ours must hold at most `RRDSCALE_LIBRRD_MAX_OPEN` descriptors, numbered
//! from 1024 up (out of `select()`'s range). Ours runs with its read-ahead
//! across calls forced on.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn side(library: &Path) -> (tempfile::TempDir, String) {
    let work = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(PYTHON);
    cmd.arg(script("kept_files.py")).arg(library).arg(work.path());
    cmd.env("RRDSCALE_LIBRRD_MAX_OPEN", "8");
    // The read-ahead across calls on from the start (it otherwise waits for
    // memory to be short): its guesses must not change any result.
    cmd.env("RRDSCALE_LIBRRD_AHEAD", "always");
    let out = run(cmd, None);
    (work, out)
}

fn fds(out: &str) -> Vec<i64> {
    let at = out.rfind("\"fds\"").expect("the script ran to the end");
    let open = at + out[at..].find('[').unwrap();
    let close = open + out[open..].find(']').unwrap();
    out[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

#[test]
fn kept_descriptors_and_headers_follow_other_processes_changes() {
    require(PYTHON, "python3");
    require(DEBIAN_LIBRRD, "librrd8");
    require("/usr/bin/rrdtool", "rrdtool");
    let (ours_dir, ours) = side(&our_library());
    let (theirs_dir, theirs) = side(Path::new(DEBIAN_LIBRRD));
    let log = |s: &str| s[..s.rfind("\"fds\"").unwrap()].to_string();
    assert_same_text(&log(&ours), &log(&theirs), "rrd_update_r results around foreign changes");
    // The cases did what they are named for, on both libraries.
    for expected in [
        "\"old inode untouched\",\ntrue",
        "expected 3 data source readings (got 2)",
        "could not lock RRD",
        "\"truncated length\",\n1000",
    ] {
        assert!(ours.contains(expected), "{expected} in {ours}");
    }
    assert!(ours.matches(",\n0,\n\"\"").count() > 120, "most calls succeed");
    assert_eq!(
        assert_same_files(ours_dir.path(), theirs_dir.path()),
        39,
        "every file equal (the truncated one removed)"
    );
    let kept = fds(&ours);
    assert!(!kept.is_empty() && kept.len() <= 8, "ours keeps 1 to 8 descriptors: {kept:?}");
    assert!(kept.iter().all(|&fd| fd >= 1024), "kept descriptors above select()'s range: {kept:?}");
    assert_eq!(fds(&theirs), Vec::<i64>::new(), "librrd keeps none");
}
