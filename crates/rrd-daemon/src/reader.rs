//! Reads that see pending data: the file as it will be after its pending
//! values are written, without writing them.
//!
//! v1 method, chosen for being obviously correct: copy the whole file into
//! memory, apply the in-flight and pending values to the copy with the same
//! engine `update` the flush uses, and answer from the copy. Values already
//! in the file are skipped by time (`skip_past_updates`), so a value that a
//! worker wrote between our snapshot and our read is not applied twice.
//!
//! Consistency: the snapshot of the values and the file read must not
//! straddle a flush of that file (a half-written file could be read). The
//! read is optimistic: note the entry's flush generation, read, check that no
//! flush started or finished meanwhile, else retry.
//!
//! Deliberately absent (later): keeping decoded headers in memory, reading
//! only the rows a FETCH needs.

use std::path::Path;
use std::time::Duration;

use rrd_engine::update::{update_rrd, Now, UpdateOptions};
use rrd_engine::{MemStore, Rrd};

use crate::cache::Cache;

/// Why a merged read failed: the text goes after `RRD Error: ` or similar.
#[derive(Debug)]
pub struct ReadError(pub String);

fn values_snapshot(cache: &Cache, key: &str) -> Option<(Option<u64>, Vec<String>)> {
    let shard = cache.shard(key);
    match shard.get(key) {
        None => Some((None, Vec::new())),
        Some(e) if e.flushing => None,
        Some(e) => {
            let mut v = e.inflight.clone();
            v.extend(e.pending.iter().cloned());
            Some((Some(e.flushed_gen), v))
        }
    }
}

fn unchanged(cache: &Cache, key: &str, gen: Option<u64>) -> bool {
    let shard = cache.shard(key);
    match (shard.get(key), gen) {
        (None, None) => true,
        (Some(e), Some(g)) => !e.flushing && e.flushed_gen == g,
        // The entry appeared or went: its values may have moved.
        (Some(e), None) => e.pending.is_empty() && !e.flushing,
        (None, Some(_)) => false,
    }
}

/// The file at `key` with its pending values applied, in memory.
pub fn merged(cache: &Cache, key: &str) -> Result<Rrd<MemStore>, ReadError> {
    let mut attempt = 0u32;
    let (bytes, values) = loop {
        attempt += 1;
        let Some((gen, values)) = values_snapshot(cache, key) else {
            // A flush of this file is running; it takes milliseconds.
            std::thread::sleep(Duration::from_millis(2));
            continue;
        };
        let bytes = std::fs::read(key)
            .map_err(|e| ReadError(format!("opening '{key}': {}", rrd_engine::error::os_message(&e))))?;
        if unchanged(cache, key, gen) || attempt > 1000 {
            break (bytes, values);
        }
    };
    let mut rrd =
        Rrd::from_store(Path::new(key), MemStore::new(bytes)).map_err(|e| ReadError(e.to_string()))?;
    if !values.is_empty() {
        let opts = UpdateOptions { template: None, skip_past_updates: true };
        // An argument that fails here fails the same way when flushed; the
        // values before it are applied in both cases.
        let _ = update_rrd(&mut rrd, &values, &opts, false, Now::system());
    }
    Ok(rrd)
}

/// The file's last update time including pending values, and its step,
/// without reading more than the header (LAST needs no rows).
pub fn last_update(cache: &Cache, key: &str) -> Result<(i64, u64), ReadError> {
    let rrd = Rrd::open(Path::new(key), false).map_err(|e| ReadError(e.to_string()))?;
    let from_file = rrd.header.live.last_up;
    let step = rrd.header.pdp_step;
    let shard = cache.shard(key);
    // rrdcached answers from its newest accepted value when it has one.
    let t = shard.get(key).map_or(from_file, |e| e.last_stamp as i64);
    Ok((t, step))
}
