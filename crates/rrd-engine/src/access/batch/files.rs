//! The open-file table: files kept open for reading and writing, with
//! readahead off, bounded, evicted at random (see [`OpenFiles`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::pagecache::{advise, Advice};
use crate::root::Root;
use crate::store::Store;

use super::KeptHeader;

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

/// One open file of an [`OpenFiles`] cache.
pub struct OpenFile {
    pub path: PathBuf,
    pub file: File,
    /// Device and inode of `file`, to notice a file renamed over the path;
    /// `None` until the first stamp taken through it or its second update
    /// (a file opened by path moments ago is the path's file: no check
    /// needed, no syscall spent).
    pub(super) ident: Option<(u64, u64)>,
    /// The header our last update left, when the updater keeps it here.
    pub kept: Option<KeptHeader>,
    /// Updates attempted through this descriptor (under its lock): after
    /// the first, a descriptor without `ident` has its identity checked
    /// against the path before the next update.
    pub updates: u64,
    /// The file's length as the caller's `fstat` took it when it handed the
    /// descriptor over ([`super::BatchUpdater::update_opened`]): the first header
    /// read uses it instead of another `fstat`.
    pub(super) known_len: Option<u64>,
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
    /// Path (its bytes: hashing a `Path` walks its components, which
    /// costs more than the rest of a lookup) -> slot in `slots`.
    pub(super) index: HashMap<OsString, usize>,
    pub(super) slots: Vec<OpenFile>,
    pub(super) max_open: usize,
    pub(super) rng: u64,
    /// Where files may be opened from.
    pub root: Root,
    /// Open with `O_NOATIME` where allowed (the caller owns the file, or
    /// has CAP_FOWNER; otherwise opened as usual): the header read of every
    /// update would otherwise dirty the inode for its access time (relatime
    /// refreshes it whenever it is older than the last write, so after
    /// every update), about 5% of a warm update's CPU. Off by default: the
    /// files' access times then stop moving, which rrdtool's do not.
    pub no_atime: bool,
}

impl OpenFiles {
    pub fn new(max_open: usize) -> OpenFiles {
        OpenFiles {
            index: HashMap::new(),
            slots: Vec::new(),
            max_open: max_open.max(1),
            rng: 0x9e37_79b9_7f4a_7c15,
            root: Root::Anywhere,
            no_atime: false,
        }
    }

    /// The open file for `path`, opening it (with `POSIX_FADV_RANDOM`) if needed.
    pub fn get(&mut self, path: &Path) -> Result<&File> {
        Ok(&self.entry(path)?.file)
    }

    /// The open file for `path` with what is kept about it, opening it if needed.
    pub fn entry(&mut self, path: &Path) -> Result<&mut OpenFile> {
        if let Some(&slot) = self.index.get(path.as_os_str()) {
            return Ok(&mut self.slots[slot]);
        }
        let file =
            self.open_giving_back(path).map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
        Ok(self.insert(path, file, None))
    }

    /// Opens `path`; out of descriptors (the process's limit is lower than
    /// our bound, or the caller holds many), keeps half as many open files
    /// from now on and tries again, until the open succeeds or none is
    /// left to give back: rrdtool, which keeps none, would have succeeded.
    /// Halving, not one at a time, because descriptors freed here may be
    /// taken by another thread's opens before the retry.
    fn open_giving_back(&mut self, path: &Path) -> io::Result<File> {
        loop {
            match self.open(path) {
                Err(e) if is_out_of_descriptors(&e) && !self.slots.is_empty() => {
                    self.max_open = (self.slots.len() / 2).max(1);
                    while self.slots.len() >= self.max_open {
                        self.evict_one();
                    }
                }
                r => return r,
            }
        }
    }

    /// Keeps `file`, which the caller opened at `path` ([`open_for_update`])
    /// moments ago and whose length (`len_bytes`) it has just taken, as
    /// `path`'s open file; a path open here already keeps its own (`file` is
    /// closed). The first header read through it takes that length instead
    /// of another `fstat`.
    pub fn adopt(&mut self, path: &Path, file: File, len_bytes: u64) {
        if !self.contains(path) {
            self.insert(path, file, Some(len_bytes));
        }
    }

    /// Keeps `file`, opened at `path` by the caller, as `path`'s open file
    /// (closing another when full); `known_len` is its length if the caller
    /// has just taken it.
    pub(super) fn insert(&mut self, path: &Path, file: File, known_len: Option<u64>) -> &mut OpenFile {
        let open =
            OpenFile { path: path.to_path_buf(), file, ident: None, kept: None, updates: 0, known_len };
        let slot = if self.slots.len() < self.max_open {
            self.slots.push(open);
            self.slots.len() - 1
        } else {
            let victim = self.victim();
            let old = std::mem::replace(&mut self.slots[victim], open);
            self.index.remove(old.path.as_os_str());
            victim
        };
        self.index.insert(path.as_os_str().to_owned(), slot);
        &mut self.slots[slot]
    }

    /// Opens `path` as [`OpenFiles::entry`] would, without keeping it.
    pub(super) fn open(&self, path: &Path) -> std::io::Result<File> {
        open_for_update(&self.root, self.no_atime, path)
    }

    /// A slot to reuse: any will do, it only has to be cheap and spread
    /// (xorshift64). `slots` is not empty.
    pub(super) fn victim(&mut self) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % self.slots.len() as u64) as usize
    }

    /// Forgets an open file (after an error, or when it was replaced).
    pub fn close(&mut self, path: &Path) {
        if let Some(slot) = self.index.remove(path.as_os_str()) {
            self.slots.swap_remove(slot);
            if slot < self.slots.len() {
                let moved = self.slots[slot].path.clone();
                self.index.insert(moved.into_os_string(), slot);
            }
        }
    }

    /// Whether `path` is open here.
    pub fn contains(&self, path: &Path) -> bool {
        self.index.contains_key(path.as_os_str())
    }

    /// The open file for `path`, without opening it.
    pub fn peek_mut(&mut self, path: &Path) -> Option<&mut OpenFile> {
        let slot = *self.index.get(path.as_os_str())?;
        Some(&mut self.slots[slot])
    }

    /// Closes one open file, chosen as `entry` chooses when full (callers
    /// that bound the cache below `max_open` themselves).
    pub fn evict_one(&mut self) {
        if self.slots.is_empty() {
            return;
        }
        let victim = self.victim();
        let path = self.slots[victim].path.clone();
        self.close(&path);
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// Opens `path` for an update: reading and writing, through `root`,
/// without access-time updates when `no_atime` is asked and allowed (see
/// [`OpenFiles::no_atime`]), readahead off (it would pull 16-32 pages per
/// update where 2-3 are needed). What [`OpenFiles`] does on a miss, for a
/// caller that opens ahead of the update ([`super::BatchUpdater::update_opened`]).
pub fn open_for_update(root: &Root, no_atime: bool, path: &Path) -> io::Result<File> {
    let file = 'open: {
        if no_atime && matches!(root, Root::Anywhere) {
            use std::os::unix::fs::OpenOptionsExt;
            let opts =
                std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOATIME).open(path);
            // Not allowed (EPERM: not the owner): as usual below, so that
            // errors are those of a plain open.
            if let Ok(f) = opts {
                break 'open f;
            }
        }
        root.open(path, true)?
    };
    let _ = advise(&file, Advice::Random, 0, 0);
    Ok(file)
}

/// Whether an open failed for lack of descriptors, the process's
/// (`EMFILE`) or the system's (`ENFILE`): what a cache of open files can
/// mend by giving some back.
pub fn is_out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}
