//! The daemon under journal faults, in-process (a real connection handler
//! over a socket pair, a real committer thread, a journal whose I/O fails
//! on purpose):
//!
//! - an UPDATE is answered only after its record is synced (a sync that
//!   hangs holds the reply back);
//! - a failed fdatasync: that UPDATE gets `-1 Journal write failed ...`,
//!   every later one `-1 Journal failure ...`, /metrics shows the journal
//!   poisoned, and a restart from the journal replays exactly the
//!   acknowledged updates;
//! - ENOSPC on an append: an error reply, no crash, no poisoning, and the
//!   next UPDATE is acknowledged again; a restart replays exactly the
//!   acknowledged updates.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rrd_daemon::config::Config;
use rrd_daemon::journaler::{JournalError, Journaler};
use rrd_daemon::state::Daemon;
use rrd_daemon::stats::Stats;
use rrd_daemon::{connection, metrics, replay};
use rrd_engine::update::{update_file, UpdateOptions};
use rrd_journal::fault::{Action, FaultPlan, FaultyIo, Op, EIO, ENOSPC};
use rrd_journal::io::{JournalIo, OsIo, SegmentFile};
use rrd_journal::{Journal, SyncPolicy};
use rrd_protocol::Permissions;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

mod common;

use common::{make_xy as make, T0};

fn value(k: i64) -> String {
    format!("{}:{}:{}", T0 + 300 * k, k, k * 100)
}

/// A base dir with `f.rrd` and an untouched copy in `reference/`.
struct Setup {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    journal_dir: PathBuf,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    make(&base.join("f.rrd"));
    std::fs::create_dir_all(base.join("reference")).unwrap();
    std::fs::copy(base.join("f.rrd"), base.join("reference/f.rrd")).unwrap();
    let journal_dir = base.join("journal");
    Setup { _tmp: tmp, base, journal_dir }
}

/// A daemon over a journal with I/O `io`, and a client connected to it.
async fn start(s: &Setup, io: Arc<dyn JournalIo>) -> (Arc<Daemon>, Client) {
    let config = Config {
        base_dir: Some(s.base.clone()),
        journal_dir: Some(s.journal_dir.clone()),
        write_interval_secs: 3600,
        ..Default::default()
    };
    let journal = Journal::open_with(&s.journal_dir, SyncPolicy::Always, io).unwrap();
    let stats = Arc::new(Stats::default());
    let journaler =
        Journaler::start(journal, s.journal_dir.clone(), stats.clone(), Duration::from_secs(3600), 64 << 20);
    let daemon = Arc::new(Daemon::with_stats(config, journaler, stats));
    let (ours, theirs) = UnixStream::pair().unwrap();
    tokio::spawn(connection::serve(daemon.clone(), theirs, Permissions::all(), None));
    let (rd, wr) = ours.into_split();
    (daemon, Client { rd: BufReader::new(rd), wr })
}

struct Client {
    rd: BufReader<tokio::net::unix::OwnedReadHalf>,
    wr: tokio::net::unix::OwnedWriteHalf,
}

impl Client {
    async fn send(&mut self, line: &str) {
        self.wr.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    async fn reply(&mut self) -> String {
        let mut status = String::new();
        self.rd.read_line(&mut status).await.unwrap();
        let n: i64 = status.split(' ').next().and_then(|s| s.parse().ok()).unwrap_or(0);
        for _ in 0..n.max(0) {
            self.rd.read_line(&mut status).await.unwrap();
        }
        status
    }

    async fn call(&mut self, line: &str) -> String {
        self.send(line).await;
        self.reply().await
    }
}

fn metric(daemon: &Daemon, name: &str) -> f64 {
    let text = metrics::render(daemon);
    metrics::parse_text(&text)
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("{name} missing from:\n{text}"))
        .1
}

/// "Restart": a fresh daemon state replays the journal and writes
/// everything; then `f.rrd` must equal the reference updated directly with
/// exactly the acknowledged values.
fn restart_and_compare(s: &Setup, acknowledged: &[String]) {
    let config = Config { base_dir: Some(s.base.clone()), ..Default::default() };
    let daemon = Daemon::new(config, Journaler::disabled());
    let report = rrd_journal::replay(&s.journal_dir).unwrap();
    assert!(report.corrupt.is_empty(), "{report:?}");
    replay::apply(&daemon, &report, report.segments.first().copied().unwrap_or(1));
    common::write_everything_and_stop(&daemon.cache);
    let r =
        update_file(&s.base.join("reference/f.rrd"), acknowledged, &UpdateOptions::default(), false).unwrap();
    assert!(r.error.is_none());
    assert!(
        std::fs::read(s.base.join("f.rrd")).unwrap() == std::fs::read(s.base.join("reference/f.rrd")).unwrap(),
        "after restart the file differs from one updated with exactly the acknowledged values {acknowledged:?}"
    );
}

fn faulty(plan: &Arc<FaultPlan>) -> Arc<dyn JournalIo> {
    Arc::new(FaultyIo::new(Arc::new(OsIo), plan.clone()))
}

/// A journal whose fdatasync waits until the test opens the gate.
struct GateIo(Arc<(Mutex<bool>, Condvar)>);
struct GateFile(Arc<dyn SegmentFile>, Arc<(Mutex<bool>, Condvar)>);

impl JournalIo for GateIo {
    fn create_segment(&self, path: &Path, header: &[u8]) -> std::io::Result<Arc<dyn SegmentFile>> {
        Ok(Arc::new(GateFile(OsIo.create_segment(path, header)?, self.0.clone())))
    }
}

impl SegmentFile for GateFile {
    fn write(&self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        let (open, cv) = &*self.1;
        let mut g = open.lock().unwrap();
        while !*g {
            g = cv.wait(g).unwrap();
        }
        self.0.sync_data()
    }
    fn truncate(&self, len: u64) -> std::io::Result<()> {
        self.0.truncate(len)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_is_answered_only_after_its_sync() {
    let s = setup();
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (daemon, mut c) = start(&s, Arc::new(GateIo(gate.clone()))).await;
    c.send(&format!("UPDATE f.rrd {}", value(1))).await;
    let early = tokio::time::timeout(Duration::from_millis(400), c.reply()).await;
    assert!(early.is_err(), "answered before the journal sync finished: {early:?}");
    // The record is written (in the page cache), only the sync is pending.
    assert!(Stats::get(&daemon.stats.journal_syncs) == 0);
    {
        let (open, cv) = &*gate;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
    let reply =
        tokio::time::timeout(Duration::from_secs(10), c.reply()).await.expect("a reply after the sync");
    assert_eq!(reply, "0 errors, enqueued 1 value(s).\n");
    assert_eq!(Stats::get(&daemon.stats.journal_syncs), 1);
    assert_eq!(metric(&daemon, "rrdscale_journal_sync_seconds_count"), 1.0);
    assert!(metric(&daemon, "rrdscale_journal_sync_seconds_sum") >= 0.3, "the sync waited ~400 ms");
    daemon.journal.shutdown(false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sync_stops_acknowledgements_and_restart_replays_the_acknowledged() {
    let s = setup();
    let plan = FaultPlan::new();
    // Appends 1 and 2 sync fine, the third sync fails.
    plan.inject(Op::Sync, 3, Action::Fail(EIO));
    let (daemon, mut c) = start(&s, faulty(&plan)).await;
    assert_eq!(c.call(&format!("UPDATE f.rrd {}", value(1))).await, "0 errors, enqueued 1 value(s).\n");
    assert_eq!(
        c.call(&format!("UPDATE f.rrd {} {}", value(2), value(3))).await,
        "0 errors, enqueued 2 value(s).\n"
    );
    let failed = c.call(&format!("UPDATE f.rrd {}", value(4))).await;
    assert!(failed.starts_with("-1 Journal write failed, update not acknowledged: "), "{failed}");
    assert!(failed.contains("Input/output error"), "{failed}");
    for k in 5..8 {
        let refused = c.call(&format!("UPDATE f.rrd {}", value(k))).await;
        assert!(refused.starts_with("-1 Journal failure: "), "{refused}");
    }
    assert!(daemon.journal.is_poisoned());
    assert_eq!(metric(&daemon, "rrdscale_journal_poisoned"), 1.0);
    assert_eq!(metric(&daemon, "rrdscale_journal_append_errors_total"), 1.0);
    assert_eq!(metric(&daemon, "rrdscale_updates_refused_total"), 3.0);
    let stats = c.call("STATS").await;
    assert!(stats.contains("UpdatesRefused: 3\n"), "{stats}");
    // Other commands still work.
    assert_eq!(c.call("PING").await, "0 PONG\n");
    // The journal says why by kind: poisoned, for this record and any later one.
    let probe = daemon.journal.submit_update(0, "/probe.rrd", ["9:1"]);
    match daemon.journal.wait(&probe).await {
        Err(JournalError::Poisoned(why)) => assert!(why.contains("Input/output error"), "{why}"),
        other => panic!("a poisoned journal refuses with Poisoned, not {other:?}"),
    }
    daemon.journal.shutdown(false);
    restart_and_compare(&s, &[value(1), value(2), value(3)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enospc_refuses_one_update_and_the_daemon_recovers() {
    let s = setup();
    let plan = FaultPlan::new();
    // The second append finds the disk full (after a short first write).
    plan.inject(Op::Write, 2, Action::Short(5));
    plan.inject(Op::Write, 3, Action::Fail(ENOSPC));
    let (daemon, mut c) = start(&s, faulty(&plan)).await;
    assert_eq!(c.call(&format!("UPDATE f.rrd {}", value(1))).await, "0 errors, enqueued 1 value(s).\n");
    let failed = c.call(&format!("UPDATE f.rrd {}", value(2))).await;
    assert!(failed.starts_with("-1 Journal write failed, update not acknowledged: "), "{failed}");
    assert!(failed.contains("No space left on device"), "{failed}");
    assert!(!daemon.journal.is_poisoned(), "ENOSPC with a sound journal must not poison");
    assert_eq!(metric(&daemon, "rrdscale_journal_poisoned"), 0.0);
    // Space is back (the fault was one-shot): acknowledged again.
    assert_eq!(c.call(&format!("UPDATE f.rrd {}", value(3))).await, "0 errors, enqueued 1 value(s).\n");
    // Lasting ENOSPC: every UPDATE gets an error reply, nothing crashes.
    plan.inject_from(Op::Write, plan.count(Op::Write) + 1, Action::Fail(ENOSPC));
    for k in 4..7 {
        let r = c.call(&format!("UPDATE f.rrd {}", value(k))).await;
        assert!(r.starts_with("-1 Journal write failed"), "{r}");
    }
    // By kind: a failed append, not a poisoned journal (a fifth append error).
    let probe = daemon.journal.submit_update(0, "/probe.rrd", ["9:1"]);
    match daemon.journal.wait(&probe).await {
        Err(JournalError::Append(why)) => assert!(why.contains("No space left on device"), "{why}"),
        other => panic!("ENOSPC fails the append with Append, not {other:?}"),
    }
    plan.clear();
    assert_eq!(c.call(&format!("UPDATE f.rrd {}", value(7))).await, "0 errors, enqueued 1 value(s).\n");
    assert_eq!(metric(&daemon, "rrdscale_journal_append_errors_total"), 5.0);
    assert_eq!(metric(&daemon, "rrdscale_journal_poisoned"), 0.0);
    daemon.journal.shutdown(false);
    restart_and_compare(&s, &[value(1), value(3), value(7)]);
}

/// A BATCH whose journal write fails (ENOSPC) reports every UPDATE of it
/// under its own command number, and only those (the PING between them
/// and the UPDATE that was too early keep their own errors), and nothing
/// of it is
/// acknowledged; the next BATCH, with space back, succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_journal_write_fails_reports_each_update() {
    let s = setup();
    make(&s.base.join("g.rrd"));
    let plan = FaultPlan::new();
    let (daemon, mut c) = start(&s, faulty(&plan)).await;
    plan.inject(Op::Write, 1, Action::Fail(ENOSPC));
    assert!(c.call("BATCH").await.starts_with("0 Go ahead"));
    c.send(&format!("UPDATE f.rrd {}", value(1))).await; // 1
    c.send(&format!("UPDATE g.rrd {}", value(1))).await; // 2
    c.send("PING").await; // 3: not allowed in a BATCH
    c.send(&format!("UPDATE f.rrd {}", value(1))).await; // 4: too early, its own error
    c.send(&format!("UPDATE f.rrd {}", value(2))).await; // 5
    let reply = c.call(".").await;
    let numbers: Vec<&str> = reply.lines().skip(1).map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(numbers, ["1", "2", "3", "4", "5"], "{reply}");
    assert!(reply.lines().any(|l| l == "3 Can't use 'PING' here."), "{reply}");
    for line in reply.lines().skip(1).filter(|l| l.starts_with(['1', '2', '5'])) {
        assert!(line.contains("Journal write failed") && line.contains("No space left"), "{line}");
    }
    assert!(reply.lines().any(|l| l.starts_with("4 illegal attempt")), "{reply}");
    // Space is back.
    assert!(c.call("BATCH").await.starts_with("0 Go ahead"));
    c.send(&format!("UPDATE f.rrd {}", value(3))).await;
    c.send(&format!("UPDATE g.rrd {}", value(3))).await;
    assert_eq!(c.call(".").await, "0 errors\n");
    daemon.journal.shutdown(false);
    restart_and_compare(&s, &[value(3)]);
}
