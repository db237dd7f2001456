//! `--pattern roundtrip`: one `UPDATE` per request, each reply awaited, as
//! collectd's rrdcached plugin, `rrdtool update --daemon`, MRTG and Munin
//! send.
//!
//! `--clients` threads (default 1), each with one blocking UNIX socket,
//! own the files `f ≡ c (mod clients)` and walk them round-robin: round r
//! sends every file of the client its value r (at start + r·step), as a
//! poller does once per interval. A request is formatted into a reused
//! buffer, written with one `write`, and its reply line read into a reused
//! buffer; the client allocates nothing per request (only the first failed
//! reply's text is kept). Every reply must be exactly
//! `0 errors, enqueued 1 value(s).` (rrdcached's and ours).
//!
//! The clock starts when every client is connected and released together,
//! and runs for `--secs` (each client stops at its first reply after the
//! deadline) or `--rounds` rounds; values/s counts every client's replies
//! over that wall time. Each request is timed from just before its write
//! to just after its reply line is read, into a log-bucket histogram per
//! client ([`Histogram`]), merged at the end.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::{measure_side, ratios, IngestArgs, PerFile, Sent};
use crate::daemon::common::{col, DaemonSideResult};
use crate::daemon::workload::{Report, Run, Side};
use crate::latency::Histogram;
use crate::schema::Schema;
use crate::workload::file_path;
use crate::BenchError;

/// The reply to a successful single-value UPDATE, without its newline.
pub const UPDATE_OK: &[u8] = b"0 errors, enqueued 1 value(s).";

/// When the clients stop.
#[derive(Clone, Copy, Debug)]
pub enum Stop {
    After(Duration),
    Rounds(u64),
}

/// One client's files: (file index, path).
pub type Share = Vec<(u64, Vec<u8>)>;

/// The files of each of `clients` clients: client c gets f ≡ c (mod clients).
pub fn shares(dir: &Path, files: u64, clients: usize) -> Vec<Share> {
    let mut v: Vec<Share> = vec![Vec::new(); clients];
    for f in 0..files {
        v[(f % clients as u64) as usize].push((f, file_path(dir, f).display().to_string().into_bytes()));
    }
    v
}

/// How many values file `i` received when client `i mod clients` got
/// `replies[client]` replies walking its files round-robin.
pub fn values_of_file(i: u64, files: u64, replies: &[u64]) -> u64 {
    let clients = replies.len() as u64;
    let c = i % clients;
    let m = (files - c).div_ceil(clients); // the client's files
    let j = i / clients; // position among them
    let sent = replies[c as usize];
    sent / m + u64::from(j < sent % m)
}

/// What the clients did.
pub struct Outcome {
    pub secs: f64,
    /// Replies read, per client.
    pub replies: Vec<u64>,
    pub errors: u64,
    pub first_error: Option<String>,
    pub latency: Histogram,
}

/// Reads reply lines from a stream through one reused buffer.
struct LineReader {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl LineReader {
    fn new() -> LineReader {
        LineReader { buf: vec![0; 1 << 16], start: 0, end: 0 }
    }

    /// The next line (without its `\n`), as a range of `self.buf`.
    fn line(&mut self, s: &mut UnixStream) -> Result<std::ops::Range<usize>, BenchError> {
        loop {
            if let Some(p) = self.buf[self.start..self.end].iter().position(|&b| b == b'\n') {
                let r = self.start..self.start + p;
                self.start += p + 1;
                return Ok(r);
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                return Err(BenchError::Worker("a reply line is longer than 64 KiB".into()));
            }
            let n = s.read(&mut self.buf[self.end..]).map_err(|e| BenchError::io("reading a reply", e))?;
            if n == 0 {
                return Err(BenchError::Worker("the daemon closed the connection before replying".into()));
            }
            self.end += n;
        }
    }
}

/// Runs `shares.len()` clients against `socket`.
pub fn send(
    socket: &Path,
    shares: Vec<Share>,
    schema: &Schema,
    start: i64,
    stop: Stop,
) -> Result<Outcome, BenchError> {
    let barrier = Arc::new(Barrier::new(shares.len() + 1));
    let mut handles = Vec::new();
    for share in shares {
        let mut stream = UnixStream::connect(socket)
            .map_err(|e| BenchError::io(format!("connecting to {}", socket.display()), e))?;
        let (barrier, schema) = (barrier.clone(), schema.clone());
        handles.push(std::thread::spawn(
            move || -> Result<(u64, u64, Option<String>, Histogram), BenchError> {
                let step = schema.step_secs as i64;
                let mut reader = LineReader::new();
                let mut line = Vec::with_capacity(4096);
                let mut hist = Histogram::new();
                let (mut replies, mut errors, mut first) = (0u64, 0u64, None);
                barrier.wait();
                let deadline = match stop {
                    Stop::After(d) => Some(Instant::now() + d),
                    Stop::Rounds(_) => None,
                };
                let rounds = match stop {
                    Stop::After(_) => u64::MAX,
                    Stop::Rounds(n) => n,
                };
                'rounds: for round in 1..=rounds {
                    let t = start + round as i64 * step;
                    for (f, path) in &share {
                        line.clear();
                        line.extend_from_slice(b"UPDATE ");
                        line.extend_from_slice(path);
                        line.push(b' ');
                        schema.push_update_arg(&mut line, *f, t);
                        line.push(b'\n');
                        let sent_at = Instant::now();
                        stream.write_all(&line).map_err(|e| BenchError::io("sending an UPDATE", e))?;
                        let r = reader.line(&mut stream)?;
                        let now = Instant::now();
                        hist.record(now.duration_since(sent_at).as_nanos() as u64);
                        replies += 1;
                        if reader.buf[r.clone()] != *UPDATE_OK {
                            errors += 1;
                            let text = String::from_utf8_lossy(&reader.buf[r.clone()]).into_owned();
                            // A positive status announces that many more lines.
                            let more: i64 = text.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
                            for _ in 0..more.max(0) {
                                reader.line(&mut stream)?;
                            }
                            first.get_or_insert_with(|| format!("{}: {text}", String::from_utf8_lossy(path)));
                        }
                        if deadline.is_some_and(|d| now >= d) {
                            break 'rounds;
                        }
                    }
                }
                let _ = stream.write_all(b"QUIT\n");
                Ok((replies, errors, first, hist))
            },
        ));
    }
    barrier.wait();
    let t = Instant::now();
    let mut o =
        Outcome { secs: 0.0, replies: Vec::new(), errors: 0, first_error: None, latency: Histogram::new() };
    let mut failed = None;
    for h in handles {
        match h.join().map_err(|_| BenchError::Worker("a client thread panicked".into()))? {
            Ok((replies, errors, first, hist)) => {
                o.replies.push(replies);
                o.errors += errors;
                if o.first_error.is_none() {
                    o.first_error = first;
                }
                o.latency.merge(&hist);
            }
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    o.secs = t.elapsed().as_secs_f64();
    match failed {
        Some(e) => Err(e),
        None => Ok(o),
    }
}

/// The transport's floor for this daemon: `clients` clients each sending
/// `PING` and waiting for `PONG` for `secs`, as fast as they can. Round
/// trips per second: what no UPDATE path can beat with these clients on
/// this machine (a PING does no work at all).
pub fn ping_floor(socket: &Path, clients: usize, secs: Duration) -> Result<f64, BenchError> {
    let barrier = Arc::new(Barrier::new(clients + 1));
    let mut handles = Vec::new();
    for _ in 0..clients {
        let mut stream = UnixStream::connect(socket)
            .map_err(|e| BenchError::io(format!("connecting to {}", socket.display()), e))?;
        let barrier = barrier.clone();
        handles.push(std::thread::spawn(move || -> Result<u64, BenchError> {
            let mut reader = LineReader::new();
            barrier.wait();
            let deadline = Instant::now() + secs;
            let mut n = 0u64;
            while Instant::now() < deadline {
                stream.write_all(b"PING\n").map_err(|e| BenchError::io("sending PING", e))?;
                let r = reader.line(&mut stream)?;
                if reader.buf[r] != *b"0 PONG" {
                    return Err(BenchError::Worker("PING did not get PONG".into()));
                }
                n += 1;
            }
            let _ = stream.write_all(b"QUIT\n");
            Ok(n)
        }));
    }
    barrier.wait();
    let t = Instant::now();
    let mut total = 0;
    for h in handles {
        total += h.join().map_err(|_| BenchError::Worker("a PING client panicked".into()))??;
    }
    Ok(total as f64 / t.elapsed().as_secs_f64())
}

/// The machine's floor for these clients: the same clients sending the
/// same UPDATE lines for `secs` to a server in this process that does no
/// work at all (a blocking thread per connection answering each line with
/// [`UPDATE_OK`]: what rrdcached's transport is, minus everything it does).
/// Round trips per second; no daemon can beat it by much with these
/// clients on this machine. Measured right after each side, so under the
/// same conditions.
///
/// `socket`: where to listen (a path nothing else uses; removed after).
pub fn echo_floor(
    socket: &Path,
    shares: Vec<Share>,
    schema: &Schema,
    start: i64,
    secs: Duration,
) -> Result<f64, BenchError> {
    let _ = std::fs::remove_file(socket);
    let listener = std::os::unix::net::UnixListener::bind(socket)
        .map_err(|e| BenchError::io(format!("binding {}", socket.display()), e))?;
    let clients = shares.len();
    let server = std::thread::spawn(move || {
        let mut connections = Vec::new();
        for _ in 0..clients {
            let Ok((stream, _)) = listener.accept() else { break };
            connections.push(std::thread::spawn(move || echo(stream)));
        }
        for c in connections {
            let _ = c.join();
        }
    });
    let o = send(socket, shares, schema, start, Stop::After(secs));
    let _ = server.join();
    let _ = std::fs::remove_file(socket);
    let o = o?;
    Ok(o.replies.iter().sum::<u64>() as f64 / o.secs)
}

/// Answers every line received on `stream` with [`UPDATE_OK`] until the
/// client leaves.
fn echo(mut stream: UnixStream) {
    let mut buf = vec![0u8; 64 << 10];
    let mut out = Vec::new();
    while let Ok(n @ 1..) = stream.read(&mut buf) {
        out.clear();
        for _ in buf[..n].iter().filter(|&&b| b == b'\n') {
            out.extend_from_slice(UPDATE_OK);
            out.push(b'\n');
        }
        if stream.write_all(&out).is_err() {
            return;
        }
    }
}

/// When the clients stop: `--rounds`, else `--secs`.
fn stop_of(a: &IngestArgs) -> Stop {
    match a.rounds {
        Some(n) => Stop::Rounds(n),
        None => Stop::After(Duration::from_secs_f64(a.secs)),
    }
}

pub(super) fn side(a: &IngestArgs, run: &Run, side: &mut Side) -> Result<PerFile, BenchError> {
    let c = &run.common;
    let clients = c.clients.unwrap_or(1);
    let stop = stop_of(a);
    let files = run.files;
    // Room for every value the fastest daemon could take in the time.
    let most = match stop {
        Stop::Rounds(n) => files * n,
        Stop::After(d) => (d.as_secs_f64() * 2e6) as u64,
    };
    let shares = shares(&side.dirs.files, files, clients);
    let echo_shares = shares.clone();
    measure_side(a, run, side, most.max(10_000_000) * 2, shares, |shares, spec, r| {
        let o = send(&spec.socket(), shares, &run.schema, c.start_time, stop)?;
        let us = |ns: f64| ns / 1000.0;
        r.set("clients", clients as f64);
        r.set("p50_us", us(o.latency.quantile_ns(0.5)));
        r.set("p99_us", us(o.latency.quantile_ns(0.99)));
        r.set("p999_us", us(o.latency.quantile_ns(0.999)));
        r.set("max_us", us(o.latency.max_ns() as f64));
        r.set("mean_us", us(o.latency.mean_ns()));
        let total: u64 = o.replies.iter().sum();
        let replies = o.replies.clone();
        // After the timed part: the same clients with PING only.
        let ping = ping_floor(&spec.socket(), clients, Duration::from_secs(2))?;
        r.set("ping_per_s", ping);
        r.set("share_of_ping", total as f64 / o.secs / ping);
        let echo_socket = spec.socket().with_file_name("echo-floor.sock");
        let echo = echo_floor(&echo_socket, echo_shares, &run.schema, c.start_time, Duration::from_secs(2))?;
        r.set("echo_per_s", echo);
        r.set("share_of_echo", total as f64 / o.secs / echo);
        eprintln!(
            "{}: {total} UPDATEs, latency p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
            r.label(),
            r.get("p50_us"),
            r.get("p99_us"),
            r.get("p999_us"),
            r.get("max_us")
        );
        Ok(Sent {
            lines: total,
            values: total,
            errors: o.errors,
            first_error: o.first_error,
            secs: o.secs,
            per_file: Box::new(move |i| values_of_file(i, files, &replies)),
        })
    })
}

pub(super) fn report(a: &IngestArgs, run: &Run, sides: &[DaemonSideResult]) -> Report {
    let clients = run.common.clients.unwrap_or(1);
    let files = run.files;
    let duration = match stop_of(a) {
        Stop::Rounds(n) => format!("{n} rounds"),
        Stop::After(d) => format!("{} s", d.as_secs_f64()),
    };
    let params = vec![
        ("pattern", "roundtrip".to_string()),
        ("clients", clients.to_string()),
        ("files per client", format!("{}–{}", files / clients as u64, files.div_ceil(clients as u64))),
        ("measured for", duration),
    ];
    let columns = vec![
        col("values_sent", "UPDATEs", 0),
        col("secs", "seconds", 3),
        col("values_per_s", "values/s", 0),
        col("p50_us", "p50 µs", 1),
        col("p99_us", "p99 µs", 1),
        col("p999_us", "p99.9 µs", 1),
        col("max_us", "max µs", 1),
        col("cpu_us_per_value", "daemon CPU µs/value", 2),
        col("journal_syncs", "journal syncs", 0),
        col("errors", "errors", 0),
        col("ping_per_s", "PING round trips/s", 0),
        col("share_of_ping", "UPDATEs / PINGs", 2),
        col("echo_per_s", "echo floor round trips/s", 0),
        col("share_of_echo", "UPDATEs / echo floor", 2),
    ];
    let mut r = Report::new(run, columns, params);
    r.ratios = ratios(
        sides,
        &[
            ("values_per_s", "values/s", true),
            ("p50_us", "p50 latency", false),
            ("p99_us", "p99 latency", false),
        ],
    );
    r.notes = vec![
        "PING round trips/s: afterwards, the same clients send PING and wait for PONG for 2 s: the \
         round trip this daemon's transport allows these clients on this machine, which no UPDATE \
         can beat; UPDATEs / PINGs is how close the UPDATE path comes to it."
            .into(),
        "Echo floor: after that, the same clients send the same UPDATE lines for 2 s to a server in \
         the benchmark's process that does no work (a blocking thread per connection answering every \
         line with the success reply): the round trip these clients get on this machine from a \
         transport alone, measured after each side under that side's conditions."
            .into(),
        "Each client sends one `UPDATE <file> <t>:<v>:<v>` and waits for its reply before the next, \
         walking its own files round-robin, one step later per round (as collectd's rrdcached plugin, \
         `rrdtool update --daemon`, MRTG and Munin do). values/s: every client's replies over the \
         wall time from the common start until the last client stopped. Latency: each request from \
         its write to its reply line read, all clients together (log-bucket histogram, within 0.8%). \
         Under --sync always each reply waits for the fdatasync of its record (clients waiting at \
         once share one); rrdcached appends its journal without syncing. The first round is every \
         file's first UPDATE since the daemon started."
            .into(),
    ];
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_disjoint_and_counts_follow_round_robin() {
        let s = shares(Path::new("/d"), 7, 3);
        let idx: Vec<Vec<u64>> = s.iter().map(|v| v.iter().map(|(f, _)| *f).collect()).collect();
        assert_eq!(idx, vec![vec![0, 3, 6], vec![1, 4], vec![2, 5]]);
        assert_eq!(s[1][0].1, b"/d/0000/0000001.rrd");
        // Client 0 replied 4 times: files 0, 3, 6, then 0 again.
        let replies = [4, 2, 5];
        let got: Vec<u64> = (0..7).map(|i| values_of_file(i, 7, &replies)).collect();
        assert_eq!(got, vec![2, 1, 3, 1, 1, 2, 1]);
        assert_eq!(got.iter().sum::<u64>(), replies.iter().sum::<u64>());
    }
}
