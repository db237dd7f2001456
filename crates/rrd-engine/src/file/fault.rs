//! A [`Store`] that fails on purpose: the Nth read, write or sync fails
//! with a chosen `io::ErrorKind` or raw errno, or a write stores only the
//! first bytes of its buffer and then fails (a short write that the retry
//! of `write_all` could not complete, e.g. ENOSPC).
//!
//! For tests of what a failed update leaves behind (the engine writes rows
//! in file order, then the live header; a failure stops there), and for
//! other crates' tests. Compiled only for tests: this crate's, and other
//! crates' through the `fault-injection` feature (a dev-dependency
//! feature), so no release build carries it.
//!
//! Counting: every call of each kind is numbered from 1 across the
//! store's life; a rule names an operation kind, the first number it hits,
//! and how many it hits. [`FaultStore::clear`] lifts every rule.
//!
//! [`Store`] has no sync; [`SyncData`] adds one (`fdatasync` for files,
//! nothing for memory) so the Nth sync can fail too.
//!
//! Deliberately absent: delays, reordering, simulated power loss (dropping
//! writes not yet synced). A failed write here fails when it is issued.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::store::{MemStore, Store};

/// The operations a fault can hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOp {
    Read,
    Write,
    Sync,
}

/// How a faulted operation fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreFault {
    /// Nothing done; this error kind.
    Kind(io::ErrorKind),
    /// Nothing done; this raw errno (`libc::EIO`, `libc::ENOSPC`, ...).
    Errno(i32),
    /// Only the first `bytes` of the buffer are read or written, then the
    /// call fails with `errno`.
    Partial { bytes: usize, errno: i32 },
}

impl StoreFault {
    fn error(self) -> io::Error {
        match self {
            StoreFault::Kind(k) => io::Error::from(k),
            StoreFault::Errno(e) | StoreFault::Partial { errno: e, .. } => io::Error::from_raw_os_error(e),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Rule {
    op: StoreOp,
    first: u64,
    times: u64,
    fault: StoreFault,
}

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

/// Wraps a store and fails the operations its rules name.
#[derive(Debug)]
pub struct FaultStore<S> {
    inner: S,
    rules: Mutex<Vec<Rule>>,
    counts: [AtomicU64; 3],
}

impl<S> FaultStore<S> {
    /// No faults until a rule is added.
    pub fn new(inner: S) -> FaultStore<S> {
        FaultStore { inner, rules: Mutex::new(Vec::new()), counts: Default::default() }
    }

    /// The `nth` (1-based) operation of kind `op` fails with `fault`.
    pub fn fail_nth(&self, op: StoreOp, nth: u64, fault: StoreFault) {
        self.rules.lock().expect("fault rules lock").push(Rule { op, first: nth, times: 1, fault });
    }

    /// Every operation of kind `op` from the `nth` on fails, until [`FaultStore::clear`].
    pub fn fail_from(&self, op: StoreOp, nth: u64, fault: StoreFault) {
        self.rules.lock().expect("fault rules lock").push(Rule { op, first: nth, times: u64::MAX, fault });
    }

    /// Lifts every rule (the counts go on).
    pub fn clear(&self) {
        self.rules.lock().expect("fault rules lock").clear();
    }

    /// Operations of kind `op` attempted so far.
    pub fn count(&self, op: StoreOp) -> u64 {
        self.counts[op as usize].load(Ordering::SeqCst)
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }

    pub fn into_inner(self) -> S {
        self.inner
    }

    fn check(&self, op: StoreOp) -> Option<StoreFault> {
        let n = self.counts[op as usize].fetch_add(1, Ordering::SeqCst) + 1;
        let rules = self.rules.lock().expect("fault rules lock");
        rules.iter().find(|r| r.op == op && n >= r.first && n - r.first < r.times).map(|r| r.fault)
    }
}

impl<S: Store> Store for FaultStore<S> {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self.check(StoreOp::Read) {
            None => self.inner.read_at(buf, offset),
            Some(f @ StoreFault::Partial { bytes, .. }) => {
                let n = bytes.min(buf.len());
                self.inner.read_at(&mut buf[..n], offset)?;
                Err(f.error())
            }
            Some(f) => Err(f.error()),
        }
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        match self.check(StoreOp::Write) {
            None => self.inner.write_at(buf, offset),
            Some(f @ StoreFault::Partial { bytes, .. }) => {
                self.inner.write_at(&buf[..bytes.min(buf.len())], offset)?;
                Err(f.error())
            }
            Some(f) => Err(f.error()),
        }
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
        match self.check(StoreOp::Sync) {
            None => self.inner.sync_data(),
            Some(f) => Err(f.error()),
        }
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
    use crate::create::{create, CreateOptions};
    use crate::rrd::Rrd;
    use crate::update::{update_rrd, Now, UpdateOptions};

    const T0: i64 = 1_000_000_000;
    const EIO: i32 = 5;
    const ENOSPC: i32 = 28;

    fn new_file(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("f.rrd");
        let defs: Vec<String> = [
            "DS:x:GAUGE:600:U:U",
            "DS:y:COUNTER:600:U:U",
            "RRA:AVERAGE:0.5:1:20",
            "RRA:MAX:0.5:3:20",
            "RRA:AVERAGE:0.5:6:10",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let opts = CreateOptions { start: Some(T0), step_secs: Some(300), ..Default::default() };
        create(&path, &opts, &defs, T0).unwrap();
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
        let writes = counted.count(StoreOp::Write);
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
            let mut faults = vec![StoreFault::Errno(EIO), StoreFault::Kind(io::ErrorKind::StorageFull)];
            if !header {
                // A row write stopped part-way: harmless, the retry rewrites the row.
                faults.push(StoreFault::Partial { bytes: 3, errno: ENOSPC });
            }
            for fault in faults {
                let store = FaultStore::new(MemStore::new(original.clone()));
                store.fail_nth(StoreOp::Write, nth, fault);
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
            store.fail_nth(StoreOp::Write, writes, StoreFault::Partial { bytes: cut, errno: EIO });
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
            store.fail_nth(StoreOp::Write, nth, StoreFault::Errno(ENOSPC));
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
        store.fail_nth(StoreOp::Read, 1, StoreFault::Partial { bytes: 10, errno: EIO });
        assert!(Rrd::from_store(Path::new("f.rrd"), &store).is_err());
        assert!(Rrd::from_store(Path::new("f.rrd"), &store).is_ok(), "only the first read fails");
        store.fail_from(StoreOp::Sync, 2, StoreFault::Kind(io::ErrorKind::Other));
        assert!(store.sync_data().is_ok());
        assert!(store.sync_data().is_err());
        assert!(store.sync_data().is_err());
        store.clear();
        assert!(store.sync_data().is_ok());
        assert_eq!(store.count(StoreOp::Sync), 4);
        assert!(*store.inner().0.lock().unwrap() == original, "reads and syncs change nothing");
    }
}
