//! `rrdscale first [--rraindex N] [--daemon addr] file`: the time of the
//! oldest row of archive N (default 0), as `rrdtool first` 1.7.2 prints it.
//! Like rrdtool, a failure prints `-1` on standard output before the error.
//!
//! The oldest row's time needs only the header: the newest row ends at
//! last_update rounded down to the archive's step, and the ring holds
//! row_cnt rows.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`) the answer is the daemon's
//! FIRST (a negative index is still refused here first). An unreachable
//! daemon means the file is read directly and the command then fails with
//! the connection error, as rrdtool does.

use std::io::Write;

use anyhow::{anyhow, bail, Result};
use rrd_client::Daemon;
use rrd_format::Header;

use super::fetch::open_rrd;
use super::last::split;
use crate::opts;

/// The stamp of the oldest row of RRA `rra_index`, as `rrd_first_r`
/// computes it (None when the index is out of range).
pub(crate) fn first_row_time(header: &Header, rra_index: usize) -> Option<i64> {
    let rra = header.rra().get(rra_index)?;
    let step = (rra.pdp_count as i128) * (header.pdp_step() as i128);
    let last_up = header.live().last_up as i128;
    let t = last_up - last_up % step - (rra.row_count as i128 - 1) * step;
    i64::try_from(t).ok()
}

/// The options: the archive index and the file.
fn parse(args: &[String]) -> Result<(i32, String, Option<String>)> {
    let parsed = opts::parse(args, &[opts::value(None, "rraindex"), opts::value(Some('d'), "daemon")])?;
    let mut rra_index: i32 = 0;
    for (name, value) in &parsed.opts {
        if *name == "rraindex" {
            // strtol into an int, as rrdtool does (so "abc" is 0).
            rra_index = rrd_lang::numparse::strtol(value.as_deref().unwrap_or(""), 0).value as i32;
            if rra_index < 0 {
                bail!("invalid rraindex number");
            }
        }
    }
    let Some(file) = parsed.operands.first() else {
        bail!("usage rrdtool first [--rraindex number] [--daemon|-d <addr>] file.rrd");
    };
    Ok((rra_index, file.clone(), parsed.value("daemon").map(str::to_string)))
}

/// What rrdtool prints, and the error it reports after printing it.
pub fn first(args: &[String]) -> (i64, Option<anyhow::Error>) {
    let (rra_index, file, daemon_option) = match parse(args) {
        Ok(p) => p,
        Err(e) => return (-1, Some(e)),
    };
    let local = || -> Result<i64> {
        let rrd = open_rrd(&file)?;
        first_row_time(&rrd.header, rra_index as usize).ok_or_else(|| anyhow!("invalid rraindex number"))
    };
    match rrd_client::daemon(daemon_option.as_deref()) {
        Daemon::Absent => split(local()),
        Daemon::Unreachable(e) => match local() {
            Ok(t) => (t, Some(e.into())),
            Err(le) => (-1, Some(le)),
        },
        Daemon::Connected(mut session) => match session.first(&file, rra_index) {
            Ok(t) => (t, None),
            Err(e) if e.message().is_some() => (-1, Some(e.into())),
            Err(_) => (-1, None),
        },
    }
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let (value, error) = first(args);
    writeln!(out, "{value}")?;
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
