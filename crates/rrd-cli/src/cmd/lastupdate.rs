//! `rrdscale lastupdate [--daemon addr] file`: the DS names, then the last
//! update time and each DS's last reading (as stored, in text), exactly as
//! `rrdtool lastupdate` 1.7.2 prints them.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`) the daemon is asked to
//! FLUSH the file first, then the file is read, as rrdtool 1.7.2 does; an
//! unreachable daemon means reading the file anyway, then failing with the
//! connection error.

use std::io::Write;

use anyhow::{bail, Result};
use rrd_client::Daemon;

use super::fetch::open_rrd;
use crate::opts;

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let parsed = opts::parse(args, &[opts::value(Some('d'), "daemon")])?;
    let [file] = parsed.operands.as_slice() else {
        bail!("Usage: rrdtool lastupdate [--daemon|-d <addr>] <file>");
    };
    match rrd_client::daemon(parsed.value("daemon")) {
        Daemon::Absent => print(file, out),
        Daemon::Unreachable(e) => super::client::after_fallback(print(file, out), e),
        Daemon::Connected(mut session) => {
            session.flush(file).map_err(|e| super::client::flush_failure(file, e))?;
            print(file, out)
        }
    }
}

/// Reads the file and prints what `rrdtool lastupdate` prints.
fn print(file: &str, out: &mut dyn Write) -> Result<()> {
    let rrd = open_rrd(file)?;
    let header = &rrd.header;
    let mut text = Vec::new();
    for ds in header.ds() {
        text.push(b' ');
        text.extend_from_slice(ds.name.as_str().as_bytes());
    }
    text.extend_from_slice(b"\n\n");
    text.extend_from_slice(format!("{:>10}:", header.live().last_up as u64).as_bytes());
    for pdp in header.pdp() {
        text.push(b' ');
        // The stored text up to its NUL, byte for byte.
        let end = pdp.last_ds.iter().position(|&b| b == 0).unwrap_or(pdp.last_ds.len());
        text.extend_from_slice(&pdp.last_ds[..end]);
    }
    text.push(b'\n');
    out.write_all(&text)?;
    Ok(())
}
