//! `rrdscale info [--daemon addr] [--noflush] file`: every header field as
//! `key = value` lines, exactly as `rrdtool info` 1.7.2 prints them.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`), as rrdtool 1.7.2: the
//! file is flushed first (not with `--noflush`), then the daemon's INFO
//! reply is read back (values through `atof`/`atol`, as librrd) and printed;
//! `filename` is then the name the daemon resolved. An unreachable daemon
//! means the file is read directly, then the command fails with the
//! connection error.

use std::io::Write;

use anyhow::{bail, Result};
use rrd_client::{Daemon, InfoItem};
use rrd_engine::info::{info, write_info, InfoEntry, InfoValue};

use super::fetch::open_rrd;
use crate::opts;

/// An item of the daemon's reply as the engine's info entry.
fn entry(item: InfoItem) -> InfoEntry {
    let value = match item.value {
        rrd_client::InfoValue::Value(v) => InfoValue::Value(v),
        rrd_client::InfoValue::Count(c) => InfoValue::Count(c),
        rrd_client::InfoValue::Str(s) => InfoValue::Str(s),
        rrd_client::InfoValue::Int(i) => InfoValue::Int(i),
    };
    InfoEntry { key: item.key, value }
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    run_as("info", args, out)
}

/// `info` run as `command` (the `rrdinfo` program names itself, as it
/// was started, in its usage error).
pub fn run_as(command: &str, args: &[String], out: &mut dyn Write) -> Result<()> {
    // An unreachable daemon: the file's entries are printed, then the
    // command fails, as rrdtool's.
    let (entries, error) = entries_and_error_as(command, args)?;
    write_info(&entries, out)?;
    error.map_or(Ok(()), Err)
}

/// What `info` prints, as entries (librrd's `rrd_info` list).
pub fn entries(args: &[String]) -> Result<Vec<InfoEntry>> {
    match entries_and_error(args)? {
        (entries, None) => Ok(entries),
        (_, Some(e)) => Err(e),
    }
}

/// The entries, and the error of a daemon that could not be reached after
/// the file was read directly instead: librrd's `rrd_info` returns that
/// list with the error text set (the command line prints nothing then).
pub fn entries_and_error(args: &[String]) -> Result<(Vec<InfoEntry>, Option<anyhow::Error>)> {
    entries_and_error_as("info", args)
}

fn entries_and_error_as(command: &str, args: &[String]) -> Result<(Vec<InfoEntry>, Option<anyhow::Error>)> {
    let parsed = opts::parse(args, &[opts::value(Some('d'), "daemon"), opts::flag(Some('F'), "noflush")])?;
    let [file] = parsed.operands.as_slice() else {
        bail!("Usage: rrdtool {command} [--daemon |-d <addr> [--noflush|-F]] <file>");
    };
    let local = || -> Result<Vec<InfoEntry>> {
        let rrd = open_rrd(file)?;
        Ok(info(&rrd, file)?)
    };
    match rrd_client::daemon(parsed.value("daemon")) {
        Daemon::Absent => Ok((local()?, None)),
        Daemon::Unreachable(e) => Ok((local()?, Some(e.into()))),
        Daemon::Connected(mut session) => {
            if !parsed.has("noflush") {
                session.flush(file).map_err(|e| super::client::flush_failure(file, e))?;
            }
            match session.info(file) {
                Ok(items) => Ok((items.into_iter().map(entry).collect(), None)),
                Err(e) if e.message().is_some() => Err(e.into()),
                Err(_) => Ok((Vec::new(), None)),
            }
        }
    }
}
