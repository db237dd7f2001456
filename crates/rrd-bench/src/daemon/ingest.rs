//! `rrdscale bench daemon-ingest`: values per second a daemon accepts over
//! UNIX sockets, journal on, in one of three client patterns:
//!
//! - `bulk` (the default): `--clients` connections send `BATCH`es of
//!   `--batch-lines` UPDATEs, `--values-per-file` values per file, round by
//!   round; the clock runs from the first byte sent until every batch's
//!   reply has been read.
//! - `roundtrip`: what collectd's rrdcached plugin, `rrdtool update
//!   --daemon`, MRTG and Munin do: one `UPDATE` per file per interval,
//!   waiting for each reply. `--clients` threads (default 1) each own a
//!   disjoint share of the files and walk them round-robin, one step later
//!   per round, for `--secs` (or `--rounds`); values/s of all clients and
//!   every request's latency (`roundtrip`).
//! - `batch-per-interval`: what Cacti-style pollers and relays do: one
//!   client sends one `BATCH` per interval with one `UPDATE` for every file
//!   (the same timestamp), `--intervals` times; the first interval (every
//!   file's first UPDATE since the daemon started) and the later ones
//!   (steady state) are reported apart (`interval`).
//!
//! Each side starts its daemon on its own copy of the files (`-w` far
//! beyond the run, so no flush competes; for the roundtrip and
//! batch-per-interval patterns, the copy evicted from the page cache
//! first, so every side's first touch of a file reads from disk): ours under each `--syncs` policy
//! (`default` = no `--sync` option, labelled with the policy the daemon's
//! help names), rrdcached with `-j` (it writes its journal and never syncs
//! it). Counters of the daemon process (`/proc/PID/io`, CPU) are taken
//! around the measured part. The side (`measure_side`) is the same for
//! every pattern; a pattern gives what is prepared before the daemon starts
//! and what is sent while it runs.
//!
//! Afterwards (untimed) every side is flushed (FLUSHALL, waiting until
//! STATS shows nothing queued or pending) and the files are checked for
//! their last update and compared across sides (a timed roundtrip run
//! sends different numbers of values on different sides: such files are
//! compared with rrdscale's library update of the same values instead).
//!
//! Deliberately absent: values per line other than the one configured,
//! and mixing in other commands.

mod interval;
mod roundtrip;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::daemon::common::{self, col, DaemonCommon, DaemonSideResult, WRITE_INTERVAL};
use crate::daemon::workload::{self, DaemonWorkload, Report, Run, Side};
use crate::daemon::{wait_drained, DaemonKind, DaemonSpec};
use crate::procstat::Meter;
use crate::BenchError;

/// How the clients send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Pattern {
    /// BATCHes of --batch-lines UPDATEs, --values-per-file values per file.
    Bulk,
    /// One UPDATE per request, each reply awaited (collectd, rrdtool
    /// --daemon, MRTG, Munin); per-request latency.
    Roundtrip,
    /// One BATCH per interval with one UPDATE per file (Cacti-style pollers,
    /// relays); first interval and steady state apart.
    BatchPerInterval,
}

#[derive(Debug, Args, Clone)]
pub struct IngestArgs {
    /// Client pattern: bulk, roundtrip or batch-per-interval.
    #[arg(long, value_enum, default_value_t = Pattern::Bulk)]
    pub pattern: Pattern,
    /// Files receiving updates (default 20,000; --pattern roundtrip: 2,000).
    #[arg(long)]
    pub files: Option<u64>,
    /// Values sent per file, one step apart (bulk).
    #[arg(long, default_value_t = 100)]
    pub values_per_file: u64,
    /// Values per UPDATE line (bulk).
    #[arg(long, default_value_t = 1)]
    pub values_per_line: u64,
    /// Also run ours with --sync none, for reference (bulk without --syncs).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub with_sync_none: bool,
    /// Our daemon's sides, one per --sync policy: `default` (no --sync
    /// option: whatever the daemon defaults to), always, none, every:MS.
    /// Default: always,none for bulk; default,always,none otherwise.
    #[arg(long, value_delimiter = ',')]
    pub syncs: Vec<String>,
    /// Seconds each side is measured (roundtrip).
    #[arg(long, default_value_t = 10.0)]
    pub secs: f64,
    /// Rounds over every client's files instead of --secs (roundtrip).
    #[arg(long)]
    pub rounds: Option<u64>,
    /// Intervals, one BATCH of every file each (batch-per-interval).
    #[arg(long, default_value_t = 6)]
    pub intervals: u64,
    /// Evict each side's files from the page cache (fdatasync + DONTNEED)
    /// just before its daemon starts, so every side's first UPDATE of a
    /// file reads it from disk alike (default: true, but false for bulk).
    #[arg(long, action = clap::ArgAction::Set)]
    pub evict: Option<bool>,
    /// perftest, mrtg, growthforecast, or a create line.
    #[arg(long, default_value = "perftest")]
    pub schema: String,
    #[command(flatten)]
    pub common: DaemonCommon,
}

impl IngestArgs {
    fn files(&self) -> u64 {
        self.files.unwrap_or(match self.pattern {
            Pattern::Roundtrip => 2_000,
            Pattern::Bulk | Pattern::BatchPerInterval => 20_000,
        })
    }

    fn evict(&self) -> bool {
        self.evict.unwrap_or(self.pattern != Pattern::Bulk)
    }

    fn syncs(&self) -> Vec<String> {
        if !self.syncs.is_empty() {
            return self.syncs.clone();
        }
        let v: &[&str] = match self.pattern {
            Pattern::Bulk if self.with_sync_none => &["always", "none"],
            Pattern::Bulk => &["always"],
            Pattern::Roundtrip | Pattern::BatchPerInterval => &["default", "always", "none"],
        };
        v.iter().map(|s| s.to_string()).collect()
    }
}

/// What one side was sent while measured.
struct Sent {
    /// UPDATE lines.
    lines: u64,
    values: u64,
    errors: u64,
    first_error: Option<String>,
    /// The measured time (values/s = values / secs).
    secs: f64,
    /// How many values file `i` received.
    per_file: PerFile,
}

/// How many values file `i` received (values 1..=k, value j at
/// start + j·step).
type PerFile = Box<dyn Fn(u64) -> u64>;

/// `daemon-ingest` (every pattern) as a [`DaemonWorkload`]; a pattern
/// gives its side (`bulk`, `roundtrip::side`, `interval::side`) and
/// its report's own parts.
pub struct Ingest<'a>(pub &'a IngestArgs);

pub fn run(a: &IngestArgs, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    workload::run(&mut Ingest(a), args, exe, out)
}

impl DaemonWorkload for Ingest<'_> {
    type SideOut = PerFile;

    fn common(&self) -> &DaemonCommon {
        &self.0.common
    }

    fn name(&self) -> String {
        match self.0.pattern {
            Pattern::Bulk => "daemon-ingest".to_string(),
            p => format!("daemon-ingest --pattern {}", p.to_possible_value().expect("named").get_name()),
        }
    }

    fn schema(&self) -> &str {
        &self.0.schema
    }

    fn files(&self) -> u64 {
        self.0.files()
    }

    fn check(&self) -> Result<(), BenchError> {
        check_args(self.0, self.0.files())
    }

    fn ours(&self, exe: &Path) -> Vec<DaemonKind> {
        self.0.syncs().iter().map(|s| DaemonKind::ours(s, exe)).collect()
    }

    fn side(&self, run: &Run, side: &mut Side) -> Result<PerFile, BenchError> {
        match self.0.pattern {
            Pattern::Bulk => bulk(self.0, run, side),
            Pattern::Roundtrip => roundtrip::side(self.0, run, side),
            Pattern::BatchPerInterval => interval::side(self.0, run, side),
        }
    }

    fn report(&self, run: &Run, sides: &[DaemonSideResult], counts: Vec<PerFile>) -> Report {
        let (a, c) = (self.0, &run.common);
        let mut r = match a.pattern {
            Pattern::Bulk => bulk_report(a, run, sides),
            Pattern::Roundtrip => roundtrip::report(a, run, sides),
            Pattern::BatchPerInterval => interval::report(a, run, sides),
        };
        if a.evict() {
            r.params.push(("files evicted before the daemon starts", "true".into()));
        }
        r.params.push(("write threads (-t)", c.threads.to_string()));
        r.params.push(("-w", WRITE_INTERVAL.to_string()));
        if run.dirs.len() > 1 && c.record.verify > 0 {
            let scratch = run.ws.base.join("reference");
            let sent = common::SentCounts {
                counts: counts.iter().map(|f| f.as_ref()).collect(),
                master: &run.ws.master(),
                scratch: &scratch,
                schema: &run.schema,
                start: c.start_time,
            };
            r.checks.push(common::verify_sides_against(
                &run.files_dirs(),
                Some(&sent),
                run.files,
                c.record.verify,
            ));
        }
        r
    }
}

fn check_args(a: &IngestArgs, files: u64) -> Result<(), BenchError> {
    let bad = |m: String| Err(BenchError::Usage(m));
    if files == 0 {
        return bad("--files must be at least 1".into());
    }
    for s in a.syncs() {
        let ok = matches!(s.as_str(), "default" | "always" | "none")
            || s.strip_prefix("every:").is_some_and(|ms| ms.parse::<u64>().is_ok());
        if !ok {
            return bad(format!("--syncs: '{s}' is not default, always, none or every:MS"));
        }
    }
    match a.pattern {
        Pattern::Roundtrip => {
            let clients = a.common.clients.unwrap_or(1);
            if clients == 0 || clients as u64 > files {
                return bad(format!(
                    "--clients {clients}: each client needs at least one of the {files} files"
                ));
            }
            if a.rounds.is_none() && !(a.secs > 0.0 && a.secs.is_finite()) {
                return bad("--secs must be above 0".into());
            }
            if a.rounds == Some(0) {
                return bad("--rounds must be at least 1".into());
            }
        }
        Pattern::BatchPerInterval if a.intervals == 0 => return bad("--intervals must be at least 1".into()),
        _ => {}
    }
    Ok(())
}

/// One side of every pattern, around what the pattern sends: files evicted
/// (with `--evict`), daemon started, STATS and counters before, `send` (the
/// measured part, given what the pattern `prepared` before the daemon
/// started), counters and STATS after, FLUSHALL until drained, checks.
fn measure_side<P>(
    a: &IngestArgs,
    run: &Run,
    side: &mut Side,
    max_pending_values: u64,
    prepared: P,
    send: impl FnOnce(P, &DaemonSpec, &mut Side) -> Result<Sent, BenchError>,
) -> Result<PerFile, BenchError> {
    let c = &run.common;
    let step = run.schema.step_secs as i64;
    let files = run.files;
    if a.evict() {
        crate::worker::evict_files(&side.dirs.files, files)?;
    }
    let sent = side.run_daemon(run, WRITE_INTERVAL, max_pending_values, |daemon, side| {
        let mut conn = daemon.connect()?;
        let before = conn.stats()?;
        let meter =
            Meter::start(daemon.pid).map_err(|e| BenchError::io("reading the daemon's counters", e))?;
        let sent = send(prepared, &daemon.spec, side)?;
        let counters = meter.stop().map_err(|e| BenchError::io("reading the daemon's counters", e))?;
        let after = conn.stats()?;
        let delta = |key: &str| {
            after.get(key).copied().unwrap_or(0).saturating_sub(before.get(key).copied().unwrap_or(0)) as f64
        };
        let (lines, values) = (sent.lines, sent.values);
        let cpu = counters.cpu_user_secs + counters.cpu_sys_secs;
        side.set("values_sent", values as f64);
        side.set("lines_sent", lines as f64);
        side.set("errors", sent.errors as f64);
        side.set("secs", sent.secs);
        side.set("values_per_s", values as f64 / sent.secs);
        side.set("updates_received", delta("UpdatesReceived"));
        side.set("cpu_secs", cpu);
        side.set("cpu_us_per_value", cpu * 1e6 / values as f64);
        side.set("journal_bytes", crate::daemon::journal_bytes(&daemon.spec.journal_dir()) as f64);
        side.set("write_mib", counters.write_bytes as f64 / 1048576.0);
        if side.kind.is_ours() {
            side.set("journal_syncs", delta("JournalSyncs"));
        }
        side.check(
            "every update accepted",
            sent.errors == 0 && delta("UpdatesReceived") as u64 == lines,
            format!(
                "{lines} UPDATE lines ({values} values) sent, {} errors{}, STATS UpdatesReceived +{}",
                sent.errors,
                sent.first_error.as_ref().map(|e| format!(" (first: {e})")).unwrap_or_default(),
                delta("UpdatesReceived")
            ),
        );
        // Untimed: write everything, so the sides' files can be compared.
        let touched = (0..files).filter(|&i| (sent.per_file)(i) > 0).count() as u64;
        let start_written = after.get("UpdatesWritten").copied().unwrap_or(0);
        let fl = conn.request("FLUSHALL")?;
        if fl.status < 0 {
            return Err(BenchError::Worker(format!("FLUSHALL failed on {}: {}", side.label(), fl.message)));
        }
        wait_drained(
            &mut conn,
            start_written + touched,
            Duration::from_millis(50),
            Duration::from_secs(3600),
        )?;
        let last = |i: u64| c.start_time + (sent.per_file)(i) as i64 * step;
        let (ok, first) = common::count_last_update_by(&side.dirs.files, files, last);
        side.check(
            "files current after FLUSHALL",
            ok == files,
            format!(
                "{ok} of {files} files last updated at {}{}",
                describe_last(files, &last),
                first.map(|f| format!("; {f}")).unwrap_or_default()
            ),
        );
        Ok(sent)
    })?;
    eprintln!(
        "{}: {} values in {:.3} s = {} values/s",
        side.label(),
        sent.values,
        sent.secs,
        crate::report::thousands(side.get("values_per_s"))
    );
    Ok(sent.per_file)
}

/// `T` when every file's last value is at T, else the range.
fn describe_last(files: u64, last: &dyn Fn(u64) -> i64) -> String {
    let (lo, hi) = (0..files).map(last).fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    if lo == hi {
        format!("{lo}")
    } else {
        format!("their last value sent (from {lo} to {hi})")
    }
}

/// `name, <label> / rrdcached` of `key` for every ours side.
fn ratios(
    sides: &[DaemonSideResult],
    keys: &[(&str, &str, bool)],
) -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    for s in sides.iter().filter(|s| s.kind.as_ref().is_some_and(DaemonKind::is_ours)) {
        for &(key, name, higher_is_better) in keys {
            if let Some(x) = common::ratio(sides, &s.label, key, higher_is_better) {
                let how = if higher_is_better { "/ rrdcached" } else { "vs rrdcached (theirs / ours)" };
                out.insert(format!("{name}, {} {how}", s.label), x);
            }
        }
    }
    out
}

/// `--pattern bulk`: BATCHes of UPDATE lines, values per file round by round.
fn bulk(a: &IngestArgs, run: &Run, side: &mut Side) -> Result<PerFile, BenchError> {
    let c = &run.common;
    let total_values = run.files * a.values_per_file;
    let plan = common::plan_updates(
        &run.schema,
        &side.dirs.files,
        run.files,
        1..=a.values_per_file,
        c.start_time,
        c.batching(a.values_per_line),
    );
    measure_side(a, run, side, total_values.max(10_000_000) * 2, plan, |plan, spec, _| {
        let (lines, values) = (plan.lines, plan.values);
        let sent = common::send_plan(&spec.socket(), plan)?;
        let per_file = a.values_per_file;
        Ok(Sent {
            lines,
            values,
            errors: sent.errors,
            first_error: sent.first_error,
            secs: sent.secs,
            per_file: Box::new(move |_| per_file),
        })
    })
}

fn bulk_report(a: &IngestArgs, run: &Run, sides: &[DaemonSideResult]) -> Report {
    let c = &run.common;
    let params = vec![
        ("clients", c.clients().to_string()),
        ("UPDATE lines per BATCH", c.batch_lines.to_string()),
        ("values per file", a.values_per_file.to_string()),
        ("values per UPDATE line", a.values_per_line.to_string()),
    ];
    let columns = vec![
        col("values_sent", "values", 0),
        col("secs", "seconds", 3),
        col("values_per_s", "values/s", 0),
        col("cpu_us_per_value", "daemon CPU µs/value", 2),
        col("journal_syncs", "journal syncs", 0),
        col("journal_bytes", "journal bytes", 0),
        col("errors", "errors", 0),
    ];
    let mut r = Report::new(run, columns, params);
    r.ratios = ratios(sides, &[("values_per_s", "values/s", true)]);
    r.notes.push(
        "The clock runs from the first BATCH sent until every client has read every batch's reply; \
         under --sync always a reply is sent only after the batch's journal records are fdatasync'ed \
         (concurrent clients share a sync). rrdcached appends its journal without syncing."
            .into(),
    );
    r
}
