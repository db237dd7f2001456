//! `rrdscale daemon` end to end under journal faults and with `--metrics`:
//!
//! - /metrics is served while the daemon runs, and its numbers follow
//!   updates (received, pending values and bytes, journal bytes and syncs)
//!   and flushes (values written, files synced, pending back to 0);
//! - a failed journal fdatasync (injected through the `fault-injection`
//!   feature's `rrd_daemon::server::inject_journal_faults`, see
//!   [`daemon_child`]):
//!   that UPDATE and every later one get `-1` replies, /metrics shows the
//!   journal poisoned, and after kill -9 and a restart the file is
//!   byte-identical to a copy updated by the real rrdtool with exactly the
//!   acknowledged values, and passes `rrdtool info`;
//! - ENOSPC on an append: one `-1` reply, the next UPDATE is acknowledged,
//!   the journal is not poisoned, and a restart gives exactly the
//!   acknowledged values;
//! - a disk that stays full: every append fails, each UPDATE gets its
//!   `-1`, and the log has one line for the storm plus a summary of how
//!   many were held back, not one line per failed append.
//!
//! Needs rrdtool and rrdcached (apt-get install rrdtool rrdcached); fails
//! loudly without them.

mod daemon_common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use daemon_common::{create_rrd, require_tools, rrdtool, temp_dir, Client, Daemon, Kind};

const T0: i64 = 1_000_000_000;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// In the child process [`start`] spawns for a run with faults: the fault
/// plan, and the daemon's arguments one per line.
const CHILD_FAULTS_ENV: &str = "RRDSCALE_TEST_CHILD_JOURNAL_FAULTS";
const CHILD_ARGS_ENV: &str = "RRDSCALE_TEST_CHILD_DAEMON_ARGS";

/// Not a test: the daemon process of a run with journal faults. A release
/// `rrdscale` has no way to inject faults (no variable, no option; the hook
/// exists only with rrd-daemon's `fault-injection` feature, which this
/// test crate's dev-dependency enables), so [`start`] runs this test binary
/// again with only this function selected, and it calls the same
/// `rrd_daemon::run` as `rrdscale daemon` after planting the faults.
#[test]
#[ignore = "the daemon child process of the fault tests; they run it"]
fn daemon_child() {
    let (Ok(faults), Ok(args)) = (std::env::var(CHILD_FAULTS_ENV), std::env::var(CHILD_ARGS_ENV)) else {
        panic!("run only by the fault tests (needs {CHILD_FAULTS_ENV} and {CHILD_ARGS_ENV})");
    };
    let args: Vec<String> = args.lines().map(str::to_string).collect();
    rrd_daemon::server::inject_journal_faults(&faults).expect("a valid fault plan");
    let status = match rrd_daemon::run(&args, &mut std::io::stdout()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{}", e.message);
            e.status
        }
    };
    std::process::exit(status);
}

/// Starts our daemon on `dir` (journal `dir/journal`, `-w 3600`), with the
/// journal faults `faults` when given (in a [`daemon_child`] process; the
/// real `rrdscale` binary otherwise) and `--metrics` on `port`.
fn start(dir: &Path, port: u16, faults: Option<&str>) -> Daemon {
    let socket = dir.join("sock");
    let log = dir.join("daemon.log");
    let journal = dir.join("journal");
    std::fs::create_dir_all(&journal).unwrap();
    let logf = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
    let args: Vec<String> = [
        vec!["-g".to_string(), "-l".to_string(), format!("unix:{}", socket.display())],
        vec!["-b".to_string(), dir.display().to_string(), "-j".to_string(), journal.display().to_string()],
        vec!["-p".to_string(), dir.join("pid").display().to_string()],
        ["-w", "3600", "-f", "7200", "--tick-ms", "50"].map(String::from).to_vec(),
        vec!["--metrics".to_string(), format!("127.0.0.1:{port}")],
        // The fault semantics under test are those of an fdatasync per ack.
        ["--sync", "always"].map(String::from).to_vec(),
    ]
    .concat();
    let mut cmd = match faults {
        None => {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_rrdscale"));
            cmd.arg("daemon").args(&args);
            cmd
        }
        Some(f) => {
            let mut cmd = Command::new(std::env::current_exe().unwrap());
            cmd.args(["daemon_child", "--exact", "--ignored", "--nocapture", "--test-threads=1", "-q"])
                .env(CHILD_FAULTS_ENV, f)
                .env(CHILD_ARGS_ENV, args.join("\n"));
            cmd
        }
    };
    cmd.env("TZ", "UTC").stdin(Stdio::null()).stdout(logf.try_clone().unwrap()).stderr(logf);
    let child = cmd.spawn().expect("starting rrdscale daemon");
    let d =
        Daemon { kind: Kind::Ours, child, dir: dir.to_path_buf(), socket: socket.clone(), log: log.clone() };
    let started = Instant::now();
    loop {
        if let Ok(s) = std::os::unix::net::UnixStream::connect(&socket) {
            drop(s);
            if scrape_text(port).is_some() {
                return d;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "daemon did not start; log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One HTTP GET; the response (head and body) or None if nobody listens.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn scrape_text(port: u16) -> Option<String> {
    let r = http_get(port, "/metrics")?;
    let (head, body) = r.split_once("\r\n\r\n")?;
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
    Some(body.to_string())
}

/// The samples of one scrape.
struct Scrape(Vec<(String, f64)>, String);

impl Scrape {
    fn get(&self, name: &str) -> f64 {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .unwrap_or_else(|| panic!("{name} is not in the scrape:\n{}", self.1))
            .1
    }
}

fn scrape(port: u16) -> Scrape {
    let text = scrape_text(port).expect("the metrics listener answers");
    let samples = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap_or_else(|| panic!("bad sample line {l:?}"));
            (k.to_string(), v.parse::<f64>().unwrap_or_else(|_| panic!("bad value in {l:?}")))
        })
        .collect();
    Scrape(samples, text)
}

fn value(k: i64, i: i64) -> String {
    format!("{}:{}:{}", T0 + 300 * k, k * 10 + i, k * 1000 + i)
}

#[test]
fn metrics_follow_updates_and_flushes() {
    require_tools();
    let (_t, dir) = temp_dir();
    let files = ["a.rrd", "b.rrd", "c.rrd"];
    for f in files {
        create_rrd(&dir.join(f), T0);
    }
    let port = free_port();
    let daemon = start(&dir, port, None);
    let before = scrape(port);
    assert_eq!(before.get("rrdscale_updates_received_total"), 0.0);
    assert_eq!(before.get("rrdscale_pending_values"), 0.0);
    assert_eq!(before.get("rrdscale_files_cached"), 0.0);
    assert_eq!(before.get("rrdscale_journal_poisoned"), 0.0);
    assert!(before.get("rrdscale_host_dirty_bytes") >= 0.0);
    assert!(before.get("rrdscale_host_writeback_bytes") >= 0.0);
    assert!(http_get(port, "/other").unwrap().starts_with("HTTP/1.1 404"));

    let mut c = daemon.client();
    for k in 1..=2 {
        for (i, f) in files.iter().enumerate() {
            let r = c.call(&format!("UPDATE {f} {} {}", value(2 * k - 1, i as i64), value(2 * k, i as i64)));
            assert_eq!(r, "0 errors, enqueued 2 value(s).\n");
        }
    }
    let during = scrape(port);
    assert_eq!(during.get("rrdscale_updates_received_total"), 6.0);
    assert_eq!(during.get("rrdscale_pending_values"), 12.0);
    assert!(during.get("rrdscale_pending_bytes") >= 12.0 * value(1, 0).len() as f64, "{}", during.1);
    assert_eq!(during.get("rrdscale_files_cached"), 3.0);
    assert_eq!(during.get("rrdscale_data_sets_written_total"), 0.0);
    assert!(during.get("rrdscale_journal_bytes_total") > 0.0);
    let syncs = during.get("rrdscale_journal_syncs_total");
    assert!(syncs >= 1.0, "--sync always syncs before acknowledging");
    assert_eq!(during.get("rrdscale_journal_sync_seconds_count"), syncs);
    assert_eq!(during.get("rrdscale_journal_sync_seconds_bucket{le=\"+Inf\"}"), syncs);
    assert!(during.get("rrdscale_connections_total") >= 1.0);

    assert!(c.call("FLUSHALL").starts_with("0 "));
    let started = Instant::now();
    let after = loop {
        let s = scrape(port);
        if s.get("rrdscale_data_sets_written_total") == 12.0 && s.get("rrdscale_files_synced_total") >= 3.0 {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the flush did not show up:\n{}", s.1);
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(after.get("rrdscale_pending_values"), 0.0);
    assert_eq!(after.get("rrdscale_pending_bytes"), 0.0);
    assert_eq!(after.get("rrdscale_updates_written_total"), 3.0);
    assert_eq!(after.get("rrdscale_flush_errors_total"), 0.0);
    assert!(after.get("rrdscale_flush_pages_written_total") >= 3.0, "{}", after.1);
    assert_eq!(after.get("rrdscale_queue_length"), 0.0);
    // STATS says the same as /metrics.
    let stats = c.call("STATS");
    assert!(stats.contains("DataSetsWritten: 12\n") && stats.contains("UpdatesReceived: 6\n"), "{stats}");
    drop(c);
    daemon.stop();
}

/// Updates `f.rrd` through `c`, returning the values acknowledged; asserts
/// the replies `expect` gives (`true`: acknowledged).
fn send_updates(c: &mut Client, expect: &[(i64, bool, &str)]) -> Vec<String> {
    let mut acked = Vec::new();
    for &(k, ok, error) in expect {
        let v = value(k, 0);
        let r = c.call(&format!("UPDATE f.rrd {v}"));
        if ok {
            assert_eq!(r, "0 errors, enqueued 1 value(s).\n", "update {k}");
            acked.push(v);
        } else {
            assert!(
                r.starts_with("-1 ") && r.contains(error),
                "update {k}: expected an error with {error:?}, got {r:?}"
            );
        }
    }
    acked
}

/// Restart without faults, flush, stop; the file must equal the reference
/// updated by rrdtool with exactly `acked`, and pass `rrdtool info`.
fn restart_and_compare(dir: &Path, acked: &[String]) {
    let port = free_port();
    let daemon = start(dir, port, None);
    let mut c = daemon.client();
    let r = c.call("FLUSH f.rrd");
    assert!(r.starts_with("0 "), "{r}");
    assert_eq!(scrape(port).get("rrdscale_journal_poisoned"), 0.0, "a restart starts a sound journal");
    drop(c);
    daemon.stop();
    let reference = dir.join("reference/f.rrd");
    let mut args = vec!["update", reference.to_str().unwrap()];
    args.extend(acked.iter().map(String::as_str));
    rrdtool(&args);
    assert!(
        std::fs::read(dir.join("f.rrd")).unwrap() == std::fs::read(&reference).unwrap(),
        "after restart f.rrd differs from rrdtool's file with exactly the acknowledged values {acked:?}"
    );
    assert!(rrdtool(&["info", dir.join("f.rrd").to_str().unwrap()]).contains("last_update = "));
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let (t, dir) = temp_dir();
    create_rrd(&dir.join("f.rrd"), T0);
    std::fs::create_dir_all(dir.join("reference")).unwrap();
    std::fs::copy(dir.join("f.rrd"), dir.join("reference/f.rrd")).unwrap();
    (t, dir)
}

#[test]
fn a_failed_journal_sync_stops_acknowledgements_until_restart() {
    require_tools();
    let (_t, dir) = setup();
    let port = free_port();
    // The third append's fdatasync fails.
    let daemon = start(&dir, port, Some("sync@3=EIO"));
    let mut c = daemon.client();
    let acked = send_updates(
        &mut c,
        &[
            (1, true, ""),
            (2, true, ""),
            (3, false, "Journal write failed, update not acknowledged"),
            (4, false, "Journal failure"),
            (5, false, "Journal failure"),
        ],
    );
    let s = scrape(port);
    assert_eq!(s.get("rrdscale_journal_poisoned"), 1.0);
    assert_eq!(s.get("rrdscale_journal_append_errors_total"), 1.0);
    assert_eq!(s.get("rrdscale_updates_refused_total"), 2.0);
    assert_eq!(s.get("rrdscale_journal_syncs_total"), 2.0);
    assert!(c.call("STATS").contains("UpdatesRefused: 2\n"));
    assert_eq!(c.call("PING"), "0 PONG\n", "the daemon still serves other commands");
    drop(c);
    daemon.kill9();
    restart_and_compare(&dir, &acked);
}

#[test]
fn enospc_on_the_journal_is_an_error_reply_and_the_daemon_recovers() {
    require_tools();
    let (_t, dir) = setup();
    let port = free_port();
    // The second append finds no space; the third finds space again.
    let daemon = start(&dir, port, Some("write@2=ENOSPC"));
    let mut c = daemon.client();
    let acked = send_updates(
        &mut c,
        &[(1, true, ""), (2, false, "No space left on device"), (3, true, ""), (4, true, "")],
    );
    let s = scrape(port);
    assert_eq!(s.get("rrdscale_journal_poisoned"), 0.0);
    assert_eq!(s.get("rrdscale_journal_append_errors_total"), 1.0);
    drop(c);
    daemon.kill9();
    restart_and_compare(&dir, &acked);
}

#[test]
fn a_lasting_enospc_is_logged_once_then_summarised() {
    require_tools();
    let (_t, dir) = setup();
    let port = free_port();
    // The first append succeeds; every later one finds no space.
    let daemon = start(&dir, port, Some("write@2+=ENOSPC"));
    let mut c = daemon.client();
    let mut expect = vec![(1, true, "")];
    expect.extend((2..=301).map(|k| (k, false, "No space left on device")));
    send_updates(&mut c, &expect);
    let s = scrape(port);
    assert_eq!(s.get("rrdscale_journal_append_errors_total"), 300.0);
    drop(c);
    let log_path = daemon.log.clone();
    daemon.stop();
    let log = std::fs::read_to_string(&log_path).unwrap();
    let failed: Vec<&str> = log.lines().filter(|l| l.contains("journal append failed")).collect();
    assert!(
        !failed.is_empty() && failed.len() <= 3,
        "{} lines for 300 failed appends:\n{}",
        failed.len(),
        failed.iter().take(10).copied().collect::<Vec<_>>().join("\n")
    );
    let held: u64 = failed
        .iter()
        .filter_map(|l| l.split("last message repeated ").nth(1)?.split(' ').next()?.parse::<u64>().ok())
        .sum();
    let full = failed.iter().filter(|l| !l.contains("last message repeated")).count() as u64;
    assert_eq!(full + held, 300, "every failure is written or counted:\n{}", failed.join("\n"));
}
