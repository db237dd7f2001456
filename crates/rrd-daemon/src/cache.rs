//! The cache: per file, the update values not yet written to it, and the
//! file's header as the last flush left it.
//!
//! Layout: a fixed number of shards, each a mutex over a map from cache key
//! (normalized path) to [`Entry`]. Work on one file locks one shard for a
//! few microseconds; there is no global lock on the update path.
//!
//! An entry's values live in one of two places:
//! - `pending`: accepted, not yet taken by a flush;
//! - `inflight`: taken by a flush worker, being written and synced.
//!
//! Invariants (each holds whenever the shard lock is released):
//! - `last_stamp` is at least the time of every value in `pending` and
//!   `inflight`, and at least the file's last update when the entry was made;
//!   a new value must be later (rrdcached's "minimum one second step").
//! - `pending` non-empty ⇒ `oldest_seq` is ≤ the journal segment of its
//!   oldest value, and a timer `(due_at, key)` exists.
//! - `flushing` ⇔ a worker owns `inflight` (at most one worker per file);
//!   `inflight` is empty and `inflight_seq` is `None` otherwise.
//! - `flushed_gen` counts completed flushes; FLUSH waits on it.
//! - `retry_at` is set only while `pending` holds values a failed flush put
//!   back; the file's timer is then due at `retry_at`.
//! - `Cache::pending_values` / `pending_bytes` are the sums of
//!   `pending.len()` / `pending.bytes()` over all entries.
//! - A kept header holds its share of `Cache::kept_bytes`, within
//!   `Cache::kept_budget` ([`Kept`]): it is given back when the header is
//!   taken or dropped.
//!
//! The fields of [`Entry`] are private; these transitions are the only
//! ways it changes, each keeping the invariants (the caller holds the
//! entry's shard):
//! - made: [`Cache::new_entry`] (with the file's header) or [`Entry::new`];
//! - values accepted, whoever brings them (an UPDATE, the journal's replay,
//!   the cluster's applier): [`Entry::mark`], then [`Entry::take_value`]
//!   per value, then [`Entry::settle_pending`] (sums, first-value time and
//!   segment, timer) or [`Entry::roll_back`];
//! - flush requested: [`Cache::queue_flush`] (due files, FLUSHALL, a flush
//!   asked for while one ran), [`Cache::request_flush`] (FLUSH, which then
//!   waits for [`Entry::flush_done`]);
//! - flush begun by a worker: [`Entry::begin_flush`] (pending → in flight,
//!   out of the sums, kept header taken; or, when another worker is
//!   writing the file, a flush requested after it);
//! - flush finished: [`Entry::finish_flush`]: written or dropped (in-flight
//!   values gone, backoff reset, a requested flush queued) or failed
//!   (values back in front of the pending ones and in the sums, retried
//!   after a backoff); the kept header put back, `flushed_gen` moved on;
//! - header forgotten (TUNE): [`Entry::forget_header`];
//! - [`Entry::suspend`], [`Entry::resume`] (the timer set again);
//! - dropped: [`Cache::forget_entry`] (FORGET), [`Cache::retain`] (idle
//!   entries, a cluster node's revoked files): pending values leave the
//!   sums.
//!
//! Everything else reads an entry through its accessors
//! ([`Entry::unwritten`], [`Entry::pending_len`], [`Entry::is_flushing`],
//! [`Entry::flushed_gen`], ...).
//!
//! Values are stored as [`Values`]: each value's time, parsed once when the
//! UPDATE arrived, and its text, back to back in one buffer per file (no
//! allocation per value, one heap buffer touched per value). The text is
//! kept, not only numbers: rrdtool copies each value's text into the file's
//! `last_ds` field and COUNTER/DERIVE subtract digit strings, so the flush
//! must see the bytes the client sent.
//!
//! The flush queue (files waiting for a worker) and the timers (when files
//! become due) are separate small mutexes; they hold keys only.
//!
//! Deliberately absent here: I/O. Workers, readers and commands do that.

use std::collections::{BTreeSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crossbeam_utils::CachePadded;
use rrd_engine::batch::KeptHeader;

use crate::stats::Stats;

pub use crate::key::Key;

pub use crate::shard_map::ShardMap;

/// Update values of one file, oldest first: each value's time (parsed
/// once, at UPDATE) and its `time:value[:value...]` text, back to back in
/// ONE buffer (`[f64 time][u32 length][text]` per value): no allocation per
/// value, and taking a value touches one heap buffer, not two.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Values {
    buf: Vec<u8>,
    count: usize,
}

/// Bytes one value costs besides its text (its time and length).
pub const VALUE_OVERHEAD_BYTES: u64 = 12;

const TIME_LEN: usize = 8;
const HEAD_LEN: usize = 12;

impl Values {
    pub fn push(&mut self, time: f64, value: &str) {
        let len = u32::try_from(value.len()).expect("a value is shorter than a protocol line");
        self.buf.reserve(HEAD_LEN + value.len());
        self.buf.extend_from_slice(&time.to_le_bytes());
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.extend_from_slice(value.as_bytes());
        self.count += 1;
    }

    /// Starts loading the memory the next [`Values::push`] writes.
    fn prefetch_end(&self) {
        rrd_sys::prefetch::read(&self.buf[self.buf.len()..]);
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Each value's time with its text, oldest first.
    pub fn iter_timed(&self) -> impl Iterator<Item = (f64, &str)> + Clone + '_ {
        self.iter_timed_from(0)
    }

    /// [`Values::iter_timed`] from byte `at` of the buffer (a value's start).
    fn iter_timed_from(&self, mut at: usize) -> impl Iterator<Item = (f64, &str)> + Clone + '_ {
        std::iter::from_fn(move || {
            let head = self.buf.get(at..at + HEAD_LEN)?;
            let time = f64::from_le_bytes(head[..TIME_LEN].try_into().expect("8 bytes"));
            let len = u32::from_le_bytes(head[TIME_LEN..].try_into().expect("4 bytes")) as usize;
            let text = &self.buf[at + HEAD_LEN..at + HEAD_LEN + len];
            at += HEAD_LEN + len;
            // Only ever filled from whole `&str`s (see `push`).
            Some((time, std::str::from_utf8(text).expect("values hold UTF-8")))
        })
    }

    /// The values' texts, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.iter_timed().map(|(_, text)| text)
    }

    /// Memory the values account for: texts plus [`VALUE_OVERHEAD_BYTES`] each.
    pub fn bytes(&self) -> u64 {
        self.buf.len() as u64
    }

    pub fn to_strings(&self) -> Vec<String> {
        self.iter().map(str::to_string).collect()
    }

    /// Keeps only the first `len` values.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.count {
            return;
        }
        let end: usize = self.iter().take(len).map(|t| HEAD_LEN + t.len()).sum();
        self.buf.truncate(end);
        self.count = len;
    }

    pub fn clear(&mut self) {
        self.buf.clear();
        self.count = 0;
    }

    /// Appends `more` after the values held now.
    pub fn extend_from(&mut self, more: &Values) {
        self.buf.extend_from_slice(&more.buf);
        self.count += more.count;
    }

    /// Puts `front` before the values held now (a failed flush's values
    /// going back in front of those that arrived meanwhile).
    pub fn prepend(&mut self, mut front: Values) {
        front.buf.extend_from_slice(&self.buf);
        front.count += self.count;
        *self = front;
    }
}

const SHARD_COUNT: usize = 64;

/// One file's values and flush state. Its fields are private: every change
/// goes through a transition below, which keeps the invariants of the
/// module doc, and everyone else reads it through the accessors at the end.
///
/// Laid out in declaration order (`repr(C)`), the fields an UPDATE touches
/// first: in a shard's map an entry sits right after its key, so an UPDATE
/// reads the key and these fields from one run of adjacent cache lines
/// instead of lines spread over the whole 296-byte slot (a cache miss
/// each, in a BATCH over more files than the caches hold).
#[derive(Debug)]
#[repr(C)]
pub struct Entry {
    // What accepting a value reads and writes.
    /// Accepted values not yet taken by a flush.
    pending: Values,
    /// Time of the newest accepted value (or the file's last update).
    last_stamp: f64,
    /// Unix seconds of the last update or flush (idle entries are dropped).
    last_activity: i64,
    /// Unix seconds when `pending` last became non-empty.
    first_pending_at: i64,
    /// Journal segment holding (at or after) the oldest pending value.
    oldest_seq: u64,
    /// When the values a failed flush put back are tried again.
    retry_at: Option<i64>,
    /// This file's share of `-z`, fixed when the entry is made.
    jitter_secs: u64,
    // What flushes and commands use.
    /// Values a flush worker took and is writing (empty unless `flushing`).
    inflight: Values,
    /// The file's header as our last read or write left it (checked against
    /// the file's stamp before use; see `rrd_engine::batch`).
    kept: Option<Kept>,
    /// Journal segment of the oldest in-flight value (`Some` while flushing).
    inflight_seq: Option<u64>,
    /// Completed flushes (FLUSH waits on it).
    flushed_gen: u64,
    /// The file's inode number as last seen (0: not known). Flushes are
    /// queued in inode order (see `flusher::disk_order`).
    inode: u64,
    /// Why the last flush did not write and sync every value it took
    /// (`None`: it did); what a FLUSH waiting for it answers.
    flush_failure: Option<String>,
    /// Failed flushes in a row (I/O errors); sets the retry backoff.
    retries: u32,
    /// A worker owns `inflight` (at most one per file).
    flushing: bool,
    /// The file's key is in the flush queue.
    in_queue: bool,
    /// A flush was asked for while one was running.
    requeue: bool,
    /// SUSPEND: the file is not written until RESUME.
    suspended: bool,
}

/// What a flush worker takes from an entry ([`Entry::begin_flush`]).
#[derive(Debug)]
pub struct FlushStart {
    /// The values to write, oldest first (now in flight).
    pub args: Vec<String>,
    /// The file's last flush failed: part of these values may already be
    /// in the file (the update skips values the file holds).
    pub after_failure: bool,
    /// The file's kept header, its share of the header budget given back.
    pub kept: Option<KeptHeader>,
}

/// How a flush ended ([`Entry::finish_flush`]).
#[derive(Clone, Copy, Debug)]
pub enum FlushEnd<'a> {
    /// Written and synced; `refused`: why the file refused a value (it and
    /// the values after it were dropped).
    Written { refused: Option<&'a str> },
    /// Not written and never will be (file gone, not an RRD): the flush's
    /// `values` are dropped.
    Dropped { why: &'a str, values: usize },
    /// Not written for a reason that may pass: the values go back to
    /// pending and are retried after a backoff.
    Failed { why: &'a str },
}

/// A failed flush's values, kept pending for a retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// Seconds until the retry.
    pub wait_secs: i64,
    /// Values now pending (those put back and those that arrived meanwhile).
    pub values: usize,
}

/// Construction.
impl Entry {
    /// An entry with no values, for a file last updated at `last_stamp`,
    /// whose share of `-z` is `jitter_secs`, and no kept header (see
    /// [`Cache::new_entry`]).
    pub fn new(last_stamp: f64, jitter_secs: u64, now: i64) -> Entry {
        Entry {
            pending: Values::default(),
            inflight: Values::default(),
            kept: None,
            retries: 0,
            retry_at: None,
            last_stamp,
            first_pending_at: 0,
            jitter_secs,
            oldest_seq: 0,
            inflight_seq: None,
            flushing: false,
            in_queue: false,
            requeue: false,
            flushed_gen: 0,
            suspended: false,
            last_activity: now,
            inode: 0,
            flush_failure: None,
        }
    }

    /// The entry, its file's inode number set (tests of the queue order).
    #[cfg(test)]
    pub(crate) fn with_inode(mut self, inode: u64) -> Entry {
        self.inode = inode;
        self
    }
}

/// Accepting values: pending grows.
impl Entry {
    /// Where `pending` and `last_stamp` stand now, for
    /// [`Entry::settle_pending`] or [`Entry::roll_back`] after values are
    /// taken with [`Entry::take_value`].
    pub fn mark(&self) -> PendingMark {
        PendingMark { len: self.pending.len(), bytes: self.pending.bytes(), last_stamp: self.last_stamp }
    }

    /// Takes one value, later than every value before it (the caller
    /// checked: `commands::check_value`), into `pending`. The entry's other
    /// invariants hold again only after [`Entry::settle_pending`] (or
    /// [`Entry::roll_back`]), before the shard lock is released.
    pub fn take_value(&mut self, time: f64, value: &str) {
        debug_assert!(time > self.last_stamp, "values are taken in time order");
        self.last_stamp = time;
        self.pending.push(time, value);
    }

    /// How many values were taken since `mark`.
    #[inline]
    pub fn taken_count(&self, mark: PendingMark) -> usize {
        self.pending.len() - mark.len
    }

    /// The texts of the values taken since `mark`, in order (what their
    /// journal record holds).
    pub fn taken_since(&self, mark: PendingMark) -> impl Iterator<Item = &str> + Clone + '_ {
        self.pending.iter_timed_from(mark.bytes as usize).map(|(_, text)| text)
    }

    /// Forgets the values taken since `mark` (their journal record failed:
    /// they were not acknowledged).
    pub fn roll_back(&mut self, mark: PendingMark) {
        self.pending.truncate(mark.len);
        self.last_stamp = mark.last_stamp;
    }

    /// Restores the invariants after values were taken since `mark`: the
    /// cache's sums count them, and if `pending` was empty before, its
    /// first value's time and journal segment (`seq`, read before the
    /// values were journaled) are set. Returns, in that case, when the
    /// file's timer is due: the caller adds it ([`Cache::add_timer`])
    /// before it releases the shard lock.
    #[must_use = "a file with pending values needs its timer"]
    pub fn settle_pending(&mut self, cache: &Cache, mark: PendingMark, now: i64, seq: u64) -> Option<i64> {
        let added = (self.pending.len() - mark.len) as u64;
        if added == 0 {
            return None;
        }
        cache.pending_values.fetch_add(added, Ordering::SeqCst);
        cache.pending_bytes.fetch_add(self.pending.bytes() - mark.bytes, Ordering::SeqCst);
        self.last_activity = now;
        (mark.len == 0).then(|| {
            self.first_pending_at = now;
            self.oldest_seq = seq;
            self.due_at(cache.write_interval_secs)
        })
    }

    /// When the pending values are due to be written.
    fn due_at(&self, write_interval_secs: u64) -> i64 {
        if let Some(t) = self.retry_at {
            return t;
        }
        self.first_pending_at + (write_interval_secs + self.jitter_secs) as i64
    }
}

/// Flushing: pending → in flight → written (or dropped), or back to pending.
impl Entry {
    /// A worker took this file from the queue: unless it is suspended or
    /// has nothing pending, its pending values become in flight (they
    /// leave the cache's sums; their journal segment is kept in
    /// `inflight_seq`), the worker owns them (`flushing`) and takes the
    /// kept header. When another worker is writing the file, nothing is
    /// taken and a flush is requested after that one.
    pub fn begin_flush(&mut self, cache: &Cache) -> Option<FlushStart> {
        self.in_queue = false;
        if self.suspended || self.pending.is_empty() {
            return None;
        }
        if self.flushing {
            self.requeue = true;
            return None;
        }
        let values = std::mem::take(&mut self.pending);
        cache.count_pending(&values, false);
        let args = values.to_strings();
        self.inflight = values;
        self.inflight_seq = Some(self.oldest_seq);
        self.flushing = true;
        self.retry_at = None;
        Some(FlushStart { args, after_failure: self.retries > 0, kept: self.take_kept() })
    }

    /// The worker that began a flush ended it (`end`), leaving the file's
    /// header `kept` (`None`: its state is unknown). The in-flight values
    /// are gone (written or dropped), or, when the flush failed, back in
    /// front of the values that arrived meanwhile, with the retry's timer
    /// (returned). Either way the flush generation moves on.
    pub fn finish_flush(
        &mut self,
        cache: &Cache,
        key: &Key,
        end: FlushEnd<'_>,
        kept: Option<KeptHeader>,
        now: i64,
    ) -> Option<Retry> {
        debug_assert!(self.flushing, "only the worker that began a flush ends it");
        self.flushing = false;
        let inflight = std::mem::take(&mut self.inflight);
        self.put_kept(cache, kept);
        let retry = match end {
            FlushEnd::Failed { why } => Some(self.put_back(cache, key, inflight, why, now)),
            FlushEnd::Dropped { why, values } => {
                self.flush_failure = Some(format!("{values} value(s) dropped: {why}"));
                self.end_in_flight(cache, key);
                None
            }
            FlushEnd::Written { refused } => {
                self.flush_failure = refused.map(|why| {
                    format!("a value was refused; it and the values after it were dropped: {why}")
                });
                self.end_in_flight(cache, key);
                None
            }
        };
        self.flushed_gen += 1;
        self.last_activity = now;
        retry
    }

    /// A failed flush: its values back in front of pending (and in the
    /// sums), their journal segment kept, the retry's time and timer set.
    fn put_back(&mut self, cache: &Cache, key: &Key, inflight: Values, why: &str, now: i64) -> Retry {
        cache.count_pending(&inflight, true);
        let was_empty = self.pending.is_empty();
        self.pending.prepend(inflight);
        if let Some(seq) = self.inflight_seq.take() {
            self.oldest_seq = if was_empty { seq } else { self.oldest_seq.min(seq) };
        }
        self.retries = self.retries.saturating_add(1);
        let wait_secs = crate::flusher::backoff_secs(self.retries);
        if was_empty {
            self.first_pending_at = now;
        }
        self.retry_at = Some(now + wait_secs);
        cache.add_timer(now + wait_secs, key.clone());
        // A flush asked for meanwhile gets this one's failure; the retry's
        // timer queues the file again.
        self.requeue = false;
        let values = self.pending.len();
        self.flush_failure =
            Some(format!("writing failed ({why}); {values} value(s) kept pending, retried in {wait_secs} s"));
        Retry { wait_secs, values }
    }

    /// A flush that left no value in flight (written, or dropped): the
    /// journal no longer needs its segment, the backoff starts over, and a
    /// flush requested meanwhile is queued.
    fn end_in_flight(&mut self, cache: &Cache, key: &Key) {
        self.inflight_seq = None;
        self.retries = 0;
        if std::mem::take(&mut self.requeue) {
            cache.queue_flush(key, self, Side::Head);
        }
    }
}

/// The kept header: taken by a flush, put back after it, forgotten by TUNE.
/// Its share of the cache's header budget goes with it ([`Kept`]).
impl Entry {
    fn take_kept(&mut self) -> Option<KeptHeader> {
        self.kept.take().map(Kept::into_inner)
    }

    /// Keeps `header` (the file's as a flush left it) when the budget has
    /// room, and notes the file's inode.
    fn put_kept(&mut self, cache: &Cache, header: Option<KeptHeader>) {
        if let Some(k) = &header {
            self.inode = k.stamp.ino;
        }
        self.kept = header.and_then(|k| cache.keep(k));
    }

    /// Drops the kept header (the file changed under it: TUNE) and the
    /// inode number. Returns, when a flush is in flight (it took the header
    /// before and will put it back), the flush generation that ends it.
    pub fn forget_header(&mut self) -> Option<u64> {
        self.kept = None;
        self.inode = 0;
        self.flushing.then_some(self.flushed_gen + 1)
    }
}

/// SUSPEND and RESUME: a suspended file keeps taking values but is not
/// written.
impl Entry {
    /// Stops writing the file; whether it was suspended already.
    pub fn suspend(&mut self) -> bool {
        std::mem::replace(&mut self.suspended, true)
    }

    /// Writes the file again; whether it was suspended. Its timer is set
    /// again when values wait (it may have fired meanwhile, and a worker
    /// skipped the file).
    pub fn resume(&mut self, cache: &Cache, key: &str) -> bool {
        let was = std::mem::replace(&mut self.suspended, false);
        if was && !self.pending.is_empty() {
            cache.add_timer(self.due_at(cache.write_interval_secs), key.into());
        }
        was
    }
}

/// Reading an entry (PENDING, QUEUE, FLUSH, merged reads, the scheduler).
impl Entry {
    /// Starts loading the memory the next accepted value is written to
    /// (see `connection::look_ahead`).
    pub fn prefetch_pending(&self) {
        self.pending.prefetch_end();
    }

    /// Time of the newest accepted value (or the file's last update): a new
    /// value must be later.
    #[inline]
    pub fn last_stamp(&self) -> f64 {
        self.last_stamp
    }

    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Values not yet written: the in-flight ones, then the pending ones,
    /// oldest first.
    pub fn unwritten(&self) -> impl Iterator<Item = &str> + '_ {
        self.inflight.iter().chain(self.pending.iter())
    }

    /// Whether some value is not yet synced into the file (pending, or in
    /// flight): its journal segment is still needed.
    pub fn has_unsynced(&self) -> bool {
        !self.pending.is_empty() || self.inflight_seq.is_some()
    }

    /// Whether a flush worker would write something now: values pending and
    /// the file not suspended.
    pub fn is_flushable(&self) -> bool {
        !self.pending.is_empty() && !self.suspended
    }

    /// Whether a worker is writing the file.
    pub fn is_flushing(&self) -> bool {
        self.flushing
    }

    pub fn is_suspended(&self) -> bool {
        self.suspended
    }

    /// Completed flushes of the file.
    pub fn flushed_gen(&self) -> u64 {
        self.flushed_gen
    }

    /// Whether a FLUSH waiting for generation `target` ([`Cache::request_flush`])
    /// is done: reached, or the file suspended meanwhile.
    pub fn flush_done(&self, target: u64) -> bool {
        self.flushed_gen >= target || self.suspended
    }

    /// When the values a failed flush put back are tried again (`None`:
    /// no retry is waiting).
    pub fn retry_at(&self) -> Option<i64> {
        self.retry_at
    }

    /// Why the last flush did not write and sync every value it took.
    pub fn flush_failure(&self) -> Option<&str> {
        self.flush_failure.as_deref()
    }

    /// The file's inode number as last seen (0: not known).
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// The file's header as the last read or write left it.
    pub fn kept_header(&self) -> Option<&KeptHeader> {
        self.kept.as_ref().map(Kept::get)
    }

    /// Whether a timer due at `due` is this file's live timer: values
    /// pending, due then, and the file not queued already (else the timer
    /// is stale).
    pub fn timer_is_live(&self, due: i64, write_interval_secs: u64) -> bool {
        !self.pending.is_empty() && self.due_at(write_interval_secs) == due && !self.in_queue
    }

    /// Whether the entry holds nothing and nothing happened to it since
    /// `before` (Unix seconds): it may be dropped.
    pub fn is_idle_since(&self, before: i64) -> bool {
        self.pending.is_empty()
            && !self.flushing
            && !self.in_queue
            && !self.suspended
            && self.inflight_seq.is_none()
            && self.last_activity <= before
    }
}

/// An entry's pending values and newest time before new values were
/// taken ([`Entry::mark`]).
#[derive(Clone, Copy, Debug)]
pub struct PendingMark {
    len: usize,
    bytes: u64,
    last_stamp: f64,
}

impl PendingMark {
    /// How many values were pending then.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Where a flush request goes in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// FLUSH: before everything else.
    Head,
    /// Due files and FLUSHALL.
    Tail,
}

/// A kept header holding its share of the cache's header budget; dropping
/// it (entry forgotten, replaced, taken by a flush) gives the share back.
#[derive(Debug)]
pub struct Kept {
    /// Always `Some` until [`Kept::into_inner`] takes it.
    header: Option<Box<KeptHeader>>,
    bytes: u64,
    meter: Arc<AtomicU64>,
}

impl Kept {
    pub fn get(&self) -> &KeptHeader {
        self.header.as_deref().expect("a kept header holds its header until taken")
    }

    /// The header, its share returned to the budget (by `drop`).
    pub fn into_inner(mut self) -> KeptHeader {
        *self.header.take().expect("a kept header holds its header until taken")
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.meter.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// The memory a kept header occupies (its heap parts and their allocations).
pub fn kept_header_bytes(k: &KeptHeader) -> u64 {
    use std::mem::size_of;
    let heap = k.header.heap_bytes() + k.written_pages.capacity() * 8;
    // Boxes and vectors each cost an allocation header.
    (size_of::<KeptHeader>() + heap + 8 * 16) as u64
}

pub struct Cache {
    /// Each shard's lock and map on cache lines of their own: updates of
    /// files in different shards, on different cores, do not take each
    /// other's line (unpadded, two shards shared one).
    shards: Box<[CachePadded<Mutex<ShardMap>>]>,
    /// Picks a key's shard (seeded apart from the maps' own hashers).
    shard_hasher: foldhash::fast::RandomState,
    pub pending_values: AtomicU64,
    /// Bytes the pending values hold ([`Values::bytes`]).
    pub pending_bytes: AtomicU64,
    /// Drop the pages a flush wrote from the page cache after syncing them
    /// (`--keep-pages` turns it off).
    pub release_pages: AtomicBool,
    /// Bytes the kept headers hold, and the most they may hold
    /// (`--max-kept-bytes`): beyond it a file's header is not kept and its
    /// flushes read it, so many files under a small memory budget cost reads,
    /// never an out-of-memory kill.
    pub kept_bytes: Arc<AtomicU64>,
    pub kept_budget: AtomicU64,
    queue: Mutex<VecDeque<Key>>,
    queue_cv: Condvar,
    timers: Mutex<BTreeSet<(i64, Key)>>,
    /// Bumped after every completed flush batch (FLUSH waits on it).
    pub flushed: tokio::sync::watch::Sender<u64>,
    pub stats: Arc<Stats>,
    pub write_interval_secs: u64,
    pub write_jitter_secs: u64,
    /// Workers stop taking work once this is set and the queue is empty.
    pub stopping: AtomicBool,
    /// Set by SUSPENDALL: files are not written until RESUMEALL.
    rng: Mutex<u64>,
    /// The flush workers' shared `syncfs` (coordination only: the flusher
    /// does the I/O).
    pub syncs: crate::syncgroup::SyncGroup,
    /// How flushes and reads open files (the `-B` confinement).
    pub root: rrd_engine::root::Root,
    /// Descriptors connections may still hold for headers read ahead
    /// (crate::prefetch); set from the descriptor limit at startup.
    pub prefetch_budget: std::sync::atomic::AtomicI64,
    /// Rounds the scheduler thread finished (the watchdog pings systemd
    /// only while this moves: a scheduler stuck on a shard lock is a
    /// daemon that no longer flushes).
    pub scheduler_rounds: AtomicU64,
    /// Where flushes journal their undo and completion records (the
    /// daemon's journal; unset without `-j`): see [`crate::flusher::UndoLog`].
    pub undo_log: std::sync::OnceLock<Arc<dyn crate::flusher::UndoLog>>,
}

/// Unix seconds now.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Cache {
    pub fn new(stats: Arc<Stats>, write_interval_secs: u64, write_jitter_secs: u64) -> Cache {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1;
        let shard_hasher = foldhash::fast::RandomState::default();
        Cache {
            shards: (0..SHARD_COUNT)
                .map(|_| CachePadded::new(Mutex::new(ShardMap::with_hasher(shard_hasher))))
                .collect(),
            shard_hasher,
            pending_values: AtomicU64::new(0),
            pending_bytes: AtomicU64::new(0),
            release_pages: AtomicBool::new(true),
            kept_bytes: Arc::new(AtomicU64::new(0)),
            kept_budget: AtomicU64::new(u64::MAX),
            queue: Mutex::new(VecDeque::new()),
            queue_cv: Condvar::new(),
            timers: Mutex::new(BTreeSet::new()),
            flushed: tokio::sync::watch::channel(0).0,
            stats,
            write_interval_secs,
            write_jitter_secs,
            stopping: AtomicBool::new(false),
            rng: Mutex::new(seed),
            syncs: crate::syncgroup::SyncGroup::default(),
            root: rrd_engine::root::Root::Anywhere,
            prefetch_budget: std::sync::atomic::AtomicI64::new(1024),
            scheduler_rounds: AtomicU64::new(0),
            undo_log: std::sync::OnceLock::new(),
        }
    }

    /// A random share of `-z` for a new entry (xorshift: spreading load
    /// needs no cryptographic quality).
    pub fn jitter(&self) -> u64 {
        if self.write_jitter_secs == 0 {
            return 0;
        }
        let mut s = self.rng.lock().expect("rng lock");
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s % self.write_jitter_secs
    }

    /// The shard a key's hash picks. The shards' maps hash with the same
    /// hasher, and hashbrown reads a hash's low bits (the bucket) and top
    /// seven (the tag): the shard takes bits from the middle, so the keys
    /// of one shard still spread over its buckets and tags.
    fn shard_of_hash(&self, hash: u64) -> usize {
        ((hash >> 40) as usize) % self.shards.len()
    }

    /// The hash of `key` that picks its shard and files it in the shard's
    /// map.
    pub fn hash(&self, key: &str) -> u64 {
        self.shard_hasher.hash_one(key)
    }

    /// Locks the shard holding `key`.
    pub fn shard(&self, key: &str) -> MutexGuard<'_, ShardMap> {
        self.shard_numbered(key).1
    }

    /// [`Cache::shard`], with the shard's number: a stable function of the
    /// file, which the journal uses to pick the file's staging buffer
    /// (crate::journaler), so the name is hashed once per UPDATE.
    pub fn shard_numbered(&self, key: &str) -> (usize, MutexGuard<'_, ShardMap>) {
        let (_, i, shard) = self.shard_hashed(key);
        (i, shard)
    }

    /// [`Cache::shard_numbered`], with the key's hash in its shard's map
    /// (for [`ShardMap::get_or_insert_hashed`]): the name is hashed once.
    pub fn shard_hashed(&self, key: &str) -> (u64, usize, MutexGuard<'_, ShardMap>) {
        let hash = self.hash(key);
        let i = self.shard_of_hash(hash);
        (hash, i, self.shards[i].lock().expect("cache shard lock"))
    }

    /// Starts loading the entry of the key whose [`Cache::hash`] is `hash`
    /// into the CPU's caches, for an UPDATE about to come (a BATCH's line
    /// after next: `connection::look_ahead`). A hint: it does nothing when
    /// the shard is locked by someone else.
    pub fn prefetch_entry(&self, hash: u64) {
        if let Some(shard) = self.shard_if_free(hash) {
            shard.prefetch_entry(hash);
        }
    }

    /// Starts loading where `key`'s pending values end (what its next
    /// UPDATE writes), once its entry is in the caches; `hash` is its
    /// [`Cache::hash`]. A hint, like [`Cache::prefetch_entry`].
    pub fn prefetch_values(&self, hash: u64, key: &str) {
        if let Some(shard) = self.shard_if_free(hash) {
            shard.prefetch_values(hash, key);
        }
    }

    /// The shard of the key hashed to `hash`, unless someone holds it (a
    /// hint never waits).
    fn shard_if_free(&self, hash: u64) -> Option<MutexGuard<'_, ShardMap>> {
        self.shards[self.shard_of_hash(hash)].try_lock().ok()
    }

    /// Runs `f` on every entry, one shard at a time.
    pub fn for_each(&self, mut f: impl FnMut(&Key, &mut Entry)) {
        for shard in self.shards.iter() {
            let mut map = shard.lock().expect("cache shard lock");
            for (k, e) in map.iter_mut() {
                f(k, e);
            }
        }
    }

    /// `header` as a kept header, when the header budget has room for it.
    pub fn keep(&self, header: KeptHeader) -> Option<Kept> {
        let bytes = kept_header_bytes(&header);
        let budget = self.kept_budget.load(Ordering::Relaxed);
        let mut used = self.kept_bytes.load(Ordering::Relaxed);
        loop {
            if used.saturating_add(bytes) > budget {
                return None;
            }
            match self.kept_bytes.compare_exchange_weak(
                used,
                used + bytes,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => used = now,
            }
        }
        Some(Kept { header: Some(Box::new(header)), bytes, meter: self.kept_bytes.clone() })
    }

    pub fn len(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().expect("cache shard lock").len() as u64).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records that `key`'s pending values become due at `due_at`.
    pub fn add_timer(&self, due_at: i64, key: Key) {
        self.timers.lock().expect("timers lock").insert((due_at, key));
    }

    /// Removes and returns the timers due at or before `now`.
    pub fn take_due_timers(&self, now: i64) -> Vec<(i64, Key)> {
        let mut t = self.timers.lock().expect("timers lock");
        let mut due = Vec::new();
        while let Some(first) = t.first() {
            if first.0 > now {
                break;
            }
            due.push(t.pop_first().expect("checked non-empty"));
        }
        due
    }

    /// Keys waiting for a worker, head first.
    pub fn queued(&self) -> Vec<Key> {
        self.queue.lock().expect("queue lock").iter().cloned().collect()
    }

    pub fn queue_len(&self) -> u64 {
        self.queue.lock().expect("queue lock").len() as u64
    }

    /// Blocks until work is queued (returning up to `max` keys), or returns
    /// an empty batch once stopping with nothing queued.
    pub fn take_batch(&self, max: usize) -> Vec<Key> {
        let mut q = self.queue.lock().expect("queue lock");
        loop {
            if !q.is_empty() {
                let n = q.len().min(max);
                return q.drain(..n).collect();
            }
            if self.stopping.load(Ordering::SeqCst) {
                return Vec::new();
            }
            q = self.queue_cv.wait_timeout(q, std::time::Duration::from_millis(200)).expect("queue lock").0;
        }
    }

    /// Wakes every waiting worker (at shutdown).
    pub fn wake_all(&self) {
        self.queue_cv.notify_all();
    }

    /// Signals FLUSH waiters that some flush completed.
    pub fn notify_flushed(&self) {
        self.flushed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Whether no file has values waiting or being written. Files whose
    /// last write failed and that wait for a retry do not count: their
    /// values stay in the journal for the next start (waiting for storage
    /// that may never recover would hang a shutdown).
    pub fn is_drained(&self) -> bool {
        let mut drained = true;
        self.for_each(|_, e| {
            if !e.pending.is_empty() && !e.suspended && e.retry_at.is_none() || e.flushing {
                drained = false;
            }
        });
        drained && self.queue_len() == 0
    }

    /// The oldest journal segment still needed: the smallest segment of any
    /// value that is not yet synced into its RRD file, or `upper` when there
    /// is none. Read the journal's current segment BEFORE calling, and pass
    /// it as `upper` (see docs/journal.md, "removal rule").
    pub fn oldest_needed_seq(&self, upper: u64) -> u64 {
        let mut m = upper;
        self.for_each(|_, e| {
            if !e.pending.is_empty() {
                m = m.min(e.oldest_seq);
            }
            if let Some(s) = e.inflight_seq {
                m = m.min(s);
            }
        });
        m
    }
}

/// The entry transitions that reach the cache's shared parts: making an
/// entry, queueing its file, dropping it. The caller holds the entry's
/// shard.
impl Cache {
    /// A new entry for a file whose checks ([`crate::commands::open_entry`])
    /// found its last update `last_up` and its header `kept`.
    pub fn new_entry(&self, last_up: f64, kept: KeptHeader, now: i64) -> Entry {
        let mut e = Entry::new(last_up, self.jitter(), now);
        e.put_kept(self, Some(kept));
        e
    }

    /// Queues `key`'s file for a worker when it has values pending (a file
    /// already queued stays queued once; at the [`Side::Head`] it moves to
    /// the head). Whether it has values pending (and is queued).
    pub fn queue_flush(&self, key: &Key, entry: &mut Entry, side: Side) -> bool {
        if entry.pending.is_empty() {
            return false;
        }
        let mut q = self.queue.lock().expect("queue lock");
        if entry.in_queue {
            if side == Side::Head {
                if let Some(pos) = q.iter().position(|k| k == key) {
                    q.remove(pos);
                }
                q.push_front(key.clone());
            }
            return true;
        }
        entry.in_queue = true;
        match side {
            Side::Head => q.push_front(key.clone()),
            Side::Tail => q.push_back(key.clone()),
        }
        drop(q);
        self.queue_cv.notify_one();
        true
    }

    /// FLUSH: queues the file at the head when values are pending, and
    /// returns the flush generation that means "every value held now is
    /// written" ([`Entry::flush_done`]); `None` when there is nothing to
    /// wait for (no values, or the file suspended).
    pub fn request_flush(&self, key: &Key, entry: &mut Entry) -> Option<u64> {
        if entry.suspended {
            return None;
        }
        let mut target = entry.flushed_gen;
        if entry.flushing {
            target += 1;
        }
        if self.queue_flush(key, entry, Side::Head) {
            target += 1;
        }
        (target > entry.flushed_gen).then_some(target)
    }

    /// Drops `key`'s entry from `shard` (its shard, locked): its pending
    /// values leave the sums. Whether there was one.
    pub fn forget_entry(&self, shard: &mut ShardMap, key: &str) -> bool {
        match shard.remove(key) {
            Some(e) => {
                self.count_pending(&e.pending, false);
                true
            }
            None => false,
        }
    }

    /// Drops the entries `keep` refuses (one shard at a time); their
    /// pending values leave the sums.
    pub fn retain(&self, mut keep: impl FnMut(&Key, &Entry) -> bool) {
        for shard in self.shards.iter() {
            shard.lock().expect("cache shard lock").retain(|k, e| {
                let kept = keep(k, e);
                if !kept {
                    self.count_pending(&e.pending, false);
                }
                kept
            });
        }
    }

    /// Accounts for values added to (`added == true`) or removed from some
    /// entry's `pending`.
    fn count_pending(&self, values: &Values, added: bool) {
        let (n, b) = (values.len() as u64, values.bytes());
        if added {
            self.pending_values.fetch_add(n, Ordering::SeqCst);
            self.pending_bytes.fetch_add(b, Ordering::SeqCst);
        } else {
            self.pending_values.fetch_sub(n, Ordering::SeqCst);
            self.pending_bytes.fetch_sub(b, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry's fields an UPDATE touches come first (see [`Entry`]; a
    /// slot of the shard's map puts them right after the key,
    /// crate::shard_map).
    #[test]
    fn an_update_reads_the_front_of_its_entry() {
        use std::mem::offset_of;
        let hot_end = offset_of!(Entry, jitter_secs) + 8;
        assert!(hot_end <= 96, "the UPDATE fields span {hot_end} bytes of the entry");
        assert!(offset_of!(Entry, inflight) >= offset_of!(Entry, jitter_secs));
    }

    fn cache() -> Cache {
        Cache::new(Arc::new(Stats::default()), 300, 10)
    }

    fn kept_header() -> KeptHeader {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.rrd");
        let defs: Vec<String> =
            ["DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"].iter().map(|s| s.to_string()).collect();
        let opts = rrd_engine::create::CreateOptions { start: Some(1_000_000_000), ..Default::default() };
        rrd_engine::create::create(&path, &opts, &defs, 1_000_000_000).unwrap();
        KeptHeader::read(&path).unwrap()
    }

    #[test]
    fn kept_headers_stay_within_their_budget_and_give_it_back() {
        let c = cache();
        let one = kept_header_bytes(&kept_header());
        c.kept_budget.store(2 * one + one / 2, Ordering::SeqCst);
        let a = c.keep(kept_header()).expect("room for the first");
        let b = c.keep(kept_header()).expect("room for the second");
        assert!(c.keep(kept_header()).is_none(), "a third would pass the budget");
        assert_eq!(c.kept_bytes.load(Ordering::SeqCst), 2 * one);
        drop(a);
        assert_eq!(c.kept_bytes.load(Ordering::SeqCst), one);
        let header = b.into_inner();
        assert_eq!(c.kept_bytes.load(Ordering::SeqCst), 0);
        let again = c.keep(header);
        assert!(again.is_some());
        assert_eq!(c.kept_bytes.load(Ordering::SeqCst), one);
    }

    #[test]
    fn head_requests_jump_the_queue_once() {
        let c = cache();
        let (a, b): (Key, Key) = ("/a".into(), "/b".into());
        let mut ea = with_values(&c, Entry::new(0.0, 0, 0), &[1.0], 0, 1);
        let mut eb = with_values(&c, Entry::new(0.0, 0, 0), &[1.0], 0, 1);
        assert!(c.queue_flush(&a, &mut ea, Side::Tail));
        assert!(c.queue_flush(&b, &mut eb, Side::Tail));
        assert!(c.queue_flush(&b, &mut eb, Side::Head));
        assert!(c.queue_flush(&a, &mut ea, Side::Tail));
        // Nothing pending: nothing queued.
        assert!(!c.queue_flush(&"/c".into(), &mut Entry::new(0.0, 0, 0), Side::Head));
        assert_eq!(c.queued(), vec![b.clone(), a.clone()]);
        assert_eq!(c.take_batch(10), vec![b, a]);
    }

    #[test]
    fn timers_come_out_in_due_order() {
        let c = cache();
        c.add_timer(20, "/b".into());
        c.add_timer(10, "/a".into());
        c.add_timer(30, "/c".into());
        let due: Vec<i64> = c.take_due_timers(25).into_iter().map(|t| t.0).collect();
        assert_eq!(due, vec![10, 20]);
        assert_eq!(c.take_due_timers(25).len(), 0);
    }

    #[test]
    fn oldest_needed_seq_counts_pending_and_inflight() {
        let c = cache();
        assert_eq!(c.oldest_needed_seq(9), 9);
        let e = with_values(&c, Entry::new(0.0, 0, 0), &[1.0], 5, 1);
        c.shard("/a").insert("/a".into(), e);
        let mut f = with_values(&c, Entry::new(0.0, 0, 0), &[1.0], 3, 1);
        f.begin_flush(&c).expect("values to flush");
        c.shard("/b").insert("/b".into(), f);
        assert_eq!(c.oldest_needed_seq(9), 3);
        assert!(c.jitter() < 10);
    }

    #[test]
    fn taking_values_keeps_the_sums_the_first_time_and_the_timer() {
        let c = cache();
        let mut e = Entry::new(100.0, 0, 0);
        let mark = e.mark();
        e.take_value(200.0, "200:1");
        e.take_value(300.0, "300:2");
        assert_eq!(e.settle_pending(&c, mark, 1_000, 7), Some(1_000 + 300));
        assert_eq!((e.first_pending_at, e.oldest_seq, e.last_stamp), (1_000, 7, 300.0));
        assert_eq!(c.pending_values.load(Ordering::SeqCst), 2);
        assert_eq!(c.pending_bytes.load(Ordering::SeqCst), e.pending.bytes());
        // More values: no second timer, the first value's time and segment stay.
        let mark = e.mark();
        e.take_value(400.0, "400:3");
        assert_eq!(e.settle_pending(&c, mark, 2_000, 9), None);
        assert_eq!((e.first_pending_at, e.oldest_seq, e.last_activity), (1_000, 7, 2_000));
        assert_eq!(c.pending_values.load(Ordering::SeqCst), 3);
        // Values whose record failed are forgotten, with the newest time.
        let mark = e.mark();
        e.take_value(500.0, "500:4");
        e.roll_back(mark);
        assert_eq!((e.pending.len(), e.last_stamp), (3, 400.0));
        assert_eq!(e.pending.iter().collect::<Vec<_>>(), ["200:1", "300:2", "400:3"]);
        // Nothing taken: nothing changes.
        let mark = e.mark();
        assert_eq!(e.settle_pending(&c, mark, 3_000, 11), None);
        assert_eq!((e.last_activity, c.pending_values.load(Ordering::SeqCst)), (2_000, 3));
    }

    #[test]
    fn values_keep_texts_times_and_order() {
        let mut a = Values::default();
        a.push(3.0, "3:c");
        a.push(4.0, "4:dd");
        let mut front = Values::default();
        front.push(1.0, "1:a");
        front.push(2.0, "2:bb");
        a.prepend(front);
        assert_eq!(a.to_strings(), vec!["1:a", "2:bb", "3:c", "4:dd"]);
        assert_eq!(a.iter_timed().map(|t| t.0).collect::<Vec<_>>(), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(a.bytes(), 3 + 4 + 3 + 4 + 4 * VALUE_OVERHEAD_BYTES);
        let mut b = a.clone();
        b.truncate(3);
        assert_eq!(b.to_strings(), vec!["1:a", "2:bb", "3:c"]);
        assert_eq!(b.bytes(), 3 + 4 + 3 + 3 * VALUE_OVERHEAD_BYTES);
        b.truncate(0);
        assert!(b.is_empty() && b.bytes() == 0);
        let mut c = Values::default();
        c.push(5.0, "5:e");
        a.extend_from(&c);
        assert_eq!(a.iter_timed().last(), Some((5.0, "5:e")));
        assert_eq!(a.len(), 5);
        a.clear();
        assert!(a.is_empty());
        assert_eq!(a.iter().count(), 0);
    }

    /// `e` with values at `times` taken as an UPDATE takes them (journaled
    /// in segment `seq`, at `now`); the timer, when due, is the caller's.
    fn with_values(c: &Cache, mut e: Entry, times: &[f64], seq: u64, now: i64) -> Entry {
        let mark = e.mark();
        for &t in times {
            e.take_value(t, &format!("{t}:1"));
        }
        let _ = e.settle_pending(c, mark, now, seq);
        e
    }

    /// Values at `times` into `key`'s entry (made if new), and its timer.
    fn accept(c: &Cache, key: &str, times: &[f64], seq: u64, now: i64) {
        let mut shard = c.shard(key);
        let (_, e) = shard.get_or_insert_with(key, || Some(Entry::new(0.0, 0, now))).expect("made");
        let mark = e.mark();
        for &t in times {
            e.take_value(t, &format!("{t}:1"));
        }
        if let Some(due) = e.settle_pending(c, mark, now, seq) {
            c.add_timer(due, key.into());
        }
    }

    /// Runs `f` on `key`'s entry, its shard locked.
    fn on<R>(c: &Cache, key: &str, f: impl FnOnce(&mut Entry) -> R) -> R {
        f(c.shard(key).get_mut(key).expect("an entry"))
    }

    fn texts(e: &Entry) -> Vec<&str> {
        e.unwritten().collect()
    }

    /// Checks the module doc's invariants over every entry of `c`.
    fn check_invariants(c: &Cache) {
        let timers: BTreeSet<(i64, Key)> = c.timers.lock().unwrap().clone();
        let (mut values, mut bytes) = (0, 0);
        c.for_each(|k, e| {
            values += e.pending.len() as u64;
            bytes += e.pending.bytes();
            assert_eq!(e.flushing, e.inflight_seq.is_some(), "{k}: flushing ⇔ an in-flight segment");
            assert!(e.flushing || e.inflight.is_empty(), "{k}: values in flight without a worker");
            assert!(e.retry_at.is_none() || !e.pending.is_empty(), "{k}: a retry without values");
            let times: Vec<f64> =
                e.inflight.iter_timed().chain(e.pending.iter_timed()).map(|v| v.0).collect();
            assert!(times.windows(2).all(|w| w[0] < w[1]), "{k}: values out of order: {times:?}");
            assert!(times.iter().all(|&t| t <= e.last_stamp), "{k}: a value after last_stamp");
            if !e.pending.is_empty() && !e.in_queue && !e.suspended {
                let due = e.due_at(c.write_interval_secs);
                assert!(timers.contains(&(due, k.clone())), "{k}: pending values without a timer at {due}");
            }
        });
        assert_eq!(c.pending_values.load(Ordering::SeqCst), values, "the pending-values sum");
        assert_eq!(c.pending_bytes.load(Ordering::SeqCst), bytes, "the pending-bytes sum");
    }

    #[test]
    fn a_failed_flush_puts_its_values_back_before_newer_ones_and_keeps_the_sums() {
        let c = cache();
        let key: Key = "/a".into();
        accept(&c, &key, &[200.0, 300.0], 5, 1_000);
        check_invariants(&c);
        let start = on(&c, &key, |e| e.begin_flush(&c)).expect("values to flush");
        assert_eq!(start.args, ["200:1", "300:1"]);
        assert!(!start.after_failure && start.kept.is_none());
        on(&c, &key, |e| {
            assert!(e.is_flushing() && e.has_unsynced() && !e.has_pending());
            assert_eq!(texts(e), ["200:1", "300:1"]);
        });
        assert_eq!(c.pending_values.load(Ordering::SeqCst), 0, "in flight: out of the sums");
        assert_eq!(c.oldest_needed_seq(99), 5, "in flight: the segment is still needed");
        check_invariants(&c);
        // Newer values arrive while the flush runs.
        accept(&c, &key, &[400.0], 7, 1_010);
        check_invariants(&c);
        let end = FlushEnd::Failed { why: "EIO" };
        let retry = on(&c, &key, |e| e.finish_flush(&c, &key, end, None, 1_020));
        assert_eq!(retry, Some(Retry { wait_secs: 1, values: 3 }));
        on(&c, &key, |e| {
            assert_eq!(texts(e), ["200:1", "300:1", "400:1"], "put back in front of the newer value");
            assert!(!e.is_flushing() && e.has_unsynced());
            assert_eq!((e.oldest_seq, e.retry_at(), e.flushed_gen()), (5, Some(1_021), 1));
            assert_eq!(
                e.flush_failure(),
                Some("writing failed (EIO); 3 value(s) kept pending, retried in 1 s")
            );
        });
        assert_eq!(c.pending_values.load(Ordering::SeqCst), 3);
        assert_eq!(c.oldest_needed_seq(99), 5);
        check_invariants(&c);
        // The retry takes every value, in order, knowing some may be written.
        let start = on(&c, &key, |e| e.begin_flush(&c)).expect("values to retry");
        assert_eq!(start.args, ["200:1", "300:1", "400:1"]);
        assert!(start.after_failure);
        assert_eq!(on(&c, &key, |e| e.retry_at()), None);
        check_invariants(&c);
        let end = FlushEnd::Written { refused: None };
        assert_eq!(on(&c, &key, |e| e.finish_flush(&c, &key, end, None, 1_030)), None);
        on(&c, &key, |e| {
            assert!(!e.is_flushing() && !e.has_unsynced() && texts(e).is_empty());
            assert_eq!((e.retries, e.flushed_gen(), e.flush_failure()), (0, 2, None));
            assert!(e.is_idle_since(1_030) && !e.is_idle_since(1_029));
        });
        assert_eq!((c.pending_values.load(Ordering::SeqCst), c.pending_bytes.load(Ordering::SeqCst)), (0, 0));
        assert_eq!(c.oldest_needed_seq(99), 99);
        check_invariants(&c);
    }

    #[test]
    fn a_failed_flush_alone_restarts_the_file_and_backs_off() {
        let c = cache();
        let key: Key = "/a".into();
        accept(&c, &key, &[200.0], 4, 1_000);
        let fail = |now: i64| {
            on(&c, &key, |e| {
                e.begin_flush(&c).expect("values to flush");
                e.finish_flush(&c, &key, FlushEnd::Failed { why: "ENOSPC" }, None, now)
            })
        };
        for (now, wait) in [(2_000, 1), (2_010, 2), (2_020, 4)] {
            assert_eq!(fail(now), Some(Retry { wait_secs: wait, values: 1 }));
            on(&c, &key, |e| {
                // Nothing pending before: the values' segment and time are the put-back ones.
                assert_eq!((e.oldest_seq, e.first_pending_at, e.retry_at()), (4, now, Some(now + wait)));
            });
            assert!(c.take_due_timers(now + wait).contains(&(now + wait, key.clone())));
            c.add_timer(now + wait, key.clone());
            check_invariants(&c);
        }
        // Dropped values leave nothing in flight and start the backoff over.
        let dropped = on(&c, &key, |e| {
            e.begin_flush(&c).expect("values to flush");
            e.finish_flush(&c, &key, FlushEnd::Dropped { why: "gone", values: 1 }, None, 2_030)
        });
        assert_eq!(dropped, None);
        on(&c, &key, |e| {
            assert!(!e.has_unsynced() && texts(e).is_empty());
            assert_eq!(
                (e.retries, e.retry_at(), e.flush_failure()),
                (0, None, Some("1 value(s) dropped: gone"))
            );
        });
        check_invariants(&c);
        accept(&c, &key, &[300.0], 6, 2_040);
        assert_eq!(fail(2_050), Some(Retry { wait_secs: 1, values: 1 }));
        check_invariants(&c);
    }

    #[test]
    fn one_worker_per_file_and_a_flush_asked_for_meanwhile_follows() {
        let c = cache();
        let key: Key = "/a".into();
        accept(&c, &key, &[200.0], 1, 1_000);
        assert_eq!(on(&c, &key, |e| c.request_flush(&key, e)), Some(1));
        assert_eq!(c.take_batch(8), std::slice::from_ref(&key));
        let start = on(&c, &key, |e| e.begin_flush(&c)).expect("values to flush");
        assert_eq!(start.args, ["200:1"]);
        // A FLUSH while it runs: after it and one more flush, a new value is written.
        accept(&c, &key, &[300.0], 2, 1_010);
        assert_eq!(on(&c, &key, |e| c.request_flush(&key, e)), Some(2));
        assert_eq!(c.take_batch(8), std::slice::from_ref(&key));
        // A second worker gets nothing: the first owns the file.
        assert!(on(&c, &key, |e| e.begin_flush(&c)).is_none());
        on(&c, &key, |e| assert!(e.is_flushing() && e.requeue && !e.in_queue));
        check_invariants(&c);
        let end = FlushEnd::Written { refused: Some("bad value") };
        on(&c, &key, |e| e.finish_flush(&c, &key, end, None, 1_020));
        on(&c, &key, |e| {
            assert!(e.flush_done(1) && !e.flush_done(2));
            assert!(e.flush_failure().is_some_and(|f| f.ends_with("dropped: bad value")));
        });
        assert_eq!(c.queued(), std::slice::from_ref(&key), "the requested flush is queued");
        check_invariants(&c);
        assert_eq!(c.take_batch(8), std::slice::from_ref(&key));
        let start = on(&c, &key, |e| e.begin_flush(&c)).expect("the newer value");
        assert_eq!(start.args, ["300:1"]);
        on(&c, &key, |e| e.finish_flush(&c, &key, FlushEnd::Written { refused: None }, None, 1_030));
        on(&c, &key, |e| assert!(e.flush_done(2) && e.flush_failure().is_none()));
        // Nothing pending, nothing running: nothing to wait for.
        assert_eq!(on(&c, &key, |e| c.request_flush(&key, e)), None);
        check_invariants(&c);
    }

    #[test]
    fn a_suspended_file_keeps_its_values_and_gets_its_timer_back() {
        let c = cache();
        let key: Key = "/a".into();
        accept(&c, &key, &[200.0], 1, 1_000);
        assert!(!on(&c, &key, Entry::suspend));
        assert!(on(&c, &key, Entry::suspend), "already suspended");
        on(&c, &key, |e| assert!(e.is_suspended() && !e.is_flushable() && e.flush_done(99)));
        assert_eq!(on(&c, &key, |e| c.request_flush(&key, e)), None);
        // Its timer fires and a worker skips it.
        assert_eq!(c.take_due_timers(5_000).len(), 1);
        assert!(on(&c, &key, |e| c.queue_flush(&key, e, Side::Tail)));
        assert_eq!(c.take_batch(8), std::slice::from_ref(&key));
        assert!(on(&c, &key, |e| e.begin_flush(&c)).is_none());
        on(&c, &key, |e| assert!(!e.in_queue && e.has_pending()));
        assert!(c.is_drained(), "a suspended file does not hold up a shutdown");
        assert!(on(&c, &key, |e| e.resume(&c, &key)));
        assert!(!on(&c, &key, |e| e.resume(&c, &key)), "not suspended");
        assert_eq!(c.take_due_timers(5_000), [(1_300, key.clone())], "one timer, set again");
        c.add_timer(1_300, key.clone());
        check_invariants(&c);
    }

    #[test]
    fn forgotten_and_dropped_entries_leave_the_sums() {
        let c = cache();
        accept(&c, "/a", &[200.0, 300.0], 1, 1_000);
        accept(&c, "/b", &[200.0], 1, 1_000);
        accept(&c, "/c", &[200.0], 1, 1_000);
        assert_eq!(c.pending_values.load(Ordering::SeqCst), 4);
        assert!(c.forget_entry(&mut c.shard("/a"), "/a"));
        assert!(!c.forget_entry(&mut c.shard("/a"), "/a"));
        assert_eq!(c.pending_values.load(Ordering::SeqCst), 2);
        check_invariants(&c);
        c.retain(|k, _| k.as_str() != "/b");
        assert_eq!((c.len(), c.pending_values.load(Ordering::SeqCst)), (1, 1));
        check_invariants(&c);
        c.retain(|_, e| !e.is_idle_since(i64::MAX));
        assert_eq!(c.len(), 1, "an entry with values is not idle");
        check_invariants(&c);
    }

    #[test]
    fn a_flush_takes_the_kept_header_and_puts_it_back_within_the_budget() {
        let c = cache();
        let key: Key = "/k".into();
        let header = kept_header();
        let (one, ino) = (kept_header_bytes(&header), header.stamp.ino);
        let e = c.new_entry(1_000_000_000.0, header, 0);
        assert_eq!((e.inode(), c.kept_bytes.load(Ordering::SeqCst)), (ino, one));
        c.shard(&key).insert(key.clone(), e);
        accept(&c, &key, &[1_000_000_300.0], 1, 1_000);
        let start = on(&c, &key, |e| e.begin_flush(&c)).expect("values to flush");
        assert!(start.kept.is_some() && on(&c, &key, |e| e.kept_header().is_none()));
        assert_eq!(c.kept_bytes.load(Ordering::SeqCst), 0, "taken: its share given back");
        on(&c, &key, |e| e.finish_flush(&c, &key, FlushEnd::Written { refused: None }, start.kept, 1_010));
        assert!(on(&c, &key, |e| e.kept_header().is_some()));
        assert_eq!(c.kept_bytes.load(Ordering::SeqCst), one, "put back: its share taken again");
        // TUNE while a flush runs: the header is dropped, and the flush's
        // end is waited for; what it leaves is kept only within the budget.
        accept(&c, &key, &[1_000_000_600.0], 2, 1_020);
        let start = on(&c, &key, |e| e.begin_flush(&c)).expect("values to flush");
        assert_eq!(on(&c, &key, Entry::forget_header), Some(2));
        assert_eq!(on(&c, &key, |e| e.inode()), 0);
        c.kept_budget.store(one - 1, Ordering::SeqCst);
        on(&c, &key, |e| e.finish_flush(&c, &key, FlushEnd::Written { refused: None }, start.kept, 1_030));
        on(&c, &key, |e| assert!(e.kept_header().is_none() && e.inode() == ino && e.flush_done(2)));
        assert_eq!(c.kept_bytes.load(Ordering::SeqCst), 0);
        assert_eq!(on(&c, &key, Entry::forget_header), None, "no flush running");
        check_invariants(&c);
    }
}
