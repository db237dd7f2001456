//! `rrdscale daemon` under systemd, end to end (docs/systemd.md):
//!
//! - socket activation through the real `systemd-socket-activate`, and by
//!   hand (LISTEN_FDS/LISTEN_PID and descriptors 3, 4 set up between fork
//!   and exec, as systemd does): UNIX and TCP sockets passed, `-l` not
//!   opened, the last `-P` applied, a restart behind the held socket loses
//!   no connection attempt, and the socket file is left to its owner;
//! - sd_notify: READY=1 only once a journal of 1,000,000 records is
//!   replayed (every value visible at that moment), STATUS lines in order,
//!   WATCHDOG=1 pings after READY, STOPPING=1 before the process exits;
//! - logging: priorities as journald's `<N>` prefixes, `-V` filtering,
//!   `-o FILE` reopened on SIGHUP without losing a line.
//!
//! Everything lives in temp dirs; every process started is killed when a
//! test ends, failing or not ([`Proc`], `daemon_common::Daemon`).

mod daemon_common;

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use daemon_common::{create_rrd, stat_field as stat, temp_dir, Client, Daemon, Kind, RRDTOOL};

const BIN: &str = env!("CARGO_BIN_EXE_rrdscale");
const SOCKET_ACTIVATE: &str = "/usr/bin/systemd-socket-activate";
const T0: i64 = 1_000_000_000;

/// A child process killed (SIGKILL) and reaped when dropped, unless it
/// already exited.
struct Proc {
    child: Child,
    log: PathBuf,
}

impl Proc {
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// Sends `sig` and waits (up to 30 s) for the process to exit.
    fn stop(&mut self, sig: i32) -> std::process::ExitStatus {
        self.signal(sig);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the daemon did not exit on signal {sig}; log:\n{}", self.log_text());
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn require_rrdtool() {
    assert!(Path::new(RRDTOOL).exists(), "rrdtool is not installed (apt-get install rrdtool)");
}

/// The daemon's usual arguments for a test in `dir` (no listener).
fn base_args(dir: &Path) -> Vec<String> {
    let journal = dir.join("journal");
    std::fs::create_dir_all(&journal).unwrap();
    [
        "-g",
        "-b",
        dir.to_str().unwrap(),
        "-j",
        journal.to_str().unwrap(),
        "-p",
        dir.join("pid").to_str().unwrap(),
        "-w",
        "3600",
        "-f",
        "7200",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Connects to a UNIX socket, retrying for up to 20 s (the daemon may be
/// starting).
fn connect_retrying(path: &Path) -> UnixStream {
    let started = Instant::now();
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return s,
            Err(e) if started.elapsed() > Duration::from_secs(20) => {
                panic!("connect {}: {e}", path.display())
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Sends `lines` on `stream` and reads one reply per line (status line and
/// its continuation lines), the replies concatenated.
fn ask<S: std::io::Read + Write>(stream: &mut S, lines: &[&str]) -> Vec<String> {
    for l in lines {
        stream.write_all(format!("{l}\n").as_bytes()).unwrap();
    }
    let mut reader = BufReader::new(stream);
    let mut out = Vec::new();
    for _ in lines {
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.ends_with('\n'), "connection closed mid-reply: {status:?}");
        let n: i64 = status.split(' ').next().and_then(|s| s.parse().ok()).unwrap_or(0);
        for _ in 0..n.max(0) {
            let mut more = String::new();
            reader.read_line(&mut more).unwrap();
            status.push_str(&more);
        }
        out.push(status);
    }
    out
}

/// The daemon answers PING, UPDATE, FLUSH on `stream` for `file` (a
/// two-DS RRD made by `create_rrd` at T0), `t` the update's time.
fn check_answers<S: std::io::Read + Write>(stream: &mut S, file: &str, t: i64) {
    let r = ask(stream, &["PING", &format!("UPDATE {file} {t}:1:2"), &format!("FLUSH {file}")]);
    assert_eq!(r[0], "0 PONG\n");
    assert_eq!(r[1], "0 errors, enqueued 1 value(s).\n");
    assert!(r[2].starts_with("0 "), "FLUSH: {}", r[2]);
}

/// Socket activation exactly as systemd does it, through systemd's own
/// `systemd-socket-activate`: it binds the socket, waits for the first
/// connection, then execs the daemon with LISTEN_FDS=1, LISTEN_PID and
/// LISTEN_FDNAMES. The connection made before the daemon existed is
/// answered; `-l` is not opened; the socket file is not removed at stop.
#[test]
fn systemd_socket_activate_passes_a_socket_that_is_served() {
    require_rrdtool();
    assert!(
        Path::new(SOCKET_ACTIVATE).exists(),
        "{SOCKET_ACTIVATE} is missing (apt-get install systemd): socket activation cannot be tested"
    );
    let (_t, dir) = temp_dir();
    create_rrd(&dir.join("a.rrd"), T0);
    let sock = dir.join("activated.sock");
    let log = dir.join("daemon.log");
    let logf = std::fs::File::create(&log).unwrap();
    let mut args = base_args(&dir);
    args.extend([
        "-V".into(),
        "LOG_INFO".into(),
        "-l".into(),
        format!("unix:{}", dir.join("ignored.sock").display()),
    ]);
    let child = Command::new(SOCKET_ACTIVATE)
        .arg("-l")
        .arg(&sock)
        .arg("--fdname=rrdcached")
        .args(["-E", "TZ=UTC"])
        .arg(BIN)
        .arg("daemon")
        .args(&args)
        .stdin(Stdio::null())
        .stdout(logf.try_clone().unwrap())
        .stderr(logf)
        .spawn()
        .expect("starting systemd-socket-activate");
    let mut daemon = Proc { child, log };
    // The first connection makes systemd-socket-activate exec the daemon,
    // which then accepts it from the queue.
    let mut s = connect_retrying(&sock);
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    check_answers(&mut s, "a.rrd", T0 + 300);
    let mut again = UnixStream::connect(&sock).unwrap();
    again.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    check_answers(&mut again, "a.rrd", T0 + 600);
    assert!(!dir.join("ignored.sock").exists(), "-l was opened although systemd passed a socket");
    drop((s, again));
    let text = daemon.log_text();
    assert!(text.contains("Execing"), "systemd-socket-activate did not exec the daemon:\n{text}");
    assert!(
        text.contains(&format!("fd 3 (rrdcached): unix:{}", sock.display())),
        "the passed socket is not named in the log:\n{text}"
    );
    assert!(daemon.stop(libc::SIGTERM).success(), "{}", daemon.log_text());
    assert!(sock.exists(), "the daemon removed the socket file systemd owns");
    assert_eq!(std::fs::read_to_string(dir.join("pid")).ok(), None, "the PID file is removed at stop");
}

/// Copies of `fds` at 100 and up (close-on-exec in this process), so that
/// the child can `dup2` them to 3, 4, ... whatever numbers they have here.
fn high_copies(fds: &[RawFd]) -> Vec<std::os::fd::OwnedFd> {
    fds.iter()
        .map(|&fd| {
            // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own; the new one is
            // owned by the OwnedFd it is wrapped in.
            let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100) };
            assert!(copy >= 100, "fcntl(F_DUPFD_CLOEXEC) failed");
            // SAFETY: `copy` is a fresh descriptor nothing else owns.
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(copy) }
        })
        .collect()
}

/// Starts the daemon the way systemd does: the listeners `fds` become
/// descriptors 3, 4, ... of the child (dup2 between fork and exec, which
/// also clears close-on-exec), and a shell sets LISTEN_PID to its own pid
/// before exec'ing the daemon in the same process.
fn start_activated(
    fds: &[std::os::fd::OwnedFd],
    names: &str,
    args: &[String],
    log: &Path,
    env: &[(&str, String)],
) -> Proc {
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let logf = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!(
            "LISTEN_PID=$$; LISTEN_FDS={}; LISTEN_FDNAMES={names}; export LISTEN_PID LISTEN_FDS LISTEN_FDNAMES; exec \"$0\" \"$@\"",
            raw.len()
        ))
        .arg(BIN)
        .arg("daemon")
        .args(args)
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(logf.try_clone().unwrap())
        .stderr(logf);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: between fork and exec only dup2 (async-signal-safe) runs, on
    // descriptors that stay open in the parent for the child's whole start.
    unsafe {
        cmd.pre_exec(move || {
            for (i, &fd) in raw.iter().enumerate() {
                if libc::dup2(fd, 3 + i as RawFd) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("starting the daemon");
    Proc { child, log: log.to_path_buf() }
}

/// LISTEN_FDS=2 (a UNIX and a TCP listener) passed by hand: both served,
/// `-l` not opened, the last `-P` applied to both (rrdcached's rule), and a
/// restart of the daemon behind the listeners this test holds loses no
/// connection attempt: connections made while no daemon runs wait in the
/// socket's queue and the next daemon answers every one. The socket file
/// is left in place at each stop.
#[test]
fn passed_sockets_survive_a_restart_without_losing_a_connection() {
    require_rrdtool();
    let (_t, dir) = temp_dir();
    create_rrd(&dir.join("a.rrd"), T0);
    let sock = dir.join("held.sock");
    let unix = UnixListener::bind(&sock).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let fds = high_copies(&[unix.as_raw_fd(), tcp.as_raw_fd()]);
    let log = dir.join("daemon.log");
    let mut args = base_args(&dir);
    args.extend(
        [
            "-V",
            "LOG_INFO",
            "-P",
            "PING,UPDATE",
            "-l",
            &format!("unix:{}", dir.join("ignored.sock").display()),
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    args.extend(["-P", "PING,UPDATE,FLUSH,STATS", "-m", "0600"].iter().map(|s| s.to_string()));
    let mut daemon = start_activated(&fds, "rrd-unix:rrd-tcp", &args, &log, &[]);
    let mut u = connect_retrying(&sock);
    u.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    check_answers(&mut u, "a.rrd", T0 + 300);
    let mut t = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    check_answers(&mut t, "a.rrd", T0 + 600);
    // The last -P (PING,UPDATE,FLUSH,STATS) applies: PENDING is refused.
    let r = ask(&mut u, &["PENDING a.rrd"]);
    assert!(r[0].starts_with("-1 ") && r[0].contains("Permission denied"), "{}", r[0]);
    assert!(!dir.join("ignored.sock").exists(), "-l was opened although sockets were passed");
    let text = daemon.log_text();
    assert!(text.contains(&format!("fd 3 (rrd-unix): unix:{}", sock.display())), "{text}");
    assert!(text.contains(&format!("fd 4 (rrd-tcp): 127.0.0.1:{port}")), "{text}");
    assert!(text.contains("the -l/-L addresses are not opened"), "{text}");
    drop((u, t));

    // Restart: stop the daemon; while none runs, clients connect and send.
    assert!(daemon.stop(libc::SIGTERM).success(), "{}", daemon.log_text());
    assert!(sock.exists(), "the daemon removed the socket file it did not create");
    const WAITING: usize = 24;
    // One file each: the next daemon serves the queued connections in any
    // order.
    for i in 0..WAITING {
        create_rrd(&dir.join(format!("w{i:02}.rrd")), T0);
    }
    let mut waiting: Vec<Box<dyn ReadWrite>> = Vec::new();
    for i in 0..WAITING {
        let mut s: Box<dyn ReadWrite> = if i % 2 == 0 {
            Box::new(UnixStream::connect(&sock).expect("the held socket queues connections"))
        } else {
            Box::new(
                std::net::TcpStream::connect(("127.0.0.1", port))
                    .expect("the held socket queues connections"),
            )
        };
        s.write_all(format!("UPDATE w{i:02}.rrd {}:{i}:{i}\nPING\n", T0 + 300).as_bytes()).unwrap();
        waiting.push(s);
    }
    let mut daemon = start_activated(&fds, "rrd-unix:rrd-tcp", &args, &log, &[]);
    for (i, s) in waiting.iter_mut().enumerate() {
        s.set_timeout(Duration::from_secs(20));
        let mut reader = BufReader::new(s);
        let (mut a, mut b) = (String::new(), String::new());
        reader.read_line(&mut a).unwrap();
        reader.read_line(&mut b).unwrap();
        assert_eq!(
            (a.as_str(), b.as_str()),
            ("0 errors, enqueued 1 value(s).\n", "0 PONG\n"),
            "connection {i}"
        );
    }
    let mut u = connect_retrying(&sock);
    u.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let stats = ask(&mut u, &["STATS"]).remove(0);
    assert_eq!(stat(&stats, "UpdatesReceived"), WAITING as u64, "{stats}");
    drop(u);
    assert!(daemon.stop(libc::SIGTERM).success(), "{}", daemon.log_text());
    assert!(sock.exists());
}

/// What the restart test reads and writes through (UNIX or TCP streams).
trait ReadWrite: std::io::Read + Write {
    fn set_timeout(&self, t: Duration);
}
impl ReadWrite for UnixStream {
    fn set_timeout(&self, t: Duration) {
        self.set_read_timeout(Some(t)).unwrap();
    }
}
impl ReadWrite for std::net::TcpStream {
    fn set_timeout(&self, t: Duration) {
        self.set_read_timeout(Some(t)).unwrap();
    }
}

/// Notifications received on the test's own NOTIFY_SOCKET, in order, each
/// with the time it was read.
struct Notifications {
    socket: UnixDatagram,
    got: Vec<(Instant, String)>,
}

impl Notifications {
    fn bind(path: &Path) -> Notifications {
        let socket = UnixDatagram::bind(path).unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        Notifications { socket, got: Vec::new() }
    }

    /// Reads until a message contains `needle` (up to `limit`); returns
    /// its index.
    fn wait_for(&mut self, needle: &str, limit: Duration, daemon: &mut Proc) -> usize {
        let started = Instant::now();
        let mut buf = vec![0u8; 4096];
        loop {
            if let Some(i) = self.got.iter().position(|(_, m)| m.lines().any(|l| l == needle)) {
                return i;
            }
            if started.elapsed() > limit {
                panic!("no {needle} within {limit:?}; got {:?}\nlog:\n{}", self.texts(), daemon.log_text());
            }
            if let Ok(Some(status)) = daemon.child.try_wait() {
                self.drain();
                if let Some(i) = self.got.iter().position(|(_, m)| m.lines().any(|l| l == needle)) {
                    return i;
                }
                panic!(
                    "the daemon exited ({status}) before {needle}; got {:?}\n{}",
                    self.texts(),
                    daemon.log_text()
                );
            }
            if let Ok(n) = self.socket.recv(&mut buf) {
                self.got.push((Instant::now(), String::from_utf8_lossy(&buf[..n]).into_owned()));
            }
        }
    }

    /// Everything already queued, without waiting.
    fn drain(&mut self) {
        self.socket.set_nonblocking(true).unwrap();
        let mut buf = vec![0u8; 4096];
        while let Ok(n) = self.socket.recv(&mut buf) {
            self.got.push((Instant::now(), String::from_utf8_lossy(&buf[..n]).into_owned()));
        }
        self.socket.set_nonblocking(false).unwrap();
    }

    fn texts(&self) -> Vec<&str> {
        self.got.iter().map(|(_, m)| m.as_str()).collect()
    }
}

/// A journal of 1,000,000 update records (20 files x 50,000 values, sent
/// in BATCHes, then kill -9), then a start with NOTIFY_SOCKET and a
/// watchdog: READY=1 arrives after the replay's STATUS lines, and at that
/// moment STATS already counts every one of the 1,000,000 values as
/// pending; WATCHDOG=1 pings follow READY (none before it); on SIGTERM,
/// STOPPING=1 is in the test's socket by the time the process has exited.
#[test]
fn ready_only_after_a_million_record_replay_and_stopping_before_exit() {
    require_rrdtool();
    const FILES: usize = 20;
    const PER_FILE: usize = 50_000;
    const TOTAL: u64 = (FILES * PER_FILE) as u64;
    const BATCH: usize = 10_000;
    let (_t, dir) = temp_dir();
    let names: Vec<String> = (0..FILES).map(|i| format!("f{i:02}.rrd")).collect();
    for n in &names {
        create_rrd(&dir.join(n), T0);
    }
    let started = Instant::now();
    {
        let daemon = Daemon::start(Kind::Ours, &dir, &["--max-pending", "2000000"]);
        let mut c = daemon.client();
        let lines: Vec<String> = (0..PER_FILE)
            .flat_map(|k| {
                let t = T0 + 300 * (k as i64 + 1);
                names.iter().map(move |n| format!("UPDATE {n} {t}:{k}:{k}"))
            })
            .collect();
        for chunk in lines.chunks(BATCH) {
            c.send("BATCH");
            assert_eq!(c.read_reply(), "0 Go ahead.  End with dot '.' on its own line.\n");
            let mut text = chunk.join("\n");
            text.push_str("\n.");
            c.send(&text);
            assert_eq!(c.read_reply(), "0 errors\n");
        }
        let stats = c.call("STATS");
        assert_eq!(stat(&stats, "UpdatesReceived"), TOTAL, "{stats}");
        daemon.kill9();
    }
    eprintln!("journal of {TOTAL} records written in {:?}", started.elapsed());

    let mut notifications = Notifications::bind(&dir.join("notify"));
    let sock = dir.join("sock");
    let log = dir.join("restart.log");
    let mut args = base_args(&dir);
    args.extend(["-V", "LOG_INFO", "--max-pending", "2000000", "-l"].iter().map(|s| s.to_string()));
    args.push(format!("unix:{}", sock.display()));
    let logf = std::fs::File::create(&log).unwrap();
    let child = Command::new(BIN)
        .arg("daemon")
        .args(&args)
        .env("TZ", "UTC")
        .env("NOTIFY_SOCKET", dir.join("notify"))
        .env("WATCHDOG_USEC", "400000")
        .stdin(Stdio::null())
        .stdout(logf.try_clone().unwrap())
        .stderr(logf)
        .spawn()
        .unwrap();
    let mut daemon = Proc { child, log };
    let restarted = Instant::now();
    let ready = notifications.wait_for("READY=1", Duration::from_secs(45), &mut daemon);
    // At this moment every replayed value is visible.
    let mut c = Client::connect(&sock);
    let stats = c.call("STATS");
    let replayed_in = restarted.elapsed();
    assert_eq!(stat(&stats, "PendingValues"), TOTAL, "READY=1 before every value was replayed:\n{stats}");
    let texts = notifications.texts();
    let position = |needle: &str| {
        texts.iter().position(|m| m.contains(needle)).unwrap_or_else(|| panic!("no '{needle}' in {texts:?}"))
    };
    let replaying = position("STATUS=replaying the journal");
    let read = position(&format!("STATUS=journal read: {TOTAL} records"));
    let replayed = position(&format!("STATUS=journal replayed: {TOTAL} records, {TOTAL} values pending"));
    assert!(replaying < read && read < replayed && replayed < ready, "order: {texts:?}");
    assert!(texts[ready].contains("STATUS=accepting connections"), "{texts:?}");
    assert!(!texts[ready].contains("MAINPID="), "-g: no MAINPID ({texts:?})");
    assert!(
        !texts[..ready].iter().any(|m| m.contains("WATCHDOG=1")),
        "a watchdog ping before READY: {texts:?}"
    );
    // Watchdog pings every 200 ms (WATCHDOG_USEC / 2).
    std::thread::sleep(Duration::from_millis(900));
    notifications.drain();
    let pings = notifications.texts().iter().filter(|m| **m == "WATCHDOG=1").count();
    assert!(pings >= 2, "{pings} watchdog pings in 900 ms: {:?}", notifications.texts());
    drop(c);

    daemon.signal(libc::SIGTERM);
    let started = Instant::now();
    while daemon.child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(30), "no exit on SIGTERM:\n{}", daemon.log_text());
        std::thread::sleep(Duration::from_millis(5));
    }
    // Exited: anything it sent is already queued in our socket.
    notifications.drain();
    let texts = notifications.texts();
    let stopping = texts
        .iter()
        .position(|m| m.lines().any(|l| l == "STOPPING=1"))
        .unwrap_or_else(|| panic!("no STOPPING=1 before exit: {texts:?}\n{}", daemon.log_text()));
    assert!(stopping > ready && texts[stopping].contains("STATUS=stopping (SIGTERM)"), "{texts:?}");
    eprintln!("replay of {TOTAL} records and READY=1 in {replayed_in:?}; stop in {:?}", started.elapsed());
}

/// Runs the daemon in the foreground with standard error on `stderr_file`
/// and `extra` arguments; `journal`: JOURNAL_STREAM names that file, as
/// systemd names the journal's stream.
fn start_logging(dir: &Path, stderr_file: &Path, extra: &[&str], journal: bool) -> Proc {
    use std::os::unix::fs::MetadataExt;
    let logf = std::fs::File::create(stderr_file).unwrap();
    let meta = logf.metadata().unwrap();
    let mut args = base_args(dir);
    args.extend(["-l".to_string(), format!("unix:{}", dir.join("sock").display())]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut cmd = Command::new(BIN);
    cmd.arg("daemon").args(&args).env("TZ", "UTC").stdin(Stdio::null()).stdout(Stdio::null()).stderr(logf);
    if journal {
        cmd.env("JOURNAL_STREAM", format!("{}:{}", meta.dev(), meta.ino()));
    } else {
        cmd.env_remove("JOURNAL_STREAM");
    }
    let p = Proc { child: cmd.spawn().unwrap(), log: stderr_file.to_path_buf() };
    let mut s = connect_retrying(&dir.join("sock"));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(ask(&mut s, &["PING"])[0], "0 PONG\n");
    p
}

/// Makes the daemon log one error naming `name`: an UPDATE of a good
/// RRD, the file replaced by one that is not an RRD, then FLUSH: the
/// flush fails and the values are dropped (LOG_ERR).
fn provoke_error(dir: &Path, name: &str, stream: &mut UnixStream) {
    create_rrd(&dir.join(name), T0);
    let r = ask(stream, &[&format!("UPDATE {name} {}:1:1", T0 + 300)]);
    assert_eq!(r[0], "0 errors, enqueued 1 value(s).\n");
    let tmp = dir.join(format!("{name}.tmp"));
    std::fs::write(&tmp, b"not an RRD file at all").unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
    ask(stream, &[&format!("FLUSH {name}")]);
}

/// Waits until `path` holds a line containing `needle`.
fn wait_logged(path: &Path, needle: &str) -> String {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "'{needle}' never logged in {}:\n{text}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// In the foreground with standard error on the journal's stream
/// (JOURNAL_STREAM matching it), every line carries its sd-daemon
/// priority prefix: the failed flush `<3>`, routine start and stop lines
/// `<5>`/`<6>`; with `-V LOG_WARNING` only the `<3>` line remains; without
/// JOURNAL_STREAM lines carry no prefix but a priority word. SIGHUP does
/// not stop a daemon that logs to standard error.
#[test]
fn log_priorities_reach_the_journal_stream_and_v_filters_them() {
    require_rrdtool();
    let (_t, dir) = temp_dir();
    let all = dir.join("all.log");
    let mut daemon = start_logging(&dir, &all, &["-V", "LOG_DEBUG"], true);
    let mut s = connect_retrying(&dir.join("sock"));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    provoke_error(&dir, "bad-1.rrd", &mut s);
    wait_logged(&all, "bad-1.rrd");
    daemon.signal(libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(ask(&mut s, &["PING"])[0], "0 PONG\n", "SIGHUP stopped the daemon");
    drop(s);
    assert!(daemon.stop(libc::SIGTERM).success());
    let text = std::fs::read_to_string(&all).unwrap();
    for line in text.lines() {
        let prefixed = line.len() > 3 && line.starts_with('<') && line.as_bytes()[2] == b'>';
        assert!(
            prefixed && (b'0'..=b'7').contains(&line.as_bytes()[1]),
            "a line without a priority: {line:?}\n{text}"
        );
    }
    let error = text.lines().find(|l| l.contains("bad-1.rrd")).unwrap();
    assert!(error.starts_with("<3>update of ") && error.contains("bad-1.rrd failed"), "{error}");
    assert!(text.contains("<6>starting up"), "{text}");
    assert!(text.contains("<5>caught SIGHUP"), "{text}");
    assert!(text.contains("<5>caught SIGTERM"), "{text}");
    assert!(text.contains("<6>goodbye"), "{text}");

    // -V LOG_WARNING: the error stays, routine lines are gone.
    let warnings = dir.join("warnings.log");
    let mut daemon = start_logging(&dir, &warnings, &["-V", "LOG_WARNING"], true);
    let mut s = connect_retrying(&dir.join("sock"));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    provoke_error(&dir, "bad-2.rrd", &mut s);
    wait_logged(&warnings, "bad-2.rrd");
    drop(s);
    assert!(daemon.stop(libc::SIGTERM).success());
    let text = std::fs::read_to_string(&warnings).unwrap();
    assert!(text.lines().any(|l| l.starts_with("<3>update of ") && l.contains("bad-2.rrd failed")), "{text}");
    for line in text.lines() {
        assert!(
            line.starts_with("<3>") || line.starts_with("<4>") || line.starts_with("<2>"),
            "-V LOG_WARNING let {line:?} through"
        );
    }

    // Standard error that is not the journal: no prefixes, priority words.
    let plain = dir.join("plain.log");
    let mut daemon = start_logging(&dir, &plain, &["-V", "LOG_INFO"], false);
    let mut s = connect_retrying(&dir.join("sock"));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    provoke_error(&dir, "bad-3.rrd", &mut s);
    let text = wait_logged(&plain, "bad-3.rrd");
    drop(s);
    assert!(daemon.stop(libc::SIGTERM).success());
    assert!(!text.lines().any(|l| l.starts_with('<')), "{text}");
    assert!(
        text.lines().any(|l| l.contains(" ERROR update of ") && l.contains("bad-3.rrd failed")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.contains(" INFO starting up")), "{text}");
}

/// `-o FILE`, then logrotate's way: `mv FILE FILE.1; kill -HUP`: lines
/// logged before the HUP are in FILE.1 (those after the move too, the
/// daemon still held it), lines after it in a new FILE, none lost or
/// doubled; the lines have rrdcached's `-o` form.
#[test]
fn sighup_reopens_the_log_file_without_losing_lines() {
    require_rrdtool();
    let (_t, dir) = temp_dir();
    let file = dir.join("rrd.log");
    let rotated = dir.join("rrd.log.1");
    let stderr_file = dir.join("stderr.log");
    let mut daemon =
        start_logging(&dir, &stderr_file, &["-o", file.to_str().unwrap(), "-V", "LOG_INFO"], false);
    let mut s = connect_retrying(&dir.join("sock"));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    for i in 1..=3 {
        provoke_error(&dir, &format!("bad-{i}.rrd"), &mut s);
        wait_logged(&file, &format!("bad-{i}.rrd"));
    }
    std::fs::rename(&file, &rotated).unwrap();
    for i in 4..=5 {
        provoke_error(&dir, &format!("bad-{i}.rrd"), &mut s);
        wait_logged(&rotated, &format!("bad-{i}.rrd"));
    }
    assert!(!file.exists(), "nothing reopened the file before SIGHUP");
    daemon.signal(libc::SIGHUP);
    wait_logged(&file, "caught SIGHUP; log file reopened");
    for i in 6..=8 {
        provoke_error(&dir, &format!("bad-{i}.rrd"), &mut s);
        wait_logged(&file, &format!("bad-{i}.rrd"));
    }
    drop(s);
    assert!(daemon.stop(libc::SIGTERM).success());
    let old = std::fs::read_to_string(&rotated).unwrap();
    let new = std::fs::read_to_string(&file).unwrap();
    for i in 1..=8 {
        let needle = format!("bad-{i}.rrd failed");
        let (here, there) = if i <= 5 { (&old, &new) } else { (&new, &old) };
        assert_eq!(here.matches(&needle).count(), 1, "bad-{i}:\n--- old\n{old}\n--- new\n{new}");
        assert_eq!(there.matches(&needle).count(), 0, "bad-{i} in both files");
    }
    assert!(old.contains("starting up") && new.contains("goodbye"), "--- old\n{old}\n--- new\n{new}");
    // rrdcached's -o form: "YYYY-MM-DD HH:MM:SS [N] message".
    for line in old.lines().chain(new.lines()) {
        let b = line.as_bytes();
        assert!(b.len() > 24 && b[4] == b'-' && b[10] == b' ' && b[13] == b':' && b[20] == b'[', "{line:?}");
    }
    assert!(new.lines().any(|l| l.contains(" [3] update of ") && l.contains("bad-6.rrd failed")), "{new}");
    assert!(new.lines().any(|l| l.contains(" [5] caught SIGHUP")), "{new}");
    assert_eq!(std::fs::read_to_string(&stderr_file).unwrap(), "", "-o: nothing on stderr");
}

/// Kills (SIGKILL) a daemon that forked, by the pid it wrote, when
/// dropped.
struct ForkedPid(i32);

impl Drop for ForkedPid {
    fn drop(&mut self) {
        if self.0 > 0 {
            // SAFETY: kill(2) on the pid our own daemon reported.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// Without `-g` the daemon forks: READY=1 then names the new main
/// process (MAINPID=, the pid in the PID file), which systemd needs to
/// follow it (Type=notify with NotifyAccess=all); STOPPING=1 arrives before
/// that process is gone.
#[test]
fn a_forking_daemon_names_its_main_pid_with_ready() {
    require_rrdtool();
    let (_t, dir) = temp_dir();
    let mut notifications = Notifications::bind(&dir.join("notify"));
    let sock = dir.join("sock");
    let mut args = base_args(&dir);
    args.retain(|a| a != "-g");
    args.extend(["-l".to_string(), format!("unix:{}", sock.display())]);
    let log = dir.join("daemon.log");
    let logf = std::fs::File::create(&log).unwrap();
    let child = Command::new(BIN)
        .arg("daemon")
        .args(&args)
        .env("NOTIFY_SOCKET", dir.join("notify"))
        .stdin(Stdio::null())
        .stdout(logf.try_clone().unwrap())
        .stderr(logf)
        .spawn()
        .unwrap();
    let mut parent = Proc { child, log };
    assert!(parent.child.wait().unwrap().success(), "the parent exits 0 after forking");
    let started = Instant::now();
    let pid = loop {
        if let Some(pid) =
            std::fs::read_to_string(dir.join("pid")).ok().and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no PID file");
        std::thread::sleep(Duration::from_millis(20));
    };
    let forked = ForkedPid(pid);
    assert_ne!(pid, parent.pid());
    let mut buf = vec![0u8; 4096];
    notifications.socket.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let ready = loop {
        let n = notifications.socket.recv(&mut buf).expect("READY=1 from the forked daemon");
        let message = String::from_utf8_lossy(&buf[..n]).into_owned();
        if message.lines().any(|l| l == "READY=1") {
            break message;
        }
    };
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready}");
    assert!(ready.lines().any(|l| l == format!("MAINPID={pid}")), "{ready}");
    let mut c = Client::connect(&sock);
    assert_eq!(c.call("PING"), "0 PONG\n");
    drop(c);
    // SAFETY: kill(2) on the pid our own daemon reported.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let started = Instant::now();
    // Not our child: gone once kill(pid, 0) fails.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "no exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(5));
    }
    notifications.drain();
    assert!(
        notifications.texts().iter().any(|m| m.lines().any(|l| l == "STOPPING=1")),
        "{:?}",
        notifications.texts()
    );
    drop(forked);
}

/// A forked daemon logs to syslog: each datagram that reaches `/dev/log`
/// carries facility LOG_DAEMON and the message's own priority (`<27>` =
/// daemon.err for a failed flush, `<30>` daemon.info for "starting up",
/// `<29>` daemon.notice for "caught SIGTERM"), under rrdcached's identity.
/// `/dev/log` is this test's datagram socket, seen only by the daemon: it
/// runs in a private mount namespace (`unshare`) whose `/dev` is a tmpfs
/// holding `null` and a `log` symbolic link; the machine's `/dev` is
/// untouched.
#[test]
fn syslog_lines_carry_the_daemon_facility_and_their_priority() {
    require_rrdtool();
    assert!(
        Path::new("/usr/bin/unshare").exists(),
        "/usr/bin/unshare is missing (apt-get install util-linux)"
    );
    let (_t, dir) = temp_dir();
    let syslog = UnixDatagram::bind(dir.join("log.sock")).unwrap();
    syslog.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let sock = dir.join("sock");
    let mut args = base_args(&dir);
    args.retain(|a| a != "-g");
    args.extend(["-V", "LOG_INFO", "-l"].iter().map(|s| s.to_string()));
    args.push(format!("unix:{}", sock.display()));
    let log = dir.join("stderr.log");
    let logf = std::fs::File::create(&log).unwrap();
    let child = Command::new("/usr/bin/unshare")
        .args(["--mount", "--propagation", "private", "/bin/sh", "-c"])
        .arg(
            "mount -t tmpfs tmpfs /dev && mknod -m 666 /dev/null c 1 3 && ln -s \"$SYSLOG_SOCK\" /dev/log \
             && exec \"$0\" \"$@\"",
        )
        .arg(BIN)
        .arg("daemon")
        .args(&args)
        .env("SYSLOG_SOCK", dir.join("log.sock"))
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(logf.try_clone().unwrap())
        .stderr(logf)
        .spawn()
        .unwrap();
    let mut parent = Proc { child, log };
    let status = parent.child.wait().unwrap();
    assert!(status.success(), "unshare or the daemon failed ({status}):\n{}", parent.log_text());
    let started = Instant::now();
    let pid = loop {
        if let Some(pid) =
            std::fs::read_to_string(dir.join("pid")).ok().and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no PID file:\n{}", parent.log_text());
        std::thread::sleep(Duration::from_millis(20));
    };
    let _forked = ForkedPid(pid);
    let mut s = connect_retrying(&sock);
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    provoke_error(&dir, "bad-1.rrd", &mut s);
    drop(s);
    let mut got: Vec<String> = Vec::new();
    let mut buf = vec![0u8; 8192];
    let mut receive_until = |needle: &str, got: &mut Vec<String>| {
        while !got.iter().any(|m| m.contains(needle)) {
            let n =
                syslog.recv(&mut buf).unwrap_or_else(|e| panic!("no '{needle}' in syslog ({e}): {got:?}"));
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    };
    receive_until("bad-1.rrd failed", &mut got);
    // SAFETY: kill(2) on the pid our own daemon reported.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    receive_until("goodbye", &mut got);
    let find =
        |needle: &str| got.iter().find(|m| m.contains(needle)).unwrap_or_else(|| panic!("{needle}: {got:?}"));
    let tag = format!("rrdcached[{pid}]: ");
    for (needle, priority) in [
        ("bad-1.rrd failed", "<27>"),
        ("starting up", "<30>"),
        ("caught SIGTERM", "<29>"),
        ("goodbye", "<30>"),
    ] {
        let m = find(needle);
        assert!(
            m.starts_with(priority) && m.contains(&tag),
            "{needle}: want {priority} and {tag:?}, got {m:?}"
        );
    }
    for m in &got {
        assert!(
            ["<26>", "<27>", "<28>", "<29>", "<30>"].iter().any(|p| m.starts_with(p)),
            "-V LOG_INFO let {m:?} through"
        );
    }
}
