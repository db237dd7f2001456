//! Real clients writing through `rrdscale daemon`: collectd's rrdcached
//! plugin and MRTG with `RRDCached:` (the Debian packages `collectd-core`,
//! `mrtg`, `librrds-perl`, `snmpd`, installed by .ci/run; a missing one
//! fails the test).
//!
//! Their values are live (load, memory, interface counters), so the proof
//! is a recording: the client talks to our daemon through a recording proxy
//! that keeps every request line and the daemon's reply bytes, and copies
//! each RRD file the moment the first UPDATE for it passes (the clients
//! create their files themselves, just before). The same request stream is
//! then replayed, against those copies, into the real rrdcached 1.7.2.
//! Required: every reply equal (STATS excepted: its counters are the
//! daemon's own), every file byte-identical after FLUSH, and every file
//! one `rrdtool info` reads.

mod daemon_common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use daemon_common::{require_tools, rrdtool, temp_dir, Daemon, Kind};

const COLLECTD: &str = "/usr/sbin/collectd";
const MRTG: &str = "/usr/bin/mrtg";
const SNMPD: &str = "/usr/sbin/snmpd";

fn require(paths: &[(&str, &str)]) {
    for (path, package) in paths {
        assert!(
            Path::new(path).exists(),
            "{path} is missing: install the Debian package {package} (.ci/run does)"
        );
    }
}

/// One client connection as the proxy saw it.
#[derive(Default)]
struct Session {
    /// Request lines, newline included, in the order they were sent.
    requests: Vec<String>,
    /// Everything the daemon answered, in order.
    replies: Vec<u8>,
    /// The daemon closed its side (after the client closed its own).
    closed: bool,
}

/// A recording proxy between clients and a daemon's UNIX socket.
struct Recorder {
    socket: PathBuf,
    sessions: Arc<Mutex<Vec<Arc<Mutex<Session>>>>>,
    /// Each updated file's bytes just before its first UPDATE went through.
    snapshots: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
}

/// Splits a request line into fields as the daemon does (single spaces,
/// backslash escapes).
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.trim_end_matches(['\n', '\r']).chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' => out.push(String::new()),
            '\\' => out.last_mut().unwrap().extend(chars.next()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

impl Recorder {
    /// How many UPDATE requests went through, in all sessions.
    fn updates(&self) -> usize {
        let sessions = self.sessions.lock().unwrap();
        sessions
            .iter()
            .map(|s| s.lock().unwrap().requests.iter().filter(|r| r.starts_with("update ")).count())
            .sum()
    }

    fn start(socket: PathBuf, upstream: PathBuf) -> Recorder {
        let listener = UnixListener::bind(&socket).unwrap();
        let sessions: Arc<Mutex<Vec<Arc<Mutex<Session>>>>> = Arc::default();
        let snapshots: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
        let (s2, snap2) = (sessions.clone(), snapshots.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let daemon = UnixStream::connect(&upstream).expect("connecting the proxy to the daemon");
                let session = Arc::new(Mutex::new(Session::default()));
                s2.lock().unwrap().push(session.clone());
                // Daemon to client: copy and keep.
                let (mut from_daemon, mut to_client) =
                    (daemon.try_clone().unwrap(), client.try_clone().unwrap());
                let log = session.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 65536];
                    while let Ok(n) = from_daemon.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        // Kept before the client sees it, so a client that
                        // has exited has all its replies recorded.
                        log.lock().unwrap().replies.extend_from_slice(&buf[..n]);
                        let _ = to_client.write_all(&buf[..n]);
                    }
                    let _ = to_client.shutdown(std::net::Shutdown::Write);
                    log.lock().unwrap().closed = true;
                });
                // Client to daemon: line by line, copying files first.
                let snapshots = snap2.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(client);
                    let mut to_daemon = daemon;
                    loop {
                        let mut line = Vec::new();
                        match reader.read_until(b'\n', &mut line) {
                            Ok(0) | Err(_) => break,
                            Ok(_) => {}
                        }
                        let text = String::from_utf8_lossy(&line).into_owned();
                        let f = fields(&text);
                        if f[0].eq_ignore_ascii_case("update") && f.len() > 1 {
                            let mut snaps = snapshots.lock().unwrap();
                            if !snaps.contains_key(&f[1]) {
                                if let Ok(bytes) = std::fs::read(&f[1]) {
                                    snaps.insert(f[1].clone(), bytes);
                                }
                            }
                        }
                        session.lock().unwrap().requests.push(text);
                        if to_daemon.write_all(&line).is_err() {
                            break;
                        }
                    }
                    let _ = to_daemon.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Recorder { socket, sessions, snapshots }
    }
}

/// Reads the reply to `request` off `reader` (a command inside a BATCH has
/// none: an empty string), tracking whether a BATCH is open.
fn read_reply<R: BufRead>(reader: &mut R, request: &str, in_batch: &mut bool) -> String {
    let name = fields(request)[0].to_ascii_uppercase();
    if *in_batch && name != "." {
        return String::new();
    }
    let mut reply = String::new();
    reader.read_line(&mut reply).unwrap();
    let n: i64 = reply.split(' ').next().and_then(|s| s.parse().ok()).unwrap_or(0);
    for _ in 0..n.max(0) {
        reader.read_line(&mut reply).unwrap();
    }
    *in_batch = name == "BATCH" && reply.starts_with("0 ");
    reply
}

/// The replies to `requests`, read off `reader` in order.
fn read_replies<R: BufRead>(reader: &mut R, requests: &[String]) -> Vec<String> {
    let mut in_batch = false;
    requests.iter().map(|r| read_reply(reader, r, &mut in_batch)).collect()
}

/// Replays the recording into a real rrdcached in a fresh directory that
/// starts with the snapshots, then compares replies and flushed files with
/// the original world's.
fn replay_and_compare(rec: &Recorder, ours: &Daemon, base: &Path) {
    // Every exchange finished: each client has gone and the daemon closed.
    let waited = std::time::Instant::now();
    while rec.sessions.lock().unwrap().iter().any(|s| !s.lock().unwrap().closed) {
        assert!(waited.elapsed() < Duration::from_secs(20), "a client connection never closed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sessions: Vec<(Vec<String>, Vec<u8>)> = rec
        .sessions
        .lock()
        .unwrap()
        .iter()
        .map(|s| {
            let s = s.lock().unwrap();
            (s.requests.clone(), s.replies.clone())
        })
        .collect();
    let snapshots = rec.snapshots.lock().unwrap().clone();
    assert!(!snapshots.is_empty(), "the client sent no UPDATE at all");
    let (_t, replay_dir) = temp_dir();
    let base_s = base.display().to_string();
    let replay_s = replay_dir.display().to_string();
    for (path, bytes) in &snapshots {
        let rel = Path::new(path).strip_prefix(base).expect("files live under the base directory");
        let to = replay_dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(&to, bytes).unwrap();
    }
    let theirs = Daemon::start(Kind::Rrdcached, &replay_dir, &[]);
    let mut differences = Vec::new();
    let mut requests_total = 0;
    for (requests, replies) in &sessions {
        requests_total += requests.len();
        let original = read_replies(&mut BufReader::new(&replies[..]), requests);
        let stream = UnixStream::connect(&theirs.socket).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        let mut replayed = Vec::new();
        let mut in_batch = false;
        for req in requests {
            writer.write_all(req.replace(&base_s, &replay_s).as_bytes()).unwrap();
            replayed.push(read_reply(&mut reader, req, &mut in_batch));
        }
        for ((req, a), b) in requests.iter().zip(&original).zip(&replayed) {
            if fields(req)[0].eq_ignore_ascii_case("stats") {
                continue;
            }
            let b = b.replace(&replay_s, &base_s);
            if *a != b {
                differences.push(format!("{req}  rrdscale: {a}  rrdcached: {b}"));
            }
        }
    }
    assert!(requests_total > 0);
    // Write everything, then compare.
    let mut our_client = ours.client();
    let mut their_client = theirs.client();
    for path in snapshots.keys() {
        let ours_reply = our_client.call(&format!("FLUSH {path}"));
        let theirs_reply = their_client.call(&format!("FLUSH {}", path.replace(&base_s, &replay_s)));
        assert!(ours_reply.starts_with("0 "), "{ours_reply}");
        assert!(theirs_reply.starts_with("0 "), "{theirs_reply}");
    }
    for path in snapshots.keys() {
        let replayed = path.replace(&base_s, &replay_s);
        rrdtool(&["info", path]);
        if std::fs::read(path).unwrap() != std::fs::read(&replayed).unwrap() {
            differences.push(format!("{path}: the file differs from rrdcached's"));
        }
    }
    theirs.stop();
    eprintln!(
        "replayed {} connection(s), {requests_total} requests; compared {} files",
        sessions.len(),
        snapshots.len()
    );
    assert!(
        differences.is_empty(),
        "{} differences between rrdscale and rrdcached:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

#[test]
fn collectd_writes_through_our_daemon_like_through_rrdcached() {
    require_tools();
    require(&[(COLLECTD, "collectd-core"), ("/usr/lib/collectd/rrdcached.so", "collectd-core")]);
    // collectd refuses to create directories under a path with a
    // component starting with a dot, as tempfile's default names do.
    let t = tempfile::Builder::new().prefix("rrdscale-collectd-").tempdir().unwrap();
    let dir = std::fs::canonicalize(t.path()).unwrap();
    let ours = Daemon::start(Kind::Ours, &dir, &[]);
    let rec = Recorder::start(dir.join("proxy.sock"), ours.socket.clone());
    let conf = dir.join("collectd.conf");
    let d = dir.display();
    std::fs::write(
        &conf,
        format!(
            "Hostname \"testhost\"\nFQDNLookup false\nInterval 1\nBaseDir \"{d}\"\n\
             PIDFile \"{d}/collectd.pid\"\nPluginDir \"/usr/lib/collectd\"\n\
             TypesDB \"/usr/share/collectd/types.db\"\n\
             LoadPlugin logfile\n<Plugin logfile>\n  LogLevel \"info\"\n  File \"{d}/collectd.log\"\n</Plugin>\n\
             LoadPlugin load\nLoadPlugin memory\nLoadPlugin rrdcached\n\
             <Plugin rrdcached>\n  DaemonAddress \"unix:{d}/proxy.sock\"\n  DataDir \"{d}/data\"\n\
             CreateFiles true\n  CollectStatistics true\n</Plugin>\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(COLLECTD)
        .args(["-C", conf.to_str().unwrap(), "-f"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting collectd");
    // A few intervals, and at least the updates asserted below (a loaded
    // machine may start collectd's reads late).
    std::thread::sleep(Duration::from_millis(4500));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while rec.updates() < 8 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    let log = std::fs::read_to_string(dir.join("collectd.log")).unwrap_or_default();
    assert!(!log.contains("rrdc_update"), "collectd reported failed updates:\n{log}");
    let updates = rec.updates();
    assert!(updates >= 8, "collectd sent only {updates} updates; log:\n{log}");
    replay_and_compare(&rec, &ours, &dir);
    ours.stop();
}

#[test]
fn mrtg_writes_through_our_daemon_like_through_rrdcached() {
    require_tools();
    require(&[(MRTG, "mrtg"), (SNMPD, "snmpd")]);
    let rrds = Command::new("perl").args(["-MRRDs", "-e", "1"]).output().expect("running perl");
    assert!(rrds.status.success(), "perl's RRDs module is missing: install librrds-perl");
    let (_t, dir) = temp_dir();
    let ours = Daemon::start(Kind::Ours, &dir, &[]);
    let rec = Recorder::start(dir.join("proxy.sock"), ours.socket.clone());

    // A local SNMP agent with a known community on a free port.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    std::fs::write(dir.join("snmpd.conf"), "rocommunity public 127.0.0.1\n").unwrap();
    let mut snmpd = rrd_testkit::mrtg::start_snmpd(SNMPD, &dir.join("snmpd.conf"), port);

    let work = dir.join("mrtg");
    std::fs::create_dir_all(&work).unwrap();
    let cfg = dir.join("mrtg.cfg");
    // ifInOctets.1 and ifOutOctets.1 (the loopback), by number: Debian
    // ships no MIBs.
    std::fs::write(
        &cfg,
        format!(
            "WorkDir: {}\nLogFormat: rrdtool\nRRDCached: unix:{}\n\
             Target[lo]: 1.3.6.1.2.1.2.2.1.10.1&1.3.6.1.2.1.2.2.1.16.1:public@127.0.0.1:{port}\n\
             MaxBytes[lo]: 1250000000\nTitle[lo]: loopback\nPageTop[lo]: <h1>loopback</h1>\n",
            work.display(),
            rec.socket.display()
        ),
    )
    .unwrap();
    for run in 0..3 {
        if run > 0 {
            // MRTG stamps updates with whole seconds.
            std::thread::sleep(Duration::from_millis(1200));
        }
        rrd_testkit::mrtg::run_once(Command::new(MRTG), &dir, &cfg);
    }
    let _ = snmpd.kill();
    let _ = snmpd.wait();
    let updates = rec.updates();
    assert_eq!(updates, 3, "one update per mrtg run");
    replay_and_compare(&rec, &ours, &dir);
    ours.stop();
}
