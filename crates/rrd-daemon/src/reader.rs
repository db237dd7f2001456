//! Reads that see pending data: the file as it will be after its pending
//! values are written, without writing them and without copying the file.
//!
//! Method: take the entry's in-flight and pending values and its kept
//! header (used when its stamp still matches the file, else the header is
//! read: one `pread`), apply the values with the engine's own update code
//! to an [`OverlayStore`] over the file, which captures the rows and the
//! live header they produce in memory, then run the command's engine read
//! (fetch, info, first) over it. A FETCH reads only the rows of the archive
//! it picked, from the file or from the overlay; INFO and FIRST read no row.
//! Values already in the file are skipped by time (`skip_past_updates`), so
//! a value that a worker wrote between our snapshot and our read is not
//! applied twice.
//!
//! Consistency: the snapshot of the values and the reads of the file must
//! not straddle a flush of that file (a half-written file could be read).
//! The read is optimistic: note the entry's flush generation, read and
//! answer, check that no flush started or finished meanwhile, else retry.
//!
//! Deliberately absent: locking (a read lock would make a concurrent flush
//! fail to lock the file; the generation check covers our own writers, and
//! another program's write is as racy here as with rrdtool's own readers),
//! and dropping the pages the read brought in.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use rrd_engine::batch::KeptHeader;
use rrd_engine::overlay::OverlayStore;
use rrd_engine::pagecache::{advise, Advice};
use rrd_engine::root::Root;
use rrd_engine::update::{update_rrd, Now, UpdateOptions};
use rrd_engine::Rrd;

use crate::cache::Cache;

/// Why a merged read failed: the text goes after `RRD Error: ` or similar.
#[derive(Debug)]
pub struct ReadError(pub String);

/// The file with its pending values applied in memory.
pub type Merged<'f> = Rrd<OverlayStore<&'f File>>;

struct Snapshot {
    gen: Option<u64>,
    values: Vec<String>,
    kept: Option<Box<KeptHeader>>,
}

fn values_snapshot(cache: &Cache, key: &str) -> Option<Snapshot> {
    let shard = cache.shard(key);
    match shard.get(key) {
        None => Some(Snapshot { gen: None, values: Vec::new(), kept: None }),
        Some(e) if e.is_flushing() => None,
        Some(e) => Some(Snapshot {
            gen: Some(e.flushed_gen()),
            values: e.unwritten().map(str::to_string).collect(),
            kept: e.kept_header().map(|k| Box::new(k.clone())),
        }),
    }
}

fn unchanged(cache: &Cache, key: &str, gen: Option<u64>) -> bool {
    let shard = cache.shard(key);
    match (shard.get(key), gen) {
        (None, None) => true,
        (Some(e), Some(g)) => !e.is_flushing() && e.flushed_gen() == g,
        // The entry appeared or went: its values may have moved.
        (Some(e), None) => !e.has_pending() && !e.is_flushing(),
        (None, Some(_)) => false,
    }
}

/// Runs `read` on the file at `key` with its pending values applied (see
/// the module doc), retrying while a flush of the file gets in the way.
pub fn with_merged<T>(
    cache: &Cache,
    key: &str,
    mut read: impl FnMut(&Merged<'_>) -> Result<T, ReadError>,
) -> Result<T, ReadError> {
    let path = Path::new(key);
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let Some(snap) = values_snapshot(cache, key) else {
            // A flush of this file is running; it takes milliseconds.
            std::thread::sleep(Duration::from_millis(2));
            continue;
        };
        let file = open(cache, key)?;
        let _ = advise(&file, Advice::Random, 0, 0);
        let mut rrd = match KeptHeader::current_header(snap.kept.as_deref(), path) {
            Some(header) => Rrd { path: path.to_path_buf(), store: OverlayStore::new(&file), header },
            None => Rrd::from_store(path, OverlayStore::new(&file)).map_err(|e| ReadError(e.to_string()))?,
        };
        if !snap.values.is_empty() {
            let opts = UpdateOptions { template: None, skip_past_updates: true };
            // An argument that fails here fails the same way when flushed; the
            // values before it are applied in both cases.
            let _ = update_rrd(&mut rrd, &snap.values, &opts, false, Now::system());
        }
        let answer = read(&rrd);
        if unchanged(cache, key, snap.gen) || attempt > 1000 {
            return answer;
        }
    }
}

/// Opens `key` for reading through the cache's confinement (`-B`),
/// without blocking (the root opens with `O_NONBLOCK`), and refuses
/// anything but a regular file before reading a byte of it.
fn open(cache: &Cache, key: &str) -> Result<File, ReadError> {
    let file = cache.root.open(Path::new(key), false).map_err(|e| {
        if Root::is_escape(&e) {
            ReadError(format!("{key}: Permission denied (outside the base directory)"))
        } else {
            ReadError(format!("opening '{key}': {}", rrd_lang::ctext::io_text(&e)))
        }
    })?;
    let meta =
        file.metadata().map_err(|e| ReadError(format!("stat '{key}': {}", rrd_lang::ctext::io_text(&e))))?;
    if !meta.is_file() {
        return Err(ReadError(format!("Not a regular file: {key}")));
    }
    Ok(file)
}

/// The file's last update time as it will be once its pending values are
/// written (the file's own when none are pending), as `rrdtool last`
/// prints it after a flush. Reads the header only: the pending values are
/// applied to an overlay, whose writes stay in memory.
pub fn last_update(cache: &Cache, key: &str) -> Result<i64, ReadError> {
    with_merged(cache, key, |rrd| Ok(rrd.header.live().last_up))
}
