//! The committer: the only owner of the [`rrd_journal::Journal`], on its own
//! thread, doing group commit.
//!
//! Connections hand it records with [`Journaler::submit`] and wait on the
//! returned [`Ticket`]. The thread takes the first waiting request, then
//! every other one already queued (up to a bound), appends them all with ONE
//! write (and, under `--sync always`, one `fdatasync`), and only then
//! resolves every ticket. Concurrent clients therefore share one sync.
//!
//! Ordering invariant: `submit` is called while the caller holds the lock of
//! the cache shard whose state the record changes, and the channel is FIFO,
//! so for any one file the journal holds records in the order the cache
//! applied them. Replay depends on it.
//!
//! Failures (rrd-journal decides, docs/journal.md argues): a failed append
//! fails every ticket of its group, so nothing in it is acknowledged. A
//! failed sync, or a failed write other than "no space", poisons the
//! journal: every later ticket fails, so no update is acknowledged that is
//! not durable, and [`Journaler::is_poisoned`] turns true for good (STATS,
//! /metrics, and UPDATE's early refusal read it). A write refused for lack
//! of space (ENOSPC, EDQUOT) whose partial bytes were taken back does not
//! poison: its group gets errors, and later groups succeed once there is
//! space again. A failed rotation never poisons (the current segment goes
//! on).
//!
//! Segments: the journal rotates every `-f` seconds or when a segment passes
//! `--segment-bytes`; closed segments are deleted only through
//! [`Journaler::remove_below`], whose argument the caller computes from the
//! cache (the oldest segment still holding a value not yet synced into its
//! RRD file).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rrd_journal::{Journal, Record, SyncPolicy};
use tokio::sync::oneshot;

use crate::stats::Stats;

/// The most records one group commit gathers.
const GROUP_RECORDS_MAX: usize = 65_536;

enum Msg {
    Append(Record, oneshot::Sender<Result<(), String>>),
    Rotate,
    RemoveBelow(u64),
    /// Sync, then (if asked) delete every segment; the thread then exits.
    Shutdown {
        remove_all: bool,
        done: std::sync::mpsc::Sender<()>,
    },
}

/// Waits for one record to be durable (per the sync policy).
pub struct Ticket(Option<oneshot::Receiver<Result<(), String>>>);

impl Ticket {
    /// A ticket that is already done (no journal configured).
    pub fn done() -> Ticket {
        Ticket(None)
    }

    /// `Err(reason)` when the journal could not take the record.
    pub async fn wait(self) -> Result<(), String> {
        match self.0 {
            None => Ok(()),
            Some(rx) => rx.await.unwrap_or_else(|_| Err("the journal stopped".into())),
        }
    }
}

pub struct Journaler {
    tx: Option<mpsc::Sender<Msg>>,
    /// The segment appends currently go to (never decreases).
    current_seq: Arc<AtomicU64>,
    poisoned: Arc<AtomicBool>,
    thread: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Journaler {
    /// No journal: tickets are done at once.
    pub fn disabled() -> Journaler {
        Journaler {
            tx: None,
            current_seq: Arc::new(AtomicU64::new(0)),
            poisoned: Arc::new(AtomicBool::new(false)),
            thread: std::sync::Mutex::new(None),
        }
    }

    /// Starts the committer thread over an open journal.
    pub fn start(
        journal: Journal,
        dir: std::path::PathBuf,
        stats: Arc<Stats>,
        rotate_every: Duration,
        segment_len_max: u64,
    ) -> Journaler {
        let (tx, rx) = mpsc::channel();
        let current_seq = Arc::new(AtomicU64::new(journal.seq()));
        let poisoned = Arc::new(AtomicBool::new(false));
        let thread = {
            let current_seq = current_seq.clone();
            let poisoned = poisoned.clone();
            std::thread::Builder::new()
                .name("journal".into())
                .spawn(move || {
                    Committer {
                        journal,
                        dir,
                        rx,
                        stats,
                        current_seq,
                        poisoned,
                        rotate_every,
                        segment_len_max,
                        syncs_seen: 0,
                    }
                    .run()
                })
                .expect("spawning the journal thread")
        };
        Journaler { tx: Some(tx), current_seq, poisoned, thread: std::sync::Mutex::new(Some(thread)) }
    }

    pub fn enabled(&self) -> bool {
        self.tx.is_some()
    }

    pub fn current_seq(&self) -> u64 {
        self.current_seq.load(Ordering::SeqCst)
    }

    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// Queues `record`; see the module doc for the locking rule.
    pub fn submit(&self, record: Record) -> Ticket {
        let Some(tx) = &self.tx else { return Ticket::done() };
        let (done, rx) = oneshot::channel();
        if tx.send(Msg::Append(record, done)).is_err() {
            let (failed, rx) = oneshot::channel();
            let _ = failed.send(Err("the journal stopped".into()));
            return Ticket(Some(rx));
        }
        Ticket(Some(rx))
    }

    pub fn rotate(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Rotate);
        }
    }

    /// Deletes closed segments with a sequence number below `seq`.
    pub fn remove_below(&self, seq: u64) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::RemoveBelow(seq));
        }
    }

    /// Syncs and stops the thread; with `remove_all`, deletes every segment
    /// (only when every value is in its RRD file and synced).
    pub fn shutdown(&self, remove_all: bool) {
        let Some(tx) = &self.tx else { return };
        let (done, wait) = mpsc::channel();
        if tx.send(Msg::Shutdown { remove_all, done }).is_ok() {
            let _ = wait.recv();
        }
        if let Some(t) = self.thread.lock().expect("journal thread lock").take() {
            let _ = t.join();
        }
    }
}

struct Committer {
    journal: Journal,
    dir: std::path::PathBuf,
    rx: mpsc::Receiver<Msg>,
    stats: Arc<Stats>,
    current_seq: Arc<AtomicU64>,
    poisoned: Arc<AtomicBool>,
    rotate_every: Duration,
    segment_len_max: u64,
    /// The journal's sync count already booked into `stats`.
    syncs_seen: u64,
}

impl Committer {
    fn run(mut self) {
        let mut last_rotate = Instant::now();
        // Under `every:MS` an idle journal is still synced on time.
        let idle_wait = match self.journal.policy() {
            SyncPolicy::Every(d) => d,
            _ => Duration::from_millis(500),
        };
        let mut group: Vec<(Record, oneshot::Sender<Result<(), String>>)> = Vec::new();
        loop {
            let first = match self.rx.recv_timeout(idle_wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut control = Vec::new();
            let mut next = first;
            while let Some(msg) = next.take() {
                match msg {
                    Msg::Append(r, done) => group.push((r, done)),
                    other => control.push(other),
                }
                if group.len() >= GROUP_RECORDS_MAX {
                    break;
                }
                next = self.rx.try_recv().ok();
            }
            if !group.is_empty() {
                self.commit(&mut group);
            } else if matches!(self.journal.policy(), SyncPolicy::Every(_)) {
                let _ = self.sync();
            }
            let mut stop = None;
            for msg in control {
                match msg {
                    Msg::Rotate => self.rotate(&mut last_rotate),
                    Msg::RemoveBelow(seq) => self.remove_below(seq),
                    Msg::Shutdown { remove_all, done } => stop = Some((remove_all, done)),
                    Msg::Append(..) => unreachable!("appends are grouped above"),
                }
            }
            if self.journal.len_bytes() > self.segment_len_max || last_rotate.elapsed() >= self.rotate_every {
                self.rotate(&mut last_rotate);
            }
            if let Some((remove_all, done)) = stop {
                // Appends queued behind the shutdown message still get an answer.
                while let Ok(Msg::Append(r, d)) = self.rx.try_recv() {
                    group.push((r, d));
                }
                if !group.is_empty() {
                    self.commit(&mut group);
                }
                let _ = self.sync();
                if remove_all && !self.poisoned.load(Ordering::SeqCst) {
                    self.remove_everything();
                }
                let _ = done.send(());
                return;
            }
        }
        let _ = self.sync();
    }

    fn sync(&mut self) -> Result<(), String> {
        let r = self.journal.sync().map_err(|e| e.to_string());
        self.after_io(r.as_ref().err());
        r
    }

    /// Books the syncs the journal did since the last call and mirrors its
    /// poisoned state (which never clears).
    fn after_io(&mut self, failure: Option<&String>) {
        let done = self.journal.sync_count();
        if done > self.syncs_seen {
            let d = self.journal.last_sync_duration();
            // Several syncs in one call cannot happen today (one per append
            // or sync); book them all with the last one's duration if so.
            for _ in self.syncs_seen..done {
                self.stats.journal_sync_seconds.observe(d);
            }
            Stats::add(&self.stats.journal_syncs, done - self.syncs_seen);
            Stats::add(&self.stats.journal_sync_ns, d.as_nanos() as u64 * (done - self.syncs_seen));
            self.syncs_seen = done;
        }
        if let Some(why) = self.journal.poisoned() {
            if !self.poisoned.swap(true, Ordering::SeqCst) {
                tracing::error!("journal poisoned, no further updates are acknowledged until restart: {why}");
                self.stats.journal_poisoned.store(1, Ordering::SeqCst);
            }
        } else if let Some(e) = failure {
            tracing::error!("journal append failed, its updates are not acknowledged: {e}");
        }
    }

    fn commit(&mut self, group: &mut Vec<(Record, oneshot::Sender<Result<(), String>>)>) {
        let records: Vec<Record> = group.iter().map(|(r, _)| r.clone()).collect();
        let before = self.journal.len_bytes();
        let result = self.journal.append(&records).map_err(|e| e.to_string());
        Stats::add(&self.stats.journal_commits, 1);
        if result.is_ok() {
            Stats::add(&self.stats.journal_bytes, self.journal.len_bytes().saturating_sub(before));
        } else {
            Stats::add(&self.stats.journal_append_errors, 1);
        }
        self.after_io(result.as_ref().err());
        for (_, done) in group.drain(..) {
            let _ = done.send(result.clone());
        }
    }

    fn rotate(&mut self, last_rotate: &mut Instant) {
        *last_rotate = Instant::now();
        if self.journal.poisoned().is_some() {
            // Nothing more is appended; a new segment would stay empty.
            return;
        }
        match self.journal.rotate() {
            Ok(_) => {
                self.current_seq.store(self.journal.seq(), Ordering::SeqCst);
                Stats::add(&self.stats.journal_rotate, 1);
            }
            Err(e) => {
                // The current segment goes on (see rrd-journal); a sync
                // failure inside the rotation did poison, and after_io says so.
                tracing::error!("journal rotation failed: {e}");
                self.after_io(None);
            }
        }
    }

    fn remove_below(&mut self, seq: u64) {
        let limit = seq.min(self.journal.seq());
        let Ok(existing) = rrd_journal::segments(&self.dir) else { return };
        if !existing.iter().any(|&s| s < limit) {
            return;
        }
        match self.journal.remove_through(limit - 1) {
            Ok(()) => {
                let n = existing.iter().filter(|&&s| s < limit).count() as u64;
                Stats::add(&self.stats.journal_segments_removed, n);
            }
            Err(e) => tracing::error!("removing journal segments failed: {e}"),
        }
    }

    /// Every value is in its RRD file and synced: nothing in the journal is
    /// needed any more. A fresh empty segment is left behind (harmless: it
    /// replays to nothing).
    fn remove_everything(&mut self) {
        let mut last_rotate = Instant::now();
        self.rotate(&mut last_rotate);
        let current = self.journal.seq();
        self.remove_below(current);
    }
}
