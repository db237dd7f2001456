//! `LIST [RECURSIVE] /<path>`: RRD files under the base directory.
//!
//! The listing itself is `rrdtool list` 1.7.2's walk (`rrd_engine::list`).
//! The daemon then drops entries that are symbolic links pointing outside
//! the base directory, as rrdcached does.
//!
//! Unlike rrdcached, the walk stays in the base directory and ends: a
//! directory reached through a symbolic link is descended into only when
//! it resolves beneath the base, a loop (a directory that is its own
//! ancestor, by device and inode) is not followed, a path that leads out of
//! the base through a link is refused, and a walk past `--list-max-names`
//! names (four times as many directory entries looked at) or [`TIME_MAX`],
//! or whose client left, stops with an error line. For a tree without such links the names
//! and their order are rrdcached's.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rrd_engine::list::{rrd_list_bounded, ListError, WalkError, WalkRules, WalkStop};
use rrd_protocol::{Command, Reply};

use super::{blocking, syntax_error, Args, Outcome, Peer};
use crate::state::{Daemon, Listening};

/// Directory entries one LIST may look at, per name it may answer.
const VISITS_PER_NAME: u64 = 4;
/// Longest one LIST walks.
pub const TIME_MAX: Duration = Duration::from_secs(60);

/// The error line for a walk that stopped early.
fn stopped(full: &str, why: &WalkStop) -> Reply {
    let what = match why {
        WalkStop::Names(n) => format!("more than {n} names"),
        WalkStop::Visits(n) => format!("more than {n} directory entries"),
        WalkStop::Time => format!("not finished within {} s", TIME_MAX.as_secs()),
        WalkStop::Stopped => "the client went away".to_string(),
    };
    Reply::error(format!("List {full}: {what} (the daemon's limit); list a subdirectory"))
}

/// Whether the directory `full` names (for a pattern or a single file,
/// the directory holding it) leads out of the base directory through a
/// symbolic link. A path that does not resolve is left to the walk's
/// own error.
fn leaves_base(full: &str, real_base: &Path) -> bool {
    if full.contains("..") {
        // rrdtool's walk refuses it, with its own message.
        return false;
    }
    let single = full.find(".rrd").is_some_and(|i| i + 4 == full.len());
    let pattern = full.contains(['*', '?']);
    let dir = if single || pattern { full.rsplit_once('/').map_or(full, |(d, _)| d) } else { full };
    if pattern && dir.contains(['*', '?']) {
        // Wildcards in directories: glob(3) follows every link, loops
        // included, beyond any bound (see docs/protocol.md).
        return true;
    }
    std::fs::canonicalize(dir).is_ok_and(|real| !real.starts_with(real_base))
}

fn run_blocking(daemon: &Daemon, l: Listening, mut args: Args, peer: Peer) -> Reply {
    // One -b anywhere gives every listener a base directory.
    if daemon.config.base_dir.is_none() {
        return Reply::error("No base directory defined");
    }
    let paths = daemon.paths_of(&l);
    let base = paths.base().to_string_lossy().into_owned();
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
    if daemon.config.base_only && paths.resolve_dir(&full).is_err() {
        return Reply::error(format!("Cannot read: {full}"));
    }
    let real_base = paths.base();
    if leaves_base(&full, real_base) {
        return Reply::error(format!("Cannot read: {full}"));
    }
    let stop = || peer.gone();
    let rules = WalkRules {
        beneath: real_base,
        names_max: daemon.config.list_max_names,
        visits_max: (daemon.config.list_max_names as u64).saturating_mul(VISITS_PER_NAME),
        deadline: Instant::now() + TIME_MAX,
        stop: &stop,
    };
    let names = match rrd_list_bounded(recursive, full.as_bytes(), Some(&rules)) {
        Ok(n) => n,
        Err(WalkError::List(ListError(why))) => return Reply::error(format!("List {full}: {why}")),
        Err(WalkError::Stopped(why)) => {
            crate::log!(Notice, "LIST {full} stopped: {why:?}");
            return stopped(&full, &why);
        }
    };
    let single = full.find(".rrd").is_some_and(|i| i + 4 == full.len());
    let mut body = Vec::new();
    for current in names {
        let current_s = String::from_utf8_lossy(&current).into_owned();
        let absolute = if single { full.clone() } else { format!("{full}/{current_s}") };
        if daemon.config.base_only && paths.resolve(&absolute).is_err() {
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

pub async fn run(daemon: &Arc<Daemon>, l: Listening, args: Args, peer: Peer) -> Outcome {
    let d = daemon.clone();
    blocking(move || run_blocking(&d, l, args, peer)).await.into()
}
