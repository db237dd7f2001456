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

use super::client::DaemonFetch;
use super::fetch::{start_end, EARLIEST_START};
use crate::opts;

/// C's `atoi`/`atol`: leading digits with an optional sign, 0 when none.
fn c_atol(s: &str) -> i64 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = digits.bytes().position(|c| !c.is_ascii_digit()).unwrap_or(digits.len());
    let v: i64 = digits[..end].parse().unwrap_or(if end == 0 { 0 } else { i64::MAX });
    if negative {
        -v
    } else {
        v
    }
}

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
            "step" => step_secs = c_atol(value) as i32 as i64,
            "maxrows" => {
                max_rows = c_atol(value);
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

#[cfg(test)]
mod tests {
    use super::c_atol;

    #[test]
    fn atol_reads_leading_digits_only() {
        assert_eq!(c_atol("300"), 300);
        assert_eq!(c_atol("5m"), 5);
        assert_eq!(c_atol(" -7x"), -7);
        assert_eq!(c_atol("abc"), 0);
    }
}
