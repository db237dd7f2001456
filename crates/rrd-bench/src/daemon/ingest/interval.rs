//! `--pattern batch-per-interval`: one client sends, once per interval, a
//! `BATCH` with one `UPDATE <file> <t>:<v>:<v>` for every file (the same
//! interval timestamp for all), then `.`, and reads the replies; as
//! Cacti-style pollers and relays do. Intervals are one step apart.
//!
//! Each interval is timed on its own, from sending `BATCH` until the
//! batch's reply is read; its lines are built before (untimed, in one
//! reused buffer). The first interval is every file's first UPDATE since
//! the daemon started (ours reads and keeps each file's header then;
//! rrdcached checks each file), so it is reported apart from the later
//! ones (steady state: their median and mean).

use std::path::Path;
use std::time::Instant;

use super::{measure_side, ratios, IngestArgs, PerFile, Sent};
use crate::daemon::common::{col, DaemonSideResult};
use crate::daemon::workload::{Report, Run, Side};
use crate::daemon::Conn;
use crate::schema::Schema;
use crate::workload::file_path;
use crate::BenchError;

/// What the intervals took.
pub struct Outcome {
    /// Seconds of each interval, in order.
    pub secs: Vec<f64>,
    pub errors: u64,
    pub first_error: Option<String>,
}

/// Sends `intervals` BATCHes of one UPDATE per file over one connection.
pub fn send(
    socket: &Path,
    paths: &[Vec<u8>],
    schema: &Schema,
    start: i64,
    intervals: u64,
) -> Result<Outcome, BenchError> {
    let mut conn = Conn::connect(socket)?;
    let mut body = Vec::with_capacity(paths.iter().map(|p| p.len() + 64).sum());
    let mut o = Outcome { secs: Vec::new(), errors: 0, first_error: None };
    for k in 1..=intervals {
        let t = start + (k * schema.step_secs) as i64;
        body.clear();
        for (f, path) in paths.iter().enumerate() {
            body.extend_from_slice(b"UPDATE ");
            body.extend_from_slice(path);
            body.push(b' ');
            schema.push_update_arg(&mut body, f as u64, t);
            body.push(b'\n');
        }
        let clock = Instant::now();
        let errs = conn.batch(&body)?;
        o.secs.push(clock.elapsed().as_secs_f64());
        o.errors += errs.len() as u64;
        if o.first_error.is_none() {
            o.first_error = errs.into_iter().next().map(|e| format!("interval {k}: {e}"));
        }
    }
    let _ = conn.request("QUIT");
    Ok(o)
}

/// The median of `v` (the mean of the middle two for an even length).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

pub(super) fn side(a: &IngestArgs, run: &Run, side: &mut Side) -> Result<PerFile, BenchError> {
    let c = &run.common;
    let (files, intervals) = (run.files, a.intervals);
    let paths: Vec<Vec<u8>> =
        (0..files).map(|f| file_path(&side.dirs.files, f).display().to_string().into_bytes()).collect();
    measure_side(a, run, side, (files * intervals).max(10_000_000) * 2, paths, |paths, spec, r| {
        let o = send(&spec.socket(), &paths, &run.schema, c.start_time, intervals)?;
        let n = files as f64;
        for (k, secs) in o.secs.iter().enumerate() {
            r.set(&format!("interval_{}_secs", k + 1), *secs);
        }
        let later = &o.secs[1..];
        r.set("first_secs", o.secs[0]);
        r.set("first_values_per_s", n / o.secs[0]);
        let median = median(later);
        let mean = if later.is_empty() { f64::NAN } else { later.iter().sum::<f64>() / later.len() as f64 };
        r.set("steady_median_secs", median);
        r.set("steady_mean_secs", mean);
        r.set("steady_values_per_s", n / median);
        eprintln!(
            "{}: first interval {:.3} s ({} values/s), later intervals median {:.3} s ({} values/s)",
            r.label(),
            o.secs[0],
            crate::report::thousands(n / o.secs[0]),
            median,
            crate::report::thousands(n / median)
        );
        Ok(Sent {
            lines: files * intervals,
            values: files * intervals,
            errors: o.errors,
            first_error: o.first_error,
            secs: o.secs.iter().sum(),
            per_file: Box::new(move |_| intervals),
        })
    })
}

pub(super) fn report(a: &IngestArgs, run: &Run, sides: &[DaemonSideResult]) -> Report {
    let (files, intervals) = (run.files, a.intervals);
    let mut header = vec!["side".to_string()];
    header.extend((1..=intervals).map(|k| format!("{k}")));
    let rows = sides
        .iter()
        .map(|r| {
            std::iter::once(r.label.clone())
                .chain((1..=intervals).map(|k| format!("{:.3}", r.get(&format!("interval_{k}_secs")))))
                .collect()
        })
        .collect();
    let params = vec![
        ("pattern", "batch-per-interval".to_string()),
        ("clients", "1".to_string()),
        ("intervals", intervals.to_string()),
        ("UPDATE lines per BATCH", files.to_string()),
    ];
    let columns = vec![
        col("first_secs", "first interval s", 3),
        col("first_values_per_s", "first values/s", 0),
        col("steady_median_secs", "later intervals s (median)", 3),
        col("steady_mean_secs", "later s (mean)", 3),
        col("steady_values_per_s", "later values/s (median)", 0),
        col("cpu_us_per_value", "daemon CPU µs/value", 2),
        col("journal_syncs", "journal syncs", 0),
        col("errors", "errors", 0),
    ];
    let mut r = Report::new(run, columns, params);
    r.ratios = ratios(
        sides,
        &[
            ("first_values_per_s", "first interval values/s", true),
            ("steady_values_per_s", "later intervals values/s (median)", true),
        ],
    );
    r.notes.push(
        "One client sends, per interval, BATCH, one `UPDATE <file> <t>:<v>:<v>` for every file (the \
         interval's timestamp, one step later each interval), `.`, and reads the reply (as Cacti-style \
         pollers and relays do). Each interval is timed from BATCH sent until its reply is read; its \
         lines are built before. The first interval is every file's first UPDATE since the daemon \
         started; the later ones are the steady state (values/s from their median). Under --sync \
         always the batch's reply waits for the fdatasync of its records; rrdcached appends its \
         journal without syncing."
            .into(),
    );
    r.tables.push(("Seconds per interval".into(), header, rows));
    r
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(super::median(&[]).is_nan());
    }
}
