//! Journal replay is idempotent and correct: replaying a journal into the
//! cache and flushing gives the files that applying the journaled updates
//! directly gives; replaying the same journal again (as after a crash right
//! after the flush) changes no byte; a FORGET record drops what came before
//! it for that file.

use std::path::Path;

use rrd_daemon::config::Config;
use rrd_daemon::journaler::Journaler;
use rrd_daemon::replay;
use rrd_daemon::state::Daemon;
use rrd_engine::update::{update_file, UpdateOptions};
use rrd_journal::{Journal, Record, SyncPolicy};

mod common;

use common::{make_xy as make, T0};

/// Replays `journal_dir` into a fresh daemon state and writes everything.
fn replay_and_flush(base: &Path, journal_dir: &Path) -> replay::ReplaySummary {
    let config = Config { base_dir: Some(base.to_path_buf()), ..Default::default() };
    let daemon = Daemon::new(config, Journaler::disabled());
    let report = rrd_journal::replay(journal_dir).unwrap();
    let summary = replay::apply(&daemon, &report, report.segments.first().copied().unwrap_or(1));
    common::write_everything_and_stop(&daemon.cache);
    assert!(daemon.cache.is_drained());
    summary
}

#[test]
fn replay_twice_gives_the_same_files_as_direct_updates() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let journal_dir = base.join("journal");
    let reference = base.join("reference");
    std::fs::create_dir_all(&reference).unwrap();
    let names = ["a.rrd", "b.rrd", "c.rrd"];
    for n in names {
        make(&base.join(n));
        std::fs::copy(base.join(n), reference.join(n)).unwrap();
    }
    let key = |n: &str| base.join(n).display().to_string();
    let v = |k: i64, x: i64| format!("{}:{}:{}", T0 + 300 * k, x, x * 100);
    let mut j = Journal::open(&journal_dir, SyncPolicy::Always).unwrap();
    j.append(&[
        Record { path: key("a.rrd"), args: vec![v(1, 1), v(2, 2)] },
        Record { path: key("b.rrd"), args: vec![v(1, 5)] },
        Record { path: key("c.rrd"), args: vec![v(1, 9)] },
    ])
    .unwrap();
    j.rotate().unwrap();
    j.append(&[
        Record { path: key("a.rrd"), args: vec![v(3, 3), v(4, 4)] },
        // FORGET c.rrd: its value above is dropped...
        Record { path: key("c.rrd"), args: vec![] },
        // ...and a later one kept.
        Record { path: key("c.rrd"), args: vec![v(2, 7)] },
        Record { path: key("b.rrd"), args: vec![v(2, 6), v(9, 8)] },
    ])
    .unwrap();
    drop(j);

    let first = replay_and_flush(&base, &journal_dir);
    // c.rrd's first value is applied to the cache, then dropped by the FORGET.
    assert_eq!(first.values_applied, 9, "{first:?}");
    assert_eq!(first.values_skipped, 0);

    // The same updates applied directly.
    let direct = |n: &str, args: Vec<String>| {
        let r = update_file(&reference.join(n), &args, &UpdateOptions::default(), false).unwrap();
        assert!(r.error.is_none());
    };
    direct("a.rrd", vec![v(1, 1), v(2, 2), v(3, 3), v(4, 4)]);
    direct("b.rrd", vec![v(1, 5), v(2, 6), v(9, 8)]);
    direct("c.rrd", vec![v(2, 7)]);
    let snapshot: Vec<Vec<u8>> = names.iter().map(|n| std::fs::read(base.join(n)).unwrap()).collect();
    for (n, bytes) in names.iter().zip(&snapshot) {
        assert_eq!(
            bytes,
            &std::fs::read(reference.join(n)).unwrap(),
            "{n}: replay differs from direct updates"
        );
    }

    // Replaying again (the journal was not removed): nothing to apply, no byte changes.
    let second = replay_and_flush(&base, &journal_dir);
    assert_eq!(second.values_applied, 0, "{second:?}");
    assert_eq!(second.values_skipped, 9);
    for (n, bytes) in names.iter().zip(&snapshot) {
        assert_eq!(bytes, &std::fs::read(base.join(n)).unwrap(), "{n} changed on the second replay");
    }
}

/// A record for a file that no longer exists is counted, not fatal.
#[test]
fn records_for_missing_files_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let journal_dir = base.join("journal");
    let mut j = Journal::open(&journal_dir, SyncPolicy::Always).unwrap();
    j.append(&[Record {
        path: base.join("gone.rrd").display().to_string(),
        args: vec![format!("{}:1:1", T0 + 300)],
    }])
    .unwrap();
    drop(j);
    let s = replay_and_flush(&base, &journal_dir);
    assert_eq!((s.records, s.records_unreadable, s.values_applied), (1, 1, 0));
}
