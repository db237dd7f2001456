//! `TUNE <file> <count> <arg>...` (rrdcached 1.8 and later): `rrdtool tune`
//! run by the daemon on one of its files.
//!
//! The line is what librrd's `rrdc_tune` sends: the file, then the number
//! of arguments, then the client's whole tune command line (`tune`, the
//! file name as the user typed it, the options and structural arguments,
//! `--daemon ADDR` included), each field escaped as every field is. As in
//! rrdcached, the file operated on is the first field; the arguments are
//! read the way `rrdtool tune` reads its own (`rrd_engine::tune::CommandLine`,
//! `--daemon` accepted and ignored, the first operand skipped as the file).
//!
//! Replies, rrdcached's: `0 Success`, `-1 Got error <why>`, `-1 Invalid
//! argument count specified (<n>)`, `-1 <file>: Permission denied`, and
//! the usage line when a field is missing.
//!
//! Ours: the file's pending values are written first (rrdcached 1.9 leaves
//! that to the client, which sends FLUSH before TUNE), so a change of
//! structure never meets values cached for the old one; an argument count
//! that differs from the arguments sent is refused (rrdcached reads past
//! its array then); the file is opened through the `-B` confinement; and
//! the header the cache keeps for the file is dropped, so that the next
//! flush reads the tuned one (after a flush in flight, if any, ended).

use std::path::Path;
use std::sync::Arc;

use rrd_engine::tune::{CommandLine, Tuner};
use rrd_protocol::{Command, Reply};

use super::flush::{flush_failure, flush_key, wait_flushed};
use super::{access_denied, blocking, syntax_error, Args, Outcome};
use crate::paths::Paths;
use crate::state::{Daemon, Listening};

/// C's `atoi` on the argument count (what rrdcached reads it with):
/// leading blanks, a sign, digits; anything else ends the number, and no
/// digits is 0. `None` when the number does not fit an `int`.
fn atoi(text: &str) -> Option<i64> {
    let t = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = digits.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(digits.len());
    let mut n: i64 = 0;
    for b in digits[..end].bytes() {
        n = n.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
        if n > i64::from(i32::MAX) + 1 {
            return None;
        }
    }
    let n = if negative { -n } else { n };
    i32::try_from(n).ok().map(i64::from)
}

pub async fn run(daemon: &Arc<Daemon>, l: Listening, mut args: Args) -> Outcome {
    let Some(file) = args.next() else { return syntax_error(Command::Tune).into() };
    let key = match daemon.paths_of(&l).resolve(&file) {
        Ok(k) => k,
        Err(d) => return access_denied(&d.shown).into(),
    };
    let Some(count) = args.next() else { return syntax_error(Command::Tune).into() };
    let argv = args.rest();
    let Some(argc) = atoi(&count).filter(|&n| n >= 0) else {
        return Reply::error(format!("Invalid argument count specified ({count})")).into();
    };
    if argc as usize != argv.len() {
        return Reply::error(format!(
            "Invalid argument count specified ({argc}): {} argument(s) follow it",
            argv.len()
        ))
        .into();
    }
    crate::log!(Info, "rrdtune request for {key}");
    if flush_key(daemon, &key).await {
        if let Some(why) = flush_failure(daemon, &key) {
            return Reply::error(format!("Got error cannot write the pending values of {key} first: {why}"))
                .into();
        }
    }
    let d = daemon.clone();
    let k = key.clone();
    let result = blocking(move || tune_file(&d, &k, &argv)).await;
    forget_header(daemon, &key).await;
    match result {
        Ok(()) => Reply::ok_line("Success").into(),
        Err(why) => Reply::error(format!("Got error {why}")).into(),
    }
}

/// Drops the header the cache keeps for `key`, which the tune changed
/// under it, so that the next flush reads the file's. A flush in flight
/// took its header before the drop and puts it back when it ends (a
/// stamp alone may not tell: a write within one tick of the file system's
/// clock leaves mtime and ctime where they were): that flush is waited
/// for and the header dropped again. A later flush starts from the file.
async fn forget_header(daemon: &Daemon, key: &str) {
    for _ in 0..2 {
        let in_flight = match daemon.cache.shard(key).get_mut(key) {
            None => return,
            Some(e) => e.forget_header(),
        };
        match in_flight {
            None => return,
            Some(target) => wait_flushed(daemon, key, target).await,
        }
    }
}

/// Tunes `key` with the client's command line `argv` (`argv[0]` is the
/// command's name).
fn tune_file(daemon: &Daemon, key: &str, argv: &[String]) -> Result<(), String> {
    let path = Path::new(key);
    let mut tuner = Tuner::open_in(&daemon.root, path).map_err(|e| match e {
        rrd_engine::Error::Open { source, .. } if Paths::is_escape(&source) => {
            format!("{key}: Permission denied (outside the base directory)")
        }
        e => e.to_string(),
    })?;
    let mut line = CommandLine::new(argv.get(1..).unwrap_or_default());
    // A structural change rewrites the file: its temporary file is made
    // and renamed relative to its directory opened beneath the base (-B),
    // so a directory swapped for a link out of it is refused.
    line.apply_in(&mut tuner, &daemon.root, path).map_err(|e| match e {
        rrd_engine::Error::Io { source, .. } if Paths::is_escape(&source) => {
            format!("{key}: Permission denied (outside the base directory)")
        }
        e => e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::atoi;

    #[test]
    fn the_count_is_read_as_atoi() {
        assert_eq!(atoi("3"), Some(3));
        assert_eq!(atoi(" +7x"), Some(7));
        assert_eq!(atoi("-2"), Some(-2));
        assert_eq!(atoi("x"), Some(0));
        assert_eq!(atoi(""), Some(0));
        assert_eq!(atoi("2147483647"), Some(i32::MAX as i64));
        assert_eq!(atoi("2147483648"), None);
        assert_eq!(atoi("99999999999999999999999"), None);
    }
}
