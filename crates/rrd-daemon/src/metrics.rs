//! `--metrics ADDR`: Prometheus text exposition (format 0.0.4) over a tiny
//! HTTP/1.1 responder on its own thread.
//!
//! What is exported: rrdcached's STATS counters, ours (pending values and
//! bytes, journal bytes, syncs and a sync-latency histogram, the poisoned
//! flag, damage the startup replay skipped, flush throughput and errors,
//! refusals, connections), and the host's `Dirty` and `Writeback` from
//! /proc/meminfo (the write-cache stall diagnosis: write-back stalls are what a flush must not
//! cause). Names are `rrdscale_*`,
//! counters end in `_total`, units last (`_bytes`, `_seconds`).
//!
//! The responder answers `GET /metrics` (and `HEAD`), 404 for other paths,
//! 405 for other methods, one request per connection (`Connection:
//! close`). Each connection has its own thread, at most
//! [`MAX_CONNECTIONS`] at once (beyond that new ones wait in the listen
//! backlog), and [`REQUEST_DEADLINE`] from its accept for its whole
//! request head (however it trickles in) and again for the reply: idle or
//! half-sent connections cannot delay a scrape, nor hold a thread for
//! long. It never reads a request body.
//!
//! Deliberately absent: TLS, authentication, keep-alive, compression; a
//! metrics listener belongs on a loopback or management address.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::state::Daemon;
use rrd_metrics::Exposition;

use crate::stats::{tree_depth, Stats};

/// Parses `host:port`, `[v6]:port` or `:port` (every interface) and binds.
pub fn bind(addr: &str) -> Result<TcpListener, String> {
    let spec =
        if let Some(port) = addr.strip_prefix(':') { format!("0.0.0.0:{port}") } else { addr.to_string() };
    let candidates: Vec<SocketAddr> = spec
        .to_socket_addrs()
        .map_err(|e| format!("Invalid --metrics address '{addr}': {e} (expected HOST:PORT or :PORT)"))?
        .collect();
    let mut last = None;
    for a in candidates {
        match TcpListener::bind(a) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(format!(
        "cannot listen for metrics on {addr}: {}",
        last.map_or("no address".into(), |e| crate::config::os_text(&e))
    ))
}

/// More exposition text appended to every scrape (cluster mode's
/// figures).
pub type Extra = Arc<dyn Fn() -> String + Send + Sync>;

/// Serves `listener` until the daemon starts shutting down.
pub fn spawn(listener: TcpListener, daemon: Arc<Daemon>) -> std::io::Result<JoinHandle<()>> {
    spawn_with(listener, daemon, None)
}

/// [`spawn`], each scrape followed by `extra`'s text.
pub fn spawn_with(
    listener: TcpListener,
    daemon: Arc<Daemon>,
    extra: Option<Extra>,
) -> std::io::Result<JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new().name("metrics".into()).spawn(move || loop {
        if daemon.is_shutting_down() {
            return;
        }
        if active.load(Ordering::Acquire) >= MAX_CONNECTIONS {
            // Every slot taken: new connections wait in the backlog until
            // one is answered or reaches its deadline.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                active.fetch_add(1, Ordering::AcqRel);
                let slot = Slot(active.clone());
                let (daemon, extra) = (daemon.clone(), extra.clone());
                let served = std::thread::Builder::new().name("metrics-conn".into()).spawn(move || {
                    let _slot = slot;
                    if let Err(e) = answer(stream, &daemon, extra.as_ref()) {
                        crate::log!(Debug, "metrics request failed: {e}");
                    }
                });
                if let Err(e) = served {
                    // The closure (with its slot) was dropped: the
                    // connection is closed and the slot freed.
                    crate::log!(Warning, "metrics listener: cannot start a thread: {e}");
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => {
                crate::log!(Warning, "metrics listener: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    })
}

/// Longest request head read; anything longer is refused.
const REQUEST_HEAD_MAX: usize = 8192;

/// Connections served at once; more wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 64;

/// Time a connection has for its whole request head, counted from its
/// accept (not from its last byte), and again for writing the reply.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);

/// One taken connection slot, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn answer(mut stream: TcpStream, daemon: &Daemon, extra: Option<&Extra>) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(REQUEST_DEADLINE))?;
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "request head too slow"));
        }
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
        if head.len() > REQUEST_HEAD_MAX {
            return respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"too long\n",
                true,
            );
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let with_body = method != "HEAD";
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let mut body = render(daemon);
            if let Some(extra) = extra {
                body.push_str(&extra());
            }
            respond(&mut stream, "200 OK", rrd_metrics::CONTENT_TYPE, body.as_bytes(), with_body)
        }
        ("GET" | "HEAD", _) => {
            respond(&mut stream, "404 Not Found", "text/plain", b"try /metrics\n", with_body)
        }
        _ => respond(&mut stream, "405 Method Not Allowed", "text/plain", b"GET only\n", true),
    }
}

fn respond(
    s: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if with_body {
        out.extend_from_slice(body);
    }
    s.write_all(&out)?;
    s.flush()
}

/// The host's `Dirty` and `Writeback` in bytes, from /proc/meminfo text.
pub fn parse_meminfo(text: &str) -> (Option<u64>, Option<u64>) {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(':')?.trim();
            let (num, unit) = rest.split_once(' ').unwrap_or((rest, ""));
            let n: u64 = num.parse().ok()?;
            Some(if unit.trim() == "kB" { n * 1024 } else { n })
        })
    };
    (field("Dirty"), field("Writeback"))
}

/// The whole exposition text.
// A flat list of the exposition's metrics, in their order.
#[allow(clippy::too_many_lines)]
pub fn render(daemon: &Daemon) -> String {
    let s = &daemon.stats;
    let c = |a: &std::sync::atomic::AtomicU64| Stats::get(a);
    let mut o = Exposition::new();
    let nodes = daemon.cache.len();
    // rrdcached's STATS, in its order.
    o.gauge(
        "rrdscale_queue_length",
        "Files waiting in the flush queue (STATS QueueLength).",
        daemon.cache.queue_len(),
    );
    o.counter("rrdscale_updates_received_total", "UPDATE commands received.", c(&s.updates_received));
    o.counter("rrdscale_flushes_received_total", "FLUSH commands received.", c(&s.flushes_received));
    o.counter(
        "rrdscale_updates_written_total",
        "Successful file updates by flushes (one per file per flush).",
        c(&s.updates_written),
    );
    o.counter("rrdscale_data_sets_written_total", "Values written into RRD files.", c(&s.data_sets_written));
    o.gauge("rrdscale_files_cached", "Files with a cache entry (STATS TreeNodesNumber).", nodes);
    o.gauge(
        "rrdscale_tree_depth",
        "STATS TreeDepth (the height of a balanced tree of the entries).",
        tree_depth(nodes),
    );
    o.counter("rrdscale_journal_bytes_total", "Bytes appended to the journal.", c(&s.journal_bytes));
    o.counter(
        "rrdscale_journal_rotations_total",
        "Journal segments started by rotation.",
        c(&s.journal_rotate),
    );
    // Ours.
    o.gauge(
        "rrdscale_pending_values",
        "Values accepted and not yet taken by a flush.",
        daemon.cache.pending_values.load(Ordering::SeqCst),
    );
    o.gauge(
        "rrdscale_pending_bytes",
        "Memory the pending values account for (texts plus per-value overhead).",
        daemon.cache.pending_bytes.load(Ordering::SeqCst),
    );
    o.gauge(
        "rrdscale_kept_header_bytes",
        "Memory the kept file headers hold (bounded by --max-kept-bytes).",
        daemon.cache.kept_bytes.load(Ordering::SeqCst),
    );
    o.counter("rrdscale_journal_commits_total", "Group commits (one write each).", c(&s.journal_commits));
    o.counter(
        "rrdscale_journal_append_errors_total",
        "Group commits whose append failed (no acknowledgement).",
        c(&s.journal_append_errors),
    );
    o.counter("rrdscale_journal_syncs_total", "Successful journal fdatasync calls.", c(&s.journal_syncs));
    o.histogram(
        "rrdscale_journal_sync_seconds",
        "Duration of journal fdatasync calls.",
        &s.journal_sync_seconds,
    );
    o.gauge(
        "rrdscale_journal_poisoned",
        "1 when the journal refuses appends after a failure (no UPDATE is acknowledged until restart).",
        u64::from(daemon.journal.is_poisoned()) | c(&s.journal_poisoned),
    );
    o.counter(
        "rrdscale_journal_damaged_regions_total",
        "Damaged journal ranges skipped by the startup replay (the records after each were kept).",
        c(&s.journal_damaged_regions),
    );
    o.counter(
        "rrdscale_journal_damaged_bytes_total",
        "Bytes in the damaged journal ranges skipped by the startup replay.",
        c(&s.journal_damaged_bytes),
    );
    o.counter(
        "rrdscale_accept_errors_total",
        "accept() failures for lack of descriptors or memory (each followed by a 100 ms back-off).",
        c(&s.accept_errors),
    );
    o.counter(
        "rrdscale_connections_idle_closed_total",
        "Connections closed because they sent nothing, or no complete line, for the idle timeout.",
        c(&s.connections_idle_closed),
    );
    o.counter(
        "rrdscale_connections_http_closed_total",
        "Connections closed unheard because their first line was an HTTP request.",
        c(&s.connections_http_closed),
    );
    o.counter(
        "rrdscale_journal_segments_removed_total",
        "Journal segments deleted after their values were synced into RRD files.",
        c(&s.journal_segments_removed),
    );
    o.counter("rrdscale_files_synced_total", "RRD files fdatasync'ed after a flush.", c(&s.files_synced));
    o.counter("rrdscale_flush_errors_total", "File updates by flushes that failed.", c(&s.flush_errors));
    // The flush's page-level work (rrd_engine::batch).
    o.counter(
        "rrdscale_flush_headers_read_total",
        "Headers read by flushes (no kept header, or a stale one).",
        c(&s.headers_read),
    );
    o.counter(
        "rrdscale_flush_headers_kept_total",
        "File updates by flushes that used the kept header and read nothing.",
        c(&s.headers_kept),
    );
    o.counter(
        "rrdscale_flush_pages_prefetched_total",
        "Pages asked for with WILLNEED before flushes wrote them.",
        c(&s.pages_prefetched),
    );
    o.counter("rrdscale_flush_pages_written_total", "Pages written by flushes.", c(&s.pages_written));
    o.counter(
        "rrdscale_flush_pages_released_total",
        "Pages dropped from the page cache after flushes synced them.",
        c(&s.pages_released),
    );
    o.counter(
        "rrdscale_updates_refused_total",
        "UPDATEs refused (memory budget, journal failure).",
        c(&s.updates_refused),
    );
    o.counter(
        "rrdscale_updates_skipped_total",
        "UPDATE values dropped by --skip-past-updates (not later than the file's newest time).",
        c(&s.updates_skipped),
    );
    o.counter("rrdscale_connections_total", "Client connections accepted.", c(&s.connections));
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        let (dirty, writeback) = parse_meminfo(&text);
        if let Some(d) = dirty {
            o.gauge("rrdscale_host_dirty_bytes", "The host's dirty page cache (/proc/meminfo Dirty).", d);
        }
        if let Some(w) = writeback {
            o.gauge(
                "rrdscale_host_writeback_bytes",
                "The host's page cache under write-back (/proc/meminfo Writeback).",
                w,
            );
        }
    }
    o.finish()
}

/// `(name with labels, value)` pairs of a scrape; for tests and
/// `rrdscale` tools that read one.
pub use rrd_metrics::parse_samples as parse_text;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::journaler::Journaler;

    #[test]
    fn meminfo_fields_are_bytes() {
        let text =
            "MemTotal:  100 kB\nDirty:            1234 kB\nWriteback:         0 kB\nWritebackTmp: 5 kB\n";
        assert_eq!(parse_meminfo(text), (Some(1234 * 1024), Some(0)));
        assert_eq!(parse_meminfo("Dirty: x kB\n"), (None, None));
    }

    /// The scrape is valid exposition text (`rrd_metrics::parse`: each
    /// family's HELP and TYPE once, counters end in `_total`, histogram
    /// buckets cumulative up to +Inf, `_sum` and `_count`), and the values
    /// are the counters'.
    #[test]
    fn render_is_valid_exposition_text() {
        let daemon = Daemon::new(Config::default(), Journaler::disabled());
        Stats::add(&daemon.stats.updates_received, 7);
        Stats::add(&daemon.stats.journal_damaged_bytes, 42);
        daemon.stats.journal_sync_seconds.observe(Duration::from_micros(300));
        daemon.stats.journal_sync_seconds.observe(Duration::from_secs(30));
        let text = render(&daemon);
        let scrape = rrd_metrics::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let get = |n: &str| scrape.get(n);
        assert_eq!(get("rrdscale_updates_received_total"), Some(7.0));
        assert_eq!(get("rrdscale_journal_poisoned"), Some(0.0));
        assert_eq!(get("rrdscale_journal_damaged_bytes_total"), Some(42.0));
        assert_eq!(get("rrdscale_journal_damaged_regions_total"), Some(0.0));
        assert_eq!(get("rrdscale_accept_errors_total"), Some(0.0));
        assert_eq!(get("rrdscale_journal_sync_seconds_count"), Some(2.0));
        assert_eq!(get("rrdscale_journal_sync_seconds_bucket{le=\"0.00025\"}"), Some(0.0));
        assert_eq!(get("rrdscale_journal_sync_seconds_bucket{le=\"0.0005\"}"), Some(1.0));
        assert_eq!(get("rrdscale_journal_sync_seconds_bucket{le=\"2.5\"}"), Some(1.0));
        assert_eq!(get("rrdscale_journal_sync_seconds_bucket{le=\"+Inf\"}"), Some(2.0));
        assert!((get("rrdscale_journal_sync_seconds_sum").unwrap() - 30.0003).abs() < 1e-9);
        assert!(get("rrdscale_host_dirty_bytes").is_some(), "/proc/meminfo is readable on Linux");
        assert_eq!(scrape.families.len(), text.lines().filter(|l| l.starts_with("# TYPE ")).count());
        assert_eq!(parse_text(&text).len(), scrape.samples().count());
    }

    #[test]
    fn the_responder_speaks_http() {
        let daemon = Arc::new(Daemon::new(Config::default(), Journaler::disabled()));
        let listener = bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let thread = spawn(listener, daemon.clone()).unwrap();
        let get = |req: &str| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(req.as_bytes()).unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        };
        let ok = get("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        let (head, body) = ok.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())), "{head}");
        assert!(body.contains("rrdscale_queue_length 0\n"));
        let scrape = rrd_metrics::parse(body).unwrap_or_else(|e| panic!("{e}\n{body}"));
        assert_eq!(scrape.get("rrdscale_journal_sync_seconds_count"), Some(0.0));
        assert!(get("GET / HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get("POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        let head = get("HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.ends_with("\r\n\r\n"), "HEAD has no body");
        daemon.shutdown.send_replace(true);
        thread.join().unwrap();
        assert!(bind("no such host:1").is_err());
    }

    /// Idle and half-sent connections (30 silent, 3 with part of a request
    /// head, one dripping a byte at a time) do not delay a scrape, and
    /// each is closed by its deadline, however it trickles.
    #[test]
    fn stalled_connections_do_not_delay_a_scrape() {
        let daemon = Arc::new(Daemon::new(Config::default(), Journaler::disabled()));
        let listener = bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let thread = spawn(listener, daemon.clone()).unwrap();
        let mut stalled: Vec<TcpStream> = (0..30).map(|_| TcpStream::connect(addr).unwrap()).collect();
        for _ in 0..3 {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n").unwrap();
            stalled.push(s);
        }
        let drip_started = Instant::now();
        let mut drip = TcpStream::connect(addr).unwrap();
        let dripping = std::thread::spawn(move || {
            // A byte every 100 ms: a per-read timeout would never fire.
            for b in b"GET /metrics HTTP/1.1\r\nX-Padding: ".iter().chain([b'a'; 100].iter()) {
                if drip.write_all(&[*b]).is_err() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let mut out = Vec::new();
            matches!(drip.read_to_end(&mut out), Ok(0) | Err(_))
        });
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let took = started.elapsed();
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(took < Duration::from_secs(1), "a scrape took {took:?} behind stalled connections");
        // The stalled ones are closed by their deadline.
        for mut s in stalled {
            s.set_read_timeout(Some(REQUEST_DEADLINE * 3)).unwrap();
            let mut rest = Vec::new();
            match s.read_to_end(&mut rest) {
                Ok(_) => assert!(rest.is_empty(), "a stalled connection got {rest:?}"),
                Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "still open: {e}"),
            }
        }
        assert!(dripping.join().unwrap(), "the dripping connection was closed");
        let dripped = drip_started.elapsed();
        assert!(dripped < REQUEST_DEADLINE * 3, "the dripping connection lasted {dripped:?}");
        daemon.shutdown.send_replace(true);
        thread.join().unwrap();
    }
}
