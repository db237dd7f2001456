//! `FETCH` and `FETCHBIN <file> <CF> [<start> [<end>] [<column>...]]`: rows
//! of an archive, pending values included, without writing them first.
//!
//! Times are C `strtol` integers (no AT-style): positive is absolute,
//! zero or negative is relative to now; defaults now-86400 and now. The
//! archive is chosen as rrdcached's `rrd_fetch_r` with no resolution asked
//! (the largest step that covers the range). Columns pick and order DS.
//!
//! FETCH prints `%10lu:` and ` %0.17e` per value; FETCHBIN sends each
//! column as raw native doubles after a `DSName-<name>: BinaryData <rows> 8
//! LITTLE` line, and its status number counts header lines plus columns.

use std::sync::Arc;

use rrd_engine::fetch::fetch;
use rrd_format::Cf;
use rrd_lang::cformat::printf_e;
use rrd_lang::numparse;
use rrd_protocol::{Command, Reply};

use super::{access_denied, blocking, syntax_error, Args, Outcome};
use crate::cache::unix_now;
use crate::reader;
use crate::state::Daemon;

/// A FETCH time as rrdcached reads it: C's `strtol(text, &end, 0)`, refused
/// when nothing was converted or `errno` was set (overflow); trailing text is
/// ignored.
fn parse_time(text: Option<&String>, default: i64, now: i64, which: &str) -> Result<i64, Reply> {
    let Some(text) = text else { return Ok(default) };
    let long = numparse::strtol(text, 0);
    if long.consumed == 0 || long.overflow {
        return Err(Reply::error(format!(
            "Cannot parse {which} time `{text}': Only simple integers are allowed."
        )));
    }
    let v = long.value;
    Ok(if v > 0 { v } else { now + v })
}

struct Fetched {
    start: i64,
    end: i64,
    step: u64,
    ds_names: Vec<String>,
    /// Column indexes in output order.
    columns: Vec<usize>,
    rows: usize,
    data: Vec<f64>,
}

fn fetch_columns(daemon: &Arc<Daemon>, mut args: Args, command: Command) -> Result<Fetched, Reply> {
    let (Some(file), Some(cf_name)) = (args.next(), args.next()) else {
        return Err(syntax_error(command));
    };
    let start_text = args.next();
    let end_text = args.next();
    let column_names = args.rest();
    let key = daemon.paths.resolve(&file).map_err(|d| access_denied(&d.shown))?;
    // Confinement to the base directory (-B) is checked by the open.
    let now = unix_now();
    let start = parse_time(start_text.as_ref(), now - 86_400, now, "start")?;
    let end = parse_time(end_text.as_ref(), now, now, "end")?;
    let cf = Cf::parse(&cf_name).ok_or_else(|| {
        Reply::error(format!("rrd_fetch_r failed: unknown consolidation function '{cf_name}'"))
    })?;
    // rrdcached asks for step -1 (ULONG_MAX read back as a long): the
    // finest archive wins, as it does for a wished step of 1 second.
    let r = reader::with_merged(&daemon.cache, &key, |rrd| {
        fetch(rrd, cf, start, end, 1).map_err(|e| reader::ReadError(e.to_string()))
    })
    .map_err(|e| Reply::error(format!("rrd_fetch_r failed: {}", e.0)))?;
    let ds_count = r.ds_names.len();
    let mut columns = Vec::new();
    for name in column_names {
        if columns.len() >= ds_count {
            return Err(Reply::error("too many fields given - duplicates!"));
        }
        if name.is_empty() {
            continue;
        }
        // rrdcached prints the file name from freed memory here (empty in
        // practice); we print it.
        let i = r
            .ds_names
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| Reply::error(format!("field {name} not found in {key}")))?;
        if columns.contains(&i) {
            return Err(Reply::error(format!("field {name} already used")));
        }
        columns.push(i);
    }
    if columns.is_empty() {
        columns = (0..ds_count).collect();
    }
    let rows = r.row_count();
    Ok(Fetched {
        start: r.start,
        end: r.end,
        step: r.step_secs,
        ds_names: r.ds_names,
        columns,
        rows,
        data: r.data,
    })
}

pub async fn run(daemon: &Arc<Daemon>, args: Args, binary: bool) -> Outcome {
    let d = daemon.clone();
    let command = if binary { Command::FetchBin } else { Command::Fetch };
    let f = match blocking(move || fetch_columns(&d, args, command)).await {
        Ok(f) => f,
        Err(reply) => return reply.into(),
    };
    let ds_count = f.ds_names.len();
    let mut body = format!(
        "FlushVersion: 1\nStart: {}\nEnd: {}\nStep: {}\nDSCount: {}\n",
        f.start as u64,
        f.end as u64,
        f.step,
        f.columns.len()
    )
    .into_bytes();
    if binary {
        for &c in &f.columns {
            body.extend_from_slice(
                format!("DSName-{}: BinaryData {} 8 LITTLE\n", f.ds_names[c], f.rows).as_bytes(),
            );
            for row in 0..f.rows {
                body.extend_from_slice(&f.data[row * ds_count + c].to_le_bytes());
            }
            body.push(b'\n');
        }
        return Reply::raw(f.columns.len() as i64 + 5, "Success", body).into();
    }
    let mut names = f.columns.iter().map(|&c| f.ds_names[c].as_str()).collect::<Vec<_>>().join(" ");
    // rrdcached builds this line in a 1024-byte buffer.
    if names.len() > 1023 {
        let mut cut = 1023;
        while !names.is_char_boundary(cut) {
            cut -= 1;
        }
        names.truncate(cut);
    }
    body.extend_from_slice(format!("DSName: {names}\n").as_bytes());
    for row in 0..f.rows {
        let t = f.start + (row as i64 + 1) * f.step as i64;
        let mut line = format!("{:>10}:", t as u64);
        for &c in &f.columns {
            line.push(' ');
            line.push_str(&printf_e(f.data[row * ds_count + c], 17));
        }
        line.push('\n');
        body.extend_from_slice(line.as_bytes());
    }
    Reply::ok("Success", body).into()
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn times_are_strtol_base_zero() {
        let t = |text: &str| parse_time(Some(&text.to_string()), -1, 1000, "start").ok();
        assert_eq!(t("12"), Some(12));
        assert_eq!(t("-300"), Some(700));
        assert_eq!(t("0x10"), Some(16));
        assert_eq!(t("010"), Some(8));
        assert_eq!(t("0"), Some(1000));
        assert_eq!(t("12abc"), Some(12));
        assert_eq!(t("abc"), None);
        assert_eq!(t(""), None);
        assert_eq!(t("99999999999999999999"), None);
        assert_eq!(parse_time(None, -1, 1000, "start").ok(), Some(-1));
    }
}
