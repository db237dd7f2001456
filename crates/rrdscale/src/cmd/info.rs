//! `rrdscale info [--daemon addr] [--noflush] file`: every header field as
//! `key = value` lines, exactly as `rrdtool info` 1.7.2 prints them.
//!
//! Deliberately absent: `--daemon`/`--noflush` are accepted and ignored
//! (TODO: flush through the daemon first once it exists).

use std::io::Write;

use anyhow::{bail, Result};
use rrd_engine::info::{info, write_info};

use super::fetch::open_rrd;
use crate::opts;

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let parsed = opts::parse(args, &[opts::value(Some('d'), "daemon"), opts::flag(Some('F'), "noflush")])?;
    let [file] = parsed.operands.as_slice() else {
        bail!("Usage: rrdtool info [--daemon |-d <addr> [--noflush|-F]] <file>");
    };
    let rrd = open_rrd(file)?;
    let entries = info(&rrd, file)?;
    write_info(&entries, out)?;
    Ok(())
}
