//! `rrdscale bench daemon-capacity`: the largest number of MRTG-schema
//! files a daemon keeps current, 5-minute step, under a memory budget
//! proportional to the number of files, over one simulated hour.
//!
//! Simulated time: timestamps advance 300 s per interval, but an interval
//! lasts `300 / K` real seconds (`--speedup K`). The daemon runs with
//! `-w W/K` and `-f 2W/K` (real seconds), `W` = `--window-secs` simulated.
//! A trial with N files, per side:
//!
//! 1. a fresh memory cgroup with `--base-memory + N × --ram-per-file`;
//!    the daemon starts in it (ours with `--sync always`);
//! 2. at the start of each interval i = 1..12, 4 clients send one value per
//!    file, timestamped `T + 300·i` (`T` = the trial's base time), in
//!    BATCHes; the interval is missed if sending takes longer than the
//!    interval;
//! 3. at each interval boundary STATS (QueueLength, PendingValues) and the
//!    journal directory's size are recorded;
//! 4. at the end of the hour the daemon is killed (-9: no flush at exit)
//!    and every file's last update is read from disk. The trial passes when
//!    (a) every interval's values were sent in time, (b) every file's last
//!    update is at least `T + H − W − 600` (H the simulated duration: its
//!    values reached the disk within the write window plus two intervals
//!    of slack), and (c) the journal stayed bounded: at no boundary larger
//!    than 1.25 × (the most journal bytes the daemon appended in one
//!    interval: STATS JournalBytes, from one boundary to the next) ×
//!    ((2f + W) / 300 + 2), f = 2W being the rotation period: what a
//!    daemon that rotates its journal every f and writes every file within
//!    W must keep at most. The bytes per interval are the daemon's own, so
//!    records a flush appends (ours: an undo record and a completion
//!    record per file, for power loss) count as the values do; (c) tests
//!    that old segments are removed. Over one hour (12 intervals) with
//!    W = 900 s little can accumulate beyond it; `--sim-hours 2` or more
//!    makes (c) bite.
//!
//! The search: N = `--min-files`, doubled while trials pass (up to
//! `--max-files`), then bisected between the last pass and the first
//! failure until they are within 10%, time-boxed by `--max-minutes` per
//! side (the best N passed so far is reported, with the reason the search
//! stopped). Files persist between trials; each trial starts at a base
//! time one simulated hour after the previous one ended, so every update is newer
//! than the file's last.
//!
//! Deliberately absent: claims about real time: with K > 1 the disk has K
//! times less time per interval, so the N found is the capacity at that
//! speed-up (roughly N·K files at real time, if the flush rate holds).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;

use crate::daemon::common::{self, col, DaemonCommon, DaemonSideResult};
use crate::daemon::workload::{self, DaemonWorkload, Report, Run, Side};
use crate::daemon::{journal_bytes, DaemonProc};
use crate::workload::file_path;
use crate::BenchError;

#[derive(Debug, Args, Clone)]
pub struct CapacityArgs {
    /// Smallest N tried first.
    #[arg(long, default_value_t = 1000)]
    pub min_files: u64,
    /// Largest N tried.
    #[arg(long, default_value_t = 300_000)]
    pub max_files: u64,
    /// Speed-up K: an interval of 300 simulated seconds lasts 300/K s.
    #[arg(long, default_value_t = 60.0)]
    pub speedup: f64,
    /// The write window W in simulated seconds (-w W/K real).
    #[arg(long, default_value_t = 900)]
    pub window_secs: u64,
    /// Memory per file of the budget.
    #[arg(long, value_parser = crate::host::parse_size, default_value = "2560")]
    pub ram_per_file: u64,
    /// Memory added to the budget for the daemon itself.
    #[arg(long, value_parser = crate::host::parse_size, default_value = "32M")]
    pub base_memory: u64,
    /// Time box of the search, per side, in minutes.
    #[arg(long, default_value_t = 30.0)]
    pub max_minutes: f64,
    /// Simulated hours per trial.
    #[arg(long, default_value_t = 1)]
    pub sim_hours: u64,
    /// The schema (default MRTG's).
    #[arg(long, default_value = "mrtg")]
    pub schema: String,
    #[command(flatten)]
    pub common: DaemonCommon,
}

/// What one trial saw.
#[derive(Clone, Debug, Default)]
pub struct Trial {
    pub files: u64,
    pub pass: bool,
    pub why: String,
    pub slowest_send_secs: f64,
    pub stale_files: u64,
    pub journal_first: u64,
    /// The most bytes the daemon appended to its journal in one interval.
    pub interval_bytes_max: u64,
    pub journal_max: u64,
    pub journal_bound: u64,
    pub max_queue: u64,
}

/// The next N to try, or None when the search is over: doubling until the
/// first failure, then bisection to within 10%.
pub fn next_n(lo_pass: Option<u64>, hi_fail: Option<u64>, min: u64, max: u64) -> Option<u64> {
    match (lo_pass, hi_fail) {
        (None, None) => Some(min),
        (Some(lo), None) => (lo < max).then(|| (lo * 2).min(max)),
        (None, Some(hi)) => (hi > min.max(2)).then_some(hi / 2).filter(|&n| n >= 1 && n < hi),
        (Some(lo), Some(hi)) => {
            if (hi as f64) <= lo as f64 * 1.1 || hi - lo <= 1 {
                None
            } else {
                Some(lo + (hi - lo) / 2)
            }
        }
    }
}

struct SideState {
    files_dir: PathBuf,
    run_dir: PathBuf,
    have: u64,
    trial: u64,
}

// One trial from the files' copy to its verdict; the steps share the side's state.
#[allow(clippy::too_many_lines)]
fn trial(
    a: &CapacityArgs,
    run: &Run,
    kind: &crate::daemon::DaemonKind,
    st: &mut SideState,
    k: usize,
    n: u64,
) -> Result<Trial, BenchError> {
    let (c, schema, master, exe) = (&a.common, &run.schema, &run.ws.master(), &run.exe);
    // Grow the side's copy from the master file (never updated; every
    // file starts as a copy of it, so the master is one file, which halves
    // the disk space a large search needs).
    if st.have < n {
        crate::host::mkdirs(&st.files_dir, n)?;
        let src = file_path(master, 0);
        for i in st.have..n {
            let dst = file_path(&st.files_dir, i);
            std::fs::copy(&src, &dst).map_err(|e| BenchError::io(format!("copying {}", dst.display()), e))?;
        }
        st.have = n;
        crate::host::syncfs(&st.files_dir)?;
    }
    st.trial += 1;
    let base = c.start_time + (st.trial * (a.sim_hours.max(1) + 1) * 3600) as i64;
    let budget = a.base_memory + a.ram_per_file * n;
    let cg = crate::cgroup::MemoryCgroup::create(
        &format!("rrdscale-dcap-{}-{k}-{}", std::process::id(), st.trial),
        budget,
    )?;
    let w_real = window_real_secs(a);
    let run_dir = st.run_dir.join(format!("trial-{}", st.trial));
    let spec = common::spec_for(kind, c, exe, &run_dir, w_real, (n * 20).max(1_000_000));
    let interval = Duration::from_secs_f64(300.0 / a.speedup);
    let intervals = 12 * a.sim_hours.max(1) as i64;
    let (mut daemon, _) = DaemonProc::start(&spec, Some(&cg.path))?;
    let mut conn = crate::with_daemon!(daemon, daemon.connect());
    let mut t = Trial { files: n, pass: true, ..Default::default() };
    let mut plan = Some(common::plan_updates(schema, &st.files_dir, n, 1..=1, base, c.batching(1)));
    let started = Instant::now();
    // STATS JournalBytes at the last boundary.
    let mut appended_before = 0;
    for i in 1..=intervals {
        let due = started + interval * (i as u32 - 1);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let p = plan.take().expect("a plan per interval");
        let sent = crate::with_daemon!(daemon, common::send_plan(&spec.socket(), p));
        t.slowest_send_secs = t.slowest_send_secs.max(sent.secs);
        if sent.errors > 0 {
            t.pass = false;
            t.why = format!(
                "interval {i}: {} updates refused ({})",
                sent.errors,
                sent.first_error.unwrap_or_default()
            );
            break;
        }
        if sent.secs > interval.as_secs_f64() {
            t.pass = false;
            t.why = format!("interval {i}: sending took {:.2} s, longer than the interval", sent.secs);
            break;
        }
        // Values of interval i+1 are one step later: shift the plan's base.
        if i < intervals {
            plan = Some(common::plan_updates(
                schema,
                &st.files_dir,
                n,
                (i as u64 + 1)..=(i as u64 + 1),
                base,
                c.batching(1),
            ));
        }
        let s = crate::with_daemon!(daemon, conn.stats());
        t.max_queue = t.max_queue.max(s.get("QueueLength").copied().unwrap_or(0));
        let jb = journal_bytes(&spec.journal_dir());
        if i == 1 {
            t.journal_first = jb;
        }
        let appended = s.get("JournalBytes").copied().unwrap_or(0);
        t.interval_bytes_max = t.interval_bytes_max.max(appended.saturating_sub(appended_before));
        appended_before = appended;
        t.journal_max = t.journal_max.max(jb);
    }
    if t.pass {
        let end = started + interval * intervals as u32;
        if let Some(wait) = end.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        t.journal_max = t.journal_max.max(journal_bytes(&spec.journal_dir()));
    }
    daemon.kill9();
    drop(cg);
    let rotations = (2 * 2 * a.window_secs + a.window_secs) as f64 / 300.0 + 2.0;
    t.journal_bound = (1.25 * t.interval_bytes_max as f64 * rotations) as u64;
    if t.pass {
        let min_last = base + intervals * 300 - a.window_secs as i64 - 600;
        let mut stale = 0;
        for i in 0..n {
            let last = rrd_engine::Rrd::open(&file_path(&st.files_dir, i), false)
                .map(|r| r.header.live().last_up)
                .unwrap_or(i64::MIN);
            stale += u64::from(last < min_last);
        }
        t.stale_files = stale;
        if stale > 0 {
            t.pass = false;
            t.why = format!(
                "{stale} files were last written before {min_last} (more than W + 2 intervals behind)"
            );
        } else if t.journal_max > t.journal_bound {
            t.pass = false;
            t.why = format!(
                "the journal grew to {} bytes, beyond the bound of {}",
                t.journal_max, t.journal_bound
            );
        } else {
            t.why = "kept current".into();
        }
    }
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok(t)
}

/// `daemon-capacity` as a [`DaemonWorkload`]: each side is a search of
/// trials, each with its own daemon and memory cgroup; the master is one
/// file, which each side copies as its search grows.
pub struct Capacity<'a>(pub &'a CapacityArgs);

pub fn run(a: &CapacityArgs, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    workload::run(&mut Capacity(a), args, exe, out)
}

/// What a side's search hands to the report: its rows of the trials table
/// and the largest N it tried.
pub struct Search {
    rows: Vec<Vec<String>>,
    tried_max: u64,
}

impl DaemonWorkload for Capacity<'_> {
    type SideOut = Search;

    fn common(&self) -> &DaemonCommon {
        &self.0.common
    }

    fn name(&self) -> String {
        "daemon-capacity".into()
    }

    fn schema(&self) -> &str {
        &self.0.schema
    }

    fn files(&self) -> u64 {
        1
    }

    fn copies(&self) -> bool {
        false
    }

    fn check(&self) -> Result<(), BenchError> {
        let a = self.0;
        if a.speedup.is_nan() || a.speedup < 1.0 || a.min_files == 0 || a.max_files < a.min_files {
            return Err(BenchError::Usage(
                "--speedup must be at least 1 and --min-files between 1 and --max-files".into(),
            ));
        }
        Ok(())
    }

    fn side(&self, run: &Run, side: &mut Side) -> Result<Search, BenchError> {
        let a = self.0;
        let kind = side.kind;
        let mut st = SideState {
            files_dir: side.dirs.files.clone(),
            run_dir: side.dirs.run.clone(),
            have: 0,
            trial: 0,
        };
        let (mut lo, mut hi): (Option<u64>, Option<u64>) = (None, None);
        let t0 = Instant::now();
        let mut stop = "the search converged (within 10%)".to_string();
        let mut best: Option<Trial> = None;
        let mut s = Search { rows: Vec::new(), tried_max: 0 };
        while let Some(n) = next_n(lo, hi, a.min_files, a.max_files) {
            if t0.elapsed().as_secs_f64() > a.max_minutes * 60.0 {
                stop = format!("the time box of {} minutes ran out", a.max_minutes);
                break;
            }
            s.tried_max = s.tried_max.max(n);
            let t = trial(a, run, kind, &mut st, side.k, n)?;
            eprintln!("{}: N = {n}: {} ({})", kind.label(), if t.pass { "pass" } else { "FAIL" }, t.why);
            s.rows.push(vec![
                kind.label(),
                crate::report::thousands(n as f64),
                if t.pass { "pass".into() } else { "fail".into() },
                format!("{:.2}", t.slowest_send_secs),
                crate::report::thousands(t.max_queue as f64),
                crate::report::thousands(t.journal_first as f64),
                crate::report::thousands(t.journal_max as f64),
                crate::report::thousands(t.journal_bound as f64),
                t.why.clone(),
            ]);
            if t.pass {
                lo = Some(n);
                best = Some(t);
                if n >= a.max_files {
                    stop = format!("--max-files {} passed", a.max_files);
                }
            } else {
                hi = Some(n);
            }
        }
        // A side's files are not compared with the other's (each trial
        // ends with a kill -9); removing them bounds the disk space to one
        // side's largest N.
        let _ = std::fs::remove_dir_all(&st.files_dir);
        side.result.command_line = common::spec_for(
            kind,
            &run.common,
            &run.exe,
            &run.ws.base.join("RUN"),
            window_real_secs(a),
            1_000_000,
        )
        .command_line()
        .join(" ");
        side.set("capacity_files", lo.unwrap_or(0) as f64);
        side.set("first_failure_files", hi.map_or(f64::NAN, |h| h as f64));
        side.set("search_minutes", t0.elapsed().as_secs_f64() / 60.0);
        if let Some(b) = &best {
            side.set("budget_mib_at_capacity", (a.base_memory + a.ram_per_file * b.files) as f64 / 1048576.0);
        }
        side.check(
            "search",
            true,
            format!(
                "largest N kept current {}, first failure {}; stopped because {stop}",
                lo.map_or("none".into(), |x| x.to_string()),
                hi.map_or("none".into(), |x| x.to_string())
            ),
        );
        Ok(s)
    }

    fn report(&self, run: &Run, sides: &[DaemonSideResult], searches: Vec<Search>) -> Report {
        let a = self.0;
        let params = vec![
            ("speed-up K", format!("{}", a.speedup)),
            ("write window W (simulated s)", a.window_secs.to_string()),
            ("-w (real s)", window_real_secs(a).to_string()),
            ("memory budget", format!("{} + {} bytes per file", a.base_memory, a.ram_per_file)),
            ("search range", format!("{}..{}", a.min_files, a.max_files)),
            ("simulated hours per trial", a.sim_hours.to_string()),
            ("time box per side (min)", a.max_minutes.to_string()),
        ];
        let columns = vec![
            col("capacity_files", "files kept current", 0),
            col("first_failure_files", "first N that failed", 0),
            col("budget_mib_at_capacity", "budget at capacity, MiB", 1),
            col("search_minutes", "search minutes", 1),
        ];
        let mut r = Report::new(run, columns, params);
        r.files = searches.iter().map(|s| s.tried_max).max().unwrap_or(0);
        r.memory_budget_bytes = None;
        r.ratios = workload::ratios(
            sides,
            "rrdscale (--sync always)",
            &[("capacity_files", "files kept current", true)],
        );
        r.notes.push(format!(
            "{} simulated hour(s) per trial: intervals of 300 simulated s, each {:.2} real s long. \
             A trial passes when every interval's values are sent within the interval, every file's \
             last update on disk at the end is at most W + 600 simulated s old, and the journal never \
             exceeds its bound (see the module documentation and docs/BENCHMARKS.md).",
            a.sim_hours,
            300.0 / a.speedup
        ));
        r.tables.push((
            "Trials".into(),
            [
                "side",
                "files",
                "result",
                "slowest send s",
                "max queue",
                "journal after 1 interval",
                "journal max",
                "journal bound",
                "why",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            searches.into_iter().flat_map(|s| s.rows).collect(),
        ));
        r
    }
}

/// `-w` in real seconds: W / K, at least 1.
fn window_real_secs(a: &CapacityArgs) -> u64 {
    ((a.window_secs as f64 / a.speedup).round() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::next_n;

    #[test]
    fn search_doubles_then_bisects() {
        assert_eq!(next_n(None, None, 1000, 300_000), Some(1000));
        assert_eq!(next_n(Some(1000), None, 1000, 300_000), Some(2000));
        assert_eq!(next_n(Some(256_000), None, 1000, 300_000), Some(300_000));
        assert_eq!(next_n(Some(300_000), None, 1000, 300_000), None);
        assert_eq!(next_n(Some(16_000), Some(32_000), 1000, 300_000), Some(24_000));
        assert_eq!(next_n(Some(30_000), Some(32_000), 1000, 300_000), None);
        assert_eq!(next_n(None, Some(1000), 1000, 300_000), None);
        assert_eq!(next_n(None, Some(4000), 1000, 300_000), Some(2000));
    }
}
