//! The daemon's options: rrdcached 1.7.2's command line (same letters, same
//! meanings, parsed as rrdcached parses them, with rrdtool's optparse,
//! `rrd_lang::optparse`, the CLI's parser too: `-w300` or `-w 300`,
//! clustered flags `-gF`, long names only in full, optparse's messages)
//! plus rrdscale's long options.
//!
//! Parsing is two-stage (as ripgrep's): [`parse_args`] reads the words into
//! a [`Config`] and checks what can be checked without touching the system;
//! [`Config::prepare`] then creates and canonicalizes directories the way
//! rrdcached does at startup. `-P`, `-s` and `-m` apply to the `-l` options
//! that FOLLOW them (and to the default socket when there is no `-l`), as in
//! rrdcached.
//!
//! `-b` and `--skip-past-updates` are listener options too (rrdcached's
//! `-b` is daemon-wide), so that one daemon can serve several trees: each
//! applies to the `-l`/`-L` options that follow it. One given after the
//! last `-l` (or with no `-l`: the default socket) also reaches every
//! listener that none came before. A listener that no `-b` precedes takes
//! the last `-b` of the line, the daemon's default base (which covers the
//! case above), so one `-b` anywhere reaches every listener, as in
//! rrdcached; `--skip-past-updates` between two `-l` reaches only the
//! listeners after it. `-B` stays daemon-wide: it confines each
//! listener's commands to its own base.
//!
//! Deliberately absent: `-a` (rrdcached's allocation chunk) is accepted and
//! ignored, there being no such knob here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rrd_journal::SyncPolicy;
use rrd_lang::optparse::{self, flag, short_flag, short_value, value, Spec};
use rrd_protocol::address::{AddressError, ListenAddress};
use rrd_protocol::{Permissions, DEFAULT_ADDRESS, DEFAULT_PORT};
use thiserror::Error;

pub use crate::log::Priority;

/// One socket to listen on, with what applies to it.
#[derive(Clone, Debug, PartialEq)]
pub struct ListenSpec {
    pub address: ListenAddress,
    pub permissions: Permissions,
    /// `-s`: the group owning a UNIX socket (which then gets mode 0760).
    pub socket_group: Option<u32>,
    /// `-m`: the mode of a UNIX socket.
    pub socket_mode: Option<u32>,
    /// `-b`: this listener's base directory (the last `-b` before it, else
    /// the last of the line; `None`: no `-b` at all, `/tmp`).
    pub base_dir: Option<PathBuf>,
    /// `--skip-past-updates` for this listener's connections.
    pub skip_past_updates: bool,
}

/// `-V` coarsened to tracing's levels, for the cluster mode's `tracing`
/// subscriber (crates/rrd-cluster); the single-node daemon filters by the
/// exact syslog priority, [`Config::log_priority`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Error,
    Warning,
    Info,
    Debug,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub listen: Vec<ListenSpec>,
    /// Whether `-l`/`-L` were given (else `listen` holds the default socket).
    pub listen_given: bool,
    /// What sockets passed by systemd allow: the last `-P`, or everything
    /// (rrdcached's `default_socket` after the options were read).
    pub passed_permissions: Permissions,
    /// Whether `-m` or `-s` were given (they do not apply to passed
    /// sockets, whose unit sets SocketMode=/SocketGroup=).
    pub socket_file_options: bool,
    /// `-w`: how long values may wait before their file is written.
    pub write_interval_secs: u64,
    /// `-z`: each file's write is delayed by a random 0..z seconds.
    pub write_jitter_secs: u64,
    /// `-f`: how often idle entries are dropped and the journal rotated.
    pub flush_interval_secs: u64,
    /// `-t`: flush threads.
    pub write_threads: usize,
    /// `-j`: journal directory (none: no journal, like rrdcached without -j).
    pub journal_dir: Option<PathBuf>,
    /// `-F`: write every pending value before exiting.
    pub flush_at_shutdown: bool,
    /// `-g`: do not fork.
    pub foreground: bool,
    /// `-b`: the daemon's default base directory, the last `-b` of the
    /// line: the default socket's and systemd's sockets' base, and where
    /// relative names of rrdcached's journal point. Each listener has its
    /// own ([`ListenSpec::base_dir`]).
    pub base_dir: Option<PathBuf>,
    /// `-B`: refuse files outside the listener's base directory.
    pub base_only: bool,
    /// `-R`: CREATE may create missing directories.
    pub allow_recursive_mkdir: bool,
    /// `-O`: CREATE never overwrites.
    pub no_overwrite: bool,
    /// `-p`
    pub pid_file: PathBuf,
    /// `-V`: the least urgent syslog priority logged (default `LOG_ERR`,
    /// as rrdcached).
    pub log_priority: Priority,
    /// `-V` for `tracing` users ([`LogLevel`]).
    pub log_level: LogLevel,
    /// `-o`: log here instead of syslog (or stderr in the foreground).
    pub log_file: Option<PathBuf>,
    /// `-U` / `-G`: drop to this user / group after setup.
    pub user: Option<u32>,
    pub group: Option<u32>,
    /// `--sync`: when a journal append is durable (default: before the ack).
    pub sync: SyncPolicy,
    /// `--max-pending`: values held in memory, beyond which updates are refused.
    pub max_pending_values: u64,
    /// `--max-pending-bytes`: bytes of pending value text held in memory,
    /// beyond which updates are refused (0: a quarter of the memory this
    /// process may use, at most 2 GiB; see [`default_pending_budget`]).
    pub max_pending_bytes: u64,
    /// `--max-kept-bytes`: memory for kept file headers (0: a sixteenth of
    /// the memory this process may use, at most 1 GiB; see
    /// [`default_kept_budget`]).
    pub max_kept_bytes: u64,
    /// `--skip-past-updates`: an UPDATE value whose time is not later than
    /// the file's newest (pending or written) is dropped and counted
    /// instead of ending the UPDATE with rrdtool's "illegal attempt to
    /// update" error. Decided per listener ([`ListenSpec::skip_past_updates`]);
    /// here: whether it was given at all, for the default socket and
    /// systemd's sockets.
    pub skip_past_updates: bool,
    /// `--keep-pages`: leave the pages a flush wrote in the page cache
    /// (default: fdatasync, then drop them, so flushes do not evict the
    /// pages other files' updates need).
    pub keep_pages: bool,
    /// `--metrics ADDR`: serve Prometheus text at `http://ADDR/metrics`
    /// (`HOST:PORT`, `[V6]:PORT`, or `:PORT` for every interface).
    pub metrics: Option<String>,
    /// `--tick-ms`: how often the scheduler looks for due files (tests use a
    /// short one).
    pub tick: Duration,
    /// `--segment-bytes`: rotate the journal when its segment passes this.
    pub segment_len_max: u64,
    /// `--idle-timeout-tcp`: close a TCP connection that sent nothing for
    /// this long (`None`: never).
    pub idle_timeout_tcp: Option<Duration>,
    /// `--idle-timeout-unix`: the same for UNIX-socket connections (off by
    /// default: local clients such as collectd and long-running librrd
    /// programs keep one connection open across long quiet intervals, and
    /// rrdcached never closes them).
    pub idle_timeout_unix: Option<Duration>,
    /// `--max-connections`: connections served at once (0: derived from the
    /// descriptor limit, see [`connections_max`]).
    pub max_connections: usize,
    /// `--unix-threads`: UNIX-socket connections served each on a thread
    /// of its own, at most this many at once (`crate::connection::own_thread`);
    /// 0: every connection on the runtime.
    pub unix_threads: usize,
    /// `--list-max-names`: the most names one LIST answers (it looks at
    /// no more than four times as many directory entries).
    pub list_max_names: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: Vec::new(),
            listen_given: false,
            passed_permissions: Permissions::all(),
            socket_file_options: false,
            write_interval_secs: 300,
            write_jitter_secs: 0,
            flush_interval_secs: 3600,
            write_threads: 4,
            journal_dir: None,
            flush_at_shutdown: false,
            foreground: false,
            base_dir: None,
            base_only: false,
            allow_recursive_mkdir: false,
            no_overwrite: false,
            pid_file: default_pid_file(),
            log_priority: Priority::Err,
            log_level: LogLevel::Error,
            log_file: None,
            user: None,
            group: None,
            sync: DEFAULT_SYNC,
            max_pending_values: 10_000_000,
            max_pending_bytes: 0,
            max_kept_bytes: 0,
            keep_pages: false,
            skip_past_updates: false,
            metrics: None,
            tick: Duration::from_millis(1000),
            segment_len_max: 64 << 20,
            idle_timeout_tcp: Some(Duration::from_secs(IDLE_TIMEOUT_TCP_SECS)),
            idle_timeout_unix: None,
            max_connections: 0,
            unix_threads: UNIX_THREADS,
            list_max_names: 1_000_000,
        }
    }
}

/// The default `--sync`: every update is written to the journal before it
/// is acknowledged (kill -9 loses nothing), and the journal is synced every
/// 100 ms, so a single client waiting for each reply is not capped by the
/// disk's sync latency (docs/journal.md, "The policies").
pub const DEFAULT_SYNC: SyncPolicy = SyncPolicy::Every(Duration::from_millis(100));

/// The default `--idle-timeout-tcp`: longer than any usual polling
/// interval (MRTG's and Munin's 5 minutes), short enough that abandoned or
/// half-open connections give their descriptors back.
pub const IDLE_TIMEOUT_TCP_SECS: u64 = 900;

/// The default `--unix-threads`: more than the clients a monitoring host
/// keeps connected at once (collectd holds one connection, a poller one
/// per worker; `rrdtool --daemon` connects per command), few enough that
/// their stacks and scheduling stay small beside the flush threads.
pub const UNIX_THREADS: usize = 256;

/// The most connections served at once when `--max-connections` is not
/// given: half of what the descriptor limit leaves after the flush workers'
/// open files and a reserve (journal, listeners, metrics, readers), since
/// a connection may hold one file open besides its socket (a first UPDATE,
/// a read). At least 16, at most 16,384.
pub fn connections_max(descriptors: u64, write_threads: usize) -> usize {
    const RESERVE: u64 = 64;
    let workers = write_threads as u64 * crate::flusher::OPEN_FILES_PER_WORKER as u64;
    let left = descriptors.saturating_sub(workers + RESERVE);
    (left / 2).clamp(16, 16_384) as usize
}

/// rrdcached's `$localstatedir/run/rrdcached.pid` for root; elsewhere a
/// place an ordinary user can write.
fn default_pid_file() -> PathBuf {
    let uid = rustix::process::geteuid().as_raw();
    if uid == 0 {
        PathBuf::from("/var/run/rrdcached.pid")
    } else {
        PathBuf::from(format!("/tmp/rrdcached-{uid}.pid"))
    }
}

/// Why the command line was refused; `status` is the exit status rrdcached
/// uses for the same mistake.
#[derive(Debug, Error)]
#[error("{message}")]
pub struct ConfigError {
    pub message: String,
    pub status: i32,
}

fn err(status: i32, message: impl Into<String>) -> ConfigError {
    ConfigError { message: message.into(), status }
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    Run(Box<Config>, Vec<String>),
    /// `-h`: print [`USAGE`] and exit with status 1 (as rrdcached).
    Help,
}

pub const USAGE: &str = "\
rrdscale daemon: an rrdcached 1.7.2 drop-in

Usage: rrdscale daemon [options]

Valid options are:
  -a <size>     Accepted for compatibility; ignored.
  -B            Restrict file access to paths within -b <dir>
                (each socket's own -b)
  -b <dir>      Base directory to change to.
                Applies to the following -l/-L sockets; a socket no -b
                precedes takes the last -b, so a single -b anywhere
                applies to every socket (as rrdcached's).
  -F            Always flush all updates at shutdown
  -f <seconds>  Interval in which to flush dead data.
  -G <group>    Unprivileged group used when running.
  -g            Do not fork and run in the foreground.
  -h, --help    Print this text (exit status 1, as rrdcached).
  -j <dir>      Directory in which to create the journal files.
  -L            Open sockets on all INET interfaces using default port.
  -l <address>  Socket address to listen to.
                Default: unix:/tmp/rrdcached.sock
  -m <mode>     File permissions (octal) of all following UNIX sockets
  -O            Do not allow CREATE commands to overwrite existing
                files, even if asked to.
  -o <file>     Log to given file instead of syslog.
  -P <perms>    Sets the permissions to assign to all following sockets
  -p <file>     Location of the PID-file.
  -R            Allow recursive directory creation within -b <dir>
  -s <id|name>  Group owner of all following UNIX sockets
                (the socket will also have read/write permissions for that group)
  -t <threads>  Number of write threads.
  -U <user>     Unprivileged user account used when running.
  -V <LOGLEVEL> Max syslog level to log with, with LOG_DEBUG being
                the maximum and LOG_EMERG minimum; see syslog.h
                (default LOG_ERR)
  -w <seconds>  Interval in which to write data.
  -z <delay>    Delay writes up to <delay> seconds to spread load

rrdscale options:
  --sync always|every:MS|none   When the journal reaches the disk (default every:100).
                                Every policy writes an update to the journal before
                                acknowledging it, so kill -9 loses nothing; on a machine
                                crash every:MS loses at most the last MS ms, always
                                nothing (an fdatasync before each acknowledgement,
                                shared by concurrent clients), none what the kernel
                                had not written back
  --max-pending N               Most values held in memory (default 10000000);
                                beyond it updates get an error reply
  --max-pending-bytes N         Most bytes of pending values held (K, M, G suffixes;
                                default: a quarter of the cgroup's or machine's memory,
                                at most 2G); beyond it updates get an error reply
  --max-kept-bytes N            Memory for kept file headers (default: a sixteenth of
                                the cgroup's or machine's memory, at most 1G); files
                                beyond it have their header read at each flush
  --keep-pages                  Keep the pages a flush wrote in the page cache
                                (default: release them after fdatasync)
  --skip-past-updates           Drop (and count: STATS UpdatesSkipped) UPDATE values
                                not later than the file's newest time instead of
                                failing the UPDATE; the others are taken, and an
                                UPDATE whose values were all dropped succeeds with
                                0 enqueued (default: rrdcached's error).
                                Applies to the following -l/-L sockets; given
                                after the last -l (or without -l), to every socket
  --metrics ADDR                Serve Prometheus text at http://ADDR/metrics
                                (HOST:PORT, [V6]:PORT, or :PORT for all interfaces)
  --tick-ms MS                  Scheduler period (default 1000)
  --segment-bytes N             Journal segment size before rotation (default 64 MiB)
  --idle-timeout-tcp SECS       Close TCP connections idle this long (default 900; 0: never)
  --idle-timeout-unix SECS      Close UNIX-socket connections idle this long
                                (default 0: never, as rrdcached)
  --max-connections N           Connections served at once (default: derived from the
                                descriptor limit, leaving room for RRD and journal files)
  --unix-threads N              UNIX-socket connections served each on a thread of its
                                own, as rrdcached does, at most N at once (default 256);
                                more, and TCP connections, are served by a few shared
                                threads. 0: every connection on the shared threads
  --list-max-names N            Most names one LIST answers (default 1000000)

Cluster mode (builds with the `cluster` feature; docs/cluster.md):
  --cluster HOST:PORT,...       Run as a node of a cluster sharing a replicated log on
                                these Kafka bootstrap servers; then also:
  --node-id ID                  This node's name, unique in the cluster (required)
  --cluster-name NAME           Names the cluster's topics (default rrdscale)
  --cluster-partitions N        Partitions of a new update topic (default 12)
  --advertise HOST:PORT         Where other nodes reach this one (default: its first
                                TCP listener)
  --cluster-snapshots on|off    Publish synced files for new owners (default on)

Under systemd (docs/systemd.md): listening sockets passed by socket activation
(LISTEN_FDS) are used instead of -l; READY=1 (once the journal is replayed),
STOPPING=1, STATUS= and watchdog pings go to NOTIFY_SOCKET; with -g and stderr
on the journal, log lines carry their priority; SIGHUP reopens the -o file.
";

/// [`USAGE`] as printed by a binary started as `program`: `rrdcached`
/// (the drop-in's name) says `rrdcached` where rrdcached does.
pub fn usage(program: &str) -> String {
    if program == "rrdcached" {
        USAGE
            .replacen(
                "rrdscale daemon: an rrdcached 1.7.2 drop-in",
                "rrdcached (rrdscale): an rrdcached 1.7.2 drop-in",
                1,
            )
            .replacen("Usage: rrdscale daemon [options]", "Usage: rrdcached [options]", 1)
    } else {
        USAGE.to_string()
    }
}

/// rrdcached 1.7.2's options (its `read_options` table: letters, and
/// `--help`), then ours (long only). Parsed by rrdtool's optparse
/// (`rrd_lang::optparse`), as rrdcached does: long names only in full.
const OPTIONS: &[Spec] = &[
    short_value('a', "a"),
    short_flag('B', "B"),
    short_value('b', "b"),
    short_flag('F', "F"),
    short_value('f', "f"),
    short_flag('g', "g"),
    short_value('G', "G"),
    flag(Some('h'), "help"),
    short_value('j', "j"),
    short_flag('L', "L"),
    short_value('l', "l"),
    short_value('m', "m"),
    short_flag('O', "O"),
    short_value('o', "o"),
    short_value('P', "P"),
    short_value('p', "p"),
    short_flag('R', "R"),
    short_value('s', "s"),
    short_value('t', "t"),
    short_value('U', "U"),
    short_value('V', "V"),
    short_value('w', "w"),
    short_value('z', "z"),
    value(None, "sync"),
    value(None, "max-pending"),
    value(None, "max-pending-bytes"),
    value(None, "max-kept-bytes"),
    flag(None, "keep-pages"),
    flag(None, "skip-past-updates"),
    value(None, "metrics"),
    value(None, "tick-ms"),
    value(None, "segment-bytes"),
    value(None, "idle-timeout-tcp"),
    value(None, "idle-timeout-unix"),
    value(None, "max-connections"),
    value(None, "unix-threads"),
    value(None, "list-max-names"),
];

/// rrdcached's `rrd_scaled_duration(arg, 1)`: seconds, or a count with a
/// unit suffix (`5m`).
fn duration_secs(what: &str, value: &str, status: i32) -> Result<u64, ConfigError> {
    rrd_lang::numparse::scaled_duration(value, 1)
        .map_err(|e| err(status, format!("Invalid {what} {value}: {e}")))
}

fn parse_sync(value: &str) -> Result<SyncPolicy, ConfigError> {
    match value {
        "always" => Ok(SyncPolicy::Always),
        "none" => Ok(SyncPolicy::None),
        v => match v.strip_prefix("every:").and_then(|ms| ms.parse::<u64>().ok()) {
            Some(ms) if ms > 0 => Ok(SyncPolicy::Every(Duration::from_millis(ms))),
            _ => Err(err(2, format!("Invalid --sync {v}: expected always, none or every:MS"))),
        },
    }
}

fn lookup_group(name: &str) -> Option<u32> {
    if let Ok(gid) = name.parse::<u32>() {
        return Some(gid);
    }
    rrd_sys::process::group_id(name)
}

fn lookup_user(name: &str) -> Option<u32> {
    if let Ok(uid) = name.parse::<u32>() {
        return Some(uid);
    }
    rrd_sys::process::user_id(name)
}

pub use rrd_engine::pagecache::memory_limit;

/// The header budget `--max-kept-bytes 0` (the default) means. Small: a
/// kept header saves decoding and one `pread` per flush, never a page read
/// (the flush rewrites the header page, so it must be in memory anyway), and
/// under a tight budget the page cache needs the memory more (measured: at
/// 2.5 KiB per file, a quarter of the budget for headers let the cgroup's
/// OOM killer stop the daemon during a cold flush).
pub fn default_kept_budget() -> u64 {
    (memory_limit() / 16).min(1 << 30)
}

/// The pending-values budget `--max-pending-bytes 0` (the default) means:
/// beyond it UPDATE gets an error reply instead of the process growing
/// into an out-of-memory kill.
pub fn default_pending_budget() -> u64 {
    (memory_limit() / 4).min(2 << 30)
}

/// A byte count with an optional binary suffix (`512K`, `64M`, `2G`).
fn parse_bytes(v: &str) -> Option<u64> {
    let (digits, shift) = match v.as_bytes().last()? {
        b'K' | b'k' => (&v[..v.len() - 1], 10),
        b'M' | b'm' => (&v[..v.len() - 1], 20),
        b'G' | b'g' => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// The listener options given so far: what the next `-l`/`-L` inherits
/// (rrdcached's `default_socket`, with our `-b` and `--skip-past-updates`).
struct Inherited {
    permissions: Permissions,
    socket_group: Option<u32>,
    socket_mode: Option<u32>,
    base_dir: Option<PathBuf>,
    skip_past: bool,
}

impl Default for Inherited {
    fn default() -> Inherited {
        Inherited {
            permissions: Permissions::none(),
            socket_group: None,
            socket_mode: None,
            base_dir: None,
            skip_past: false,
        }
    }
}

impl Inherited {
    /// `-P`'s commands; every command when no `-P` was given.
    fn permissions(&self) -> Permissions {
        if self.permissions.is_empty() {
            Permissions::all()
        } else {
            self.permissions
        }
    }

    /// A listener at `address` with these options.
    fn spec(&self, address: ListenAddress) -> ListenSpec {
        ListenSpec {
            address,
            permissions: self.permissions(),
            socket_group: self.socket_group,
            socket_mode: self.socket_mode,
            base_dir: self.base_dir.clone(),
            skip_past_updates: self.skip_past,
        }
    }
}

/// Reads the daemon's arguments (without the program and subcommand names).
/// Returns the configuration and the warnings rrdcached would print.
// A flat match over rrdcached's options.
#[allow(clippy::too_many_lines)]
pub fn parse_args(args: &[String]) -> Result<Parsed, ConfigError> {
    let mut c = Config::default();
    let mut warnings = Vec::new();
    // What the next -l inherits, and whether a --skip-past-updates came
    // after the last -l.
    let mut next = Inherited::default();
    let mut skip_trailing = false;
    // rrdcached acts on each option as optparse hands it out: the options
    // before a refused word count (their own mistakes come first).
    let (parsed, refused) = match optparse::parse(args, OPTIONS) {
        Ok(p) => (p, None),
        Err(e) => (e.before, Some(e.message)),
    };
    for (name, given) in parsed.opts {
        let value = given.unwrap_or_default();
        match name {
            "help" => return Ok(Parsed::Help),
            "sync" => c.sync = parse_sync(&value)?,
            "max-pending" => {
                let v = value;
                c.max_pending_values =
                    v.parse().ok().filter(|&n: &u64| n > 0).ok_or_else(|| {
                        err(2, format!("Invalid --max-pending {v}: expected a positive count"))
                    })?;
            }
            "max-pending-bytes" => {
                let v = value;
                c.max_pending_bytes = parse_bytes(&v).filter(|&n| n > 0).ok_or_else(|| {
                    err(2, format!("Invalid --max-pending-bytes {v}: expected a positive size"))
                })?;
            }
            "max-kept-bytes" => {
                let v = value;
                c.max_kept_bytes = parse_bytes(&v)
                    .ok_or_else(|| err(2, format!("Invalid --max-kept-bytes {v}: expected a size")))?;
            }
            "keep-pages" => c.keep_pages = true,
            "skip-past-updates" => {
                c.skip_past_updates = true;
                next.skip_past = true;
                skip_trailing = true;
            }
            "metrics" => c.metrics = Some(value),
            "tick-ms" => {
                let v = value;
                let ms: u64 = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| err(2, format!("Invalid --tick-ms {v}")))?;
                c.tick = Duration::from_millis(ms);
            }
            "segment-bytes" => {
                let v = value;
                c.segment_len_max = v
                    .parse()
                    .ok()
                    .filter(|&n| n >= 4096)
                    .ok_or_else(|| err(2, format!("Invalid --segment-bytes {v}: at least 4096")))?;
            }
            "idle-timeout-tcp" | "idle-timeout-unix" => {
                let v = value;
                let secs: u64 = v
                    .parse()
                    .map_err(|_| err(2, format!("Invalid --{name} {v}: expected seconds (0: never)")))?;
                let timeout = (secs > 0).then(|| Duration::from_secs(secs));
                if name == "idle-timeout-tcp" {
                    c.idle_timeout_tcp = timeout;
                } else {
                    c.idle_timeout_unix = timeout;
                }
            }
            "max-connections" => {
                let v = value;
                c.max_connections = v.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(|| {
                    err(2, format!("Invalid --max-connections {v}: expected a positive count"))
                })?;
            }
            "unix-threads" => {
                let v = value;
                c.unix_threads = v
                    .parse()
                    .map_err(|_| err(2, format!("Invalid --unix-threads {v}: expected a count (0: none)")))?;
            }
            "list-max-names" => {
                let v = value;
                c.list_max_names = v.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(|| {
                    err(2, format!("Invalid --list-max-names {v}: expected a positive count"))
                })?;
            }
            "B" => c.base_only = true,
            "F" => c.flush_at_shutdown = true,
            "g" => c.foreground = true,
            "L" => {
                c.listen.push(next.spec(ListenAddress::Tcp { host: String::new(), port: DEFAULT_PORT }));
                skip_trailing = false;
            }
            "O" => c.no_overwrite = true,
            "R" => c.allow_recursive_mkdir = true,
            "a" => {
                if value.parse::<i64>().map_or(true, |n| n <= 0) {
                    return Err(err(10, format!("Invalid allocation size: {value}")));
                }
            }
            "b" => {
                next.base_dir = Some(PathBuf::from(&value));
                c.base_dir = Some(PathBuf::from(value));
            }
            "f" => c.flush_interval_secs = duration_secs("flush interval", &value, 3)?,
            "w" => c.write_interval_secs = duration_secs("write interval", &value, 2)?,
            "z" => c.write_jitter_secs = duration_secs("write jitter", &value, 2)?,
            "G" => {
                c.group = Some(lookup_group(&value).ok_or_else(|| {
                    err(5, format!("read_options: couldn't map \"{value}\" to a group, Sorry"))
                })?)
            }
            "U" => {
                c.user = Some(lookup_user(&value).ok_or_else(|| {
                    err(5, format!("read_options: couldn't map \"{value}\" to a user, Sorry"))
                })?)
            }
            "j" => c.journal_dir = Some(PathBuf::from(value)),
            "l" => {
                let address = ListenAddress::parse(&value)
                    .map_err(|e: AddressError| err(2, format!("rrdcached: {e}")))?;
                c.listen.push(next.spec(address));
                skip_trailing = false;
            }
            "m" => {
                let mode = u32::from_str_radix(&value, 8)
                    .ok()
                    .filter(|&m| m <= 0o7777)
                    .ok_or_else(|| err(5, format!("read_options: Invalid file mode \"{value}\".")))?;
                next.socket_mode = Some(mode);
            }
            "o" => c.log_file = Some(PathBuf::from(value)),
            "P" => {
                next.permissions = Permissions::parse(&value).map_err(|name| {
                    err(
                        4,
                        format!(
                            "read_options: Adding permission \"{name}\" to socket failed. Most likely, \
                             this permission doesn't exist. Check your command line."
                        ),
                    )
                })?;
            }
            "p" => c.pid_file = PathBuf::from(value),
            "s" => {
                next.socket_group = Some(lookup_group(&value).ok_or_else(|| {
                    err(5, format!("read_options: couldn't map \"{value}\" to a group, Sorry"))
                })?)
            }
            "t" => {
                c.write_threads = value
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| err(1, format!("Invalid thread count: -t {value}")))?;
            }
            "V" => {
                // rrdcached keeps the level it had (LOG_ERR unless an
                // earlier -V changed it), whatever its message says.
                match Priority::from_name(&value) {
                    Some(p) => c.log_priority = p,
                    None => warnings
                        .push(format!("Unrecognized log level '{value}'; falling back to default LOG_ERR.")),
                }
                c.log_level = match c.log_priority {
                    Priority::Emerg | Priority::Alert | Priority::Crit | Priority::Err => LogLevel::Error,
                    Priority::Warning => LogLevel::Warning,
                    Priority::Notice | Priority::Info => LogLevel::Info,
                    Priority::Debug => LogLevel::Debug,
                };
            }
            other => unreachable!("option {other} is in OPTIONS but not handled"),
        }
    }
    if let Some(message) = refused {
        return Err(err(1, message));
    }
    // rrdcached ignores words that are not options; a daemon started with
    // one was most likely started wrongly, so we refuse it.
    if let Some(word) = parsed.operands.first() {
        return Err(err(1, format!("unexpected argument '{word}'")));
    }
    c.listen_given = !c.listen.is_empty();
    c.passed_permissions = next.permissions();
    c.socket_file_options = next.socket_group.is_some() || next.socket_mode.is_some();
    // Listeners no -b precedes take the last one (the default base);
    // a --skip-past-updates after the last -l reaches those none preceded.
    for l in &mut c.listen {
        if l.base_dir.is_none() {
            l.base_dir.clone_from(&c.base_dir);
        }
        l.skip_past_updates |= skip_trailing;
    }
    if c.listen.is_empty() {
        // The default socket: the options given anywhere (its base is the
        // last -b, as `next`'s is now).
        c.listen.push(next.spec(ListenAddress::parse(DEFAULT_ADDRESS).expect("the default address parses")));
    }
    if c.flush_interval_secs < 2 * c.write_interval_secs {
        warnings.push("WARNING: flush interval (-f) should be at least 2x write interval (-w) !".into());
    }
    if c.write_jitter_secs > c.write_interval_secs {
        warnings.push("WARNING: write delay (-z) should NOT be larger than write interval (-w) !".into());
    }
    if c.base_only && c.base_dir.is_none() {
        warnings.push(
            "WARNING: -B does not make sense without -b!\n  Consult the rrdcached documentation".into(),
        );
    }
    if c.allow_recursive_mkdir && !c.base_only {
        warnings.push(
            "WARNING: -R does not make sense without -B!\n  Consult the rrdcached documentation".into(),
        );
    }
    if c.journal_dir.is_none() {
        // Without a journal, pending values exist only in memory.
        c.flush_at_shutdown = true;
    }
    Ok(Parsed::Run(Box::new(c), warnings))
}

impl Config {
    /// Creates each base directory (every listener's) and canonicalizes
    /// them and the journal directory as rrdcached does: a base directory reached through a
    /// symbolic link is refused (status 5), because confinement compares
    /// resolved paths; a journal directory that does not exist is refused
    /// (status 6, "Unable to resolve journal path"), not created.
    pub fn prepare(&mut self) -> Result<(), ConfigError> {
        // Each distinct -b once (its messages once), in line order.
        let mut prepared: Vec<(PathBuf, PathBuf)> = Vec::new();
        let bases = self.listen.iter().filter_map(|l| l.base_dir.as_ref()).chain(self.base_dir.as_ref());
        for base in bases {
            if !prepared.iter().any(|(given, _)| given == base) {
                prepared.push((base.clone(), prepare_base(base)?));
            }
        }
        let real = |given: &Option<PathBuf>| {
            given.as_ref().map(|g| prepared.iter().find(|(p, _)| p == g).expect("prepared above").1.clone())
        };
        for l in &mut self.listen {
            l.base_dir = real(&l.base_dir);
        }
        self.base_dir = real(&self.base_dir);
        if let Some(dir) = &self.journal_dir {
            // Not created, as rrdcached: a mistyped -j must not start a
            // daemon on an empty journal while the real one waits,
            // unreplayed (the init script and rrdcached-service create
            // the configured one).
            let real = std::fs::canonicalize(dir).map_err(|e| {
                err(6, format!("Unable to resolve journal path ({},{})", dir.display(), os_text(&e)))
            })?;
            self.journal_dir = Some(real);
        }
        Ok(())
    }
}

/// Creates a base directory and returns its canonical name, refusing one
/// reached through a symbolic link (status 5), as rrdcached does.
fn prepare_base(base: &Path) -> Result<PathBuf, ConfigError> {
    std::fs::create_dir_all(base).map_err(|e| {
        err(3, format!("Failed to create base directory '{}': {}", base.display(), os_text(&e)))
    })?;
    let trimmed = trim_trailing_slashes(base);
    if trimmed.as_os_str().is_empty() {
        return Err(err(4, format!("Invalid base directory: {}", base.display())));
    }
    let real = std::fs::canonicalize(&trimmed).map_err(|e| {
        err(5, format!("Failed to canonicalize the base directory '{}': {}", base.display(), os_text(&e)))
    })?;
    if real != trimmed {
        return Err(err(
            5,
            format!(
                "Base directory (-b) resolved via file system links!\n\
                 Please consult rrdcached '-b' documentation!\n\
                 Consider specifying the real directory ({})",
                real.display()
            ),
        ));
    }
    Ok(real)
}

fn trim_trailing_slashes(p: &Path) -> PathBuf {
    let s = p.to_string_lossy();
    let t = s.trim_end_matches('/');
    PathBuf::from(if t.is_empty() && s.starts_with('/') { "/" } else { t })
}

pub(crate) fn os_text(e: &std::io::Error) -> String {
    rrd_lang::ctext::io_text(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rrd_protocol::Command;

    fn parse(words: &[&str]) -> (Config, Vec<String>) {
        let args: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        match parse_args(&args).unwrap() {
            Parsed::Run(c, w) => (*c, w),
            Parsed::Help => panic!("help"),
        }
    }

    #[test]
    fn getopt_forms_and_defaults() {
        let (c, _) = parse(&["-g", "-w300", "-z", "5m", "-f1h", "-t", "8", "-gF"]);
        assert!(c.foreground && c.flush_at_shutdown);
        assert_eq!((c.write_interval_secs, c.write_jitter_secs, c.flush_interval_secs), (300, 300, 3600));
        assert_eq!(c.write_threads, 8);
        assert_eq!(c.listen.len(), 1);
        assert_eq!(c.listen[0].address, ListenAddress::Unix("/tmp/rrdcached.sock".into()));
        assert_eq!(c.listen[0].permissions, Permissions::all());
        assert_eq!(c.sync, SyncPolicy::Every(Duration::from_millis(100)));
        let (c, _) = parse(&["--sync", "always", "--idle-timeout-tcp", "0", "--idle-timeout-unix=30"]);
        assert_eq!(c.sync, SyncPolicy::Always);
        assert_eq!((c.idle_timeout_tcp, c.idle_timeout_unix), (None, Some(Duration::from_secs(30))));
        assert_eq!(connections_max(1024, 4), 224, "half of 1024 - 4 x 128 - 64");
        assert_eq!(connections_max(100, 4), 16, "never below 16");
        assert_eq!(connections_max(1 << 20, 4), 16_384, "never above 16,384");
        assert!(!Config::default().skip_past_updates);
        assert!(parse(&["--skip-past-updates"]).0.skip_past_updates);
        assert_eq!(Config::default().unix_threads, 256);
        assert_eq!(parse(&["--unix-threads", "0"]).0.unix_threads, 0);
        assert_eq!(parse(&["--unix-threads=16"]).0.unix_threads, 16);
        assert!(parse_args(&["--unix-threads".to_string(), "-1".to_string()]).is_err());
        let (c, _) = parse(&["--max-pending-bytes", "64M", "--keep-pages"]);
        assert_eq!(c.max_pending_bytes, 64 << 20);
        assert!(c.keep_pages);
        assert_eq!(Config::default().max_pending_bytes, 0, "0: derived from the memory limit");
        assert!((1..=2 << 30).contains(&default_pending_budget()));
        assert!(default_kept_budget() < default_pending_budget());
        assert!(!Config::default().keep_pages);
        let (c, _) = parse(&["-j", "/x", "--sync=every:50", "--max-pending", "7"]);
        assert!(!c.flush_at_shutdown, "with a journal, -F is off by default");
        assert_eq!(c.sync, SyncPolicy::Every(Duration::from_millis(50)));
        assert_eq!(c.max_pending_values, 7);
    }

    /// -P applies to the sockets that follow it, as in rrdcached(1)'s example.
    #[test]
    fn permissions_apply_to_following_sockets() {
        let (c, _) = parse(&["-l", "unix:/some/path", "-P", "FLUSH,PENDING", "-l", "10.0.0.1"]);
        assert_eq!(c.listen[0].permissions, Permissions::all());
        assert!(c.listen[1].permissions.allows(Command::Flush));
        assert!(!c.listen[1].permissions.allows(Command::Update));
        assert!(c.listen[1].permissions.allows(Command::Quit));
        assert!(c.listen_given && !c.socket_file_options);
        assert!(c.passed_permissions.allows(Command::Flush), "the last -P: for sockets systemd passes");
        assert!(!c.passed_permissions.allows(Command::Update));
        let (c, _) = parse(&["-g"]);
        assert!(!c.listen_given);
        assert_eq!(c.passed_permissions, Permissions::all());
        let (c, _) = parse(&["-m", "0660", "-L"]);
        assert!(c.socket_file_options);
        assert_eq!(c.listen[0].socket_mode, Some(0o660));
        assert_eq!(c.listen[0].address, ListenAddress::Tcp { host: String::new(), port: DEFAULT_PORT });
    }

    /// `-b` applies to the listeners that follow it; listeners no `-b`
    /// precedes take the last one (so one `-b` anywhere reaches all, as
    /// rrdcached's daemon-wide `-b`); `Config::base_dir` is the last.
    #[test]
    fn base_directories_apply_to_following_listeners() {
        let bases = |words: &[&str]| {
            let (c, _) = parse(words);
            let per: Vec<Option<String>> =
                c.listen.iter().map(|l| l.base_dir.as_ref().map(|b| b.display().to_string())).collect();
            (per, c.base_dir.map(|b| b.display().to_string()))
        };
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            bases(&["-b", "/a", "-l", "unix:/s1", "-l", "unix:/s2"]),
            (vec![s("/a"), s("/a")], s("/a"))
        );
        assert_eq!(
            bases(&["-l", "unix:/s1", "-l", "unix:/s2", "-b", "/a"]),
            (vec![s("/a"), s("/a")], s("/a"))
        );
        assert_eq!(
            bases(&["-l", "unix:/s1", "-b", "/a", "-l", "unix:/s2"]),
            (vec![s("/a"), s("/a")], s("/a"))
        );
        assert_eq!(
            bases(&["-b", "/a", "-l", "unix:/s1", "-b", "/b", "-l", "unix:/s2"]),
            (vec![s("/a"), s("/b")], s("/b"))
        );
        assert_eq!(
            bases(&["-l", "unix:/s1", "-b", "/a", "-l", "unix:/s2", "-b", "/b"]),
            (vec![s("/b"), s("/a")], s("/b")),
            "a trailing -b reaches the listeners no -b preceded"
        );
        assert_eq!(
            bases(&["-b", "/a", "-b", "/b"]),
            (vec![s("/b")], s("/b")),
            "the default socket: the last"
        );
        assert_eq!(bases(&["-g"]), (vec![None], None));
        assert_eq!(bases(&["-l", "unix:/s1", "-L"]), (vec![None, None], None));
    }

    /// `--skip-past-updates` applies to the listeners that follow it, and,
    /// given after the last one (or without `-l`), to every listener.
    #[test]
    fn skip_past_updates_applies_to_following_listeners() {
        let skips = |words: &[&str]| {
            let (c, _) = parse(words);
            (c.listen.iter().map(|l| l.skip_past_updates).collect::<Vec<_>>(), c.skip_past_updates)
        };
        assert_eq!(skips(&["-l", "unix:/s1", "-l", "unix:/s2"]), (vec![false, false], false));
        assert_eq!(
            skips(&["--skip-past-updates", "-l", "unix:/s1", "-l", "unix:/s2"]),
            (vec![true, true], true)
        );
        assert_eq!(
            skips(&["-l", "unix:/s1", "-l", "unix:/s2", "--skip-past-updates"]),
            (vec![true, true], true)
        );
        assert_eq!(
            skips(&["-l", "unix:/s1", "--skip-past-updates", "-l", "unix:/s2"]),
            (vec![false, true], true)
        );
        assert_eq!(skips(&["-l", "unix:/s1", "--skip-past-updates", "-L"]), (vec![false, true], true));
        assert_eq!(skips(&["--skip-past-updates"]), (vec![true], true), "the default socket");
        assert_eq!(skips(&[]), (vec![false], false));
    }

    /// Each distinct base is made and canonicalized; a base reached
    /// through a link is refused, whichever listener's it is.
    #[test]
    fn every_listener_base_is_prepared() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let (a, b) = (real.join("a"), real.join("b/"));
        let words =
            ["-l", "unix:/s1", "-b", a.to_str().unwrap(), "-l", "unix:/s2", "-b", b.to_str().unwrap()];
        let (mut c, _) = parse(&words);
        c.prepare().unwrap();
        assert_eq!(c.listen[0].base_dir.as_deref(), Some(real.join("b").as_path()));
        assert_eq!(c.listen[1].base_dir.as_deref(), Some(a.as_path()));
        assert_eq!(c.base_dir.as_deref(), Some(real.join("b").as_path()));
        assert!(a.is_dir() && real.join("b").is_dir());
        std::os::unix::fs::symlink(&a, real.join("link")).unwrap();
        let link = real.join("link");
        let (mut c, _) = parse(&["-b", link.to_str().unwrap(), "-l", "unix:/s1", "-b", a.to_str().unwrap()]);
        assert_eq!(c.prepare().unwrap_err().status, 5);
    }

    /// `--help` names every option the parser takes (rrdcached's letters
    /// and our long options) and the cluster mode's options.
    #[test]
    fn usage_names_every_option() {
        for spec in OPTIONS {
            let shown = match (spec.long_form, spec.short) {
                (false, Some(c)) => format!("  -{c} "),
                (_, _) => format!("--{} ", spec.long),
            };
            assert!(USAGE.contains(&shown), "--help does not list {shown:?}");
        }
        for cluster in [
            "--cluster ",
            "--node-id ",
            "--cluster-name ",
            "--cluster-partitions ",
            "--advertise ",
            "--cluster-snapshots ",
        ] {
            assert!(USAGE.contains(cluster), "--help does not list {cluster:?}");
        }
        assert!(usage("rrdscale daemon").contains("Usage: rrdscale daemon [options]"));
        let as_rrdcached = usage("rrdcached");
        assert!(as_rrdcached.contains("Usage: rrdcached [options]"), "{as_rrdcached}");
        assert!(!as_rrdcached.contains("rrdscale daemon"), "{as_rrdcached}");
    }

    /// -V: syslog's names, rrdcached's default (LOG_ERR), an unknown name
    /// keeps the level with rrdcached's warning.
    #[test]
    fn log_level_is_a_syslog_priority() {
        assert_eq!(parse(&[]).0.log_priority, Priority::Err);
        assert_eq!(parse(&["-V", "LOG_NOTICE"]).0.log_priority, Priority::Notice);
        assert_eq!(parse(&["-V", "LOG_INFO"]).0.log_priority, Priority::Info);
        assert_eq!(parse(&["-VLOG_DEBUG"]).0.log_level, LogLevel::Debug);
        let (c, warnings) = parse(&["-V", "LOG_WARNING", "-V", "debug"]);
        assert_eq!(c.log_priority, Priority::Warning);
        assert_eq!(warnings, ["Unrecognized log level 'debug'; falling back to default LOG_ERR."]);
    }

    #[test]
    fn mistakes_are_refused_with_rrdcached_statuses() {
        let bad = |w: &[&str]| parse_args(&w.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err();
        assert_eq!(bad(&["-P", "FLUSH,NOPE"]).status, 4);
        assert_eq!(bad(&["-t", "0"]).status, 1);
        assert_eq!(bad(&["-w", "x"]).status, 2);
        assert_eq!(bad(&["-m", "99"]).status, 5);
        assert_eq!(bad(&["-q"]).status, 1);
        assert_eq!(bad(&["--sync", "sometimes"]).status, 2);
        assert!(matches!(parse_args(&["-h".to_string()]), Ok(Parsed::Help)));
    }
}
