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
//!   every request's latency ([`roundtrip`]).
//! - `batch-per-interval`: what Cacti-style pollers and relays do: one
//!   client sends one `BATCH` per interval with one `UPDATE` for every file
//!   (the same timestamp), `--intervals` times; the first interval (every
//!   file's first UPDATE since the daemon started) and the later ones
//!   (steady state) are reported apart ([`interval`]).
//!
//! Each side starts its daemon on its own copy of the files (`-w` far
//! beyond the run, so no flush competes; for the roundtrip and
//! batch-per-interval patterns, the copy evicted from the page cache
//! first, so every side's first touch of a file reads from disk): ours under each `--syncs` policy
//! (`default` = no `--sync` option, labelled with the policy the daemon's
//! help names), rrdcached with `-j` (it writes its journal and never syncs
//! it). Counters of the daemon process (`/proc/PID/io`, CPU) are taken
//! around the measured part. The side loop ([`run_sides`]) is the same for
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

use crate::daemon::{wait_drained, DaemonKind, DaemonProc, DaemonSpec};
use crate::dcommon::{self, col, Check, DaemonCommon, DaemonResults, DaemonSideResult, SideDirs, Workspace};
use crate::procstat::Meter;
use crate::schema::Schema;
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

/// What a run shares across its sides: files, schema, places.
struct Setup {
    schema: Schema,
    files: u64,
    kinds: Vec<DaemonKind>,
    dirs: Vec<SideDirs>,
    file_bytes: u64,
    ws: Workspace,
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
    /// How many values file `i` received (values 1..=k, value j at
    /// start + j·step).
    per_file: Box<dyn Fn(u64) -> u64>,
}

/// `-w` of every side: far beyond the run, nothing is flushed until FLUSHALL.
const WRITE_INTERVAL: u64 = 1_000_000;

pub fn run(a: &IngestArgs, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    let c = &a.common;
    let files = a.files();
    check_args(a, files)?;
    let schema = Schema::parse(&a.schema)?;
    let ours: Vec<DaemonKind> = a.syncs().iter().map(|s| DaemonKind::ours(s, exe)).collect();
    let kinds = dcommon::sides_with(c, ours)?;
    let ws = Workspace::new(c, args)?;
    let file_bytes = dcommon::make_master(&schema, files, c.start_time, &ws.master())?;
    let mut dirs = Vec::new();
    for k in &kinds {
        let d = dcommon::side_dirs(&ws.base, k);
        dcommon::copy_files(&ws.master(), &d.files, files, &k.label())?;
        dirs.push(d);
    }
    crate::driver::syncfs(&ws.base)?;
    let setup = Setup { schema, files, kinds, dirs, file_bytes, ws };
    match a.pattern {
        Pattern::Bulk => bulk(a, setup, exe, out),
        Pattern::Roundtrip => roundtrip::run(a, setup, exe, out),
        Pattern::BatchPerInterval => interval::run(a, setup, exe, out),
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

/// Runs every side one after the other: copies made, `prepare` (untimed,
/// before the daemon starts), files evicted (with `--evict`), daemon started (in its cgroup), STATS and
/// counters before, `send` (the measured part), counters and STATS after,
/// FLUSHALL until drained, checks, daemon stopped. Then the files are
/// compared across sides. Returns the sides and the checks.
fn run_sides<P>(
    a: &IngestArgs,
    s: &Setup,
    exe: &Path,
    max_pending_values: u64,
    prepare: impl Fn(&SideDirs) -> Result<P, BenchError>,
    send: impl Fn(P, &DaemonSpec, &mut DaemonSideResult) -> Result<Sent, BenchError>,
) -> Result<(Vec<DaemonSideResult>, Vec<Check>), BenchError> {
    let c = &a.common;
    let step = s.schema.step_secs as i64;
    let (mut sides, mut checks, mut counts) = (Vec::new(), Vec::new(), Vec::new());
    for (k, (kind, d)) in s.kinds.iter().zip(&s.dirs).enumerate() {
        let cg = dcommon::cgroup_for(c, k)?;
        let spec = dcommon::spec_for(kind, c, exe, &d.run, WRITE_INTERVAL, max_pending_values);
        let prepared = prepare(d)?;
        if a.evict() {
            crate::worker::evict_files(&d.files, s.files)?;
        }
        let (mut daemon, _) = DaemonProc::start(&spec, cg.as_ref().map(|g| g.path.as_path()))?;
        let mut conn = crate::with_daemon!(daemon, daemon.connect());
        let before = crate::with_daemon!(daemon, conn.stats());
        let meter =
            Meter::start(daemon.pid).map_err(|e| BenchError::io("reading the daemon's counters", e))?;
        let mut r = DaemonSideResult {
            label: kind.label(),
            kind: Some(kind.clone()),
            command_line: spec.command_line().join(" "),
            ..Default::default()
        };
        let sent = crate::with_daemon!(daemon, send(prepared, &spec, &mut r));
        let counters = meter.stop().map_err(|e| BenchError::io("reading the daemon's counters", e))?;
        let after = crate::with_daemon!(daemon, conn.stats());
        let delta = |key: &str| {
            after.get(key).copied().unwrap_or(0).saturating_sub(before.get(key).copied().unwrap_or(0)) as f64
        };
        let (lines, values) = (sent.lines, sent.values);
        let cpu = counters.cpu_user_secs + counters.cpu_sys_secs;
        r.set("values_sent", values as f64);
        r.set("lines_sent", lines as f64);
        r.set("errors", sent.errors as f64);
        r.set("secs", sent.secs);
        r.set("values_per_s", values as f64 / sent.secs);
        r.set("updates_received", delta("UpdatesReceived"));
        r.set("cpu_secs", cpu);
        r.set("cpu_us_per_value", cpu * 1e6 / values as f64);
        r.set("journal_bytes", crate::daemon::journal_bytes(&spec.journal_dir()) as f64);
        r.set("write_mib", counters.write_bytes as f64 / 1048576.0);
        if kind.is_ours() {
            r.set("journal_syncs", delta("JournalSyncs"));
        }
        checks.push(Check {
            name: format!("{}: every update accepted", r.label),
            ok: sent.errors == 0 && delta("UpdatesReceived") as u64 == lines,
            detail: format!(
                "{lines} UPDATE lines ({values} values) sent, {} errors{}, STATS UpdatesReceived +{}",
                sent.errors,
                sent.first_error.as_ref().map(|e| format!(" (first: {e})")).unwrap_or_default(),
                delta("UpdatesReceived")
            ),
        });
        // Untimed: write everything, so the sides' files can be compared.
        let touched = (0..s.files).filter(|&i| (sent.per_file)(i) > 0).count() as u64;
        let start_written = after.get("UpdatesWritten").copied().unwrap_or(0);
        let fl = crate::with_daemon!(daemon, conn.request("FLUSHALL"));
        if fl.status < 0 {
            return Err(BenchError::Worker(format!("FLUSHALL failed on {}: {}", r.label, fl.message)));
        }
        crate::with_daemon!(
            daemon,
            wait_drained(
                &mut conn,
                start_written + touched,
                Duration::from_millis(50),
                Duration::from_secs(3600)
            )
        );
        let last = |i: u64| c.start_time + (sent.per_file)(i) as i64 * step;
        let (ok, first) = dcommon::count_last_update_by(&d.files, s.files, last);
        checks.push(Check {
            name: format!("{}: files current after FLUSHALL", r.label),
            ok: ok == s.files,
            detail: format!(
                "{ok} of {} files last updated at {}{}",
                s.files,
                describe_last(s.files, &last),
                first.map(|f| format!("; {f}")).unwrap_or_default()
            ),
        });
        daemon.stop(Duration::from_secs(120))?;
        r.memory = cg.as_ref().map(|g| g.usage());
        eprintln!(
            "{}: {} values in {:.3} s = {} values/s",
            r.label,
            values,
            sent.secs,
            crate::report::thousands(r.get("values_per_s"))
        );
        sides.push(r);
        counts.push(sent.per_file);
    }
    if s.dirs.len() > 1 && c.verify > 0 {
        let files: Vec<_> = s.dirs.iter().map(|d| d.files.clone()).collect();
        let scratch = s.ws.base.join("reference");
        let sent = dcommon::SentCounts {
            counts: counts.iter().map(|f| f.as_ref()).collect(),
            master: &s.ws.master(),
            scratch: &scratch,
            schema: &s.schema,
            start: c.start_time,
        };
        checks.push(dcommon::verify_sides_against(&files, Some(&sent), s.files, c.verify));
    }
    Ok((sides, checks))
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
            if let Some(x) = dcommon::ratio(sides, &s.label, key, higher_is_better) {
                let how = if higher_is_better { "/ rrdcached" } else { "vs rrdcached (theirs / ours)" };
                out.insert(format!("{name}, {} {how}", s.label), x);
            }
        }
    }
    out
}

/// The report's common part for a pattern: workload name, parameters.
fn results(a: &IngestArgs, s: &Setup, params: &[(&str, String)]) -> DaemonResults {
    let workload = match a.pattern {
        Pattern::Bulk => "daemon-ingest".to_string(),
        p => format!("daemon-ingest --pattern {}", p.to_possible_value().expect("named").get_name()),
    };
    let mut params = params.to_vec();
    if a.evict() {
        params.push(("files evicted before the daemon starts", "true".into()));
    }
    params.push(("write threads (-t)", a.common.threads.to_string()));
    params.push(("-w", WRITE_INTERVAL.to_string()));
    s.ws.results(&workload, a.common.memory_budget, s.schema.clone(), s.file_bytes, s.files, &params)
}

/// `--pattern bulk`: BATCHes of UPDATE lines, values per file round by round.
fn bulk(a: &IngestArgs, s: Setup, exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    let c = &a.common;
    let total_values = s.files * a.values_per_file;
    let (sides, checks) = run_sides(
        a,
        &s,
        exe,
        total_values.max(10_000_000) * 2,
        |d| {
            Ok(dcommon::plan_updates(
                &s.schema,
                &d.files,
                s.files,
                1..=a.values_per_file,
                c.start_time,
                c.batching(a.values_per_line),
            ))
        },
        |plan, spec, _| {
            let (lines, values) = (plan.lines, plan.values);
            let sent = dcommon::send_plan(&spec.socket(), plan)?;
            let per_file = a.values_per_file;
            Ok(Sent {
                lines,
                values,
                errors: sent.errors,
                first_error: sent.first_error,
                secs: sent.secs,
                per_file: Box::new(move |_| per_file),
            })
        },
    )?;
    let ratios = ratios(&sides, &[("values_per_s", "values/s", true)]);
    let params = [
        ("clients", c.clients().to_string()),
        ("UPDATE lines per BATCH", c.batch_lines.to_string()),
        ("values per file", a.values_per_file.to_string()),
        ("values per UPDATE line", a.values_per_line.to_string()),
    ];
    let results = DaemonResults {
        columns: vec![
            col("values_sent", "values", 0),
            col("secs", "seconds", 3),
            col("values_per_s", "values/s", 0),
            col("cpu_us_per_value", "daemon CPU µs/value", 2),
            col("journal_syncs", "journal syncs", 0),
            col("journal_bytes", "journal bytes", 0),
            col("errors", "errors", 0),
        ],
        sides,
        ratios,
        checks,
        notes: vec![
            "The clock runs from the first BATCH sent until every client has read every batch's reply; \
             under --sync always a reply is sent only after the batch's journal records are fdatasync'ed \
             (concurrent clients share a sync). rrdcached appends its journal without syncing."
                .into(),
        ],
        ..results(a, &s, &params)
    };
    dcommon::finish(results, &s.ws, c.json.as_deref(), out)
}
