//! Shared by the daemon's in-process integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rrd_daemon::cache::{unix_now, Cache};
use rrd_daemon::commands::update_value_time;
use rrd_daemon::config::Config;
use rrd_daemon::flusher;
use rrd_daemon::journaler::Journaler;
use rrd_daemon::state::Daemon;
use rrd_engine::batch::{BatchUpdater, KeptHeader};
use rrd_engine::create::{create, CreateOptions};

/// Creates an RRD at `path`: 300 s step, last update `start`, `defs` its
/// `DS:`/`RRA:` definitions.
pub fn create_rrd(path: &Path, start: i64, defs: &[&str]) {
    let defs: Vec<String> = defs.iter().map(|s| s.to_string()).collect();
    let opts = CreateOptions { start: Some(start), step_secs: Some(300), ..Default::default() };
    create(path, &opts, &defs, start).unwrap();
}

/// What UPDATE does to the cache (without the journal): `values`, each
/// later than the one before, go pending on `key`'s entry (made from the
/// file's header if new), as if journaled in segment `seq`.
pub fn add_pending(daemon: &Daemon, key: &str, values: &[String], seq: u64) {
    let cache = &daemon.cache;
    let now = unix_now();
    let mut shard = cache.shard(key);
    let made = || {
        let kept = KeptHeader::read(Path::new(key)).unwrap();
        Some(cache.new_entry(kept.header.live().last_up as f64, kept, now))
    };
    let (_, e) = shard.get_or_insert_with(key, made).expect("made");
    let mark = e.mark();
    for s in values {
        let t = update_value_time(s).expect("a value with a time");
        assert!(t > e.last_stamp(), "{s} is not later than {}", e.last_stamp());
        e.take_value(t, s);
    }
    if let Some(due) = e.settle_pending(cache, mark, now, seq) {
        cache.add_timer(due, key.into());
    }
}

/// The last update of the journal tests' files (`fault`, `replay`).
pub const T0: i64 = 1_000_000_000;

/// A file of the journal tests: a gauge `x` and a counter `y`, last
/// update [`T0`].
pub fn make_xy(path: &Path) {
    create_rrd(
        path,
        T0,
        &["DS:x:GAUGE:600:U:U", "DS:y:COUNTER:600:U:U", "RRA:AVERAGE:0.5:1:20", "RRA:MAX:0.5:3:20"],
    );
}

/// An in-process daemon without a journal over a fresh base directory
/// (canonical, as the daemon names files) holding `a.rrd`.
pub struct Scene {
    /// Removed when the scene is dropped: keep it bound (`dir: _dir`).
    pub dir: tempfile::TempDir,
    pub base: PathBuf,
    pub path: PathBuf,
    /// `path` as the cache keys it.
    pub key: String,
    pub daemon: Daemon,
}

impl Scene {
    /// `a.rrd` made by `make`, then the daemon.
    pub fn new(make: impl FnOnce(&Path)) -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let path = base.join("a.rrd");
        let key = path.display().to_string();
        make(&path);
        let config = Config { base_dir: Some(base.clone()), ..Default::default() };
        let daemon = Daemon::new(config, Journaler::disabled());
        Scene { dir, base, path, key, daemon }
    }
}

/// Queues every pending value, marks the cache stopping (so `take_batch`
/// returns empty instead of waiting for more work), and flushes until
/// nothing is left: what a daemon does at a `-F` shutdown, in-process.
pub fn write_everything_and_stop(cache: &Cache) {
    flusher::enqueue_all(cache);
    cache.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut updater = BatchUpdater::new(16);
    loop {
        let batch = cache.take_batch(8);
        if batch.is_empty() {
            break;
        }
        flusher::flush_batch(cache, &mut updater, batch);
    }
}
