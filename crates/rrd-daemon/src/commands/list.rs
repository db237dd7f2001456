//! `LIST [RECURSIVE] /<path>`: RRD files under the base directory.
//!
//! The listing itself is `rrdtool list` 1.7.2's walk (`rrd_engine::list`).
//! The daemon then drops entries that are symbolic links pointing outside
//! the base directory, as rrdcached does.

use std::sync::Arc;

use rrd_engine::list::{rrd_list, ListError};
use rrd_protocol::{Command, Reply};

use super::{blocking, syntax_error, Args, Outcome};
use crate::state::Daemon;

fn run_blocking(daemon: &Daemon, mut args: Args) -> Reply {
    let Some(base) = daemon.config.base_dir.as_ref() else {
        return Reply::error("No base directory defined");
    };
    let base = base.to_string_lossy().into_owned();
    let Some(first) = args.next() else { return syntax_error(Command::List) };
    let (recursive, name) = if first.starts_with('/') {
        (false, first)
    } else if first == "RECURSIVE" {
        match args.next() {
            Some(n) => (true, n),
            None => return syntax_error(Command::List),
        }
    } else {
        return syntax_error(Command::List);
    };
    let full = format!("{base}{}{name}", if name.starts_with('/') { "" } else { "/" });
    if daemon.config.base_only && daemon.paths.resolve_dir(&full).is_err() {
        return Reply::error(format!("Cannot read: {full}"));
    }
    let names = match rrd_list(recursive, full.as_bytes()) {
        Ok(n) => n,
        Err(ListError(why)) => return Reply::error(format!("List {full}: {why}")),
    };
    let single = full.find(".rrd").is_some_and(|i| i + 4 == full.len());
    let mut body = Vec::new();
    for current in names {
        let current_s = String::from_utf8_lossy(&current).into_owned();
        let absolute = if single { full.clone() } else { format!("{full}/{current_s}") };
        if daemon.config.base_only && daemon.paths.resolve(&absolute).is_err() {
            continue;
        }
        let meta = match std::fs::symlink_metadata(&absolute) {
            Ok(m) => m,
            Err(e) => return Reply::error(format!("stat {absolute}: {}", rrd_lang::ctext::io_text(&e))),
        };
        let target = if meta.file_type().is_symlink() {
            match std::fs::read_link(&absolute) {
                Ok(t) => t.to_string_lossy().into_owned(),
                Err(e) => {
                    return Reply::error(format!("readlink {absolute}: {}", rrd_lang::ctext::io_text(&e)))
                }
            }
        } else {
            absolute
        };
        // A link must point inside the base directory.
        if !target.starts_with(&base) {
            continue;
        }
        body.extend_from_slice(&current);
        body.push(b'\n');
    }
    Reply::ok("RRDs", body)
}

pub async fn run(daemon: &Arc<Daemon>, args: Args) -> Outcome {
    let d = daemon.clone();
    blocking(move || run_blocking(&d, args)).await.into()
}
