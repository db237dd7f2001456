//! `rrdscale lastupdate [--daemon addr] file`: the DS names, then the last
//! update time and each DS's last reading (as stored, in text), exactly as
//! `rrdtool lastupdate` 1.7.2 prints them.
//!
//! Deliberately absent: `--daemon` is accepted and ignored (TODO: flush
//! through the daemon first once it exists).

use std::io::Write;

use anyhow::{bail, Result};

use super::fetch::open_rrd;
use crate::opts;

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let parsed = opts::parse(args, &[opts::value(Some('d'), "daemon")])?;
    let [file] = parsed.operands.as_slice() else {
        bail!("Usage: rrdtool lastupdate [--daemon|-d <addr>] <file>");
    };
    let rrd = open_rrd(file)?;
    let header = &rrd.header;
    let mut text = Vec::new();
    for ds in &header.ds {
        text.push(b' ');
        text.extend_from_slice(ds.name.as_str().as_bytes());
    }
    text.extend_from_slice(b"\n\n");
    text.extend_from_slice(format!("{:>10}:", header.live.last_up as u64).as_bytes());
    for pdp in &header.pdp {
        text.push(b' ');
        // The stored text up to its NUL, byte for byte.
        let end = pdp.last_ds.iter().position(|&b| b == 0).unwrap_or(pdp.last_ds.len());
        text.extend_from_slice(&pdp.last_ds[..end]);
    }
    text.push(b'\n');
    out.write_all(&text)?;
    Ok(())
}
