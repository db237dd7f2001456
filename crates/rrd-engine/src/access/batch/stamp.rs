//! A file's decoded header kept between updates, and the `stat` stamp
//! that proves nobody changed the file since (see the module doc of
//! `batch`: the racy-clean window).

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rrd_format::Header;

use crate::error::{Error, Result};
use crate::pagecache::{advise, Advice};
use crate::root::Root;
use crate::rrd::{lock_file, Locking, Rrd};
use crate::store::Store;

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

pub(super) fn now_ns() -> i128 {
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
    /// With [`super::BatchUpdater::stamp_by_clock`]: the wall-clock time right
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

    pub(super) fn note_written(&mut self, pages: &[u64]) {
        for &p in pages {
            if let Err(at) = self.written_pages.binary_search(&p) {
                self.written_pages.insert(at, p);
            }
        }
    }
}

/// A file whose length was just taken (by the caller's `fstat`).
pub(super) struct KnownLen<'a> {
    pub(super) file: &'a File,
    pub(super) len_bytes: u64,
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
