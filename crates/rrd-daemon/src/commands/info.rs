//! `INFO <file>`, `FIRST <file> <rra index>`, `LAST <file>`: header facts,
//! pending values included (rrdcached answers INFO and FIRST from the file
//! alone; see docs/protocol.md). LAST answers what `rrdtool last` prints
//! once the pending values are written (rrdcached answers its newest
//! accepted time rounded down to the step, so `rrdtool last --daemon`
//! and `rrdtool last` disagree there; ours agree).
//!
//! INFO lines are `<key> <type> <value>` with rrdcached's type numbers
//! (0 value, 1 count, 2 string, 3 int, 4 blob size).

use std::sync::Arc;

use rrd_engine::info::{info_of_header, InfoValue};
use rrd_protocol::{Command, Reply};

use super::{access_denied, blocking, syntax_error, Args, Outcome};
use crate::reader;
use crate::state::{Daemon, Listening};

fn key_of(daemon: &Daemon, l: Listening, file: &str) -> Result<String, Reply> {
    // Confinement to the base directory (-B) is checked by the open.
    daemon.paths_of(&l).resolve(file).map_err(|d| access_denied(&d.shown))
}

fn info_line(key: &str, value: &InfoValue) -> String {
    match value {
        InfoValue::Value(v) if v.is_nan() => format!("{key} 0 NaN\n"),
        InfoValue::Value(v) => format!("{key} 0 {}\n", rrd_lang::cformat::printf_e10(*v)),
        InfoValue::Count(c) => format!("{key} 1 {c}\n"),
        InfoValue::Str(s) => format!("{key} 2 {s}\n"),
        InfoValue::Int(i) => format!("{key} 3 {i}\n"),
        InfoValue::Blob(b) => format!("{key} 4 {}\n", b.len()),
    }
}

pub async fn info(daemon: &Arc<Daemon>, l: Listening, mut args: Args) -> Outcome {
    let Some(file) = args.next() else { return syntax_error(Command::Info).into() };
    let key = match key_of(daemon, l, &file) {
        Ok(k) => k,
        Err(r) => return r.into(),
    };
    let d = daemon.clone();
    blocking(move || {
        let entries = reader::with_merged(&d.cache, &key, |rrd| {
            info_of_header(&rrd.header, rrd.layout(), &key).map_err(|e| reader::ReadError(e.to_string()))
        })
        .map_err(|e| Reply::error(format!("RRD Error: {}", e.0)))?;
        let body: String = entries.iter().map(|e| info_line(&e.key, &e.value)).collect();
        Ok::<Reply, Reply>(Reply::ok(format!("Info for {key} follows"), body.into_bytes()))
    })
    .await
    .unwrap_or_else(|e| e)
    .into()
}

pub async fn first(daemon: &Arc<Daemon>, l: Listening, mut args: Args) -> Outcome {
    let Some(file) = args.next() else { return syntax_error(Command::First).into() };
    let key = match key_of(daemon, l, &file) {
        Ok(k) => k,
        Err(r) => return r.into(),
    };
    let Some(index_text) = args.next() else { return syntax_error(Command::First).into() };
    // rrdcached's `atoi`: glibc's, an int truncated from strtol's long.
    let index = rrd_lang::numparse::atoi(&index_text);
    if index < 0 {
        return Reply::error(format!("Invalid index specified ({index})")).into();
    }
    let d = daemon.clone();
    blocking(move || {
        let h = reader::with_merged(&d.cache, &key, |rrd| Ok(rrd.header.clone()))
            .map_err(|e| Reply::error(format!("RRD Error: {}", e.0)))?;
        let h = &h;
        let rra =
            h.rra().get(index as usize).ok_or_else(|| Reply::error("RRD Error: invalid rraindex number"))?;
        let step = i128::from(rra.pdp_count) * i128::from(h.pdp_step());
        let last_up = i128::from(h.live().last_up);
        let t = last_up - last_up % step.max(1) - (i128::from(rra.row_count) - 1) * step;
        if t < 1 {
            return Err(Reply::error("RRD Error: the first time stamp is before 1970"));
        }
        // rrdcached prints `(unsigned) t` with %lu.
        Ok(Reply::ok_line(format!("{}", t as u32)))
    })
    .await
    .unwrap_or_else(|e| e)
    .into()
}

pub async fn last(daemon: &Arc<Daemon>, l: Listening, mut args: Args) -> Outcome {
    let Some(file) = args.next() else { return syntax_error(Command::Last).into() };
    let key = match key_of(daemon, l, &file) {
        Ok(k) => k,
        Err(r) => return r.into(),
    };
    let d = daemon.clone();
    blocking(move || {
        let t =
            reader::last_update(&d.cache, &key).map_err(|e| Reply::error(format!("RRD Error: {}", e.0)))?;
        if t < 1 {
            return Err(Reply::error("Error: rrdcached: Invalid timestamp returned"));
        }
        Ok(Reply::ok_line(t.to_string()))
    })
    .await
    .unwrap_or_else(|e| e)
    .into()
}
