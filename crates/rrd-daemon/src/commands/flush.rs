//! `FLUSH <file>` (write this file's pending values now and answer when they
//! are written and synced) and `FLUSHALL` (queue every file, answer at once).
//!
//! FLUSH answers success only when the flush it waited for wrote and
//! synced every value: a write that failed (values kept pending and
//! retried) or values dropped (the file refused one, or is gone or not an
//! RRD) get `-1 Cannot flush <file>: <why>`. rrdcached answers success
//! whatever happened.

use std::sync::Arc;

use rrd_protocol::{Command, Reply};

use super::{access_denied, syntax_error, Args, Outcome};
use crate::flusher::enqueue_all;
use crate::state::{Daemon, Listening};
use crate::stats::Stats;

/// Queues `key` at the head and returns the flush generation that means
/// "everything pending now is written"; `None` when the file has no entry,
/// `Some(None)` when nothing needs waiting for.
fn request(daemon: &Daemon, key: &str) -> Option<Option<u64>> {
    let cache = &daemon.cache;
    let mut shard = cache.shard(key);
    let k = shard.get_key_value(key)?.0.clone();
    let e = shard.get_mut(key)?;
    Some(cache.request_flush(&k, e))
}

/// Waits until `key`'s flush generation reaches `target` (or it is forgotten).
pub async fn wait_flushed(daemon: &Daemon, key: &str, target: u64) {
    let mut rx = daemon.cache.flushed.subscribe();
    loop {
        let done = match daemon.cache.shard(key).get(key) {
            None => true,
            Some(e) => e.flush_done(target),
        };
        if done || rx.changed().await.is_err() {
            return;
        }
    }
}

/// Flushes one file if it has an entry; `false` when it has none.
pub async fn flush_key(daemon: &Daemon, key: &str) -> bool {
    match request(daemon, key) {
        None => false,
        Some(None) => true,
        Some(Some(target)) => {
            wait_flushed(daemon, key, target).await;
            true
        }
    }
}

/// Why the last flush of `key` left values unwritten or dropped them.
pub(crate) fn flush_failure(daemon: &Daemon, key: &str) -> Option<String> {
    daemon.cache.shard(key).get(key).and_then(|e| e.flush_failure().map(str::to_string))
}

pub async fn flush(daemon: &Arc<Daemon>, l: Listening, mut args: Args) -> Outcome {
    let Some(file) = args.next() else { return syntax_error(Command::Flush).into() };
    Stats::add(&daemon.stats.flushes_received, 1);
    let key = match daemon.paths_of(&l).resolve(&file) {
        Ok(k) => k,
        Err(d) => return access_denied(&d.shown).into(),
    };
    if flush_key(daemon, &key).await {
        return match flush_failure(daemon, &key) {
            None => Reply::ok_line(format!("Successfully flushed {key}.")).into(),
            Some(why) => Reply::error(format!("Cannot flush {key}: {why}")).into(),
        };
    }
    match std::fs::metadata(&key) {
        Ok(m) if m.is_file() => Reply::ok_line(format!("Nothing to flush: {key}.")).into(),
        _ => Reply::error(format!("No such file: {key}.")).into(),
    }
}

pub async fn flush_all(daemon: &Arc<Daemon>) -> Outcome {
    enqueue_all(&daemon.cache);
    Reply::ok_line("Started flush.").into()
}
