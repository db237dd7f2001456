//! Shared by the daemon tests: starting `rrdscale daemon` or the real
//! rrdcached 1.7.2 in a temp dir, a line-protocol client, and RRD files made
//! by the real rrdtool. A missing rrdtool or rrdcached fails the test with a
//! message (never a silent pass).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const RRDTOOL: &str = "/usr/bin/rrdtool";
pub const RRDCACHED: &str = "/usr/bin/rrdcached";

/// The value of `name` in a STATS reply.
pub fn stat_field(reply: &str, name: &str) -> u64 {
    reply
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("{name} missing from STATS:\n{reply}"))
        .parse()
        .unwrap()
}

pub fn require_tools() {
    assert!(
        Path::new(RRDTOOL).exists(),
        "rrdtool is not installed (apt-get install rrdtool): {RRDTOOL} missing"
    );
    assert!(
        Path::new(RRDCACHED).exists(),
        "rrdcached is not installed (apt-get install rrdcached): {RRDCACHED} missing; the daemon tests compare with it"
    );
}

/// Runs rrdtool with TZ=UTC, panicking with its stderr on failure.
pub fn rrdtool(args: &[&str]) -> String {
    let out = Command::new(RRDTOOL).args(args).env("TZ", "UTC").output().expect("running rrdtool");
    assert!(out.status.success(), "rrdtool {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The two-DS, two-RRA schema most tests use (small, consolidating).
pub fn create_rrd(path: &Path, start: i64) {
    rrdtool(&[
        "create",
        path.to_str().unwrap(),
        "-b",
        &start.to_string(),
        "-s",
        "300",
        "DS:x:GAUGE:600:U:U",
        "DS:y:COUNTER:600:U:U",
        "RRA:AVERAGE:0.5:1:20",
        "RRA:MAX:0.5:3:20",
        "RRA:AVERAGE:0.5:6:10",
    ]);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ours,
    Rrdcached,
}

/// A running daemon; killed (SIGKILL) on drop if still running.
pub struct Daemon {
    pub kind: Kind,
    pub child: Child,
    pub dir: PathBuf,
    pub socket: PathBuf,
    pub log: PathBuf,
}

impl Daemon {
    /// Starts a daemon with base dir `dir`, journal `dir/journal`, socket
    /// `dir/sock`, `-w 3600` unless `extra` says otherwise.
    pub fn start(kind: Kind, dir: &Path, extra: &[&str]) -> Daemon {
        let socket = dir.join("sock");
        let log = dir.join(format!("daemon-{}.log", std::process::id()));
        let journal = dir.join("journal");
        std::fs::create_dir_all(&journal).unwrap();
        let mut args: Vec<String> = vec![
            "-g".into(),
            "-l".into(),
            format!("unix:{}", socket.display()),
            "-b".into(),
            dir.display().to_string(),
            "-j".into(),
            journal.display().to_string(),
            "-p".into(),
            dir.join("pid").display().to_string(),
        ];
        let has_w = extra.iter().any(|a| a.starts_with("-w"));
        if !has_w {
            args.extend(["-w".into(), "3600".into(), "-f".into(), "7200".into()]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut cmd = match kind {
            Kind::Ours => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_rrdscale"));
                c.arg("daemon");
                c
            }
            Kind::Rrdcached => Command::new(RRDCACHED),
        };
        let logf = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
        let child = cmd
            .args(&args)
            .env("TZ", "UTC")
            .stdin(Stdio::null())
            .stdout(logf.try_clone().unwrap())
            .stderr(logf)
            .spawn()
            .expect("starting the daemon");
        let d = Daemon { kind, child, dir: dir.to_path_buf(), socket, log };
        d.wait_ready();
        d
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            if let Ok(mut c) = UnixStream::connect(&self.socket) {
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                if c.write_all(b"PING\n").is_ok() {
                    let mut line = String::new();
                    if BufReader::new(&c).read_line(&mut line).is_ok() && line == "0 PONG\n" {
                        return;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "{:?} daemon did not start; log:\n{}",
            self.kind,
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    pub fn client(&self) -> Client {
        Client::connect(&self.socket)
    }

    /// SIGTERM, then wait for the process to exit.
    pub fn stop(mut self) {
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if self.child.try_wait().unwrap().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("{:?} daemon did not stop on SIGTERM", self.kind);
    }

    /// kill -9, then reap.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One connection speaking the line protocol.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    pub fn connect(path: &Path) -> Client {
        let s = UnixStream::connect(path).unwrap_or_else(|e| panic!("connecting to {}: {e}", path.display()));
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Client { reader: BufReader::new(s.try_clone().unwrap()), writer: s }
    }

    pub fn send(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).unwrap();
        self.writer.write_all(b"\n").unwrap();
    }

    /// Reads one reply: the status line and, when its number is positive,
    /// that many lines.
    pub fn read_reply(&mut self) -> String {
        let mut status = String::new();
        self.reader.read_line(&mut status).expect("reading a status line");
        assert!(status.ends_with('\n'), "connection closed mid-reply (got {status:?})");
        let n: i64 = status
            .split(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status:?}"));
        let mut out = status;
        for _ in 0..n.max(0) {
            let mut l = String::new();
            self.reader.read_line(&mut l).unwrap();
            out.push_str(&l);
        }
        out
    }

    pub fn call(&mut self, line: &str) -> String {
        self.send(line);
        self.read_reply()
    }

    /// Reads whatever arrives until the peer is silent for `quiet`.
    pub fn read_raw(&mut self, quiet: Duration) -> Vec<u8> {
        self.writer.set_read_timeout(Some(quiet)).unwrap();
        let mut out = self.reader.buffer().to_vec();
        let consumed = out.len();
        self.reader.consume(consumed);
        let mut buf = [0u8; 65536];
        loop {
            match self.reader.get_mut().read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(_) => break,
            }
        }
        self.writer.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        out
    }
}

/// A fresh temp dir with a canonical path (rrdcached refuses a -b reached
/// through a symbolic link).
pub fn temp_dir() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let p = std::fs::canonicalize(t.path()).unwrap();
    (t, p)
}
