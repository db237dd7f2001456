//! Updates for long-running callers (collectd's pattern: `rrd_update_r`
//! once per file per cycle): each file's decoded header is kept between
//! calls and used only while the file's stamp (device, inode, length,
//! mtime, ctime, taken under rrdtool's lock) still matches, as the batch
//! updater and pipe mode do; a file changed by anyone else is read again.
//!
//! Bounded: a few descriptors per shard (opened and closed as needed, so a
//! caller's descriptor budget is not spent), and at most [`MAX_KEPT`]
//! headers in all. Shards by path so that threads updating different files
//! rarely wait for each other. `RRDSCALE_LIBRRD_KEEP=0` turns it off (every
//! update then reads its header, as librrd does).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rrd_engine::batch::{BatchUpdater, KeptHeader, UpdateRequest};
use rrd_engine::update::{UpdateOptions, UpdateReport};

const SHARDS: usize = 8;
/// Descriptors each shard keeps open between calls.
const OPEN_PER_SHARD: usize = 4;
/// Headers kept in all shards (a perftest header is about 1 KiB decoded).
const MAX_KEPT: usize = 65_536;

struct Shard {
    updater: BatchUpdater,
    kept: HashMap<PathBuf, KeptHeader>,
}

fn shards() -> &'static [Mutex<Shard>] {
    static SHARDS_CELL: OnceLock<Vec<Mutex<Shard>>> = OnceLock::new();
    SHARDS_CELL.get_or_init(|| {
        (0..SHARDS)
            .map(|_| Mutex::new(Shard { updater: BatchUpdater::new(OPEN_PER_SHARD), kept: HashMap::new() }))
            .collect()
    })
}

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RRDSCALE_LIBRRD_KEEP").map_or(true, |v| v != "0"))
}

/// One update, as `rrd_update_r` makes it.
pub fn update(path: &Path, values: &[String], opts: &UpdateOptions) -> rrd_engine::Result<UpdateReport> {
    if !enabled() {
        return rrd_engine::update::update_file(path, values, opts, false);
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    let shard = &shards()[h.finish() as usize % SHARDS];
    let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
    let mut kept = s.kept.remove(path);
    let req = UpdateRequest { path: path.to_path_buf(), args: values.to_vec(), opts: opts.clone() };
    let result = s.updater.update_kept(&req, false, &mut kept);
    // Descriptors are not kept past the call beyond the shard's few.
    if let Some(k) = kept {
        if s.kept.len() < MAX_KEPT / SHARDS {
            s.kept.insert(req.path, k);
        }
    }
    result
}
