//! Writing pending values into RRD files: the scheduler and the workers.
//!
//! The scheduler thread wakes every tick. Files whose oldest pending value
//! has waited `-w` seconds plus their fixed share of `-z` become due; they
//! join a backlog that is released to the flush queue at a paced rate (see
//! [`pace`]), so that a moment when many files become due at once (every
//! file updated at :00 with no `-z`) turns into a steady stream over a few
//! seconds instead of a burst of dirty pages (the write-cache stall diagnosis). FLUSH and FLUSHALL
//! bypass the pacing. Every tick the scheduler also asks the journal to drop
//! the segments no pending value needs; every `-f` seconds it forgets idle
//! entries (rrdcached's "flush dead data").
//!
//! A worker (one of `-t`) takes up to [`BATCH_MAX`] queued files, moves each
//! one's pending values to `inflight` and takes the file's kept header,
//! asks the engine to prefetch exactly the pages those updates will write
//! (many files at once, planned from the kept headers), applies the updates
//! in path order (a kept header that still matches the file's stamp means
//! no header read), makes the written files durable (one `syncfs` per
//! filesystem for a batch of several files, shared with the other workers
//! that finished writing meanwhile: one device flush instead of one per
//! file; file by file with `fdatasync` when that fails), drops the pages it wrote
//! from the page cache (unless `--keep-pages`), and only then clears
//! `inflight` — which is what lets the journal segments holding those values
//! be removed.
//!
//! Failures never lose an acknowledged value:
//! - an argument the engine rejects (rrdtool would reject it too) is logged
//!   and the values from it on are dropped, as rrdcached does;
//! - an I/O error (EIO, ENOSPC, a short write, a failed sync, a lock held by
//!   another program) puts the in-flight values back in front of the pending
//!   ones, keeps their journal segments, and retries the file after a
//!   backoff (1 s doubling to 64 s). The retry skips values the file already
//!   holds (a write that failed after the live header reached the file), so
//!   nothing is applied twice.
//!
//! Order: files are queued in inode order ([`disk_order`]), FLUSHALL's as
//! well as each tick's due files. Writing a file changes its mtime and
//! ctime, which dirties the filesystem block holding its inode (ext4: 16
//! inodes per 4 KiB inode-table block), and each batch's sync writes that
//! block back. Files of one block flushed in one sync cycle cost one block
//! write; the same files spread over 16 cycles cost 16. In hash order (what
//! FLUSHALL used to queue) nearly every file paid its own inode-table block:
//! 0.79 of the 4.79 pages written per perftest file in a cold flush of
//! 5,000 files, against 0.13 for rrdcached, which never syncs and so leaves
//! the block dirty for the next file (measured with the
//! `writeback:writeback_dirty_folio` tracepoint: the extra dirtied pages were
//! pages of the block device at inode-table blocks, 472 distinct ones, each
//! dirtied up to 16 times, once per file whose inode it holds; ext4 without
//! a journal). In inode order: 0.07 (docs/BENCHMARKS.md).
//!
//! Invariant: at most one worker writes a given file at a time (the cache
//! entry's `flushing`; see [`crate::cache`] for the entry's transitions).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rrd_engine::batch::{BatchCounters, BatchUpdater, KeptHeader, UpdateRequest};
use rrd_engine::update::UpdateOptions;
use rrd_engine::Error;

use crate::cache::{unix_now, Cache, FlushEnd, Key, Side};
use crate::journaler::Journaler;
use crate::stats::Stats;

/// Where a flush journals what makes it safe against power loss (the
/// daemon's [`Journaler`]; a test's journal): before a batch writes any
/// file, one undo record per file (its live header as it was: last update,
/// PDP and CDP scratch, row pointers), made durable; after the batch's sync,
/// one completion record per file. A power loss in between can leave any
/// mix of new and old rows and a torn or new live header; the restart puts
/// the old live header back and replays the values (docs/journal.md,
/// "Flushes and power loss").
pub trait UndoLog: Send + Sync {
    /// Appends `records` and returns once they are durable.
    fn append_durable(&self, records: &[rrd_journal::Record]) -> Result<(), String>;
    /// Appends `records`; durable with the journal's next sync.
    fn append(&self, records: &[rrd_journal::Record]);
}

/// Files one worker takes at a time.
pub const BATCH_MAX: usize = 64;

/// Files a worker keeps open (its batch, and the one before).
pub const OPEN_FILES_PER_WORKER: usize = BATCH_MAX * 2;

/// Longest wait before retrying a file whose flush failed.
pub const RETRY_MAX_SECS: i64 = 64;

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

/// Sorts files into the order their flushes should be queued: by inode
/// number (files whose inode is not known yet first, by path), so that
/// files sharing an inode-table block are written, and synced, together
/// (see the module doc). Inode numbers of different filesystems interleave;
/// each filesystem's files are still in its own inode order.
pub fn disk_order(files: &mut [(u64, Key)]) {
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
}

/// Runs one worker until the cache is stopping and the queue is empty.
pub fn worker(cache: Arc<Cache>) {
    let mut updater = BatchUpdater::new(OPEN_FILES_PER_WORKER);
    // Every open of a flush goes through the -B confinement.
    updater.files.root = cache.root.clone();
    // A failed write is retried from the state before it (see the module doc).
    updater.keep_state_on_write_error = true;
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

/// Whether a failed update is worth retrying: the values are fine, the
/// storage (or a lock held by another program) was not.
pub fn is_transient(e: &Error) -> bool {
    match e {
        Error::Io { .. } => true,
        Error::Open { source, .. } => source.kind() != std::io::ErrorKind::NotFound,
        // Renamed over at every open (a tool replacing the file): the next
        // open will likely find it settled.
        Error::Locked | Error::Replaced { .. } => true,
        Error::Invalid(_)
        | Error::Format { .. }
        | Error::Update { .. }
        | Error::NotRegularFile { .. }
        | Error::Exists { .. }
        | Error::TooLarge { .. }
        | Error::Unknown(_)
        | Error::Time { .. } => false,
    }
}

/// The wait before retry number `retries` (1, 2, 4, ... 64 seconds).
pub fn backoff_secs(retries: u32) -> i64 {
    1i64 << retries.saturating_sub(1).min(6)
}

/// What happened to one file of a batch.
enum Outcome {
    /// Written (values an argument error stopped are dropped and logged).
    Written,
    /// Not written for a reason that may pass: values go back to pending.
    Retry(String),
    /// Not written and never will be (file gone, not an RRD): dropped.
    Dropped(String),
}

struct Taken {
    key: Key,
    req: UpdateRequest,
    values: usize,
    kept: Option<KeptHeader>,
    outcome: Outcome,
    /// Written, but the file refused a value: it and those after it were
    /// dropped.
    refused: Option<String>,
}

fn add_counters(stats: &Stats, before: BatchCounters, after: BatchCounters) {
    Stats::add(&stats.headers_read, after.headers_read - before.headers_read);
    Stats::add(&stats.headers_kept, after.headers_kept - before.headers_kept);
    Stats::add(&stats.pages_prefetched, after.pages_prefetched - before.pages_prefetched);
    Stats::add(&stats.pages_written, after.pages_written - before.pages_written);
    Stats::add(&stats.pages_released, after.pages_released - before.pages_released);
}

/// Writes the pending values of `keys` (see the module doc).
pub fn flush_batch(cache: &Cache, updater: &mut BatchUpdater, keys: Vec<Key>) {
    let counters_before = updater.counters;
    let mut taken = begin_batch(cache, keys);
    if taken.is_empty() {
        return;
    }
    taken.sort_by(|a, b| a.key.cmp(&b.key));
    let undo_log = cache.undo_log.get();
    if let Some(log) = undo_log {
        journal_undo(cache, log.as_ref(), &mut taken);
    }
    let pairs: Vec<(&UpdateRequest, Option<&KeptHeader>)> =
        taken.iter().map(|t| (&t.req, t.kept.as_ref())).collect();
    updater.prefetch_kept(&pairs);
    apply_updates(cache, updater, &mut taken);
    let release = cache.release_pages.load(Ordering::Relaxed);
    // One syncfs for the batch when it wrote several files (one device
    // flush, writes at queue depth), shared with the other workers that
    // finished meanwhile (`syncgroup`); file by file when that fails, so
    // that an error is pinned on the file it belongs to.
    let written: Vec<&std::path::Path> = taken
        .iter()
        .filter(|t| matches!(t.outcome, Outcome::Written))
        .map(|t| t.req.path.as_path())
        .collect();
    let batch_synced = written.len() > 1
        && updater
            .filesystems(&written)
            .map_err(|e| e.to_string())
            .and_then(|filesystems| {
                cache.syncs.sync(filesystems, |device, path| {
                    rrd_engine::batch::sync_device_of(&cache.root, device, path)
                })
            })
            .is_ok();
    for t in taken.iter_mut() {
        if !matches!(t.outcome, Outcome::Written) {
            continue;
        }
        let synced = if batch_synced {
            updater.release_written(&t.req.path, t.kept.as_mut(), release)
        } else {
            updater.sync(&t.req.path, t.kept.as_mut(), release)
        };
        match synced {
            Ok(_) => Stats::add(&cache.stats.files_synced, 1),
            Err(e) if std::path::Path::new(&t.req.path).exists() => {
                // What the kernel now holds for this file is uncertain.
                t.kept = None;
                Stats::add(&cache.stats.flush_errors, 1);
                t.outcome = Outcome::Retry(format!("syncing failed: {e}"));
            }
            // The file is gone (deleted behind our back): nothing to keep.
            Err(_) => {}
        }
    }
    if let Some(log) = undo_log {
        // Before the values stop being in flight (which lets their journal
        // segments go): a file written and synced, or never written.
        let done: Vec<rrd_journal::Record> = taken
            .iter()
            .filter(|t| matches!(t.outcome, Outcome::Written | Outcome::Dropped(_)))
            .map(|t| rrd_journal::Record::done(t.key.as_ref()))
            .collect();
        if !done.is_empty() {
            log.append(&done);
        }
    }
    add_counters(&cache.stats, counters_before, updater.counters);
    finish_batch(cache, taken);
}

/// Takes each file's pending values and kept header ([`Entry::begin_flush`]):
/// the files this worker writes.
///
/// [`Entry::begin_flush`]: crate::cache::Entry::begin_flush
fn begin_batch(cache: &Cache, keys: Vec<Key>) -> Vec<Taken> {
    let mut taken: Vec<Taken> = Vec::with_capacity(keys.len());
    for key in keys {
        let mut shard = cache.shard(&key);
        let Some(e) = shard.get_mut(&key) else { continue };
        let Some(start) = e.begin_flush(cache) else { continue };
        drop(shard);
        // After a failure, part of these values may already be in the file.
        let opts = UpdateOptions { template: None, skip_past_updates: start.after_failure };
        let req = UpdateRequest { path: key.to_string().into(), args: start.args, opts };
        taken.push(Taken {
            key,
            values: req.args.len(),
            req,
            kept: start.kept,
            outcome: Outcome::Written,
            refused: None,
        });
    }
    taken
}

/// Applies each journaled file's values (the pages were prefetched), and
/// notes what happened to it.
fn apply_updates(cache: &Cache, updater: &mut BatchUpdater, taken: &mut [Taken]) {
    for t in taken {
        if !matches!(t.outcome, Outcome::Written) {
            // Not journaled: not written.
            continue;
        }
        t.outcome = match updater.update_kept(&t.req, false, &mut t.kept) {
            Ok(report) => {
                match report.error {
                    None => {
                        Stats::add(&cache.stats.updates_written, 1);
                        Stats::add(&cache.stats.data_sets_written, t.values as u64);
                    }
                    Some(e) => {
                        Stats::add(&cache.stats.flush_errors, 1);
                        Stats::add(&cache.stats.flush_drops, 1);
                        crate::log!(
                            Err,
                            "update of {} failed: {e}; its values from there on are dropped",
                            t.key
                        );
                        t.refused = Some(e.to_string());
                    }
                }
                Outcome::Written
            }
            Err(e) if is_transient(&e) => {
                Stats::add(&cache.stats.flush_errors, 1);
                Outcome::Retry(e.to_string())
            }
            Err(e) => {
                Stats::add(&cache.stats.flush_errors, 1);
                Stats::add(&cache.stats.flush_drops, 1);
                crate::log!(Err, "update of {} failed: {e}; its {} value(s) are dropped", t.key, t.values);
                Outcome::Dropped(e.to_string())
            }
        };
    }
}

/// Ends each file's flush ([`Entry::finish_flush`]) and wakes FLUSH's
/// waiters.
///
/// [`Entry::finish_flush`]: crate::cache::Entry::finish_flush
fn finish_batch(cache: &Cache, taken: Vec<Taken>) {
    let now = unix_now();
    for t in taken {
        let mut shard = cache.shard(&t.key);
        let Some(e) = shard.get_mut(&t.key) else { continue };
        let (end, failed) = match &t.outcome {
            Outcome::Retry(why) => (FlushEnd::Failed { why }, Some(why)),
            Outcome::Dropped(why) => (FlushEnd::Dropped { why, values: t.values }, None),
            Outcome::Written => (FlushEnd::Written { refused: t.refused.as_deref() }, None),
        };
        let retry = e.finish_flush(cache, &t.key, end, t.kept, now);
        if let (Some(retry), Some(why)) = (retry, failed) {
            crate::log!(
                Err,
                "writing {} failed ({why}); its {} value(s) are kept and retried in {} s",
                t.key,
                retry.values,
                retry.wait_secs
            );
        }
    }
    cache.notify_flushed();
}

/// Journals (durably) each file's live header as it is before the batch
/// writes anything. A file without a kept header has it read now (the
/// update then reads none). If the journal cannot take the records, no
/// file of the batch is written: every one is retried.
fn journal_undo(cache: &Cache, log: &dyn UndoLog, taken: &mut [Taken]) {
    let mut records = Vec::with_capacity(taken.len());
    for t in taken.iter_mut() {
        if t.kept.is_none() {
            t.kept = KeptHeader::read_in(&cache.root, &t.req.path).ok();
        }
        // A file whose header cannot be read is not written either.
        if let Some(k) = &t.kept {
            let live = k.header.layout().live_head_off;
            let bytes = k.header.encode_live();
            records.push(rrd_journal::Record::undo(t.key.as_ref(), live, k.stamp.len, k.stamp.ino, &bytes));
        }
    }
    if records.is_empty() {
        return;
    }
    if let Err(why) = log.append_durable(&records) {
        for t in taken.iter_mut() {
            t.outcome = Outcome::Retry(format!("journaling the flush failed: {why}"));
        }
    }
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
            backlog.extend(take_due(&self.cache, now));
            let release = pace(backlog.len(), self.tick, spread);
            for key in backlog.drain(..release) {
                let mut shard = self.cache.shard(&key);
                if let Some(e) = shard.get_mut(&key) {
                    self.cache.queue_flush(&key, e, Side::Tail);
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
                self.cache.retain(|_, e| !e.is_idle_since(idle_before));
            }
            self.cache.scheduler_rounds.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The files whose timers are due at `now` and still live (a timer is stale
/// when the values it was set for are gone or already queued), in
/// [`disk_order`].
pub fn take_due(cache: &Cache, now: i64) -> Vec<Key> {
    let mut due_now = Vec::new();
    for (due, key) in cache.take_due_timers(now) {
        let shard = cache.shard(&key);
        let live =
            shard.get(&key).filter(|e| e.timer_is_live(due, cache.write_interval_secs)).map(|e| e.inode());
        drop(shard);
        if let Some(inode) = live {
            due_now.push((inode, key));
        }
    }
    disk_order(&mut due_now);
    due_now.into_iter().map(|(_, key)| key).collect()
}

/// Queues every file with pending values (FLUSHALL, shutdown), in
/// [`disk_order`].
pub fn enqueue_all(cache: &Cache) {
    let mut files = Vec::new();
    cache.for_each(|k, e| {
        if e.is_flushable() {
            files.push((e.inode(), k.clone()));
        }
    });
    disk_order(&mut files);
    for (_, key) in files {
        let mut shard = cache.shard(&key);
        if let Some(e) = shard.get_mut(&key) {
            cache.queue_flush(&key, e, Side::Tail);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file renamed over at every open is retried (its values are kept);
    /// a refusal of the file itself drops them.
    #[test]
    fn a_replaced_file_is_retried_a_directory_is_not() {
        let path = std::path::PathBuf::from("/d/a.rrd");
        assert!(is_transient(&Error::Replaced { path: path.clone() }));
        assert!(is_transient(&Error::Locked));
        assert!(!is_transient(&Error::NotRegularFile { path: path.clone() }));
        let gone = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert!(!is_transient(&Error::Open { path, source: gone }));
    }

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

    /// An entry for `key` with one pending value, due at `due`, whose file
    /// has inode `inode` (0: not known).
    fn add(cache: &Cache, key: &str, inode: u64, due: i64) {
        let mut e = crate::cache::Entry::new(0.0, 0, 0).with_inode(inode);
        let mark = e.mark();
        e.take_value(1.0, "1:1");
        let timer = e.settle_pending(cache, mark, due - cache.write_interval_secs as i64, 0);
        assert_eq!(timer, Some(due));
        cache.shard(key).insert(key.into(), e);
        cache.add_timer(due, key.into());
    }

    fn keys(v: &[&str]) -> Vec<Key> {
        v.iter().map(|k| Key::from(*k)).collect()
    }

    /// Files go to the queue in inode order (unknown inodes first, by
    /// path), so that files sharing an inode-table block are synced in one
    /// cycle: FLUSHALL, and each tick's due files.
    #[test]
    fn files_are_queued_in_inode_order() {
        let cache = Cache::new(Arc::new(Stats::default()), 300, 0);
        add(&cache, "/d/a.rrd", 70, 1000);
        add(&cache, "/d/b.rrd", 12, 1000);
        add(&cache, "/d/c.rrd", 0, 1001);
        add(&cache, "/d/d.rrd", 45, 1001);
        add(&cache, "/d/e.rrd", 3, 2000);
        cache.shard("/d/f.rrd").insert("/d/f.rrd".into(), crate::cache::Entry::new(0.0, 0, 0));
        assert_eq!(take_due(&cache, 1001), keys(&["/d/c.rrd", "/d/b.rrd", "/d/d.rrd", "/d/a.rrd"]));
        enqueue_all(&cache);
        assert_eq!(cache.queued(), keys(&["/d/c.rrd", "/d/e.rrd", "/d/b.rrd", "/d/d.rrd", "/d/a.rrd"]));
        // e's timer is stale now (the file is queued).
        assert_eq!(take_due(&cache, 3000), Vec::<Key>::new());
    }
}
