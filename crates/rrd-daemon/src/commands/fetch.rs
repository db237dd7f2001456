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

use rrd_engine::fetch::{fetch_rows, FetchRows, FILL_NAN};
use rrd_format::Cf;
use rrd_lang::cformat::printf_e;
use rrd_lang::numparse;
use rrd_protocol::{Command, Reply};

use super::{access_denied, blocking, syntax_error, Args, Outcome};
use crate::cache::unix_now;
use crate::reader;
use crate::state::{Daemon, Listening};

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

/// A FETCH or FETCHBIN answer, rendered in pieces as the client takes
/// them: it holds the archive's rows in range and counts the padding rows
/// around them (`rrd_engine::fetch::FetchRows`), so its memory is bounded by
/// the archive, not by the range asked for; the reply on the wire is
/// rrdcached's, every padding row included.
pub struct FetchReply {
    rows: FetchRows,
    /// Column indexes in output order.
    columns: Vec<usize>,
    binary: bool,
    /// What is rendered but not taken yet starts with the status and
    /// header lines.
    head: Option<Vec<u8>>,
    /// Text: the next row. Binary: the next row of column `column`.
    row: u64,
    column: usize,
    /// Binary: the column's `DSName-` line is out.
    started: bool,
    /// Text: what follows a padding row's time stamp.
    nan_text: String,
}

/// A reply of more rows than this is large: at most
/// [`LARGE_REPLIES_MAX`] of those are written at once.
pub const LARGE_ROWS: u64 = 100_000;
/// Large replies written at once; more wait their turn.
pub const LARGE_REPLIES_MAX: usize = 4;

impl FetchReply {
    fn new(rows: FetchRows, columns: Vec<usize>, binary: bool) -> FetchReply {
        let nan_text =
            columns.iter().map(|_| format!(" {}", printf_e(FILL_NAN, 17))).collect::<String>() + "\n";
        let mut reply =
            FetchReply { rows, columns, binary, head: None, row: 0, column: 0, started: false, nan_text };
        let mut head = format!("{} Success\n", reply.status()).into_bytes();
        head.extend_from_slice(&reply.header());
        reply.head = Some(head);
        reply
    }

    /// The status number: the lines that follow (text), or the header
    /// lines plus the columns (binary).
    fn status(&self) -> i64 {
        if self.binary {
            self.columns.len() as i64 + 5
        } else {
            self.rows.row_count() as i64 + 6
        }
    }

    /// Whether the reply is large ([`LARGE_ROWS`]).
    pub fn is_large(&self) -> bool {
        self.rows.row_count() > LARGE_ROWS
    }

    /// The header lines.
    fn header(&self) -> Vec<u8> {
        let f = &self.rows;
        let lines = format!(
            "FlushVersion: 1\nStart: {}\nEnd: {}\nStep: {}\nDSCount: {}\n",
            f.start as u64,
            f.end as u64,
            f.step_secs,
            self.columns.len()
        );
        if self.binary {
            return lines.into_bytes();
        }
        let mut names = self.columns.iter().map(|&c| f.ds_names[c].as_str()).collect::<Vec<_>>().join(" ");
        // rrdcached builds this line in a 1024-byte buffer.
        if names.len() > 1023 {
            let mut cut = 1023;
            while !names.is_char_boundary(cut) {
                cut -= 1;
            }
            names.truncate(cut);
        }
        format!("{lines}DSName: {names}\n").into_bytes()
    }

    /// Appends the next piece of the reply, about `budget` bytes, to `out`;
    /// `true` once everything is rendered.
    pub fn render(&mut self, out: &mut Vec<u8>, budget: usize) -> bool {
        if let Some(head) = self.head.take() {
            out.extend_from_slice(&head);
        }
        let limit = out.len() + budget;
        if self.binary {
            self.render_binary(out, limit)
        } else {
            self.render_text(out, limit)
        }
    }

    fn render_text(&mut self, out: &mut Vec<u8>, limit: usize) -> bool {
        let total = self.rows.row_count();
        while self.row < total && out.len() < limit {
            let t = self.rows.row_time(self.row);
            out.extend_from_slice(format!("{:>10}:", t as u64).as_bytes());
            match self.rows.row(self.row) {
                None => out.extend_from_slice(self.nan_text.as_bytes()),
                Some(values) => {
                    for &c in &self.columns {
                        out.push(b' ');
                        out.extend_from_slice(printf_e(values[c], 17).as_bytes());
                    }
                    out.push(b'\n');
                }
            }
            self.row += 1;
        }
        self.row >= total
    }

    fn render_binary(&mut self, out: &mut Vec<u8>, limit: usize) -> bool {
        let total = self.rows.row_count();
        while self.column < self.columns.len() && out.len() < limit {
            let c = self.columns[self.column];
            if !self.started {
                let name = &self.rows.ds_names[c];
                out.extend_from_slice(format!("DSName-{name}: BinaryData {total} 8 LITTLE\n").as_bytes());
                self.started = true;
            }
            while self.row < total && out.len() < limit {
                let v = self.rows.row(self.row).map_or(FILL_NAN, |values| values[c]);
                out.extend_from_slice(&v.to_le_bytes());
                self.row += 1;
            }
            if self.row >= total {
                out.push(b'\n');
                self.row = 0;
                self.started = false;
                self.column += 1;
            }
        }
        self.column >= self.columns.len()
    }

    /// The whole reply in memory (for callers that do not stream).
    pub fn into_reply(mut self) -> Reply {
        let status = self.status();
        self.head = Some(self.header());
        let mut body = Vec::new();
        while !self.render(&mut body, 1 << 20) {}
        Reply::raw(status, "Success", body)
    }
}

fn fetch_columns(
    daemon: &Arc<Daemon>,
    l: Listening,
    mut args: Args,
    command: Command,
) -> Result<FetchReply, Reply> {
    let (Some(file), Some(cf_name)) = (args.next(), args.next()) else {
        return Err(syntax_error(command));
    };
    let start_text = args.next();
    let end_text = args.next();
    let column_names = args.rest();
    let key = daemon.paths_of(&l).resolve(&file).map_err(|d| access_denied(&d.shown))?;
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
        fetch_rows(rrd, cf, start, end, 1).map_err(|e| reader::ReadError(e.to_string()))
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
    Ok(FetchReply::new(r, columns, command == Command::FetchBin))
}

/// Reads what a FETCH (`binary`: FETCHBIN) asks for, for the caller to
/// render, in pieces ([`FetchReply::render`]) or whole.
pub async fn prepare(
    daemon: &Arc<Daemon>,
    l: Listening,
    args: Args,
    binary: bool,
) -> Result<FetchReply, Reply> {
    let d = daemon.clone();
    let command = if binary { Command::FetchBin } else { Command::Fetch };
    blocking(move || fetch_columns(&d, l, args, command)).await
}

/// FETCH or FETCHBIN answered whole (the connection streams it instead:
/// [`prepare`]).
pub async fn run(daemon: &Arc<Daemon>, l: Listening, args: Args, binary: bool) -> Outcome {
    match prepare(daemon, l, args, binary).await {
        Ok(f) => f.into_reply().into(),
        Err(reply) => reply.into(),
    }
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
