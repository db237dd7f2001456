//! Flush failures never lose acknowledged values: an I/O error (EIO,
//! ENOSPC, a short write, a torn live header, a failed sync) puts the
//! in-flight values back in front of the pending ones, keeps their journal
//! segment, and a retry writes exactly the bytes a fault-free update would;
//! a value the engine rejects is dropped (and the ones before it written),
//! as rrdcached does.
//!
//! Faults come from the batch updater's `FaultHook` (the writes and syncs
//! the flusher issues), not from the journal.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rrd_daemon::flusher;
use rrd_daemon::state::Daemon;
use rrd_engine::batch::{BatchUpdater, FaultHook, KeptHeader};
use rrd_engine::update::{update_file, UpdateOptions};

mod common;

use common::Scene;

const T0: i64 = 999_997_200;
const SEQ: u64 = 7;

fn make(path: &Path) {
    common::create_rrd(
        path,
        T0,
        &["DS:g:GAUGE:600:U:U", "DS:c:COUNTER:600:U:U", "RRA:AVERAGE:0.5:1:30", "RRA:MAX:0.5:3:20"],
    );
}

/// The daemon's scene, and `reference.rrd`: a copy of its file as made, for
/// the same updates applied directly.
fn scene() -> (Scene, PathBuf) {
    let s = Scene::new(make);
    let reference = s.base.join("reference.rrd");
    std::fs::copy(&s.path, &reference).unwrap();
    (s, reference)
}

fn value(k: i64) -> String {
    format!("{}:{}.5:{}", T0 + 300 * k, k % 9, 100 + k * 10)
}

/// What UPDATE does to the cache, the values journaled at [`SEQ`].
fn add(daemon: &Daemon, key: &str, values: &[String]) {
    assert!(!values.is_empty());
    common::add_pending(daemon, key, values, SEQ);
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    None,
    /// Every write fails with this errno.
    Errno(i32),
    /// Writes at the live header's offset store this many bytes, then fail.
    ShortLive(usize),
    /// `fdatasync` fails with EIO.
    Sync,
}

struct Plan {
    fault: Mutex<Fault>,
    live_off: u64,
    hits: AtomicU64,
}

impl FaultHook for Plan {
    fn write(&self, _: &Path, offset: u64, len: usize) -> std::io::Result<usize> {
        match *self.fault.lock().unwrap() {
            Fault::Errno(e) => {
                self.hits.fetch_add(1, Ordering::SeqCst);
                Err(std::io::Error::from_raw_os_error(e))
            }
            Fault::ShortLive(n) if offset == self.live_off => {
                self.hits.fetch_add(1, Ordering::SeqCst);
                Ok(n)
            }
            _ => Ok(len),
        }
    }
    fn sync(&self, _: &Path) -> std::io::Result<()> {
        match *self.fault.lock().unwrap() {
            Fault::Sync => {
                self.hits.fetch_add(1, Ordering::SeqCst);
                Err(std::io::Error::from_raw_os_error(libc::EIO))
            }
            _ => Ok(()),
        }
    }
}

fn flush_once(daemon: &Daemon, updater: &mut BatchUpdater, key: &str) {
    let key: rrd_daemon::cache::Key = key.into();
    {
        let mut shard = daemon.cache.shard(&key);
        let e = shard.get_mut(&key).unwrap();
        assert!(daemon.cache.queue_flush(&key, e, rrd_daemon::cache::Side::Head));
    }
    let batch = daemon.cache.take_batch(8);
    flusher::flush_batch(&daemon.cache, updater, batch);
}

/// The file's values (none in flight: no flush is running) and whether
/// they wait for a retry.
fn pending_of(daemon: &Daemon, key: &str) -> (Vec<String>, bool) {
    let shard = daemon.cache.shard(key);
    let e = shard.get(key).unwrap();
    assert!(!e.is_flushing());
    (e.unwritten().map(str::to_string).collect(), e.retry_at().is_some())
}

fn run(fault: Fault) {
    let (Scene { dir: _dir, path, key, daemon, .. }, reference) = scene();
    let live_off = KeptHeader::read(&path).unwrap().header.layout().live_head_off;
    let plan = Arc::new(Plan { fault: Mutex::new(fault), live_off, hits: AtomicU64::new(0) });
    let mut updater = BatchUpdater::new(4);
    updater.faults = Some(plan.clone());
    // As the flusher's workers run it.
    updater.keep_state_on_write_error = true;

    let first: Vec<String> = (1..=10).map(value).collect();
    add(&daemon, &key, &first);
    flush_once(&daemon, &mut updater, &key);
    assert!(plan.hits.load(Ordering::SeqCst) > 0, "{fault:?} never fired");
    // Every value is still there, in order, and will be retried; its
    // journal segment is still needed.
    let (pending, retrying) = pending_of(&daemon, &key);
    assert_eq!(pending, first, "{fault:?}");
    assert!(retrying, "{fault:?}");
    assert_eq!(daemon.cache.oldest_needed_seq(99), SEQ, "{fault:?}");
    assert_eq!(daemon.cache.pending_values.load(Ordering::SeqCst), 10);
    assert!(daemon.stats.flush_errors.load(Ordering::Relaxed) >= 1);
    // A shutdown does not wait for storage that may never recover.
    assert!(daemon.cache.is_drained());

    // Values arriving meanwhile queue behind them.
    let more: Vec<String> = (11..=14).map(value).collect();
    add(&daemon, &key, &more);
    let all: Vec<String> = first.iter().chain(&more).cloned().collect();
    assert_eq!(pending_of(&daemon, &key).0, all);

    // The storage recovers: the retry writes exactly what a fault-free
    // update of all the values writes.
    *plan.fault.lock().unwrap() = Fault::None;
    std::thread::sleep(std::time::Duration::from_millis(80));
    flush_once(&daemon, &mut updater, &key);
    let (pending, retrying) = pending_of(&daemon, &key);
    assert!(pending.is_empty(), "{fault:?}: {pending:?}");
    assert!(!retrying);
    assert_eq!(daemon.cache.oldest_needed_seq(99), 99);
    assert_eq!(daemon.cache.pending_values.load(Ordering::SeqCst), 0);
    assert_eq!(daemon.cache.pending_bytes.load(Ordering::SeqCst), 0);
    update_file(&reference, &all, &UpdateOptions::default(), false).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&reference).unwrap(), "{fault:?}");
    // The flush noted the file's inode (flushes are queued in inode order).
    let inode = daemon.cache.shard(&key).get(key.as_str()).unwrap().inode();
    assert_eq!(inode, std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap()));
}

#[test]
fn eio_keeps_the_values_and_the_retry_writes_them() {
    run(Fault::Errno(libc::EIO));
}

#[test]
fn enospc_keeps_the_values_and_the_retry_writes_them() {
    run(Fault::Errno(libc::ENOSPC));
}

#[test]
fn a_torn_live_header_is_rewritten_from_the_kept_state() {
    run(Fault::ShortLive(40));
}

#[test]
fn a_failed_sync_keeps_the_values_until_a_sync_succeeds() {
    run(Fault::Sync);
}

/// A value rrdtool would reject is dropped with the values after it; the
/// values before it are written. Nothing is retried.
#[test]
fn invalid_values_are_dropped_as_rrdcached_drops_them() {
    let (Scene { dir: _dir, path, key, daemon, .. }, reference) = scene();
    let mut updater = BatchUpdater::new(4);
    let mut values: Vec<String> = (1..=6).map(value).collect();
    values[3] = format!("{}:abc:5", T0 + 300 * 4);
    add(&daemon, &key, &values);
    flush_once(&daemon, &mut updater, &key);
    let (pending, retrying) = pending_of(&daemon, &key);
    assert!(pending.is_empty());
    assert!(!retrying);
    assert_eq!(daemon.cache.oldest_needed_seq(99), 99);
    let r = update_file(&reference, &values, &UpdateOptions::default(), false).unwrap();
    assert!(r.error.is_some());
    assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&reference).unwrap());
}
