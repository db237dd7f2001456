//! Migrating rrdcached's journals (hand-written in its format): the rules
//! (FORGET, WROTE, rrdcached's acceptance per line, aliases of one file,
//! truncated and garbage lines, unreadable files, `-B`), the files given
//! by a flush equal to direct updates with the pending values, and the
//! crash argument: a start that copied the values into our journal but did
//! not delete rrdcached's files, followed by another start, applies every
//! value once.

use std::path::{Path, PathBuf};

use rrd_daemon::config::Config;
use rrd_daemon::journaler::Journaler;
use rrd_daemon::paths::Paths;
use rrd_daemon::rrdcached_journal::{self, Summary};
use rrd_daemon::state::Daemon;
use rrd_daemon::replay;
use rrd_engine::update::{update_file, UpdateOptions};
use rrd_journal::{Journal, Record, SyncPolicy};

mod common;

const T0: i64 = 1_000_000_000;

fn t(k: i64) -> i64 {
    T0 + 300 * k
}

fn make(path: &Path) {
    common::create_rrd(path, T0, &["DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:20", "RRA:MAX:0.5:2:20"]);
}

fn direct(path: &Path, args: &[String]) {
    let r = update_file(path, args, &UpdateOptions::default(), false).unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
}

struct Setup {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    journal: PathBuf,
    reference: PathBuf,
}

const NAMES: [&str; 4] = ["a.rrd", "b.rrd", "sp ace.rrd", "c.rrd"];

/// RRD files (and reference copies), a.rrd already holding t(1) (written by
/// rrdcached), and rrdcached journals in its order: a legacy
/// `rrd.journal`, then two timestamped files, the last one cut by kill -9.
fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let journal = base.join("journal");
    let reference = base.join("reference");
    std::fs::create_dir_all(&journal).unwrap();
    std::fs::create_dir_all(&reference).unwrap();
    for n in NAMES {
        make(&base.join(n));
        std::fs::copy(base.join(n), reference.join(n)).unwrap();
    }
    direct(&base.join("a.rrd"), &[format!("{}:1", t(1))]);
    direct(&reference.join("a.rrd"), &[format!("{}:1", t(1))]);
    let b = base.display();
    std::fs::write(journal.join("rrd.journal"), format!("update c.rrd {}:4\n", t(1))).unwrap();
    std::fs::write(
        journal.join("rrd.journal.1700000000.000001"),
        [
            format!("update a.rrd {}:1", t(1)),
            // Another name for a.rrd (another entry in rrdcached's cache).
            format!("update ./a.rrd {}:2", t(2)),
            // a.rrd on disk holds only t(1): t(2) arrived during the write.
            format!("wrote {b}/a.rrd"),
            // Refused at t(0) when sent: t(3) was refused with it.
            format!("update b.rrd {}:5 {}:6 {}:7", t(1), t(0), t(3)),
            format!("update sp\\ ace.rrd {}:1", t(1)),
            format!("forget {b}/sp ace.rrd"),
            format!("update sp\\ ace.rrd {}:3", t(2)),
            format!("update c.rrd N:1 {}:1", t(5)),
            format!("update gone.rrd {}:1", t(1)),
            format!("update ../outside.rrd {}:1", t(1)),
            "garbage here".to_string(),
            String::new(),
        ]
        .join("\n"),
    )
    .unwrap();
    std::fs::write(
        journal.join("rrd.journal.1700000001.000000"),
        format!("update a.rrd {}:3\nupdate b.rrd {}:8 {}:9", t(3), t(4), t(5)),
    )
    .unwrap();
    Setup { _tmp: tmp, base, journal, reference }
}

fn expected_summary(denied: bool) -> Summary {
    Summary {
        files: 3,
        files_kept: 0,
        lines: 14,
        bad_lines: 2,
        wrote_lines: 1,
        forget_lines: 1,
        values_migrated: 6,
        rrd_files: 4,
        values_skipped: 3,
        values_forgotten: 1,
        values_refused: 2,
        values_unreadable: if denied { 1 } else { 2 },
        values_denied: u64::from(denied),
    }
}

fn rrdcached_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rrd.journal"))
        .collect();
    v.sort();
    v
}

/// A daemon's start: our journal replayed, rrdcached's migrated, all of it
/// applied; then every pending value written.
fn start_and_flush(s: &Setup, base_only: bool) -> (Option<Summary>, replay::ReplaySummary) {
    let config = Config { base_dir: Some(s.base.clone()), base_only, ..Default::default() };
    let paths = Paths::new(Some(s.base.as_path()), base_only);
    let mut report = rrd_journal::replay(&s.journal).unwrap();
    let mut journal = Journal::open(&s.journal, SyncPolicy::None).unwrap();
    let first = report.segments.first().copied().unwrap_or(journal.seq());
    let migrated = rrdcached_journal::migrate(&s.journal, &paths, &mut journal, &mut report).unwrap();
    drop(journal);
    let daemon = Daemon::new(config, Journaler::disabled());
    let applied = replay::apply(&daemon, &report, first);
    common::write_everything_and_stop(&daemon.cache);
    assert!(daemon.cache.is_drained());
    (migrated, applied)
}

fn assert_files_as_direct_updates(s: &Setup) {
    let v = |k: i64, x: i64| format!("{}:{x}", t(k));
    direct(&s.reference.join("a.rrd"), &[v(2, 2), v(3, 3)]);
    direct(&s.reference.join("b.rrd"), &[v(1, 5), v(4, 8)]);
    direct(&s.reference.join("sp ace.rrd"), &[v(2, 3)]);
    direct(&s.reference.join("c.rrd"), &[v(1, 4)]);
    for n in NAMES {
        assert_eq!(
            std::fs::read(s.base.join(n)).unwrap(),
            std::fs::read(s.reference.join(n)).unwrap(),
            "{n}: migrated values differ from direct updates"
        );
    }
}

#[test]
fn rrdcacheds_rules_then_direct_update_equality() {
    let s = setup();
    let (migrated, applied) = start_and_flush(&s, false);
    assert_eq!(migrated, Some(expected_summary(false)));
    assert_eq!((applied.values_applied, applied.values_skipped), (6, 0), "{applied:?}");
    assert_eq!(rrdcached_files(&s.journal), Vec::<String>::new(), "rrdcached's journals are retired");
    assert_files_as_direct_updates(&s);
    // The next start finds nothing of rrdcached's; our journal's copy
    // (still there: no segment was released in this test) changes nothing.
    let before: Vec<Vec<u8>> = NAMES.iter().map(|n| std::fs::read(s.base.join(n)).unwrap()).collect();
    let (migrated, applied) = start_and_flush(&s, false);
    assert_eq!(migrated, None);
    assert_eq!((applied.values_applied, applied.values_skipped), (0, 6));
    for (n, b) in NAMES.iter().zip(before) {
        assert_eq!(std::fs::read(s.base.join(n)).unwrap(), b, "{n} changed on restart");
    }
}

#[test]
fn base_only_refuses_names_outside_the_base() {
    let s = setup();
    let (migrated, _) = start_and_flush(&s, true);
    assert_eq!(migrated, Some(expected_summary(true)));
    assert_files_as_direct_updates(&s);
}

/// The crash argument: the values were copied into our journal and synced,
/// but the daemon died before deleting rrdcached's files (or a later value
/// for a migrated file came in through our journal). The next start sees
/// the values in both journals and applies each once.
#[test]
fn a_crash_before_retiring_loses_and_doubles_nothing() {
    let s = setup();
    let saved: Vec<(PathBuf, Vec<u8>)> = rrdcached_files(&s.journal)
        .iter()
        .map(|n| (s.journal.join(n), std::fs::read(s.journal.join(n)).unwrap()))
        .collect();
    let paths = Paths::new(Some(s.base.as_path()), false);
    {
        // First start: read, copy into our journal, sync; "crash" before retire.
        let report = rrd_journal::replay(&s.journal).unwrap();
        let mut journal = Journal::open(&s.journal, SyncPolicy::Always).unwrap();
        let m = rrdcached_journal::read(&s.journal, &paths, &report.records).unwrap();
        assert_eq!(m.summary.values_migrated, 6);
        rrdcached_journal::commit(&m, &mut journal).unwrap();
        // A client's value for a migrated file, accepted after the migration.
        journal
            .append(&[Record {
                path: s.base.join("b.rrd").display().to_string(),
                args: vec![format!("{}:10", t(6))],
            }])
            .unwrap();
    }
    assert_eq!(rrdcached_files(&s.journal).len(), 3);
    // Second start: every rrdcached value is already in our journal.
    let report = rrd_journal::replay(&s.journal).unwrap();
    let m = rrdcached_journal::read(&s.journal, &paths, &report.records).unwrap();
    assert_eq!((m.summary.values_migrated, m.records.len()), (0, 0), "{:?}", m.summary);
    assert_eq!(m.summary.values_skipped, 9);
    let (migrated, applied) = start_and_flush(&s, false);
    assert_eq!(migrated.map(|m| m.values_migrated), Some(0));
    assert_eq!(applied.values_applied, 7);
    assert!(rrdcached_files(&s.journal).is_empty());
    direct(
        &s.reference.join("b.rrd"),
        &[format!("{}:5", t(1)), format!("{}:8", t(4)), format!("{}:10", t(6))],
    );
    assert_eq!(
        std::fs::read(s.base.join("b.rrd")).unwrap(),
        std::fs::read(s.reference.join("b.rrd")).unwrap()
    );
    // Even with rrdcached's files back once more, nothing changes.
    for (p, bytes) in &saved {
        std::fs::write(p, bytes).unwrap();
    }
    let before: Vec<Vec<u8>> = NAMES.iter().map(|n| std::fs::read(s.base.join(n)).unwrap()).collect();
    let (migrated, applied) = start_and_flush(&s, false);
    assert_eq!(migrated.map(|m| m.values_migrated), Some(0));
    assert_eq!(applied.values_applied, 0);
    for (n, b) in NAMES.iter().zip(before) {
        assert_eq!(std::fs::read(s.base.join(n)).unwrap(), b, "{n} changed");
    }
}

#[test]
fn untrusted_journals_are_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    let s = setup();
    let p = s.journal.join("rrd.journal.1700000001.000000");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
    let paths = Paths::new(Some(s.base.as_path()), false);
    let m = rrdcached_journal::read(&s.journal, &paths, &[]).unwrap();
    assert_eq!((m.summary.files, m.summary.files_kept), (2, 1));
    assert!(!m.files.contains(&p));
}

/// One line is one record (the crash argument needs whole lines in our
/// journal), however many values it has.
#[test]
fn a_long_line_stays_one_record() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    make(&base.join("a.rrd"));
    let journal = base.join("journal");
    std::fs::create_dir_all(&journal).unwrap();
    let values: Vec<String> = (1..=1500).map(|k| format!("{}:{k}", t(k))).collect();
    std::fs::write(
        journal.join("rrd.journal.1700000000.000000"),
        format!("update a.rrd {}\n", values.join(" ")),
    )
    .unwrap();
    let m = rrdcached_journal::read(&journal, &Paths::new(Some(base.as_path()), false), &[]).unwrap();
    assert_eq!(m.records.len(), 1);
    assert_eq!(m.records[0].args, values);
}
