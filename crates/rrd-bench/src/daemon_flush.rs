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

use crate::daemon::{wait_drained, DaemonProc};
use crate::dcommon::{self, col, Check, DaemonCommon, DaemonResults, DaemonSideResult};
use crate::diskprobe;
use crate::procstat::Meter;
use crate::report::PAGE_BYTES;
use crate::schema::Schema;
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
    #[arg(long, value_parser = crate::cli::parse_size, default_value = "1G")]
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

pub fn run(a: &FlushArgs, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    let c = &a.common;
    let schema = Schema::parse(&a.schema)?;
    let kinds = dcommon::sides(c, &["always"])?;
    let ws = dcommon::Workspace::new(c, args)?;
    let file_bytes =
        dcommon::make_master_from(&schema, a.files, c.start_time, &ws.master(), a.master_file.as_deref())?;
    let mut dirs = Vec::new();
    for k in &kinds {
        let d = dcommon::side_dirs(&ws.base, k);
        dcommon::copy_files(&ws.master(), &d.files, a.files, &k.label())?;
        dirs.push(d);
    }
    crate::driver::syncfs(&ws.base)?;
    let disk = if a.probe_disk {
        eprintln!("probing the disk ({} s per pattern)", a.probe_secs);
        Some(diskprobe::probe(&ws.base, a.probe_bytes, a.probe_secs)?)
    } else {
        None
    };
    let w = 1_000_000;
    let last = c.start_time + (a.pending * schema.step_secs) as i64;
    let (mut sides, mut checks) = (Vec::new(), Vec::new());
    for (k, (kind, d)) in kinds.iter().zip(&dirs).enumerate() {
        let cg = dcommon::cgroup_for(c, k)?;
        let spec = dcommon::spec_for(kind, c, exe, &d.run, w, (a.files * a.pending).max(10_000_000) * 2);
        let plan =
            dcommon::plan_updates(&schema, &d.files, a.files, 1..=a.pending, c.start_time, c.batching(1));
        let values = plan.values;
        let (mut daemon, _) = DaemonProc::start(&spec, cg.as_ref().map(|g| g.path.as_path()))?;
        let mut conn = crate::with_daemon!(daemon, daemon.connect());
        let sent = crate::with_daemon!(daemon, dcommon::send_plan(&spec.socket(), plan));
        crate::worker::evict_files(&d.files, a.files)?;
        let before = crate::with_daemon!(daemon, conn.stats());
        let written0 = before.get("UpdatesWritten").copied().unwrap_or(0);
        let meter =
            Meter::start(daemon.pid).map_err(|e| BenchError::io("reading the daemon's counters", e))?;
        let t = Instant::now();
        let fl = crate::with_daemon!(daemon, conn.request("FLUSHALL"));
        if fl.status < 0 {
            return Err(BenchError::Worker(format!("FLUSHALL failed on {}: {}", kind.label(), fl.message)));
        }
        let after = crate::with_daemon!(
            daemon,
            wait_drained(&mut conn, written0 + a.files, Duration::from_millis(10), Duration::from_secs(7200),)
        );
        let secs = t.elapsed().as_secs_f64();
        let counters = meter.stop().map_err(|e| BenchError::io("reading the daemon's counters", e))?;
        let ts = Instant::now();
        crate::driver::syncfs(&d.files)?;
        let sync_secs = ts.elapsed().as_secs_f64();
        let n = a.files as f64;
        let mut r = DaemonSideResult {
            label: kind.label(),
            kind: Some(kind.clone()),
            command_line: spec.command_line().join(" "),
            ..Default::default()
        };
        r.set("files", n);
        r.set("values", values as f64);
        r.set("preload_errors", sent.errors as f64);
        r.set("flush_secs", secs);
        r.set("files_per_s", n / secs);
        r.set("values_per_s", values as f64 / secs);
        r.set("pages_read_per_file", counters.read_bytes as f64 / PAGE_BYTES / n);
        r.set("pages_written_per_file", counters.write_bytes as f64 / PAGE_BYTES / n);
        r.set("cpu_us_per_file", (counters.cpu_user_secs + counters.cpu_sys_secs) * 1e6 / n);
        r.set("major_faults", counters.majflt as f64);
        r.set("sync_secs", sync_secs);
        r.set("files_per_s_incl_sync", n / (secs + sync_secs));
        let written = after.get("UpdatesWritten").copied().unwrap_or(0).saturating_sub(written0);
        r.set("updates_written", written as f64);
        r.set(
            "data_sets_written",
            after
                .get("DataSetsWritten")
                .copied()
                .unwrap_or(0)
                .saturating_sub(before.get("DataSetsWritten").copied().unwrap_or(0)) as f64,
        );
        if let Some(p) = &disk {
            let (pr, pw) = (r.get("pages_read_per_file"), r.get("pages_written_per_file"));
            let b = bound(pr, pw, p.read_iops_qd64, p.write_iops_qd64);
            r.set("disk_bound_files_per_s", b);
            r.set("pct_of_bound", 100.0 * r.get("files_per_s") / b);
            r.set("disk_bound_qd1_files_per_s", bound(pr, pw, p.read_iops_qd1, p.write_iops_qd1));
        }
        checks.push(Check {
            name: format!("{}: every pending value accepted and written", r.label),
            ok: sent.errors == 0 && written == a.files,
            detail: format!(
                "{values} values sent with {} errors{}; UpdatesWritten +{written} for {} files",
                sent.errors,
                sent.first_error.map(|e| format!(" (first: {e})")).unwrap_or_default(),
                a.files
            ),
        });
        let (ok, first) = dcommon::count_last_update(&d.files, a.files, last);
        checks.push(Check {
            name: format!("{}: files current after the flush", r.label),
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
            "{}: {} files in {secs:.3} s = {} files/s, {:.2} pages read and {:.2} written per file",
            r.label,
            a.files,
            crate::report::thousands(r.get("files_per_s")),
            r.get("pages_read_per_file"),
            r.get("pages_written_per_file")
        );
        sides.push(r);
    }
    if dirs.len() > 1 && c.verify > 0 {
        let files: Vec<_> = dirs.iter().map(|d| d.files.clone()).collect();
        checks.push(dcommon::verify_sides(&files, a.files, c.verify));
    }
    let mut ratios = std::collections::BTreeMap::new();
    if let Some(x) = dcommon::ratio(&sides, "rrdscale (--sync always)", "files_per_s", true) {
        ratios.insert("files/s, FLUSHALL until written".to_string(), x);
    }
    if let Some(x) = dcommon::ratio(&sides, "rrdscale (--sync always)", "files_per_s_incl_sync", true) {
        ratios.insert("files/s, until written and synced (syncfs)".to_string(), x);
    }
    let mut tables = Vec::new();
    if let Some(p) = &disk {
        tables.push((
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
    let params = [
        ("pending values per file", a.pending.to_string()),
        ("write threads (-t)", c.threads.to_string()),
        ("clients (preload)", c.clients().to_string()),
    ];
    let results = DaemonResults {
        columns: vec![
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
        ],
        sides,
        ratios,
        checks,
        notes: vec![
            "Every file was evicted (fdatasync + DONTNEED) after the pending values were sent and before \
             FLUSHALL. Pages written are dirtied pages (write_bytes of /proc/PID/io); the disk bound is \
             1 / (pages read / read IOPS + pages written / write IOPS) at queue depth 64."
                .into(),
        ],
        tables,
        ..ws.results("daemon-flush", c.memory_budget, schema, file_bytes, a.files, &params)
    };
    dcommon::finish(results, &ws, c.json.as_deref(), out)
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
