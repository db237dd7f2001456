//! `UPDATE <file> <time:value[:value...]> ...`: values into the cache and
//! the journal; the reply waits until the journal has them.
//!
//! rrdcached's rules, kept: the first UPDATE of a file checks that it is a
//! readable, writable RRD and reads its last update time; every value must
//! start with a number followed by `:` and be later than the file's newest
//! (pending or written) value; values are taken in order until one fails,
//! and those before the failure stay accepted even though the reply is the
//! error (so the journal holds exactly the accepted prefix). An UPDATE with
//! a file and no values makes the cache entry and answers "No values
//! updated.".
//!
//! Ours: a refusal when `--max-pending` values or `--max-pending-bytes` of
//! them are already held, and when the journal has failed. Under
//! `--skip-past-updates`, a value not later than the file's newest time is
//! dropped and counted (STATS `UpdatesSkipped`) instead of being the error,
//! the values after it are still taken, and only the values taken are
//! journaled; an UPDATE whose values were all dropped succeeds with `0
//! errors, enqueued 0 value(s).` (a client such as collectd takes any error
//! reply as a failure of the connection).

use std::fs::File;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rrd_engine::batch::KeptHeader;
use rrd_lang::numparse::rrd_strtod;
use rrd_protocol::{Command, Reply};

use super::{access_denied, blocking, syntax_error, Args, Outcome};
use crate::cache::{unix_now, Entry};
use crate::config::os_text;
use crate::journaler::Ticket;
use crate::paths::Paths;
use crate::state::{Daemon, Listening};
use crate::stats::Stats;

/// Checks a file rrdcached's way before its first value is cached, and
/// returns its last update time and its header (kept in the entry, so the
/// first flush need not read it again).
///
/// `opened`: the file, when a look-ahead opened it already
/// (crate::prefetch).
///
/// One open and one `fstat`: the open for reading and writing is the
/// access check (rrdcached's `access(R_OK|W_OK)`), goes through the `-B`
/// confinement ([`crate::state::Daemon::root`]), and the `fstat` answers
/// "regular file?", the length and the header's stamp at once.
pub fn open_entry(daemon: &Daemon, key: &str, opened: Option<File>) -> Result<(f64, KeptHeader), Reply> {
    let path = Path::new(key);
    let file = match opened.map_or_else(|| daemon.root.open(path, true), Ok) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Reply::error(format!("No such file: {key}")));
        }
        Err(e) if Paths::is_escape(&e) => return Err(access_denied(key)),
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {
            return Err(Reply::error(format!("Not a regular file: {key}")));
        }
        Err(e) => return Err(Reply::error(format!("Cannot read/write {key}: {}", os_text(&e)))),
    };
    let meta = file
        .metadata()
        .map_err(|e| Reply::error(format!("stat failed with error {}.", e.raw_os_error().unwrap_or(0))))?;
    if !meta.is_file() {
        return Err(Reply::error(format!("Not a regular file: {key}")));
    }
    let kept =
        KeptHeader::read_open(&file, path, &meta).map_err(|e| Reply::error(format!("RRD Error: {e}")))?;
    let last_up = kept.header.live().last_up;
    if last_up < 1 {
        return Err(Reply::error("Error: rrdcached: Invalid timestamp returned"));
    }
    Ok((last_up as f64, kept))
}

/// Takes an UPDATE's `values` for the file `key` into the cache: the
/// entry's shard locked once, the entry made from `fresh` (what
/// [`open_entry`] found) if it does not exist, the pending-values budget
/// checked when there are values, the values taken ([`accept`]) and the
/// file's flush timer set. `None` when the entry does not exist and
/// `fresh` is `None`: the caller opens the file (outside any lock) and
/// calls again.
pub fn update_values<'a, I>(
    daemon: &Daemon,
    skip_past: bool,
    key: &str,
    fresh: &mut Option<(f64, KeptHeader)>,
    values: I,
    now: i64,
) -> Option<Result<Accepted, Reply>>
where
    I: Iterator<Item = &'a str> + Clone,
{
    let cache = &daemon.cache;
    let (hash, number, mut shard) = cache.shard_hashed(key);
    // Made by us (fresh), or re-made after a FORGET raced with us.
    let made = || fresh.take().map(|(last_up, kept)| cache.new_entry(last_up, kept, now));
    let (stored, entry) = shard.get_or_insert_hashed(hash, key, made)?;
    if values.clone().next().is_none() {
        return Some(Err(Reply::error("No values updated.")));
    }
    if let Err(refusal) = admit(daemon) {
        return Some(Err(refusal));
    }
    let accepted = accept(daemon, skip_past, number, key, entry, values, now);
    if let Some(due) = accepted.timer_due {
        cache.add_timer(due, stored.clone());
    }
    Some(Ok(accepted))
}

/// How far beyond the daemon's clock an update's time may be (ten years):
/// beyond it the time is a mistake, and accepting it would block the file.
pub const FUTURE_SECS_MAX: i64 = 10 * 366 * 86_400;

/// Whether `value` starts with a time followed by `:`, and that time.
pub fn value_time(value: &str) -> Option<f64> {
    let (stamp, used) = rrd_strtod(value);
    (used > 0 && value.as_bytes().get(used) == Some(&b':')).then_some(stamp)
}

/// Why one value of an UPDATE is refused; its text is the reply (rrdcached's
/// words, and ours for what rrdcached would take and regret).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ValueRefusal {
    /// A carriage return or other control byte is never part of a number;
    /// stored, it would be dropped silently at the flush.
    #[error("illegal character 0x{byte:02x} in value '{}'", value.escape_debug())]
    ControlByte { byte: u8, value: String },
    #[error("Cannot find timestamp in '{0}'!")]
    NoTime(String),
    /// rrdcached takes it, and the file then refuses every real update
    /// until that time.
    #[error(
        "illegal attempt to update using time {0:.6}: more than {days} days in the future",
        days = FUTURE_SECS_MAX / 86_400
    )]
    FarFuture(f64),
    /// Not later than the file's newest value (pending or written).
    #[error(
        "illegal attempt to update using time {time:.6} when last update time is {last:.6} \
         (minimum one second step)"
    )]
    NotLater { time: f64, last: f64 },
}

/// rrdcached's rules for one value of an UPDATE (plus ours above): its
/// time, if the value may follow a newest value at `last` on a daemon whose
/// clock reads `now`. The one definition of an acceptable value: the
/// daemon's cache and the cluster's front end both ask it.
pub fn check_value(value: &str, last: f64, now: i64) -> Result<f64, ValueRefusal> {
    if let Some(byte) = value.bytes().find(u8::is_ascii_control) {
        return Err(ValueRefusal::ControlByte { byte, value: value.to_string() });
    }
    match value_time(value) {
        None => Err(ValueRefusal::NoTime(value.to_string())),
        Some(time) if !time.is_finite() || time > (now + FUTURE_SECS_MAX) as f64 => {
            Err(ValueRefusal::FarFuture(time))
        }
        Some(time) if time <= last => Err(ValueRefusal::NotLater { time, last }),
        Some(time) => Ok(time),
    }
}

/// The refusals that come before any value is looked at: a poisoned
/// journal, and the pending-values budget (`--max-pending`,
/// `--max-pending-bytes`).
pub fn admit(daemon: &Daemon) -> Result<(), Reply> {
    let cache = &daemon.cache;
    let refused = |r: Reply| {
        Stats::add(&daemon.stats.updates_refused, 1);
        Err(r)
    };
    if daemon.journal.is_poisoned() {
        return refused(Reply::error(
            "Journal failure: no updates are accepted until the daemon is restarted",
        ));
    }
    if cache.pending_bytes.load(Ordering::Relaxed) >= daemon.config.max_pending_bytes {
        return refused(Reply::error(format!(
            "Too many pending bytes (limit {}): update refused, try again later",
            daemon.config.max_pending_bytes
        )));
    }
    if cache.pending_values.load(Ordering::Relaxed) >= daemon.config.max_pending_values {
        return refused(Reply::error(format!(
            "Too many pending values (limit {}): update refused, try again later",
            daemon.config.max_pending_values
        )));
    }
    Ok(())
}

/// What taking one UPDATE's values did.
pub struct Accepted {
    pub count: usize,
    /// Values dropped by `--skip-past-updates`.
    pub skipped: usize,
    /// Why the value after the accepted ones was refused.
    pub error: Option<String>,
    /// The journal record of the accepted values (none when `count == 0`).
    pub ticket: Option<Ticket>,
    /// The entry's first pending value came now: its flush is due then.
    pub timer_due: Option<i64>,
}

impl Accepted {
    /// rrdcached's reply for it.
    pub fn reply(&self) -> Reply {
        match &self.error {
            Some(e) => Reply::error(e.clone()),
            None if self.count == 0 && self.skipped == 0 => Reply::error("No values updated."),
            None => Reply::ok_line(format!("errors, enqueued {} value(s).", self.count)),
        }
    }
}

/// Takes `values` in order into `entry` (whose shard the caller holds
/// locked) until one fails, and stages the journal record of those taken
/// while the lock is still held (the journal's order for a file is the
/// cache's order).
///
/// When the entry had no pending values before, the caller must add its
/// timer ([`Accepted::timer_due`]) before releasing the shard lock.
pub fn accept<'a, I>(
    daemon: &Daemon,
    skip_past: bool,
    shard_number: usize,
    key: &str,
    entry: &mut Entry,
    values: I,
    now: i64,
) -> Accepted
where
    I: Iterator<Item = &'a str> + Clone,
{
    let mark = entry.mark();
    let mut error = None;
    // `--skip-past-updates` drops (and counts) a value not later than the
    // newest (when the client's listener has it); the journal gets the
    // values taken, read back from the entry.
    let mut skipped = 0;
    let line = values.clone();
    for value in values {
        match check_value(value, entry.last_stamp(), now) {
            Ok(stamp) => entry.take_value(stamp, value),
            Err(ValueRefusal::NotLater { .. }) if skip_past => skipped += 1,
            Err(refusal) => {
                error = Some(refusal.to_string());
                break;
            }
        }
    }
    if skipped > 0 {
        Stats::add(&daemon.stats.updates_skipped, skipped as u64);
    }
    let count = entry.taken_count(mark);
    if count == 0 {
        return Accepted { count, skipped, error, ticket: None, timer_due: None };
    }
    // Read before staging: the record lands in this segment or a later one.
    let seq = daemon.journal.current_seq();
    // Without a skip, the values taken are the line's first `count`: the
    // record is framed from the line, whose bytes are in cache, rather than
    // read back from the file's buffer, whose end is a cache miss in a
    // BATCH over many files (the same bytes either way).
    let ticket = if skipped == 0 {
        daemon.journal.submit_update(shard_number, key, line.take(count))
    } else {
        daemon.journal.submit_update(shard_number, key, entry.taken_since(mark))
    };
    if let Ticket::Failed(why) = &ticket {
        // Refused before it reached the journal (a record too large for a
        // frame, or a stopped journal): not acknowledged, so not kept.
        entry.roll_back(mark);
        return Accepted {
            count: 0,
            skipped,
            error: Some(super::journal_error(why)),
            ticket: None,
            timer_due: None,
        };
    }
    let timer_due = entry.settle_pending(&daemon.cache, mark, now, seq);
    Accepted { count, skipped, error, ticket: Some(ticket), timer_due }
}

pub async fn run(daemon: &Arc<Daemon>, l: Listening, mut args: Args) -> Outcome {
    let Some(file) = args.next() else { return syntax_error(Command::Update).into() };
    Stats::add(&daemon.stats.updates_received, 1);
    let key = match daemon.paths_of(&l).resolve(&file) {
        Ok(k) => k,
        Err(d) => return access_denied(&d.shown).into(),
    };
    let values = args.rest();
    let values = || values.iter().map(String::as_str);
    let now = unix_now();
    let mut fresh = None;
    let outcome = match update_values(daemon, l.skip_past_updates, &key, &mut fresh, values(), now) {
        Some(outcome) => outcome,
        None => {
            let (d, k) = (daemon.clone(), key.clone());
            fresh = match blocking(move || open_entry(&d, &k, None)).await {
                Ok(found) => Some(found),
                Err(reply) => return reply.into(),
            };
            update_values(daemon, l.skip_past_updates, &key, &mut fresh, values(), now)
                .expect("made from the fresh header")
        }
    };
    match outcome {
        Err(reply) => reply.into(),
        Ok(accepted) => {
            let reply = accepted.reply();
            match accepted.ticket {
                Some(ticket) => Outcome::AfterCommit(ticket, reply),
                None => reply.into(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refused_value_gets_its_reply_text() {
        let now = 1_700_000_000;
        let refused = |v: &str, last: f64| check_value(v, last, now).unwrap_err().to_string();
        assert_eq!(check_value("1000:1", 999.0, now), Ok(1000.0));
        assert_eq!(refused("1000:1\r", 0.0), "illegal character 0x0d in value '1000:1\\r'");
        assert_eq!(refused("N:1", 0.0), "Cannot find timestamp in 'N:1'!");
        assert_eq!(
            refused("1000:1", 1000.0),
            "illegal attempt to update using time 1000.000000 when last update time is 1000.000000 \
             (minimum one second step)"
        );
        assert_eq!(
            refused("4000000000:1", 0.0),
            "illegal attempt to update using time 4000000000.000000: more than 3660 days in the future"
        );
    }

    #[test]
    fn a_value_needs_a_time_and_a_colon() {
        assert_eq!(value_time("1000:1:2"), Some(1000.0));
        assert_eq!(value_time("1000.5:U"), Some(1000.5));
        assert_eq!(value_time("1e3:1"), Some(1000.0));
        assert_eq!(value_time("1000"), None);
        assert_eq!(value_time("N:1"), None);
        assert_eq!(value_time(""), None);
        assert_eq!(value_time("1000@1"), None);
    }
}
