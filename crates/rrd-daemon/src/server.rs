//! Startup, the listeners, signals and shutdown, in rrdcached's order:
//! options → systemd's variables taken (`systemd`) → PID file → listening
//! sockets, the ones systemd passed or else `-l`'s (errors still reach the
//! terminal) → fork (unless `-g`) → logging → PID written → privileges
//! dropped → journal replayed → flush threads → accepting connections →
//! `READY=1` to systemd.
//!
//! Signals, as rrdcached(1): TERM and INT stop the daemon, writing pending
//! values first only with `-F` (or without a journal); USR1 stops it after
//! writing everything; USR2 stops it without writing (the journal keeps the
//! values). HUP reopens the `-o` log file (rrdcached ignores it). Stopping:
//! `STOPPING=1` to systemd, listeners close (UNIX socket files we bound
//! removed; systemd's are left to it), connections close, the flush threads
//! drain if writing was asked for, the journal is synced (and emptied when
//! everything was written and synced), the PID file removed.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rrd_protocol::{ListenAddress, Permissions};
use thiserror::Error;

use crate::cache::Cache;
use crate::config::{self, Config, ListenSpec, Parsed};
use crate::connection;
use crate::flusher::{self, Scheduler};
use crate::journaler::Journaler;
use crate::log;
use crate::replay;
use crate::state::{Daemon, Listening};
use crate::stats::Stats;
use crate::systemd;

/// Why the daemon could not start; `status` is the process exit status.
#[derive(Debug, Error)]
#[error("{message}")]
pub struct RunError {
    pub message: String,
    pub status: i32,
}

fn fail(status: i32, message: impl Into<String>) -> RunError {
    RunError { message: message.into(), status }
}

pub enum BoundKind {
    /// A UNIX listener and, when we bound it, its file (removed at stop;
    /// `None` for a socket systemd passed: its file is systemd's).
    Unix(std::os::unix::net::UnixListener, Option<PathBuf>),
    Tcp(std::net::TcpListener),
}

pub struct Bound {
    pub kind: BoundKind,
    pub permissions: Permissions,
    /// The `-l` it was bound for (`None`: a socket systemd passed, which
    /// has the default socket's settings).
    pub spec: Option<ListenSpec>,
}

fn bind_unix(path: &str, spec: &ListenSpec) -> Result<Bound, RunError> {
    let path = PathBuf::from(path);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            fail(1, format!("Failed to create socket directory '{}': {}", dir.display(), config::os_text(&e)))
        })?;
    }
    // We own the PID file, so no live daemon uses this socket.
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path).map_err(|e| {
        fail(1, format!("rrdcached: bind({}) failed: {}.", path.display(), config::os_text(&e)))
    })?;
    if let Some(gid) = spec.socket_group {
        let chown = rustix::fs::chown(&path, None, Some(rustix::fs::Gid::from_raw(gid)))
            .map_err(std::io::Error::from);
        let chmod = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o760));
        if let Err(e) = chown.and(chmod) {
            eprintln!("rrdcached: failed to set socket group permissions ({e})");
        }
    }
    if let Some(mode) = spec.socket_mode {
        if let Err(e) = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)) {
            eprintln!("rrdcached: failed to set socket file permissions ({mode:o}): {e}");
        }
    }
    listener.set_nonblocking(true).map_err(|e| fail(1, e.to_string()))?;
    Ok(Bound {
        kind: BoundKind::Unix(listener, Some(path)),
        permissions: spec.permissions,
        spec: Some(spec.clone()),
    })
}

fn bind_tcp(host: &str, port: u16, spec: &ListenSpec) -> Result<Vec<Bound>, RunError> {
    use std::net::ToSocketAddrs;
    let shown = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let candidates: Vec<std::net::SocketAddr> = if host.is_empty() {
        vec![
            format!("[::]:{port}").parse().expect("literal"),
            format!("0.0.0.0:{port}").parse().expect("literal"),
        ]
    } else {
        (host, port)
            .to_socket_addrs()
            .map_err(|e| fail(1, format!("rrdcached: getaddrinfo({host}) failed: {e}")))?
            .collect()
    };
    let mut bound = Vec::new();
    let mut last_error = None;
    for addr in candidates {
        match std::net::TcpListener::bind(addr) {
            Ok(l) => {
                l.set_nonblocking(true).map_err(|e| fail(1, e.to_string()))?;
                bound.push(Bound {
                    kind: BoundKind::Tcp(l),
                    permissions: spec.permissions,
                    spec: Some(spec.clone()),
                });
            }
            // A dual-stack [::] already covers IPv4.
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && !bound.is_empty() => {}
            Err(e) => last_error = Some(e),
        }
    }
    if bound.is_empty() {
        let why = last_error.map_or("no address".into(), |e| config::os_text(&e));
        return Err(fail(1, format!("rrdcached: bind({shown}) failed: {why}.")));
    }
    Ok(bound)
}

/// Binds every `-l` address (public for the cluster mode, crates/rrd-cluster).
pub fn bind_all(specs: &[ListenSpec]) -> Result<Vec<Bound>, RunError> {
    let mut all = Vec::new();
    for spec in specs {
        match &spec.address {
            ListenAddress::Unix(path) => all.push(bind_unix(path, spec)?),
            ListenAddress::Tcp { host, port } => all.extend(bind_tcp(host, *port, spec)?),
        }
    }
    if all.is_empty() {
        return Err(fail(1, "rrdcached: FATAL: cannot open any listen sockets"));
    }
    Ok(all)
}

/// Takes the sockets systemd passed (socket activation) as our listeners,
/// instead of `-l`'s, as rrdcached 1.7 does: each gets the permissions of
/// the last `-P` (all commands without one); `-m` and `-s` do not apply
/// (the socket unit's SocketMode= and SocketGroup= set those). Returns the
/// listeners and, for the log once it is open, a description of each.
fn adopt_passed(passed: &systemd::ListenFds, config: &Config) -> Result<(Vec<Bound>, Vec<String>), RunError> {
    use rrd_sys::sdlisten::Listener;
    let adopted = rrd_sys::sdlisten::adopt_listen_fds(passed.count)
        .map_err(|e| fail(1, format!("rrdcached: FATAL: socket activation: {e}")))?;
    let mut bound = Vec::new();
    let mut shown = Vec::new();
    for (a, name) in adopted.into_iter().zip(&passed.names) {
        let (kind, address) = match a.listener {
            Listener::Unix(l) => {
                let address = match l.local_addr() {
                    Ok(addr) => match addr.as_pathname() {
                        Some(p) => format!("unix:{}", p.display()),
                        None => "unix (abstract or unnamed)".to_string(),
                    },
                    Err(e) => format!("unix (address unknown: {e})"),
                };
                (BoundKind::Unix(l, None), address)
            }
            Listener::Tcp(l) => {
                let address =
                    l.local_addr().map_or_else(|e| format!("tcp (address unknown: {e})"), |a| a.to_string());
                (BoundKind::Tcp(l), address)
            }
        };
        shown.push(format!("fd {} ({name}): {address}", a.fd));
        bound.push(Bound { kind, permissions: config.passed_permissions, spec: None });
    }
    Ok((bound, shown))
}

/// Creates the PID file, or takes over a stale one (rrdcached's rules).
fn open_pid_file(path: &Path) -> Result<std::fs::File, RunError> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(fail(
                1,
                format!("rrdcached: can't create pid file '{}' ({})", path.display(), config::os_text(&e)),
            ))
        }
        Err(_) => {}
    }
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let pid: i32 = text.trim().parse().unwrap_or(0);
    if pid <= 0 {
        return Err(fail(1, "FATAL: PID file is corrupted"));
    }
    let alive =
        rustix::process::Pid::from_raw(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
    if pid != std::process::id() as i32 && alive {
        return Err(fail(1, format!("FATAL: Another rrdcached daemon is running?? (pid {pid})")));
    }
    eprintln!("rrdcached: removed stale PID file (no rrdcached on pid {pid})\nrrdcached: starting normally.");
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| fail(1, format!("FATAL: Faild to truncate stale PID file. ({})", config::os_text(&e))))
}

/// Forks into the background (`rrd_sys::process::daemonize`). Must run before any
/// thread exists.
fn daemonize() -> Result<(), RunError> {
    rrd_sys::process::daemonize().map_err(|e| fail(1, e))
}

/// Starts the log (`log`): `-o` file, else standard error in the
/// foreground (with priority prefixes when it is the journal's stream),
/// else syslog; filtered by `-V`.
fn init_logging(config: &Config) -> Result<(), RunError> {
    let sink = if let Some(file) = &config.log_file {
        log::Sink::File(file.clone())
    } else if config.foreground {
        log::Sink::Stderr { journal: log::stderr_is_journal() }
    } else {
        log::Sink::Syslog
    };
    log::init(config.log_priority, sink).map_err(|e| {
        let file = config.log_file.as_deref().unwrap_or(Path::new("")).display().to_string();
        fail(6, format!("Failed to open log file '{file}': {}", config::os_text(&e)))
    })
}

fn drop_privileges(config: &Config) -> Result<(), RunError> {
    if let Some(gid) = config.group {
        if rustix::process::getegid().as_raw() != gid && !rrd_sys::process::setgid(gid) {
            return Err(fail(1, format!("daemonize: failed to setgid({gid})")));
        }
    }
    if let Some(uid) = config.user {
        if rustix::process::geteuid().as_raw() != uid && !rrd_sys::process::setuid(uid) {
            return Err(fail(1, format!("daemonize: failed to setuid({uid})")));
        }
    }
    Ok(())
}

/// The name usage text and messages give the program: `rrdcached` when
/// the binary was started under that name (the drop-in), else
/// `rrdscale daemon`.
fn program_name() -> String {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let base = Path::new(&argv0).file_name().unwrap_or_default().to_string_lossy().into_owned();
    if base == "rrdcached" {
        base
    } else {
        "rrdscale daemon".into()
    }
}

/// `rrdscale daemon ARGS`: runs until a signal stops it.
pub fn run(args: &[String], out: &mut dyn Write) -> Result<(), RunError> {
    let mut config = match config::parse_args(args).map_err(|e| fail(e.status, e.message))? {
        Parsed::Help => {
            let _ = out.write_all(config::usage(&program_name()).as_bytes());
            let _ = out.flush();
            return Err(fail(1, ""));
        }
        Parsed::Run(c, warnings) => {
            for w in warnings {
                eprintln!("{w}");
            }
            *c
        }
    };
    // Read (and removed from the environment) while this is the only thread.
    let env = systemd::take_env();
    config.prepare().map_err(|e| fail(e.status, e.message))?;
    // Before anything reads, replays or deletes a journal file (and before
    // the PID file, so a refused start leaves nothing behind); held until
    // the process exits, across the fork (crate::dirlock).
    let journal_lock = lock_journal(&config)?;
    let mut pid_file = open_pid_file(&config.pid_file)?;
    let removing_pid_file = |e: RunError| {
        let _ = std::fs::remove_file(&config.pid_file);
        e
    };
    let passed = env.listen.clone().map_err(|e| fail(1, format!("rrdcached: FATAL: socket activation: {e}")));
    let passed = passed.map_err(removing_pid_file)?;
    let (listeners, adopted) = match &passed {
        Some(p) => adopt_passed(p, &config).map_err(removing_pid_file)?,
        None => (bind_all(&config.listen).map_err(removing_pid_file)?, Vec::new()),
    };
    // Bound before forking, like the other listeners, so that a bad address
    // reaches the terminal.
    let metrics_listener = config
        .metrics
        .as_deref()
        .map(crate::metrics::bind)
        .transpose()
        .map_err(|e| removing_pid_file(fail(1, e)))?;
    // Before the fork too: a log file that cannot be opened is reported on
    // the terminal (rrdcached opens it while reading its options).
    init_logging(&config).map_err(removing_pid_file)?;
    if !config.foreground {
        daemonize()?;
    }
    let _ = writeln!(pid_file, "{}", std::process::id());
    drop(pid_file);
    if let Some(lock) = &journal_lock {
        lock.record_pid();
    }
    drop_privileges(&config)?;
    log!(Info, "starting up");
    if !adopted.is_empty() {
        log!(
            Notice,
            "socket activation: serving the {} socket(s) systemd passed: {}",
            adopted.len(),
            adopted.join(", ")
        );
        if config.listen_given {
            log!(Notice, "socket activation: the -l/-L addresses are not opened (as rrdcached)");
        }
        if config.socket_file_options {
            log!(Info, "socket activation: -m and -s do not apply to passed sockets (the socket unit's SocketMode= and SocketGroup= do)");
        }
    }
    match env.notify {
        Some(Ok(address)) => {
            if let Err(e) = systemd::set_notify(address) {
                log!(
                    Warning,
                    "NOTIFY_SOCKET: cannot open a datagram socket ({e}); systemd will not be notified"
                );
            }
        }
        Some(Err(why)) => log!(Warning, "{why}; systemd will not be notified"),
        None => {}
    }
    let pid_path = config.pid_file.clone();
    let forked = !config.foreground;
    // A failure is printed on stderr by the caller; log it where stderr is
    // not the log.
    let log_failure = forked || config.log_file.is_some();
    let result = start(config, listeners, metrics_listener, Notify { forked, watchdog: env.watchdog });
    let _ = std::fs::remove_file(&pid_path);
    if let Err(e) = &result {
        if log_failure {
            log!(Err, "{}", e.message);
        }
        systemd::status(&format!("failed: {}", e.message));
    }
    log!(Info, "goodbye");
    log::flush_repeats(true);
    drop(journal_lock);
    result
}

/// Locks the `-j` directory for this process (none without `-j`).
fn lock_journal(config: &Config) -> Result<Option<crate::dirlock::JournalLock>, RunError> {
    let Some(dir) = &config.journal_dir else { return Ok(None) };
    crate::dirlock::JournalLock::acquire(dir).map(Some).map_err(|e| fail(1, format!("rrdcached: FATAL: {e}")))
}

/// What `start` tells systemd beyond readiness.
struct Notify {
    /// We forked (no `-g`): READY=1 names our pid (MAINPID=).
    forked: bool,
    /// The watchdog period (half of WATCHDOG_USEC).
    watchdog: Option<Duration>,
}

/// Opens the journal (replaying it, then taking over rrdcached's journal
/// files: `rrdcached_journal`), returns the journaler and the replayed
/// records' oldest segment.
fn open_journal(
    config: &Config,
    stats: &Arc<crate::stats::Stats>,
) -> Result<(Journaler, Option<(rrd_journal::ReplayReport, u64)>), RunError> {
    let Some(dir) = &config.journal_dir else { return Ok((Journaler::disabled(), None)) };
    let mut report = rrd_journal::replay(dir).map_err(|e| fail(6, format!("journal replay failed: {e}")))?;
    if let Some((seq, off, len)) = report.torn_tail {
        log!(
            Warning,
            "journal segment {seq}: torn tail (incomplete last record) of {len} bytes at offset {off} truncated (never acknowledged under --sync always)"
        );
    }
    if let Some((seq, off, len)) = report.unused_tail {
        log!(
            Info,
            "journal segment {seq}: {len} bytes of reserved space after the last record (offset {off}) given back"
        );
    }
    crate::stats::Stats::add(&stats.journal_damaged_regions, report.corrupt.len() as u64);
    crate::stats::Stats::add(&stats.journal_damaged_bytes, report.damaged_bytes());
    for d in &report.corrupt {
        let after = if d.resync_gave_up {
            "the rest of the segment was not searched (resynchronisation work bound)".to_string()
        } else if d.records_after == 0 {
            "no valid record follows it in the segment; the segment is left as it is".to_string()
        } else {
            format!("the {} record(s) after it were kept", d.records_after)
        };
        log!(
            Err,
            "journal segment {}: damaged range at offset {} ({}): {} bytes skipped, {after}",
            d.seq,
            d.offset,
            d.what,
            d.skipped_bytes
        );
    }
    let mut journal = match journal_faults() {
        None => rrd_journal::Journal::open(dir, config.sync),
        Some(io) => rrd_journal::Journal::open_with(dir, config.sync, io),
    }
    .map_err(|e| fail(6, format!("cannot open journal: {e}")))?;
    // Switching from rrdcached: its journals' pending values into ours (synced), after ours.
    // Relative names there point to the default base (the last -b).
    let paths = crate::paths::Paths::new(config.base_dir.as_deref(), config.base_only);
    crate::rrdcached_journal::migrate(dir, &paths, &mut journal, &mut report).map_err(|e| fail(6, e))?;
    let first = report.segments.first().copied().unwrap_or(journal.seq());
    let journaler = Journaler::start(
        journal,
        dir.clone(),
        stats.clone(),
        Duration::from_secs(config.flush_interval_secs),
        config.segment_len_max,
    );
    Ok((journaler, Some((report, first))))
}

/// Journal I/O faults planned by a test ([`inject_journal_faults`]).
/// Compiled only with the `fault-injection` feature, which only tests
/// enable: a release binary has no switch (variable or option) that makes
/// its journal fail.
#[cfg(feature = "fault-injection")]
static JOURNAL_FAULTS: std::sync::OnceLock<(String, Arc<rrd_journal::fault::FaultPlan>)> =
    std::sync::OnceLock::new();

/// Makes the journal of the next [`run`] in this process fail as `spec`
/// says (`write@3=ENOSPC,sync@5=EIO`: `rrd_journal::fault::FaultPlan::parse`).
/// For end-to-end fault tests, which run the daemon in a child process of
/// their own; it says so loudly in the log.
#[cfg(feature = "fault-injection")]
pub fn inject_journal_faults(spec: &str) -> Result<(), String> {
    let plan = rrd_journal::fault::FaultPlan::parse(spec)?;
    JOURNAL_FAULTS
        .set((spec.to_string(), Arc::new(plan)))
        .map_err(|_| "journal faults already set".to_string())
}

fn journal_faults() -> Option<Arc<dyn rrd_journal::io::JournalIo>> {
    #[cfg(feature = "fault-injection")]
    if let Some((spec, plan)) = JOURNAL_FAULTS.get() {
        use rrd_journal::fault::FaultyIo;
        log!(Warning, "journal I/O faults are injected ({spec}): a test build, never in production");
        let io = Arc::new(rrd_journal::io::MappedIo::default());
        return Some(Arc::new(FaultyIo::new(io, plan.clone())));
    }
    None
}

fn start(
    config: Config,
    listeners: Vec<Bound>,
    metrics_listener: Option<std::net::TcpListener>,
    notify: Notify,
) -> Result<(), RunError> {
    // The runtime first, so that SIGHUP is handled (not fatal) from here on,
    // a long journal replay included; it is acted on once serving starts.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("rrdscale-daemon")
        .build()
        .map_err(|e| fail(1, format!("cannot start the runtime: {e}")))?;
    let hangup = {
        let _entered = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .map_err(|e| fail(1, format!("cannot handle SIGHUP: {e}")))?
    };
    let stats = Arc::new(crate::stats::Stats::default());
    if config.journal_dir.is_some() {
        systemd::status("replaying the journal");
    }
    let (journaler, replayed) = open_journal(&config, &stats)?;
    let daemon = Arc::new(Daemon::with_stats(config, journaler, stats));
    if let Some((report, first)) = replayed {
        systemd::status(&format!("journal read: {} records; applying them", report.records.len()));
        let s = replay::apply(&daemon, &report, first);
        let text = format!(
            "journal replayed: {} records, {} values pending, {} already written, {} for unreadable files",
            s.records, s.values_applied, s.values_skipped, s.records_unreadable
        );
        log!(Notice, "{text}");
        systemd::status(&text);
    }
    let threads = spawn_flush_threads(&daemon);
    if let Some(l) = metrics_listener {
        // Detached: it stops by itself once the daemon is shutting down.
        crate::metrics::spawn(l, daemon.clone())
            .map_err(|e| fail(1, format!("cannot start the metrics thread: {e}")))?;
    }
    let unix_paths: Vec<PathBuf> = listeners
        .iter()
        .filter_map(|b| match &b.kind {
            BoundKind::Unix(_, p) => p.clone(),
            BoundKind::Tcp(_) => None,
        })
        .collect();
    runtime.block_on(serve(daemon.clone(), listeners, hangup, notify));
    for p in unix_paths {
        let _ = std::fs::remove_file(p);
    }
    // Connections are closing; finish the flush threads' work.
    let write_all = daemon.flush_at_shutdown.load(Ordering::SeqCst);
    if write_all {
        log!(Notice, "writing every pending value before exiting");
        systemd::status("stopping: writing every pending value");
        flusher::enqueue_all(&daemon.cache);
        while !daemon.cache.is_drained() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    daemon.cache.stopping.store(true, Ordering::SeqCst);
    daemon.cache.wake_all();
    for t in threads {
        let _ = t.join();
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    let clean = write_all && daemon.cache.oldest_needed_seq(u64::MAX) == u64::MAX;
    daemon.journal.shutdown(clean);
    if clean {
        log!(Info, "clean shutdown; all RRDs flushed");
    } else {
        log!(Info, "expedited shutdown; journals will be used at next startup");
    }
    Ok(())
}

/// The flush workers and the scheduler (public for the cluster mode).
pub fn spawn_flush_threads(daemon: &Arc<Daemon>) -> Vec<std::thread::JoinHandle<()>> {
    let mut threads = Vec::new();
    for i in 0..daemon.config.write_threads {
        let cache: Arc<Cache> = daemon.cache.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("flush-{i}"))
                .spawn(move || flusher::worker(cache))
                .expect("spawning a flush thread"),
        );
    }
    let scheduler = Scheduler {
        cache: daemon.cache.clone(),
        journal: daemon.journal.clone(),
        tick: daemon.config.tick,
        flush_interval: Duration::from_secs(daemon.config.flush_interval_secs),
    };
    threads.push(
        std::thread::Builder::new()
            .name("scheduler".into())
            .spawn(move || scheduler.run())
            .expect("spawning the scheduler"),
    );
    threads
}

/// Raises the soft descriptor limit to the hard one (each connection and
/// each open RRD file takes a descriptor) and returns it.
fn descriptor_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        if setrlimit(Resource::Nofile, limit).is_err() {
            limit = getrlimit(Resource::Nofile);
        }
    }
    limit.current.unwrap_or(1 << 20)
}

/// How long accept waits after failing for lack of descriptors or memory:
/// retrying at once would spin a core while nothing can change.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Whether an `accept` failure is the process or system running out of
/// something (descriptors, memory, buffers), rather than one aborted
/// connection.
fn is_exhaustion(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}

enum Listener {
    Unix(tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener),
}

/// Accepts on one listener until aborted: at most `limit` connections at
/// once (more wait in the listen backlog), each served in its own task.
async fn accept_loop(
    daemon: Arc<Daemon>,
    listener: Listener,
    listening: Listening,
    limit: Arc<tokio::sync::Semaphore>,
) {
    let mut exhausted = false;
    loop {
        let Ok(permit) = limit.clone().acquire_owned().await else { return };
        let (accepted, idle) = match &listener {
            Listener::Unix(l) => (l.accept().await.map(|(s, _)| Ok(s)), daemon.config.idle_timeout_unix),
            Listener::Tcp(l) => (l.accept().await.map(|(s, _)| Err(s)), daemon.config.idle_timeout_tcp),
        };
        let stream = match accepted {
            Ok(stream) => stream,
            Err(e) if is_exhaustion(&e) => {
                if !exhausted {
                    log!(
                        Err,
                        "accept failed: {e}; retrying every {} ms until descriptors are free \
                         (raise the descriptor limit, or lower --max-connections)",
                        ACCEPT_BACKOFF.as_millis()
                    );
                }
                exhausted = true;
                Stats::add(&daemon.stats.accept_errors, 1);
                drop(permit);
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
            // One connection that went away before it was accepted.
            Err(e) => {
                log!(Debug, "accept failed: {e}");
                continue;
            }
        };
        if exhausted {
            log!(Notice, "accepting connections again");
            exhausted = false;
        }
        // A UNIX client gets a thread of its own while there are fewer
        // than --unix-threads (connection::own_thread).
        let (stream, permit) = match stream {
            Ok(unix) => {
                match connection::own_thread::Threads::spawn(&daemon, unix, listening, idle, permit) {
                    None => continue,
                    Some((unix, permit)) => (Ok(unix), permit),
                }
            }
            tcp => (tcp, permit),
        };
        let d = daemon.clone();
        tokio::spawn(async move {
            match stream {
                Ok(unix) => {
                    let peer = crate::commands::Peer::of(&unix);
                    connection::serve_peer(d, unix, listening, idle, peer).await
                }
                Err(tcp) => {
                    let _ = tcp.set_nodelay(true);
                    let peer = crate::commands::Peer::of(&tcp).at(tcp.peer_addr().ok());
                    connection::serve_peer(d, tcp, listening, idle, peer).await
                }
            }
            drop(permit);
        });
    }
}

/// Accepts on every listener until a stopping signal arrives; tells
/// systemd READY=1 once every listener is being accepted on (the journal
/// was replayed before), STOPPING=1 when a stop begins, and pings its
/// watchdog. SIGHUP reopens the `-o` log file.
async fn serve(
    daemon: Arc<Daemon>,
    listeners: Vec<Bound>,
    mut hangup: tokio::signal::unix::Signal,
    notify: Notify,
) {
    use tokio::signal::unix::{signal, SignalKind};
    let descriptors = descriptor_limit();
    let connections_max = match daemon.config.max_connections {
        0 => config::connections_max(descriptors, daemon.config.write_threads),
        n => n,
    };
    log!(Info, "serving at most {connections_max} connections at once ({descriptors} descriptors)");
    // Headers read ahead (crate::prefetch) hold descriptors too: at most a
    // quarter of what connections and flush workers leave.
    let spare = descriptors.saturating_sub(2 * connections_max as u64 + 64) / 4;
    daemon
        .cache
        .prefetch_budget
        .store(spare.clamp(crate::prefetch::WINDOW as u64, 1 << 20) as i64, Ordering::SeqCst);
    // The stopping signals are caught before the first connection is
    // accepted: a client answered once may send SIGTERM at once (a
    // restart), and that must stop the daemon cleanly, not kill it.
    let (Ok(mut term), Ok(mut int), Ok(mut usr1), Ok(mut usr2)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::user_defined1()),
        signal(SignalKind::user_defined2()),
    ) else {
        log!(Err, "cannot install signal handlers");
        return;
    };
    let limit = Arc::new(tokio::sync::Semaphore::new(connections_max));
    let mut accept_tasks = Vec::new();
    for b in listeners {
        let listening = match &b.spec {
            Some(spec) => daemon.listening(spec),
            None => daemon.default_listening(b.permissions),
        };
        let listener = match b.kind {
            BoundKind::Unix(l, _) => {
                Listener::Unix(tokio::net::UnixListener::from_std(l).expect("a non-blocking UNIX listener"))
            }
            BoundKind::Tcp(l) => {
                Listener::Tcp(tokio::net::TcpListener::from_std(l).expect("a non-blocking TCP listener"))
            }
        };
        accept_tasks.push(tokio::spawn(accept_loop(daemon.clone(), listener, listening, limit.clone())));
    }
    log!(Info, "listening for connections");
    if systemd::notifying() {
        let mainpid = if notify.forked { format!("MAINPID={}\n", std::process::id()) } else { String::new() };
        systemd::notify(&format!("READY=1\n{mainpid}STATUS=accepting connections"));
    }
    // Summaries of held-back repeated log lines, when no other line
    // comes to carry them.
    let repeats = tokio::spawn(async {
        let mut every = tokio::time::interval(log::REPEAT_WINDOW);
        loop {
            every.tick().await;
            log::flush_repeats(false);
        }
    });
    let watchdog = notify.watchdog.filter(|_| systemd::notifying()).map(|period| {
        log!(Info, "systemd watchdog: pinging every {} ms", period.as_millis());
        tokio::spawn(watchdog(daemon.clone(), period))
    });
    let caught = loop {
        tokio::select! {
            _ = hangup.recv() => {
                match log::reopen() {
                    Ok(true) => log!(Notice, "caught SIGHUP; log file reopened"),
                    Ok(false) => log!(Notice, "caught SIGHUP; no log file to reopen (ignored)"),
                    Err(e) => log!(Err, "caught SIGHUP; reopening the log file failed: {e}; still writing to the old one"),
                }
            }
            _ = term.recv() => break "TERM",
            _ = int.recv() => break "INT",
            _ = usr1.recv() => {
                daemon.flush_at_shutdown.store(true, Ordering::SeqCst);
                break "USR1";
            }
            _ = usr2.recv() => {
                daemon.flush_at_shutdown.store(false, Ordering::SeqCst);
                break "USR2";
            }
        }
    };
    log!(Notice, "caught SIG{caught}");
    systemd::notify(&format!("STOPPING=1\nSTATUS=stopping (SIG{caught})"));
    if let Some(w) = watchdog {
        w.abort();
    }
    repeats.abort();
    log!(Info, "starting shutdown");
    for t in accept_tasks {
        t.abort();
    }
    // send_replace: the flag must turn even when no connection is subscribed.
    daemon.shutdown.send_replace(true);
    // Threads blocked in a read do not see the flag: end their reads.
    daemon.connection_threads.shut_all();
    // Give connections a moment to finish the command they are running.
    let all = limit.acquire_many(connections_max as u32);
    let _ = tokio::time::timeout(Duration::from_secs(5), all).await;
}

/// Pings systemd's watchdog every `period` (half of WATCHDOG_USEC) from
/// the runtime that serves connections, and only while the scheduler
/// thread keeps finishing rounds: a runtime whose workers are all stuck, or
/// a scheduler stuck on a cache lock (a flush that never ends), stops the
/// pings and systemd restarts the daemon (the journal has every
/// acknowledged update).
async fn watchdog(daemon: Arc<Daemon>, period: Duration) {
    // The scheduler sleeps a tick between rounds; a round may wait for
    // shard locks that UPDATEs hold briefly.
    let stale_after = (2 * period).max(3 * daemon.config.tick);
    let mut last_rounds = daemon.cache.scheduler_rounds.load(Ordering::Relaxed);
    let mut moved_at = tokio::time::Instant::now();
    let mut withheld = false;
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let rounds = daemon.cache.scheduler_rounds.load(Ordering::Relaxed);
        if rounds != last_rounds {
            last_rounds = rounds;
            moved_at = tokio::time::Instant::now();
        }
        let stalled = moved_at.elapsed();
        if stalled <= stale_after {
            if withheld {
                log!(Notice, "the scheduler thread runs again; watchdog pings resumed");
                withheld = false;
            }
            systemd::notify("WATCHDOG=1");
        } else if !withheld {
            log!(
                Crit,
                "the scheduler thread has not finished a round for {} ms; watchdog pings withheld",
                stalled.as_millis()
            );
            withheld = true;
        }
    }
}
