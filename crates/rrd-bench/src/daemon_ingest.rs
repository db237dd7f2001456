//! `rrdscale bench daemon-ingest`: values per second a daemon accepts over
//! UNIX sockets in `BATCH`es of `UPDATE`s, journal on.
//!
//! Each side starts its daemon on its own copy of the files (`-w` far
//! beyond the run, so no flush competes), connects `--clients` clients,
//! and then the clock runs from the first byte sent until every batch's
//! reply has been read: ours under `--sync always` (group commit: a reply
//! waits for the `fdatasync` of its records), ours under `--sync none` for
//! reference, rrdcached with `-j` (it writes its journal and never syncs
//! it). Counters of the daemon process (`/proc/PID/io`, CPU) are taken
//! around the measured part.
//!
//! Afterwards (untimed) every side is flushed (FLUSHALL, waiting until
//! STATS shows nothing queued or pending) and the files are compared across
//! sides and checked for their last update.
//!
//! Deliberately absent: values per line other than the one configured,
//! and mixing in other commands.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use clap::Args;

use crate::daemon::{wait_drained, DaemonProc};
use crate::dcommon::{self, col, Check, DaemonCommon, DaemonResults, DaemonSideResult};
use crate::procstat::Meter;
use crate::schema::Schema;
use crate::BenchError;

#[derive(Debug, Args, Clone)]
pub struct IngestArgs {
    /// Files receiving updates.
    #[arg(long, default_value_t = 20_000)]
    pub files: u64,
    /// Values sent per file (one step apart).
    #[arg(long, default_value_t = 100)]
    pub values_per_file: u64,
    /// Values per UPDATE line.
    #[arg(long, default_value_t = 1)]
    pub values_per_line: u64,
    /// Also run ours with --sync none, for reference.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub with_sync_none: bool,
    /// perftest, mrtg, growthforecast, or a create line.
    #[arg(long, default_value = "perftest")]
    pub schema: String,
    #[command(flatten)]
    pub common: DaemonCommon,
}

pub fn run(a: &IngestArgs, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    let c = &a.common;
    let schema = Schema::parse(&a.schema)?;
    let syncs: Vec<&str> = if a.with_sync_none { vec!["always", "none"] } else { vec!["always"] };
    let kinds = dcommon::sides(c, &syncs)?;
    let ws = dcommon::Workspace::new(c, args)?;
    let file_bytes = dcommon::make_master(&schema, a.files, c.start_time, &ws.master())?;
    let mut dirs = Vec::new();
    for k in &kinds {
        let d = dcommon::side_dirs(&ws.base, k);
        dcommon::copy_files(&ws.master(), &d.files, a.files, &k.label())?;
        dirs.push(d);
    }
    crate::driver::syncfs(&ws.base)?;
    let total_values = a.files * a.values_per_file;
    // Far beyond the run: nothing is flushed until FLUSHALL.
    let w = 1_000_000;
    let mut sides = Vec::new();
    let mut checks = Vec::new();
    let last = c.start_time + (a.values_per_file * schema.step_secs) as i64;
    for (k, (kind, d)) in kinds.iter().zip(&dirs).enumerate() {
        let cg = dcommon::cgroup_for(c, k)?;
        let spec = dcommon::spec_for(kind, c, exe, &d.run, w, total_values.max(10_000_000) * 2);
        let plan = dcommon::plan_updates(
            &schema,
            &d.files,
            a.files,
            1..=a.values_per_file,
            c.start_time,
            c.batching(a.values_per_line),
        );
        let (lines, values) = (plan.lines, plan.values);
        let (mut daemon, _) = DaemonProc::start(&spec, cg.as_ref().map(|g| g.path.as_path()))?;
        let mut conn = crate::with_daemon!(daemon, daemon.connect());
        let before = crate::with_daemon!(daemon, conn.stats());
        let meter =
            Meter::start(daemon.pid).map_err(|e| BenchError::io("reading the daemon's counters", e))?;
        let sent = crate::with_daemon!(daemon, dcommon::send_plan(&spec.socket(), plan));
        let counters = meter.stop().map_err(|e| BenchError::io("reading the daemon's counters", e))?;
        let after = crate::with_daemon!(daemon, conn.stats());
        let mut r = DaemonSideResult {
            label: kind.label(),
            kind: Some(kind.clone()),
            command_line: spec.command_line().join(" "),
            ..Default::default()
        };
        let delta = |key: &str| {
            after.get(key).copied().unwrap_or(0).saturating_sub(before.get(key).copied().unwrap_or(0)) as f64
        };
        r.set("values_sent", values as f64);
        r.set("lines_sent", lines as f64);
        r.set("errors", sent.errors as f64);
        r.set("secs", sent.secs);
        r.set("values_per_s", values as f64 / sent.secs);
        r.set("updates_received", delta("UpdatesReceived"));
        r.set("cpu_secs", counters.cpu_user_secs + counters.cpu_sys_secs);
        r.set("cpu_us_per_value", (counters.cpu_user_secs + counters.cpu_sys_secs) * 1e6 / values as f64);
        r.set("journal_bytes", dcommon_journal_bytes(&spec.journal_dir()) as f64);
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
                sent.first_error.map(|e| format!(" (first: {e})")).unwrap_or_default(),
                delta("UpdatesReceived")
            ),
        });
        // Untimed: write everything, so the sides' files can be compared.
        let start_written = after.get("UpdatesWritten").copied().unwrap_or(0);
        let fl = crate::with_daemon!(daemon, conn.request("FLUSHALL"));
        if fl.status < 0 {
            return Err(BenchError::Worker(format!("FLUSHALL failed on {}: {}", r.label, fl.message)));
        }
        crate::with_daemon!(
            daemon,
            wait_drained(
                &mut conn,
                start_written + a.files,
                Duration::from_millis(50),
                Duration::from_secs(3600),
            )
        );
        let (ok, first) = dcommon::count_last_update(&d.files, a.files, last);
        checks.push(Check {
            name: format!("{}: files current after FLUSHALL", r.label),
            ok: ok == a.files,
            detail: format!(
                "{ok} of {} files last updated at {last}{}",
                a.files,
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
    }
    if dirs.len() > 1 && c.verify > 0 {
        let files: Vec<_> = dirs.iter().map(|d| d.files.clone()).collect();
        checks.push(dcommon::verify_sides(&files, a.files, c.verify));
    }
    let mut ratios = std::collections::BTreeMap::new();
    for s in ["always", "none"] {
        let label = format!("rrdscale (--sync {s})");
        if let Some(x) = dcommon::ratio(&sides, &label, "values_per_s", true) {
            ratios.insert(format!("values/s, {label} / rrdcached"), x);
        }
    }
    let params = [
        ("clients", c.clients.to_string()),
        ("UPDATE lines per BATCH", c.batch_lines.to_string()),
        ("values per file", a.values_per_file.to_string()),
        ("values per UPDATE line", a.values_per_line.to_string()),
        ("write threads (-t)", c.threads.to_string()),
        ("-w", w.to_string()),
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
        ..ws.results("daemon-ingest", c.memory_budget, schema, file_bytes, a.files, &params)
    };
    dcommon::finish(results, &ws, c.json.as_deref(), out)
}

fn dcommon_journal_bytes(dir: &Path) -> u64 {
    crate::daemon::journal_bytes(dir)
}
