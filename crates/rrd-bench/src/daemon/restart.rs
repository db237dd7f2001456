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

use crate::daemon::common::{self, col, DaemonCommon, DaemonSideResult, WRITE_INTERVAL};
use crate::daemon::workload::{self, DaemonWorkload, Report, Run, Side};
use crate::daemon::{journal_bytes, wait_drained};
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

/// `daemon-restart` as a [`DaemonWorkload`].
pub struct Restart<'a>(pub &'a RestartArgs);

pub fn run(a: &RestartArgs, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    workload::run(&mut Restart(a), args, exe, out)
}

impl DaemonWorkload for Restart<'_> {
    type SideOut = ();

    fn common(&self) -> &DaemonCommon {
        &self.0.common
    }

    fn name(&self) -> String {
        "daemon-restart".into()
    }

    fn schema(&self) -> &str {
        &self.0.schema
    }

    fn files(&self) -> u64 {
        self.0.files
    }

    fn side(&self, run: &Run, side: &mut Side) -> Result<(), BenchError> {
        let (a, c) = (self.0, &run.common);
        let files = side.dirs.files.clone();
        let last = c.start_time + (a.values_per_file * run.schema.step_secs) as i64;
        let plan = common::plan_updates(
            &run.schema,
            &files,
            a.files,
            1..=a.values_per_file,
            c.start_time,
            c.batching(1),
        );
        let values = plan.values;
        let max_pending = (a.files * a.values_per_file).max(10_000_000) * 2;
        let sent = side.run_daemon(run, WRITE_INTERVAL, max_pending, |daemon, side| {
            let spec = daemon.spec.clone();
            let sent = common::send_plan(&spec.socket(), plan)?;
            // A moment for a daemon that buffers its journal (rrdcached) to
            // write it out, as a real crash rarely follows the last update at once.
            std::thread::sleep(Duration::from_secs(1));
            let jbytes = journal_bytes(&spec.journal_dir());
            let jfiles = journal_files(&spec.journal_dir());
            daemon.kill9();
            crate::host::syncfs(&spec.run_dir)?;
            let t = Instant::now();
            let accept = daemon.restart()?;
            let mut conn = daemon.connect()?;
            let fl = conn.request("FLUSHALL")?;
            if fl.status < 0 {
                return Err(BenchError::Worker(format!(
                    "FLUSHALL failed on {}: {}",
                    side.label(),
                    fl.message
                )));
            }
            let stats = wait_drained(&mut conn, 0, Duration::from_millis(10), Duration::from_secs(7200))?;
            let drained = t.elapsed().as_secs_f64();
            let one_segment = if side.kind.is_ours() {
                let ok =
                    common::wait_until(Duration::from_secs(60), || journal_files(&spec.journal_dir()) <= 1);
                if ok {
                    t.elapsed().as_secs_f64()
                } else {
                    f64::NAN
                }
            } else {
                f64::NAN
            };
            side.set("files", a.files as f64);
            side.set("values_sent", values as f64);
            side.set("send_errors", sent.errors as f64);
            side.set("journal_bytes_at_kill", jbytes as f64);
            side.set("journal_files_at_kill", jfiles as f64);
            side.set("accept_secs", accept.as_secs_f64());
            side.set("drained_secs", drained);
            side.set("one_segment_secs", one_segment);
            side.set(
                "updates_written_after_restart",
                stats.get("UpdatesWritten").copied().unwrap_or(0) as f64,
            );
            Ok(sent)
        })?;
        let (ok, first) = common::count_last_update(&files, a.files, last);
        side.set("files_complete", ok as f64);
        side.check(
            "every update acknowledged before the kill is in the files",
            // Only ours promises this; rrdcached's loss is reported, not failed.
            !side.kind.is_ours() || (sent.errors == 0 && ok == a.files),
            format!(
                "{ok} of {} files hold all {} values (last update {last}){}",
                a.files,
                a.values_per_file,
                first.map(|f| format!("; first other: {f}")).unwrap_or_default()
            ),
        );
        eprintln!(
            "{}: accepting after {:.3} s, drained after {:.3} s, {ok} of {} files complete",
            side.label(),
            side.get("accept_secs"),
            side.get("drained_secs"),
            a.files
        );
        Ok(())
    }

    fn report(&self, run: &Run, sides: &[DaemonSideResult], _: Vec<()>) -> Report {
        let (a, c) = (self.0, &run.common);
        let params = vec![
            ("values per file", a.values_per_file.to_string()),
            ("write threads (-t)", c.threads.to_string()),
            ("clients", c.clients().to_string()),
        ];
        let columns = vec![
            col("values_sent", "values journaled", 0),
            col("journal_bytes_at_kill", "journal bytes at kill", 0),
            col("accept_secs", "start → PING answered, s", 3),
            col("drained_secs", "start → drained, s", 3),
            col("one_segment_secs", "start → one journal segment, s", 3),
            col("files_complete", "files holding every value", 0),
        ];
        let mut r = Report::new(run, columns, params);
        r.ratios = workload::ratios(
            sides,
            "rrdscale (--sync always)",
            &[
                ("accept_secs", "time to accept connections (rrdcached's / ours)", false),
                ("drained_secs", "time to drain (rrdcached's / ours)", false),
            ],
        );
        r.notes.push(
            "Times run from the second start (after kill -9) of the same command line. Drained: FLUSHALL \
             sent as soon as PING is answered, then STATS polled every 10 ms until QueueLength and \
             PendingValues (ours) are 0."
                .into(),
        );
        r
    }
}
