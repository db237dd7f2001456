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
//! that second (a POST landed in it) is left alone. Only `rrdscale web`
//! starts the ticker ([`spawn`]); the in-process test servers do not, so
//! their files hold exactly what they posted.
//! Deliberately not here: GF's separate tick offsets and its
//! `prev_graphs` tables (the last difference lives in memory).

use std::sync::Arc;
use std::time::Duration;

use crate::rrdfile::{self, Resolution};
use crate::{App, WebError};

/// Writes every graph's number at `now` into the files due at `now`
/// (the 1-minute file always, the 5-minute file on 5-minute marks).
/// Returns how many values were written.
pub fn tick(app: &App, now: i64) -> Result<usize, WebError> {
    let mut due = vec![Resolution::OneMinute];
    if now % 300 < 60 {
        due.push(Resolution::FiveMinute);
    }
    let graphs = app.store().all()?;
    let mut written = 0;
    for g in graphs {
        let sub = match g.mode.as_str() {
            "count" | "derive" => Some(0),
            _ => app.last_sub(g.id),
        };
        let arg = rrdfile::update_arg(now, g.number, sub);
        let _files = app.write_files();
        for &r in &due {
            let path = rrdfile::path(&app.rrd_dir, g.id, r);
            // A graph deleted since the listing, or made before its
            // 1-minute file existed and never posted since: its next POST
            // creates the files.
            if !path.exists() {
                continue;
            }
            app.writer.update(&path, &arg).inspect_err(|_| app.metrics.write_error())?;
            written += 1;
        }
    }
    Ok(written)
}

/// Runs [`tick`] a second after every minute mark, forever.
pub fn spawn(app: Arc<App>) {
    tokio::spawn(async move {
        loop {
            let now = crate::reply::now_secs();
            let next = (now / 60 + 1) * 60 + 1;
            tokio::time::sleep(Duration::from_secs((next - now).max(1) as u64)).await;
            let a = app.clone();
            let at = next - 1;
            match tokio::task::spawn_blocking(move || tick(&a, at)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => eprintln!("rrdscale web: the minute tick failed: {e}"),
                Err(e) => eprintln!("rrdscale web: the minute tick panicked: {e}"),
            }
        }
    });
}
