//! The command line of `rrdscale bench` (clap derive), and the small value
//! parsers it needs (sizes like `50M`, lists like `1000,5000`).
//!
//! Deliberately absent: any default that depends on the machine. A run is
//! reproduced by its printed command alone.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::host::parse_size;
use crate::side::{Mode, Versus};

/// Replays the seeds' benchmarks on rrdscale, optionally side by side with
/// rrdtool 1.7.2, and prints a Markdown report on stdout.
#[derive(Debug, Parser)]
#[command(name = "rrdscale bench", disable_version_flag = true)]
pub struct Cli {
    #[command(subcommand)]
    pub workload: Workload,
}

#[derive(Debug, Subcommand)]
pub enum Workload {
    /// RRDtool's performance tester (perftest, docs/references.md): create N files per round (creates/s),
    /// then update every file once per pass, one step per pass
    /// (updates/s per pass and the consolidations each pass fired).
    Perftest(PerftestArgs),
    /// The GrowthForecast tuning log's table: for each N, a cold first pass (all
    /// files evicted from the page cache) then warm passes; seconds per pass.
    Growthforecast(GrowthforecastArgs),
    /// Daemon ingest: values/s accepted over UNIX sockets, journal on, as
    /// bulk BATCHes, as one UPDATE per request awaited (--pattern roundtrip,
    /// with latency), or as one BATCH of every file per interval (--pattern
    /// batch-per-interval); rrdscale daemon per --sync policy vs rrdcached.
    DaemonIngest(crate::daemon::ingest::IngestArgs),
    /// Daemon flush: FLUSHALL of pending values for N cold files; files/s,
    /// pages read and written per file, and the disk's bound.
    DaemonFlush(crate::daemon::flush::FlushArgs),
    /// Daemon restart: kill -9 with pending data journaled for many files;
    /// time until PING answers and until everything is written.
    DaemonRestart(crate::daemon::restart::RestartArgs),
    /// Daemon read: FETCH latency of files with pending values.
    DaemonRead(crate::daemon::read::ReadArgs),
    /// Daemon capacity: the most MRTG files kept current over a simulated
    /// hour under 2.5 KiB of RAM per file (doubling, then bisection).
    DaemonCapacity(crate::daemon::capacity::CapacityArgs),
    /// Prints the report of a saved run (its --json file) again, and
    /// optionally redraws its plots.
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The JSON file a run wrote with --json.
    pub json: PathBuf,
    /// Also write SVG plots into this directory.
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PerftestArgs {
    /// Files created per round.
    #[arg(long, default_value_t = 20_000)]
    pub files: u64,
    /// Passes per round (each pass updates every file once, one step later).
    #[arg(long, default_value_t = 50)]
    pub updates_per_round: usize,
    /// Rounds (each adds --files files, then runs its passes over all files).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// When to evict every file from the page cache (fdatasync + DONTNEED)
    /// before a pass: never, before the first pass of each round, or before
    /// every pass.
    #[arg(long, value_enum, default_value_t = Evict::Never)]
    pub evict: Evict,
    /// perftest, mrtg, growthforecast, or a create line
    /// ('-s 300 DS:… RRA:…').
    #[arg(long, default_value = "perftest")]
    pub schema: String,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Args)]
pub struct GrowthforecastArgs {
    /// Numbers of files, one table row each (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000,5000,10000,20000,60000")]
    pub sizes: Vec<u64>,
    /// Passes per size; the first is cold (files evicted first).
    #[arg(long, default_value_t = 3)]
    pub passes: usize,
    /// perftest, mrtg, growthforecast, or a create line.
    #[arg(long, default_value = "growthforecast")]
    pub schema: String,
    #[command(flatten)]
    pub common: Common,
}

/// Options every workload takes.
#[derive(Debug, Args)]
pub struct Common {
    /// How rrdscale updates (comma-separated for several, run one after the
    /// other on their own copies): direct = one update call per file, like
    /// librrd; batch = batch updater, prefetching --chunk updates at once;
    /// pipe = `rrdscale -` fed update lines; mapped = files kept mapped
    /// (no descriptors, no locks), the pages of --chunk updates prefetched
    /// at once (MADV_WILLNEED), then one update call per file;
    /// librrd = rrdscale's drop-in librrd.so.8 (--librrd) through
    /// rrd_update_r, as the `--vs rrdtool` side calls Debian's.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "direct")]
    pub mode: Vec<Mode>,
    /// Also run rrdtool 1.7.2 on copies of the same files: `rrdtool` =
    /// librrd (dlopen librrd.so.8, rrd_update_r), `rrdtool-pipe` = `rrdtool -`.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub vs: Vec<Versus>,
    /// Run each side in its own memory cgroup with this limit (page cache
    /// charged to it), e.g. 50M. Needs root and cgroup v1 or v2.
    #[arg(long, value_parser = parse_size)]
    pub memory_budget: Option<u64>,
    /// Directory for the files (kept afterwards). Default: a temporary
    /// directory, removed at the end unless --keep.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the temporary directory.
    #[arg(long)]
    pub keep: bool,
    /// Updates prefetched together in batch and mapped modes.
    #[arg(long, default_value_t = 1024)]
    pub chunk: usize,
    /// Files the batch updater keeps open (least recently used closed first).
    #[arg(long, default_value_t = 1024)]
    pub max_open: usize,
    /// rrdscale's librrd.so.8 for `--mode librrd` (scripts/build-librrd.sh
    /// builds it). Default: librrd.so beside the rrdscale binary.
    #[arg(long)]
    pub librrd: Option<PathBuf>,
    /// Time (epoch seconds) from which the first round's steps count.
    /// Default 2023-11-15 10:00 UTC, so a perftest run crosses 12:00.
    #[arg(long, default_value_t = 1_700_042_400)]
    pub start_time: i64,
    #[command(flatten)]
    pub record: RunRecord,
    /// Also write SVG plots into this directory.
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

/// What a run keeps to be checked by, in both the file workloads
/// ([`Common`]) and the daemon ones
/// ([`crate::daemon::common::DaemonCommon`]).
#[derive(Debug, Args, Clone)]
pub struct RunRecord {
    /// Files compared byte for byte across sides after the run (0 = none).
    #[arg(long, default_value_t = 100)]
    pub verify: u64,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub use crate::workload::Evict;

/// Parses the arguments after `bench`.
pub fn parse(args: &[String]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("rrdscale bench".to_string()).chain(args.iter().cloned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_parse() {
        let args: Vec<String> =
            "perftest --files 50 --updates-per-round 3 --mode direct,batch --vs rrdtool --memory-budget 50M"
                .split(' ')
                .map(String::from)
                .collect();
        let cli = parse(&args).unwrap();
        let Workload::Perftest(p) = cli.workload else { panic!("not perftest") };
        assert_eq!(p.files, 50);
        assert_eq!(p.common.mode, vec![Mode::Direct, Mode::Batch]);
        assert_eq!(p.common.vs, vec![Versus::Rrdtool]);
        assert_eq!(p.common.memory_budget, Some(50 << 20));
        let args: Vec<String> =
            ["growthforecast", "--sizes", "20,40"].iter().map(|s| s.to_string()).collect();
        let Workload::Growthforecast(g) = parse(&args).unwrap().workload else { panic!("not gf") };
        assert_eq!(g.sizes, vec![20, 40]);
        assert_eq!(g.passes, 3);
        assert!(parse(&["perftest".into(), "--mode".into(), "fast".into()]).is_err());
    }
}
