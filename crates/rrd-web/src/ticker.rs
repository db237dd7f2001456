//! GrowthForecast's worker: every minute, each graph's current number is
//! written again into its 1-minute file, and every 5 minutes into its
//! 5-minute file, stamped with the tick's time. A number posted once
//! therefore draws as a line until the next one, as in GrowthForecast,
//! instead of one lone point that RRD's heartbeat turns into a gap.
//!
//! The `sub` written by a tick follows GF's worker: `0` for `count` and
//! `derive` graphs (nothing was added since), the last posted difference
//! for `gauge` and `modified` ones (unknown after a restart).
//!
//! Invariants: a tick writes at most one value per file, through the same
//! [`crate::Writer`] and file lock as a POST; a file that already holds
//! that second or a later one (a POST landed in it, or one stamped a
//! little ahead within the allowed clock skew) is left alone, quietly:
//! the number it holds is newer than the tick's. A file that fails is
//! counted as a write error (every tick) and the tick goes on with the
//! other graphs; the log says so when the failures change, not every
//! minute. Only `rrdscale web`
//! starts the ticker ([`spawn`]); the in-process test servers do not, so
//! their files hold exactly what they posted.
//! Deliberately not here: GF's separate tick offsets and its
//! `prev_graphs` tables (the last difference lives in memory).

use std::sync::Arc;
use std::time::Duration;

use crate::rrdfile::{self, Outcome, Resolution, Update};
use crate::{App, WebError};

/// What one [`tick`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Values written.
    pub written: usize,
    /// Files left alone: they already hold this second or a later one.
    pub skipped: usize,
    /// Files whose write failed (each counted in `/metrics`).
    pub failed: usize,
    /// The first failure, for the log.
    pub first_error: Option<String>,
}

/// Writes every graph's number at `now` into the files due at `now`
/// (the 1-minute file always, the 5-minute file on 5-minute marks).
/// `Err` only when the graphs cannot be listed.
pub fn tick(app: &App, now: i64) -> Result<TickReport, WebError> {
    let mut due = vec![Resolution::OneMinute];
    if now % 300 < 60 {
        due.push(Resolution::FiveMinute);
    }
    let graphs = app.store().all()?;
    let mut report = TickReport::default();
    for g in graphs {
        let sub = match g.mode.as_str() {
            "count" | "derive" => Some(0),
            _ => app.last_sub(g.id),
        };
        let u = Update { time: now, number: g.number, sub };
        let _files = app.write_files();
        for &r in &due {
            let path = rrdfile::path(&app.rrd_dir, g.id, r);
            // A graph deleted since the listing, or made before its
            // 1-minute file existed and never posted since: its next POST
            // creates the files.
            if !path.exists() {
                continue;
            }
            match app.writer.update(&path, &u) {
                Ok(Outcome::Written) => report.written += 1,
                Ok(Outcome::SameSecond) | Err(WebError::TooEarly { .. }) => report.skipped += 1,
                Err(e) => {
                    app.metrics.write_error();
                    report.failed += 1;
                    report.first_error.get_or_insert_with(|| format!("graph {}: {e}", g.id));
                }
            }
        }
    }
    Ok(report)
}

/// What the log says after a tick, given what it said last time: a line
/// only when the failures change (a file that stays broken is reported
/// once, not every minute, and its recovery once).
fn log_line(previous: &mut Option<String>, now: Option<String>) -> Option<String> {
    if *previous == now {
        return None;
    }
    let line = match &now {
        Some(m) => format!("rrdscale web: the minute tick {m}"),
        None => "rrdscale web: the minute tick writes every file again".to_string(),
    };
    *previous = now;
    Some(line)
}

/// Runs [`tick`] a second after every minute mark, forever.
pub fn spawn(app: Arc<App>) {
    tokio::spawn(async move {
        let mut reported = None;
        loop {
            let now = crate::reply::now_secs();
            let next = (now / 60 + 1) * 60 + 1;
            tokio::time::sleep(Duration::from_secs((next - now).max(1) as u64)).await;
            let a = app.clone();
            let at = next - 1;
            let failure = match tokio::task::spawn_blocking(move || tick(&a, at)).await {
                Ok(Ok(r)) if r.failed > 0 => Some(format!(
                    "could not write {} file(s), first: {}",
                    r.failed,
                    r.first_error.unwrap_or_default()
                )),
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(format!("failed: {e}")),
                Err(e) => Some(format!("panicked: {e}")),
            };
            if let Some(line) = log_line(&mut reported, failure) {
                eprintln!("{line}");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lasting_failure_is_logged_once_and_its_end_once() {
        let mut seen = None;
        let broken = || Some("could not write 1 file(s), first: graph 3: bad".to_string());
        assert!(log_line(&mut seen, None).is_none());
        assert!(log_line(&mut seen, broken()).unwrap().contains("graph 3"));
        assert!(log_line(&mut seen, broken()).is_none());
        assert!(log_line(&mut seen, None).unwrap().contains("every file again"));
        assert!(log_line(&mut seen, None).is_none());
    }
}
