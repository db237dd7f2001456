//! `rrdscale list [--recursive] [--daemon addr] [--noflush] dirname`: the
//! RRD files (and, without `--recursive`, the subdirectories) of a
//! directory, exactly as `rrdtool list` 1.7.2 prints them.
//!
//! The walk is `rrd_engine::list` (shared with the daemon's LIST). A failure
//! is not an error: rrdtool prints the C library's message for `errno` on
//! stderr, without a newline, and exits 0; an empty listing prints
//! "Success" (its `errno` untouched), as 1.7.2 was seen to do.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`) the daemon lists instead
//! (its LIST, relative to its base directory; FLUSHALL first unless
//! `--noflush`), as rrdtool 1.7.2 does. A `--daemon` that cannot be reached
//! prints `Error connecting to rrdcached: <why>` on stderr and fails; an
//! unreachable `RRDCACHED_ADDRESS` means listing locally, then failing with
//! the connection error.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;

use anyhow::{bail, Result};

use crate::opts;
use rrd_client::Daemon;
use rrd_engine::list::{rrd_list, ListError};

/// rrdtool's `rrd_list_r` as the CLI prints it: one name per line; an empty
/// listing is the "error" rrdtool reports for it.
pub fn list(recursive: bool, dirname: &[u8]) -> Result<Vec<u8>, ListError> {
    let names = rrd_list(recursive, dirname)?;
    if names.is_empty() {
        return Err(ListError("Success".into()));
    }
    let mut out = Vec::new();
    for name in names {
        out.extend_from_slice(&name);
        out.push(b'\n');
    }
    Ok(out)
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let parsed = opts::parse(
        args,
        &[
            opts::value(Some('d'), "daemon"),
            opts::flag(Some('F'), "noflush"),
            opts::flag(Some('r'), "recursive"),
        ],
    )?;
    let [dirname] = parsed.operands.as_slice() else {
        bail!("Usage: rrdtool list [--daemon <addr> [--noflush]] [--recursive] <directory>");
    };
    let recursive = parsed.has("recursive");
    let local = |out: &mut dyn Write| -> Result<()> {
        match list(recursive, &OsString::from(dirname).into_vec()) {
            Ok(text) => out.write_all(&text)?,
            Err(ListError(message)) => {
                out.flush()?;
                eprint!("{message}");
            }
        }
        Ok(())
    };
    let option = parsed.value("daemon");
    match rrd_client::daemon(option) {
        // `--daemon ""` names no daemon: rrdtool says so and lists nothing.
        Daemon::Absent if option.is_some() => {
            out.flush()?;
            eprintln!("Error connecting to rrdcached");
            Ok(())
        }
        Daemon::Absent => local(out),
        Daemon::Unreachable(e) if option.is_some() => {
            out.flush()?;
            eprintln!("Error connecting to rrdcached: {e}");
            Err(e.into())
        }
        Daemon::Unreachable(e) => super::client::after_fallback(local(out), e),
        Daemon::Connected(mut session) => {
            if !parsed.has("noflush") {
                session.flush_all()?;
            }
            match session.list(recursive, dirname) {
                Ok(names) => {
                    for name in names {
                        out.write_all(name.as_bytes())?;
                        out.write_all(b"\n")?;
                    }
                    Ok(())
                }
                Err(e) if e.message().is_some() => Err(e.into()),
                Err(_) => Ok(()),
            }
        }
    }
}
