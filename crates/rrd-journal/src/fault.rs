//! Fault injection for the journal's I/O: make the Nth append `write` short
//! or fail with an errno (EIO, ENOSPC, ...), make the Nth `fdatasync` fail,
//! make segment creation or the truncate-back fail.
//!
//! A [`FaultPlan`] counts every operation of each kind (1-based, across all
//! segments of the journal) and holds rules; [`FaultyIo`] wraps another
//! [`JournalIo`] and consults the plan before each operation. The plan is
//! shared (`Arc`), so a test can lift a fault while the journal runs
//! ([`FaultPlan::clear`]: "space came back").
//!
//! Compiled only for tests: this crate's own, and, through the
//! `fault-injection` feature, the daemon's (`rrd_daemon::server::
//! inject_journal_faults` takes a plan in [`FaultPlan::parse`]'s syntax).
//! No release build contains it, so no environment variable or option of a
//! production binary can make the journal fail.
//!
//! Deliberately absent: faults in replay and segment removal (plain
//! `std::fs`, see [`crate::io`]).

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::io::{JournalIo, SegmentFile};

/// The operations a fault can hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Creating a segment (file, header, syncs): at open and at rotation.
    Create,
    /// One `write(2)` of an append.
    Write,
    /// One `fdatasync(2)`.
    Sync,
    /// Truncating back after a failed append.
    Truncate,
}

impl Op {
    const ALL: [Op; 4] = [Op::Create, Op::Write, Op::Sync, Op::Truncate];

    fn index(self) -> usize {
        self as usize
    }

    fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Write => "write",
            Op::Sync => "sync",
            Op::Truncate => "truncate",
        }
    }
}

/// What happens to a faulted operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Do nothing and fail with this raw errno (`libc::EIO` = 5, `ENOSPC` = 28).
    Fail(i32),
    /// For [`Op::Write`]: write only the first N bytes and report N, as a
    /// short `write(2)` does (the caller decides what to do next). For other
    /// operations: behaves as `Fail(EIO)`.
    Short(usize),
}

#[derive(Clone, Copy, Debug)]
struct Rule {
    op: Op,
    first: u64,
    /// How many operations from `first` on are hit (`u64::MAX`: all).
    times: u64,
    action: Action,
}

/// Which operations fail and how; counts every operation.
#[derive(Debug, Default)]
pub struct FaultPlan {
    rules: Mutex<Vec<Rule>>,
    counts: [AtomicU64; 4],
}

pub const EIO: i32 = 5;
pub const ENOSPC: i32 = 28;
const ERRNO_NAMES: &[(&str, i32)] =
    &[("EIO", EIO), ("ENOSPC", ENOSPC), ("EDQUOT", 122), ("EFBIG", 27), ("EROFS", 30), ("EBADF", 9)];

impl FaultPlan {
    pub fn new() -> Arc<FaultPlan> {
        Arc::new(FaultPlan::default())
    }

    /// The `nth` operation of kind `op` (1-based) does `action`.
    pub fn inject(&self, op: Op, nth: u64, action: Action) {
        self.rules.lock().expect("fault plan lock").push(Rule { op, first: nth, times: 1, action });
    }

    /// Every operation of kind `op` from the `nth` on does `action`, until
    /// [`FaultPlan::clear`].
    pub fn inject_from(&self, op: Op, nth: u64, action: Action) {
        self.rules.lock().expect("fault plan lock").push(Rule { op, first: nth, times: u64::MAX, action });
    }

    /// Removes every rule (the counts go on).
    pub fn clear(&self) {
        self.rules.lock().expect("fault plan lock").clear();
    }

    /// How many operations of kind `op` were attempted so far.
    pub fn count(&self, op: Op) -> u64 {
        self.counts[op.index()].load(Ordering::SeqCst)
    }

    /// Counts one operation and returns the fault it gets, if any.
    fn check(&self, op: Op) -> Option<Action> {
        let n = self.counts[op.index()].fetch_add(1, Ordering::SeqCst) + 1;
        let rules = self.rules.lock().expect("fault plan lock");
        rules.iter().find(|r| r.op == op && n >= r.first && n - r.first < r.times).map(|r| r.action)
    }

    /// Parses `RULE[,RULE...]`, RULE being `OP@N=ACTION` (the Nth operation)
    /// or `OP@N+=ACTION` (the Nth and every later one). OP: `create`,
    /// `write`, `sync`, `truncate`. ACTION: an errno name (`EIO`, `ENOSPC`,
    /// `EDQUOT`, `EFBIG`, `EROFS`, `EBADF`) or number, or `short:BYTES`.
    /// Example: `write@3=ENOSPC,sync@5+=EIO`.
    pub fn parse(spec: &str) -> Result<FaultPlan, String> {
        let plan = FaultPlan::default();
        for rule in spec.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            let bad = || format!("bad fault rule '{rule}': expected OP@N=ACTION or OP@N+=ACTION");
            let (lhs, action) = rule.split_once('=').ok_or_else(bad)?;
            let (op, nth) = lhs.split_once('@').ok_or_else(bad)?;
            let op = Op::ALL.into_iter().find(|o| o.name() == op).ok_or_else(bad)?;
            let (nth, every) = match nth.strip_suffix('+') {
                Some(n) => (n, true),
                None => (nth, false),
            };
            let nth: u64 = nth.parse().ok().filter(|&n| n >= 1).ok_or_else(bad)?;
            let action = if let Some(n) = action.strip_prefix("short:") {
                Action::Short(n.parse().map_err(|_| bad())?)
            } else if let Some(&(_, errno)) = ERRNO_NAMES.iter().find(|(name, _)| *name == action) {
                Action::Fail(errno)
            } else {
                Action::Fail(action.parse().ok().filter(|&e| e > 0).ok_or_else(bad)?)
            };
            if every {
                plan.inject_from(op, nth, action);
            } else {
                plan.inject(op, nth, action);
            }
        }
        Ok(plan)
    }
}

fn fail(action: Action) -> io::Error {
    match action {
        Action::Fail(errno) => io::Error::from_raw_os_error(errno),
        Action::Short(_) => io::Error::from_raw_os_error(EIO),
    }
}

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
        if let Some(a) = self.plan.check(Op::Create) {
            return Err(fail(a));
        }
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
        match self.plan.check(Op::Write) {
            None => self.inner.write(buf),
            Some(Action::Short(n)) => self.inner.write(&buf[..n.min(buf.len())]),
            Some(a) => Err(fail(a)),
        }
    }
    fn sync_data(&self) -> io::Result<()> {
        match self.plan.check(Op::Sync) {
            None => self.inner.sync_data(),
            Some(a) => Err(fail(a)),
        }
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        match self.plan.check(Op::Truncate) {
            None => self.inner.truncate(len),
            Some(a) => Err(fail(a)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_hit_exactly_the_named_operations() {
        let plan = FaultPlan::parse("write@2=ENOSPC, sync@3+=EIO,write@4=short:7").unwrap();
        let hits: Vec<_> = (0..5).map(|_| plan.check(Op::Write)).collect();
        assert_eq!(hits, [None, Some(Action::Fail(ENOSPC)), None, Some(Action::Short(7)), None]);
        let hits: Vec<_> = (0..5).map(|_| plan.check(Op::Sync)).collect();
        assert_eq!(hits[..2], [None, None]);
        assert!(hits[2..].iter().all(|h| *h == Some(Action::Fail(EIO))));
        plan.clear();
        assert_eq!(plan.check(Op::Sync), None);
        assert_eq!(plan.count(Op::Sync), 6);
        assert_eq!(plan.count(Op::Create), 0);
    }

    #[test]
    fn bad_specs_are_refused_with_the_rule() {
        for bad in ["write", "write@0=EIO", "fsync@1=EIO", "write@1=ENOPE", "write@1=short:x", "sync@x=5"] {
            let e = FaultPlan::parse(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
        assert_eq!(FaultPlan::parse("create@1=17").unwrap().check(Op::Create), Some(Action::Fail(17)));
    }
}
