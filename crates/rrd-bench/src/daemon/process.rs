//! Starting, probing and stopping the daemons the `daemon-*` benchmarks
//! compare, and a minimal client of rrdcached's protocol fast enough to
//! measure them.
//!
//! A daemon is driven only as a process: its command line, its UNIX socket
//! and signals. Ours is `<rrdscale> daemon -g …`, the reference is
//! `/usr/bin/rrdcached -g …` (1.7.2); both get the same `-w`, `-f`, `-t` (no
//! `-z`: both refuse 0 and default to no jitter) and a journal directory. With a memory budget the daemon enters its
//! own memory cgroup between `fork` and `exec` (so every thread it starts,
//! and every page it touches, is charged there).
//!
//! Invariants: a [`DaemonProc`] that is dropped is killed and reaped (never
//! left running after a failed run); [`Conn`] never panics on a reply, it
//! returns [`BenchError::Worker`] naming what was wrong.
//!
//! Deliberately absent: escaping of request fields (the benchmarks' paths
//! and values contain no spaces or backslashes) and anything else of the
//! protocol the benchmarks do not send.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::BenchError;

/// The reference daemon's default location (Debian package `rrdcached`).
pub const RRDCACHED: &str = "/usr/bin/rrdcached";

/// Which daemon a side runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DaemonKind {
    /// `rrdscale daemon` with this `--sync` policy (`always`, `none`, `every:MS`).
    Rrdscale { sync: String },
    /// `rrdscale daemon` with no `--sync` option: its default, whatever it
    /// is; `policy` is what the daemon's help says it is ("?" if unknown).
    RrdscaleDefault { policy: String },
    /// rrdcached 1.7.2.
    Rrdcached,
}

impl DaemonKind {
    /// `rrdscale (--sync always)` or `rrdcached 1.7.2`.
    pub fn label(&self) -> String {
        match self {
            DaemonKind::Rrdscale { sync } => format!("rrdscale (--sync {sync})"),
            DaemonKind::RrdscaleDefault { policy } => format!("rrdscale (default: {policy})"),
            DaemonKind::Rrdcached => "rrdcached 1.7.2".into(),
        }
    }

    /// The side's directory name.
    pub fn dir_name(&self) -> String {
        match self {
            DaemonKind::Rrdscale { sync } => format!("rrdscale-sync-{}", sync.replace(':', "-")),
            DaemonKind::RrdscaleDefault { .. } => "rrdscale-default".into(),
            DaemonKind::Rrdcached => "rrdcached".into(),
        }
    }

    pub fn is_ours(&self) -> bool {
        matches!(self, DaemonKind::Rrdscale { .. } | DaemonKind::RrdscaleDefault { .. })
    }

    /// Ours with `--sync SYNC`, or with no `--sync` option for `default`
    /// (its policy read from `exe daemon -h`).
    pub fn ours(sync: &str, exe: &Path) -> DaemonKind {
        if sync == "default" {
            DaemonKind::RrdscaleDefault { policy: default_sync_policy(exe).unwrap_or_else(|| "?".into()) }
        } else {
            DaemonKind::Rrdscale { sync: sync.to_string() }
        }
    }
}

/// The `--sync` policy `exe daemon` uses when given none, as its help
/// states it (`--sync always|every:MS|none   … (default always: …`).
pub fn default_sync_policy(exe: &Path) -> Option<String> {
    let out = Command::new(exe).args(["daemon", "-h"]).stdin(Stdio::null()).output().ok()?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    parse_default_sync(&text)
}

fn parse_default_sync(help: &str) -> Option<String> {
    let line = help.lines().find(|l| l.trim_start().starts_with("--sync"))?;
    let rest = &line[line.find("(default")? + "(default".len()..];
    let word = rest.trim_start_matches([':', ' ']).split([' ', ')', ',', ';']).next()?;
    let word = word.trim_end_matches(':');
    (!word.is_empty()).then(|| word.to_string())
}

/// How to start one daemon.
#[derive(Clone, Debug)]
pub struct DaemonSpec {
    pub kind: DaemonKind,
    /// The rrdscale binary (ours) or rrdcached's path.
    pub program: PathBuf,
    /// Socket, journal directory, pid file and log live here.
    pub run_dir: PathBuf,
    pub write_interval_secs: u64,
    pub write_threads: usize,
    /// `--max-pending` (ours only).
    pub max_pending_values: u64,
    /// Extra words appended to the command line.
    pub extra: Vec<String>,
}

impl DaemonSpec {
    pub fn socket(&self) -> PathBuf {
        self.run_dir.join("daemon.sock")
    }

    pub fn journal_dir(&self) -> PathBuf {
        self.run_dir.join("journal")
    }

    pub fn log_file(&self) -> PathBuf {
        self.run_dir.join("daemon.log")
    }

    /// The full command line (program first).
    pub fn command_line(&self) -> Vec<String> {
        let mut v = vec![self.program.display().to_string()];
        if self.kind.is_ours() {
            v.push("daemon".into());
        }
        let w = self.write_interval_secs.max(1);
        v.extend([
            "-g".to_string(),
            "-l".into(),
            format!("unix:{}", self.socket().display()),
            "-j".into(),
            self.journal_dir().display().to_string(),
            "-w".into(),
            w.to_string(),
            "-f".into(),
            (2 * w).to_string(),
            "-t".into(),
            self.write_threads.to_string(),
            "-p".into(),
            self.run_dir.join("daemon.pid").display().to_string(),
        ]);
        if let DaemonKind::Rrdscale { sync } = &self.kind {
            v.extend(["--sync".to_string(), sync.clone()]);
        }
        if self.kind.is_ours() {
            v.extend(["--max-pending".to_string(), self.max_pending_values.to_string()]);
        }
        v.extend(self.extra.iter().cloned());
        v
    }
}

/// Fails loudly when rrdcached is not installed.
pub fn require_rrdcached(path: &Path) -> Result<(), BenchError> {
    if path.is_file() {
        Ok(())
    } else {
        Err(BenchError::Invalid(format!(
            "--vs rrdcached needs rrdcached 1.7.2 at {} (Debian: apt-get install rrdcached)",
            path.display()
        )))
    }
}

/// A running daemon.
pub struct DaemonProc {
    pub spec: DaemonSpec,
    /// The memory cgroup it was started in (and is restarted in).
    cgroup: Option<PathBuf>,
    child: Option<Child>,
    pub pid: u32,
}

impl DaemonProc {
    /// Starts the daemon (in `cgroup` when given) and waits until it answers
    /// PING; returns it with the time that took.
    pub fn start(spec: &DaemonSpec, cgroup: Option<&Path>) -> Result<(DaemonProc, Duration), BenchError> {
        std::fs::create_dir_all(spec.journal_dir())
            .map_err(|e| BenchError::io(format!("creating {}", spec.journal_dir().display()), e))?;
        let _ = std::fs::remove_file(spec.socket());
        let words = spec.command_line();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(spec.log_file())
            .map_err(|e| BenchError::io(format!("opening {}", spec.log_file().display()), e))?;
        let log2 = log.try_clone().map_err(|e| BenchError::io("duplicating the log descriptor", e))?;
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]).stdin(Stdio::null()).stdout(log).stderr(log2);
        if let Some(cg) = cgroup {
            rrd_sys::process::enter_cgroup_at_exec(&mut cmd, cg)
                .map_err(|_| BenchError::Cgroup(format!("{} holds a NUL byte", cg.display())))?;
        }
        let started = Instant::now();
        let child = cmd.spawn().map_err(|e| BenchError::io(format!("starting {}", words.join(" ")), e))?;
        let pid = child.id();
        let mut d =
            DaemonProc { spec: spec.clone(), cgroup: cgroup.map(Path::to_path_buf), child: Some(child), pid };
        d.wait_ready(Duration::from_secs(600))?;
        Ok((d, started.elapsed()))
    }

    /// Polls connect + PING every 2 ms until the daemon answers.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), BenchError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(BenchError::Worker(format!(
                        "{} exited ({status}) before answering PING; its log is {}:\n{}",
                        self.spec.kind.label(),
                        self.spec.log_file().display(),
                        std::fs::read_to_string(self.spec.log_file()).unwrap_or_default()
                    )));
                }
            }
            if let Ok(mut c) = Conn::connect(&self.spec.socket()) {
                if let Ok(r) = c.request("PING") {
                    if r.status >= 0 {
                        return Ok(());
                    }
                }
            }
            if Instant::now() > deadline {
                return Err(BenchError::Worker(format!(
                    "{} did not answer PING within {} s",
                    self.spec.kind.label(),
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub fn connect(&self) -> Result<Conn, BenchError> {
        Conn::connect(&self.spec.socket())
    }

    /// Turns an error met while talking to the daemon into one that says
    /// the daemon died, when it did (a memory cgroup's OOM kill shows as
    /// signal 9), naming its log.
    pub fn explain(&mut self, e: BenchError) -> BenchError {
        let Some(child) = self.child.as_mut() else { return e };
        std::thread::sleep(Duration::from_millis(100));
        match child.try_wait() {
            Ok(Some(status)) => {
                self.child = None;
                BenchError::Worker(format!(
                    "{} died ({status}{}) while the benchmark used it ({e}); its log is {}",
                    self.spec.kind.label(),
                    if status.to_string().contains("signal: 9") {
                        "; with a memory budget this is usually the cgroup's OOM killer: see dmesg"
                    } else {
                        ""
                    },
                    self.spec.log_file().display()
                ))
            }
            _ => e,
        }
    }

    /// SIGTERM, then waits (SIGKILL after `grace`).
    pub fn stop(mut self, grace: Duration) -> Result<(), BenchError> {
        if let Some(mut child) = self.child.take() {
            if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            let deadline = Instant::now() + grace;
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Starts the daemon again, same command line and cgroup, after it was
    /// stopped or killed ([`DaemonProc::kill9`]); returns the time until it
    /// answered PING.
    pub fn restart(&mut self) -> Result<Duration, BenchError> {
        let (d, took) = DaemonProc::start(&self.spec, self.cgroup.as_deref())?;
        *self = d;
        Ok(took)
    }

    /// kill -9 and reap.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for DaemonProc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `?` for a step that talks to a running daemon: on error, says whether
/// the daemon died ([`DaemonProc::explain`]).
#[macro_export]
macro_rules! with_daemon {
    ($daemon:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(err) => return Err($daemon.explain(err)),
        }
    };
}

/// A reply: the status line's number, its text, and the lines that follow.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub status: i64,
    pub message: String,
    pub lines: Vec<String>,
}

/// One blocking client connection.
pub struct Conn {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
}

fn proto(what: impl Into<String>) -> BenchError {
    BenchError::Worker(what.into())
}

impl Conn {
    pub fn connect(socket: &Path) -> Result<Conn, BenchError> {
        let s = UnixStream::connect(socket)
            .map_err(|e| BenchError::io(format!("connecting to {}", socket.display()), e))?;
        let r = s.try_clone().map_err(|e| BenchError::io("cloning a socket", e))?;
        Ok(Conn { writer: s, reader: BufReader::with_capacity(1 << 16, r) })
    }

    fn read_line(&mut self) -> Result<String, BenchError> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).map_err(|e| BenchError::io("reading a reply", e))?;
        if n == 0 {
            return Err(proto("the daemon closed the connection before replying"));
        }
        while line.ends_with('\n') || line.ends_with('\r') {
            line.pop();
        }
        Ok(line)
    }

    /// Reads one reply: `N text`, then N lines when N > 0.
    pub fn read_reply(&mut self) -> Result<Reply, BenchError> {
        let first = self.read_line()?;
        let (num, text) = first.split_once(' ').unwrap_or((first.as_str(), ""));
        let status: i64 = num
            .parse()
            .map_err(|_| proto(format!("the status line '{first}' does not start with a number")))?;
        let mut lines = Vec::new();
        for _ in 0..status.max(0) {
            lines.push(self.read_line()?);
        }
        Ok(Reply { status, message: text.to_string(), lines })
    }

    /// Sends one request line and reads its reply.
    pub fn request(&mut self, line: &str) -> Result<Reply, BenchError> {
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| BenchError::io(format!("sending '{line}'"), e))?;
        self.read_reply()
    }

    /// Sends `BATCH`, the prepared command lines (each ending in `\n`), and
    /// `.`; returns the error lines of the reply (`<command number> <message>`).
    pub fn batch(&mut self, body: &[u8]) -> Result<Vec<String>, BenchError> {
        let go = self.request("BATCH")?;
        if go.status != 0 {
            return Err(proto(format!("BATCH was refused: {} {}", go.status, go.message)));
        }
        self.writer.write_all(body).map_err(|e| BenchError::io("sending a batch", e))?;
        self.writer.write_all(b".\n").map_err(|e| BenchError::io("ending a batch", e))?;
        let r = self.read_reply()?;
        if r.status < 0 {
            return Err(proto(format!("the batch failed: {} {}", r.status, r.message)));
        }
        Ok(r.lines)
    }

    /// `STATS` as name → value.
    pub fn stats(&mut self) -> Result<BTreeMap<String, u64>, BenchError> {
        let r = self.request("STATS")?;
        if r.status < 0 {
            return Err(proto(format!("STATS failed: {}", r.message)));
        }
        Ok(parse_stats(&r.lines))
    }

    /// Discards anything unread (used before closing).
    pub fn drain(&mut self) {
        let mut sink = Vec::new();
        let _ = self.writer.shutdown(std::net::Shutdown::Write);
        let _ = self.reader.read_to_end(&mut sink);
    }
}

/// `Name: value` lines; lines that are not numbers are skipped.
pub fn parse_stats(lines: &[String]) -> BTreeMap<String, u64> {
    lines
        .iter()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// Polls STATS every `period` until the queue is empty, no value is pending
/// (when the daemon reports `PendingValues`) and `UpdatesWritten` has
/// reached `files_written_at_least`. Returns the last STATS.
pub fn wait_drained(
    conn: &mut Conn,
    files_written_at_least: u64,
    period: Duration,
    timeout: Duration,
) -> Result<BTreeMap<String, u64>, BenchError> {
    let deadline = Instant::now() + timeout;
    loop {
        let s = conn.stats()?;
        let queue = s.get("QueueLength").copied().unwrap_or(0);
        let pending = s.get("PendingValues").copied().unwrap_or(0);
        let written = s.get("UpdatesWritten").copied().unwrap_or(0);
        if queue == 0 && pending == 0 && written >= files_written_at_least {
            return Ok(s);
        }
        if Instant::now() > deadline {
            return Err(BenchError::Worker(format!(
                "the daemon did not drain within {} s (QueueLength {queue}, PendingValues {pending}, \
                 UpdatesWritten {written} of {files_written_at_least})",
                timeout.as_secs()
            )));
        }
        std::thread::sleep(period);
    }
}

/// The total size of the files in a journal directory.
pub fn journal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_parse() {
        let lines: Vec<String> = ["QueueLength: 3", "UpdatesWritten: 10", "Junk", "Name: x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let s = parse_stats(&lines);
        assert_eq!(s.get("QueueLength"), Some(&3));
        assert_eq!(s.get("UpdatesWritten"), Some(&10));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn default_sync_from_help() {
        let help = "rrdscale options:\n  --sync always|every:MS|none   When a journaled update is durable (default always:\n";
        assert_eq!(parse_default_sync(help).as_deref(), Some("always"));
        let help = "  --sync always|every:MS|none   When … (default: every:50)\n";
        assert_eq!(parse_default_sync(help).as_deref(), Some("every:50"));
        assert_eq!(parse_default_sync("  --keep-pages (default: release)"), None);
    }

    #[test]
    fn command_lines_match_both_daemons() {
        let spec = DaemonSpec {
            kind: DaemonKind::Rrdscale { sync: "always".into() },
            program: "/bin/rrdscale".into(),
            run_dir: "/r".into(),
            write_interval_secs: 100,
            write_threads: 4,
            max_pending_values: 5,
            extra: vec![],
        };
        let l = spec.command_line().join(" ");
        assert_eq!(
            l,
            "/bin/rrdscale daemon -g -l unix:/r/daemon.sock -j /r/journal -w 100 -f 200 -t 4 \
             -p /r/daemon.pid --sync always --max-pending 5"
        );
        let dflt =
            DaemonSpec { kind: DaemonKind::RrdscaleDefault { policy: "always".into() }, ..spec.clone() };
        assert!(!dflt.command_line().contains(&"--sync".to_string()));
        assert!(dflt.command_line().join(" ").ends_with("-p /r/daemon.pid --max-pending 5"));
        assert_eq!(dflt.kind.label(), "rrdscale (default: always)");
        let rc = DaemonSpec { kind: DaemonKind::Rrdcached, program: RRDCACHED.into(), ..spec };
        assert!(rc.command_line().join(" ").starts_with("/usr/bin/rrdcached -g -l unix:/r/daemon.sock"));
        assert!(!rc.command_line().contains(&"--sync".to_string()));
        assert_eq!(rc.kind.dir_name(), "rrdcached");
    }
}
