//! `rrdscale bench daemon-flush`: how fast a daemon writes pending values
//! to cold files.
//!
//! Each side starts its daemon (`-w` far beyond the run), receives
//! `--pending` values for every file through BATCHes (untimed), then every
//! file is evicted from the page cache (fdatasync + `POSIX_FADV_DONTNEED`),
//! and the clock runs from `FLUSHALL` until STATS shows every file written
//! (`UpdatesWritten` grew by the number of files, nothing queued or
//! pending). `/proc/PID/io` of the daemon around that interval gives pages
//! read (`read_bytes`) and written (`write_bytes`, counted when a page is
//! dirtied) per file. A `syncfs` right after is timed too: rrdcached never
//! syncs the files it writes, so "written" for it means "in the page
//! cache".
//!
//! The disk's bound: a built-in probe ([`crate::diskprobe`]) measures random
//! 4 KiB read and write IOPS at queue depth 1 and 64; a flush that reads
//! `r` and writes `w` pages per file can do at most
//! `1 / (r / read IOPS + w / write IOPS)` files/s.
//!
//! Deliberately absent: any judgement of the figures.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use clap::Args;

use crate::daemon::common::{self, col, DaemonCommon, DaemonSideResult, WRITE_INTERVAL};
use crate::daemon::wait_drained;
use crate::daemon::workload::{self, DaemonWorkload, Report, Run, Side};
use crate::diskprobe;
use crate::procstat::Meter;
use crate::report::PAGE_BYTES;
use crate::BenchError;

#[derive(Debug, Args, Clone)]
pub struct FlushArgs {
    /// Files with pending values.
    #[arg(long, default_value_t = 20_000)]
    pub files: u64,
    /// Pending values per file (one step apart).
    #[arg(long, default_value_t = 12)]
    pub pending: u64,
    /// perftest, mrtg, growthforecast, or a create line.
    #[arg(long, default_value = "perftest")]
    pub schema: String,
    /// Measure the disk's random 4 KiB IOPS (built-in probe) for the bound.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub probe_disk: bool,
    /// Size of the probe's file.
    #[arg(long, value_parser = crate::host::parse_size, default_value = "1G")]
    pub probe_bytes: u64,
    /// Seconds per probe pattern.
    #[arg(long, default_value_t = 3.0)]
    pub probe_secs: f64,
    /// Start every file as a copy of this one (an earlier run's
    /// `master/0000/0000000.rrd`, same schema and --start-time) instead of a
    /// fresh create: its random start rows decide how many pages a flush
    /// touches, so comparing two runs needs the same file.
    #[arg(long)]
    pub master_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub common: DaemonCommon,
}

/// Files/s a flush reading `r` and writing `w` pages per file can reach.
pub fn bound(r: f64, w: f64, read_iops: f64, write_iops: f64) -> f64 {
    let t = r / read_iops + w / write_iops;
    if t > 0.0 {
        1.0 / t
    } else {
        f64::INFINITY
    }
}

/// `daemon-flush` as a [`DaemonWorkload`]; the disk probe is made once,
/// before the first side.
pub struct Flush<'a> {
    pub a: &'a FlushArgs,
    disk: Option<diskprobe::DiskProbe>,
}

pub fn run(a: &FlushArgs, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    workload::run(&mut Flush { a, disk: None }, args, exe, out)
}

impl DaemonWorkload for Flush<'_> {
    type SideOut = ();

    fn common(&self) -> &DaemonCommon {
        &self.a.common
    }

    fn name(&self) -> String {
        "daemon-flush".into()
    }

    fn schema(&self) -> &str {
        &self.a.schema
    }

    fn files(&self) -> u64 {
        self.a.files
    }

    fn master_file(&self) -> Option<&Path> {
        self.a.master_file.as_deref()
    }

    fn before_sides(&mut self, run: &Run) -> Result<(), BenchError> {
        if self.a.probe_disk {
            eprintln!("probing the disk ({} s per pattern)", self.a.probe_secs);
            self.disk = Some(diskprobe::probe(&run.ws.base, self.a.probe_bytes, self.a.probe_secs)?);
        }
        Ok(())
    }

    fn side(&self, run: &Run, side: &mut Side) -> Result<(), BenchError> {
        let (a, c) = (self.a, &run.common);
        let files = side.dirs.files.clone();
        let last = c.start_time + (a.pending * run.schema.step_secs) as i64;
        let plan =
            common::plan_updates(&run.schema, &files, a.files, 1..=a.pending, c.start_time, c.batching(1));
        let values = plan.values;
        let max_pending = (a.files * a.pending).max(10_000_000) * 2;
        side.run_daemon(run, WRITE_INTERVAL, max_pending, |daemon, side| {
            let mut conn = daemon.connect()?;
            let sent = common::send_plan(&daemon.spec.socket(), plan)?;
            crate::worker::evict_files(&files, a.files)?;
            let before = conn.stats()?;
            let written0 = before.get("UpdatesWritten").copied().unwrap_or(0);
            let meter =
                Meter::start(daemon.pid).map_err(|e| BenchError::io("reading the daemon's counters", e))?;
            let t = Instant::now();
            let fl = conn.request("FLUSHALL")?;
            if fl.status < 0 {
                return Err(BenchError::Worker(format!(
                    "FLUSHALL failed on {}: {}",
                    side.label(),
                    fl.message
                )));
            }
            let after = wait_drained(
                &mut conn,
                written0 + a.files,
                Duration::from_millis(10),
                Duration::from_secs(7200),
            )?;
            let secs = t.elapsed().as_secs_f64();
            let counters = meter.stop().map_err(|e| BenchError::io("reading the daemon's counters", e))?;
            let ts = Instant::now();
            crate::host::syncfs(&files)?;
            let sync_secs = ts.elapsed().as_secs_f64();
            let n = a.files as f64;
            let delta = |key: &str| {
                after.get(key).copied().unwrap_or(0).saturating_sub(before.get(key).copied().unwrap_or(0))
            };
            side.set("files", n);
            side.set("values", values as f64);
            side.set("preload_errors", sent.errors as f64);
            side.set("flush_secs", secs);
            side.set("files_per_s", n / secs);
            side.set("values_per_s", values as f64 / secs);
            side.set("pages_read_per_file", counters.read_bytes as f64 / PAGE_BYTES / n);
            side.set("pages_written_per_file", counters.write_bytes as f64 / PAGE_BYTES / n);
            side.set("cpu_us_per_file", (counters.cpu_user_secs + counters.cpu_sys_secs) * 1e6 / n);
            side.set("major_faults", counters.majflt as f64);
            side.set("sync_secs", sync_secs);
            side.set("files_per_s_incl_sync", n / (secs + sync_secs));
            let written = delta("UpdatesWritten");
            side.set("updates_written", written as f64);
            side.set("data_sets_written", delta("DataSetsWritten") as f64);
            if let Some(p) = &self.disk {
                let (pr, pw) = (side.get("pages_read_per_file"), side.get("pages_written_per_file"));
                let b = bound(pr, pw, p.read_iops_qd64, p.write_iops_qd64);
                side.set("disk_bound_files_per_s", b);
                side.set("pct_of_bound", 100.0 * side.get("files_per_s") / b);
                side.set("disk_bound_qd1_files_per_s", bound(pr, pw, p.read_iops_qd1, p.write_iops_qd1));
            }
            side.check(
                "every pending value accepted and written",
                sent.errors == 0 && written == a.files,
                format!(
                    "{values} values sent with {} errors{}; UpdatesWritten +{written} for {} files",
                    sent.errors,
                    sent.first_error.map(|e| format!(" (first: {e})")).unwrap_or_default(),
                    a.files
                ),
            );
            let (ok, first) = common::count_last_update(&files, a.files, last);
            side.check(
                "files current after the flush",
                ok == a.files,
                format!(
                    "{ok} of {} files last updated at {last}{}",
                    a.files,
                    first.map(|f| format!("; {f}")).unwrap_or_default()
                ),
            );
            Ok(())
        })?;
        eprintln!(
            "{}: {} files in {:.3} s = {} files/s, {:.2} pages read and {:.2} written per file",
            side.label(),
            a.files,
            side.get("flush_secs"),
            crate::report::thousands(side.get("files_per_s")),
            side.get("pages_read_per_file"),
            side.get("pages_written_per_file")
        );
        Ok(())
    }

    fn report(&self, run: &Run, sides: &[DaemonSideResult], _: Vec<()>) -> Report {
        let (a, c) = (self.a, &run.common);
        let params = vec![
            ("pending values per file", a.pending.to_string()),
            ("write threads (-t)", c.threads.to_string()),
            ("clients (preload)", c.clients().to_string()),
        ];
        let columns = vec![
            col("flush_secs", "FLUSHALL → written, s", 3),
            col("files_per_s", "files/s", 0),
            col("values_per_s", "values/s", 0),
            col("pages_read_per_file", "pages read/file", 2),
            col("pages_written_per_file", "pages written/file", 2),
            col("cpu_us_per_file", "daemon CPU µs/file", 0),
            col("sync_secs", "syncfs after, s", 3),
            col("files_per_s_incl_sync", "files/s incl. sync", 0),
            col("disk_bound_files_per_s", "disk bound files/s (qd 64)", 0),
            col("pct_of_bound", "% of bound", 0),
        ];
        let mut r = Report::new(run, columns, params);
        if run.dirs.len() > 1 && c.record.verify > 0 {
            r.checks.push(common::verify_sides(&run.files_dirs(), a.files, c.record.verify));
        }
        r.ratios = workload::ratios(
            sides,
            "rrdscale (--sync always)",
            &[
                ("files_per_s", "files/s, FLUSHALL until written", true),
                ("files_per_s_incl_sync", "files/s, until written and synced (syncfs)", true),
            ],
        );
        if let Some(p) = &self.disk {
            r.tables.push((
                format!(
                    "Disk (built-in probe, O_DIRECT random 4 KiB on a {} MiB file, {} s each)",
                    p.file_bytes >> 20,
                    p.secs_each
                ),
                vec!["pattern".to_string(), "queue depth 1".into(), "queue depth 64".into()],
                vec![
                    vec![
                        "random read IOPS".to_string(),
                        crate::report::thousands(p.read_iops_qd1),
                        crate::report::thousands(p.read_iops_qd64),
                    ],
                    vec![
                        "random write IOPS".to_string(),
                        crate::report::thousands(p.write_iops_qd1),
                        crate::report::thousands(p.write_iops_qd64),
                    ],
                ],
            ));
        }
        r.notes.push(
            "Every file was evicted (fdatasync + DONTNEED) after the pending values were sent and before \
             FLUSHALL. Pages written are dirtied pages (write_bytes of /proc/PID/io); the disk bound is \
             1 / (pages read / read IOPS + pages written / write IOPS) at queue depth 64."
                .into(),
        );
        r
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bound_combines_reads_and_writes() {
        // 2 reads at 100k/s and 4 writes at 40k/s: 20 + 100 µs per file.
        let b = super::bound(2.0, 4.0, 100_000.0, 40_000.0);
        assert!((b - 1e6 / 120.0).abs() < 1e-6, "{b}");
        assert!(super::bound(0.0, 0.0, 1.0, 1.0).is_infinite());
    }
}
