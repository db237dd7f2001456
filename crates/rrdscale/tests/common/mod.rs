//! Shared code of the differential tests against the real rrdtool: the case
//! generator (`gen`), the runner and reports (`harness`), and here the
//! run-level plumbing: finding the tools, reading the environment knobs,
//! running many cases on a few threads and summing up.
//!
//! Environment knobs (all optional):
//! - `RRDSCALE_DIFF_CASES`: how many random cases (default per test);
//! - `RRDSCALE_DIFF_SEED`: the run's seed, decimal or 0x-hex (default: from
//!   the clock, printed);
//! - `RRDSCALE_DIFF_ONLY`: run only this case index of the seed;
//! - `RRDSCALE_DIFF_THREADS`: parallel cases (default: available cores);
//! - `RRDSCALE_DIFF_SHRINK`: how many failing cases to shrink (default 2);
//! - `RRDSCALE_DIFF_STRICT_ERRORS=1`: compare error messages, not just the
//!   `ERROR:` prefix.
//!
//! Deliberately not here: any knowledge of rrdtool's arithmetic. A missing
//! rrdtool is a test failure, never a skip.

#![allow(dead_code)]

pub mod gen;
pub mod harness;
pub mod pipe;
pub mod tools;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gen::Case;
use harness::{CaseReport, Harness, Tally, Tool};

pub const RRDTOOL: &str = "/usr/bin/rrdtool";

/// The oracle. Panics (fails the test) when it is not installed.
pub fn rrdtool() -> Tool {
    tools::require_rrdtool();
    Tool { name: "rrdtool".into(), path: PathBuf::from(RRDTOOL) }
}

pub fn rrdscale() -> Tool {
    Tool { name: "rrdscale".into(), path: PathBuf::from(env!("CARGO_BIN_EXE_rrdscale")) }
}

/// `<workspace>/test-output/differential`.
pub fn output_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate_dir.parent().and_then(Path::parent).unwrap_or(crate_dir);
    workspace.join("test-output/differential")
}

pub fn harness(candidate: Tool, out_dir: PathBuf) -> Harness {
    Harness {
        oracle: rrdtool(),
        candidate,
        out_dir,
        strict_errors: std::env::var("RRDSCALE_DIFF_STRICT_ERRORS").is_ok_and(|v| v == "1"),
        timeout: Duration::from_secs(60),
        oracle_reads_candidate: true,
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

#[derive(Clone, Debug)]
pub struct RunConfig {
    pub seed: u64,
    pub cases: u64,
    pub only: Option<u64>,
    pub threads: usize,
    pub shrink: usize,
}

impl RunConfig {
    pub fn from_env(default_cases: u64) -> RunConfig {
        let seed = env_u64("RRDSCALE_DIFF_SEED").unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            (now.as_secs() * 1_000_003) ^ now.subsec_nanos() as u64 ^ ((std::process::id() as u64) << 40)
        });
        let threads = env_u64("RRDSCALE_DIFF_THREADS")
            .map(|n| n.max(1) as usize)
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2));
        RunConfig {
            seed,
            cases: env_u64("RRDSCALE_DIFF_CASES").unwrap_or(default_cases),
            only: env_u64("RRDSCALE_DIFF_ONLY"),
            threads,
            shrink: env_u64("RRDSCALE_DIFF_SHRINK").unwrap_or(2) as usize,
        }
    }

    pub fn indices(&self) -> Vec<u64> {
        match self.only {
            Some(i) => vec![i],
            None => (0..self.cases).collect(),
        }
    }
}

pub struct RunResult {
    pub reports: Vec<CaseReport>,
    pub tally: Tally,
    pub elapsed: Duration,
}

impl RunResult {
    pub fn failed(&self) -> Vec<&CaseReport> {
        self.reports.iter().filter(|r| r.failed()).collect()
    }

    pub fn surprises(&self) -> Vec<String> {
        self.reports
            .iter()
            .flat_map(|r| r.surprises.iter().map(move |s| format!("case {}: {s}", r.index)))
            .collect()
    }
}

/// Runs every case of `cfg` on `cfg.threads` threads.
pub fn run_all(h: &Harness, cfg: &RunConfig) -> RunResult {
    let started = Instant::now();
    let indices = cfg.indices();
    let next = AtomicU64::new(0);
    let reports = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..cfg.threads.min(indices.len()).max(1) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(&index) = indices.get(k) else { break };
                let case = Case::generate(gen::case_seed(cfg.seed, index));
                let report = h.run_case(index, &case);
                reports.lock().expect("no thread panicked holding the lock").push(report);
            });
        }
    });
    let mut reports = reports.into_inner().expect("no thread panicked holding the lock");
    reports.sort_by_key(|r| r.index);
    let mut tally = Tally::default();
    for r in &reports {
        tally.add(r);
    }
    RunResult { reports, tally, elapsed: started.elapsed() }
}

/// Prints the summary and the failures (shrunk and with reproducers), and
/// returns the text of the failure for the assertion, or `None` if all
/// cases passed.
pub fn report_run(h: &Harness, cfg: &RunConfig, result: &RunResult, label: &str) -> Option<String> {
    let failed = result.failed();
    println!(
        "{label}: seed {} ({} cases, {} threads): {} cases passed, {} failed in {:.1} s; {} updates in all",
        cfg.seed,
        result.reports.len(),
        cfg.threads,
        result.reports.len() - failed.len(),
        failed.len(),
        result.elapsed.as_secs_f64(),
        result.reports.iter().map(|r| r.case.update_count()).sum::<usize>(),
    );
    println!("checks:\n{}", result.tally.table());
    let surprises = result.surprises();
    if !surprises.is_empty() {
        println!("generator surprises (rrdtool disagreed with the generator's intent; a generator bug):");
        for s in surprises.iter().take(20) {
            println!("  {s}");
        }
    }
    if failed.is_empty() {
        return None;
    }
    let mut text = String::new();
    for (k, r) in failed.iter().enumerate() {
        if k < 5 {
            println!("{}", harness::describe_failure(h, cfg.seed, r));
        }
        if k < 20 {
            match h.write_reproducer(cfg.seed, r) {
                Ok(p) => println!("reproducer for case {}: {}", r.index, p.display()),
                Err(e) => println!("could not write the reproducer of case {}: {e}", r.index),
            }
        }
        if k < cfg.shrink {
            if let Some(small) = h.shrink(r, 25) {
                println!(
                    "case {} shrinks to {} updates in {} calls, {} RRAs, still failing '{}':",
                    r.index,
                    small.case.update_count(),
                    small.case.calls.len(),
                    small.case.rras_len(),
                    small.mismatches[0].check
                );
                println!("{}", harness::describe_failure(h, cfg.seed, &small));
                let mut shrunk_out = h.clone();
                shrunk_out.out_dir = h.out_dir.join("shrunk");
                if let Ok(p) = shrunk_out.write_reproducer(cfg.seed, &small) {
                    println!("reproducer of the shrunk case: {}", p.display());
                }
            }
        }
    }
    println!("all failing cases (rerun one with RRDSCALE_DIFF_SEED={} RRDSCALE_DIFF_ONLY=<case>):", cfg.seed);
    for r in &failed {
        let mut checks: Vec<&str> = Vec::new();
        for m in &r.mismatches {
            if !checks.contains(&m.check.as_str()) {
                checks.push(&m.check);
            }
        }
        println!("  case {:>4}: {}", r.index, checks.join(", "));
    }
    let first = failed[0];
    text.push_str(&format!(
        "{} of {} differential cases failed (seed {}; rerun one with RRDSCALE_DIFF_SEED={} RRDSCALE_DIFF_ONLY={}); first: case {}, {}",
        failed.len(),
        result.reports.len(),
        cfg.seed,
        cfg.seed,
        first.index,
        first.index,
        first.mismatches[0].check
    ));
    Some(text)
}

impl Case {
    pub fn rras_len(&self) -> usize {
        self.schema.rras.len()
    }
}
