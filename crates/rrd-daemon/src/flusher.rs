//! Writing pending values into RRD files: the scheduler and the workers.
//!
//! The scheduler thread wakes every tick. Files whose oldest pending value
//! has waited `-w` seconds plus their fixed share of `-z` become due; they
//! join a backlog that is released to the flush queue at a paced rate (see
//! [`pace`]), so that a moment when many files become due at once (every
//! file updated at :00 with no `-z`) turns into a steady stream over a few
//! seconds instead of a burst of dirty pages (seed 002). FLUSH and FLUSHALL
//! bypass the pacing. Every tick the scheduler also asks the journal to drop
//! the segments no pending value needs; every `-f` seconds it forgets idle
//! entries (rrdcached's "flush dead data").
//!
//! A worker (one of `-t`) takes up to [`BATCH_MAX`] queued files, moves each
//! one's pending values to `inflight`, asks the engine to prefetch exactly
//! the pages those updates will write (many files at once), applies the
//! updates in path order, `fdatasync`s each written file, and only then
//! clears `inflight` — which is what lets the journal segments holding those
//! values be removed. An update that fails (bad value) is logged and its
//! values dropped, as rrdcached does.
//!
//! Invariant: at most one worker writes a given file at a time (`flushing`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rrd_engine::batch::{BatchUpdater, UpdateRequest};
use rrd_engine::update::UpdateOptions;

use crate::cache::{unix_now, Cache, Key, Side};
use crate::journaler::Journaler;
use crate::stats::Stats;

/// Files one worker takes at a time.
pub const BATCH_MAX: usize = 64;

/// How many due files one tick releases: all of a small backlog, otherwise
/// the share that drains the backlog over `spread` (at least one per tick).
pub fn pace(backlog: usize, tick: Duration, spread: Duration) -> usize {
    const SMALL: usize = 256;
    if backlog <= SMALL {
        return backlog;
    }
    let ticks = (spread.as_secs_f64() / tick.as_secs_f64().max(1e-3)).max(1.0);
    ((backlog as f64 / ticks).ceil() as usize).clamp(SMALL, backlog)
}

/// Runs one worker until the cache is stopping and the queue is empty.
pub fn worker(cache: Arc<Cache>) {
    let mut updater = BatchUpdater::new(BATCH_MAX * 2);
    loop {
        let batch = cache.take_batch(BATCH_MAX);
        if batch.is_empty() {
            if cache.stopping.load(Ordering::SeqCst) {
                return;
            }
            continue;
        }
        flush_batch(&cache, &mut updater, batch);
    }
}

/// Writes the pending values of `keys` (see the module doc).
pub fn flush_batch(cache: &Cache, updater: &mut BatchUpdater, keys: Vec<Key>) {
    let mut taken: Vec<(Key, UpdateRequest)> = Vec::with_capacity(keys.len());
    for key in keys {
        let mut shard = cache.shard(&key);
        let Some(e) = shard.get_mut(&key) else { continue };
        e.in_queue = false;
        if e.suspended || e.pending.is_empty() {
            continue;
        }
        if e.flushing {
            e.requeue = true;
            continue;
        }
        let values = std::mem::take(&mut e.pending);
        cache.pending_values.fetch_sub(values.len() as u64, Ordering::SeqCst);
        e.inflight = values.clone();
        e.inflight_seq = Some(e.oldest_seq);
        e.flushing = true;
        drop(shard);
        let req =
            UpdateRequest { path: key.to_string().into(), args: values, opts: UpdateOptions::default() };
        taken.push((key, req));
    }
    if taken.is_empty() {
        return;
    }
    taken.sort_by(|a, b| a.0.cmp(&b.0));
    let refs: Vec<&UpdateRequest> = taken.iter().map(|(_, r)| r).collect();
    updater.prefetch(&refs);
    let mut sync_failed = Vec::new();
    for (key, req) in &taken {
        match updater.update(req, false) {
            Ok(report) => match report.error {
                None => {
                    Stats::add(&cache.stats.updates_written, 1);
                    Stats::add(&cache.stats.data_sets_written, req.args.len() as u64);
                }
                Some(e) => {
                    Stats::add(&cache.stats.flush_errors, 1);
                    tracing::info!("update of {key} failed: {e}");
                }
            },
            Err(e) => {
                Stats::add(&cache.stats.flush_errors, 1);
                tracing::info!("update of {key} failed: {e}");
            }
        }
    }
    for (key, req) in &taken {
        // fsync syncs the file, whichever descriptor asks.
        let synced = updater
            .files
            .get(&req.path)
            .map_err(|e| e.to_string())
            .and_then(|f| f.sync_data().map_err(|e| e.to_string()));
        match synced {
            Ok(()) => Stats::add(&cache.stats.files_synced, 1),
            Err(e) if std::path::Path::new(&req.path).exists() => {
                tracing::error!("syncing {key} failed ({e}); its journal segments are kept");
                sync_failed.push(key.clone());
            }
            // The file is gone (deleted behind our back): nothing to keep.
            Err(_) => {}
        }
    }
    let now = unix_now();
    for (key, _) in &taken {
        let mut shard = cache.shard(key);
        let Some(e) = shard.get_mut(key) else { continue };
        e.flushing = false;
        e.inflight.clear();
        if !sync_failed.contains(key) {
            e.inflight_seq = None;
        }
        e.flushed_gen += 1;
        e.last_activity = now;
        if std::mem::take(&mut e.requeue) && !e.pending.is_empty() {
            cache.enqueue_locked(key, e, Side::Head);
        }
    }
    cache.notify_flushed();
}

/// Everything the scheduler thread needs.
pub struct Scheduler {
    pub cache: Arc<Cache>,
    pub journal: Arc<Journaler>,
    pub tick: Duration,
    pub flush_interval: Duration,
}

impl Scheduler {
    /// Runs until the cache is stopping.
    pub fn run(self) {
        let spread = Duration::from_secs((self.cache.write_interval_secs / 10).max(1));
        let mut backlog: std::collections::VecDeque<Key> = std::collections::VecDeque::new();
        let mut last_evict = Instant::now();
        while !self.cache.stopping.load(Ordering::SeqCst) {
            std::thread::sleep(self.tick);
            let now = unix_now();
            for (due, key) in self.cache.take_due_timers(now) {
                let shard = self.cache.shard(&key);
                // A timer is stale when the values it was set for are gone.
                let live = shard.get(&key).is_some_and(|e| {
                    !e.pending.is_empty() && e.due_at(self.cache.write_interval_secs) == due && !e.in_queue
                });
                drop(shard);
                if live {
                    backlog.push_back(key);
                }
            }
            let release = pace(backlog.len(), self.tick, spread);
            for key in backlog.drain(..release) {
                let mut shard = self.cache.shard(&key);
                if let Some(e) = shard.get_mut(&key) {
                    if !e.pending.is_empty() {
                        self.cache.enqueue_locked(&key, e, Side::Tail);
                    }
                }
            }
            // Read the journal's segment before looking at the cache: a value
            // accepted after this read is tagged with this segment or later.
            if self.journal.enabled() {
                let upper = self.journal.current_seq();
                let needed = self.cache.oldest_needed_seq(upper);
                self.journal.remove_below(needed);
            }
            if last_evict.elapsed() >= self.flush_interval {
                last_evict = Instant::now();
                let idle_before = now - self.flush_interval.as_secs() as i64;
                self.cache.retain(|_, e| {
                    let idle = e.pending.is_empty()
                        && !e.flushing
                        && !e.in_queue
                        && !e.suspended
                        && e.inflight_seq.is_none()
                        && e.last_activity <= idle_before;
                    !idle
                });
            }
        }
    }
}

/// Queues every file with pending values (FLUSHALL, shutdown).
pub fn enqueue_all(cache: &Cache) {
    let mut keys = Vec::new();
    cache.for_each(|k, e| {
        if !e.pending.is_empty() && !e.suspended {
            keys.push(k.clone());
        }
    });
    for key in keys {
        let mut shard = cache.shard(&key);
        if let Some(e) = shard.get_mut(&key) {
            if !e.pending.is_empty() {
                cache.enqueue_locked(&key, e, Side::Tail);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacing_spreads_big_backlogs() {
        let tick = Duration::from_millis(100);
        let spread = Duration::from_secs(30);
        assert_eq!(pace(0, tick, spread), 0);
        assert_eq!(pace(100, tick, spread), 100);
        // 300k due at once drain over ~30 s: 1000 per 100 ms tick.
        assert_eq!(pace(300_000, tick, spread), 1000);
        assert_eq!(pace(1_000, tick, spread), 256);
    }
}
