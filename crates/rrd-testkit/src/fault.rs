//! The workspace's one fault-injection mechanism: a [`FaultPlan`] says
//! which I/O operations fail and how ("the 3rd write stores 7 bytes and
//! fails with ENOSPC", "every sync from the 5th on fails with EIO"), and
//! counts every operation it is asked about. Thin adapters wrap real I/O
//! and consult a plan before each operation: `rrd_engine::fault::FaultStore`
//! (any `Store`: reads, writes, syncs) and `rrd_journal::fault::FaultyIo`
//! (journal segments: creates, writes, syncs, truncates).
//!
//! Counting: every operation of each [`Op`] kind is numbered from 1 across
//! the plan's life (whatever file it touches). A rule names a kind, the
//! first number it hits, how many it hits, and an [`Action`]; the first
//! rule that matches wins. [`FaultPlan::clear`] lifts every rule and the
//! counts go on. Plans are shared (`Arc`), so a test can lift a fault
//! while the code under test runs ("space came back").
//!
//! One [`Op`] enum for every adapter rather than a kind type per adapter:
//! one text syntax ([`FaultPlan::parse`], which the daemon's end-to-end
//! tests pass across a process boundary) and one plan type the tests and
//! the daemon's hook name. An adapter consults only the kinds it has; a
//! rule on another kind never fires.
//!
//! Compiled only for tests: this crate is a dev-dependency everywhere, and
//! an optional dependency of rrd-engine and rrd-journal that only their
//! `fault-injection` features (enabled by tests) turn on. No release binary
//! contains it, so no variable or option of a shipped program makes I/O fail.
//!
//! Deliberately absent: delays, reordering, and faults chosen by path or
//! offset (the engine's `batch::FaultHook` serves those). Simulated power
//! loss (writes not yet synced kept, lost or torn) is [`crate::power`]. A failed operation fails
//! when it is issued.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The operations a fault can hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A read of some bytes (a store's `read_at`).
    Read,
    /// A write of some bytes (`pwrite` of a store, `write(2)` of a journal append).
    Write,
    /// An `fdatasync(2)`.
    Sync,
    /// Creating a file (a journal segment: file, header, syncs as one operation).
    Create,
    /// Truncating a file (the journal's take-back after a failed append).
    Truncate,
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Read, Op::Write, Op::Sync, Op::Create, Op::Truncate];

    /// The name [`FaultPlan::parse`] knows it by.
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Sync => "sync",
            Op::Create => "create",
            Op::Truncate => "truncate",
        }
    }
}

/// What happens to a faulted operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing done; fail with this raw errno ([`EIO`], [`ENOSPC`], ...).
    Fail(i32),
    /// Nothing done; fail with this error kind.
    Kind(io::ErrorKind),
    /// A short transfer: only the first N bytes are read or written. An
    /// operation that reports a count (`write(2)`, [`FaultPlan::transfer`])
    /// reports N and lets the caller decide; one that cannot
    /// ([`FaultPlan::transfer_exact`]) then fails with EIO, as does any
    /// operation that moves no bytes.
    Short(usize),
    /// Only the first `bytes` are read or written, then the operation fails
    /// with `errno` (a short write the retry of `write_all` could not
    /// complete, e.g. ENOSPC). Without bytes to move: fails with `errno`.
    Partial { bytes: usize, errno: i32 },
}

impl Action {
    /// The error the faulted operation returns.
    pub fn error(self) -> io::Error {
        match self {
            Action::Fail(errno) | Action::Partial { errno, .. } => io::Error::from_raw_os_error(errno),
            Action::Kind(kind) => io::Error::from(kind),
            Action::Short(_) => io::Error::from_raw_os_error(EIO),
        }
    }

    /// How many bytes are moved before the fault, if any are.
    pub fn bytes(self) -> Option<usize> {
        match self {
            Action::Short(n) | Action::Partial { bytes: n, .. } => Some(n),
            Action::Fail(_) | Action::Kind(_) => None,
        }
    }
}

pub const EIO: i32 = libc::EIO;
pub const ENOSPC: i32 = libc::ENOSPC;
/// The errno names [`FaultPlan::parse`] knows (any number is accepted too).
const ERRNO_NAMES: &[(&str, i32)] = &[
    ("EIO", EIO),
    ("ENOSPC", ENOSPC),
    ("EDQUOT", libc::EDQUOT),
    ("EFBIG", libc::EFBIG),
    ("EROFS", libc::EROFS),
    ("EBADF", libc::EBADF),
];

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
    counts: [AtomicU64; Op::ALL.len()],
}

impl FaultPlan {
    /// A shared plan with no rules.
    pub fn new() -> Arc<FaultPlan> {
        Arc::new(FaultPlan::default())
    }

    /// Operations of kind `op` numbered `first..first + times` (1-based) do
    /// `action`; `times == u64::MAX`: every one from `first` on.
    pub fn inject_times(&self, op: Op, first: u64, times: u64, action: Action) {
        self.rules.lock().expect("fault plan lock").push(Rule { op, first, times, action });
    }

    /// The `nth` operation of kind `op` (1-based) does `action`.
    pub fn inject(&self, op: Op, nth: u64, action: Action) {
        self.inject_times(op, nth, 1, action);
    }

    /// Every operation of kind `op` from the `nth` on does `action`, until
    /// [`FaultPlan::clear`].
    pub fn inject_from(&self, op: Op, nth: u64, action: Action) {
        self.inject_times(op, nth, u64::MAX, action);
    }

    /// Removes every rule (the counts go on).
    pub fn clear(&self) {
        self.rules.lock().expect("fault plan lock").clear();
    }

    /// How many operations of kind `op` were attempted so far.
    pub fn count(&self, op: Op) -> u64 {
        self.counts[op as usize].load(Ordering::SeqCst)
    }

    /// Counts one operation of kind `op` and returns the fault it gets, if any.
    pub fn check(&self, op: Op) -> Option<Action> {
        let n = self.counts[op as usize].fetch_add(1, Ordering::SeqCst) + 1;
        let rules = self.rules.lock().expect("fault plan lock");
        rules.iter().find(|r| r.op == op && n >= r.first && n - r.first < r.times).map(|r| r.action)
    }

    /// For an operation that moves no bytes (sync, create, truncate): Ok to
    /// go ahead, or the fault's error.
    pub fn gate(&self, op: Op) -> io::Result<()> {
        match self.check(op) {
            None => Ok(()),
            Some(action) => Err(action.error()),
        }
    }

    /// For an operation that may move fewer bytes than asked and says how
    /// many (`write(2)`): `io(n)` moves the first `n` of `len` bytes.
    pub fn transfer(
        &self,
        op: Op,
        len: usize,
        io: impl FnMut(usize) -> io::Result<usize>,
    ) -> io::Result<usize> {
        self.run(op, len, true, io)
    }

    /// For an operation that moves all `len` bytes or fails (`read_exact`,
    /// a store's `write_at`): `io(n)` moves the first `n`.
    pub fn transfer_exact(
        &self,
        op: Op,
        len: usize,
        io: impl FnMut(usize) -> io::Result<()>,
    ) -> io::Result<()> {
        self.run(op, len, false, io)
    }

    fn run<T>(
        &self,
        op: Op,
        len: usize,
        reports_short: bool,
        mut io: impl FnMut(usize) -> io::Result<T>,
    ) -> io::Result<T> {
        let Some(action) = self.check(op) else { return io(len) };
        if let Some(n) = action.bytes() {
            let done = io(n.min(len))?;
            if reports_short && matches!(action, Action::Short(_)) {
                return Ok(done);
            }
        }
        Err(action.error())
    }

    /// Parses `RULE[,RULE...]`, RULE being `OP@WHEN=ACTION`.
    ///
    /// - OP: `read`, `write`, `sync`, `create`, `truncate`.
    /// - WHEN: `N` (the Nth operation), `N+` (the Nth and every later
    ///   one), `N..M` (the Nth up to but not including the Mth), `N..=M`
    ///   (the Nth through the Mth); numbers from 1.
    /// - ACTION: an errno name (`EIO`, `ENOSPC`, `EDQUOT`, `EFBIG`, `EROFS`,
    ///   `EBADF`) or number ([`Action::Fail`]), `short:BYTES`
    ///   ([`Action::Short`]) or `short:BYTES:ERRNO` ([`Action::Partial`]).
    ///
    /// Example: `write@3=ENOSPC,sync@5+=EIO,write@7..=9=short:10:ENOSPC`.
    /// An error names the rule and what is wrong with it.
    pub fn parse(spec: &str) -> Result<FaultPlan, String> {
        let plan = FaultPlan::default();
        for rule in spec.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            let (op, first, times, action) =
                parse_rule(rule).map_err(|why| format!("bad fault rule '{rule}': {why}"))?;
            plan.inject_times(op, first, times, action);
        }
        Ok(plan)
    }
}

fn parse_rule(rule: &str) -> Result<(Op, u64, u64, Action), String> {
    const SHAPE: &str = "expected OP@N=ACTION, OP@N+=ACTION, OP@N..M=ACTION or OP@N..=M=ACTION";
    let (op, rest) = rule.split_once('@').ok_or(SHAPE)?;
    let op = Op::ALL.into_iter().find(|o| o.name() == op).ok_or_else(|| {
        let names: Vec<_> = Op::ALL.iter().map(|o| o.name()).collect();
        format!("unknown operation '{op}' (known: {})", names.join(", "))
    })?;
    // `..=` holds an '=', so the action follows the last '='.
    let (when, action) = rest.rsplit_once('=').ok_or(SHAPE)?;
    let (first, times) = parse_when(when)?;
    let action = match action.strip_prefix("short:") {
        None => Action::Fail(parse_errno(action)?),
        Some(short) => match short.split_once(':') {
            None => Action::Short(parse_count(short)?),
            Some((bytes, errno)) => {
                Action::Partial { bytes: parse_count(bytes)?, errno: parse_errno(errno)? }
            }
        },
    };
    Ok((op, first, times, action))
}

/// `N`, `N+`, `N..M`, `N..=M` as (first, times).
fn parse_when(when: &str) -> Result<(u64, u64), String> {
    let nth = |s: &str| -> Result<u64, String> {
        s.parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("'{s}' is not an operation number (1, 2, ...)"))
    };
    if let Some(n) = when.strip_suffix('+') {
        return Ok((nth(n)?, u64::MAX));
    }
    let Some((lo, hi)) = when.split_once("..") else { return Ok((nth(when)?, 1)) };
    let (lo, end) = match hi.strip_prefix('=') {
        Some(hi) => (nth(lo)?, nth(hi)?.checked_add(1).ok_or("range end too large")?),
        None => (nth(lo)?, nth(hi)?),
    };
    if end <= lo {
        return Err(format!("the range {when} is empty"));
    }
    Ok((lo, end - lo))
}

fn parse_count(s: &str) -> Result<usize, String> {
    s.parse().map_err(|_| format!("'{s}' is not a byte count"))
}

fn parse_errno(s: &str) -> Result<i32, String> {
    if let Some(&(_, errno)) = ERRNO_NAMES.iter().find(|(name, _)| *name == s) {
        return Ok(errno);
    }
    s.parse().ok().filter(|&e| e > 0).ok_or_else(|| {
        let names: Vec<_> = ERRNO_NAMES.iter().map(|(name, _)| *name).collect();
        format!("unknown errno '{s}' (a positive number or one of {})", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(plan: &FaultPlan, op: Op, n: usize) -> Vec<Option<Action>> {
        (0..n).map(|_| plan.check(op)).collect()
    }

    #[test]
    fn rules_hit_exactly_the_named_operations_of_their_kind() {
        let plan =
            FaultPlan::parse("write@2=ENOSPC, sync@3+=EIO,write@4=short:7,read@2..4=short:3:EROFS").unwrap();
        let short = Some(Action::Short(7));
        assert_eq!(hits(&plan, Op::Write, 5), [None, Some(Action::Fail(ENOSPC)), None, short, None]);
        let sync = hits(&plan, Op::Sync, 5);
        assert_eq!(sync[..2], [None, None]);
        assert!(sync[2..].iter().all(|h| *h == Some(Action::Fail(EIO))), "{sync:?}");
        let partial = Some(Action::Partial { bytes: 3, errno: libc::EROFS });
        assert_eq!(hits(&plan, Op::Read, 5), [None, partial, partial, None, None]);
        assert_eq!(hits(&plan, Op::Create, 3), [None, None, None]);
        assert_eq!(plan.count(Op::Write), 5);
        assert_eq!(plan.count(Op::Truncate), 0);
    }

    #[test]
    fn ranges_are_exclusive_or_inclusive_as_in_rust() {
        let plan = FaultPlan::parse("write@3..5=ENOSPC,sync@2..=3=EIO,create@1=17").unwrap();
        let f = Some(Action::Fail(ENOSPC));
        assert_eq!(hits(&plan, Op::Write, 6), [None, None, f, f, None, None]);
        let f = Some(Action::Fail(EIO));
        assert_eq!(hits(&plan, Op::Sync, 5), [None, f, f, None, None]);
        assert_eq!(plan.check(Op::Create), Some(Action::Fail(17)));
    }

    #[test]
    fn clear_lifts_every_rule_and_counting_goes_on() {
        let plan = FaultPlan::new();
        plan.inject_from(Op::Sync, 1, Action::Kind(io::ErrorKind::StorageFull));
        let shared = Arc::clone(&plan);
        assert!(shared.gate(Op::Sync).is_err());
        plan.clear();
        assert!(shared.gate(Op::Sync).is_ok(), "a plan shared with running code lifts its faults");
        plan.inject(Op::Sync, 3, Action::Fail(EIO));
        assert_eq!(shared.gate(Op::Sync).unwrap_err().raw_os_error(), Some(EIO), "numbers go on after clear");
        assert_eq!(plan.count(Op::Sync), 3);
    }

    #[test]
    fn bad_specs_are_refused_with_the_rule_and_the_reason() {
        for (bad, why) in [
            ("write", "expected OP@N=ACTION"),
            ("write@1", "expected OP@N=ACTION"),
            ("write@0=EIO", "'0' is not an operation number"),
            ("sync@x=5", "'x' is not an operation number"),
            ("fsync@1=EIO", "unknown operation 'fsync'"),
            ("write@1=ENOPE", "unknown errno 'ENOPE' (a positive number or one of EIO, ENOSPC"),
            ("write@1=-5", "unknown errno '-5'"),
            ("write@1=short:x", "'x' is not a byte count"),
            ("write@1=short:4:ENOPE", "unknown errno 'ENOPE'"),
            ("write@5..5=EIO", "the range 5..5 is empty"),
            ("write@5..=4=EIO", "the range 5..=4 is empty"),
        ] {
            let e = FaultPlan::parse(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")) && e.contains(why), "{bad}: {e}");
        }
        assert!(FaultPlan::parse(" , ").unwrap().check(Op::Write).is_none(), "an empty spec plans nothing");
    }

    #[test]
    fn transfers_move_the_prefix_then_report_or_fail() {
        let plan = FaultPlan::new();
        plan.inject(Op::Write, 1, Action::Short(3));
        plan.inject(Op::Write, 2, Action::Partial { bytes: 4, errno: ENOSPC });
        plan.inject(Op::Write, 3, Action::Short(100));
        plan.inject(Op::Write, 4, Action::Short(2));
        plan.inject(Op::Write, 5, Action::Fail(EIO));
        let mut moved = Vec::new();
        let mut io = |n: usize| {
            moved.push(n);
            Ok(n)
        };
        assert_eq!(plan.transfer(Op::Write, 10, &mut io).unwrap(), 3, "a short write reports its count");
        assert_eq!(plan.transfer(Op::Write, 10, &mut io).unwrap_err().raw_os_error(), Some(ENOSPC));
        assert_eq!(plan.transfer(Op::Write, 10, &mut io).unwrap(), 10, "never more than asked");
        let mut exact = |n: usize| io(n).map(drop);
        assert_eq!(plan.transfer_exact(Op::Write, 10, &mut exact).unwrap_err().raw_os_error(), Some(EIO));
        assert!(plan.transfer_exact(Op::Write, 10, &mut exact).is_err());
        assert!(plan.transfer_exact(Op::Write, 10, &mut exact).is_ok());
        assert_eq!(moved, [3, 4, 10, 2, 10], "a failed write moves nothing");
        plan.inject(Op::Truncate, 1, Action::Short(5));
        assert_eq!(plan.gate(Op::Truncate).unwrap_err().raw_os_error(), Some(EIO));
    }
}
