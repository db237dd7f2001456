//! `rrdscale bench daemon-read`: FETCH latency of files that have pending
//! values.
//!
//! Each side starts its daemon (`-w` far beyond the run), receives
//! `--pending` values for every file (untimed), every file is evicted from
//! the page cache (unless `--evict false`), then one client sends
//! `--fetches` FETCHes of distinct files picked at random (the same files
//! in the same order on every side), one at a time, each timed from
//! sending the request to reading the last line of its reply. rrdcached
//! writes a file's pending values before answering a FETCH of it; ours
//! answers from the file merged with its pending values. The replies of
//! the sides are compared line for line (they must be equal: both show
//! the file as it is after its pending values).
//!
//! Deliberately absent: concurrent readers and writers (a latency under
//! load is a different benchmark).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use clap::Args;

use crate::daemon::common::{self, col, Check, DaemonCommon, DaemonSideResult, WRITE_INTERVAL};
use crate::daemon::workload::{self, DaemonWorkload, Report, Run, Side};
use crate::workload::file_path;
use crate::BenchError;

#[derive(Debug, Args, Clone)]
pub struct ReadArgs {
    /// Files with pending values.
    #[arg(long, default_value_t = 20_000)]
    pub files: u64,
    /// Pending values per file.
    #[arg(long, default_value_t = 12)]
    pub pending: u64,
    /// FETCHes, each of a different file (at most --files).
    #[arg(long, default_value_t = 2000)]
    pub fetches: u64,
    /// Evict every file from the page cache before the FETCHes.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub evict: bool,
    /// Seed of the random choice of files.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// perftest, mrtg, growthforecast, or a create line.
    #[arg(long, default_value = "perftest")]
    pub schema: String,
    #[command(flatten)]
    pub common: DaemonCommon,
}

/// `count` distinct indices below `n`, in a seeded random order.
pub fn pick(n: u64, count: u64, seed: u64) -> Vec<u64> {
    let mut all: Vec<u64> = (0..n).collect();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let count = count.min(n) as usize;
    for i in 0..count {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = i + (x % (all.len() - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(count);
    all
}

/// The value at quantile `q` (0..=1) of sorted `v` (nearest rank).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// `daemon-read` as a [`DaemonWorkload`]: every side FETCHes the same
/// files, `picks`, in the same order.
pub struct Read<'a> {
    pub a: &'a ReadArgs,
    pub picks: Vec<u64>,
}

pub fn run(a: &ReadArgs, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    workload::run(&mut Read { a, picks: pick(a.files, a.fetches, a.seed) }, args, exe, out)
}

impl DaemonWorkload for Read<'_> {
    /// The reply lines of every FETCH, in order.
    type SideOut = Vec<Vec<String>>;

    fn common(&self) -> &DaemonCommon {
        &self.a.common
    }

    fn name(&self) -> String {
        "daemon-read".into()
    }

    fn schema(&self) -> &str {
        &self.a.schema
    }

    fn files(&self) -> u64 {
        self.a.files
    }

    fn side(&self, run: &Run, side: &mut Side) -> Result<Vec<Vec<String>>, BenchError> {
        let (a, c) = (self.a, &run.common);
        let files = side.dirs.files.clone();
        let last = c.start_time + (a.pending * run.schema.step_secs) as i64;
        let plan =
            common::plan_updates(&run.schema, &files, a.files, 1..=a.pending, c.start_time, c.batching(1));
        let max_pending = (a.files * a.pending).max(10_000_000) * 2;
        let replies = side.run_daemon(run, WRITE_INTERVAL, max_pending, |daemon, side| {
            let sent = common::send_plan(&daemon.spec.socket(), plan)?;
            if a.evict {
                crate::worker::evict_files(&files, a.files)?;
            }
            let lines: Vec<String> = self
                .picks
                .iter()
                .map(|&i| {
                    format!("FETCH {} AVERAGE {} {}", file_path(&files, i).display(), c.start_time, last)
                })
                .collect();
            let mut conn = daemon.connect()?;
            let mut lat = Vec::with_capacity(lines.len());
            let mut replies = Vec::with_capacity(lines.len());
            let (mut errors, mut first_error) = (0u64, None);
            for l in &lines {
                let t = Instant::now();
                let rep = conn.request(l)?;
                lat.push(t.elapsed().as_secs_f64() * 1e3);
                if rep.status < 0 {
                    errors += 1;
                    first_error.get_or_insert_with(|| format!("{l}: {} {}", rep.status, rep.message));
                }
                replies.push(rep.lines);
            }
            let mut sorted = lat.clone();
            sorted.sort_by(f64::total_cmp);
            side.set("fetches", lat.len() as f64);
            side.set("errors", errors as f64);
            side.set("p50_ms", quantile(&sorted, 0.5));
            side.set("p90_ms", quantile(&sorted, 0.9));
            side.set("p99_ms", quantile(&sorted, 0.99));
            side.set("max_ms", sorted.last().copied().unwrap_or(f64::NAN));
            side.set("mean_ms", lat.iter().sum::<f64>() / lat.len().max(1) as f64);
            side.check(
                "every value accepted and every FETCH answered",
                sent.errors == 0 && errors == 0,
                format!(
                    "{} update errors, {errors} FETCH errors{}",
                    sent.errors,
                    first_error.or(sent.first_error).map(|e| format!(" (first: {e})")).unwrap_or_default()
                ),
            );
            Ok(replies)
        })?;
        eprintln!(
            "{}: FETCH p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            side.label(),
            side.get("p50_ms"),
            side.get("p99_ms"),
            side.get("max_ms")
        );
        Ok(replies)
    }

    fn report(&self, run: &Run, sides: &[DaemonSideResult], replies: Vec<Vec<Vec<String>>>) -> Report {
        let a = self.a;
        let params = vec![
            ("pending values per file", a.pending.to_string()),
            ("FETCHes", self.picks.len().to_string()),
            ("files evicted before", a.evict.to_string()),
        ];
        let columns = vec![
            col("fetches", "FETCHes", 0),
            col("p50_ms", "p50 ms", 3),
            col("p90_ms", "p90 ms", 3),
            col("p99_ms", "p99 ms", 3),
            col("max_ms", "max ms", 3),
            col("mean_ms", "mean ms", 3),
            col("errors", "errors", 0),
        ];
        let mut r = Report::new(run, columns, params);
        if replies.len() > 1 {
            r.checks.push(same_replies(&replies, &self.picks));
        }
        r.ratios = workload::ratios(
            sides,
            "rrdscale (--sync always)",
            &[
                ("p50_ms", "FETCH latency p50_ms (rrdcached's / ours)", false),
                ("p99_ms", "FETCH latency p99_ms (rrdcached's / ours)", false),
            ],
        );
        r.notes.push(
            "One client, one FETCH at a time (AVERAGE over the pending hour), each of a file with pending values."
                .into(),
        );
        r
    }
}

/// Whether every side's reply to each FETCH equals the first side's.
fn same_replies(replies: &[Vec<Vec<String>>], picks: &[u64]) -> Check {
    let n = replies[0].len();
    let mut same = 0;
    let mut first = None;
    for i in 0..n {
        let eq = replies[1..].iter().all(|o| o[i] == replies[0][i]);
        same += usize::from(eq);
        if !eq && first.is_none() {
            let other = replies[1..].iter().find(|o| o[i] != replies[0][i]).expect("a differing side");
            first = Some(format!(
                "file {}: {:?} vs {:?}",
                picks[i],
                replies[0][i].iter().rev().take(3).collect::<Vec<_>>(),
                other[i].iter().rev().take(3).collect::<Vec<_>>()
            ));
        }
    }
    Check {
        name: "FETCH replies equal across sides".into(),
        ok: same == n,
        detail: format!(
            "{same} of {n} replies identical{}",
            first.map(|f| format!("; first difference (last 3 lines) {f}")).unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_are_distinct_and_seeded() {
        let p = pick(100, 30, 7);
        let mut s = p.clone();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), 30);
        assert_eq!(p, pick(100, 30, 7));
        assert_ne!(p, pick(100, 30, 8));
        assert_eq!(pick(5, 10, 1).len(), 5);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert!(quantile(&[], 0.5).is_nan());
    }
}
