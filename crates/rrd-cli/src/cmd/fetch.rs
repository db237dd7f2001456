//! `rrdscale fetch file CF [-r res] [-s start] [-e end] [-a] [-d addr]`:
//! prints an archive's rows over a time range exactly as `rrdtool fetch`
//! 1.7.2 does (a header of `%20s` DS names, a blank line, then
//! `%10lu: %0.10e ...` rows, unknowns as glibc prints NaN: `nan`/`-nan`).
//!
//! Also home to the small helpers the read-only commands share: opening a
//! file read-only and AT-style start/end.
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
use rrd_engine::fetch::{fetch, FetchResult};
use rrd_engine::Rrd;
use rrd_format::Cf;
use rrd_lang::attime;
use rrd_lang::cformat::printf_e10;
use rrd_lang::numparse;

use crate::opts;

/// The earliest start `fetch` and `xport` accept (RRDtool's "after 1980",
/// really 1979-12-30: ten 365-day years).
pub(crate) const EARLIEST_START: i64 = 3600 * 24 * 365 * 10;

/// Opens an RRD read-only, reading only its header. A failed open reads as
/// RRDtool's `opening 'f.rrd': No such file or directory`.
pub(crate) fn open_rrd(path: &str) -> Result<Rrd> {
    Ok(Rrd::open(Path::new(path), false)?)
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
            resolution_secs = numparse::scaled_duration(value.as_deref().unwrap_or(""), 1)
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
