//! `rrdscale fetch file CF [-r res] [-s start] [-e end] [-a] [-d addr]`:
//! prints an archive's rows over a time range exactly as `rrdtool fetch`
//! 1.7.2 does (a header of `%20s` DS names, a blank line, then
//! `%10lu: %0.10e ...` rows, unknowns as glibc prints NaN: `nan`/`-nan`).
//!
//! Also home to the small helpers the read-only commands share: opening a
//! file read-only, AT-style start/end, C's `strtol`, and RRDtool's scaled
//! durations.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`) the rows come from the
//! daemon's FETCH instead, as rrdtool 1.7.2 does: times are resolved here
//! and sent as seconds, `--resolution` is not sent, the consolidation
//! function is the daemon's to check, and the reply's values (printed by
//! the daemon with 17 digits) are read back and printed as usual. An
//! unreachable daemon means reading the file, then failing with the
//! connection error (see `client.rs`).

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, bail, Result};
use rrd_client::Daemon;
use rrd_engine::fetch::{fetch, printf_e10, FetchResult};
use rrd_engine::{attime, Rrd};
use rrd_format::Cf;

use crate::opts;

/// The earliest start `fetch` and `xport` accept (RRDtool's "after 1980",
/// really 1979-12-30: ten 365-day years).
pub(crate) const EARLIEST_START: i64 = 3600 * 24 * 365 * 10;

/// Opens an RRD read-only, reading only its header. A failed open reads as
/// RRDtool's `opening 'f.rrd': No such file or directory`.
pub(crate) fn open_rrd(path: &str) -> Result<Rrd> {
    Ok(Rrd::open(Path::new(path), false)?)
}

/// C's `strtol(s, &end, base)` with base 0 (decimal, `0x` hex, `0` octal),
/// ignoring trailing garbage and returning 0 when there are no digits, as
/// RRDtool's option parsing relies on. Overflow saturates like glibc.
pub(crate) fn c_strtol(s: &str) -> i64 {
    let b = s.as_bytes();
    let mut p = 0;
    while p < b.len() && matches!(b[p], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        p += 1;
    }
    let negative = p < b.len() && b[p] == b'-';
    if p < b.len() && (b[p] == b'-' || b[p] == b'+') {
        p += 1;
    }
    let mut radix = 10;
    if b.len() > p + 1
        && b[p] == b'0'
        && (b[p + 1] | 0x20) == b'x'
        && b.get(p + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        radix = 16;
        p += 2;
    } else if p < b.len() && b[p] == b'0' {
        radix = 8;
    }
    let mut value: i128 = 0;
    while p < b.len() {
        let Some(d) = (b[p] as char).to_digit(radix) else { break };
        value = (value * radix as i128 + d as i128).min(i64::MAX as i128 + 1);
        p += 1;
    }
    let value = if negative { -value } else { value };
    value.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// RRDtool's `rrd_scaled_duration(token, 1)`: a positive count of seconds,
/// or digits followed by a unit letter (s, m, h, d, w, M, y) of which only
/// the first character after the digits is looked at.
pub(crate) fn scaled_duration_secs(token: &str) -> Result<u64, &'static str> {
    let b = token.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_digit) {
        return Err("value must be (suffixed) positive number");
    }
    let digits = b.iter().position(|c| !c.is_ascii_digit()).unwrap_or(b.len());
    // strtoul saturates at ULONG_MAX on overflow.
    let value: u64 = token[..digits].parse().unwrap_or(u64::MAX);
    let scale: u64 = match b.get(digits) {
        None | Some(b's') => 1,
        Some(b'm') => 60,
        Some(b'h') => 3600,
        Some(b'd') => 86_400,
        Some(b'w') => 7 * 86_400,
        Some(b'M') => 31 * 86_400,
        Some(b'y') => 366 * 86_400,
        Some(_) => return Err("value has trailing garbage"),
    };
    let secs = value.wrapping_mul(scale);
    if secs == 0 {
        return Err("value must be positive");
    }
    Ok(secs)
}

/// Parses `-s`/`-e` values in command-line order, then resolves them against
/// each other and the clock, with RRDtool's defaults (`end-24h`, `now`) and
/// error prefixes (`start time: `, `end time: `).
pub(crate) fn start_end(parsed: &opts::Parsed) -> Result<(i64, i64)> {
    let mut start = attime::parse("end-24h").map_err(|e| anyhow!("start time: {e}"))?;
    let mut end = attime::parse("now").map_err(|e| anyhow!("end time: {e}"))?;
    for (name, value) in &parsed.opts {
        let value = value.as_deref().unwrap_or("");
        match *name {
            "start" => start = attime::parse(value).map_err(|e| anyhow!("start time: {e}"))?,
            "end" => end = attime::parse(value).map_err(|e| anyhow!("end time: {e}"))?,
            _ => {}
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    attime::resolve_start_end(&start, &end, now).map_err(|e| anyhow!("{e}"))
}

/// Parses a consolidation function name as RRDtool's `rrd_cf_conv` does.
pub(crate) fn parse_cf(name: &str) -> Result<Cf> {
    Cf::parse(name).ok_or_else(|| anyhow!("unknown consolidation function '{name}'"))
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    // An unreachable daemon: the file's rows are printed, then the command
    // fails, as rrdtool's.
    let (rows, error) = rows_and_error(args)?;
    if let Some(rows) = rows {
        write_rows(&rows, out)?;
    }
    error.map_or(Ok(()), Err)
}

/// The rows `fetch` prints (librrd's `rrd_fetch` arrays); `None` when the
/// daemon refused without a text (rrdtool then prints and reports nothing).
/// With them, the error of a daemon that could not be reached after the
/// file was read directly instead (librrd's `rrd_fetch` then returns the
/// rows with the error text set).
pub fn rows_and_error(args: &[String]) -> Result<(Option<FetchResult>, Option<anyhow::Error>)> {
    let parsed = opts::parse(
        args,
        &[
            opts::value(Some('r'), "resolution"),
            opts::value(Some('s'), "start"),
            opts::value(Some('e'), "end"),
            opts::flag(Some('a'), "align-start"),
            opts::value(Some('d'), "daemon"),
        ],
    )?;
    let mut resolution_secs: u64 = 1;
    for (name, value) in &parsed.opts {
        if *name == "resolution" {
            resolution_secs = scaled_duration_secs(value.as_deref().unwrap_or(""))
                .map_err(|e| anyhow!("resolution: {e}"))?;
        }
    }
    let (mut start, mut end) = start_end(&parsed)?;
    if start < EARLIEST_START {
        bail!("the first entry to fetch should be after 1980");
    }
    if parsed.has("align-start") {
        let delta = start % resolution_secs as i64;
        start -= delta;
        end -= delta;
    }
    if end < start {
        bail!("start ({start}) should be less than end ({end})");
    }
    let [file, cf, ..] = parsed.operands.as_slice() else {
        bail!("Usage: rrdtool fetch <file> <CF> [options]");
    };
    let local = || -> Result<Option<FetchResult>> {
        let cf = parse_cf(cf)?;
        // Leaves no pages of a cold file behind in the page cache.
        let rows = rrd_engine::rrd::read_leaving_no_residue(Path::new(file.as_str()), |rrd| {
            fetch(rrd, cf, start, end, resolution_secs)
        })?;
        Ok(Some(rows))
    };
    match rrd_client::daemon(parsed.value("daemon")) {
        Daemon::Absent => Ok((local()?, None)),
        Daemon::Unreachable(e) => Ok((local()?, Some(e.into()))),
        Daemon::Connected(mut session) => match session.fetch(file, cf, start, end) {
            Ok(r) => Ok((Some(super::client::fetch_result(r)), None)),
            Err(e) if e.message().is_some() => Err(e.into()),
            // rrdtool prints nothing and reports nothing for a fetch its
            // client refused without a text.
            Err(_) => Ok((None, None)),
        },
    }
}

/// Prints fetched rows as `rrdtool fetch` does.
fn write_rows(result: &FetchResult, out: &mut dyn Write) -> Result<()> {
    let mut text = String::with_capacity(64 + result.data.len() * 17);
    text.push_str("           ");
    for name in &result.ds_names {
        text.push_str(&format!("{name:>20}"));
    }
    text.push_str("\n\n");
    for i in 0..result.row_count() {
        // `%10lu`: the stamp as unsigned, right-aligned in ten columns.
        text.push_str(&format!("{:>10}:", result.row_time(i) as u64));
        for &v in result.row(i) {
            text.push(' ');
            text.push_str(&printf_e10(v));
        }
        text.push('\n');
        if text.len() > 1 << 16 {
            out.write_all(text.as_bytes())?;
            text.clear();
        }
    }
    out.write_all(text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_follows_c() {
        assert_eq!(c_strtol("12"), 12);
        assert_eq!(c_strtol("0x1f"), 31);
        assert_eq!(c_strtol("010"), 8);
        assert_eq!(c_strtol("2x"), 2);
        assert_eq!(c_strtol("abc"), 0);
        assert_eq!(c_strtol(" -3"), -3);
        assert_eq!(c_strtol("0x"), 0);
        assert_eq!(c_strtol("99999999999999999999"), i64::MAX);
    }

    #[test]
    fn scaled_durations_follow_rrdtool() {
        assert_eq!(scaled_duration_secs("300"), Ok(300));
        assert_eq!(scaled_duration_secs("5m"), Ok(300));
        assert_eq!(scaled_duration_secs("1d"), Ok(86_400));
        // Only the first character after the digits is looked at.
        assert_eq!(scaled_duration_secs("10mx"), Ok(600));
        assert_eq!(scaled_duration_secs("0"), Err("value must be positive"));
        assert_eq!(scaled_duration_secs("-5"), Err("value must be (suffixed) positive number"));
        assert_eq!(scaled_duration_secs("5q"), Err("value has trailing garbage"));
    }
}
