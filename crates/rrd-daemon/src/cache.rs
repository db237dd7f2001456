//! The cache: per file, the update arguments not yet written to it.
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
//! - `flushing` ⇔ a worker owns `inflight` (at most one worker per file).
//! - `flushed_gen` counts completed flushes; FLUSH waits on it.
//!
//! The flush queue (files waiting for a worker) and the timers (when files
//! become due) are separate small mutexes; they hold keys only.
//!
//! Deliberately absent here: I/O. Workers, readers and commands do that.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::stats::Stats;

pub type Key = Arc<str>;

const SHARD_COUNT: usize = 64;

#[derive(Debug)]
pub struct Entry {
    pub pending: Vec<String>,
    pub inflight: Vec<String>,
    /// Time of the newest accepted value (or the file's last update).
    pub last_stamp: f64,
    /// Unix seconds when `pending` last became non-empty.
    pub first_pending_at: i64,
    /// This file's share of `-z`, fixed when the entry is made.
    pub jitter_secs: u64,
    /// Journal segment holding (at or after) the oldest pending value.
    pub oldest_seq: u64,
    /// Journal segment of the oldest in-flight value.
    pub inflight_seq: Option<u64>,
    pub flushing: bool,
    pub in_queue: bool,
    /// A flush was asked for while one was running.
    pub requeue: bool,
    pub flushed_gen: u64,
    pub suspended: bool,
    /// Unix seconds of the last update or flush (idle entries are dropped).
    pub last_activity: i64,
}

impl Entry {
    pub fn new(last_stamp: f64, jitter_secs: u64, now: i64) -> Entry {
        Entry {
            pending: Vec::new(),
            inflight: Vec::new(),
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
        }
    }

    /// When the pending values are due to be written.
    pub fn due_at(&self, write_interval_secs: u64) -> i64 {
        self.first_pending_at + (write_interval_secs + self.jitter_secs) as i64
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

pub struct Cache {
    shards: Box<[Mutex<HashMap<Key, Entry>>]>,
    pub pending_values: AtomicU64,
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
        Cache {
            shards: (0..SHARD_COUNT).map(|_| Mutex::new(HashMap::new())).collect(),
            pending_values: AtomicU64::new(0),
            queue: Mutex::new(VecDeque::new()),
            queue_cv: Condvar::new(),
            timers: Mutex::new(BTreeSet::new()),
            flushed: tokio::sync::watch::channel(0).0,
            stats,
            write_interval_secs,
            write_jitter_secs,
            stopping: AtomicBool::new(false),
            rng: Mutex::new(seed),
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

    fn shard_of(&self, key: &str) -> usize {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        (h.finish() as usize) % self.shards.len()
    }

    /// Locks the shard holding `key`.
    pub fn shard(&self, key: &str) -> MutexGuard<'_, HashMap<Key, Entry>> {
        self.shards[self.shard_of(key)].lock().expect("cache shard lock")
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

    /// Drops entries `keep` refuses (one shard at a time).
    pub fn retain(&self, mut keep: impl FnMut(&Key, &mut Entry) -> bool) {
        for shard in self.shards.iter() {
            shard.lock().expect("cache shard lock").retain(|k, e| keep(k, e));
        }
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

    /// Queues a file for a worker; the caller holds its shard and has set
    /// nothing yet. Does nothing when it is already queued (FLUSH moves a
    /// queued file to the head).
    pub fn enqueue_locked(&self, key: &Key, entry: &mut Entry, side: Side) {
        let mut q = self.queue.lock().expect("queue lock");
        if entry.in_queue {
            if side == Side::Head {
                if let Some(pos) = q.iter().position(|k| k == key) {
                    q.remove(pos);
                }
                q.push_front(key.clone());
            }
            return;
        }
        entry.in_queue = true;
        match side {
            Side::Head => q.push_front(key.clone()),
            Side::Tail => q.push_back(key.clone()),
        }
        drop(q);
        self.queue_cv.notify_one();
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

    /// Whether no file has values waiting or being written.
    pub fn is_drained(&self) -> bool {
        let mut drained = true;
        self.for_each(|_, e| {
            if !e.pending.is_empty() && !e.suspended || e.flushing {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> Cache {
        Cache::new(Arc::new(Stats::default()), 300, 10)
    }

    #[test]
    fn head_requests_jump_the_queue_once() {
        let c = cache();
        let (a, b): (Key, Key) = ("/a".into(), "/b".into());
        let mut ea = Entry::new(0.0, 0, 0);
        let mut eb = Entry::new(0.0, 0, 0);
        c.enqueue_locked(&a, &mut ea, Side::Tail);
        c.enqueue_locked(&b, &mut eb, Side::Tail);
        c.enqueue_locked(&b, &mut eb, Side::Head);
        c.enqueue_locked(&a, &mut ea, Side::Tail);
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
        let mut e = Entry::new(0.0, 0, 0);
        e.pending.push("1:1".into());
        e.oldest_seq = 5;
        c.shard("/a").insert("/a".into(), e);
        let mut f = Entry::new(0.0, 0, 0);
        f.inflight_seq = Some(3);
        c.shard("/b").insert("/b".into(), f);
        assert_eq!(c.oldest_needed_seq(9), 3);
        assert!(c.jitter() < 10);
    }
}
