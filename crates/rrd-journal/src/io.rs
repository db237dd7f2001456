//! The journal's file I/O, behind a small trait so tests can inject faults
//! (the `fault` module, compiled for tests) without a special file system.
//!
//! Only the operations whose failure the journal must handle go through
//! here: creating a segment (create, header write, sync, directory sync, as
//! ONE operation), appending (`write`, which may be short), `fdatasync`, and
//! truncating back after a failed append; and removing segments (unlink,
//! then a directory sync), so that a recording of the journal's I/O
//! (`fault::RecordingIo`, for the power-loss tests) sees every name change.
//! Recovery ([`crate::replay`]) uses `std::fs` directly: it runs at startup,
//! and a failure there is an ordinary error, not a question of what was
//! acknowledged.
//!
//! Deliberately absent: buffering. One [`SegmentFile::write`] is one
//! `write(2)`, one [`SegmentFile::write_vectored`] one `writev(2)`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

/// Opens segment files. Shared by the journal and whoever configured it.
pub trait JournalIo: Send + Sync {
    /// Creates `path` (which must not exist) in append mode, writes `header`
    /// to it, makes the file and its name durable (file sync + directory
    /// sync), and returns it. On failure nothing may be left at `path`.
    fn create_segment(&self, path: &Path, header: &[u8]) -> io::Result<Arc<dyn SegmentFile>>;
    /// Unlinks a segment (made durable by a later [`JournalIo::sync_dir`]).
    fn remove_segment(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    /// `fsync` of the journal's directory.
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        sync_dir(dir)
    }
}

/// A segment open for appending. Shared (`&self`): the journal appends
/// under its owner's lock while a sync of the same file runs outside it
/// ([`crate::PendingSync`]); `fdatasync` covers every byte written before
/// it started, whoever wrote it.
pub trait SegmentFile: Send + Sync {
    /// One `write(2)` at the end of the file; may write fewer bytes than
    /// asked (a short write), as the system call may.
    fn write(&self, buf: &[u8]) -> io::Result<usize>;
    /// One `writev(2)` of `bufs`, in order, at the end of the file; may
    /// write fewer bytes than asked. The default writes the first non-empty
    /// buffer only (a short write by the rule above), so a wrapper that
    /// records or injects faults per `write` sees each buffer as its own.
    fn write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match bufs.iter().find(|b| !b.is_empty()) {
            Some(b) => self.write(b),
            None => Ok(0),
        }
    }
    /// `fdatasync(2)`.
    fn sync_data(&self) -> io::Result<()>;
    /// `ftruncate(2)` to `len` bytes (used to take back a failed append).
    fn truncate(&self, len: u64) -> io::Result<()>;
}

/// The real thing: `std::fs` on the local file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsIo;

/// `fsync` of a directory, which makes the names in it durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl JournalIo for OsIo {
    fn create_segment(&self, path: &Path, header: &[u8]) -> io::Result<Arc<dyn SegmentFile>> {
        let mut file = OpenOptions::new().create_new(true).append(true).open(path)?;
        let made = file.write_all(header).and_then(|()| file.sync_all()).and_then(|()| {
            // The new name must be durable too, or a crash could lose the segment.
            sync_dir(path.parent().unwrap_or(Path::new(".")))
        });
        if let Err(e) = made {
            // A half-made segment would block the next attempt (create_new)
            // and, if later segments followed it, read as corruption.
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        Ok(Arc::new(OsFile(file)))
    }
}

struct OsFile(File);

impl SegmentFile for OsFile {
    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        (&self.0).write(buf)
    }
    fn write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        (&self.0).write_vectored(bufs)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}
