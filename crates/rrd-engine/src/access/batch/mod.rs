//! Updating many files quickly: open files kept across updates (bounded),
//! readahead turned off, each file's decoded header kept between updates,
//! and the pages the next updates need fetched many at once.
//!
//! Why: an update needs its header page and the pages of the rows it writes
//! (the LISA '07 MRTG paper: three pages for an MRTG file, where default readahead pulls
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
//!
//! The parts: `stamp` (a kept header and the stamp that proves it
//! current), `files` (the open-file table), `sync` (`syncfs` of a
//! batch's file systems), `hooks` (the store updates write through, with
//! the tests' fault hook), and here the updater itself.

use std::collections::BTreeMap;
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
use crate::rrd::{lock_file, Locking, Rrd};
use crate::update::{Now, RowCollector, UpdateOptions, UpdateReport, Updater};

mod files;
mod hooks;
mod stamp;
mod sync;
#[cfg(test)]
mod tests;

pub use files::{is_out_of_descriptors, open_for_update, OpenFile, OpenFiles};
#[cfg(any(test, feature = "fault-injection"))]
pub use hooks::FaultHook;
use hooks::HookedFile;
use stamp::{now_ns, KnownLen};
pub use stamp::{FileStamp, KeptHeader, RACY_WINDOW_NS};
pub use sync::{sync_device_of, sync_filesystem_of};

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
    // One locked update: read, write and recovery share the header state.
    #[allow(clippy::too_many_lines)]
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
