//! `rrdscale tune`: rrdtool 1.7.2's `tune` command line, then the engine.
//!
//! The command line is read by `rrd_engine::tune::CommandLine`, a port of
//! the `optparse` rrdtool bundles (the daemon's TUNE reads its arguments
//! with it too).
//!
//! With a daemon (`--daemon|-D`, else `RRDCACHED_ADDRESS`), as rrdtool
//! 1.7.2: the daemon is connected before anything else (an unreachable one
//! fails the command with `Cannot connect to daemon` and the file is not
//! touched); then the file's pending values are flushed (a failed flush is
//! ignored). Then, as rrdtool 1.8 and later, the daemon is asked to tune
//! the file (`TUNE`, the command line sent as librrd 1.9 sends it); its
//! error is the command's. A daemon that does not know TUNE (rrdcached
//! 1.7.2 answers `Unknown command`) gets 1.7.2's treatment: the file is
//! tuned here, and the daemon is told to FORGET the file (whether the tune
//! succeeded or not; a failed forget is ignored), so that it reopens the
//! changed file. (librrd 1.9 sends FORGET after the daemon's TUNE too; we
//! do not: the daemon that tuned the file knows it changed, and a FORGET
//! would drop values sent to it in the meantime.) With no daemon named, a connection an
//! earlier command of the same pipe-mode session left open is used the same
//! way (librrd's `rrdc_is_any_connected`).
//!
//! Deliberately absent: rrdtool 1.7.2 never prints the data source summary
//! its source code has for a bare `tune file` (its own condition is never
//! true), so neither do we.

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Result};
use rrd_client::{Daemon, TuneOutcome};
use rrd_engine::tune::{CommandLine, Tuner};

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    if args.is_empty() {
        return super::command_help(out, "tune");
    }
    let mut line = CommandLine::new(args);
    // First pass: the daemon and the file name (errors wait for the second).
    let scan = line.scan();
    let session = match rrd_client::daemon(scan.daemon.as_deref()) {
        Daemon::Connected(s) => Some(s),
        Daemon::Unreachable(_) => return Err(anyhow!("Cannot connect to daemon")),
        Daemon::Absent => rrd_client::any_connected(),
    };
    let Some(file) = scan.file else { return Err(anyhow!("missing file name")) };
    let Some(mut session) = session else { return tune_file(&mut line, &file) };
    // rrdtool ignores both failures (its comments wonder whether it should).
    let _ = session.flush(&file);
    match session.tune(&file, &line.argv()) {
        Ok(TuneOutcome::Tuned) => return Ok(()),
        Ok(TuneOutcome::Unknown) => {}
        Err(e) => return Err(e.into()),
    }
    let result = tune_file(&mut line, &file);
    let _ = session.forget(&file);
    result
}

/// The second pass and the structural changes, on the file named `file`.
fn tune_file(line: &mut CommandLine, file: &str) -> Result<()> {
    let path = Path::new(file);
    let mut tuner = Tuner::open(path)?;
    line.apply(&mut tuner, path)?;
    Ok(())
}
