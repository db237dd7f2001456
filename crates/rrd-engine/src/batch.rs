//! Updating many files quickly: open files kept across updates (bounded),
//! readahead turned off, and the pages the next updates need fetched many
//! at once.
//!
//! Why: an update needs its header page and the pages of the rows it writes
//! (seed 000: three pages for an MRTG file, where default readahead pulls
//! 16–28). On a cold cache each of those is a disk read; done one at a time
//! the disk gives 13k reads/s, done many at once it gives 114k. So before
//! applying a batch of updates in order, [`BatchUpdater::prefetch`] issues
//! `POSIX_FADV_WILLNEED` for every header page (the kernel reads them in
//! parallel), then reads the headers, plans each update with the real
//! update arithmetic ([`crate::plan`]), and issues WILLNEED for exactly the
//! row pages those updates will write. Nothing else is read.
//!
//! Deliberately absent: any caching of header contents between calls. A
//! header is re-read (from the page cache) for every update, so a file
//! changed by another program between two updates is never clobbered.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::pagecache::{advise, Advice};
use crate::plan;
use crate::rrd::Rrd;
use crate::store::Store;
use crate::update::{self, Now, UpdateOptions, UpdateReport};

/// One `update` of one file.
#[derive(Clone, Debug)]
pub struct UpdateRequest {
    pub path: PathBuf,
    pub args: Vec<String>,
    pub opts: UpdateOptions,
}

impl Store for &File {
    fn len(&self) -> std::io::Result<u64> {
        (*self).len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        Store::read_at(*self, buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        Store::write_at(*self, buf, offset)
    }
}

/// Files kept open for reading and writing, with readahead off, at most
/// `max_open` at a time.
///
/// When full, an arbitrary open file is closed (slot chosen by a cheap
/// pseudo-random sequence), not the least recently used one: the usual
/// pattern is a pass over all N files, one update each, and with N larger
/// than the cache LRU misses on every single update, while random eviction
/// keeps about `max_open / N` of them hitting. Both operations are O(1).
pub struct OpenFiles {
    /// Path -> slot in `slots`.
    index: HashMap<PathBuf, usize>,
    slots: Vec<(PathBuf, File)>,
    max_open: usize,
    rng: u64,
}

impl OpenFiles {
    pub fn new(max_open: usize) -> OpenFiles {
        OpenFiles {
            index: HashMap::new(),
            slots: Vec::new(),
            max_open: max_open.max(1),
            rng: 0x9e37_79b9_7f4a_7c15,
        }
    }

    /// The open file for `path`, opening it (with `POSIX_FADV_RANDOM`) if needed.
    pub fn get(&mut self, path: &Path) -> Result<&File> {
        if let Some(&slot) = self.index.get(path) {
            return Ok(&self.slots[slot].1);
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
        // Readahead would pull 16-32 pages per update where 2-3 are needed.
        let _ = advise(&file, Advice::Random, 0, 0);
        let slot = if self.slots.len() < self.max_open {
            self.slots.push((path.to_path_buf(), file));
            self.slots.len() - 1
        } else {
            // xorshift64: any slot will do, it only has to be cheap and spread.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let victim = (self.rng % self.slots.len() as u64) as usize;
            let (old_path, _old_file) =
                std::mem::replace(&mut self.slots[victim], (path.to_path_buf(), file));
            self.index.remove(&old_path);
            victim
        };
        self.index.insert(path.to_path_buf(), slot);
        Ok(&self.slots[slot].1)
    }

    /// Forgets an open file (after an error, or when it was replaced).
    pub fn close(&mut self, path: &Path) {
        if let Some(slot) = self.index.remove(path) {
            self.slots.swap_remove(slot);
            if slot < self.slots.len() {
                let moved = self.slots[slot].0.clone();
                self.index.insert(moved, slot);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// Applies updates to many files through an [`OpenFiles`] cache.
pub struct BatchUpdater {
    pub files: OpenFiles,
}

impl BatchUpdater {
    pub fn new(max_open: usize) -> BatchUpdater {
        BatchUpdater { files: OpenFiles::new(max_open) }
    }

    /// Asks the kernel for every page `requests` will touch, many files at
    /// once: first the header pages, then (after reading the headers) the
    /// row pages each update will write. Errors are ignored here: the update
    /// itself reports them.
    pub fn prefetch(&mut self, requests: &[&UpdateRequest]) {
        let page = plan::PAGE_LEN;
        for req in requests {
            if let Ok(file) = self.files.get(&req.path) {
                let _ = advise(file, Advice::WillNeed, 0, page);
            }
        }
        let now = Now::system();
        for req in requests {
            let Ok(file) = self.files.get(&req.path) else { continue };
            let Ok(rrd) = Rrd::from_store(&req.path, file) else { continue };
            let Ok(p) = plan::plan_update(&rrd.header, &req.args, &req.opts, now) else { continue };
            for pg in p.write_pages() {
                let _ = advise(file, Advice::WillNeed, pg * page, page);
            }
        }
    }

    /// Applies one update (reading its header, writing its rows and live header).
    pub fn update(&mut self, req: &UpdateRequest, verbose: bool) -> Result<UpdateReport> {
        let locking = crate::rrd::Locking::from_env();
        let file = self.files.get(&req.path)?;
        // The file stays open between updates, so the lock is taken and
        // released around each one, as a fresh open/close would.
        crate::rrd::lock_file(file, &req.path, true, false, locking)?;
        let result = Rrd::from_store(&req.path, file)
            .and_then(|mut rrd| update::update_rrd(&mut rrd, &req.args, &req.opts, verbose, Now::system()));
        let _ = crate::rrd::lock_file(file, &req.path, true, true, locking);
        if result.is_err() {
            self.files.close(&req.path);
        }
        result
    }

    /// Prefetches for all of `requests`, then applies them in order.
    pub fn update_all(&mut self, requests: &[UpdateRequest]) -> Vec<Result<UpdateReport>> {
        let refs: Vec<&UpdateRequest> = requests.iter().collect();
        self.prefetch(&refs);
        requests.iter().map(|r| self.update(r, false)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::create::{create, CreateOptions};

    /// The cache stays bounded, and every lookup returns the file of the
    /// path asked for, across evictions and explicit closes.
    #[test]
    fn open_files_map_paths_to_their_files() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..10).map(|i| dir.path().join(format!("f{i}"))).collect();
        for p in &paths {
            std::fs::write(p, b"x").unwrap();
        }
        let mut files = OpenFiles::new(3);
        for round in 0..5 {
            for (i, p) in paths.iter().enumerate() {
                let ino = files.get(p).unwrap().metadata().unwrap().ino();
                assert_eq!(ino, std::fs::metadata(p).unwrap().ino(), "round {round} file {i}");
                assert!(files.len() <= 3);
                if (i + round) % 4 == 0 {
                    files.close(p);
                }
            }
        }
        for p in &paths {
            let ino = files.get(p).unwrap().metadata().unwrap().ino();
            assert_eq!(ino, std::fs::metadata(p).unwrap().ino());
        }
    }

    /// A batch gives the same files as updating one call at a time.
    #[test]
    fn batch_equals_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let defs: Vec<String> = ["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10", "RRA:MAX:0.5:3:10"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let opts = CreateOptions { start: Some(1_000_000_000), step_secs: Some(300), ..Default::default() };
        let mut reqs = Vec::new();
        for i in 0..20 {
            let p = dir.path().join(format!("f{i}.rrd"));
            create(&p, &opts, &defs, 0).unwrap();
            let q = dir.path().join(format!("g{i}.rrd"));
            std::fs::copy(&p, &q).unwrap();
            let args: Vec<String> =
                (1..=5).map(|k| format!("{}:{}", 1_000_000_000 + 300 * k, i * k)).collect();
            update::update_file(&q, &args, &UpdateOptions::default(), false).unwrap();
            reqs.push(UpdateRequest { path: p, args, opts: UpdateOptions::default() });
        }
        let mut b = BatchUpdater::new(4);
        for r in b.update_all(&reqs) {
            assert!(r.unwrap().error.is_none());
        }
        assert!(b.files.len() <= 4);
        for i in 0..20 {
            let a = std::fs::read(dir.path().join(format!("f{i}.rrd"))).unwrap();
            let g = std::fs::read(dir.path().join(format!("g{i}.rrd"))).unwrap();
            assert_eq!(a, g, "file {i}");
        }
    }
}
