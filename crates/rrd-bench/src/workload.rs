//! A workload as a list of steps every side executes identically: timed
//! creates, evictions, and passes (one update per file each).
//!
//! Owns: the plans of RRDtool's perftest and the GrowthForecast tuning log's
//! table, the file naming scheme, and which time each file is updated to in
//! each pass.
//!
//! Invariants: each update call carries one value per data source, as the
//! seeds' tools do, one step after the file's previous update (perftest's
//! older files skip the step at which a new round's files are created, as
//! the script does: two steps, still within the heartbeat), and no update
//! ever goes back in time. Files are numbered from 0; a pass updates files
//! `0..n` in order.
//!
//! Deliberately absent: running anything (see [`crate::worker`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::schema::Schema;

/// Files `first..end` created with `start_time` as their last update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Creation {
    pub first: u64,
    pub end: u64,
    pub start_time: i64,
}

/// Files `first..end`, updated at `time` after their previous update at
/// `prev_time`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub first: u64,
    pub end: u64,
    pub time: i64,
    pub prev_time: i64,
}

/// One pass: every file of its segments updated once, in file order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PassSpec {
    /// Index among the workload's passes.
    pub id: usize,
    /// Round (perftest, from 1) or number of files (growthforecast).
    pub group: u64,
    /// Pass number within the group, from 1.
    pub pass: usize,
    /// Whether every file was evicted from the page cache just before.
    pub cold: bool,
    pub segments: Vec<Segment>,
}

impl PassSpec {
    /// Files updated (`0..files`).
    pub fn files(&self) -> u64 {
        self.segments.last().map_or(0, |s| s.end)
    }
}

/// What a worker does, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// Time `count` creates of fresh files (in a scratch directory, removed
    /// afterwards; the benchmarked files are copies made before the run).
    CreateBench {
        round: usize,
        count: u64,
        start_time: i64,
    },
    /// fdatasync + DONTNEED files `0..count`.
    Evict {
        count: u64,
    },
    Pass(PassSpec),
}

/// Which seed's experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    Perftest,
    Growthforecast,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Workload {
    pub kind: Kind,
    pub schema: Schema,
    pub creations: Vec<Creation>,
    pub steps: Vec<Step>,
}

impl Workload {
    /// Files the workload uses.
    pub fn total_files(&self) -> u64 {
        self.creations.iter().map(|c| c.end).max().unwrap_or(0)
    }

    pub fn passes(&self) -> impl Iterator<Item = &PassSpec> {
        self.steps.iter().filter_map(|s| match s {
            Step::Pass(p) => Some(p),
            _ => None,
        })
    }

    /// The last update time of every file after the run, as runs of equal
    /// times: `(first, end, time)`.
    pub fn final_times(&self) -> Vec<(u64, u64, i64)> {
        let mut times: Vec<(u64, u64, i64)> =
            self.creations.iter().map(|c| (c.first, c.end, c.start_time)).collect();
        for p in self.passes() {
            for s in &p.segments {
                times = overlay(&times, s.first, s.end, s.time);
            }
        }
        times
    }
}

/// `runs` with `first..end` set to `time`, equal neighbours merged.
fn overlay(runs: &[(u64, u64, i64)], first: u64, end: u64, time: i64) -> Vec<(u64, u64, i64)> {
    let mut out: Vec<(u64, u64, i64)> = Vec::new();
    let mut push = |a: u64, b: u64, t: i64| {
        if a >= b {
            return;
        }
        match out.last_mut() {
            Some(last) if last.1 == a && last.2 == t => last.1 = b,
            _ => out.push((a, b, t)),
        }
    };
    let mut placed = false;
    for &(a, b, t) in runs {
        if !placed && a >= first {
            push(first, end, time);
            placed = true;
        }
        push(a, b.min(first), t);
        if b > end {
            if !placed {
                push(first, end, time);
                placed = true;
            }
            push(a.max(end), b, t);
        }
    }
    if !placed {
        push(first, end, time);
    }
    out
}

/// RRDtool's perftest: per round, create `files` new files one step after
/// the previous round (their last update 2 s before that step, as the
/// script does), then `passes` passes over all files so far, the clock
/// advancing one step per pass.
pub fn perftest(
    schema: Schema,
    files: u64,
    passes: usize,
    rounds: usize,
    evict: Evict,
    start: i64,
) -> Workload {
    let step = schema.step_secs as i64;
    let mut t = start;
    let mut creations = Vec::new();
    let mut steps = Vec::new();
    let mut id = 0;
    let mut prev = t;
    for r in 0..rounds {
        t += step;
        let first = r as u64 * files;
        let end = first + files;
        creations.push(Creation { first, end, start_time: t - 2 });
        steps.push(Step::CreateBench { round: r + 1, count: files, start_time: t - 2 });
        if r == 0 {
            prev = t - 2;
        }
        for p in 0..passes {
            t += step;
            let cold = evict == Evict::Pass || (evict == Evict::Round && p == 0);
            if cold {
                steps.push(Step::Evict { count: end });
            }
            // Files of this round were created at (round step) - 2: their
            // previous update differs from the older files' but their time
            // is the same.
            let mut segments = vec![Segment { first: 0, end: first, time: t, prev_time: prev }];
            if p == 0 {
                segments.push(Segment { first, end, time: t, prev_time: t - step - 2 });
            } else {
                segments[0].end = end;
            }
            segments.retain(|s| s.first < s.end);
            steps.push(Step::Pass(PassSpec { id, group: r as u64 + 1, pass: p + 1, cold, segments }));
            id += 1;
            prev = t;
        }
    }
    Workload { kind: Kind::Perftest, schema, creations, steps }
}

/// The GrowthForecast tuning log's table: all files created once (10 s before `start`, as
/// GrowthForecast does); for each size N, evict files `0..N`, then
/// `passes` passes over them. Each file advances one step per update it
/// gets, so files new to a larger N start right after their creation.
pub fn growthforecast(schema: Schema, sizes: &[u64], passes: usize, start: i64) -> Workload {
    let step = schema.step_secs as i64;
    let total = sizes.iter().copied().max().unwrap_or(0);
    let created = start - 10;
    let creations = vec![Creation { first: 0, end: total, start_time: created }];
    // Runs of files with equal update counts: (first, end, updates so far).
    let mut counts: Vec<(u64, u64, i64)> = vec![(0, total, 0)];
    let time_after = |updates: i64| if updates == 0 { created } else { start + updates * step };
    let mut steps = Vec::new();
    let mut id = 0;
    for &n in sizes {
        steps.push(Step::Evict { count: n });
        for p in 0..passes {
            let mut segments = Vec::new();
            for &(a, b, k) in &counts {
                if a >= n {
                    break;
                }
                segments.push(Segment {
                    first: a,
                    end: b.min(n),
                    time: time_after(k + 1),
                    prev_time: time_after(k),
                });
            }
            for s in &segments {
                let k = (s.time - start) / step;
                counts = overlay(&counts, s.first, s.end, k);
            }
            steps.push(Step::Pass(PassSpec { id, group: n, pass: p + 1, cold: p == 0, segments }));
            id += 1;
        }
    }
    Workload { kind: Kind::Growthforecast, schema, creations, steps }
}

/// Where file `index` lives under `dir`: at most 1000 files per directory.
pub fn file_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("{:04}", index / 1000)).join(format!("{index:07}.rrd"))
}

/// The directories [`file_path`] uses for files `0..count`.
pub fn file_dirs(dir: &Path, count: u64) -> Vec<PathBuf> {
    (0..count.div_ceil(1000)).map(|d| dir.join(format!("{d:04}"))).collect()
}

/// When perftest evicts files before a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum Evict {
    Never,
    Round,
    Pass,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::parse("perftest").unwrap()
    }

    #[test]
    fn perftest_plan_advances_one_step_per_pass() {
        let w = perftest(schema(), 10, 3, 2, Evict::Round, 1_000_000_200);
        assert_eq!(w.total_files(), 20);
        let passes: Vec<&PassSpec> = w.passes().collect();
        assert_eq!(passes.len(), 6);
        assert_eq!(
            passes[0].segments,
            vec![Segment { first: 0, end: 10, time: 1_000_000_800, prev_time: 1_000_000_498 }]
        );
        assert!(passes[0].cold && !passes[1].cold && passes[3].cold);
        // Round 2: created at 1_000_001_698, first pass one step later for all 20.
        assert_eq!(w.creations[1], Creation { first: 10, end: 20, start_time: 1_000_001_698 });
        assert_eq!(passes[3].files(), 20);
        assert_eq!(passes[3].segments[1].prev_time, 1_000_001_698);
        assert_eq!(passes[3].segments[0].prev_time, 1_000_001_400);
        for p in &passes {
            for s in &p.segments {
                assert!(s.time > s.prev_time && s.time - s.prev_time <= 600, "{s:?}");
            }
        }
        assert_eq!(w.final_times(), vec![(0, 20, 1_000_002_600)]);
        let evictions = w.steps.iter().filter(|s| matches!(s, Step::Evict { .. })).count();
        assert_eq!(evictions, 2);
    }

    #[test]
    fn growthforecast_plan_keeps_every_file_one_step_apart() {
        let start = 1_000_000_000;
        let w = growthforecast(schema(), &[2, 5], 3, start);
        let passes: Vec<&PassSpec> = w.passes().collect();
        assert_eq!(passes.len(), 6);
        assert_eq!(
            passes[0].segments,
            vec![Segment { first: 0, end: 2, time: start + 300, prev_time: start - 10 }]
        );
        // Size 5, pass 1: files 0-1 had 3 updates, files 2-4 none.
        assert_eq!(
            passes[3].segments,
            vec![
                Segment { first: 0, end: 2, time: start + 1200, prev_time: start + 900 },
                Segment { first: 2, end: 5, time: start + 300, prev_time: start - 10 },
            ]
        );
        assert!(passes[3].cold && !passes[4].cold);
        assert_eq!(w.final_times(), vec![(0, 2, start + 1800), (2, 5, start + 900)]);
    }

    #[test]
    fn overlay_splits_and_merges() {
        let runs = vec![(0, 10, 1)];
        assert_eq!(overlay(&runs, 3, 5, 2), vec![(0, 3, 1), (3, 5, 2), (5, 10, 1)]);
        assert_eq!(overlay(&overlay(&runs, 3, 5, 2), 3, 5, 1), vec![(0, 10, 1)]);
        assert_eq!(overlay(&runs, 0, 10, 4), vec![(0, 10, 4)]);
        assert_eq!(overlay(&runs, 5, 15, 4), vec![(0, 5, 1), (5, 15, 4)]);
    }

    #[test]
    fn paths_spread_over_directories() {
        let d = Path::new("/x");
        assert_eq!(file_path(d, 1234), PathBuf::from("/x/0001/0001234.rrd"));
        assert_eq!(file_dirs(d, 1001).len(), 2);
    }
}
