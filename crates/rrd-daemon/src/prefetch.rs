//! First touches at queue depth: the headers of files a connection is
//! about to see for the first time, read ahead many at once.
//!
//! A file's first UPDATE reads its header (rrdcached's check that it is an
//! RRD, and its last update time). When the header is not in the page
//! cache, that read waits for the disk, and a BATCH naming 20,000 files
//! the daemon has not seen since it started waits 20,000 times at queue
//! depth one (about 13k reads/s on this project's test disk, where the
//! same disk does 114k at depth 64). So when a connection meets a file it
//! does not know, it looks at the lines it has already received after
//! that one, opens the files they name that the cache does not know
//! either (at most [`WINDOW`] at a time), and asks the kernel for their
//! header pages (`POSIX_FADV_WILLNEED`, which returns at once); by the
//! time their UPDATEs come up, the reads are done or in flight together.
//! The open is the one the first UPDATE needs anyway (confined, for
//! reading and writing), so the descriptor is handed over, not reopened.
//!
//! Nothing happens on the steady path: only a line whose file is not
//! cached starts a look-ahead, so a connection updating known files pays
//! nothing. Descriptors held ahead come from one budget shared by every
//! connection (`Cache::prefetch_budget`, a quarter of what the descriptor
//! limit leaves, see `server`), so look-aheads can never starve UPDATEs,
//! flushes or the journal of descriptors. Deliberately absent: any error reporting (a file that cannot
//! be opened here is opened again by its UPDATE, which reports why).

use std::fs::File;
use std::path::Path;
use std::sync::atomic::Ordering;

use rrd_engine::pagecache::{advise, Advice};

use crate::cache::Cache;
use crate::paths::Paths;

/// Files opened ahead at most (each holds a descriptor until its UPDATE,
/// or until the connection's buffer is consumed).
pub const WINDOW: usize = 256;

/// The header bytes asked for: one page holds the whole header of most
/// files (a larger header costs one more read at the UPDATE).
const HEADER_BYTES: u64 = 4096;

#[derive(Default)]
pub struct HeaderPrefetch {
    /// Opened ahead, by cache key, header requested.
    files: foldhash::HashMap<String, File>,
    /// Offset in the connection's buffer up to which lines were looked at.
    cursor: usize,
    /// Opening failed for lack of descriptors: no look-ahead until reset.
    exhausted: bool,
    key: String,
}

impl HeaderPrefetch {
    /// The file opened ahead for `key`, if any (its descriptor goes back
    /// to the budget now: the caller closes it right after its header).
    pub fn take(&mut self, cache: &Cache, key: &str) -> Option<File> {
        if self.files.is_empty() {
            return None;
        }
        let file = self.files.remove(key)?;
        cache.prefetch_budget.fetch_add(1, Ordering::SeqCst);
        Some(file)
    }

    /// Called when the UPDATE ending at `next` in `chunk` (complete lines
    /// only) met a file the cache does not know: opens ahead the unknown
    /// files of the following lines, up to [`WINDOW`] open at once.
    pub fn ahead(&mut self, cache: &Cache, paths: &Paths, chunk: &[u8], next: usize) {
        if self.exhausted || self.files.len() >= WINDOW / 2 && self.cursor > next {
            return;
        }
        let mut at = self.cursor.max(next);
        while self.files.len() < WINDOW && at < chunk.len() {
            let Some(nl) = memchr::memchr(b'\n', &chunk[at..]) else { break };
            let line_start = at;
            let mut line = &chunk[at..at + nl];
            at += nl + 1;
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let Some((name, Some(_))) = rrd_protocol::fields::plain_update(line) else { continue };
            let Ok(name) = std::str::from_utf8(name) else { continue };
            if paths.resolve_into(name, &mut self.key).is_err()
                || self.files.contains_key(&self.key)
                || cache.shard(&self.key).contains_key(self.key.as_str())
            {
                continue;
            }
            if cache.prefetch_budget.fetch_sub(1, Ordering::SeqCst) <= 0 {
                // Others hold the budget now: try again at the next first
                // touch (this line is looked at again then).
                cache.prefetch_budget.fetch_add(1, Ordering::SeqCst);
                self.cursor = line_start;
                return;
            }
            match cache.root.open(Path::new(&self.key), true) {
                Ok(file) => {
                    // Exactly the header page; RANDOM (no readahead) is set
                    // by the header read itself (KeptHeader::read_open).
                    let _ = advise(&file, Advice::WillNeed, 0, HEADER_BYTES);
                    self.files.insert(self.key.clone(), file);
                    crate::stats::Stats::add(&cache.stats.headers_read_ahead, 1);
                }
                Err(e) => {
                    cache.prefetch_budget.fetch_add(1, Ordering::SeqCst);
                    if rrd_engine::batch::is_out_of_descriptors(&e) {
                        self.exhausted = true;
                        break;
                    }
                }
            }
        }
        self.cursor = at;
    }

    /// The connection consumed its buffer: offsets start again, and files
    /// opened for lines already handled are closed.
    pub fn reset(&mut self, cache: &Cache) {
        self.cursor = 0;
        self.exhausted = false;
        if !self.files.is_empty() {
            cache.prefetch_budget.fetch_add(self.files.len() as i64, Ordering::SeqCst);
            self.files.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// With a descriptor budget far below the lines received, every first
    /// touch after the first still finds its file opened ahead (the budget
    /// limits how many are open at once, not how many are read ahead), and
    /// the budget is whole again once the buffer is consumed.
    #[test]
    fn a_small_budget_still_reads_every_header_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let n = 60;
        let mut chunk = Vec::new();
        for i in 0..n {
            std::fs::write(base.join(format!("f{i}.rrd")), b"header").unwrap();
            chunk.extend_from_slice(format!("UPDATE f{i}.rrd 1000:1\n").as_bytes());
        }
        let cache = Cache::new(Arc::new(crate::stats::Stats::default()), 300, 0);
        cache.prefetch_budget.store(7, Ordering::SeqCst);
        let paths = Paths::new(Some(&base), false);
        let mut p = HeaderPrefetch::default();
        let (mut taken, mut at) = (0, 0);
        for i in 0..n {
            let end = at + memchr::memchr(b'\n', &chunk[at..]).unwrap() + 1;
            // As the connection does for a file it does not know.
            p.ahead(&cache, &paths, &chunk, end);
            let key = format!("{}/f{i}.rrd", base.display());
            if p.take(&cache, &key).is_some() {
                taken += 1;
            }
            assert!(cache.prefetch_budget.load(Ordering::SeqCst) >= 0);
            at = end;
        }
        assert_eq!(taken, n - 1, "every line but the first is read ahead");
        p.reset(&cache);
        assert_eq!(cache.prefetch_budget.load(Ordering::SeqCst), 7, "the budget is whole again");
    }
}
