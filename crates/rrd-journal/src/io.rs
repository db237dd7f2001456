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
//! Two implementations:
//! - [`MappedIo`], what the journal uses: a segment is written through a
//!   shared mapping of a window of it (4 MiB, reserved on disk with
//!   `fallocate(2)` before it is mapped), so an append is a copy into the
//!   page cache and no system call. Why, and why it is as durable, is in
//!   docs/journal.md ("Segments written through a mapping").
//! - [`OsIo`]: one [`SegmentFile::write`] is one `write(2)`, one
//!   [`SegmentFile::write_vectored`] one `writev(2)`. What [`MappedIo`]
//!   falls back to where a file system cannot reserve or map.
//!
//! Deliberately absent: buffering. When a write returns, its bytes are in
//! the page cache (a process crash cannot lose them).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rrd_sys::map::SharedMap;

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
    /// Called when the journal moves on to the next segment, after a
    /// successful sync of this one: a segment that reserved space beyond
    /// its records gives it back, durably, so that the segment ends with
    /// its last record as a segment written with `write(2)` does.
    fn seal(&self) -> io::Result<()> {
        Ok(())
    }
}

/// The real thing: `std::fs` on the local file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsIo;

/// `fsync` of a directory, which makes the names in it durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Creates `path` (which must not exist) holding `header`, and makes the
/// file and its name durable. On failure nothing is left at `path`: a
/// half-made segment would block the next attempt (`create_new`) and, if
/// later segments followed it, read as corruption.
fn create_durable(path: &Path, header: &[u8], options: &OpenOptions) -> io::Result<File> {
    let mut file = options.clone().create_new(true).open(path)?;
    let made = file.write_all(header).and_then(|()| file.sync_all()).and_then(|()| {
        // The new name must be durable too, or a crash could lose the segment.
        sync_dir(path.parent().unwrap_or(Path::new(".")))
    });
    if let Err(e) = made {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(file)
}

impl JournalIo for OsIo {
    fn create_segment(&self, path: &Path, header: &[u8]) -> io::Result<Arc<dyn SegmentFile>> {
        let file = create_durable(path, header, OpenOptions::new().append(true))?;
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

/// The window of a segment that [`MappedIo`] maps at a time.
pub const MAP_WINDOW: u64 = 4 << 20;

/// Writes from this size on go with `pwritev(2)` rather than being copied
/// into the mapping. A copy into a page the segment has not used yet
/// faults (and the kernel zeroes the page before the copy fills it), and
/// every page written back while mapped is write-protected again, with a
/// TLB flush; past a few pages that costs more than one system call (bulk
/// BATCHes under `--sync always` lost a quarter of their rate copied,
/// docs/BENCHMARKS.md). Both reach the same page cache pages.
pub const COPY_MAX: usize = 16 << 10;

/// Segments written through a shared mapping of a window of the file (see
/// the module doc). The window moves forward as records fill it: the next
/// one is reserved with `fallocate(2)`, so a store never needs a block the
/// disk does not have (which would be `SIGBUS`, not an error), and a full
/// disk is an error of the append that needs the next window, handled as a
/// failed `write(2)` is. Writes of [`COPY_MAX`] bytes or more go with
/// `pwritev(2)` at the segment's length instead (a BATCH's commit);
/// where the file system cannot reserve or map (`EOPNOTSUPP`, `ENODEV`),
/// every buffer is.
#[derive(Clone, Copy, Debug)]
pub struct MappedIo {
    window: u64,
}

impl Default for MappedIo {
    fn default() -> MappedIo {
        MappedIo { window: MAP_WINDOW }
    }
}

impl MappedIo {
    /// Windows of `bytes` (tests use small ones to cross many). Panics
    /// unless `bytes` is a non-zero multiple of the page size.
    pub fn with_window(bytes: u64) -> MappedIo {
        let page = rustix::param::page_size() as u64;
        assert!(
            bytes > 0 && bytes.is_multiple_of(page),
            "a window is whole pages ({page} bytes), not {bytes}"
        );
        MappedIo { window: bytes }
    }
}

impl JournalIo for MappedIo {
    fn create_segment(&self, path: &Path, header: &[u8]) -> io::Result<Arc<dyn SegmentFile>> {
        let file = create_durable(path, header, OpenOptions::new().read(true).write(true))?;
        let state = MapState { len: header.len() as u64, map: None, direct: false, reserved: false };
        Ok(Arc::new(MappedFile { file, window: self.window, state: Mutex::new(state) }))
    }
}

struct MappedFile {
    file: File,
    window: u64,
    state: Mutex<MapState>,
}

struct MapState {
    /// The segment's length: where the next record goes. The file is longer
    /// while a window reserves space past it (zeros, read as "unused" by
    /// recovery).
    len: u64,
    /// The window holding `len`, and its offset in the file.
    map: Option<(u64, SharedMap)>,
    /// The file system cannot reserve or map: `pwrite(2)` at `len`.
    direct: bool,
    /// A window reserved space past `len` since the file last ended at
    /// `len` (created, truncated or sealed).
    reserved: bool,
}

/// A failure to reserve or map that says "not on this file system", as
/// opposed to "no room" or an I/O error.
fn is_unsupported(e: &io::Error) -> bool {
    const ENODEV: i32 = 19;
    const EOPNOTSUPP: i32 = 95;
    matches!(e.raw_os_error(), Some(ENODEV | EOPNOTSUPP)) || e.kind() == io::ErrorKind::Unsupported
}

impl MappedFile {
    fn state(&self) -> std::sync::MutexGuard<'_, MapState> {
        // A panic while holding this lock cannot leave `MapState` half
        // changed in a way that matters: `len` moves only after a store.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `buf` at the segment's end, window after window. Like
    /// `write(2)`, reports how much was stored when a later part fails.
    fn store(&self, st: &mut MapState, buf: &[u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.store_some(st, &buf[done..]) {
                Ok(0) => break,
                Ok(n) => {
                    st.len += n as u64;
                    done += n;
                }
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(done)
    }

    /// Stores a prefix of `buf` at `st.len`: what fits in the window that
    /// holds it (mapped first if need be).
    fn store_some(&self, st: &mut MapState, buf: &[u8]) -> io::Result<usize> {
        if st.direct {
            return self.file.write_at(buf, st.len);
        }
        let start = st.len - st.len % self.window;
        if !matches!(&st.map, Some((at, _)) if *at == start) {
            // Unmapped first: the pages keep their dirty state, and the
            // next fdatasync writes them.
            st.map = None;
            match self.map_window(start) {
                Ok(map) => {
                    st.map = Some((start, map));
                    st.reserved = true;
                }
                Err(e) if is_unsupported(&e) => {
                    st.direct = true;
                    return self.file.write_at(buf, st.len);
                }
                Err(e) => return Err(e),
            }
        }
        let (at, map) = st.map.as_ref().expect("mapped above");
        let offset = st.len - at;
        let n = buf.len().min((self.window - offset) as usize);
        map.write_at(&buf[..n], offset)?;
        Ok(n)
    }

    fn map_window(&self, start: u64) -> io::Result<SharedMap> {
        rrd_sys::map::allocate(&self.file, start, self.window)?;
        let len = usize::try_from(self.window).map_err(|_| io::Error::from(io::ErrorKind::Unsupported))?;
        SharedMap::window(&self.file, start, len)
    }
}

impl SegmentFile for MappedFile {
    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[io::IoSlice::new(buf)])
    }
    /// Copies the buffers into the mapping, or, from [`COPY_MAX`] bytes on
    /// (and where the file system cannot map), writes them.
    fn write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let mut st = self.state();
        // A commit's records come in many small buffers (one per staging
        // shard): what matters for the copy's cost is their sum.
        if st.direct || bufs.iter().map(|b| b.len()).sum::<usize>() >= COPY_MAX {
            let n = rustix::io::pwritev(&self.file, bufs, st.len)?;
            st.len += n as u64;
            return Ok(n);
        }
        let mut done = 0;
        for b in bufs {
            match self.store(&mut st, b) {
                Ok(n) if n == b.len() => done += n,
                Ok(n) => return Ok(done + n),
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(done)
    }
    fn sync_data(&self) -> io::Result<()> {
        // Writes back the pages dirtied through the mapping too: they are
        // the file's page cache pages (marked dirty when first stored to).
        self.file.sync_data()
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut st = self.state();
        st.map = None;
        self.file.set_len(len)?;
        st.len = len;
        st.reserved = false;
        Ok(())
    }
    fn seal(&self) -> io::Result<()> {
        let mut st = self.state();
        st.map = None;
        if st.reserved {
            self.file.set_len(st.len)?;
            self.file.sync_all()?;
            st.reserved = false;
        }
        Ok(())
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        st.map = None;
        if st.reserved {
            // Not synced: a segment left with its reserved zeros after a
            // power loss reads the same (recovery drops an unused tail).
            let _ = self.file.set_len(st.len);
        }
    }
}
