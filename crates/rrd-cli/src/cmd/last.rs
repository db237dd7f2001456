//! `rrdscale last [--daemon addr] file`: the time of the last update, as
//! `rrdtool last` 1.7.2 prints it. Like rrdtool, a failure prints `-1` on
//! standard output before the error.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`) the time is the daemon's
//! LAST answer (rrdcached's: the newest value's time, which may still be
//! pending). An unreachable daemon means the file is read directly and the
//! command then fails with the connection error, as rrdtool does.

use std::io::Write;

use anyhow::{anyhow, Result};
use rrd_client::Daemon;

use super::fetch::open_rrd;
use crate::opts;

/// What rrdtool prints, and the error it reports after printing it.
pub fn last(args: &[String]) -> (i64, Option<anyhow::Error>) {
    let parsed = match opts::parse(args, &[opts::value(Some('d'), "daemon")]) {
        Ok(p) => p,
        Err(e) => return (-1, Some(e)),
    };
    let [file] = parsed.operands.as_slice() else {
        return (-1, Some(anyhow!("Usage: rrdtool last [--daemon|-d <addr>] <file>")));
    };
    let local = || -> Result<i64> { Ok(open_rrd(file)?.header.live().last_up) };
    match rrd_client::daemon(parsed.value("daemon")) {
        Daemon::Absent => split(local()),
        Daemon::Unreachable(e) => match local() {
            Ok(t) => (t, Some(e.into())),
            Err(le) => (-1, Some(le)),
        },
        Daemon::Connected(mut session) => match session.last(file) {
            Ok(t) => (t, None),
            Err(e) if e.message().is_some() => (-1, Some(e.into())),
            Err(_) => (-1, None),
        },
    }
}

/// A result as (value or -1, error).
pub(crate) fn split(r: Result<i64>) -> (i64, Option<anyhow::Error>) {
    match r {
        Ok(t) => (t, None),
        Err(e) => (-1, Some(e)),
    }
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    // rrdtool prints the function's return value whatever happened, and
    // the function returns -1 on error.
    let (value, error) = last(args);
    writeln!(out, "{value}")?;
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
