//! `rrdscale last [--daemon addr] file`: the time of the last update, as
//! `rrdtool last` 1.7.2 prints it. Like rrdtool, a failure prints `-1` on
//! standard output before the error.
//!
//! Deliberately absent: `--daemon` is accepted and ignored (TODO: ask the
//! daemon once it exists).

use std::io::Write;

use anyhow::{bail, Result};

use super::fetch::open_rrd;
use crate::opts;

fn last(args: &[String]) -> Result<i64> {
    let parsed = opts::parse(args, &[opts::value(Some('d'), "daemon")])?;
    let [file] = parsed.operands.as_slice() else {
        bail!("Usage: rrdtool last [--daemon|-d <addr>] <file>");
    };
    Ok(open_rrd(file)?.header.live.last_up)
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    // rrdtool prints the function's return value whatever happened, and
    // the function returns -1 on error.
    let result = last(args);
    writeln!(out, "{}", result.as_ref().map_or(-1, |t| *t))?;
    result.map(|_| ())
}
