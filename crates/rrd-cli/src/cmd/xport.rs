//! `rrdscale xport [-s start] [-e end] [-m maxrows] [--step s] [--json]
//! [--enumds] [-t] DEF:... CDEF:... XPORT:...`: exports computed series as
//! XML (or JSON), exactly as `rrdtool xport` 1.7.2 prints them.
//!
//! The options are parsed here; the evaluation and the output format belong
//! to `rrd_engine::xport` (see there for the RPN operators not supported yet).
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`) the DEFs are read through
//! the daemon's FETCH, so pending values count; as in rrdtool 1.7.2, a named
//! daemon that cannot be reached fails the xport before anything is read.

use std::io::Write;

use anyhow::{anyhow, bail, Result};
use rrd_client::Daemon;
use rrd_engine::xport::{
    write_json, write_xml, xport_with, XportFormat, XportRange, XportResult, DEFAULT_MAX_ROWS,
};
use rrd_lang::numparse;

use super::client::DaemonFetch;
use super::fetch::{start_end, EARLIEST_START};
use crate::opts;

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let (result, format, json) = compute(args)?;
    if json {
        write_json(&result, format, out)?;
    } else {
        write_xml(&result, format, out)?;
    }
    Ok(())
}

/// The series `xport` prints (librrd's `rrd_xport` arrays), how it prints
/// them, and whether as JSON.
pub fn compute(args: &[String]) -> Result<(XportResult, XportFormat, bool)> {
    let parsed = opts::parse(
        args,
        &[
            opts::value(Some('s'), "start"),
            opts::value(Some('e'), "end"),
            opts::value(Some('m'), "maxrows"),
            opts::value(None, "step"),
            opts::flag(None, "enumds"),
            opts::flag(None, "json"),
            opts::flag(Some('t'), "showtime"),
            opts::value(Some('d'), "daemon"),
        ],
    )?;
    let mut step_secs = 0;
    let mut max_rows = DEFAULT_MAX_ROWS;
    for (name, value) in &parsed.opts {
        let value = value.as_deref().unwrap_or("");
        match *name {
            // `atoi`, so `--step 5m` is 5 seconds, as in rrdtool.
            "step" => step_secs = i64::from(numparse::atoi(value)),
            "maxrows" => {
                max_rows = numparse::atol(value);
                if max_rows < 10 {
                    bail!("maxrows below 10 rows");
                }
            }
            _ => {}
        }
    }
    let (start, end) = start_end(&parsed)?;
    if start < EARLIEST_START {
        bail!("the first entry to fetch should be after 1980 ({start})");
    }
    if end < start {
        bail!("start ({start}) should be less than end ({end})");
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .map_err(|e| anyhow!("reading the clock: {e}"))?;
    let range = XportRange { start, end, step_secs, max_rows, now };
    if parsed.operands.is_empty() {
        bail!("can't make an xport without contents");
    }
    let daemon = parsed.value("daemon");
    if let Daemon::Unreachable(e) = rrd_client::daemon(daemon) {
        return Err(e.into());
    }
    let result = xport_with(&range, &parsed.operands, &mut DaemonFetch::new(daemon))?;
    let format = XportFormat { show_time: parsed.has("showtime"), enum_ds: parsed.has("enumds") };
    Ok((result, format, parsed.has("json")))
}
