//! One daemon per journal directory. A second daemon started on the `-j`
//! of a running one (with a socket and PID file of its own) must refuse
//! to start, naming the directory and the holder's pid, and must not touch
//! the first one's journal: every update the first acknowledged survives
//! its kill -9 and a restart. The first daemon runs in the background (it
//! forks), so the lock is shown to survive the fork and the parent's exit.

mod daemon_common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use daemon_common::{create_rrd, require_tools, temp_dir, Client, Daemon, Kind};

const T0: i64 = 1_000_000_000;

/// A daemon that forked to the background: known by the pid in its PID
/// file; killed with SIGKILL on drop.
struct Background {
    pid: i32,
}

impl Background {
    fn start(dir: &Path, socket: &Path, pid_file: &Path) -> Background {
        let status = Command::new(env!("CARGO_BIN_EXE_rrdscale"))
            .arg("daemon")
            .args(["-l", &format!("unix:{}", socket.display())])
            .args(["-b", &dir.display().to_string()])
            .args(["-j", &dir.join("journal").display().to_string()])
            .args(["-p", &pid_file.display().to_string()])
            .args(["-o", &dir.join("first.log").display().to_string()])
            .args(["-w", "3600", "-f", "7200"])
            .env("TZ", "UTC")
            .stdin(Stdio::null())
            .status()
            .expect("starting the daemon");
        assert!(status.success(), "the forking daemon's parent failed: {status}");
        let started = Instant::now();
        loop {
            let pid = std::fs::read_to_string(pid_file).ok().and_then(|t| t.trim().parse::<i32>().ok());
            if let Some(pid) = pid {
                let me = Background { pid };
                if ping(socket) {
                    return me;
                }
            }
            assert!(started.elapsed() < Duration::from_secs(20), "the background daemon did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill9(&self) {
        // SAFETY: kill on the pid our daemon wrote.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        let started = Instant::now();
        while Path::new(&format!("/proc/{}", self.pid)).exists() && !is_zombie(self.pid) {
            assert!(started.elapsed() < Duration::from_secs(10), "the daemon survived SIGKILL");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // SAFETY: as in kill9; a pid already gone is no harm.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
    }
}

fn is_zombie(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'))
}

fn ping(socket: &Path) -> bool {
    let Ok(mut c) = UnixStream::connect(socket) else { return false };
    let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
    if c.write_all(b"PING\n").is_err() {
        return false;
    }
    let mut line = String::new();
    BufReader::new(&c).read_line(&mut line).is_ok() && line == "0 PONG\n"
}

fn update(client: &mut Client, i: i64) {
    let reply = client.call(&format!("UPDATE a.rrd {}:{i}:{}", T0 + 300 * i, 10 * i));
    assert_eq!(reply, "0 errors, enqueued 1 value(s).\n");
}

/// Runs a second daemon on the same `-j` in the foreground; it must exit
/// with a failure status and say why. Returns its stderr.
fn second_daemon_refuses(dir: &Path, first_pid: i32) -> String {
    let socket2: PathBuf = dir.join("sock2");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rrdscale"))
        .arg("daemon")
        .args(["-g", "-l", &format!("unix:{}", socket2.display())])
        .args(["-b", &dir.display().to_string()])
        .args(["-j", &dir.join("journal").display().to_string()])
        .args(["-p", &dir.join("pid2").display().to_string()])
        .args(["-w", "3600", "-f", "7200"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the second daemon");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a second daemon on the same journal directory started (still running after 10 s)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(!status.success(), "the second daemon exited with success: {err}");
    assert!(!dir.join("pid2").exists(), "the refused daemon left its PID file");
    assert!(!socket2.exists(), "the refused daemon bound its socket");
    let journal = dir.join("journal").display().to_string();
    assert!(err.contains(&journal), "the refusal does not name the directory: {err}");
    assert!(err.contains(&format!("pid {first_pid}")), "the refusal does not name the holder: {err}");
    err
}

#[test]
fn a_second_daemon_on_the_same_journal_refuses_and_acknowledged_values_survive() {
    require_tools();
    let (_t, dir) = temp_dir();
    create_rrd(&dir.join("a.rrd"), T0);
    // The daemon does not create its -j directory (as rrdcached).
    std::fs::create_dir(dir.join("journal")).unwrap();
    let socket = dir.join("sock1");
    let first = Background::start(&dir, &socket, &dir.join("pid1"));
    let mut client = Client::connect(&socket);
    for i in 1..=5 {
        update(&mut client, i);
    }
    second_daemon_refuses(&dir, first.pid);
    for i in 6..=10 {
        update(&mut client, i);
    }
    first.kill9();
    drop(client);
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let mut c = d.client();
    let pending = c.call(&format!("PENDING {}", dir.join("a.rrd").display()));
    let expected: String =
        (1..=10).map(|i| format!("{}:{i}:{}\n", T0 + 300 * i, 10 * i)).collect::<Vec<_>>().concat();
    assert_eq!(pending, format!("10 updates pending\n{expected}"), "acknowledged values were lost");
    d.stop();
}
