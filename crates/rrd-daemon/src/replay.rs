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
//! Before that, a flush that a crash interrupted is undone: an undo record
//! not voided by a later completion record for its file means the flush
//! may have left any mix of old and new rows and a new or torn live header
//! (a power loss writes pages back in any order), so the old live header
//! is written back (and synced) and the values are replayed from it,
//! rewriting the same rows. Completion records for the restored files then
//! go to the new journal, synced, so that a later restart does not undo
//! the flushes made since. See docs/journal.md, "Flushes and power loss".
//!
//! Replayed values stay in their old segments (they are not journaled
//! again); the entries are tagged with the OLDEST replayed segment, so none
//! of those segments is removed before every replayed value is written and
//! synced.

use std::collections::HashMap;
use std::sync::Mutex;

use std::path::Path;

use rrd_engine::batch::KeptHeader;
use rrd_engine::root::Root;
use rrd_journal::{Record, RecordKind, ReplayReport};

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
    /// Files whose interrupted flush was undone (live header restored).
    pub flushes_undone: u64,
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
    apply_with_hook(daemon, report, first_seq, None)
}

/// Sees the live-header restores of interrupted flushes, in order: the
/// power-loss tests record them (as the flushes' writes are recorded) to
/// crash a recovery in turn.
pub trait RestoreObserver {
    /// `bytes` were written at `offset` of `path`.
    fn written(&self, path: &Path, offset: u64, bytes: &[u8]);
    /// `path` is about to be synced.
    fn sync(&self, path: &Path);
}

/// [`apply`], with the header restores reported to `hook`.
pub fn apply_with_hook(
    daemon: &Daemon,
    report: &ReplayReport,
    first_seq: u64,
    hook: Option<&dyn RestoreObserver>,
) -> ReplaySummary {
    let mut summary = ReplaySummary {
        flushes_undone: undo_interrupted_flushes(daemon, report, hook),
        ..Default::default()
    };
    let mut distinct: Vec<String> = report
        .records
        .iter()
        .filter(|r| matches!(r.kind(), RecordKind::Update { .. }))
        .map(|r| r.path.clone())
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    let mut last = last_updates(&daemon.root, distinct);
    let cache = &daemon.cache;
    let now = unix_now();
    for record in &report.records {
        summary.records += 1;
        if matches!(record.kind(), RecordKind::Undo { .. } | RecordKind::Done { .. } | RecordKind::Malformed)
        {
            continue;
        }
        let key: Key = record.path.as_str().into();
        let mut shard = cache.shard(&key);
        if record.args.is_empty() {
            cache.forget_entry(&mut shard, &key);
            continue;
        }
        let Some(Some((last_up, kept))) = last.get_mut(&record.path) else {
            summary.records_unreadable += 1;
            continue;
        };
        let made = || {
            Some(match kept.take() {
                // The header goes to the first entry made for the file.
                Some(k) => cache.new_entry(*last_up, k, now),
                None => Entry::new(*last_up, cache.jitter(), now),
            })
        };
        let (_, entry) = shard.get_or_insert_with(&key, made).expect("made when missing");
        // Values are replayed as they were accepted: only the file's
        // state (a value not later than its newest) skips one.
        let mark = entry.mark();
        for value in &record.args {
            match update_value_time(value) {
                Some(t) if t > entry.last_stamp() => {
                    entry.take_value(t, value);
                    summary.values_applied += 1;
                }
                _ => summary.values_skipped += 1,
            }
        }
        if let Some(due) = entry.settle_pending(cache, mark, now, first_seq) {
            cache.add_timer(due, key.clone());
        }
    }
    summary
}

/// An undo record's offset, file length, inode and live header bytes.
type Undo = (u64, u64, u64, Vec<u8>);

/// The undo records no completion record voided, the last per file.
fn open_undos(report: &ReplayReport) -> Vec<(String, u64, u64, u64, Vec<u8>)> {
    let mut open: HashMap<&str, Option<Undo>> = HashMap::new();
    for r in &report.records {
        match r.kind() {
            RecordKind::Undo { path, offset, len, ino, bytes } => {
                open.insert(path, Some((offset, len, ino, bytes)));
            }
            RecordKind::Done { path } => {
                open.insert(path, None);
            }
            _ => {}
        }
    }
    let mut out: Vec<_> = open
        .into_iter()
        .filter_map(|(p, u)| u.map(|(offset, len, ino, bytes)| (p.to_string(), offset, len, ino, bytes)))
        .collect();
    out.sort();
    out
}

/// Writes back the live header of every file whose flush was interrupted
/// (same inode and length as when the undo record was made; otherwise the
/// file was replaced and is left alone), syncs it, then journals (synced)
/// the completion records. Returns the number of files restored.
fn undo_interrupted_flushes(
    daemon: &Daemon,
    report: &ReplayReport,
    hook: Option<&dyn RestoreObserver>,
) -> u64 {
    let mut restored = Vec::new();
    let mut restored_none = Vec::new();
    for (path, offset, len, ino, bytes) in open_undos(report) {
        let done = restore_header(Path::new(&path), offset, len, ino, &bytes, hook);
        match done {
            Ok(true) => {
                crate::log!(
                    Warning,
                    "{path}: a flush was interrupted by a crash; its live header was restored and its values are replayed"
                );
                restored.push(Record::done(&path));
            }
            // Another file now (or none): the undo is not for it; void it.
            Ok(false) => restored_none.push(Record::done(&path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => restored_none.push(Record::done(&path)),
            Err(e) => {
                crate::log!(Err, "{path}: restoring the live header of an interrupted flush failed: {e}")
            }
        }
    }
    let count = restored.len() as u64;
    restored.append(&mut restored_none);
    if let (false, Some(log)) = (restored.is_empty(), daemon.cache.undo_log.get()) {
        if let Err(e) = log.append_durable(&restored) {
            crate::log!(Err, "journaling the restored flushes failed: {e}");
        }
    }
    count
}

/// Writes an undo record's live header back and syncs it, if the file is
/// still the one it was made for (same inode and length); `Ok(false)` when
/// it is not.
fn restore_header(
    path: &Path,
    offset: u64,
    len: u64,
    ino: u64,
    bytes: &[u8],
    hook: Option<&dyn RestoreObserver>,
) -> std::io::Result<bool> {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
    let meta = file.metadata()?;
    if meta.len() != len || meta.ino() != ino || offset + bytes.len() as u64 > len {
        return Ok(false);
    }
    file.write_all_at(bytes, offset)?;
    if let Some(h) = hook {
        h.written(path, offset, bytes);
        h.sync(path);
    }
    file.sync_data()?;
    Ok(true)
}
