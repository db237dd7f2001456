//! The committer: the only owner of the [`rrd_journal::Journal`], on its own
//! thread, doing group commit.
//!
//! Connections stage records with [`Journaler::submit_update`]: the record
//! is framed straight into one of [`STAGES`] staging buffers, chosen by a
//! hash of its file name (a short, almost never contended mutex; no
//! allocation and no message per record; no lock shared by all clients),
//! and gets a [`Ticket`]: the commit generation current when it was
//! staged. The thread commits by advancing the generation, then taking
//! every buffer's bytes (each under its lock), and appending them with ONE
//! write; under `--sync always` it syncs when some connection waits for a
//! generation that is written but not synced (a connection waits once per
//! batch of replies, for its newest ticket), and then publishes "decided up
//! to generation g". Everything staged while a sync runs goes into the next
//! one, so concurrent clients share syncs.
//!
//! Why generations work: a record is staged, and its ticket read, under its
//! buffer's lock; the committer advances the generation from `g` to `g + 1`
//! before it takes any buffer, and takes each buffer under that lock. So a
//! record with ticket `g` is in the buffer when the commit of `g` takes it
//! (or in an earlier commit). A record staged after the advance may ride
//! along in that write; it is published with the next generation.
//!
//! Ordering invariant: records are staged while the caller holds the lock
//! of the cache shard whose state the record changes, and all records of a
//! file go to the same buffer, whose bytes are written in staging order, so
//! for any one file the journal holds records in the order the cache
//! applied them. Replay depends on it.
//!
//! Failures (rrd-journal decides, docs/journal.md argues): a failed write
//! fails every ticket up to the generation current when its buffers were
//! taken (possibly a few staged just after, which are then written and
//! durable but not acknowledged: the safe direction), and nothing of it is
//! acknowledged. A
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

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rrd_journal::{Journal, SyncPolicy};

use crate::stats::Stats;

/// Failed groups remembered for their waiters (see [`Shared::failures`]).
const FAILURES_KEPT: usize = 1 << 16;

/// What the committer does besides appending.
enum Control {
    Rotate,
    RemoveBelow(u64),
    /// Sync, then (if asked) delete every segment; the thread then exits.
    Shutdown {
        remove_all: bool,
        done: std::sync::mpsc::Sender<()>,
    },
}

/// Staging buffers (see the module doc).
pub const STAGES: usize = 64;

/// The committer's orders, and whether it still takes records.
#[derive(Default)]
struct Orders {
    controls: Vec<Control>,
}

struct Shared {
    /// Framed records waiting for the committer.
    stages: Box<[Mutex<Vec<u8>>]>,
    /// Picks a file's buffer.
    stage_hasher: foldhash::fast::RandomState,
    /// The commit generation records staged now get as ticket (from 1).
    generation: AtomicU64,
    /// Some buffer went from empty to not empty since the committer last
    /// looked.
    has_data: AtomicBool,
    /// The newest ticket someone waits for (the committer syncs for it).
    wanted: AtomicU64,
    /// The committer has stopped: nothing staged now would be written.
    stopped: AtomicBool,
    orders: Mutex<Orders>,
    /// Wakes the committer (with `orders`): data, a waiter, an order.
    wake: Condvar,
    /// Generations decided (written and synced, or failed) so far.
    processed: tokio::sync::watch::Sender<u64>,
    /// Groups that failed without poisoning (no space), as
    /// `(first, last, why)` ticket ranges, newest last. Waiters look here
    /// right after `processed` passes their ticket, so only the most
    /// recent [`FAILURES_KEPT`] groups are kept.
    failures: Mutex<VecDeque<(u64, u64, String)>>,
    /// Whether `failures` ever held anything (checked without its lock:
    /// a healthy journal's waiters never take it).
    any_failure: AtomicBool,
    /// The first ticket of the group that found the journal poisoned, and
    /// why (every ticket from it on fails); `u64::MAX` while healthy.
    poisoned_from: AtomicU64,
    poison_reason: Mutex<String>,
}

impl Shared {
    fn notify(&self) {
        let _orders = self.orders.lock().expect("journal orders lock");
        self.wake.notify_one();
    }
}

/// A journaled record to wait for: durable (per the sync policy) once the
/// committer has decided its generation. Generations only grow, so waiting
/// for the newest of a client's tickets covers all of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ticket {
    /// Nothing to wait for (no journal configured).
    Done,
    /// The commit generation the record belongs to (from 1).
    At(u64),
    /// The journal could not take the record.
    Failed(String),
}

impl Ticket {
    /// Of two tickets, the one to wait for so that both are decided: the
    /// later record (a failed ticket needs no wait).
    pub fn max(self, other: Ticket) -> Ticket {
        match (self, other) {
            (Ticket::At(a), Ticket::At(b)) => Ticket::At(a.max(b)),
            (t @ Ticket::At(_), _) | (_, t @ Ticket::At(_)) => t,
            _ => Ticket::Done,
        }
    }
}

pub struct Journaler {
    shared: Option<Arc<Shared>>,
    /// The segment appends currently go to (never decreases).
    current_seq: Arc<AtomicU64>,
    poisoned: Arc<AtomicBool>,
    thread: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Journaler {
    /// No journal: tickets are done at once.
    pub fn disabled() -> Journaler {
        Journaler {
            shared: None,
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
        let shared = Arc::new(Shared {
            stages: (0..STAGES).map(|_| Mutex::new(Vec::new())).collect(),
            stage_hasher: foldhash::fast::RandomState::default(),
            generation: AtomicU64::new(1),
            has_data: AtomicBool::new(false),
            wanted: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            orders: Mutex::new(Orders::default()),
            wake: Condvar::new(),
            processed: tokio::sync::watch::channel(0).0,
            failures: Mutex::new(VecDeque::new()),
            any_failure: AtomicBool::new(false),
            poisoned_from: AtomicU64::new(u64::MAX),
            poison_reason: Mutex::new(String::new()),
        });
        let current_seq = Arc::new(AtomicU64::new(journal.seq()));
        let poisoned = Arc::new(AtomicBool::new(false));
        let thread = {
            let current_seq = current_seq.clone();
            let poisoned = poisoned.clone();
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("journal".into())
                .spawn(move || {
                    Committer {
                        journal,
                        dir,
                        shared,
                        stats,
                        current_seq,
                        poisoned,
                        rotate_every,
                        segment_len_max,
                        syncs_seen: 0,
                        written: 0,
                        processed: 0,
                    }
                    .run()
                })
                .expect("spawning the journal thread")
        };
        Journaler { shared: Some(shared), current_seq, poisoned, thread: std::sync::Mutex::new(Some(thread)) }
    }

    pub fn enabled(&self) -> bool {
        self.shared.is_some()
    }

    pub fn current_seq(&self) -> u64 {
        self.current_seq.load(Ordering::SeqCst)
    }

    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// Queues the record of an update of `path` with `args`, framed straight
    /// into its staging buffer (no [`rrd_journal::Record`] is built); see the module doc
    /// for the locking rule.
    pub fn submit_update<'a, I>(&self, path: &str, args: I) -> Ticket
    where
        I: IntoIterator<Item = &'a str>,
        I::IntoIter: Clone,
    {
        let Some(shared) = &self.shared else { return Ticket::Done };
        let stage = &shared.stages[(shared.stage_hasher.hash_one(path) as usize) % STAGES];
        let mut frames = stage.lock().expect("journal stage lock");
        if shared.stopped.load(Ordering::SeqCst) {
            return Ticket::Failed("the journal stopped".into());
        }
        if let Err(e) = rrd_journal::encode_frame(&mut frames, path, args) {
            return Ticket::Failed(e.to_string());
        }
        // Read under the buffer's lock (see the module doc).
        let ticket = Ticket::At(shared.generation.load(Ordering::SeqCst));
        drop(frames);
        if !shared.has_data.swap(true, Ordering::SeqCst) {
            shared.notify();
        }
        ticket
    }

    /// Waits until `ticket`'s record is durable; `Err(reason)` when the
    /// journal could not take it.
    pub async fn wait(&self, ticket: &Ticket) -> Result<(), String> {
        let at = match ticket {
            Ticket::Done => return Ok(()),
            Ticket::Failed(why) => return Err(why.clone()),
            Ticket::At(n) => *n,
        };
        let Some(shared) = &self.shared else { return Ok(()) };
        let mut rx = shared.processed.subscribe();
        if *rx.borrow_and_update() < at {
            if shared.wanted.fetch_max(at, Ordering::SeqCst) < at {
                shared.notify();
            }
            if rx.wait_for(|&done| done >= at).await.is_err() {
                return Err("the journal stopped".into());
            }
        }
        self.failure_of(at)
    }

    /// Whether the (processed) record of `ticket` failed, and why; call
    /// after [`Journaler::wait`] returned for it or a later ticket.
    pub fn failure(&self, ticket: &Ticket) -> Result<(), String> {
        match ticket {
            Ticket::Done => Ok(()),
            Ticket::Failed(why) => Err(why.clone()),
            Ticket::At(n) => self.failure_of(*n),
        }
    }

    fn failure_of(&self, at: u64) -> Result<(), String> {
        let Some(shared) = &self.shared else { return Ok(()) };
        if at >= shared.poisoned_from.load(Ordering::SeqCst) {
            return Err(shared.poison_reason.lock().expect("poison reason lock").clone());
        }
        if !shared.any_failure.load(Ordering::SeqCst) {
            return Ok(());
        }
        let failures = shared.failures.lock().expect("journal failures lock");
        match failures.iter().rev().find(|(first, last, _)| (*first..=*last).contains(&at)) {
            Some((_, _, why)) => Err(why.clone()),
            None => Ok(()),
        }
    }

    fn order(&self, control: Control) -> bool {
        let Some(shared) = &self.shared else { return false };
        let mut orders = shared.orders.lock().expect("journal orders lock");
        if shared.stopped.load(Ordering::SeqCst) {
            return false;
        }
        orders.controls.push(control);
        drop(orders);
        shared.wake.notify_one();
        true
    }

    pub fn rotate(&self) {
        self.order(Control::Rotate);
    }

    /// Deletes closed segments with a sequence number below `seq`.
    pub fn remove_below(&self, seq: u64) {
        self.order(Control::RemoveBelow(seq));
    }

    /// Syncs and stops the thread; with `remove_all`, deletes every segment
    /// (only when every value is in its RRD file and synced).
    pub fn shutdown(&self, remove_all: bool) {
        let (done, wait) = std::sync::mpsc::channel();
        if self.order(Control::Shutdown { remove_all, done }) {
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
    shared: Arc<Shared>,
    stats: Arc<Stats>,
    current_seq: Arc<AtomicU64>,
    poisoned: Arc<AtomicBool>,
    rotate_every: Duration,
    segment_len_max: u64,
    /// The journal's sync count already booked into `stats`.
    syncs_seen: u64,
    /// The newest generation written to the segment.
    written: u64,
    /// The newest generation decided (the last one published): synced under
    /// `--sync always`, written under the other policies, or failed.
    processed: u64,
}

impl Committer {
    fn run(mut self) {
        let mut last_rotate = Instant::now();
        // Under `every:MS` an idle journal is still synced on time.
        let idle_wait = match self.journal.policy() {
            SyncPolicy::Every(d) => d,
            _ => Duration::from_millis(500),
        };
        let mut frames = Vec::new();
        loop {
            let controls = {
                let mut orders = self.shared.orders.lock().expect("journal orders lock");
                if orders.controls.is_empty() && !self.work_waiting() {
                    orders = self.shared.wake.wait_timeout(orders, idle_wait).expect("journal orders lock").0;
                }
                std::mem::take(&mut orders.controls)
            };
            if self.shared.has_data.swap(false, Ordering::SeqCst)
                || self.shared.wanted.load(Ordering::SeqCst) > self.written
            {
                self.commit(&mut frames);
            }
            self.settle();
            if frames.capacity() > 64 << 20 {
                // One burst must not pin its buffer for good.
                frames = Vec::new();
            }
            let mut stop = None;
            for control in controls {
                match control {
                    Control::Rotate => self.rotate(&mut last_rotate),
                    Control::RemoveBelow(seq) => self.remove_below(seq),
                    Control::Shutdown { remove_all, done } => stop = Some((remove_all, done)),
                }
            }
            if self.journal.len_bytes() > self.segment_len_max || last_rotate.elapsed() >= self.rotate_every {
                self.rotate(&mut last_rotate);
            }
            if let Some((remove_all, done)) = stop {
                // Records staged before `stopped` still get an answer (a
                // stager checks it under its buffer's lock, and this commit
                // takes every buffer after setting it).
                self.shared.stopped.store(true, Ordering::SeqCst);
                self.commit(&mut frames);
                let _ = self.sync();
                self.publish_synced();
                if remove_all && !self.poisoned.load(Ordering::SeqCst) {
                    self.remove_everything();
                }
                let _ = done.send(());
                return;
            }
        }
    }

    /// Whether there is something to do without waiting: staged records,
    /// or (under `--sync always`) a waiter for a generation not yet synced.
    fn work_waiting(&self) -> bool {
        self.shared.has_data.load(Ordering::SeqCst)
            || (self.shared.wanted.load(Ordering::SeqCst) > self.processed
                && self.journal.policy() == SyncPolicy::Always)
    }

    /// Closes the current generation and writes everything staged with one
    /// write (see the module doc for why nothing of it is missed).
    fn commit(&mut self, frames: &mut Vec<u8>) {
        let generation = self.shared.generation.fetch_add(1, Ordering::SeqCst);
        frames.clear();
        for stage in self.shared.stages.iter() {
            let mut staged = stage.lock().expect("journal stage lock");
            frames.extend_from_slice(&staged);
            staged.clear();
            if staged.capacity() > 4 << 20 {
                staged.shrink_to(64 << 10);
            }
        }
        // Records staged after the advance may be in `frames` too: a failed
        // write must fail them as well.
        let newest = self.shared.generation.load(Ordering::SeqCst) - 1;
        if frames.is_empty() {
            self.written = self.written.max(generation);
        } else {
            self.write(frames, generation, newest);
        }
    }

    /// After writing: decide what is acknowledged. `--sync always` syncs
    /// only when a waiter needs it (so one sync covers everything written
    /// meanwhile: clients finish their batches while the previous sync
    /// runs); `every:MS` syncs on its interval; both of those and `none`
    /// acknowledge what is written (as the policy promises).
    fn settle(&mut self) {
        match self.journal.policy() {
            SyncPolicy::Always => {
                let wanted = self.shared.wanted.load(Ordering::SeqCst);
                if wanted > self.processed && self.written > self.processed {
                    let _ = self.sync();
                    self.publish_synced();
                }
            }
            SyncPolicy::Every(interval) => {
                if self.journal.last_sync_age() >= interval && self.sync().is_err() {
                    // What this sync was to cover fails with it.
                    self.publish_synced();
                }
                self.publish(self.written);
            }
            SyncPolicy::None => self.publish(self.written),
        }
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

    /// Writes the records of generations `written + 1 ..= generation`
    /// (and perhaps some of `newest`, staged after the advance), framed in
    /// `frames`, with one write. A failed write fails every ticket up to
    /// `newest`: the generations written before it are synced and
    /// acknowledged first (or, if that sync fails too, the journal is
    /// poisoned and they fail with it).
    fn write(&mut self, frames: &[u8], generation: u64, newest: u64) {
        let first = self.written + 1;
        let before = self.journal.len_bytes();
        let result = self.journal.write_encoded(frames).map_err(|e| e.to_string());
        Stats::add(&self.stats.journal_commits, 1);
        match result {
            Ok(()) => {
                Stats::add(&self.stats.journal_bytes, self.journal.len_bytes().saturating_sub(before));
                self.written = generation;
            }
            Err(why) => {
                Stats::add(&self.stats.journal_append_errors, 1);
                self.after_io(Some(&why));
                if self.written > self.processed {
                    let _ = self.sync();
                    self.publish_synced();
                }
                self.fail(first, newest, why);
                self.written = newest;
                self.publish(newest);
            }
        }
    }

    /// Records `first ..= last` failed: poisoned (every later one fails
    /// too) or refused for lack of space (only these).
    fn fail(&mut self, first: u64, last: u64, why: String) {
        if self.journal.poisoned().is_some() {
            // Only this thread writes these: the reason is in place before
            // the ticket number that makes waiters read it.
            if self.shared.poisoned_from.load(Ordering::SeqCst) == u64::MAX {
                *self.shared.poison_reason.lock().expect("poison reason lock") = why;
                self.shared.poisoned_from.store(first, Ordering::SeqCst);
            }
        } else {
            let mut failures = self.shared.failures.lock().expect("journal failures lock");
            if failures.len() == FAILURES_KEPT {
                failures.pop_front();
            }
            failures.push_back((first, last, why));
            self.shared.any_failure.store(true, Ordering::SeqCst);
        }
    }

    /// After a sync attempt: acknowledges everything written if it is
    /// synced now; if the journal is poisoned instead, fails it.
    fn publish_synced(&mut self) {
        if self.written <= self.processed {
            return;
        }
        if self.journal.is_synced() {
            self.publish(self.written);
        } else if let Some(why) = self.journal.poisoned().map(str::to_string) {
            // The records' group failed (at its sync).
            Stats::add(&self.stats.journal_append_errors, 1);
            self.fail(self.processed + 1, self.written, why);
            self.publish(self.written);
        }
    }

    /// Tells waiters that every record up to `upto` is decided.
    fn publish(&mut self, upto: u64) {
        if upto > self.processed {
            self.processed = upto;
            self.shared.processed.send_replace(upto);
        }
    }

    fn rotate(&mut self, last_rotate: &mut Instant) {
        *last_rotate = Instant::now();
        if self.journal.poisoned().is_some() {
            // Nothing more is appended; a new segment would stay empty.
            return;
        }
        let rotated = self.journal.rotate();
        if self.journal.policy() == SyncPolicy::Always {
            // The rotation synced what was written (or poisoned trying).
            self.publish_synced();
        }
        match rotated {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn start(dir: &std::path::Path, policy: SyncPolicy) -> (Journaler, Arc<Stats>) {
        let stats = Arc::new(Stats::default());
        let journal = Journal::open(dir, policy).unwrap();
        let j =
            Journaler::start(journal, dir.to_path_buf(), stats.clone(), Duration::from_secs(3600), 1 << 30);
        (j, stats)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn under_sync_always_one_wait_syncs_everything_written_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let (j, stats) = start(dir.path(), SyncPolicy::Always);
        let tickets: Vec<Ticket> =
            (1..=3).map(|i| j.submit_update("/f.rrd", [format!("{i}:1").as_str()])).collect();
        // Nothing was committed in between: one generation for all three.
        assert_eq!(tickets, vec![Ticket::At(1), Ticket::At(1), Ticket::At(1)]);
        // Written, but nobody waits yet: no sync.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(Stats::get(&stats.journal_syncs), 0);
        j.wait(&tickets[2]).await.unwrap();
        assert_eq!(Stats::get(&stats.journal_syncs), 1);
        for t in &tickets {
            j.failure(t).unwrap();
            j.wait(t).await.unwrap();
        }
        assert_eq!(Stats::get(&stats.journal_syncs), 1, "earlier tickets were covered by the same sync");
        j.shutdown(false);
        let replayed = rrd_journal::replay(dir.path()).unwrap().records;
        let args: Vec<String> = replayed.iter().map(|r| r.args.join(" ")).collect();
        assert_eq!(args, vec!["1:1", "2:1", "3:1"]);
    }

    /// Many clients staging at once: every record is on disk when its
    /// wait returns, and each file's records are in the order they were
    /// staged under that file's lock (the cache shard's, in the daemon).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_records_are_written_before_their_ack_and_in_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = start(dir.path(), SyncPolicy::Always);
        let j = Arc::new(j);
        let files: Arc<Vec<Mutex<u64>>> = Arc::new((0..8).map(|_| Mutex::new(0)).collect());
        let mut tasks = Vec::new();
        for client in 0..4u64 {
            let (j, files, dir) = (j.clone(), files.clone(), dir.path().to_path_buf());
            tasks.push(tokio::spawn(async move {
                for i in 0..150u64 {
                    let f = ((client * 7 + i * 3) % 8) as usize;
                    let (ticket, n) = {
                        let mut last = files[f].lock().unwrap();
                        *last += 1;
                        (j.submit_update(&format!("/f{f}.rrd"), [format!("{}:1", *last).as_str()]), *last)
                    };
                    if i % 10 == 9 {
                        j.wait(&ticket).await.unwrap();
                        let on_disk = rrd_journal::replay(&dir).unwrap().records;
                        let want =
                            rrd_journal::Record { path: format!("/f{f}.rrd"), args: vec![format!("{n}:1")] };
                        assert!(on_disk.contains(&want), "{want:?} acknowledged but not in the journal");
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        j.shutdown(false);
        let records = rrd_journal::replay(dir.path()).unwrap().records;
        assert_eq!(records.len(), 600);
        for f in 0..8 {
            let seq: Vec<u64> = records
                .iter()
                .filter(|r| r.path == format!("/f{f}.rrd"))
                .map(|r| r.args[0].trim_end_matches(":1").parse().unwrap())
                .collect();
            let expected: Vec<u64> = (1..=seq.len() as u64).collect();
            assert_eq!(seq, expected, "file {f}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_record_too_large_fails_alone_and_a_stopped_journal_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = start(dir.path(), SyncPolicy::None);
        let huge = "9".repeat(70_000);
        let bad = j.submit_update("/f.rrd", [huge.as_str()]);
        assert!(matches!(&bad, Ticket::Failed(why) if why.contains("too large")), "{bad:?}");
        let good = j.submit_update("/f.rrd", ["1:1"]);
        j.wait(&good).await.unwrap();
        assert!(j.wait(&bad).await.is_err());
        j.shutdown(false);
        assert_eq!(j.submit_update("/f.rrd", ["2:1"]), Ticket::Failed("the journal stopped".into()));
    }
}
