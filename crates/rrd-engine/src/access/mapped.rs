//! Updating many files through kept memory mappings: each file is mapped
//! once (`MAP_SHARED`, read/write, `MADV_RANDOM`), its descriptor closed
//! right after, and an update then costs one `stat(path)` plus memory
//! copies: no `open`, `pread`, `pwrite` or `close`.
//!
//! Why: a warm update through pread/pwrite is bounded by its system calls
//! (docs/BENCHMARKS.md, "Why warm stops at ~2×": 12 µs per update for
//! open + fadvise + fstat + pread + 2 pwrite + close, 6.7 µs with the files
//! kept open, 2.1 µs with them kept mapped). Keeping 20,000 descriptors open
//! is not possible under a 20,000 `RLIMIT_NOFILE`; a mapping needs no
//! descriptor (the limit is `vm.max_map_count`, 65,530 by default).
//! Measured (docs/BENCHMARKS.md, "Follow-up: mapped files"): 5 µs per warm
//! update with kept headers while the pages stay dirty, but about 14 µs
//! once the kernel has written them back (the next store takes a write
//! fault, `ext4_page_mkwrite`); cold, it reads exactly librrd's pages, one
//! synchronous fault at a time, so the batch updater remains the cold mode.
//!
//! What an update does ([`MappedFiles::update`]):
//! 1. `stat(path)` (one `statx`). If the path's device and inode differ from
//!    the mapped file's, the file was replaced (`rrdtool create`, `restore`,
//!    anything that renames a new file over the path): the old mapping is
//!    dropped *before* any access and the path is mapped again, so nothing
//!    is ever written through a stale mapping to an unlinked inode. If the
//!    size differs from the mapping's length, the file was truncated or
//!    extended: it is mapped again at its new length (or reported, below).
//! 2. The header: decoded from the mapping through the same
//!    [`Rrd::from_store`] every command uses (the static header, the counts,
//!    and the file length, i.e. the mapping's length, against the layout,
//!    before any row is touched); or, with [`MappedFiles::keep_headers`], the
//!    header this cache decoded or produced last time, *if the header bytes
//!    in the mapping are still exactly the bytes it corresponds to* (one
//!    `memcmp` of the header, 2,624 bytes for perftest). Decoding is a pure
//!    function of those bytes and the file length (checked in step 1), so a
//!    kept header that passes the comparison is the header a decode would
//!    give: there is no staleness question, whoever wrote the file since.
//!    The image compared is built from our own state (the bytes decoded,
//!    then the live header we encoded and stored), never read back after a
//!    write, so a foreign write racing with ours cannot be mistaken for our
//!    own. Measured: a decode costs 1.4 µs, the comparison 0.05 µs, out of
//!    6 µs for a whole warm update; a kept header costs its image plus the
//!    decoded struct, about 6 KB per perftest file.
//! 3. The update math is the engine's [`Updater`](crate::update::Updater), as in
//!    [`crate::update::update_rrd`]: rows are written once each in file
//!    order, then the live header, byte for byte what
//!    [`crate::update::update_file`] writes (the tests compare).
//!
//! The cache is bounded by a number of files and by mapped bytes (address
//! space; mappings cost page-table and VMA memory, not file pages). When
//! full, an arbitrary mapping is dropped (a cheap pseudo-random slot, as in
//! [`crate::batch::OpenFiles`]: LRU misses on every update of a cyclic pass
//! over more files than the cache holds, random eviction keeps some hits).
//!
//! Safety and its limits (read this before using it on shared files):
//! - **Truncation (SIGBUS).** Touching a page of a mapping beyond the end of
//!   its file raises `SIGBUS`, which kills the process. A truncation that
//!   happened before an update's `stat` is caught by the size check and
//!   reported as a format error (the file is shorter than its layout), never
//!   accessed. A truncation by another program *between* that `stat` and the
//!   end of the update's copies (a window of a few microseconds) is not
//!   caught and raises `SIGBUS`. rrdtool 1.7.2 maps files the same way
//!   (`mmap` + `MADV_RANDOM`) and has the same window; a writer that
//!   follows rrdtool's rules never truncates a live RRD (create and restore
//!   write a new file and rename it over the old, which step 1 handles).
//! - **No locks.** A file without a descriptor cannot hold an fcntl lock, so
//!   updates here take none: rrdtool, rrdcached or rrdscale processes
//!   updating the same files at the same time are *not* excluded, and a
//!   reader taking rrdtool's read lock can see an update half done. Mapped
//!   access is therefore an opt-in mode for the single owner of a set of
//!   files (the bench, pipe mode with `RRDSCALE_ACCESS=mmap`, a daemon's
//!   flusher over its own files). The defaults of `rrdscale update` and pipe mode
//!   keep rrdtool's locking pread/pwrite path.
//! - **Timestamps.** Stores into a shared mapping update the file's mtime
//!   when a clean page is first dirtied (the kernel's `page_mkwrite`), not on
//!   every update: an update landing on pages still dirty from the previous
//!   one leaves mtime as it was until the next write-back. Tools that detect
//!   changes by mtime (rsync, and [`crate::batch::KeptHeader`] stamps of a
//!   *concurrent* batch updater) lag by up to one write-back interval.
//! - **Durability** is the page cache's, as with `pwrite`: call
//!   [`MappedFiles::sync`] (`msync(MS_SYNC)`) to wait for the disk.
//! - **Never panics on file content.** Every copy is bounds-checked against
//!   the mapping's length (an out-of-range access is an `UnexpectedEof`
//!   error) and the header is validated before use as everywhere else.
//!
//! Prefetch ([`MappedFiles::prefetch`]): without it a mapped update faults
//! its non-resident pages in one at a time (a synchronous disk read each:
//! slow on a first pass and on passes where archives consolidate). The
//! caller hands the next updates to `prefetch`, which maps their files and
//! asks with `MADV_WILLNEED` for exactly the pages their plans name (the
//! header page unless a header is kept, then the runs of row pages each
//! update writes), in a window bounded by memory; this is
//! [`crate::batch`]'s window logic ([`crate::plan::prefetch_window`]), with
//! `madvise` in place of `fadvise`. Everything else stays `MADV_RANDOM`.
//! Prefetch reads a header through the mapping outside any update: a
//! truncation racing with it has the same `SIGBUS` window as an update's.
//!
//! Deliberately absent: any form of locking.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io;
use std::ops::Range;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rrd_sys::map::{MapAdvice, SharedMap};

use crate::batch::UpdateRequest;
use crate::error::{Error, Result};
use crate::plan;
use crate::rrd::Rrd;
use crate::store::Store;
use crate::update::{update_rrd_live, Now, UpdateOptions, UpdateReport};
use rrd_format::Header;

/// One file mapped `MAP_SHARED` read/write; unmapped when dropped.
pub struct Mapping {
    map: SharedMap,
}

impl Mapping {
    /// Maps the whole of the file at `path` (read/write, shared, random
    /// access advised) and closes the descriptor. Returns the mapping and
    /// the `(device, inode)` of the file mapped. A zero-length file cannot
    /// be mapped: it is reported as the truncated file it is.
    pub fn open(path: &Path) -> Result<(Mapping, (u64, u64))> {
        let open_err = |source| Error::Open { path: path.to_path_buf(), source };
        let io_err = |source| Error::Io { path: path.to_path_buf(), source };
        // O_NOATIME: mapping a file counts as an access, and under relatime
        // the atime of a file modified since its last access is written
        // (an inode update and a journal entry per mapping). Only the
        // file's owner (or CAP_FOWNER) may ask; others map without it.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOATIME)
            .open(path)
            .or_else(|e| match e.raw_os_error() {
                Some(libc::EPERM) => OpenOptions::new().read(true).write(true).open(path),
                _ => Err(e),
            })
            .map_err(open_err)?;
        let st = rustix::fs::fstat(&file).map_err(|e| io_err(e.into()))?;
        let ident = (st.st_dev, st.st_ino);
        let len = u64::try_from(st.st_size).unwrap_or(0);
        if len < rrd_format::layout::STAT_HEAD_LEN {
            // Let the common decoder word the error, from a pread of what
            // there is (no mapping: a zero-length one is not even allowed).
            return match Rrd::from_store(path, &file) {
                Err(e) => Err(e),
                Ok(_) => {
                    Err(Error::invalid(format!("{}: the file is too short to be an RRD", path.display())))
                }
            };
        }
        let len =
            usize::try_from(len).map_err(|_| io_err(io::Error::other("the file is too large to map")))?;
        let map = Mapping { map: SharedMap::new(&file, len).map_err(io_err)? };
        // Readahead would fault in 16-32 pages around every page an update
        // touches; it needs 2-3. Advice is best effort.
        let _ = map.map.advise(0..len, MapAdvice::Random);
        // `file` closes here; the mapping keeps the file referenced.
        Ok((map, ident))
    }

    /// Length of the mapping (the file's length when it was mapped).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Drops the process's page-table entries of the mapping
    /// (`MADV_DONTNEED`; dirty state moves to the page cache, nothing is
    /// lost), so that `POSIX_FADV_DONTNEED` on the file can then evict its
    /// pages (it skips pages still mapped). The mapping stays usable.
    pub fn unmap_pages(&self) -> io::Result<()> {
        self.map.advise(0..self.map.len(), MapAdvice::DontNeed)
    }

    /// Writes the mapping's dirty pages to the file and waits
    /// (`msync(MS_SYNC)`).
    pub fn sync(&self) -> io::Result<()> {
        self.map.sync()
    }
}

impl Store for Mapping {
    fn len(&self) -> io::Result<u64> {
        Ok(self.map.len() as u64)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.map.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.map.write_at(buf, offset)
    }
}

impl Store for &Mapping {
    fn len(&self) -> io::Result<u64> {
        Store::len(*self)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        Store::read_at(*self, buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        Store::write_at(*self, buf, offset)
    }
}

/// One mapped file of a [`MappedFiles`] cache.
struct MappedFile {
    path: PathBuf,
    map: Mapping,
    /// Device and inode of the file mapped.
    ident: (u64, u64),
    /// The decoded header and the header bytes it corresponds to.
    kept: Option<Box<KeptImage>>,
}

/// A decoded header valid while the file's first `image.len()` bytes equal
/// `image` (see the module doc, step 2).
struct KeptImage {
    image: Vec<u8>,
    header: Header,
}

impl KeptImage {
    fn matches(&self, map: &Mapping) -> bool {
        map.map.starts_with(&self.image)
    }
}

/// What a [`MappedFiles`] did (monotonic counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MappedCounters {
    /// Updates applied (successfully or with an argument error).
    pub updates: u64,
    /// Files mapped (first time, or after an eviction).
    pub maps: u64,
    /// Mappings dropped because another file now has the path.
    pub replaced: u64,
    /// Mappings dropped because the file's size changed.
    pub resized: u64,
    /// Mappings dropped to stay within the bounds.
    pub evicted: u64,
    /// Headers decoded from the mapping.
    pub headers_decoded: u64,
    /// Updates that used a kept header (its bytes matched).
    pub headers_kept: u64,
    /// Pages asked for with `MADV_WILLNEED` by [`MappedFiles::prefetch`].
    pub pages_prefetched: u64,
}

/// Default bound on mappings: half of Linux's default `vm.max_map_count`
/// (65,530), leaving the rest to the allocator, libraries and threads.
pub const DEFAULT_MAX_FILES: usize = 32_768;

/// Default bound on mapped bytes: 16 GiB of address space.
pub const DEFAULT_MAX_BYTES: u64 = 16 << 30;

/// Files kept mapped for updating, at most `max_files` and `max_bytes` at a
/// time. See the module doc for what it checks and what it does not.
pub struct MappedFiles {
    index: HashMap<PathBuf, usize>,
    slots: Vec<MappedFile>,
    max_files: usize,
    max_bytes: u64,
    mapped_bytes: u64,
    rng: u64,
    /// Keep each file's decoded header between updates, used only while the
    /// header bytes in the mapping still match (off by default: it costs
    /// about 6 KB per perftest file, which a memory-starved host would
    /// rather give to the page cache).
    pub keep_headers: bool,
    pub counters: MappedCounters,
    /// Most pages one [`MappedFiles::prefetch`] asks for (unbounded by
    /// default; see [`MappedFiles::bound_prefetch_by_memory`]).
    pub max_prefetch_pages: u64,
    /// When set, every range [`MappedFiles::prefetch`] advises is appended
    /// here as `(path, bytes)` (for tests and diagnostics).
    pub advice_log: Option<Vec<(PathBuf, Range<u64>)>>,
}

impl Default for MappedFiles {
    fn default() -> MappedFiles {
        MappedFiles::new(DEFAULT_MAX_FILES, DEFAULT_MAX_BYTES)
    }
}

impl MappedFiles {
    /// A cache of at most `max_files` mappings (at least one) and
    /// `max_bytes` mapped bytes (a single larger file is still mapped, alone).
    pub fn new(max_files: usize, max_bytes: u64) -> MappedFiles {
        MappedFiles {
            index: HashMap::new(),
            slots: Vec::new(),
            max_files: max_files.max(1),
            max_bytes,
            mapped_bytes: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
            keep_headers: false,
            counters: MappedCounters::default(),
            max_prefetch_pages: u64::MAX,
            advice_log: None,
        }
    }

    /// Files mapped now.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes mapped now.
    pub fn mapped_bytes(&self) -> u64 {
        self.mapped_bytes
    }

    /// Bounds the prefetch window by memory, as
    /// [`crate::batch::BatchUpdater::bound_prefetch_by_memory`] does.
    pub fn bound_prefetch_by_memory(&mut self) {
        self.max_prefetch_pages = plan::window_pages_for_memory();
    }

    /// Asks the kernel (`MADV_WILLNEED` on the mappings) for exactly the
    /// pages `requests` will touch, many files at once, so that their
    /// updates find them resident instead of each taking a synchronous
    /// major fault: the header page of every file whose header is not kept,
    /// then the page runs each update's plan ([`crate::plan`]) writes. The
    /// window logic is [`crate::batch`]'s ([`plan::prefetch_window`]).
    /// Maps the files not mapped yet. Returns how many leading requests
    /// were covered within [`MappedFiles::max_prefetch_pages`] (at least
    /// one when there are any); the caller prefetches the rest later.
    /// Errors are ignored: the updates report them.
    pub fn prefetch(&mut self, requests: &[&UpdateRequest]) -> usize {
        let budget = self.max_prefetch_pages;
        plan::prefetch_window(requests, budget, &mut MappedTarget { files: self, requests })
    }

    /// `MADV_WILLNEED` on pages `first..first + count` of `slot`'s mapping
    /// (clipped to it).
    fn advise_pages(&mut self, slot: usize, first: u64, count: u64) {
        let f = &self.slots[slot];
        let len = f.map.len() as u64;
        let start = first.saturating_mul(plan::PAGE_LEN).min(len);
        let end = first.saturating_add(count).saturating_mul(plan::PAGE_LEN).min(len);
        if start >= end {
            return;
        }
        // The start is page-aligned; WILLNEED on a shared file mapping only
        // starts reading the file's pages into the cache. Best effort.
        let _ = f.map.map.advise(start as usize..end as usize, MapAdvice::WillNeed);
        self.counters.pages_prefetched += (end - start).div_ceil(plan::PAGE_LEN);
        if let Some(log) = &mut self.advice_log {
            log.push((f.path.clone(), start..end));
        }
    }

    /// Updates `path` with `args`, like [`crate::update::update_file`]
    /// (same errors, same bytes written), through its kept mapping.
    pub fn update(
        &mut self,
        path: &Path,
        args: &[String],
        opts: &UpdateOptions,
        verbose: bool,
    ) -> Result<UpdateReport> {
        self.update_at(path, args, opts, verbose, Now::system())
    }

    /// [`MappedFiles::update`] with the time `N` means given.
    pub fn update_at(
        &mut self,
        path: &Path,
        args: &[String],
        opts: &UpdateOptions,
        verbose: bool,
        now: Now,
    ) -> Result<UpdateReport> {
        let slot = self.current(path)?;
        let keep = self.keep_headers;
        let f = &mut self.slots[slot];
        let kept = f.kept.take().filter(|k| keep && k.matches(&f.map));
        let (rrd, image) = match kept {
            Some(k) => {
                self.counters.headers_kept += 1;
                let KeptImage { image, header } = *k;
                (Ok(Rrd { path: path.to_path_buf(), store: &f.map, header }), Some(image))
            }
            None => {
                self.counters.headers_decoded += 1;
                match decode_snapshot(path, &f.map, keep) {
                    Ok((header, image)) => {
                        (Ok(Rrd { path: path.to_path_buf(), store: &f.map, header }), image)
                    }
                    Err(e) => (Err(e), None),
                }
            }
        };
        let mut new_kept = None;
        let result = rrd.and_then(|mut rrd| {
            let (report, live) = update_rrd_live(&mut rrd, args, opts, verbose, now)?;
            if let Some(mut image) = image {
                let off = rrd.layout().live_head_off as usize;
                if let Some(dst) = image.get_mut(off..off + live.len()) {
                    dst.copy_from_slice(&live);
                    let Rrd { header, .. } = rrd;
                    new_kept = Some(Box::new(KeptImage { image, header }));
                }
            }
            Ok(report)
        });
        // Nothing since `current` moved the slot (only `forget`, below, does).
        self.slots[slot].kept = new_kept;
        match &result {
            Ok(_) => self.counters.updates += 1,
            // A file that does not decode is not kept mapped: its next
            // update maps it afresh (it may have been repaired by then).
            Err(Error::Format { .. }) | Err(Error::Io { .. }) => self.forget(path),
            Err(_) => {}
        }
        result
    }

    /// The slot of `path`'s mapping, checked against `stat(path)` and
    /// (re)made if missing, replaced or resized.
    fn current(&mut self, path: &Path) -> Result<usize> {
        let st =
            rustix::fs::stat(path).map_err(|e| Error::Open { path: path.to_path_buf(), source: e.into() })?;
        let ident = (st.st_dev, st.st_ino);
        let size = u64::try_from(st.st_size).unwrap_or(0);
        if let Some(&slot) = self.index.get(path) {
            let f = &self.slots[slot];
            if f.ident == ident && f.map.len() as u64 == size {
                return Ok(slot);
            }
            if f.ident != ident {
                self.counters.replaced += 1;
            } else {
                self.counters.resized += 1;
            }
            // Dropped before anything is read: a shrunk file's mapping must
            // never be touched past the new end (SIGBUS), a replaced file's
            // never written (the update would go to the unlinked inode).
            self.remove_slot(slot);
        }
        let (map, ident) = Mapping::open(path)?;
        let len = map.len() as u64;
        while !self.slots.is_empty()
            && (self.slots.len() >= self.max_files || self.mapped_bytes + len > self.max_bytes)
        {
            // xorshift64: any slot will do, it only has to be cheap and spread.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let victim = (self.rng % self.slots.len() as u64) as usize;
            self.remove_slot(victim);
            self.counters.evicted += 1;
        }
        self.counters.maps += 1;
        self.mapped_bytes += len;
        self.slots.push(MappedFile { path: path.to_path_buf(), map, ident, kept: None });
        let slot = self.slots.len() - 1;
        self.index.insert(path.to_path_buf(), slot);
        Ok(slot)
    }

    fn remove_slot(&mut self, slot: usize) {
        let old = self.slots.swap_remove(slot);
        self.index.remove(&old.path);
        self.mapped_bytes -= old.map.len() as u64;
        if slot < self.slots.len() {
            let moved = self.slots[slot].path.clone();
            self.index.insert(moved, slot);
        }
    }

    /// Drops `path`'s mapping, if any.
    pub fn forget(&mut self, path: &Path) {
        if let Some(&slot) = self.index.get(path) {
            self.remove_slot(slot);
        }
    }

    /// Drops every mapping.
    pub fn clear(&mut self) {
        self.index.clear();
        self.slots.clear();
        self.mapped_bytes = 0;
    }

    /// Drops every kept header (they are rebuilt by the next updates).
    pub fn drop_kept_headers(&mut self) {
        for f in &mut self.slots {
            f.kept = None;
        }
    }

    /// Whether `path` is mapped now.
    pub fn contains(&self, path: &Path) -> bool {
        self.index.contains_key(path)
    }

    /// `msync(MS_SYNC)` of `path`'s mapping (nothing when it is not mapped:
    /// then nothing of ours is pending in it either, a dropped mapping's
    /// dirty pages having moved to the page cache, which `fdatasync` of the
    /// file covers).
    pub fn sync(&self, path: &Path) -> Result<()> {
        match self.index.get(path) {
            Some(&slot) => {
                self.slots[slot].map.sync().map_err(|source| Error::Io { path: path.to_path_buf(), source })
            }
            None => Ok(()),
        }
    }

    /// Drops the page-table entries of every mapping (see
    /// [`Mapping::unmap_pages`]), keeping the mappings: afterwards the
    /// files' pages can be evicted from the page cache like unmapped ones.
    pub fn unmap_pages(&self) {
        for f in &self.slots {
            let _ = f.map.unmap_pages();
        }
    }
}

/// [`MappedFiles::prefetch`]'s access to files: `madvise` on the mappings.
struct MappedTarget<'a, 'r> {
    files: &'a mut MappedFiles,
    requests: &'a [&'r UpdateRequest],
}

impl plan::PrefetchTarget for MappedTarget<'_, '_> {
    fn ask_header(&mut self, i: usize) -> u64 {
        let path = &self.requests[i].path;
        // A kept header was compared against the header page by the last
        // update, which left it resident and mapped; planning on it reads
        // nothing from the mapping, so the `stat` (which the update does
        // anyway) is not needed either.
        let kept = |files: &MappedFiles| {
            files.keep_headers && files.index.get(path).is_some_and(|&slot| files.slots[slot].kept.is_some())
        };
        if kept(self.files) {
            return 0;
        }
        let Ok(slot) = self.files.current(path) else { return 0 };
        if kept(self.files) {
            return 0;
        }
        self.files.advise_pages(slot, 0, 1);
        1
    }

    fn with_header(&mut self, i: usize, f: &mut dyn FnMut(&Header, &[u64])) {
        let path = &self.requests[i].path;
        let Some(&slot) = self.files.index.get(path) else { return };
        let file = &self.files.slots[slot];
        match &file.kept {
            // Not checked against the mapping: a stale one only makes the
            // prefetch miss; the update itself checks.
            Some(k) if self.files.keep_headers => f(&k.header, &[]),
            // Waits for the header page asked for above.
            _ => {
                if let Ok(rrd) = Rrd::from_store(path, &file.map) {
                    f(&rrd.header, &[]);
                }
            }
        }
    }

    fn ask(&mut self, i: usize, first: u64, count: u64) {
        if let Some(&slot) = self.files.index.get(&self.requests[i].path) {
            self.files.advise_pages(slot, first, count);
        }
    }
}

/// Decodes the header from the mapping. With `snapshot`, the header bytes
/// are copied out first and decoded from the copy, which is returned: the
/// image the decoded header corresponds to, whatever anyone stores into the
/// mapping meanwhile. Errors are exactly [`Rrd::from_store`]'s.
fn decode_snapshot(path: &Path, map: &Mapping, snapshot: bool) -> Result<(Header, Option<Vec<u8>>)> {
    if !snapshot {
        let rrd = Rrd::from_store(path, map)?;
        return Ok((rrd.header, None));
    }
    let stat_len = rrd_format::layout::STAT_HEAD_LEN as usize;
    let mut image = vec![0u8; stat_len.min(map.len())];
    let header_len =
        match map.read_at(&mut image, 0).ok().and_then(|_| rrd_format::StatHead::decode(&image).ok()) {
            Some(sh) if sh.header_len() <= map.len() as u64 => sh.header_len() as usize,
            // Let the common path find and word the error.
            _ => return decode_snapshot(path, map, false).map(|(h, _)| (h, None)),
        };
    image.resize(header_len, 0);
    map.read_at(&mut image[stat_len..], stat_len as u64)
        .map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    let header = Header::decode(&image, map.len() as u64)
        .map_err(|source| Error::Format { path: path.to_path_buf(), source })?;
    Ok((header, Some(image)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testfile::{create_file as make, create_with_copies, perftest_arg, PERFTEST_LIKE, START};
    use crate::update::update_file;

    fn arg(k: u64) -> Vec<String> {
        vec![perftest_arg(k)]
    }

    /// Mapped updates write exactly the bytes of direct updates, step by
    /// step, across evictions of a tiny cache.
    #[test]
    fn mapped_equals_direct() {
        for keep in [false, true] {
            mapped_equals_direct_with(keep);
        }
    }

    fn mapped_equals_direct_with(keep: bool) {
        let dir = tempfile::tempdir().unwrap();
        let mut files = MappedFiles::new(3, u64::MAX);
        files.keep_headers = keep;
        let mut pairs = Vec::new();
        for i in 0..6 {
            let a = make(dir.path(), &format!("m{i}.rrd"), &PERFTEST_LIKE);
            let b = dir.path().join(format!("d{i}.rrd"));
            std::fs::copy(&a, &b).unwrap();
            pairs.push((a, b));
        }
        for k in 1..=12 {
            for (a, b) in &pairs {
                let r = files.update(a, &arg(k), &UpdateOptions::default(), false).unwrap();
                assert!(r.error.is_none());
                update_file(b, &arg(k), &UpdateOptions::default(), false).unwrap();
                assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "step {k}");
                assert!(files.len() <= 3);
            }
        }
        assert!(files.counters.evicted > 0, "{:?}", files.counters);
        assert_eq!(files.counters.updates, 72);
        assert_eq!(files.counters.headers_kept > 0, keep, "{:?}", files.counters);
    }

    /// A kept header is used while the file's header bytes are ours, and
    /// not after anyone else wrote the file (here: direct updates, and a
    /// `tune`-like change of a static field in place).
    #[test]
    fn kept_headers_follow_foreign_writes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, [b]) = create_with_copies(dir.path(), &PERFTEST_LIKE, ["b.rrd"]);
        let mut files = MappedFiles { keep_headers: true, ..Default::default() };
        for k in 1..=9 {
            if k % 3 == 0 {
                update_file(&a, &arg(k), &UpdateOptions::default(), false).unwrap();
            } else {
                files.update(&a, &arg(k), &UpdateOptions::default(), false).unwrap();
            }
            update_file(&b, &arg(k), &UpdateOptions::default(), false).unwrap();
            assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "step {k}");
        }
        // Steps 1, 4, 7 decode (first, and after each foreign update); 2, 5, 8 keep.
        assert_eq!(files.counters.headers_decoded, 3, "{:?}", files.counters);
        assert_eq!(files.counters.headers_kept, 3, "{:?}", files.counters);
        // A static field changed in place (the heartbeat of DS a, as
        // `rrdtool tune -h` does) is seen by the next mapped update.
        let hb_off = rrd_format::layout::STAT_HEAD_LEN + 40;
        for p in [&a, &b] {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            f.write_all_at(&100u64.to_le_bytes(), hb_off).unwrap();
        }
        // A 400 s gap: known with the old 600 s heartbeat, unknown with 100 s.
        let late = vec![format!("{}:1:1", START + 300 * 9 + 400)];
        files.update(&a, &late, &UpdateOptions::default(), false).unwrap();
        update_file(&b, &late, &UpdateOptions::default(), false).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!(files.counters.headers_decoded, 4, "{:?}", files.counters);
    }

    /// An argument error reports like a direct update and keeps the earlier
    /// arguments' effect; the bytes agree.
    #[test]
    fn argument_errors_match_direct() {
        let dir = tempfile::tempdir().unwrap();
        let (a, [b]) = create_with_copies(dir.path(), &PERFTEST_LIKE, ["b.rrd"]);
        let args = vec![arg(1)[0].clone(), "1000000000:1:2".to_string(), arg(3)[0].clone()];
        let mut files = MappedFiles::default();
        let rm = files.update(&a, &args, &UpdateOptions::default(), false).unwrap();
        let rd = update_file(&b, &args, &UpdateOptions::default(), false).unwrap();
        let bn = b.display().to_string();
        let an = a.display().to_string();
        let same = |e: Option<Error>| e.map(|e| e.to_string().replace(&bn, &an));
        assert_eq!(same(rm.error), same(rd.error));
        assert!(same(update_file(&b, &[arg(2)[0].clone()], &UpdateOptions::default(), false).unwrap().error)
            .is_none());
        files.update(&a, &arg(2), &UpdateOptions::default(), false).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        let em = files.update(&a, &[], &UpdateOptions::default(), false).err().unwrap().to_string();
        let ed = update_file(&b, &[], &UpdateOptions::default(), false).err().unwrap().to_string();
        assert_eq!(em, ed);
    }

    /// A file renamed over the path is mapped afresh: the update lands in
    /// the new file, and the old inode is left as it was.
    #[test]
    fn a_replaced_file_is_remapped() {
        for keep in [false, true] {
            a_replaced_file_is_remapped_with(keep);
        }
    }

    fn a_replaced_file_is_remapped_with(keep: bool) {
        let dir = tempfile::tempdir().unwrap();
        let (a, [fresh, reference]) =
            create_with_copies(dir.path(), &PERFTEST_LIKE, ["fresh.rrd", "ref.rrd"]);
        let mut files = MappedFiles { keep_headers: keep, ..Default::default() };
        files.update(&a, &arg(1), &UpdateOptions::default(), false).unwrap();
        // Keep the old inode reachable to check it is not written again.
        let old = dir.path().join("old.rrd");
        std::fs::hard_link(&a, &old).unwrap();
        let old_bytes = std::fs::read(&old).unwrap();
        std::fs::rename(&fresh, &a).unwrap();
        files.update(&a, &arg(2), &UpdateOptions::default(), false).unwrap();
        update_file(&reference, &arg(2), &UpdateOptions::default(), false).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&reference).unwrap());
        assert_eq!(std::fs::read(&old).unwrap(), old_bytes, "the replaced inode was written");
        assert_eq!(files.counters.replaced, 1);
    }

    /// A file truncated under a live mapping is reported at the next
    /// update (before any access, so no SIGBUS), and not kept mapped.
    #[test]
    fn a_truncated_file_is_reported_not_touched() {
        for keep in [false, true] {
            a_truncated_file_is_reported_with(keep);
        }
    }

    fn a_truncated_file_is_reported_with(keep: bool) {
        let dir = tempfile::tempdir().unwrap();
        let a = make(dir.path(), "a.rrd", &PERFTEST_LIKE);
        let mut files = MappedFiles { keep_headers: keep, ..Default::default() };
        files.update(&a, &arg(1), &UpdateOptions::default(), false).unwrap();
        let len = std::fs::metadata(&a).unwrap().len();
        for cut in [len - 8, 2000, 100, 0] {
            std::fs::OpenOptions::new().write(true).open(&a).unwrap().set_len(cut).unwrap();
            let e = files.update(&a, &arg(2), &UpdateOptions::default(), false).err().expect("truncated");
            assert!(matches!(e, Error::Format { .. }), "cut at {cut}: {e}");
            assert!(!files.contains(&a));
            let direct = update_file(&a, &arg(2), &UpdateOptions::default(), false).err().unwrap();
            assert_eq!(e.to_string(), direct.to_string(), "cut at {cut}");
        }
        assert!(files.is_empty());
    }

    /// Garbage of any length never panics and is never kept mapped.
    #[test]
    fn garbage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.rrd");
        let good = std::fs::read(make(dir.path(), "a.rrd", &PERFTEST_LIKE)).unwrap();
        let mut files = MappedFiles { keep_headers: true, ..Default::default() };
        let mut seed = 7u64;
        for len in [1usize, 127, 128, 129, 4096, good.len()] {
            for flip in 0..8 {
                let mut bytes = good[..len.min(good.len())].to_vec();
                for _ in 0..flip * 4 {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let i = (seed >> 33) as usize % bytes.len();
                    bytes[i] ^= (seed >> 20) as u8 | 1;
                }
                std::fs::write(&p, &bytes).unwrap();
                let _ = files.update(&p, &arg(1), &UpdateOptions::default(), false);
            }
        }
        let e = files.update(&dir.path().join("missing.rrd"), &arg(1), &UpdateOptions::default(), false);
        assert!(e.err().unwrap().to_string().starts_with("opening '"));
    }

    /// The prefetch advises exactly the pages the plans name: the header
    /// page, then the runs of pages each update writes (a second update of
    /// the same file planned on the header the first leaves), and the
    /// updates then give the bytes of direct updates.
    #[test]
    fn prefetch_advises_exactly_the_planned_pages() {
        const WIDE: [&str; 4] =
            ["DS:a:GAUGE:600:U:U", "DS:b:COUNTER:600:U:U", "RRA:AVERAGE:0.5:1:600", "RRA:MAX:0.5:3:600"];
        let dir = tempfile::tempdir().unwrap();
        let (a, [reference]) = create_with_copies(dir.path(), &WIDE, ["ref.rrd"]);
        let opts = UpdateOptions::default();
        let now = Now::system();
        // Steps 1-3: the third completes a row of the 3-step archive too.
        let reqs: Vec<UpdateRequest> =
            (1..=3).map(|k| UpdateRequest { path: a.clone(), args: arg(k), opts: opts.clone() }).collect();
        let refs: Vec<&UpdateRequest> = reqs.iter().collect();
        // Runs are clipped to the file (its last page is partial); the
        // archives' current rows are random (as rrdtool's create makes them).
        let len = std::fs::metadata(&a).unwrap().len();
        let bytes =
            |first: u64, count: u64| first * plan::PAGE_LEN..((first + count) * plan::PAGE_LEN).min(len);
        let mut expected = vec![(a.clone(), bytes(0, 1))];
        let mut header = Rrd::open(&a, false).unwrap().header;
        let mut all_pages = vec![0];
        for r in &reqs {
            let p = plan::plan_update(&header, &r.args, &opts, now).unwrap();
            for (first, count) in plan::page_runs(p.write_pages()) {
                expected.push((a.clone(), bytes(first, count)));
            }
            all_pages.extend(p.pages());
            header = p.header_after.unwrap();
        }
        let mut files = MappedFiles { advice_log: Some(Vec::new()), ..Default::default() };
        assert_eq!(files.prefetch(&refs), 3);
        let log = files.advice_log.take().unwrap();
        assert_eq!(log, expected);
        // Together: the plans' pages, reads (the header) included.
        all_pages.sort_unstable();
        all_pages.dedup();
        assert_eq!(plan::pages_of(log.iter().map(|(_, r)| r)), all_pages);
        assert_eq!(
            files.counters.pages_prefetched,
            log.iter().map(|(_, r)| (r.end - r.start).div_ceil(4096)).sum()
        );
        for r in &reqs {
            files.update(&r.path, &r.args, &opts, false).unwrap();
            update_file(&reference, &r.args, &opts, false).unwrap();
        }
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&reference).unwrap());
        // With a kept header, no header page is asked for: only the runs of
        // the plan made on the kept header.
        let mut files = MappedFiles { keep_headers: true, ..Default::default() };
        files.update(&a, &arg(4), &opts, false).unwrap();
        files.advice_log = Some(Vec::new());
        let next = UpdateRequest { path: a.clone(), args: arg(5), opts: opts.clone() };
        assert_eq!(files.prefetch(&[&next]), 1);
        let header = Rrd::open(&a, false).unwrap().header;
        let p = plan::plan_update(&header, &next.args, &opts, now).unwrap();
        let want: Vec<(PathBuf, Range<u64>)> = plan::page_runs(p.write_pages())
            .into_iter()
            .map(|(first, count)| (a.clone(), bytes(first, count)))
            .collect();
        assert_eq!(files.advice_log.take().unwrap(), want);
        // A bounded window covers a prefix (at least one request).
        let mut files = MappedFiles { max_prefetch_pages: 1, ..Default::default() };
        assert_eq!(files.prefetch(&refs), 1);
        assert_eq!(files.prefetch(&[]), 0);
    }

    /// A file extended in place (same inode) is mapped again at its new
    /// length, and the byte bound evicts.
    #[test]
    fn bounds_by_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> =
            (0..4).map(|i| make(dir.path(), &format!("f{i}.rrd"), &PERFTEST_LIKE)).collect();
        let len = std::fs::metadata(&paths[0]).unwrap().len();
        let mut files = MappedFiles::new(100, 2 * len);
        for p in &paths {
            files.update(p, &arg(1), &UpdateOptions::default(), false).unwrap();
            assert!(files.mapped_bytes() <= 2 * len);
        }
        assert_eq!(files.len(), 2);
        assert_eq!(files.counters.evicted, 2);
        // Sync of a mapped and of an unmapped file.
        for p in &paths {
            files.sync(p).unwrap();
        }
        files.unmap_pages();
        files.clear();
        assert_eq!(files.mapped_bytes(), 0);
    }
}
