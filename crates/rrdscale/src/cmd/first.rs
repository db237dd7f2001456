//! `rrdscale first [--rraindex N] [--daemon addr] file`: the time of the
//! oldest row of archive N (default 0), as `rrdtool first` 1.7.2 prints it.
//! Like rrdtool, a failure prints `-1` on standard output before the error.
//!
//! The oldest row's time needs only the header: the newest row ends at
//! last_update rounded down to the archive's step, and the ring holds
//! row_cnt rows.
//!
//! Deliberately absent: `--daemon` is accepted and ignored (TODO).

use std::io::Write;

use anyhow::{anyhow, bail, Result};
use rrd_format::Header;

use super::fetch::{c_strtol, open_rrd};
use crate::opts;

/// The stamp of the oldest row of RRA `rra_index`, as `rrd_first_r`
/// computes it (None when the index is out of range).
pub(crate) fn first_row_time(header: &Header, rra_index: usize) -> Option<i64> {
    let rra = header.rra.get(rra_index)?;
    let step = (rra.pdp_count as i128) * (header.pdp_step as i128);
    let last_up = header.live.last_up as i128;
    let t = last_up - last_up % step - (rra.row_count as i128 - 1) * step;
    i64::try_from(t).ok()
}

fn first(args: &[String]) -> Result<i64> {
    let parsed = opts::parse(args, &[opts::value(None, "rraindex"), opts::value(Some('d'), "daemon")])?;
    let mut rra_index: i32 = 0;
    for (name, value) in &parsed.opts {
        if *name == "rraindex" {
            // strtol into an int, as rrdtool does (so "abc" is 0).
            rra_index = c_strtol(value.as_deref().unwrap_or("")) as i32;
            if rra_index < 0 {
                bail!("invalid rraindex number");
            }
        }
    }
    let Some(file) = parsed.operands.first() else {
        bail!("usage rrdtool first [--rraindex number] [--daemon|-d <addr>] file.rrd");
    };
    let rrd = open_rrd(file)?;
    first_row_time(&rrd.header, rra_index as usize).ok_or_else(|| anyhow!("invalid rraindex number"))
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let result = first(args);
    writeln!(out, "{}", result.as_ref().map_or(-1, |t| *t))?;
    result.map(|_| ())
}
