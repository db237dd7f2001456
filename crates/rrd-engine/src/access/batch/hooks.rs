//! The store an update writes through ([`HookedFile`]), and the tests'
//! fault hook it calls ([`FaultHook`], compiled only for tests and the
//! `fault-injection` feature).

use std::fs::File;
use std::io;
#[cfg(any(test, feature = "fault-injection"))]
use std::path::Path;

use crate::store::Store;

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
    /// batch for each of its files ([`super::BatchUpdater::filesystems`]).
    fn sync(&self, path: &Path) -> io::Result<()>;
}

/// The store updates write through: the open file, with the fault hook.
pub(super) struct HookedFile<'a> {
    pub(super) file: &'a File,
    #[cfg(any(test, feature = "fault-injection"))]
    pub(super) path: &'a Path,
    #[cfg(any(test, feature = "fault-injection"))]
    pub(super) hook: Option<&'a dyn FaultHook>,
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
