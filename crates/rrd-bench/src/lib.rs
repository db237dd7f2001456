//! `rrdscale bench`: the seeds' benchmarks, replayed on rrdscale and on
//! rrdtool 1.7.2 side by side in one run, with a report.
//!
//! Workloads ([`workload`]): RRDtool's performance tester (`perftest`:
//! create N files per round, then update every file once per pass, one step
//! per pass) and the GrowthForecast tuning log's table (`growthforecast`: N files,
//! first pass cold, then warm passes). Sides ([`side`]): rrdscale through
//! its library one call per update (`direct`), through the batch updater
//! with prefetch (`batch`), through `rrdscale -` (`pipe`); rrdtool through
//! librrd loaded at run time (`--vs rrdtool`) or through `rrdtool -`.
//!
//! Daemon workloads (`daemon-ingest`, `daemon-flush`, `daemon-restart`,
//! `daemon-read`, `daemon-capacity`; under [`daemon`]: one module each,
//! driven by the one driver in `daemon::workload`, shared pieces in
//! `daemon::common`, process control and protocol in `daemon::process`;
//! the disk probe in [`diskprobe`], per-request latency histograms in
//! [`latency`]; the machine's chores every workload shares in [`host`]):
//! `rrdscale daemon` and rrdcached 1.7.2 on identical copies of the files,
//! one after the other, each in its own memory cgroup with
//! `--memory-budget`, driven only through their command line, UNIX socket
//! and signals.
//!
//! How a direct-update run goes ([`driver`]): the parent creates the files once (master
//! copies), gives every side its own byte-identical copy, and runs each side
//! in a fresh child process (`rrdscale bench --internal-worker`, see
//! [`worker`]) so each has its own `/proc/PID/io` and, with
//! `--memory-budget`, its own memory cgroup ([`cgroup`]). The worker
//! executes the same list of steps (timed creates, evictions, passes) and
//! reports counters per step; the parent aligns them into a report
//! ([`report`], [`svg`]) and checks that the sides' files are still
//! byte-identical afterwards.
//!
//! Invariants: every side gets the same files, the same update strings in
//! the same order and the same cache state before each measured cold pass;
//! strings and paths are prepared before the clock starts; an update that
//! fails on any side fails the run (after the report), never silently.
//!
//! Deliberately absent: any timing threshold (the report states figures; it
//! does not judge them), and linking librrd at build time (it is opened
//! with `dlopen`, so the rest of rrdscale never depends on it).

#![forbid(unsafe_code)]

use std::io::Write;

pub mod cgroup;
pub mod cli;
pub mod daemon;
pub mod diskprobe;
pub mod driver;
pub mod host;
pub mod latency;
/// librrd opened with `dlopen` (its FFI needs `unsafe`, so it lives in rrd-sys).
pub use rrd_sys::librrd;
pub mod procstat;
pub mod report;
pub mod schema;
pub mod side;
pub mod svg;
pub mod worker;
pub mod workload;

/// Everything that can stop a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad command line or option value.
    #[error("{0}")]
    Usage(String),
    /// A value that makes no sense (schema, size, list).
    #[error("{0}")]
    Invalid(String),
    /// A file or directory operation failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// librrd could not be loaded or used.
    #[error("librrd: {0}")]
    Librrd(String),
    /// A memory cgroup could not be set up.
    #[error("memory budget: {0}")]
    Cgroup(String),
    /// A worker process failed or spoke nonsense.
    #[error("{0}")]
    Worker(String),
    /// Updates or creates failed during the run (the report was printed).
    #[error("{0}")]
    Failed(String),
}

impl BenchError {
    /// An I/O error with what was being done (naming the path).
    pub fn io(what: impl Into<String>, source: std::io::Error) -> BenchError {
        BenchError::Io { what: what.into(), source }
    }
}

/// Runs `rrdscale bench ARGS…` (ARGS without `bench`), writing the report to
/// `out`.
pub fn run(args: &[String], out: &mut dyn Write) -> Result<(), BenchError> {
    if args.first().map(String::as_str) == Some("--internal-worker") {
        let spec = args.get(1).ok_or_else(|| BenchError::Usage("--internal-worker needs a spec".into()))?;
        return worker::main(spec, out);
    }
    let cli = match cli::parse(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                write!(out, "{}", e.render()).map_err(|e| BenchError::io("writing the help", e))?;
                return Ok(());
            }
            return Err(BenchError::Usage(e.render().to_string().trim_end().to_string()));
        }
    };
    let exe = std::env::current_exe().map_err(|e| BenchError::io("finding the rrdscale executable", e))?;
    driver::run(&cli, args, &exe, out)
}

impl From<rrd_sys::librrd::LoadError> for BenchError {
    fn from(e: rrd_sys::librrd::LoadError) -> BenchError {
        BenchError::Librrd(e.0)
    }
}
