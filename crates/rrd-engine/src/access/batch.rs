//! Updating many files quickly: open files kept across updates (bounded),
//! readahead turned off, each file's decoded header kept between updates,
//! and the pages the next updates need fetched many at once.
//!
//! Why: an update needs its header page and the pages of the rows it writes
//! (seed 000: three pages for an MRTG file, where default readahead pulls
//! 16–28). On a cold cache each of those is a disk read; done one at a time
//! the disk gives 13k reads/s, done many at once it gives 114k. So before
//! applying a batch of updates in order, [`BatchUpdater::prefetch`] issues
//! `POSIX_FADV_WILLNEED` for the header page of every file whose header it
//! does not know (the kernel reads them in parallel), plans each update with
//! the real update arithmetic ([`crate::plan`]) on the known or freshly read
//! header, and issues WILLNEED for exactly the page runs those updates will
//! write. Nothing else is read.
//!
//! Kept headers ([`KeptHeader`]): after writing a file, the updater knows its
//! new header without reading it back, and keeps it with the file's
//! [`FileStamp`] (device, inode, length, mtime, ctime as our own write left
//! them, taken with `fstat` while we still hold the lock). Before the next
//! update, under the rrdtool-compatible lock, one `stat(path)` decides: same
//! inode and same stamp means nobody wrote, truncated or renamed a new file
//! over the path since, so the kept header is the file's header and no byte
//! of it is read. Anything else re-reads the header (and a new inode reopens
//! the path, so a file replaced by `rrdtool create`/`restore` is never
//! written through a stale descriptor). A stamp younger than
//! [`RACY_WINDOW_NS`] is not trusted: on a kernel with coarse timestamps a
//! foreign write in the same clock tick as ours would leave mtime and ctime
//! unchanged (git's "racy clean" problem).
//!
//! Invariants:
//! - A kept header is only used under the write lock and after its stamp
//!   matched; it is only created from a header read under the lock or from
//!   the header our own writes produced.
//! - The update math is [`crate::update::Updater`], unchanged: rows are
//!   written once each in file order, then the live header once, exactly as
//!   [`crate::update::update_rrd`] does (the tests compare the bytes).
//! - Any error while updating closes the file and drops the kept header,
//!   except a failed write: then the header from before the update is kept
//!   (stamped after the failed write, under the lock), so a retry redoes
//!   the whole update instead of trusting a torn header on disk.
//!
//! The prefetch window is bounded ([`BatchUpdater::max_prefetch_pages`]):
//! pages asked for with WILLNEED sit in the page cache until their update
//! runs, and under a memory limit a window larger than what the cache can
//! hold evicts its own first pages before they are used (measured: 2.66
//! pages read per update instead of 2.34 under a 2.5 KiB-per-file cgroup
//! budget with a 1,024-update window). [`BatchUpdater::bound_prefetch_by_memory`]
//! sets the bound to 1/8 of [`crate::pagecache::memory_limit`]; `prefetch` then covers only
//! the leading requests that fit and says how many, and the caller
//! prefetches the rest later.
//!
//! Deliberately absent: prefetch never creates a kept header (it reads
//! without the lock, so what it reads may be torn); page residency is not
//! probed with `mincore` (one WILLNEED per page run costs the same as the
//! probe) — instead, with [`BatchUpdater::assume_written_resident`], pages we
//! wrote and did not release are not prefetched again.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
#[cfg(any(test, feature = "fault-injection"))]
use std::sync::Arc;

use rrd_format::Header;

use crate::error::{Error, Result};
use crate::pagecache::{advise, Advice};
use crate::plan;
use crate::root::Root;
use crate::rrd::{lock_file, Locking, Rrd};
use crate::store::Store;
use crate::update::{Now, RowCollector, UpdateOptions, UpdateReport, Updater};

/// [`BatchUpdater::prefetch_kept`]'s access to files: `fadvise` through
/// the open-file cache.
struct BatchTarget<'a, 'r> {
    updater: &'a mut BatchUpdater,
    requests: &'a [(&'r UpdateRequest, Option<&'r KeptHeader>)],
}

impl plan::PrefetchTarget for BatchTarget<'_, '_> {
    fn ask_header(&mut self, i: usize) -> u64 {
        let (req, kept) = self.requests[i];
        let Ok(of) = self.updater.files.entry(&req.path) else { return 0 };
        if kept.is_some() || of.kept.is_some() {
            return 0;
        }
        let _ = advise(&of.file, Advice::WillNeed, 0, plan::PAGE_LEN);
        self.updater.counters.pages_prefetched += 1;
        1
    }

    fn with_header(&mut self, i: usize, f: &mut dyn FnMut(&Header, &[u64])) {
        let (req, kept) = self.requests[i];
        let assume = self.updater.assume_written_resident;
        let Ok(of) = self.updater.files.entry(&req.path) else { return };
        match kept.or(of.kept.as_ref()) {
            Some(k) => f(&k.header, if assume { &k.written_pages } else { &[] }),
            None => {
                if let Ok(rrd) = Rrd::from_store(&req.path, &of.file) {
                    f(&rrd.header, &[]);
                }
            }
        }
    }

    fn ask(&mut self, i: usize, first: u64, count: u64) {
        let (req, _) = self.requests[i];
        let Ok(of) = self.updater.files.entry(&req.path) else { return };
        let page = plan::PAGE_LEN;
        let _ = advise(&of.file, Advice::WillNeed, first * page, count * page);
        self.updater.counters.pages_prefetched += count;
    }
}

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

/// A stamp younger than this (50 ms) is not trusted to reveal a later
/// foreign write: coarse kernel timestamps tick every 1–10 ms.
pub const RACY_WINDOW_NS: i128 = 50_000_000;

/// What `stat` says about a file's identity and last change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl FileStamp {
    pub fn of_metadata(m: &std::fs::Metadata) -> FileStamp {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        FileStamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
        }
    }

    /// `fstat` of an open file.
    pub fn of_file(file: &File) -> io::Result<FileStamp> {
        Ok(FileStamp::of_metadata(&file.metadata()?))
    }

    /// `stat` of a path (follows symlinks, as opening does).
    pub fn of_path(path: &Path) -> io::Result<FileStamp> {
        Ok(FileStamp::of_metadata(&std::fs::metadata(path)?))
    }

    pub fn same_inode(&self, other: &FileStamp) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }

    /// Whether a foreign change right after this stamp could have left the
    /// timestamps unchanged (see the module doc).
    pub fn is_racy(&self, now_ns: i128) -> bool {
        now_ns - self.mtime_ns.max(self.ctime_ns) < RACY_WINDOW_NS
    }
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// A file's decoded header as our last write left it, valid while the file
/// still has `stamp`.
#[derive(Clone, Debug)]
pub struct KeptHeader {
    pub header: Header,
    pub stamp: FileStamp,
    /// Pages written since they were last released (sorted, unique).
    pub written_pages: Vec<u64>,
    /// With [`BatchUpdater::stamp_by_clock`]: the wall-clock time right
    /// after our last write. `stamp` is then the file's stamp from just
    /// before that write (device, inode, length), and the header is the
    /// file's while those are unchanged and neither mtime nor ctime is later
    /// than this time (every change another process makes after our write
    /// sets ctime to its own later time).
    pub written_by: Option<i128>,
}

impl KeptHeader {
    /// Whether this header is the file's header now, given `stat(path)`.
    pub fn matches(&self, now: &FileStamp, now_ns: i128) -> bool {
        match self.written_by {
            None => self.stamp == *now && !self.stamp.is_racy(now_ns),
            Some(t) => {
                self.stamp.same_inode(now)
                    && self.stamp.len == now.len
                    && now.mtime_ns.max(now.ctime_ns) <= t
                    && now_ns - t >= RACY_WINDOW_NS
            }
        }
    }

    /// Reads `path`'s header under a read lock (no rrdtool-compatible
    /// writer is midway), with the stamp taken under the same lock.
    pub fn read(path: &Path) -> Result<KeptHeader> {
        KeptHeader::read_in(&Root::Anywhere, path)
    }

    /// [`KeptHeader::read`] of a file opened through `root` (confined
    /// callers). A file that is not a regular file is refused.
    pub fn read_in(root: &Root, path: &Path) -> Result<KeptHeader> {
        let file =
            root.open(path, false).map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
        let meta = file.metadata().map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        if !meta.is_file() {
            return Err(Error::NotRegularFile { path: path.to_path_buf() });
        }
        KeptHeader::read_open(&file, path, &meta)
    }

    /// Reads the header of `file` (open, at `path`), whose `fstat` the
    /// caller took (`meta`: one stat serves the caller's checks, the
    /// length and the stamp). Readahead off as in [`KeptHeader::read`]; the
    /// read lock is taken on the caller's descriptor and lasts until the
    /// caller closes it (open-file-description locks), as `read` holds it
    /// until its file is dropped: callers read the header and close.
    pub fn read_open(file: &File, path: &Path, meta: &std::fs::Metadata) -> Result<KeptHeader> {
        let _ = advise(file, Advice::Random, 0, 0);
        lock_file(file, path, false, false, Locking::from_env())?;
        let stamp = FileStamp::of_metadata(meta);
        let rrd = Rrd::from_store(path, KnownLen { file, len_bytes: meta.len() })?;
        Ok(KeptHeader { header: rrd.header, stamp, written_pages: Vec::new(), written_by: None })
    }

    /// A copy of the header when `kept` is still the file's header (one
    /// `stat(path)`, no lock: for readers that tolerate a race the way a
    /// plain read of the file would).
    pub fn current_header(kept: Option<&KeptHeader>, path: &Path) -> Option<Header> {
        let k = kept?;
        let now = FileStamp::of_path(path).ok()?;
        k.matches(&now, now_ns()).then(|| k.header.clone())
    }

    fn note_written(&mut self, pages: &[u64]) {
        for &p in pages {
            if let Err(at) = self.written_pages.binary_search(&p) {
                self.written_pages.insert(at, p);
            }
        }
    }
}

/// A file whose length was just taken (by the caller's `fstat`).
struct KnownLen<'a> {
    file: &'a File,
    len_bytes: u64,
}

impl Store for KnownLen<'_> {
    fn len(&self) -> io::Result<u64> {
        Ok(self.len_bytes)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        Store::read_at(self.file, buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        Store::write_at(self.file, buf, offset)
    }
}

/// Faults injected into the updater's writes and syncs, decided by path
/// and offset (a write to the live header, the third row...), where
/// `rrd_testkit::fault`'s plans count operations. For tests only: compiled
/// under `cfg(test)` or the `fault-injection` feature (a dev-dependency
/// feature), so a release build has no hook to call and no field to set.
#[cfg(any(test, feature = "fault-injection"))]
pub trait FaultHook: Send + Sync {
    /// Called before writing `len` bytes at `offset` of `path`: `Ok(n)`
    /// writes the first `n` bytes (`n < len` is then a short write, reported
    /// as `WriteZero`), `Err` writes nothing.
    fn write(&self, path: &Path, offset: u64, len: usize) -> io::Result<usize>;
    /// Called after `bytes` were written at `offset` of `path` (a short
    /// write: the bytes that were), for a recording of the file I/O (the
    /// power-loss tests, `rrd_testkit::power`).
    fn written(&self, _path: &Path, _offset: u64, _bytes: &[u8]) {}
    /// Called before `fdatasync` of `path`, and before the `syncfs` of a
    /// batch for each of its files ([`BatchUpdater::filesystems`]).
    fn sync(&self, path: &Path) -> io::Result<()>;
}

/// The store updates write through: the open file, with the fault hook.
struct HookedFile<'a> {
    file: &'a File,
    #[cfg(any(test, feature = "fault-injection"))]
    path: &'a Path,
    #[cfg(any(test, feature = "fault-injection"))]
    hook: Option<&'a dyn FaultHook>,
}

impl Store for HookedFile<'_> {
    fn len(&self) -> io::Result<u64> {
        Store::len(self.file)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        Store::read_at(self.file, buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        #[cfg(any(test, feature = "fault-injection"))]
        if let Some(hook) = self.hook {
            let n = hook.write(self.path, offset, buf.len())?.min(buf.len());
            if n < buf.len() {
                Store::write_at(self.file, &buf[..n], offset)?;
                hook.written(self.path, offset, &buf[..n]);
                return Err(io::Error::new(io::ErrorKind::WriteZero, "short write"));
            }
            Store::write_at(self.file, buf, offset)?;
            hook.written(self.path, offset, buf);
            return Ok(());
        }
        Store::write_at(self.file, buf, offset)
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
    ident: Option<(u64, u64)>,
    /// The header our last update left, when the updater keeps it here.
    pub kept: Option<KeptHeader>,
    /// Updates attempted through this descriptor (under its lock): after
    /// the first, a descriptor without `ident` has its identity checked
    /// against the path before the next update.
    pub updates: u64,
    /// The file's length as the caller's `fstat` took it when it handed the
    /// descriptor over ([`BatchUpdater::update_opened`]): the first header
    /// read uses it instead of another `fstat`.
    known_len: Option<u64>,
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
    index: HashMap<OsString, usize>,
    slots: Vec<OpenFile>,
    max_open: usize,
    rng: u64,
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
        let file = match self.open(path) {
            // Out of descriptors (the process's limit is lower than our
            // bound, or the caller holds many): keep half as many from now
            // on and try once more, as rrdtool, which keeps none, would
            // have succeeded.
            Err(e)
                if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
                    && !self.slots.is_empty() =>
            {
                self.max_open = (self.slots.len() / 2).max(1);
                while self.slots.len() >= self.max_open {
                    self.evict_one();
                }
                self.open(path)
            }
            r => r,
        }
        .map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
        Ok(self.insert(path, file, None))
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
    fn insert(&mut self, path: &Path, file: File, known_len: Option<u64>) -> &mut OpenFile {
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
    fn open(&self, path: &Path) -> std::io::Result<File> {
        open_for_update(&self.root, self.no_atime, path)
    }

    /// A slot to reuse: any will do, it only has to be cheap and spread
    /// (xorshift64). `slots` is not empty.
    fn victim(&mut self) -> usize {
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
/// caller that opens ahead of the update ([`BatchUpdater::update_opened`]).
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

/// `syncfs(2)` of the filesystem holding `path`.
pub fn sync_filesystem_of(path: &Path) -> Result<()> {
    let file = File::open(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    syncfs(&file, path)
}

/// `syncfs(2)` of filesystem `device`, through the file at `path` opened
/// within `root`; refused when that file is not on `device` any more (the
/// name was replaced by a file elsewhere since it was written: syncing
/// that one would not make the written file durable).
pub fn sync_device_of(root: &Root, device: u64, path: &Path) -> Result<()> {
    let io_err = |source| Error::Io { path: path.to_path_buf(), source };
    let file = root.open(path, false).map_err(io_err)?;
    if file.metadata().map_err(io_err)?.dev() != device {
        return Err(Error::invalid(format!(
            "'{}' moved to another filesystem before its sync",
            path.display()
        )));
    }
    syncfs(&file, path)
}

fn syncfs(file: &File, path: &Path) -> Result<()> {
    rustix::fs::syncfs(file).map_err(|e| Error::Io { path: path.to_path_buf(), source: e.into() })
}

/// What a [`BatchUpdater`] did, for statistics (monotonic counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchCounters {
    /// Headers read and decoded by updates (the kept one was missing or stale).
    pub headers_read: u64,
    /// Updates that used a kept header and read nothing.
    pub headers_kept: u64,
    /// Pages asked for with WILLNEED.
    pub pages_prefetched: u64,
    /// Distinct pages written (per update).
    pub pages_written: u64,
    /// Pages dropped with DONTNEED after a sync.
    pub pages_released: u64,
}

/// Applies updates to many files through an [`OpenFiles`] cache.
pub struct BatchUpdater {
    pub files: OpenFiles,
    pub counters: BatchCounters,
    /// Do not prefetch pages this updater wrote and has not released since
    /// (right when nothing else evicts them; off by default because a
    /// `fadvise DONTNEED` by another program would turn those prefetches
    /// into synchronous reads).
    pub assume_written_resident: bool,
    /// Keep decoded headers between updates (on by default).
    pub keep_headers: bool,
    /// After a failed write, keep the header from before the update so a
    /// retry redoes all of it (costs a header copy per update; the daemon's
    /// flusher turns it on, one-shot callers need not).
    pub keep_state_on_write_error: bool,
    /// Faults to inject into writes and syncs (tests only).
    #[cfg(any(test, feature = "fault-injection"))]
    pub faults: Option<Arc<dyn FaultHook>>,
    /// Most pages one `prefetch` call asks for (unbounded by default); the
    /// requests past the bound are left for a later call.
    pub max_prefetch_pages: u64,
    /// Keep a file's header only from its second update on (through one
    /// open descriptor): a poller that runs once per cycle touches each
    /// file once, so a header kept after the first update is never used
    /// and its stamp (`fstat`) and memory are wasted; a file updated again
    /// pays one header read more, once. Off by default.
    pub keep_from_second_update: bool,
    /// Stamp a kept header by the clock instead of an `fstat` after the
    /// write ([`KeptHeader::written_by`]): one system call less per update
    /// of a file whose descriptor is kept (librrd's `rrd_update_r`). The
    /// same changes are detected: another process's write, truncation or
    /// rename after ours moves ctime past our time, the length or the inode
    /// (within one coarse clock tick, as with the `fstat` stamp, the racy
    /// window covers it); a clock stepped backwards could hide one. Off by
    /// default.
    pub stamp_by_clock: bool,
}

impl BatchUpdater {
    pub fn new(max_open: usize) -> BatchUpdater {
        BatchUpdater {
            files: OpenFiles::new(max_open),
            counters: BatchCounters::default(),
            assume_written_resident: false,
            keep_headers: true,
            keep_state_on_write_error: false,
            #[cfg(any(test, feature = "fault-injection"))]
            faults: None,
            max_prefetch_pages: u64::MAX,
            keep_from_second_update: false,
            stamp_by_clock: false,
        }
    }

    /// Bounds the prefetch window to 1/8 of the memory this process may
    /// use ([`crate::pagecache::memory_limit`]; at least 64 pages), so that prefetched pages
    /// are still cached when their updates run.
    pub fn bound_prefetch_by_memory(&mut self) {
        self.max_prefetch_pages = plan::window_pages_for_memory();
    }

    /// Asks the kernel for every page `requests` will touch, many files at
    /// once, using the headers kept in the open-file cache. Returns how
    /// many leading requests were covered (all of them unless
    /// [`BatchUpdater::max_prefetch_pages`] stopped it; at least one).
    pub fn prefetch(&mut self, requests: &[&UpdateRequest]) -> usize {
        let pairs: Vec<(&UpdateRequest, Option<&KeptHeader>)> = requests.iter().map(|r| (*r, None)).collect();
        self.prefetch_kept(&pairs)
    }

    /// [`BatchUpdater::prefetch`] with headers the caller keeps (a daemon
    /// keeps one per file, far more than it keeps open). A `None` falls
    /// back to the open-file cache's kept header, then to reading it.
    /// Kept headers are used here without checking their stamp: a stale one
    /// only makes the prefetch miss; the update itself checks. Errors are
    /// ignored: the update reports them. Returns how many leading requests
    /// were covered within [`BatchUpdater::max_prefetch_pages`] (at least
    /// one when there are any).
    pub fn prefetch_kept(&mut self, requests: &[(&UpdateRequest, Option<&KeptHeader>)]) -> usize {
        let reqs: Vec<&UpdateRequest> = requests.iter().map(|(r, _)| *r).collect();
        let budget = self.max_prefetch_pages;
        plan::prefetch_window(&reqs, budget, &mut BatchTarget { updater: self, requests })
    }

    /// Applies one update, with the header kept in the open-file cache.
    pub fn update(&mut self, req: &UpdateRequest, verbose: bool) -> Result<UpdateReport> {
        let of = self.files.entry(&req.path)?;
        let mut kept = of.kept.take();
        let first_update = of.updates == 0;
        // A kept header pays for its memory only if its file is updated
        // again while still open. Once the cache is full and evicting, a
        // pass over more files than it holds never comes back in time, and
        // the headers' memory would come out of the page cache (measured:
        // 2.66 instead of 2.34 pages read per update under a 2.5 KiB-per-file
        // budget); so this update neither uses nor makes one (and spends no
        // fstat on a stamp nobody will check).
        let evicting = self.files.len() >= self.files.max_open;
        let keep_headers = self.keep_headers;
        self.keep_headers = keep_headers && !evicting && !(first_update && self.keep_from_second_update);
        if evicting {
            kept = None;
        }
        let result = self.update_kept(req, verbose, &mut kept);
        self.keep_headers = keep_headers;
        if kept.is_some() {
            // The file is still open: an update that succeeded closes nothing.
            if let Ok(of) = self.files.entry(&req.path) {
                of.kept = kept;
            }
        }
        result
    }

    /// Applies one update through `file`, which the caller opened at
    /// `req.path` moments ago ([`open_for_update`]) and whose length it has
    /// just taken with `fstat`, then closes it: for a caller that expects no
    /// further update of the file soon (a poller's session updates each file
    /// once). Two system calls fewer than [`BatchUpdater::update`]: no
    /// `fstat` for the length, and no unlock (closing the descriptor ends
    /// its lock, as for rrdtool). A path already open here goes through its
    /// open file instead (`file` is closed unused).
    ///
    /// Like [`BatchUpdater::update`] on a file opened moments ago, the
    /// descriptor is trusted to be the path's file: a file renamed over the
    /// path between the caller's open and this call is not seen (rrdtool has
    /// the same window between its open and its lock).
    pub fn update_opened(
        &mut self,
        req: &UpdateRequest,
        verbose: bool,
        file: File,
        len_bytes: u64,
    ) -> Result<UpdateReport> {
        if self.files.contains(&req.path) {
            drop(file);
            return self.update(req, verbose);
        }
        lock_file(&file, &req.path, true, false, Locking::from_env())?;
        self.files.insert(&req.path, file, Some(len_bytes));
        let keep_headers = std::mem::replace(&mut self.keep_headers, false);
        let (result, _) = self.apply_locked(req, verbose, None, None);
        self.keep_headers = keep_headers;
        // Closing the descriptor releases the lock.
        self.files.close(&req.path);
        result
    }

    /// Applies one update with a header the caller keeps: `kept` is used
    /// when still valid (no read), and holds the file's new header after.
    /// On error the file is closed and `kept` is `None`, except after a
    /// failed write, when it holds the header from before the update (see
    /// `apply_locked`), so that a retry rewrites the whole update.
    pub fn update_kept(
        &mut self,
        req: &UpdateRequest,
        verbose: bool,
        kept: &mut Option<KeptHeader>,
    ) -> Result<UpdateReport> {
        let locking = Locking::from_env();
        let candidate = kept.take().filter(|_| self.keep_headers);
        let stamp = match self.lock_current(&req.path, locking, candidate.is_some()) {
            Ok(s) => s,
            Err(e) => {
                // Not locked, nothing read: what we kept is still as good as before.
                if !matches!(e, Error::Open { .. }) {
                    *kept = candidate;
                }
                return Err(e);
            }
        };
        let valid = match (candidate, stamp) {
            (Some(k), Some(stamp)) if k.matches(&stamp, now_ns()) => Some(k),
            _ => None,
        };
        let (result, new_kept) = self.apply_locked(req, verbose, valid, stamp);
        if let Ok(of) = self.files.entry(&req.path) {
            let _ = lock_file(&of.file, &req.path, true, true, locking);
        }
        *kept = new_kept;
        if result.is_err() {
            self.files.close(&req.path);
        }
        result
    }

    /// Locks the open file of `path` for writing, reopening it first when
    /// another file was renamed over the path. Returns the file's stamp as
    /// seen under the lock: `stat(path)` for a file we wrote before (which
    /// also tells whether the path still names it), `fstat` for a file opened
    /// since (only when `want_stamp`: without a kept header to check, a fresh
    /// descriptor needs no syscall at all).
    fn lock_current(&mut self, path: &Path, locking: Locking, want_stamp: bool) -> Result<Option<FileStamp>> {
        let open_err = |source| Error::Open { path: path.to_path_buf(), source };
        for _ in 0..3 {
            let of = self.files.entry(path)?;
            // The file stays open between updates, so the lock is taken and
            // released around each one, as a fresh open/close would.
            lock_file(&of.file, path, true, false, locking)?;
            if of.ident.is_none() && of.updates > 0 {
                // Written through before without a stamp (headers not
                // kept): whether the path still names this descriptor's
                // file is not known, so learn the descriptor's identity now
                // and check the path against it below.
                match FileStamp::of_file(&of.file) {
                    Ok(st) => of.ident = Some((st.dev, st.ino)),
                    Err(e) => {
                        let _ = lock_file(&of.file, path, true, true, locking);
                        self.files.close(path);
                        return Err(open_err(e));
                    }
                }
            }
            let stamp = match of.ident {
                None if !want_stamp => return Ok(None),
                None => FileStamp::of_file(&of.file),
                Some(_) => FileStamp::of_path(path),
            };
            let stamp = match stamp {
                Ok(s) => s,
                Err(e) => {
                    let _ = lock_file(&of.file, path, true, true, locking);
                    self.files.close(path);
                    return Err(open_err(e));
                }
            };
            if of.ident.is_none_or(|id| id == (stamp.dev, stamp.ino)) {
                return Ok(Some(stamp));
            }
            let _ = lock_file(&of.file, path, true, true, locking);
            self.files.close(path);
        }
        Err(Error::Replaced { path: path.to_path_buf() })
    }

    /// The update proper, under the lock: header from `kept` or read, the
    /// math, rows in file order, the live header, the new stamp. Returns the
    /// header to keep: the new one, or after a failed write the one from
    /// before the update (the file may hold part of the update, torn; a
    /// retry must start from the state before it, not from what a read of
    /// the torn header would give).
    fn apply_locked(
        &mut self,
        req: &UpdateRequest,
        verbose: bool,
        kept: Option<KeptHeader>,
        before_write: Option<FileStamp>,
    ) -> (Result<UpdateReport>, Option<KeptHeader>) {
        #[cfg(any(test, feature = "fault-injection"))]
        let hook = self.faults.clone();
        let of = match self.files.entry(&req.path) {
            Ok(of) => of,
            Err(e) => return (Err(e), None),
        };
        of.updates += 1;
        let store = HookedFile {
            file: &of.file,
            #[cfg(any(test, feature = "fault-injection"))]
            path: &req.path,
            #[cfg(any(test, feature = "fault-injection"))]
            hook: hook.as_deref(),
        };
        let (header, mut written) = match kept {
            Some(k) => {
                self.counters.headers_kept += 1;
                (k.header, k.written_pages)
            }
            None => {
                let read = match of.known_len.take() {
                    Some(len_bytes) => Rrd::from_store(&req.path, KnownLen { file: &of.file, len_bytes })
                        .map(|rrd| rrd.header),
                    None => Rrd::from_store(&req.path, &of.file).map(|rrd| rrd.header),
                };
                match read {
                    Ok(header) => {
                        self.counters.headers_read += 1;
                        (header, Vec::new())
                    }
                    Err(e) => return (Err(e), None),
                }
            }
        };
        if req.args.is_empty() {
            return (Err(Error::invalid("Not enough arguments")), None);
        }
        let before = (self.keep_headers && self.keep_state_on_write_error).then(|| header.clone());
        let mut rrd = Rrd { path: req.path.clone(), store, header };
        let mut sink = RowCollector { rows: BTreeMap::new(), summary: verbose.then(Vec::new) };
        let mut error = None;
        {
            let mut updater = match Updater::new(&mut rrd.header, &req.opts, Now::system()) {
                Ok(u) => u,
                Err(e) => return (Err(e), None),
            };
            updater.set_row_reader(crate::update::row_reader(&rrd.store));
            for arg in &req.args {
                if let Err(msg) = updater.apply(arg, req.opts.skip_past_updates, &mut sink) {
                    error = Some(Error::Update { path: req.path.clone(), source: msg });
                    break;
                }
            }
            if error.is_none() {
                if let Err(msg) = updater.finish(&mut sink) {
                    error = Some(Error::Update { path: req.path.clone(), source: msg });
                }
            }
        }
        let row_len = rrd.layout().row_len();
        let mut ranges = Vec::with_capacity(sink.rows.len() + 1);
        let mut write_error = None;
        for ((r, row), values) in &sink.rows {
            let off = rrd.layout().row_off(*r, *row);
            ranges.push(off..off + row_len);
            if let Err(e) = rrd.write_row(*r, *row, values) {
                write_error = Some(e);
                break;
            }
        }
        if write_error.is_none() {
            ranges.push(rrd.layout().live_range());
            write_error = rrd.write_live().err();
        }
        let pages = plan::pages_of(ranges.iter());
        self.counters.pages_written += pages.len() as u64;
        // Taken after the last write returned: every timestamp our writes
        // set is at most this.
        let written_by =
            (self.stamp_by_clock && write_error.is_none() && before_write.is_some()).then(now_ns);
        let stamp = match (self.keep_headers, written_by, before_write) {
            (false, _, _) => Err(io::Error::other("headers are not kept")),
            (true, Some(_), Some(before)) => Ok(before),
            (true, _, _) => FileStamp::of_file(&of.file),
        };
        if let Ok(st) = &stamp {
            of.ident = Some((st.dev, st.ino));
        }
        let Rrd { header, .. } = rrd;
        if let Some(e) = write_error {
            let restored = match (before, stamp) {
                (Some(header), Ok(stamp)) => {
                    let mut k = KeptHeader { header, stamp, written_pages: written, written_by: None };
                    k.note_written(&pages);
                    Some(k)
                }
                _ => None,
            };
            return (Err(e), restored);
        }
        let new_kept = match (self.keep_headers, stamp) {
            (true, Ok(stamp)) => {
                let mut k =
                    KeptHeader { header, stamp, written_pages: std::mem::take(&mut written), written_by };
                k.note_written(&pages);
                Some(k)
            }
            _ => None,
        };
        (Ok(UpdateReport { error, summary: sink.summary }), new_kept)
    }

    /// `fdatasync`s `path` and, when `release` is set, drops from the page
    /// cache the pages the updates since the last release wrote (they are
    /// clean now; pages nobody else needs should not push out the hot pages
    /// of other files). Returns the pages released. The kept header stays
    /// valid: neither call changes the file's stamp.
    pub fn sync(&mut self, path: &Path, kept: Option<&mut KeptHeader>, release: bool) -> Result<u64> {
        #[cfg(any(test, feature = "fault-injection"))]
        if let Some(h) = self.faults.clone() {
            h.sync(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        }
        let of = self.files.entry(path)?;
        let io_err = |source| Error::Io { path: path.to_path_buf(), source };
        of.file.sync_data().map_err(io_err)?;
        self.release_written(path, kept, release)
    }

    /// `syncfs` of every filesystem holding one of `paths` (once each): one
    /// device cache flush for a whole batch instead of one `fdatasync` (and
    /// one flush) per file, with the writes reaching the disk at queue
    /// depth. An error cannot be attributed to a file, so callers then sync
    /// file by file ([`BatchUpdater::sync`]). Follow with
    /// [`BatchUpdater::release_written`].
    pub fn sync_filesystem(&mut self, paths: &[&Path]) -> Result<()> {
        for (_, path) in self.filesystems(paths)? {
            sync_filesystem_of(&path)?;
        }
        Ok(())
    }

    /// The filesystems holding `paths`: each device once, with one of its
    /// paths, for a caller that syncs them itself (a daemon sharing one
    /// `syncfs` among its workers). Runs the fault hook's sync of every
    /// path first, as a sync would.
    pub fn filesystems(&mut self, paths: &[&Path]) -> Result<Vec<(u64, PathBuf)>> {
        #[cfg(any(test, feature = "fault-injection"))]
        if let Some(h) = self.faults.clone() {
            for path in paths {
                h.sync(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
            }
        }
        let mut devices: Vec<(u64, PathBuf)> = Vec::new();
        for path in paths {
            let of = self.files.entry(path)?;
            let device = match of.ident {
                Some((device, _)) => device,
                None => {
                    of.file.metadata().map_err(|source| Error::Io { path: path.to_path_buf(), source })?.dev()
                }
            };
            if !devices.iter().any(|(d, _)| *d == device) {
                devices.push((device, path.to_path_buf()));
            }
        }
        Ok(devices)
    }

    /// After a sync: forgets the pages written to `path` since the last
    /// release and, with `release`, drops them from the page cache. Returns
    /// the pages released.
    pub fn release_written(
        &mut self,
        path: &Path,
        kept: Option<&mut KeptHeader>,
        release: bool,
    ) -> Result<u64> {
        let of = self.files.entry(path)?;
        let kept = match kept {
            Some(k) => Some(k),
            None => of.kept.as_mut(),
        };
        let Some(kept) = kept else { return Ok(0) };
        let pages = std::mem::take(&mut kept.written_pages);
        if !release {
            return Ok(0);
        }
        let page = plan::PAGE_LEN;
        for (first, count) in plan::page_runs(pages.iter().copied()) {
            let _ = advise(&of.file, Advice::DontNeed, first * page, count * page);
        }
        self.counters.pages_released += pages.len() as u64;
        Ok(pages.len() as u64)
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
    use crate::testfile::{create_file, create_with_copies, perftest_arg, PERFTEST_LIKE};
    use crate::update;

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
        let mut reqs = Vec::new();
        for i in 0..20 {
            let p = create_file(
                dir.path(),
                &format!("f{i}.rrd"),
                &["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10", "RRA:MAX:0.5:3:10"],
            );
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

    fn perftest_like(dir: &Path, name: &str) -> PathBuf {
        create_file(dir, name, &PERFTEST_LIKE)
    }

    /// A perftest-like `a.rrd` and its copy `b.rrd`, the reference that
    /// only direct updates write.
    fn twins(dir: &Path) -> (PathBuf, PathBuf) {
        let (a, [b]) = create_with_copies(dir, &PERFTEST_LIKE, ["b.rrd"]);
        (a, b)
    }

    fn req(path: &Path, k: u64) -> UpdateRequest {
        UpdateRequest {
            path: path.to_path_buf(),
            args: vec![perftest_arg(k)],
            opts: UpdateOptions::default(),
        }
    }

    /// Update `k`: of `a` by `u` if `ours`, else directly (another
    /// writer), and of the reference `b` directly; the two files must then
    /// be equal. Waits out the racy window after.
    fn step_both(u: &mut BatchUpdater, a: &Path, b: &Path, k: u64, ours: bool) {
        let r = req(a, k);
        if ours {
            u.update(&r, false).unwrap();
        } else {
            update::update_file(a, &r.args, &r.opts, false).unwrap();
        }
        update::update_file(b, &r.args, &r.opts, false).unwrap();
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "step {k}");
        past_racy_window();
    }

    fn past_racy_window() {
        std::thread::sleep(std::time::Duration::from_nanos(RACY_WINDOW_NS as u64 + 10_000_000));
    }

    /// The second update of an unchanged file reads no header; the bytes
    /// equal one-at-a-time updates all along.
    #[test]
    fn kept_header_is_used_and_gives_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = twins(dir.path());
        let mut u = BatchUpdater::new(4);
        for k in 1..=8 {
            step_both(&mut u, &a, &b, k, true);
        }
        assert_eq!(u.counters.headers_read, 1, "{:?}", u.counters);
        assert_eq!(u.counters.headers_kept, 7, "{:?}", u.counters);
    }

    /// A write by someone else (here a direct update) is noticed: the
    /// header is read again and nothing is clobbered.
    #[test]
    fn foreign_writes_invalidate_the_kept_header() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = twins(dir.path());
        let mut u = BatchUpdater::new(4);
        for k in 1..=6 {
            step_both(&mut u, &a, &b, k, k % 2 != 0);
        }
        assert_eq!(u.counters.headers_kept, 0, "{:?}", u.counters);
        assert_eq!(u.counters.headers_read, 3);
        // Without the racy-window wait, a kept header is not trusted either.
        let r = req(&a, 7);
        u.update(&r, false).unwrap();
        u.update(&req(&a, 8), false).unwrap();
        assert_eq!(u.counters.headers_kept, 0, "{:?}", u.counters);
    }

    /// Kept headers stamped by the clock (`stamp_by_clock`, librrd's
    /// writer: no `fstat` after the write) are used once the racy window
    /// has passed, and every foreign change invalidates them as the `fstat`
    /// stamp does: another process's update, the file's bytes rewritten
    /// in place at the same length, a truncation. The bytes equal plain
    /// updates' throughout.
    #[test]
    fn clock_stamps_detect_foreign_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = twins(dir.path());
        let mut u = BatchUpdater::new(4);
        u.stamp_by_clock = true;
        let step = |u: &mut BatchUpdater, k: u64, ours: bool| step_both(u, &a, &b, k, ours);
        for k in 1..=3 {
            step(&mut u, k, true);
        }
        assert_eq!((u.counters.headers_read, u.counters.headers_kept), (1, 2), "{:?}", u.counters);
        // Another process's update.
        step(&mut u, 4, false);
        step(&mut u, 5, true);
        assert_eq!((u.counters.headers_read, u.counters.headers_kept), (2, 2), "{:?}", u.counters);
        // The same bytes written over the file in place (same inode, same
        // length): ctime moved.
        step(&mut u, 6, true);
        std::fs::write(&a, std::fs::read(&b).unwrap()).unwrap();
        past_racy_window();
        step(&mut u, 7, true);
        assert_eq!((u.counters.headers_read, u.counters.headers_kept), (3, 3), "{:?}", u.counters);
        // Truncated: the length differs, the header is read again and found short.
        step(&mut u, 8, true);
        let len = std::fs::metadata(&a).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&a).unwrap().set_len(len - 8).unwrap();
        past_racy_window();
        assert!(u.update(&req(&a, 9), false).is_err(), "a truncated file is refused");
        assert_eq!(u.counters.headers_kept, 4, "{:?}", u.counters);
    }

    /// A file renamed over the path (what `create` and `restore` do) is
    /// reopened: the update lands in the new file, not the unlinked one.
    #[test]
    fn a_file_renamed_over_the_path_is_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let (a, [fresh, reference]) =
            create_with_copies(dir.path(), &PERFTEST_LIKE, ["fresh.rrd", "ref.rrd"]);
        let mut u = BatchUpdater::new(4);
        u.update(&req(&a, 1), false).unwrap();
        past_racy_window();
        std::fs::rename(&fresh, &a).unwrap();
        let r = req(&a, 2);
        u.update(&r, false).unwrap();
        update::update_file(&reference, &r.args, &r.opts, false).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&reference).unwrap());
    }

    /// The same when no header was kept after the first update (headers
    /// off, or kept only from the second update, as pipe mode does): the
    /// descriptor's identity is checked before its second update, so the
    /// update does not land in the unlinked file.
    #[test]
    fn a_file_renamed_over_the_path_is_reopened_without_kept_headers() {
        for (keep_headers, from_second) in [(false, false), (true, true)] {
            let dir = tempfile::tempdir().unwrap();
            let (a, [fresh, reference]) =
                create_with_copies(dir.path(), &PERFTEST_LIKE, ["fresh.rrd", "ref.rrd"]);
            let mut u = BatchUpdater::new(4);
            u.keep_headers = keep_headers;
            u.keep_from_second_update = from_second;
            u.update(&req(&a, 1), false).unwrap();
            std::fs::rename(&fresh, &a).unwrap();
            let r = req(&a, 2);
            u.update(&r, false).unwrap();
            update::update_file(&reference, &r.args, &r.opts, false).unwrap();
            assert!(
                std::fs::read(&a).unwrap() == std::fs::read(&reference).unwrap(),
                "keep_headers {keep_headers}, from second update {from_second}: the update missed the new file"
            );
            assert_eq!(u.counters.headers_kept, 0, "{:?}", u.counters);
        }
    }

    /// Kept only from the second update: the first update of a file takes
    /// no stamp and keeps nothing; the third uses the header the second kept.
    #[test]
    fn headers_are_kept_from_the_second_update() {
        let dir = tempfile::tempdir().unwrap();
        let a = perftest_like(dir.path(), "a.rrd");
        let mut u = BatchUpdater::new(4);
        u.keep_from_second_update = true;
        u.update(&req(&a, 1), false).unwrap();
        assert!(u.files.entry(&a).unwrap().kept.is_none(), "kept after the first update");
        u.update(&req(&a, 2), false).unwrap();
        past_racy_window();
        u.update(&req(&a, 3), false).unwrap();
        assert_eq!((u.counters.headers_read, u.counters.headers_kept), (2, 1), "{:?}", u.counters);
    }

    /// A descriptor handed over with its length gives the same bytes as an
    /// update that opens the file itself, leaves nothing open (so its lock
    /// is gone), and honours a lock held elsewhere; a file the updater has
    /// open already goes through that descriptor.
    #[test]
    fn an_opened_file_is_updated_once_and_closed() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = twins(dir.path());
        let mut u = BatchUpdater::new(4);
        for k in 1..=4 {
            let file = open_for_update(&Root::Anywhere, true, &a).unwrap();
            let len = file.metadata().unwrap().len();
            assert!(u.update_opened(&req(&a, k), false, file, len).unwrap().error.is_none());
            assert!(!u.files.contains(&a), "left open after update {k}");
            update::update_file(&b, &req(&b, k).args, &UpdateOptions::default(), false).unwrap();
        }
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!(u.counters.headers_read, 4);

        // The lock is released: another descriptor can take it now.
        let other = std::fs::OpenOptions::new().read(true).write(true).open(&a).unwrap();
        lock_file(&other, &a, true, false, Locking::Try).unwrap();
        // ...and while it is held there, the update is refused untouched.
        let file = open_for_update(&Root::Anywhere, true, &a).unwrap();
        let len = file.metadata().unwrap().len();
        let before = std::fs::read(&a).unwrap();
        assert!(matches!(u.update_opened(&req(&a, 5), false, file, len), Err(Error::Locked)));
        assert_eq!(std::fs::read(&a).unwrap(), before);
        drop(other);

        // A path open here already: its own descriptor is used (and kept).
        u.update(&req(&a, 5), false).unwrap();
        let file = open_for_update(&Root::Anywhere, true, &a).unwrap();
        assert!(u.update_opened(&req(&a, 6), false, file, 0).unwrap().error.is_none());
        assert!(u.files.contains(&a));
        for k in 5..=6 {
            update::update_file(&b, &req(&b, k).args, &UpdateOptions::default(), false).unwrap();
        }
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    }

    /// A bounded prefetch window covers a prefix of the requests and says
    /// how many; prefetching again where it ended covers the rest, and the
    /// files come out as with an unbounded window.
    /// A batch over several filesystems names each once (so the daemon's
    /// `syncfs` covers every file it wrote, not only the first one's).
    #[test]
    fn filesystems_names_each_device_once() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let shm = tempfile::tempdir_in("/dev/shm").ok();
        let mut paths: Vec<PathBuf> =
            (0..3).map(|i| perftest_like(dir.path(), &format!("f{i}.rrd"))).collect();
        if let Some(shm) = &shm {
            paths.push(perftest_like(shm.path(), "s.rrd"));
        }
        let mut u = BatchUpdater::new(16);
        let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let found = u.filesystems(&refs).unwrap();
        let mut expected: Vec<u64> = paths.iter().map(|p| std::fs::metadata(p).unwrap().dev()).collect();
        expected.dedup();
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), expected);
        assert_eq!(found[0].1, paths[0]);
        u.sync_filesystem(&refs).unwrap();
    }

    #[test]
    fn prefetch_window_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..10).map(|i| perftest_like(dir.path(), &format!("f{i}.rrd"))).collect();
        let copies: Vec<PathBuf> = (0..10).map(|i| dir.path().join(format!("g{i}.rrd"))).collect();
        for (p, q) in paths.iter().zip(&copies) {
            std::fs::copy(p, q).unwrap();
        }
        let reqs: Vec<UpdateRequest> = paths.iter().map(|p| req(p, 1)).collect();
        let refs: Vec<&UpdateRequest> = reqs.iter().collect();
        let mut u = BatchUpdater::new(16);
        u.max_prefetch_pages = 9;
        // Three requests of (header + 2 guessed row pages) fit in 9 pages.
        assert_eq!(u.prefetch(&refs), 3);
        assert!(u.counters.pages_prefetched <= 9, "{:?}", u.counters);
        let mut covered = 0;
        for (i, r) in reqs.iter().enumerate() {
            if i == covered {
                let n = u.prefetch(&refs[i..]);
                assert!((1..=3).contains(&n), "{n}");
                covered += n;
            }
            u.update(r, false).unwrap();
        }
        assert_eq!(u.prefetch(&[]), 0);
        let mut unbounded = BatchUpdater::new(16);
        assert_eq!(unbounded.prefetch(&refs), 10);
        // The bytes are those of direct updates.
        for (i, (p, q)) in paths.iter().zip(&copies).enumerate() {
            update::update_file(q, &reqs[i].args, &reqs[i].opts, false).unwrap();
            assert_eq!(std::fs::read(p).unwrap(), std::fs::read(q).unwrap());
        }
        // The memory bound is positive and at least 64 pages.
        let mut m = BatchUpdater::new(1);
        m.bound_prefetch_by_memory();
        assert!(m.max_prefetch_pages >= 64);
        assert!(crate::pagecache::memory_limit() > 0);
    }

    struct FailWrites(std::sync::atomic::AtomicBool);

    impl FaultHook for FailWrites {
        fn write(&self, _: &Path, _: u64, len: usize) -> io::Result<usize> {
            if self.0.load(std::sync::atomic::Ordering::SeqCst) {
                Err(io::Error::from_raw_os_error(libc::EIO))
            } else {
                Ok(len)
            }
        }
        fn sync(&self, _: &Path) -> io::Result<()> {
            Ok(())
        }
    }

    /// An I/O error is an `Err` (not an argument error), keeps the header
    /// from before the update, and a retry after the fault applies the same
    /// values.
    #[test]
    fn write_errors_drop_the_kept_header_and_retry_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = twins(dir.path());
        let hook = Arc::new(FailWrites(std::sync::atomic::AtomicBool::new(false)));
        let mut u = BatchUpdater::new(4);
        u.faults = Some(hook.clone());
        u.keep_state_on_write_error = true;
        let mut kept = None;
        let r1 = req(&a, 1);
        u.update_kept(&r1, false, &mut kept).unwrap();
        assert!(kept.is_some());
        hook.0.store(true, std::sync::atomic::Ordering::SeqCst);
        let r2 = req(&a, 2);
        let err = u.update_kept(&r2, false, &mut kept).err().expect("an injected EIO fails the update");
        assert!(matches!(err, Error::Io { .. }), "{err}");
        // The header from before the failed update is kept, for the retry.
        assert_eq!(kept.as_ref().unwrap().header.live().last_up, 1_000_000_300);
        hook.0.store(false, std::sync::atomic::Ordering::SeqCst);
        past_racy_window();
        u.update_kept(&r2, false, &mut kept).unwrap();
        for r in [r1, r2] {
            update::update_file(&b, &r.args, &r.opts, false).unwrap();
        }
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        // The pages written since the last release are released once.
        let released = u.sync(&a, kept.as_mut(), true).unwrap();
        assert!(released >= 1);
        assert_eq!(u.sync(&a, kept.as_mut(), true).unwrap(), 0);
        assert_eq!(u.counters.pages_released, released);
    }
}
