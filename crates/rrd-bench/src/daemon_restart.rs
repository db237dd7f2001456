//! `rrdscale bench daemon-restart`: how long a daemon needs after a crash
//! with a journal full of pending data.
//!
//! Each side starts its daemon (`-w` far beyond the run), receives
//! `--values-per-file` values for each of `--files` small files (so every
//! file has pending data in the journal), waits a moment, and is killed
//! with SIGKILL. The clock starts when the daemon is started again (same
//! command line, same journal): "accepting" is when the first PING is
//! answered; then FLUSHALL is sent and "drained" is when STATS shows no
//! queued file and no pending value (rrdcached replays its journal at
//! start too). Afterwards the files are checked: how many hold every value
//! sent (ours acknowledges only journaled values under `--sync always`;
//! rrdcached may lose the tail it had not written out yet).
//!
//! Deliberately absent: partial or torn journals (the crash harness tests
//! those; here the point is the time).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use clap::Args;

use crate::daemon::{journal_bytes, wait_drained, DaemonProc};
use crate::dcommon::{self, col, Check, DaemonCommon, DaemonResults, DaemonSideResult};
use crate::schema::Schema;
use crate::BenchError;

/// A one-page file: one DS, one 10-row archive.
pub const SMALL_SCHEMA: &str = "-s 300 DS:v:GAUGE:600:U:U RRA:AVERAGE:0.5:1:10";

#[derive(Debug, Args, Clone)]
pub struct RestartArgs {
    /// Files with pending data in the journal.
    #[arg(long, default_value_t = 100_000)]
    pub files: u64,
    /// Values journaled per file before the kill.
    #[arg(long, default_value_t = 3)]
    pub values_per_file: u64,
    /// A schema name or create line (default: a one-page file).
    #[arg(long, default_value = SMALL_SCHEMA)]
    pub schema: String,
    #[command(flatten)]
    pub common: DaemonCommon,
}

fn journal_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|rd| rd.flatten().count()).unwrap_or(0)
}

pub fn run(a: &RestartArgs, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    let c = &a.common;
    let schema = Schema::parse(&a.schema)?;
    let kinds = dcommon::sides(c, &["always"])?;
    let ws = dcommon::Workspace::new(c, args)?;
    let file_bytes = dcommon::make_master(&schema, a.files, c.start_time, &ws.master())?;
    let mut dirs = Vec::new();
    for k in &kinds {
        let d = dcommon::side_dirs(&ws.base, k);
        dcommon::copy_files(&ws.master(), &d.files, a.files, &k.label())?;
        dirs.push(d);
    }
    crate::driver::syncfs(&ws.base)?;
    let w = 1_000_000;
    let last = c.start_time + (a.values_per_file * schema.step_secs) as i64;
    let (mut sides, mut checks) = (Vec::new(), Vec::new());
    for (k, (kind, d)) in kinds.iter().zip(&dirs).enumerate() {
        let cg = dcommon::cgroup_for(c, k)?;
        let cg_path = cg.as_ref().map(|g| g.path.as_path());
        let spec =
            dcommon::spec_for(kind, c, exe, &d.run, w, (a.files * a.values_per_file).max(10_000_000) * 2);
        let plan = dcommon::plan_updates(
            &schema,
            &d.files,
            a.files,
            1..=a.values_per_file,
            c.start_time,
            c.batching(1),
        );
        let values = plan.values;
        let (mut daemon, _) = DaemonProc::start(&spec, cg_path)?;
        let sent = crate::with_daemon!(daemon, dcommon::send_plan(&spec.socket(), plan));
        // A moment for a daemon that buffers its journal (rrdcached) to
        // write it out, as a real crash rarely follows the last update at once.
        std::thread::sleep(Duration::from_secs(1));
        let jbytes = journal_bytes(&spec.journal_dir());
        let jfiles = journal_files(&spec.journal_dir());
        daemon.kill9();
        crate::driver::syncfs(&d.run)?;
        let t = Instant::now();
        let (mut daemon, accept) = DaemonProc::start(&spec, cg_path)?;
        let mut conn = crate::with_daemon!(daemon, daemon.connect());
        let fl = crate::with_daemon!(daemon, conn.request("FLUSHALL"));
        if fl.status < 0 {
            return Err(BenchError::Worker(format!("FLUSHALL failed on {}: {}", kind.label(), fl.message)));
        }
        let stats = crate::with_daemon!(
            daemon,
            wait_drained(&mut conn, 0, Duration::from_millis(10), Duration::from_secs(7200))
        );
        let drained = t.elapsed().as_secs_f64();
        let one_segment = if kind.is_ours() {
            let ok = dcommon::wait_until(Duration::from_secs(60), || journal_files(&spec.journal_dir()) <= 1);
            if ok {
                t.elapsed().as_secs_f64()
            } else {
                f64::NAN
            }
        } else {
            f64::NAN
        };
        let mut r = DaemonSideResult {
            label: kind.label(),
            kind: Some(kind.clone()),
            command_line: spec.command_line().join(" "),
            ..Default::default()
        };
        r.set("files", a.files as f64);
        r.set("values_sent", values as f64);
        r.set("send_errors", sent.errors as f64);
        r.set("journal_bytes_at_kill", jbytes as f64);
        r.set("journal_files_at_kill", jfiles as f64);
        r.set("accept_secs", accept.as_secs_f64());
        r.set("drained_secs", drained);
        r.set("one_segment_secs", one_segment);
        r.set("updates_written_after_restart", stats.get("UpdatesWritten").copied().unwrap_or(0) as f64);
        daemon.stop(Duration::from_secs(120))?;
        r.memory = cg.as_ref().map(|g| g.usage());
        let (ok, first) = dcommon::count_last_update(&d.files, a.files, last);
        r.set("files_complete", ok as f64);
        checks.push(Check {
            name: format!("{}: every update acknowledged before the kill is in the files", r.label),
            // Only ours promises this; rrdcached's loss is reported, not failed.
            ok: !kind.is_ours() || (sent.errors == 0 && ok == a.files),
            detail: format!(
                "{ok} of {} files hold all {} values (last update {last}){}",
                a.files,
                a.values_per_file,
                first.map(|f| format!("; first other: {f}")).unwrap_or_default()
            ),
        });
        eprintln!(
            "{}: accepting after {:.3} s, drained after {drained:.3} s, {ok} of {} files complete",
            r.label,
            accept.as_secs_f64(),
            a.files
        );
        sides.push(r);
    }
    let mut ratios = std::collections::BTreeMap::new();
    if let Some(x) = dcommon::ratio(&sides, "rrdscale (--sync always)", "accept_secs", false) {
        ratios.insert("time to accept connections (rrdcached's / ours)".to_string(), x);
    }
    if let Some(x) = dcommon::ratio(&sides, "rrdscale (--sync always)", "drained_secs", false) {
        ratios.insert("time to drain (rrdcached's / ours)".to_string(), x);
    }
    let params = [
        ("values per file", a.values_per_file.to_string()),
        ("write threads (-t)", c.threads.to_string()),
        ("clients", c.clients().to_string()),
    ];
    let results = DaemonResults {
        columns: vec![
            col("values_sent", "values journaled", 0),
            col("journal_bytes_at_kill", "journal bytes at kill", 0),
            col("accept_secs", "start → PING answered, s", 3),
            col("drained_secs", "start → drained, s", 3),
            col("one_segment_secs", "start → one journal segment, s", 3),
            col("files_complete", "files holding every value", 0),
        ],
        sides,
        ratios,
        checks,
        notes: vec![
            "Times run from the second start (after kill -9) of the same command line. Drained: FLUSHALL \
             sent as soon as PING is answered, then STATS polled every 10 ms until QueueLength and \
             PendingValues (ours) are 0."
                .into(),
        ],
        ..ws.results("daemon-restart", c.memory_budget, schema, file_bytes, a.files, &params)
    };
    dcommon::finish(results, &ws, c.json.as_deref(), out)
}
