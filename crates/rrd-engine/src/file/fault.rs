//! A [`Store`] that fails on purpose: [`FaultStore`] consults a
//! [`FaultPlan`] (rrd-testkit's, the workspace's one fault-injection
//! mechanism: counting per operation kind, rules, actions, the text
//! syntax, `clear`) before each read, write and sync, so the Nth one fails
//! with an errno or `io::ErrorKind`, or moves only the first bytes of its
//! buffer and then fails ([`Action::Partial`]: a short write that the retry
//! of `write_all` could not complete, e.g. ENOSPC). A store moves all its
//! bytes or fails, so a plain [`Action::Short`] also ends in EIO.
//!
//! For tests of what a failed update leaves behind (the engine writes rows
//! in file order, then the live header; a failure stops there), and for
//! other crates' tests. Compiled only for tests: this crate's, and other
//! crates' through the `fault-injection` feature (which also brings in
//! rrd-testkit, an optional dependency), so no release build carries it.
//!
//! [`Store`] has no sync; [`SyncData`] adds one (`fdatasync` for files,
//! nothing for memory) so the Nth sync can fail too.

use std::fs::File;
use std::io;
use std::sync::Arc;

use crate::store::{MemStore, Store};
/// The plan [`FaultStore`] obeys, re-exported so the engine's users need
/// no dependency of their own on rrd-testkit.
pub use rrd_testkit::fault::{Action, FaultPlan, Op, EIO, ENOSPC};

/// `fdatasync` for stores that have one.
pub trait SyncData {
    fn sync_data(&self) -> io::Result<()>;
}

impl SyncData for File {
    fn sync_data(&self) -> io::Result<()> {
        File::sync_data(self)
    }
}

impl SyncData for &File {
    fn sync_data(&self) -> io::Result<()> {
        File::sync_data(self)
    }
}

impl SyncData for MemStore {
    /// Memory is as durable as it gets.
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
}

/// Wraps a store; its reads, writes and syncs are [`Op::Read`],
/// [`Op::Write`] and [`Op::Sync`] of its plan.
#[derive(Debug)]
pub struct FaultStore<S> {
    inner: S,
    plan: Arc<FaultPlan>,
}

impl<S> FaultStore<S> {
    /// No faults until a rule is added to [`FaultStore::plan`].
    pub fn new(inner: S) -> FaultStore<S> {
        FaultStore::with_plan(inner, FaultPlan::new())
    }

    /// Obeys `plan`, which others may share (one count across stores).
    pub fn with_plan(inner: S, plan: Arc<FaultPlan>) -> FaultStore<S> {
        FaultStore { inner, plan }
    }

    /// The rules and counts.
    pub fn plan(&self) -> &Arc<FaultPlan> {
        &self.plan
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }

    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Store> Store for FaultStore<S> {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.plan.transfer_exact(Op::Read, buf.len(), |n| self.inner.read_at(&mut buf[..n], offset))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.plan.transfer_exact(Op::Write, buf.len(), |n| self.inner.write_at(&buf[..n], offset))
    }
}

impl<S: Store> Store for &FaultStore<S> {
    fn len(&self) -> io::Result<u64> {
        (*self).len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (*self).read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        (*self).write_at(buf, offset)
    }
}

impl<S: SyncData> SyncData for FaultStore<S> {
    fn sync_data(&self) -> io::Result<()> {
        self.plan.gate(Op::Sync)?;
        self.inner.sync_data()
    }
}

impl<S: SyncData> SyncData for &FaultStore<S> {
    fn sync_data(&self) -> io::Result<()> {
        (*self).sync_data()
    }
}

#[cfg(test)]
mod tests {
    //! What a failed update leaves: for every write an update issues, and
    //! for each way it can fail, the store still decodes as an RRD (and
    //! `rrdtool info` reads the real file), and a retry of the same update
    //! gives exactly the bytes of an update that never failed.

    use std::path::Path;

    use super::*;
    use crate::create::create;
    use crate::rrd::Rrd;
    use crate::update::{update_rrd, Now, UpdateOptions};

    const T0: i64 = 1_000_000_000;

    fn new_file(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("f.rrd");
        let defs = crate::testfile::defs(&[
            "DS:x:GAUGE:600:U:U",
            "DS:y:COUNTER:600:U:U",
            "RRA:AVERAGE:0.5:1:20",
            "RRA:MAX:0.5:3:20",
            "RRA:AVERAGE:0.5:6:10",
        ]);
        create(&path, &crate::testfile::opts(T0, 300), &defs, T0).unwrap();
        path
    }

    /// Crosses several PDP and CDP boundaries: many row writes, then the header.
    fn args() -> Vec<String> {
        (1..=7).map(|k| format!("{}:{}:{}", T0 + 300 * k, k * 10, k * 1000)).collect()
    }

    fn now() -> Now {
        Now { secs: T0 + 10_000, usecs: 0 }
    }

    fn update<S: Store>(store: S) -> crate::Result<()> {
        let mut rrd = Rrd::from_store(Path::new("f.rrd"), store)?;
        let report = update_rrd(&mut rrd, &args(), &UpdateOptions::default(), false, now())?;
        assert!(report.error.is_none(), "{:?}", report.error);
        Ok(())
    }

    fn decodes(bytes: &[u8]) {
        if let Err(e) = rrd_format::Header::decode(bytes, bytes.len() as u64) {
            panic!("the file no longer decodes: {e}");
        }
    }

    fn clean_and_write_count(original: &[u8]) -> (Vec<u8>, u64) {
        let counted = FaultStore::new(MemStore::new(original.to_vec()));
        update(&counted).unwrap();
        let writes = counted.plan().count(Op::Write);
        (counted.into_inner().into_inner(), writes)
    }

    #[test]
    fn a_failed_row_or_header_write_leaves_a_valid_file_and_a_retry_matches() {
        let dir = tempfile::tempdir().unwrap();
        let original = std::fs::read(new_file(dir.path())).unwrap();
        let (clean, writes) = clean_and_write_count(&original);
        assert!(writes >= 4, "the update should write several rows and the header ({writes} writes)");
        assert_ne!(clean, original);
        for nth in 1..=writes {
            let header = nth == writes;
            let mut faults = vec![Action::Fail(EIO), Action::Kind(io::ErrorKind::StorageFull)];
            if !header {
                // A row write stopped part-way: harmless, the retry rewrites the row.
                faults.push(Action::Partial { bytes: 3, errno: ENOSPC });
            }
            for fault in faults {
                let store = FaultStore::new(MemStore::new(original.clone()));
                store.plan().inject(Op::Write, nth, fault);
                let err = update(&store).expect_err("the update must report the failed write");
                assert!(matches!(err, crate::Error::Io { .. }), "write {nth}: {err}");
                decodes(&store.inner().0.lock().unwrap());
                update(&store).unwrap_or_else(|e| panic!("retry after write {nth} failed ({fault:?}): {e}"));
                assert!(
                    *store.inner().0.lock().unwrap() == clean,
                    "retry after write {nth} ({fault:?}) differs"
                );
            }
        }
    }

    /// A header write that stops part-way (in practice only a power loss
    /// tears a sub-page pwrite of an allocated file) still leaves a file
    /// that decodes, whatever the cut; the live head can then be a mix of
    /// old and new, which no retry can repair (rrdtool's format has no
    /// checksum): docs/journal.md, "RRD files".
    #[test]
    fn a_torn_header_write_still_decodes() {
        let dir = tempfile::tempdir().unwrap();
        let original = std::fs::read(new_file(dir.path())).unwrap();
        let (_, writes) = clean_and_write_count(&original);
        let live_len = {
            let rrd = Rrd::from_store(Path::new("f.rrd"), MemStore::new(original.clone())).unwrap();
            rrd.header.encode_live().len()
        };
        for cut in (0..live_len).step_by(4) {
            let store = FaultStore::new(MemStore::new(original.clone()));
            store.plan().inject(Op::Write, writes, Action::Partial { bytes: cut, errno: EIO });
            assert!(update(&store).is_err());
            decodes(&store.inner().0.lock().unwrap());
        }
    }

    /// The same on a real file, checked by the real rrdtool: after a failed
    /// write `rrdtool info` reads it, and after the retry the file equals
    /// the fault-free result byte for byte.
    #[test]
    fn a_real_file_survives_a_failed_write_for_rrdtool() {
        let rrdtool = Path::new("/usr/bin/rrdtool");
        assert!(
            rrdtool.exists(),
            "rrdtool is not installed (apt-get install rrdtool): /usr/bin/rrdtool missing"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = new_file(dir.path());
        let original = std::fs::read(&path).unwrap();
        let (clean, writes) = clean_and_write_count(&original);
        for nth in [1, writes / 2, writes] {
            std::fs::write(&path, &original).unwrap();
            let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
            let store = FaultStore::new(file);
            store.plan().inject(Op::Write, nth, Action::Fail(ENOSPC));
            assert!(update(&store).is_err());
            let info = std::process::Command::new(rrdtool)
                .arg("info")
                .arg(&path)
                .env("TZ", "UTC")
                .output()
                .expect("running rrdtool");
            assert!(info.status.success(), "rrdtool info: {}", String::from_utf8_lossy(&info.stderr));
            assert!(String::from_utf8_lossy(&info.stdout).contains("last_update = "));
            update(&store).unwrap();
            store.sync_data().unwrap();
            assert!(std::fs::read(&path).unwrap() == clean, "write {nth}: retry differs from a clean update");
        }
    }

    #[test]
    fn reads_and_syncs_fail_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let original = std::fs::read(new_file(dir.path())).unwrap();
        let store = FaultStore::new(MemStore::new(original.clone()));
        store.plan().inject(Op::Read, 1, Action::Partial { bytes: 10, errno: EIO });
        assert!(Rrd::from_store(Path::new("f.rrd"), &store).is_err());
        assert!(Rrd::from_store(Path::new("f.rrd"), &store).is_ok(), "only the first read fails");
        store.plan().inject_from(Op::Sync, 2, Action::Kind(io::ErrorKind::Other));
        assert!(store.sync_data().is_ok());
        assert!(store.sync_data().is_err());
        assert!(store.sync_data().is_err());
        store.plan().clear();
        assert!(store.sync_data().is_ok());
        assert_eq!(store.plan().count(Op::Sync), 4);
        assert!(*store.inner().0.lock().unwrap() == original, "reads and syncs change nothing");
    }
}
