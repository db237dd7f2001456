//! New files (create, restore, resize, tune's rewrite), written so that a
//! file is under its name only once it is complete and durable, with the
//! cost of that durability shared by a group of files.
//!
//! How a group goes ([`NewFiles`]):
//! 1. [`NewFiles::stage`] checks the size against the free space of the
//!    target's filesystem, writes a temporary file `NAME.tmp<PID>` beside
//!    the target, sets its mode, starts its write-back
//!    (`sync_file_range(WRITE)`, so the disk works while the caller
//!    prepares the next file) and keeps it open.
//! 2. [`NewFiles::commit`] waits until every staged file is written back
//!    (`sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER)`), drops its pages
//!    (`POSIX_FADV_DONTNEED`: clean now, so they go), renames each over its
//!    target, then makes it all durable: for a group of fewer than
//!    [`SYNCFS_FILES`] files an `fdatasync` per file (before its rename)
//!    and an `fsync` per directory; for a larger group one `syncfs` per
//!    filesystem (one journal commit, one flush of the disk's write cache:
//!    an `fdatasync` per file costs a cache flush each, about 1 ms on a
//!    virtio disk, which is what made creates 5× slower than librrd's).
//!    Only then is a file's result `Ok`.
//!
//! So a file whose result was `Ok` survives a crash, and a crash before
//! the commit ends leaves at worst a `*.tmp<PID>` beside the target; a
//! rename is issued only after the file's data reached the disk, so on a
//! journaling filesystem (whose commit flushes the disk cache first) no
//! incomplete file appears under a target's name either.
//!
//! Files larger than [`STREAM_BYTES`] are written back and dropped from the
//! page cache while they are written ([`STREAM_BYTES`] at a time), so a
//! multi-gigabyte create neither fills the cache nor piles up dirty pages.
//!
//! With [`NewFiles::remove_temps_on_signal`], the temporary files of a group
//! are removed when SIGINT, SIGTERM or SIGHUP ends the process (see
//! `tempclean`).
//!
//! A group made with [`NewFiles::in_root`] confined beneath a directory
//! (`root::Root::Beneath`) opens each target's directory beneath it
//! ([`Root::open_dir`]) and does everything in it relative to that
//! descriptor (`openat` of the temporary file, `renameat`, `unlinkat`,
//! `fsync`): a directory swapped for a link out of the root is refused,
//! and nothing is written, renamed or removed outside it.
//!
//! The cost of `syncfs`: it also writes back whatever else is dirty on the
//! filesystem (other processes' writes); small groups, such as one
//! interactive create, use per-file syncs and touch nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, Mode, OFlags};

use rrd_format::Header;
use rrd_sys::writeback::{sync_range, WriteBack};

use crate::error::{Error, Result, SizeLimit};
use crate::pagecache::{self, Advice};
use crate::root::Root;
use crate::tempclean::TempRegistration;

/// Files a group holds before the caller should commit it (each keeps a
/// descriptor open until the commit).
pub const GROUP_FILES: usize = 256;
/// Bytes a group holds (dirty, in the page cache) before the caller should
/// commit it.
pub const GROUP_BYTES: u64 = 64 << 20;
/// Groups of at least this many files are made durable by one `syncfs`
/// per filesystem (one journal commit and one flush of the disk's write
/// cache), smaller ones by an `fdatasync` per file and an `fsync` per
/// directory (each `fdatasync` flushes the disk's cache: about 1 ms per
/// file on a virtio disk, the cost this module exists to share).
pub const SYNCFS_FILES: usize = 8;
/// Larger files are written back and dropped from the cache in chunks of
/// this size while they are written.
pub const STREAM_BYTES: u64 = 16 << 20;

struct Staged {
    path: PathBuf,
    tmp: PathBuf,
    dir: PathBuf,
    /// The directory's descriptor, when the group is confined: the names
    /// below are then relative to it.
    at: Option<Arc<OwnedFd>>,
    name: OsString,
    tmp_name: OsString,
    file: File,
    _registration: Option<TempRegistration>,
}

impl Staged {
    fn rename(&self) -> io::Result<()> {
        match &self.at {
            Some(at) => Ok(rustix::fs::renameat(&**at, &self.tmp_name, &**at, &self.name)?),
            None => fs::rename(&self.tmp, &self.path),
        }
    }

    fn remove_tmp(&self) {
        remove_tmp(self.at.as_deref(), &self.tmp, &self.tmp_name);
    }
}

fn remove_tmp(at: Option<&OwnedFd>, tmp: &Path, tmp_name: &OsString) {
    match at {
        Some(at) => {
            let _ = rustix::fs::unlinkat(at, tmp_name, AtFlags::empty());
        }
        None => {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Whether `name` exists in `at` (a link counts, not followed).
fn exists_at(at: Option<&OwnedFd>, path: &Path, name: &OsString) -> bool {
    match at {
        Some(at) => rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW).is_ok(),
        None => fs::symlink_metadata(path).is_ok(),
    }
}

/// A group of new files written to temporary names, made durable and
/// renamed together by [`NewFiles::commit`]. Dropping a group with staged
/// files removes their temporary files (they were never reported).
pub struct NewFiles {
    staged: Vec<Staged>,
    /// Where targets may be made ([`NewFiles::in_root`]).
    root: Root,
    staged_bytes: u64,
    signal_cleanup: bool,
    /// Tests: the `fdatasync` of the file with this index in the next
    /// commit fails with EIO.
    sync_fault: Option<usize>,
}

impl Default for NewFiles {
    fn default() -> Self {
        Self::new()
    }
}

impl NewFiles {
    pub fn new() -> NewFiles {
        NewFiles::in_root(Root::Anywhere)
    }

    /// A group whose files are made only beneath `root` (anywhere, by
    /// name, for [`Root::Anywhere`]): each target's directory is opened
    /// beneath it and the files are made relative to its descriptor.
    pub fn in_root(root: Root) -> NewFiles {
        NewFiles { staged: Vec::new(), root, staged_bytes: 0, signal_cleanup: false, sync_fault: None }
    }

    /// Removes this group's temporary files when SIGINT, SIGTERM or SIGHUP
    /// ends the process (for single-threaded command-line use: see
    /// `tempclean`).
    pub fn remove_temps_on_signal(&mut self, on: bool) {
        self.signal_cleanup = on;
    }

    /// Fault injection for tests: in the next commit, the sync of the
    /// file staged with this index fails with EIO.
    #[doc(hidden)]
    pub fn fail_sync_of(&mut self, index: usize) {
        self.sync_fault = Some(index);
    }

    /// Files staged and not yet committed.
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Whether the group holds [`GROUP_FILES`] files or [`GROUP_BYTES`]
    /// bytes: time to commit.
    pub fn is_full(&self) -> bool {
        self.staged.len() >= GROUP_FILES || self.staged_bytes >= GROUP_BYTES
    }

    /// Whether `path` (as given) is staged: a second file for it, or
    /// anything that reads it, must wait for the commit.
    pub fn is_staged(&self, path: &Path) -> bool {
        self.staged.iter().any(|s| s.path == path)
    }

    /// Writes `header` then whatever `data` writes to a temporary file
    /// beside `path`; [`NewFiles::commit`] makes it durable and gives it
    /// the name. Returns the file's index in the group's results.
    pub fn stage(
        &mut self,
        path: &Path,
        header: &Header,
        no_overwrite: bool,
        data: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<usize> {
        if self.is_staged(path) {
            if no_overwrite {
                return Err(Error::Exists { path: path.to_path_buf() });
            }
            return Err(Error::invalid(format!(
                "creating '{}': the file is being created already (commit first)",
                path.display()
            )));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let file_name = path
            .file_name()
            .ok_or_else(|| Error::invalid(format!("'{}' is not a file name", path.display())))?;
        let io_err = |source| Error::Io { path: path.to_path_buf(), source };
        let at = self.root.open_dir(&dir).map_err(io_err)?.map(Arc::new);
        let name = file_name.to_os_string();
        if no_overwrite && exists_at(at.as_deref(), path, &name) {
            return Err(Error::Exists { path: path.to_path_buf() });
        }
        let len = header.layout().file_len;
        check_free_space(path, &dir, at.as_deref(), len)?;
        let mut tmp_name = file_name.to_os_string();
        tmp_name.push(format!(".tmp{}", std::process::id()));
        let tmp = dir.join(&tmp_name);
        let file = match &at {
            Some(at) => {
                let flags =
                    OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                rustix::fs::openat(&**at, &tmp_name, flags, Mode::from_raw_mode(0o666))
                    .map(File::from)
                    .map_err(io::Error::from)
            }
            None => fs::OpenOptions::new().write(true).create_new(true).open(&tmp),
        }
        .map_err(io_err)?;
        let registration = if self.signal_cleanup { crate::tempclean::register(&tmp) } else { None };
        let written = (|| -> io::Result<File> {
            let mut out = io::BufWriter::with_capacity(1 << 16, Streaming::new(file, len));
            out.write_all(&header.encode())?;
            data(&mut out)?;
            let file = out.into_inner().map_err(|e| e.into_error())?.file;
            // Keep the mode of a file we replace; otherwise 0666 minus umask.
            let replaced = match &at {
                // Not through a link: only a regular file of the directory.
                Some(at) => rustix::fs::statat(&**at, &name, AtFlags::SYMLINK_NOFOLLOW)
                    .ok()
                    .filter(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG)
                    .map(|st| st.st_mode & 0o7777),
                None => fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o7777),
            };
            let mode = match replaced {
                Some(mode) => mode,
                None => {
                    // umask is process-wide and always succeeds; it is read and restored.
                    let mask = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
                    rustix::process::umask(mask);
                    let mask = mask.as_raw_mode();
                    0o666 & !mask
                }
            };
            file.set_permissions(fs::Permissions::from_mode(mode))?;
            // Start writing it back now, so that the disk writes this file
            // while the caller prepares the next ones; the commit then
            // waits only for what is still in flight.
            // An error shows again at the commit's fdatasync.
            let _ = sync_range(&file, 0, 0, WriteBack::Start);
            Ok(file)
        })();
        match written {
            Ok(file) => {
                self.staged.push(Staged {
                    path: path.to_path_buf(),
                    tmp,
                    dir,
                    at,
                    name,
                    tmp_name,
                    file,
                    _registration: registration,
                });
                self.staged_bytes += len;
                Ok(self.staged.len() - 1)
            }
            Err(e) => {
                remove_tmp(at.as_deref(), &tmp, &tmp_name);
                Err(io_err(e))
            }
        }
    }

    /// Makes every staged file durable under its name; one result per
    /// staged file, in staging order. A failed file's temporary file is
    /// removed and its target left as it was (unless only the directory
    /// sync failed: then it is renamed but not known to be durable).
    pub fn commit(&mut self) -> Vec<Result<()>> {
        let staged = std::mem::take(&mut self.staged);
        self.staged_bytes = 0;
        let fault = self.sync_fault.take();
        // Start the write-back of every file, then wait for all of it,
        // before any fdatasync: ext4 allocates at write-back and converts
        // the extents when the writes complete, each in the running
        // transaction, so after these waits one journal commit (the first
        // fdatasync's) carries every file's metadata and the other
        // fdatasyncs find nothing left to commit. Interleaving them with
        // the renames would cost one commit per file.
        for how in [WriteBack::Start, WriteBack::Wait] {
            for s in &staged {
                // Errors are ignored: fdatasync below reports them.
                let _ = sync_range(&s.file, 0, 0, how);
            }
        }
        let mut results: Vec<Result<()>> = Vec::with_capacity(staged.len());
        let per_file = staged.len() < SYNCFS_FILES;
        for (i, s) in staged.iter().enumerate() {
            let synced = if fault == Some(i) {
                Err(io::Error::from_raw_os_error(libc::EIO))
            } else if per_file {
                s.file.sync_data()
            } else {
                Ok(())
            };
            // Written back (and so clean) now: the pages go (the rrd-developers mmap thread: a
            // new file's pages would evict the hot pages of files being
            // updated).
            results.push(
                synced
                    .and_then(|()| pagecache::advise(&s.file, Advice::DontNeed, 0, 0))
                    .map_err(|e| Error::Io { path: s.path.clone(), source: e }),
            );
        }
        let mut dirs: BTreeMap<PathBuf, Option<Arc<OwnedFd>>> = BTreeMap::new();
        for (s, r) in staged.iter().zip(results.iter_mut()) {
            if r.is_ok() {
                match s.rename() {
                    Ok(()) => {
                        dirs.entry(s.dir.clone()).or_insert_with(|| s.at.clone());
                    }
                    Err(e) => *r = Err(Error::Io { path: s.path.clone(), source: e }),
                }
            }
            if r.is_err() {
                s.remove_tmp();
            }
        }
        // The renames (and, for a large group, the files' metadata and the
        // disk's write cache): one fsync per directory, or one syncfs per
        // filesystem.
        let mut synced_devices = BTreeSet::new();
        for (dir, at) in dirs {
            let opened = match at {
                Some(at) => at.try_clone().map(File::from),
                None => File::open(&dir),
            };
            let done = opened.and_then(|d| {
                if per_file {
                    return d.sync_all();
                }
                let dev = std::os::unix::fs::MetadataExt::dev(&d.metadata()?);
                if !synced_devices.insert(dev) {
                    return Ok(());
                }
                rustix::fs::syncfs(&d).map_err(io::Error::from)
            });
            if let Err(e) = done {
                for (s, r) in staged.iter().zip(results.iter_mut()) {
                    if r.is_ok() && s.dir == dir {
                        *r = Err(Error::Io {
                            path: s.path.clone(),
                            source: io::Error::new(
                                e.kind(),
                                format!("syncing its directory {} after the rename: {e}", dir.display()),
                            ),
                        });
                    }
                }
            }
        }
        results
    }
}

impl Drop for NewFiles {
    fn drop(&mut self) {
        for s in self.staged.drain(..) {
            s.remove_tmp();
        }
    }
}

/// Writes one new file durably by itself (a group of one).
pub fn write_one(
    path: &Path,
    header: &Header,
    no_overwrite: bool,
    data: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    write_one_in(&Root::Anywhere, path, header, no_overwrite, data)
}

/// [`write_one`] beneath `root` ([`NewFiles::in_root`]).
pub fn write_one_in(
    root: &Root,
    path: &Path,
    header: &Header,
    no_overwrite: bool,
    data: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let mut group = NewFiles::in_root(root.clone());
    group.stage(path, header, no_overwrite, data)?;
    group.commit().pop().expect("one staged file, one result")
}

/// Refuses a file of `len` bytes that the filesystem of `dir` has no room
/// for (the space available to this user, as `df` shows it).
fn check_free_space(path: &Path, dir: &Path, at: Option<&OwnedFd>, len: u64) -> Result<()> {
    let st = match at {
        Some(at) => rustix::fs::fstatvfs(at),
        None => rustix::fs::statvfs(dir),
    };
    let Ok(st) = st else {
        // Nothing to check against (the open will report a bad directory).
        return Ok(());
    };
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    if len > free {
        let (action, limit) = (
            format!("creating '{}'", path.display()),
            SizeLimit::FreeSpace { free_bytes: free, dir: dir.into() },
        );
        return Err(Error::TooLarge { action, len_bytes: len, limit });
    }
    Ok(())
}

/// `1.5 GiB`-style sizes for messages.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The temporary file, written through; for a file larger than
/// [`STREAM_BYTES`], each finished chunk is written back and dropped from
/// the cache while the next is written.
struct Streaming {
    file: File,
    streaming: bool,
    written: u64,
    /// Start of the chunk not yet handed to write-back.
    chunk_start: u64,
    /// Start of the chunk handed to write-back, not yet dropped.
    behind: Option<u64>,
}

impl Streaming {
    fn new(file: File, len: u64) -> Streaming {
        Streaming { file, streaming: len > STREAM_BYTES, written: 0, chunk_start: 0, behind: None }
    }

    fn chunk_done(&mut self) -> io::Result<()> {
        let end = self.written;
        // An error here shows again at the commit's fdatasync.
        let _ = sync_range(&self.file, self.chunk_start, end - self.chunk_start, WriteBack::Start);
        if let Some(start) = self.behind {
            let len = self.chunk_start - start;
            sync_range(&self.file, start, len, WriteBack::Wait)?;
            pagecache::advise(&self.file, Advice::DontNeed, start, len)?;
        }
        self.behind = Some(self.chunk_start);
        self.chunk_start = end;
        Ok(())
    }
}

impl Write for Streaming {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.streaming && self.written - self.chunk_start >= STREAM_BYTES {
            self.chunk_done()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(human(512), "512 bytes");
        assert_eq!(human(3 << 30), "3.0 GiB");
        assert_eq!(human(1536), "1.5 KiB");
    }

    /// A directory on the disk (DONTNEED does nothing on tmpfs).
    fn disk_dir() -> tempfile::TempDir {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/newfile-tests");
        fs::create_dir_all(&base).unwrap();
        tempfile::tempdir_in(&base).unwrap()
    }

    fn header() -> Header {
        crate::testfile::header(&["DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:4000"])
    }

    fn nan_rows(out: &mut dyn Write) -> io::Result<()> {
        out.write_all(&[0xffu8; 8 * 4000])
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_file_takes_its_name_only_when_committed_and_leaves_no_pages() {
        let dir = disk_dir();
        let h = header();
        let mut group = NewFiles::new();
        for n in ["a.rrd", "b.rrd", "c.rrd"] {
            group.stage(&dir.path().join(n), &h, false, nan_rows).unwrap();
        }
        let pid = std::process::id();
        assert_eq!(
            names(dir.path()),
            [format!("a.rrd.tmp{pid}"), format!("b.rrd.tmp{pid}"), format!("c.rrd.tmp{pid}")]
        );
        assert!(group.is_staged(&dir.path().join("b.rrd")));
        assert!(group.commit().iter().all(|r| r.is_ok()));
        assert_eq!(names(dir.path()), ["a.rrd", "b.rrd", "c.rrd"]);
        for n in ["a.rrd", "b.rrd", "c.rrd"] {
            let f = File::open(dir.path().join(n)).unwrap();
            assert_eq!(f.metadata().unwrap().len(), h.layout().file_len);
            // DONTNEED drops only clean pages: none left means every page
            // was written back before the commit returned.
            assert_eq!(pagecache::resident_count(&f).unwrap().0, 0, "{n} has cached pages");
        }
    }

    #[test]
    fn a_failed_sync_is_an_error_and_leaves_the_old_file() {
        let dir = disk_dir();
        let h = header();
        fs::write(dir.path().join("b.rrd"), b"old").unwrap();
        let mut group = NewFiles::new();
        for n in ["a.rrd", "b.rrd", "c.rrd"] {
            group.stage(&dir.path().join(n), &h, false, nan_rows).unwrap();
        }
        group.fail_sync_of(1);
        let results = group.commit();
        assert!(results[0].is_ok() && results[2].is_ok());
        let e = results[1].as_ref().unwrap_err().to_string();
        assert!(e.contains("b.rrd") && e.contains("Input/output error"), "{e}");
        assert_eq!(fs::read(dir.path().join("b.rrd")).unwrap(), b"old");
        assert_eq!(names(dir.path()), ["a.rrd", "b.rrd", "c.rrd"]);
    }

    #[test]
    fn a_large_group_shares_one_syncfs_and_reports_each_failure() {
        let dir = disk_dir();
        let h = header();
        let mut group = NewFiles::new();
        let n = SYNCFS_FILES + 2;
        for i in 0..n {
            group.stage(&dir.path().join(format!("f{i:02}.rrd")), &h, false, nan_rows).unwrap();
        }
        group.fail_sync_of(4);
        let results = group.commit();
        assert_eq!(results.len(), n);
        for (i, r) in results.iter().enumerate() {
            assert_eq!(r.is_ok(), i != 4, "file {i}: {r:?}");
        }
        let expected: Vec<String> = (0..n).filter(|&i| i != 4).map(|i| format!("f{i:02}.rrd")).collect();
        assert_eq!(names(dir.path()), expected);
        for name in expected {
            let f = File::open(dir.path().join(&name)).unwrap();
            assert_eq!(pagecache::resident_count(&f).unwrap().0, 0, "{name} has cached pages");
        }
    }

    #[test]
    fn an_uncommitted_group_removes_its_temporary_files() {
        let dir = disk_dir();
        let mut group = NewFiles::new();
        group.stage(&dir.path().join("a.rrd"), &header(), false, nan_rows).unwrap();
        assert!(group.stage(&dir.path().join("a.rrd"), &header(), false, nan_rows).is_err());
        let e = group.stage(&dir.path().join("a.rrd"), &header(), true, nan_rows).unwrap_err();
        assert!(matches!(&e, Error::Exists { path } if path.ends_with("a.rrd")), "{e:?}");
        assert!(e.to_string().ends_with("File exists"), "{e}");
        drop(group);
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn a_failed_write_removes_the_temporary_file() {
        let dir = disk_dir();
        let mut group = NewFiles::new();
        let e = group
            .stage(&dir.path().join("a.rrd"), &header(), false, |_| {
                Err(io::Error::from_raw_os_error(libc::ENOSPC))
            })
            .unwrap_err();
        assert!(e.to_string().contains("No space left on device"), "{e}");
        assert!(names(dir.path()).is_empty());
        assert!(group.is_empty());
    }

    #[test]
    fn no_room_is_refused_before_writing() {
        let dir = disk_dir();
        let e = check_free_space(Path::new("big.rrd"), dir.path(), None, u64::MAX / 2).unwrap_err();
        assert!(
            matches!(&e, Error::TooLarge { limit: SizeLimit::FreeSpace { dir: d, .. }, .. } if d == dir.path()),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.starts_with(
                "creating 'big.rrd': the file would be 9223372036854775807 bytes (8192.0 PiB), but only "
            ),
            "{e}"
        );
        assert!(e.contains("are free on the filesystem of"), "{e}");
    }

    /// Confined: files are made beneath the root, also in the root
    /// directory itself; a directory that became a link out of the root
    /// (swapped after any check by name) is refused, and nothing is
    /// written there: no temporary file, no target.
    #[test]
    fn a_confined_group_makes_nothing_through_a_swapped_directory() {
        let base = disk_dir();
        let outside = disk_dir();
        let b = base.path();
        std::fs::create_dir(b.join("sub")).unwrap();
        let root = Root::beneath(b).unwrap();
        let mut group = NewFiles::in_root(root.clone());
        group.stage(&b.join("top.rrd"), &header(), false, nan_rows).unwrap();
        group.stage(&b.join("sub/in.rrd"), &header(), false, nan_rows).unwrap();
        assert!(group.commit().iter().all(Result::is_ok));
        assert_eq!(names(b), ["sub", "top.rrd"]);
        assert_eq!(names(&b.join("sub")), ["in.rrd"]);
        // The directory checked by name, then swapped for a link out.
        std::fs::rename(b.join("sub"), b.join("old-sub")).unwrap();
        std::os::unix::fs::symlink(outside.path(), b.join("sub")).unwrap();
        let e = group.stage(&b.join("sub/in.rrd"), &header(), false, nan_rows).unwrap_err();
        assert!(matches!(&e, Error::Io { source, .. } if Root::is_escape(source)), "{e:?}");
        let e = write_one_in(&root, &b.join("sub/new.rrd"), &header(), false, nan_rows).unwrap_err();
        assert!(matches!(&e, Error::Io { source, .. } if Root::is_escape(source)), "{e:?}");
        assert!(names(outside.path()).is_empty(), "{:?}", names(outside.path()));
        // Not confined, the same name goes through the link.
        write_one(&b.join("sub/new.rrd"), &header(), false, nan_rows).unwrap();
        assert_eq!(names(outside.path()), ["new.rrd"]);
    }
}
