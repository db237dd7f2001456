//! The journal's writers and its sync thread: group commit with no thread
//! hop on the request path.
//!
//! Connections stage records with [`Journaler::submit_update`]: the record
//! is framed straight into one of [`STAGES`] staging buffers, chosen by the
//! file's cache shard (a short, almost never contended mutex; no
//! allocation and no message per record; no lock shared by all clients),
//! and gets a [`Ticket`]: the commit generation current when it was
//! staged. Before it replies, the connection itself makes its records
//! written ([`Journaler::commit`]): unless someone already wrote its
//! generation, it takes the writer lock, advances the generation, takes
//! every staging buffer that holds bytes and appends them in one go: a
//! copy into the segment's mapping (no system call), or one `pwritev(2)`
//! for 16 KiB or more (`rrd_journal::io::MappedIo`). A client that sends
//! many lines at once (or a BATCH) has them all written by one commit;
//! concurrent clients write each other's records.
//! A connection that finds the writer lock taken does not put its runtime
//! thread to sleep on it: it waits as a task for the release and then
//! finds its record written, or writes what is staged by then
//! (`Shared::commit_async`). With two cores and sixteen clients, that
//! lock was the daemon's most contended futex.
//! Under `--sync every:MS` and `none` that is the whole request path: the
//! record is in the kernel (it survives kill -9) before the reply, and no
//! other thread is woken.
//!
//! Under `--sync always` the reply also waits for an `fdatasync` covering
//! the record. The sync thread runs it: a waiter publishes the generation
//! it wants and wakes the thread, which takes a sync of everything written
//! so far under the writer lock, runs the `fdatasync` WITHOUT the lock (so
//! writers go on appending: what they add rides the next sync), and then
//! publishes "decided up to generation g". Concurrent clients share syncs.
//!
//! Why generations work: a record is staged, its buffer marked in the
//! `staged` mask (unless the mark is already there) and its ticket read,
//! in that order, under its buffer's lock; a commit advances the
//! generation from `g` to `g + 1`, then takes the mask, then each marked
//! buffer under its lock. A record with ticket `g` read the generation
//! before the advance, so its buffer's mark was set (by it or before it)
//! before the mask was taken, and its bytes are in the buffer: the commit
//! of `g` writes it (or an earlier commit did). A record staged after the
//! advance may ride along; it is published with the next generation.
//! Commits run one at a time under the writer lock, so `written` only
//! grows, and every generation up to it is on its way to disk in order.
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
//! acknowledged. A failed sync, or a failed write other than "no space",
//! poisons the journal: every later ticket fails, so no update is
//! acknowledged that is not durable (per the policy), and
//! [`Journaler::is_poisoned`] turns true for good (STATS, /metrics, and
//! UPDATE's early refusal read it). A write refused for lack of space
//! (ENOSPC, EDQUOT) whose partial bytes were taken back does not poison:
//! its group gets errors, and later groups succeed once there is space
//! again. A failed rotation never poisons (the current segment goes on).
//!
//! Segments: the sync thread rotates every `-f` seconds or when a segment
//! passes `--segment-bytes`; closed segments are deleted only through
//! [`Journaler::remove_below`], whose argument the caller computes from
//! the cache (the oldest segment still holding a value not yet synced into
//! its RRD file).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use rrd_journal::{Journal, SyncPolicy};

use crate::stats::Stats;

/// Failed groups remembered for their waiters (see [`Shared::failures`]).
const FAILURES_KEPT: usize = 1 << 16;

/// What the sync thread does besides syncing.
enum Control {
    Rotate,
    RemoveBelow(u64),
    /// Write and sync what is staged, then (if asked) delete every
    /// segment; the thread then exits.
    Shutdown {
        remove_all: bool,
        done: std::sync::mpsc::Sender<()>,
    },
}

/// Staging buffers (see the module doc); one bit each in `Shared::staged`.
pub const STAGES: usize = 64;
const _: () = assert!(STAGES <= 64, "the staged mask is one u64");

/// The journal file and what only its writer touches, under one lock.
struct Writer {
    journal: Journal,
    /// One buffer per staging buffer, swapped with it by a commit (so the
    /// stage's lock is held for a pointer swap, not for a copy or a
    /// write), then appended with the others in one commit and kept,
    /// emptied, for the next swap.
    taken: Vec<Vec<u8>>,
    /// The journal's sync count already booked into the stats.
    syncs_seen: u64,
}

struct Shared {
    policy: SyncPolicy,
    /// Framed records waiting for a commit. Each lock on a cache line of
    /// its own: clients on different cores stage into different buffers
    /// without taking each other's line.
    stages: Box<[CachePadded<Mutex<Vec<u8>>>]>,
    /// Bit `i` set: buffer `i` may hold bytes (set under its lock).
    staged: AtomicU64,
    /// The commit generation records staged now get as ticket (from 1).
    generation: AtomicU64,
    /// Every record of a generation up to this one is written (or failed).
    written: AtomicU64,
    writer: Mutex<Writer>,
    /// Connections waiting (without blocking their thread) for the writer
    /// lock to be released: [`Shared::commit_async`].
    lock_waiters: AtomicU64,
    /// Wakes them when the writer lock is released.
    released: tokio::sync::Notify,
    /// Under `--sync always`: generations decided (written and synced, or
    /// failed) so far.
    synced: tokio::sync::watch::Sender<u64>,
    /// The newest ticket someone waits to see synced.
    wanted: AtomicU64,
    /// The journal stopped: nothing staged now would be written.
    stopped: AtomicBool,
    orders: Mutex<Vec<Control>>,
    /// Wakes the sync thread (with `orders`): a waiter, an order.
    wake: Condvar,
    /// Groups that failed without poisoning (no space), as
    /// `(first, last, why)` ticket ranges, newest last. Waiters look here
    /// right after their ticket is decided, so only the most recent
    /// [`FAILURES_KEPT`] groups are kept.
    failures: Mutex<VecDeque<(u64, u64, String)>>,
    /// Whether `failures` ever held anything (checked without its lock:
    /// a healthy journal's waiters never take it).
    any_failure: AtomicBool,
    /// The first ticket of the group that found the journal poisoned, and
    /// why (every ticket from it on fails); `u64::MAX` while healthy.
    poisoned_from: AtomicU64,
    poison_reason: Mutex<String>,
    stats: Arc<Stats>,
    /// The segment appends currently go to (never decreases).
    current_seq: AtomicU64,
    poisoned: AtomicBool,
}

/// A journaled record to wait for: durable (per the sync policy) once its
/// generation is decided. Generations only grow, so waiting for the newest
/// of a client's tickets covers all of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ticket {
    /// Nothing to wait for (no journal configured).
    Done,
    /// The commit generation the record belongs to (from 1).
    At(u64),
    /// The journal could not take the record.
    Failed(JournalError),
}

/// Why the journal did not take a record: its update is not acknowledged.
/// The text is what the client reads after "Journal write failed, update
/// not acknowledged: ".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JournalError {
    /// The daemon is stopping; nothing is appended any more.
    #[error("the journal stopped")]
    Stopped,
    /// This record cannot be journaled (it does not fit a frame); other
    /// records can.
    #[error("{0}")]
    Record(String),
    /// An append failed without poisoning the journal (no space, a short
    /// write taken back): the records of that append fail, later ones may
    /// succeed.
    #[error("{0}")]
    Append(String),
    /// A write or sync failed in a way that leaves the segment's durability
    /// unknown: this record and every later one fail until a restart.
    #[error("{0}")]
    Poisoned(String),
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
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Journaler {
    /// No journal: tickets are done at once.
    pub fn disabled() -> Journaler {
        Journaler { shared: None, thread: Mutex::new(None) }
    }

    /// Starts the sync thread over an open journal.
    pub fn start(
        journal: Journal,
        dir: std::path::PathBuf,
        stats: Arc<Stats>,
        rotate_every: Duration,
        segment_len_max: u64,
    ) -> Journaler {
        let shared = Arc::new(Shared {
            policy: journal.policy(),
            stages: (0..STAGES).map(|_| CachePadded::new(Mutex::new(Vec::new()))).collect(),
            staged: AtomicU64::new(0),
            generation: AtomicU64::new(1),
            written: AtomicU64::new(0),
            current_seq: AtomicU64::new(journal.seq()),
            writer: Mutex::new(Writer { journal, taken: vec![Vec::new(); STAGES], syncs_seen: 0 }),
            lock_waiters: AtomicU64::new(0),
            released: tokio::sync::Notify::new(),
            synced: tokio::sync::watch::channel(0).0,
            wanted: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            orders: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            failures: Mutex::new(VecDeque::new()),
            any_failure: AtomicBool::new(false),
            poisoned_from: AtomicU64::new(u64::MAX),
            poison_reason: Mutex::new(String::new()),
            stats,
            poisoned: AtomicBool::new(false),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("journal-sync".into())
                .spawn(move || SyncThread { shared, dir, rotate_every, segment_len_max }.run())
                .expect("spawning the journal sync thread")
        };
        Journaler { shared: Some(shared), thread: Mutex::new(Some(thread)) }
    }

    pub fn enabled(&self) -> bool {
        self.shared.is_some()
    }

    /// The segment appends go to now. Read it BEFORE staging a record: the
    /// record lands in this segment or a later one.
    pub fn current_seq(&self) -> u64 {
        self.shared.as_ref().map_or(0, |s| s.current_seq.load(Ordering::SeqCst))
    }

    pub fn is_poisoned(&self) -> bool {
        self.shared.as_ref().is_some_and(|s| s.poisoned.load(Ordering::SeqCst))
    }

    /// Stages the record of an update of `path` with `args`, framed straight
    /// into its staging buffer (no [`rrd_journal::Record`] is built); see the
    /// module doc for the locking rule. `file_number` picks the buffer: any
    /// stable function of the file (the daemon passes its cache shard's
    /// number, already computed), the same for every record of that file.
    /// Nothing is written yet: [`Journaler::commit`] or [`Journaler::wait`]
    /// does that.
    pub fn submit_update<'a, I>(&self, file_number: usize, path: &str, args: I) -> Ticket
    where
        I: IntoIterator<Item = &'a str>,
        I::IntoIter: Clone,
    {
        let Some(shared) = &self.shared else { return Ticket::Done };
        let index = file_number % STAGES;
        let mut frames = shared.stages[index].lock().expect("journal stage lock");
        shared.stage_locked(&mut frames, index, path, args)
    }

    /// Makes sure `ticket`'s record is written (not yet synced): by this
    /// thread, with one write of everything staged, unless another commit
    /// already took it. Blocks only on the writer lock (one `write(2)`).
    pub fn commit(&self, ticket: &Ticket) {
        if let (Some(shared), Ticket::At(at)) = (&self.shared, ticket) {
            shared.commit(*at);
        }
    }

    /// Makes `ticket`'s record durable as the policy promises: written
    /// (here, see [`Journaler::commit`]), and under `--sync always` synced
    /// (by the sync thread); `Err(reason)` when the journal could not
    /// take it.
    pub async fn wait(&self, ticket: &Ticket) -> Result<(), JournalError> {
        let at = match ticket {
            Ticket::Done => return Ok(()),
            Ticket::Failed(why) => return Err(why.clone()),
            Ticket::At(n) => *n,
        };
        let Some(shared) = &self.shared else { return Ok(()) };
        shared.commit_async(at).await;
        if shared.policy == SyncPolicy::Always {
            let mut rx = shared.synced.subscribe();
            if *rx.borrow_and_update() < at {
                if shared.wanted.fetch_max(at, Ordering::SeqCst) < at {
                    shared.notify();
                }
                if rx.wait_for(|&done| done >= at).await.is_err() {
                    return Err(JournalError::Stopped);
                }
            }
        }
        shared.failure_of(at)
    }

    /// Whether the (decided) record of `ticket` failed, and why; call
    /// after [`Journaler::wait`] returned for it or a later ticket.
    pub fn failure(&self, ticket: &Ticket) -> Result<(), JournalError> {
        match (ticket, &self.shared) {
            (Ticket::Done, _) | (_, None) => Ok(()),
            (Ticket::Failed(why), _) => Err(why.clone()),
            (Ticket::At(n), Some(shared)) => shared.failure_of(*n),
        }
    }

    fn order(&self, control: Control) -> bool {
        let Some(shared) = &self.shared else { return false };
        let mut orders = shared.orders.lock().expect("journal orders lock");
        if shared.stopped.load(Ordering::SeqCst) {
            return false;
        }
        orders.push(control);
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

    /// Writes and syncs what is staged, then stops the thread; with
    /// `remove_all`, deletes every segment (only when every value is in its
    /// RRD file and synced).
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

impl Shared {
    /// Syncs everything written so far, holding the writer lock only to
    /// take and hand back the sync (writers append meanwhile), then, under
    /// `--sync always`, publishes the generations it covered (or fails them).
    fn sync_written(&self) {
        let sh = self;
        let (pending, upto) = {
            let w = sh.writer();
            (w.journal.begin_sync(), sh.written.load(Ordering::SeqCst))
        };
        let outcome = match pending {
            Ok(None) => Ok(()),
            Ok(Some(mut p)) => {
                let result = p.run();
                let mut w = sh.writer();
                let r = w.journal.finish_sync(p, result).map_err(|e| e.to_string());
                w.after_io(sh, r.as_ref().err());
                r
            }
            Err(e) => Err(e.to_string()),
        };
        sh.settle(upto, outcome);
    }

    /// Under `--sync always`, decides generations up to `upto` after the
    /// sync that covered them: acknowledged, or failed with the journal.
    fn settle(&self, upto: u64, outcome: Result<(), String>) {
        let sh = self;
        if sh.policy != SyncPolicy::Always {
            return;
        }
        if let Err(why) = outcome {
            let first = *sh.synced.borrow() + 1;
            sh.fail(true, first, upto, why);
        }
        sh.publish_synced(upto);
    }

    fn notify(&self) {
        let _orders = self.orders.lock().expect("journal orders lock");
        self.wake.notify_one();
    }

    /// Frames a record into staging buffer `index`, whose lock the caller
    /// holds (`frames`), marks the buffer and reads the ticket.
    fn stage_locked<'a, I>(&self, frames: &mut Vec<u8>, index: usize, path: &str, args: I) -> Ticket
    where
        I: IntoIterator<Item = &'a str>,
        I::IntoIter: Clone,
    {
        if self.stopped.load(Ordering::SeqCst) {
            return Ticket::Failed(JournalError::Stopped);
        }
        if let Err(e) = rrd_journal::encode_frame(frames, path, args) {
            return Ticket::Failed(JournalError::Record(e.to_string()));
        }
        // Mark, then read the ticket, both under the buffer's lock (see the
        // module doc). A mark found set needs no write: only a commit
        // clears it, and only after our load (no one else can set it while
        // we hold the buffer), so that commit takes our bytes. Most records
        // find it set: one locked write per buffer and commit, not one per
        // record on a line every client writes.
        if self.staged.load(Ordering::SeqCst) & (1 << index) == 0 {
            self.staged.fetch_or(1 << index, Ordering::SeqCst);
        }
        Ticket::At(self.generation.load(Ordering::SeqCst))
    }

    fn writer(&self) -> WriterLock<'_> {
        WriterLock { guard: Some(self.writer.lock().expect("journal writer lock")), shared: self }
    }

    /// Writes generation `at` unless it is written already, blocking this
    /// thread on the writer lock (flush workers, the sync thread, a BATCH's
    /// intermediate commits).
    fn commit(&self, at: u64) {
        if self.written.load(Ordering::SeqCst) >= at {
            return;
        }
        let mut w = self.writer();
        if self.written.load(Ordering::SeqCst) < at {
            w.commit(self);
        }
    }

    /// [`Shared::commit`] for a connection: when another thread holds the
    /// writer lock (in its `write(2)`, a few microseconds; in a rotation's
    /// sync, milliseconds), the task waits for the release instead of
    /// putting its runtime thread to sleep on the lock, so that thread goes
    /// on serving other connections, whose records the next commit then
    /// writes together.
    ///
    /// No lost wake-up: a task that found the lock taken registers (and is
    /// counted), then tries the lock once more before it waits; every
    /// release notifies the registered waiters when the count is not zero
    /// ([`WriterLock`]'s drop). A waiter woken whose generation is still
    /// unwritten tries again.
    async fn commit_async(&self, at: u64) {
        while self.written.load(Ordering::SeqCst) < at {
            // Most commits find the lock free: no registration then.
            if self.try_commit(at) {
                return;
            }
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            let _waiting = LockWaiter::new(self);
            // Registered: a release from here on wakes us. Try once more,
            // for a release that came before.
            if self.try_commit(at) {
                return;
            }
            released.await;
        }
    }

    /// Commits generation `at` (unless written meanwhile) if the writer
    /// lock is free; `false` when it is taken.
    fn try_commit(&self, at: u64) -> bool {
        match self.writer.try_lock() {
            Ok(guard) => {
                let mut w = WriterLock { guard: Some(guard), shared: self };
                if self.written.load(Ordering::SeqCst) < at {
                    w.commit(self);
                }
                true
            }
            Err(std::sync::TryLockError::WouldBlock) => false,
            Err(std::sync::TryLockError::Poisoned(_)) => panic!("journal writer lock poisoned"),
        }
    }

    fn failure_of(&self, at: u64) -> Result<(), JournalError> {
        if at >= self.poisoned_from.load(Ordering::SeqCst) {
            return Err(JournalError::Poisoned(
                self.poison_reason.lock().expect("poison reason lock").clone(),
            ));
        }
        if !self.any_failure.load(Ordering::SeqCst) {
            return Ok(());
        }
        let failures = self.failures.lock().expect("journal failures lock");
        match failures.iter().rev().find(|(first, last, _)| (*first..=*last).contains(&at)) {
            Some((_, _, why)) => Err(JournalError::Append(why.clone())),
            None => Ok(()),
        }
    }

    /// Records `first ..= last` failed: poisoned (every later one fails
    /// too) or refused for lack of space (only these).
    fn fail(&self, poisoned: bool, first: u64, last: u64, why: String) {
        if first > last {
            return;
        }
        Stats::add(&self.stats.journal_append_errors, 1);
        if poisoned {
            // The reason is in place before the ticket number that makes
            // waiters read it (both under the writer lock, by its holder).
            if self.poisoned_from.load(Ordering::SeqCst) == u64::MAX {
                *self.poison_reason.lock().expect("poison reason lock") = why;
                self.poisoned_from.store(first, Ordering::SeqCst);
            }
        } else {
            let mut failures = self.failures.lock().expect("journal failures lock");
            if failures.len() == FAILURES_KEPT {
                failures.pop_front();
            }
            failures.push_back((first, last, why));
            self.any_failure.store(true, Ordering::SeqCst);
        }
    }

    /// Under `--sync always`: tells waiters that every record up to `upto`
    /// is decided.
    fn publish_synced(&self, upto: u64) {
        self.synced.send_if_modified(|done| {
            let newer = upto > *done;
            if newer {
                *done = upto;
            }
            newer
        });
    }
}

/// The writer lock held; its release wakes the connections waiting for
/// it ([`Shared::commit_async`]), after the lock is free.
struct WriterLock<'a> {
    guard: Option<MutexGuard<'a, Writer>>,
    shared: &'a Shared,
}

impl std::ops::Deref for WriterLock<'_> {
    type Target = Writer;
    fn deref(&self) -> &Writer {
        self.guard.as_ref().expect("held until drop")
    }
}

impl std::ops::DerefMut for WriterLock<'_> {
    fn deref_mut(&mut self) -> &mut Writer {
        self.guard.as_mut().expect("held until drop")
    }
}

impl Drop for WriterLock<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        if self.shared.lock_waiters.load(Ordering::SeqCst) > 0 {
            self.shared.released.notify_waiters();
        }
    }
}

/// One connection counted in [`Shared::lock_waiters`] while it exists (a
/// connection dropped while waiting is uncounted too).
struct LockWaiter<'a>(&'a AtomicU64);

impl<'a> LockWaiter<'a> {
    fn new(shared: &'a Shared) -> LockWaiter<'a> {
        shared.lock_waiters.fetch_add(1, Ordering::SeqCst);
        LockWaiter(&shared.lock_waiters)
    }
}

impl Drop for LockWaiter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Writer {
    /// Closes the current generation and appends everything staged in one
    /// write of the segment (see the module doc for why nothing of it is
    /// missed).
    fn commit(&mut self, sh: &Shared) {
        let generation = sh.generation.fetch_add(1, Ordering::SeqCst);
        let mut mask = sh.staged.swap(0, Ordering::SeqCst);
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let mut staged = sh.stages[i].lock().expect("journal stage lock");
            std::mem::swap(&mut *staged, &mut self.taken[i]);
        }
        let first = sh.written.load(Ordering::SeqCst) + 1;
        // No allocation per commit: at most one part per staging buffer.
        let mut parts: [&[u8]; STAGES] = [&[]; STAGES];
        let mut count = 0;
        for t in self.taken.iter().filter(|t| !t.is_empty()) {
            parts[count] = t;
            count += 1;
        }
        let parts = &parts[..count];
        let result = if parts.is_empty() {
            Ok(())
        } else {
            let before = self.journal.len_bytes();
            let result = self.journal.write_encoded_parts(parts).map_err(|e| e.to_string());
            Stats::add(&sh.stats.journal_commits, 1);
            if result.is_ok() {
                Stats::add(&sh.stats.journal_bytes, self.journal.len_bytes() - before);
            }
            result
        };
        for taken in &mut self.taken {
            taken.clear();
            if taken.capacity() > 4 << 20 {
                // One burst must not pin its buffer for good.
                taken.shrink_to(64 << 10);
            }
        }
        if let Err(why) = result {
            self.after_io(sh, Some(&why));
            // Records staged after the advance may have been taken too,
            // with the generation current now as their ticket: that
            // generation fails as well, and is closed so that records
            // staged from here on get a newer one. (Records of it staged
            // after the take are refused although a later commit writes
            // them: durable but not acknowledged, the safe direction.)
            let newest = sh.generation.fetch_add(1, Ordering::SeqCst);
            sh.fail(self.journal.poisoned().is_some(), first, newest, why);
            sh.written.store(newest, Ordering::SeqCst);
            return;
        }
        sh.written.store(generation, Ordering::SeqCst);
    }

    /// Books the syncs the journal did since the last call and mirrors its
    /// poisoned state (which never clears).
    fn after_io(&mut self, sh: &Shared, failure: Option<&String>) {
        let done = self.journal.sync_count();
        if done > self.syncs_seen {
            let d = self.journal.last_sync_duration();
            for _ in self.syncs_seen..done {
                sh.stats.journal_sync_seconds.observe(d);
            }
            Stats::add(&sh.stats.journal_syncs, done - self.syncs_seen);
            Stats::add(&sh.stats.journal_sync_ns, d.as_nanos() as u64 * (done - self.syncs_seen));
            self.syncs_seen = done;
        }
        if let Some(why) = self.journal.poisoned() {
            if !sh.poisoned.swap(true, Ordering::SeqCst) {
                crate::log!(
                    Crit,
                    "journal poisoned, no further updates are acknowledged until restart: {why}"
                );
                sh.stats.journal_poisoned.store(1, Ordering::SeqCst);
            }
        } else if let Some(e) = failure {
            crate::log!(Err, "journal append failed, its updates are not acknowledged: {e}");
        }
    }
}

/// The thread that syncs, rotates and removes segments.
struct SyncThread {
    shared: Arc<Shared>,
    dir: std::path::PathBuf,
    rotate_every: Duration,
    segment_len_max: u64,
}

impl SyncThread {
    fn run(self) {
        let sh = &*self.shared;
        let mut last_rotate = Instant::now();
        // Under `every:MS` the journal is synced on time even when idle.
        let idle_wait = match sh.policy {
            SyncPolicy::Every(d) => d,
            _ => Duration::from_millis(500),
        };
        loop {
            let controls = {
                let mut orders = sh.orders.lock().expect("journal orders lock");
                if orders.is_empty() && !self.sync_wanted() {
                    orders = sh.wake.wait_timeout(orders, idle_wait).expect("journal orders lock").0;
                }
                std::mem::take(&mut *orders)
            };
            match sh.policy {
                SyncPolicy::Always if self.sync_wanted() => self.sync_written(),
                SyncPolicy::Every(interval) if sh.writer().journal.last_sync_age() >= interval => {
                    self.sync_written()
                }
                _ => {}
            }
            let mut stop = None;
            for control in controls {
                match control {
                    Control::Rotate => self.rotate(&mut last_rotate),
                    Control::RemoveBelow(seq) => self.remove_below(seq),
                    Control::Shutdown { remove_all, done } => stop = Some((remove_all, done)),
                }
            }
            let segment_len = sh.writer().journal.len_bytes();
            if segment_len > self.segment_len_max || last_rotate.elapsed() >= self.rotate_every {
                self.rotate(&mut last_rotate);
            }
            if let Some((remove_all, done)) = stop {
                // Records staged before `stopped` still get an answer (a
                // stager checks it under its buffer's lock, and this commit
                // takes every buffer after setting it).
                sh.stopped.store(true, Ordering::SeqCst);
                sh.commit(sh.generation.load(Ordering::SeqCst));
                self.sync_written();
                if remove_all && !sh.poisoned.load(Ordering::SeqCst) {
                    self.remove_everything();
                }
                let _ = done.send(());
                return;
            }
        }
    }

    /// Under `--sync always`: someone waits for a generation not yet synced.
    fn sync_wanted(&self) -> bool {
        let sh = &*self.shared;
        sh.policy == SyncPolicy::Always && sh.wanted.load(Ordering::SeqCst) > *sh.synced.borrow()
    }

    fn sync_written(&self) {
        self.shared.sync_written();
    }

    fn settle(&self, upto: u64, outcome: Result<(), String>) {
        self.shared.settle(upto, outcome);
    }

    fn rotate(&self, last_rotate: &mut Instant) {
        *last_rotate = Instant::now();
        let sh = &*self.shared;
        // Sync most of the segment first, without the writer lock: the
        // rotation syncs again under it, and that sync should find little
        // left to write (writers wait meanwhile).
        if sh.writer().journal.poisoned().is_none() {
            self.sync_written();
        }
        let mut w = sh.writer();
        if w.journal.poisoned().is_some() {
            // Nothing more is appended; a new segment would stay empty.
            return;
        }
        let upto = sh.written.load(Ordering::SeqCst);
        let rotated = w.journal.rotate();
        // The rotation synced what was written (or poisoned trying).
        let synced = w.journal.is_synced() && w.journal.poisoned().is_none();
        match rotated {
            Ok(_) => {
                sh.current_seq.store(w.journal.seq(), Ordering::SeqCst);
                Stats::add(&sh.stats.journal_rotate, 1);
                w.after_io(sh, None);
            }
            Err(e) => {
                // The current segment goes on (see rrd-journal); a sync
                // failure inside the rotation did poison, and after_io says so.
                crate::log!(Err, "journal rotation failed: {e}");
                w.after_io(sh, None);
            }
        }
        let poisoned = w.journal.poisoned().map(str::to_string);
        drop(w);
        match (synced, poisoned) {
            (_, Some(why)) => self.settle(upto, Err(why)),
            (true, None) => self.settle(upto, Ok(())),
            (false, None) => {}
        }
    }

    fn remove_below(&self, seq: u64) {
        let sh = &*self.shared;
        // Read under the lock, removed without it: the current segment
        // only grows, so `limit` stays below it.
        let limit = seq.min(sh.writer().journal.seq());
        let Ok(existing) = rrd_journal::segments(&self.dir) else { return };
        if !existing.iter().any(|&s| s < limit) {
            return;
        }
        // The flushes' completion records must be durable before the
        // values they cover can go (docs/journal.md, "Flushes and power
        // loss"): under `every:MS` they may not be synced yet.
        self.sync_written();
        if sh.poisoned.load(Ordering::SeqCst) {
            return;
        }
        match rrd_journal::remove_segments_through(&self.dir, limit - 1) {
            Ok(()) => {
                let n = existing.iter().filter(|&&s| s < limit).count() as u64;
                Stats::add(&sh.stats.journal_segments_removed, n);
            }
            Err(e) => crate::log!(Err, "removing journal segments failed: {e}"),
        }
    }

    /// Every value is in its RRD file and synced: nothing in the journal is
    /// needed any more. A fresh empty segment is left behind (harmless: it
    /// replays to nothing).
    fn remove_everything(&self) {
        let mut last_rotate = Instant::now();
        self.rotate(&mut last_rotate);
        let current = self.shared.writer().journal.seq();
        self.remove_below(current);
    }
}

/// The flushers' undo and completion records go to the journal like
/// updates (staged, written by one commit); an undo record is synced by
/// the flushing thread itself, whatever the policy.
impl crate::flusher::UndoLog for Journaler {
    fn append_durable(&self, records: &[rrd_journal::Record]) -> Result<(), String> {
        let Some(shared) = &self.shared else { return Ok(()) };
        let last = self.stage(records)?;
        let Ticket::At(at) = last else { return Ok(()) };
        shared.commit(at);
        self.failure(&last).map_err(|e| e.to_string())?;
        // A sync taken after the commit covers the records (begin_sync
        // finds nothing to do only when a finished sync already did).
        shared.sync_written();
        match shared.writer().journal.poisoned() {
            Some(why) => Err(format!("journal failure: {why}")),
            None => Ok(()),
        }
    }

    fn append(&self, records: &[rrd_journal::Record]) {
        if let (Some(shared), Ok(Ticket::At(at))) = (&self.shared, self.stage(records)) {
            shared.commit(at);
        }
    }
}

impl Journaler {
    fn stage(&self, records: &[rrd_journal::Record]) -> Result<Ticket, String> {
        let mut last = Ticket::Done;
        for r in records {
            match self.submit_update(0, &r.path, r.args.iter().map(String::as_str)) {
                Ticket::Failed(e) => return Err(e.to_string()),
                t => last = last.max(t),
            }
        }
        Ok(last)
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

    /// The records of a journal another thread is appending to: read
    /// without [`rrd_journal::replay`], which truncates what looks like a
    /// torn tail (a recovery step, for a journal nobody writes) and would
    /// cut a record being appended.
    fn records_read_only(dir: &std::path::Path) -> Vec<rrd_journal::Record> {
        let mut records = Vec::new();
        for seq in rrd_journal::segments(dir).unwrap() {
            let path = dir.join(rrd_journal::segment_name(seq));
            let bytes = std::fs::read(path).unwrap();
            records.extend(rrd_journal::scan_segment(seq, &bytes, true).records);
        }
        records
    }

    /// The interleaving behind the test above, forced: a record staged
    /// after a commit advanced the generation, but before it took the
    /// record's buffer, is written by that commit; when the write fails
    /// for lack of space, the record's ticket (a generation newer than
    /// the commit's) must fail too, or the next commit, which finds the
    /// buffer empty, would acknowledge a record that is not in the journal.
    #[test]
    fn a_record_riding_along_in_a_failed_write_is_not_acknowledged() {
        use rrd_journal::fault::{Action, FaultPlan, FaultyIo, Op, ENOSPC};
        let dir = tempfile::tempdir().unwrap();
        let plan = FaultPlan::new();
        // The first append (the segment's header is written at creation).
        plan.inject(Op::Write, 1, Action::Fail(ENOSPC));
        let io = Arc::new(FaultyIo::new(Arc::new(rrd_journal::io::OsIo), plan));
        let journal = Journal::open_with(dir.path(), SyncPolicy::None, io).unwrap();
        let j = Journaler::start(
            journal,
            dir.path().to_path_buf(),
            Arc::new(Stats::default()),
            Duration::from_secs(3600),
            1 << 30,
        );
        let shared = j.shared.clone().unwrap();
        let a = j.submit_update(0, "/a.rrd", ["1:1"]);
        assert_eq!(a, Ticket::At(1));
        let mut buffer = shared.stages[0].lock().unwrap();
        let committer = std::thread::spawn({
            let shared = shared.clone();
            move || shared.commit(1)
        });
        // The commit advanced the generation and waits for the buffer.
        while shared.generation.load(Ordering::SeqCst) == 1 {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(50));
        let b = shared.stage_locked(&mut buffer, 0, "/b.rrd", ["2:1"]);
        assert_eq!(b, Ticket::At(2));
        drop(buffer);
        committer.join().unwrap();
        assert!(j.failure(&a).is_err(), "a was in the failed write");
        let b_acknowledged =
            tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(j.wait(&b)).is_ok();
        let in_journal = records_read_only(dir.path()).iter().any(|r| r.path == "/b.rrd");
        assert!(!b_acknowledged || in_journal, "b acknowledged, not in the journal");
    }

    /// A record staged into a buffer already marked (by an earlier record
    /// of the same generation) skips the mark; the commit of its ticket
    /// still takes the buffer, so both records are written, and the mark
    /// is clear again after the commit.
    #[test]
    fn a_record_in_an_already_marked_buffer_is_written_by_its_commit() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = start(dir.path(), SyncPolicy::None);
        let shared = j.shared.clone().unwrap();
        let a = j.submit_update(3, "/a.rrd", ["1:1"]);
        assert_eq!(shared.staged.load(Ordering::SeqCst), 1 << 3, "the first record marks its buffer");
        let b = j.submit_update(3, "/b.rrd", ["2:1"]);
        assert_eq!((&a, &b), (&Ticket::At(1), &Ticket::At(1)));
        j.commit(&b);
        assert_eq!(shared.staged.load(Ordering::SeqCst), 0, "the commit took the mark");
        let paths: Vec<String> = records_read_only(dir.path()).into_iter().map(|r| r.path).collect();
        assert_eq!(paths, ["/a.rrd", "/b.rrd"]);
        j.failure(&a).unwrap();
        j.failure(&b).unwrap();
    }

    /// A journal whose writes fail for lack of space every few writes
    /// (not poisoning) while several threads stage into one buffer and
    /// commit: every record acknowledged is in the journal. A record
    /// staged after a commit advanced the generation but before it took
    /// the buffer rides along in that commit's write, so a failure of that
    /// write must fail its ticket too.
    #[test]
    fn under_failing_writes_every_acknowledged_record_is_in_the_journal() {
        use rrd_journal::fault::{Action, FaultPlan, FaultyIo, Op, ENOSPC};
        const STAGERS: usize = 4;
        const RECORDS: u64 = 3_000;
        let dir = tempfile::tempdir().unwrap();
        let plan = FaultPlan::new();
        for nth in (2..200_000).step_by(3) {
            plan.inject(Op::Write, nth, Action::Fail(ENOSPC));
        }
        let io = Arc::new(FaultyIo::new(Arc::new(rrd_journal::io::OsIo), plan));
        let journal = Journal::open_with(dir.path(), SyncPolicy::None, io).unwrap();
        let stats = Arc::new(Stats::default());
        let j = Arc::new(Journaler::start(
            journal,
            dir.path().to_path_buf(),
            stats,
            Duration::from_secs(3600),
            1 << 30,
        ));
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(STAGERS).build().unwrap();
        let acked: Vec<Vec<u64>> = runtime.block_on(async {
            let tasks: Vec<_> = (0..STAGERS)
                .map(|k| {
                    let j = j.clone();
                    tokio::spawn(async move {
                        let mut acked = Vec::new();
                        for i in 1..=RECORDS {
                            let t = j.submit_update(0, &format!("/f{k}.rrd"), [format!("{i}:1").as_str()]);
                            if j.wait(&t).await.is_ok() {
                                acked.push(i);
                            }
                        }
                        acked
                    })
                })
                .collect();
            let mut all = Vec::new();
            for t in tasks {
                all.push(t.await.unwrap());
            }
            all
        });
        let records = records_read_only(dir.path());
        let mut failed = 0;
        for (k, acked) in acked.iter().enumerate() {
            let path = format!("/f{k}.rrd");
            let present: std::collections::HashSet<&str> =
                records.iter().filter(|r| r.path == path).map(|r| r.args[0].as_str()).collect();
            failed += RECORDS as usize - acked.len();
            for i in acked {
                assert!(
                    present.contains(format!("{i}:1").as_str()),
                    "{path} {i}:1 acknowledged, not in the journal"
                );
            }
        }
        assert!(failed > 0, "no write failed: the test tested nothing");
    }

    /// A connection whose commit finds the writer lock held (another
    /// thread in its `write(2)`, or a rotation's sync) waits as a task: the
    /// runtime thread serves other connections meanwhile, and the record is
    /// written once the lock is free.
    #[tokio::test(flavor = "current_thread")]
    async fn a_commit_behind_a_held_writer_lock_leaves_its_thread_free() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = start(dir.path(), SyncPolicy::None);
        let j = Arc::new(j);
        let shared = j.shared.clone().unwrap();
        let released = Arc::new(AtomicBool::new(false));
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn({
            let (shared, released) = (shared.clone(), released.clone());
            move || {
                let _w = shared.writer();
                held_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(300));
                released.store(true, Ordering::SeqCst);
            }
        });
        held_rx.recv().unwrap();
        let ticket = j.submit_update(0, "/f.rrd", ["1:1"]);
        let waiter = tokio::spawn({
            let j = j.clone();
            async move { j.wait(&ticket).await }
        });
        // Runs after the waiter's first poll, on the same (only) thread.
        let other = tokio::spawn({
            let released = released.clone();
            async move { released.load(Ordering::SeqCst) }
        });
        assert!(!other.await.unwrap(), "the runtime's thread slept on the writer lock");
        assert!(!waiter.is_finished());
        waiter.await.unwrap().unwrap();
        assert!(released.load(Ordering::SeqCst));
        holder.join().unwrap();
        let records = records_read_only(dir.path());
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].args, ["1:1"]);
        assert_eq!(shared.lock_waiters.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn under_sync_always_one_wait_syncs_everything_written_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let (j, stats) = start(dir.path(), SyncPolicy::Always);
        let tickets: Vec<Ticket> =
            (1..=3).map(|i| j.submit_update(0, "/f.rrd", [format!("{i}:1").as_str()])).collect();
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
                        (j.submit_update(f, &format!("/f{f}.rrd"), [format!("{}:1", *last).as_str()]), *last)
                    };
                    if i % 10 == 9 {
                        j.wait(&ticket).await.unwrap();
                        let on_disk = records_read_only(&dir);
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
        let bad = j.submit_update(0, "/f.rrd", [huge.as_str()]);
        assert!(
            matches!(&bad, Ticket::Failed(JournalError::Record(why)) if why.contains("too large")),
            "{bad:?}"
        );
        let good = j.submit_update(0, "/f.rrd", ["1:1"]);
        j.wait(&good).await.unwrap();
        assert!(j.wait(&bad).await.is_err());
        j.shutdown(false);
        assert_eq!(j.submit_update(0, "/f.rrd", ["2:1"]), Ticket::Failed(JournalError::Stopped));
    }
}
