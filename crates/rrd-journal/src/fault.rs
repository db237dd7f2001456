//! Fault injection for the journal's I/O: [`FaultyIo`] wraps another
//! [`JournalIo`] and, before each segment creation, append `write`,
//! `fdatasync` and truncate-back, consults a [`FaultPlan`] (rrd-testkit's,
//! the workspace's one fault-injection mechanism: counting per operation
//! kind across all segments, rules, actions, the text syntax, `clear`).
//! This module only maps the journal's operations to the plan's
//! [`Op::Create`], [`Op::Write`], [`Op::Sync`] and [`Op::Truncate`]; a short
//! write ([`Action::Short`]) is reported as `write(2)` reports one.
//!
//! Compiled only for tests: this crate's own, and, through the
//! `fault-injection` feature (which also brings in rrd-testkit, an
//! optional dependency), the daemon's (`rrd_daemon::server::
//! inject_journal_faults` takes a plan in [`FaultPlan::parse`]'s syntax).
//! No release build contains it, so no environment variable or option of a
//! production binary can make the journal fail.
//!
//! [`RecordingIo`] is the journal's side of the power-loss tests: the same
//! operations as [`crate::io::OsIo`], step by step, each recorded in an
//! `rrd_testkit::power::PowerLog` (create, header write, file sync,
//! directory sync; appends with their offset and bytes; syncs; truncates;
//! unlinks and the directory sync after them), from which the tests build
//! what a power loss could leave. [`RecordingIo::mapped`] records what
//! [`crate::io::MappedIo`] does to the file instead: each window reserved
//! (the file grown to the window's end with zeros, durable at the next
//! sync), each store as a write at its offset, the reserved space given
//! back when the segment is sealed or dropped. A store through a mapping
//! reaches the disk as the page cache's write-back does, which is what a
//! recorded write models: kept, lost or torn per sector until a sync.
//!
//! Deliberately absent: faults in replay (plain `std::fs`, see [`crate::io`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::io::{JournalIo, SegmentFile};
/// The plan [`FaultyIo`] obeys, re-exported so the journal's users need
/// no dependency of their own on rrd-testkit.
pub use rrd_testkit::fault::{Action, FaultPlan, Op, EIO, ENOSPC};
pub use rrd_testkit::power::{Op as PowerOp, PowerLog};

/// A [`JournalIo`] that obeys a [`FaultPlan`] and otherwise does what the
/// wrapped one does.
pub struct FaultyIo {
    inner: Arc<dyn JournalIo>,
    plan: Arc<FaultPlan>,
}

impl FaultyIo {
    pub fn new(inner: Arc<dyn JournalIo>, plan: Arc<FaultPlan>) -> FaultyIo {
        FaultyIo { inner, plan }
    }
}

impl JournalIo for FaultyIo {
    fn create_segment(&self, path: &Path, header: &[u8]) -> io::Result<Arc<dyn SegmentFile>> {
        self.plan.gate(Op::Create)?;
        let file = self.inner.create_segment(path, header)?;
        Ok(Arc::new(FaultyFile { inner: file, plan: self.plan.clone() }))
    }
}

struct FaultyFile {
    inner: Arc<dyn SegmentFile>,
    plan: Arc<FaultPlan>,
}

impl SegmentFile for FaultyFile {
    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        self.plan.transfer(Op::Write, buf.len(), |n| self.inner.write(&buf[..n]))
    }
    fn sync_data(&self) -> io::Result<()> {
        self.plan.gate(Op::Sync)?;
        self.inner.sync_data()
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.plan.gate(Op::Truncate)?;
        self.inner.truncate(len)
    }
}

/// [`crate::io::OsIo`]'s operations, each recorded in a [`PowerLog`] as it
/// runs (see the module doc).
pub struct RecordingIo {
    log: Arc<PowerLog>,
    /// `Some(window)`: [`crate::io::MappedIo`]'s file operations.
    window: Option<u64>,
}

impl RecordingIo {
    /// [`crate::io::OsIo`]'s operations.
    pub fn new(log: Arc<PowerLog>) -> RecordingIo {
        RecordingIo { log, window: None }
    }

    /// [`crate::io::MappedIo`]'s operations, with windows of `window` bytes.
    pub fn mapped(log: Arc<PowerLog>, window: u64) -> RecordingIo {
        assert!(window > 0);
        RecordingIo { log, window: Some(window) }
    }
}

impl JournalIo for RecordingIo {
    fn create_segment(&self, path: &Path, header: &[u8]) -> io::Result<Arc<dyn SegmentFile>> {
        let log = &self.log;
        let p = path.to_path_buf();
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let file = log.run(PowerOp::Create(p.clone()), || {
            OpenOptions::new().create_new(true).read(true).write(true).open(path)
        })?;
        let made = log
            .write(path, 0, header, || file.write_all_at(header, 0).map(|()| header.len()))
            .and_then(|_| log.run(PowerOp::Sync(p.clone()), || file.sync_all()))
            .and_then(|()| log.run(PowerOp::SyncDir(dir.clone()), || crate::io::sync_dir(&dir)));
        if let Err(e) = made {
            drop(file);
            let _ = self.remove_segment(path);
            return Err(e);
        }
        let len = header.len() as u64;
        let ends = Mutex::new(Ends { len, reserved: len });
        Ok(Arc::new(RecordingFile { file, path: p, log: log.clone(), window: self.window, ends }))
    }
    fn remove_segment(&self, path: &Path) -> io::Result<()> {
        self.log.run(PowerOp::Remove(path.to_path_buf()), || std::fs::remove_file(path))
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.log.run(PowerOp::SyncDir(dir.to_path_buf()), || crate::io::sync_dir(dir))
    }
}

struct RecordingFile {
    file: File,
    path: PathBuf,
    log: Arc<PowerLog>,
    window: Option<u64>,
    ends: Mutex<Ends>,
}

/// Where the segment's records end, and the file (past them while a
/// window reserves space).
struct Ends {
    len: u64,
    reserved: u64,
}

impl RecordingFile {
    fn ends(&self) -> std::sync::MutexGuard<'_, Ends> {
        self.ends.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.log.run(PowerOp::SetLen { path: self.path.clone(), len }, || self.file.set_len(len))
    }
}

impl SegmentFile for RecordingFile {
    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        let mut ends = self.ends();
        if let Some(window) = self.window {
            // The windows the store reaches are reserved first.
            let end = ends.len + buf.len() as u64;
            if end > ends.reserved {
                let reserved = end.div_ceil(window) * window;
                self.set_len(reserved)?;
                ends.reserved = reserved;
            }
        }
        let offset = ends.len;
        let n = self.log.write(&self.path, offset, buf, || self.file.write_at(buf, offset))?;
        ends.len += n as u64;
        ends.reserved = ends.reserved.max(ends.len);
        Ok(n)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.log.run(PowerOp::Sync(self.path.clone()), || self.file.sync_data())
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut ends = self.ends();
        self.set_len(len)?;
        *ends = Ends { len, reserved: len };
        Ok(())
    }
    fn seal(&self) -> io::Result<()> {
        let mut ends = self.ends();
        if ends.reserved > ends.len {
            self.set_len(ends.len)?;
            ends.reserved = ends.len;
            self.log.run(PowerOp::Sync(self.path.clone()), || self.file.sync_all())?;
        }
        Ok(())
    }
}

impl Drop for RecordingFile {
    fn drop(&mut self) {
        let ends = self.ends.get_mut().unwrap_or_else(|p| p.into_inner());
        if ends.reserved > ends.len {
            let (path, len) = (self.path.clone(), ends.len);
            let _ = self.log.run(PowerOp::SetLen { path, len }, || self.file.set_len(len));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The adapter maps each journal operation to its kind: the Nth create,
    /// write, sync and truncate fail as planned, a short write reports its
    /// count, and the rest reach the real files.
    #[test]
    fn each_journal_operation_consults_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let plan =
            FaultPlan::parse("create@1=ENOSPC,write@1=short:2,write@2=EIO,sync@1=EIO,truncate@1=EROFS")
                .unwrap();
        let io = FaultyIo::new(Arc::new(crate::io::OsIo), plan.into());
        let path = dir.path().join("seg");
        let e = io.create_segment(&path, b"hdr").err().expect("the first create fails");
        assert_eq!(e.raw_os_error(), Some(ENOSPC));
        assert!(!path.exists(), "a faulted create touches nothing");
        let file = io.create_segment(&path, b"hdr").unwrap();
        assert_eq!(file.write(b"abcdef").unwrap(), 2);
        assert_eq!(file.write(b"abcdef").unwrap_err().raw_os_error(), Some(EIO));
        assert_eq!(file.write(b"xyz").unwrap(), 3);
        assert!(file.sync_data().is_err() && file.sync_data().is_ok());
        assert!(file.truncate(3).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"hdrabxyz");
        file.truncate(3).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"hdr");
    }
}
