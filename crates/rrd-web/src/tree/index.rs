//! Directory listings, read when asked and kept while unchanged.
//!
//! A page lists one directory: its subdirectories and its `.rrd` files,
//! sorted by name. Reading it is one `readdir` pass (the entry types come
//! with it; only symbolic links are `stat`ed, to tell a directory from a
//! file), so a directory of 100,000 files lists in well under a second
//! and no request walks the tree. A listing is kept per directory with
//! the directory's mtime: the next request `stat`s the directory once and
//! reuses the listing while the mtime is unchanged, so new files show up
//! on the next request without a restart.
//!
//! Bounded: at most [`MAX_CACHED_DIRS`] listings are kept (the cache is
//! emptied when full: simple, and a refill costs one `readdir` each), and
//! a directory with more than [`MAX_ENTRIES`] entries is listed up to
//! that many.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Listings kept at once.
pub const MAX_CACHED_DIRS: usize = 4096;

/// Entries read from one directory at most (about 100 bytes each).
pub const MAX_ENTRIES: usize = 1_000_000;

/// One directory's subdirectories and RRD files, each sorted by name.
#[derive(Debug, Default)]
pub struct Listing {
    pub dirs: Vec<OsString>,
    pub files: Vec<OsString>,
    /// More entries than [`MAX_ENTRIES`] were there.
    pub truncated: bool,
}

struct Cached {
    mtime: SystemTime,
    listing: Arc<Listing>,
}

/// The kept listings.
pub struct Index {
    cap: usize,
    kept: Mutex<HashMap<PathBuf, Cached>>,
}

impl Index {
    pub fn new(cap: usize) -> Index {
        Index { cap: cap.max(1), kept: Mutex::new(HashMap::new()) }
    }

    /// The listing of `dir` (a canonical directory), read again only when
    /// its mtime changed since it was kept.
    pub fn list(&self, dir: &Path) -> std::io::Result<Arc<Listing>> {
        let mtime = std::fs::metadata(dir)?.modified()?;
        if let Some(c) = self.lock().get(dir) {
            if c.mtime == mtime {
                return Ok(c.listing.clone());
            }
        }
        let listing = Arc::new(read(dir)?);
        let mut kept = self.lock();
        if kept.len() >= self.cap {
            kept.clear();
        }
        kept.insert(dir.to_path_buf(), Cached { mtime, listing: listing.clone() });
        Ok(listing)
    }

    /// How many listings are kept (for tests and `/metrics`).
    pub fn kept(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Cached>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether a file name is an RRD file's.
pub fn is_rrd(name: &[u8]) -> bool {
    name.len() > 4 && name.ends_with(b".rrd")
}

fn read(dir: &Path) -> std::io::Result<Listing> {
    let mut l = Listing::default();
    for entry in std::fs::read_dir(dir)? {
        if l.dirs.len() + l.files.len() >= MAX_ENTRIES {
            l.truncated = true;
            break;
        }
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        if name.as_bytes().starts_with(b".") {
            continue;
        }
        let Ok(mut kind) = entry.file_type() else { continue };
        if kind.is_symlink() {
            // Followed only to tell what it is; opening it is confined.
            match std::fs::metadata(entry.path()) {
                Ok(m) => kind = m.file_type(),
                Err(_) => continue,
            }
        }
        if kind.is_dir() {
            l.dirs.push(name);
        } else if kind.is_file() && is_rrd(name.as_bytes()) {
            l.files.push(name);
        }
    }
    l.dirs.sort_unstable();
    l.files.sort_unstable();
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_shows_up_and_an_unchanged_directory_is_not_read_again() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.rrd"), b"").unwrap();
        std::fs::write(d.path().join("notes.txt"), b"").unwrap();
        std::fs::create_dir(d.path().join("host")).unwrap();
        let index = Index::new(8);
        let first = index.list(d.path()).unwrap();
        assert_eq!((first.dirs.len(), first.files.len()), (1, 1));
        assert!(Arc::ptr_eq(&first, &index.list(d.path()).unwrap()), "unchanged: the kept listing");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(d.path().join("b.rrd"), b"").unwrap();
        let second = index.list(d.path()).unwrap();
        assert_eq!(second.files, vec![OsString::from("a.rrd"), OsString::from("b.rrd")]);
    }

    #[test]
    fn the_cache_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        let index = Index::new(2);
        for i in 0..5 {
            let sub = d.path().join(format!("d{i}"));
            std::fs::create_dir(&sub).unwrap();
            index.list(&sub).unwrap();
            assert!(index.kept() <= 2);
        }
    }
}
