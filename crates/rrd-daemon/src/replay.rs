//! Restart: the journal's records back into the cache, before any client is
//! served.
//!
//! Records are applied in journal order with the UPDATE rules: a value not
//! later than the file's newest (on disk or already replayed) is skipped,
//! which makes replay idempotent (replaying twice, or replaying values that
//! a flush already wrote, changes nothing). A record with no values is a
//! FORGET. Files' last update times are read first, in parallel (one header
//! read each, several threads), so a journal naming 300k files does not cost
//! 300k sequential disk round trips.
//!
//! Replayed values stay in their old segments (they are not journaled
//! again); the entries are tagged with the OLDEST replayed segment, so none
//! of those segments is removed before every replayed value is written and
//! synced.

use std::collections::HashMap;
use std::sync::Mutex;

use rrd_engine::batch::KeptHeader;
use rrd_engine::root::Root;
use rrd_journal::ReplayReport;

use crate::cache::{unix_now, Entry, Key};
use crate::commands::update_value_time;
use crate::state::Daemon;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReplaySummary {
    pub records: u64,
    pub values_applied: u64,
    pub values_skipped: u64,
    /// Records for files that could not be read (missing, not an RRD).
    pub records_unreadable: u64,
}

const READ_THREADS: usize = 8;

/// `read(path)` for every path, on several threads: a journal naming 300k
/// files must not cost 300k sequential disk round trips.
pub(crate) fn read_parallel<T: Send>(
    paths: Vec<String>,
    read: impl Fn(&str) -> T + Sync,
) -> HashMap<String, T> {
    let out = Mutex::new(HashMap::with_capacity(paths.len()));
    let chunk = paths.len().div_ceil(READ_THREADS).max(1);
    std::thread::scope(|s| {
        for part in paths.chunks(chunk) {
            let (out, read) = (&out, &read);
            s.spawn(move || {
                let local: Vec<(String, T)> = part.iter().map(|p| (p.clone(), read(p))).collect();
                out.lock().expect("replay map lock").extend(local);
            });
        }
    });
    out.into_inner().expect("replay map lock")
}

/// A file's header and last update time, read under a read lock (`None`
/// when it cannot be read or its last update time is not valid). The one
/// judgement of "readable" that replay and the rrdcached migration share.
pub(crate) fn read_last_update(root: &Root, path: &str) -> Option<(f64, KeptHeader)> {
    KeptHeader::read_in(root, std::path::Path::new(path))
        .ok()
        .filter(|k| k.header.live().last_up >= 1)
        .map(|k| (k.header.live().last_up as f64, k))
}

/// Each file's header and last update time ([`read_last_update`]). The
/// header is kept in the entry, so the first flush after a restart reads
/// no header.
fn last_updates(root: &Root, paths: Vec<String>) -> HashMap<String, Option<(f64, Option<KeptHeader>)>> {
    read_parallel(paths, |p| read_last_update(root, p).map(|(t, k)| (t, Some(k))))
}

/// Applies `report`'s records to the cache. `first_seq` is the oldest
/// replayed segment.
pub fn apply(daemon: &Daemon, report: &ReplayReport, first_seq: u64) -> ReplaySummary {
    let mut summary = ReplaySummary::default();
    let mut distinct: Vec<String> =
        report.records.iter().filter(|r| !r.args.is_empty()).map(|r| r.path.clone()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let mut last = last_updates(&daemon.paths.root, distinct);
    let cache = &daemon.cache;
    let now = unix_now();
    for record in &report.records {
        summary.records += 1;
        let key: Key = record.path.as_str().into();
        let mut shard = cache.shard(&key);
        if record.args.is_empty() {
            if let Some(e) = shard.remove(&key) {
                cache.count_pending(&e.pending, false);
            }
            continue;
        }
        let Some(Some((last_up, kept))) = last.get_mut(&record.path) else {
            summary.records_unreadable += 1;
            continue;
        };
        let entry = shard.entry(key.clone()).or_insert_with(|| {
            let mut e = Entry::new(*last_up, cache.jitter(), now);
            e.inode = kept.as_ref().map_or(0, |k| k.stamp.ino);
            // The header goes to the first entry made for the file.
            e.kept = kept.take().and_then(|k| cache.keep(k));
            e
        });
        for value in &record.args {
            match update_value_time(value) {
                Some(t) if t > entry.last_stamp => {
                    if entry.pending.is_empty() {
                        entry.first_pending_at = now;
                        entry.oldest_seq = first_seq;
                        cache.add_timer(entry.due_at(cache.write_interval_secs), key.clone());
                    }
                    entry.last_stamp = t;
                    let before = entry.pending.bytes();
                    entry.pending.push(t, value);
                    cache.pending_values.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    cache
                        .pending_bytes
                        .fetch_add(entry.pending.bytes() - before, std::sync::atomic::Ordering::SeqCst);
                    summary.values_applied += 1;
                }
                _ => summary.values_skipped += 1,
            }
        }
    }
    summary
}
