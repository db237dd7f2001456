//! Shared by the daemon's in-process integration tests.

#![allow(dead_code)]

use std::path::Path;

use rrd_daemon::cache::Cache;
use rrd_daemon::flusher;
use rrd_engine::batch::BatchUpdater;
use rrd_engine::create::{create, CreateOptions};

/// Creates an RRD at `path`: 300 s step, last update `start`, `defs` its
/// `DS:`/`RRA:` definitions.
pub fn create_rrd(path: &Path, start: i64, defs: &[&str]) {
    let defs: Vec<String> = defs.iter().map(|s| s.to_string()).collect();
    let opts = CreateOptions { start: Some(start), step_secs: Some(300), ..Default::default() };
    create(path, &opts, &defs, start).unwrap();
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
