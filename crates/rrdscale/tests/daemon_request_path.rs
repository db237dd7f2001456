//! The daemon's request path as operators and attackers meet it: `-B`
//! confinement enforced at every open (a symbolic link swapped in after the
//! first UPDATE must not let the flush escape), `LIST /` under `-B`, LAST
//! with pending values equal to `rrdtool last` after a flush, control
//! bytes and absurd timestamps refused with an error line, descriptor
//! exhaustion without a spinning accept loop, and the idle timeout.

mod daemon_common;

use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::{Duration, Instant};

use daemon_common::{create_rrd, require_tools, rrdtool, stat_field, temp_dir, Client, Daemon, Kind};

const T0: i64 = 1_000_000_000;

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line (11, 12 here).
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// Under -B, a file replaced by a symbolic link to a file outside the base
/// directory after its first UPDATE (entry cached, values pending) is never
/// written: the flush opens beneath the base directory's descriptor and is
/// refused, the outside file keeps its bytes, and the link is reported.
#[test]
fn a_symlink_swapped_in_after_the_first_update_does_not_escape_the_base() {
    require_tools();
    let (_t, dir) = temp_dir();
    let (_o, outside) = temp_dir();
    let file = dir.join("f.rrd");
    create_rrd(&file, T0);
    let target = outside.join("victim.rrd");
    create_rrd(&target, T0);
    let victim_before = std::fs::read(&target).unwrap();
    let d = Daemon::start(Kind::Ours, &dir, &["-B"]);
    let mut c = d.client();
    assert_eq!(c.call(&format!("UPDATE f.rrd {}:1:1", T0 + 300)), "0 errors, enqueued 1 value(s).\n");
    // Swap: the cached file becomes a link to a file outside the base.
    std::fs::rename(&file, dir.join("moved.rrd")).unwrap();
    std::os::unix::fs::symlink(&target, &file).unwrap();
    assert_eq!(c.call(&format!("UPDATE f.rrd {}:2:2", T0 + 600)), "0 errors, enqueued 1 value(s).\n");
    let flushed = c.call("FLUSH f.rrd");
    let stats = c.call("STATS");
    assert!(stat_field(&stats, "FlushErrors") >= 1, "the refused flush is counted:\n{stats}\n{flushed}");
    assert_eq!(std::fs::read(&target).unwrap(), victim_before, "the file outside the base was written");
    // Reads are confined the same way.
    let fetch = c.call(&format!("FETCH f.rrd AVERAGE {} {}", T0, T0 + 900));
    assert!(fetch.starts_with('-') && fetch.contains("Permission denied"), "{fetch}");
    let last = c.call("LAST f.rrd");
    assert!(last.starts_with('-'), "{last}");
    // A new entry through a link out of the base is refused at its first UPDATE.
    std::os::unix::fs::symlink(&target, dir.join("g.rrd")).unwrap();
    let r = c.call(&format!("UPDATE g.rrd {}:1:1", T0 + 300));
    assert!(r.starts_with("-1 ") && r.contains("Permission denied"), "{r}");
    // A link that stays inside the base is followed, as rrdcached does.
    std::os::unix::fs::symlink(dir.join("moved.rrd"), dir.join("inside.rrd")).unwrap();
    let r = c.call(&format!("UPDATE inside.rrd {}:1:1", T0 + 900));
    assert_eq!(r, "0 errors, enqueued 1 value(s).\n");
    d.stop();
    assert_eq!(std::fs::read(&target).unwrap(), victim_before);
}

/// `LIST /` under -B lists the base directory, as rrdcached does.
#[test]
fn list_of_the_base_directory_under_base_only() {
    require_tools();
    let (_t, dir) = temp_dir();
    create_rrd(&dir.join("a.rrd"), T0);
    std::fs::create_dir(dir.join("sub")).unwrap();
    create_rrd(&dir.join("sub/b.rrd"), T0);
    let mut replies = Vec::new();
    for kind in [Kind::Rrdcached, Kind::Ours] {
        let d = Daemon::start(kind, &dir, &["-B"]);
        let mut c = d.client();
        let sorted = |r: String| {
            let mut lines: Vec<String> = r.lines().map(str::to_string).collect();
            lines[1..].sort();
            lines.join("\n")
        };
        replies.push((sorted(c.call("LIST /")), sorted(c.call("LIST RECURSIVE /"))));
        d.stop();
    }
    assert!(replies[1].0.starts_with("4 RRDs\na.rrd\n"), "{:?}", replies[1]);
    assert!(replies[1].1.contains("sub/b.rrd"), "{:?}", replies[1]);
    assert_eq!(replies[1], replies[0], "ours vs rrdcached");
}

/// `rrdtool last --daemon` equals `rrdtool last` after the same updates
/// (times off the step and fractional ones included): LAST answers what
/// the file will say once its pending values are written.
#[test]
fn last_through_the_daemon_equals_rrdtool_last() {
    require_tools();
    let (_t, dir) = temp_dir();
    let file = dir.join("f.rrd");
    create_rrd(&file, T0);
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let sock = format!("unix:{}", d.socket.display());
    let f = file.to_str().unwrap();
    let mut c = d.client();
    for (i, t) in [T0 + 300, T0 + 410, T0 + 777].iter().enumerate() {
        assert_eq!(c.call(&format!("UPDATE f.rrd {t}:{i}:{i}")), "0 errors, enqueued 1 value(s).\n");
        let via_daemon = rrdtool(&["last", "--daemon", &sock, f]);
        assert_eq!(via_daemon.trim(), t.to_string(), "LAST with pending values");
    }
    assert!(c.call(&format!("UPDATE f.rrd {}.25:5:5", T0 + 900)).starts_with("0 "));
    let via_daemon = rrdtool(&["last", "--daemon", &sock, f]);
    assert!(c.call("FLUSH f.rrd").starts_with("0 "));
    let direct = rrdtool(&["last", f]);
    assert_eq!(via_daemon, direct);
    assert_eq!(direct.trim(), (T0 + 900).to_string());
    d.stop();
}

/// Control bytes in a value and timestamps far in the future get an error
/// line naming what was wrong; nothing of them is kept.
#[test]
fn control_bytes_and_absurd_timestamps_are_refused() {
    require_tools();
    let (_t, dir) = temp_dir();
    create_rrd(&dir.join("f.rrd"), T0);
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let mut c = d.client();
    let r = c.call(&format!("UPDATE f.rrd {}:1\rFLUSHALL:2", T0 + 300));
    assert!(r.starts_with("-1 ") && r.contains("0x0d"), "{r:?}");
    let r = c.call(&format!("UPDATE f.rrd {}:1:\x01", T0 + 300));
    assert!(r.starts_with("-1 ") && r.contains("0x01"), "{r:?}");
    for t in ["1e30", "9999999999999", "inf", "nan"] {
        let r = c.call(&format!("UPDATE f.rrd {t}:1:1"));
        assert!(r.starts_with("-1 "), "{t}: {r:?}");
    }
    assert_eq!(c.call("PENDING f.rrd"), "0 updates pending\n");
    // The file still takes ordinary updates.
    assert_eq!(c.call(&format!("UPDATE f.rrd {}:1:1", T0 + 300)), "0 errors, enqueued 1 value(s).\n");
    // Inside a BATCH the error comes with its command number.
    c.send("BATCH");
    assert!(c.read_reply().starts_with("0 Go ahead"));
    c.send(&format!("UPDATE f.rrd {}:1:1", T0 + 600));
    c.send("UPDATE f.rrd 1e30:1:1");
    c.send(".");
    let r = c.read_reply();
    assert!(r.starts_with("1 errors") && r.contains("\n2 "), "{r:?}");
    d.stop();
}

/// With descriptors exhausted, the accept loop backs off instead of
/// spinning (the daemon uses little CPU while clients wait), counts the
/// failures, and serves new clients once descriptors are free again.
#[test]
fn descriptor_exhaustion_backs_off_and_recovers() {
    require_tools();
    let (_t, dir) = temp_dir();
    let d = Daemon::start(Kind::Ours, &dir, &["--max-connections", "100000"]);
    let pid = d.child.id();
    let out = Command::new("prlimit")
        .args([format!("--pid={pid}"), "--nofile=48:48".to_string()])
        .output()
        .expect("running prlimit (util-linux)");
    assert!(out.status.success(), "prlimit: {}", String::from_utf8_lossy(&out.stderr));
    let mut control = d.client();
    assert_eq!(control.call("PING"), "0 PONG\n");
    // More connections than descriptors: the kernel queues them in the
    // backlog; the daemon cannot accept them all.
    let mut extra: Vec<UnixStream> = (0..80).map(|_| UnixStream::connect(&d.socket).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(500));
    let cpu_before = cpu_secs(pid);
    let wall = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let cpu = cpu_secs(pid) - cpu_before;
    let used = cpu / wall.elapsed().as_secs_f64();
    assert!(used < 0.25, "accept loop spins: {:.0}% of a core while out of descriptors", used * 100.0);
    let stats = control.call("STATS");
    assert!(stat_field(&stats, "AcceptErrors") >= 1, "{stats}");
    // Free descriptors: every waiting client is served.
    extra.truncate(0);
    std::thread::sleep(Duration::from_millis(300));
    let mut fresh = d.client();
    assert_eq!(fresh.call("PING"), "0 PONG\n");
    d.stop();
}

/// `--idle-timeout-unix` closes a connection that sends nothing (a
/// half-sent line counts); without it (the default for UNIX sockets) an
/// idle connection stays open. On a connection's own thread and on the
/// shared threads (`--unix-threads 0`) alike.
#[test]
fn idle_connections_are_closed_only_when_asked() {
    require_tools();
    let (_t, dir) = temp_dir();
    for (extra, closes) in [
        (vec!["--idle-timeout-unix", "1"], true),
        (vec!["--idle-timeout-unix", "1", "--unix-threads", "0"], true),
        (vec![], false),
        (vec!["--unix-threads", "0"], false),
    ] {
        let d = Daemon::start(Kind::Ours, &dir, &extra);
        let mut c = d.client();
        assert_eq!(c.call("PING"), "0 PONG\n");
        let mut half = UnixStream::connect(&d.socket).unwrap();
        std::io::Write::write_all(&mut half, b"UPDATE f.rr").unwrap();
        std::thread::sleep(Duration::from_millis(2500));
        let mut buf = [0u8; 16];
        half.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let closed = matches!(std::io::Read::read(&mut half, &mut buf), Ok(0));
        assert_eq!(closed, closes, "half-sent line connection closed? (extra {extra:?})");
        if closes {
            let mut fresh = d.client();
            let stats = fresh.call("STATS");
            assert!(stat_field(&stats, "ConnectionsIdleClosed") >= 2, "both idle connections: {stats}");
        } else {
            assert_eq!(c.call("PING"), "0 PONG\n");
        }
        d.stop();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Sends `bytes` one at a time, `every` apart, until the daemon closes the
/// connection; returns how long after the first byte it did (`None`: it
/// never did).
fn drip<S: std::io::Read + std::io::Write>(s: &mut S, bytes: &[u8], every: Duration) -> Option<Duration> {
    let began = Instant::now();
    for b in bytes {
        if s.write_all(&[*b]).is_err() {
            return Some(began.elapsed());
        }
        let waited = Instant::now();
        let mut buf = [0u8; 256];
        // The read timeout is the pause between bytes.
        match s.read(&mut buf) {
            Ok(0) => return Some(began.elapsed()),
            Ok(n) => panic!("a reply to an incomplete line: {:?}", String::from_utf8_lossy(&buf[..n])),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return Some(began.elapsed()),
        }
        std::thread::sleep(every.saturating_sub(waited.elapsed()));
    }
    None
}

/// A line must complete within the idle timeout of its first byte: a
/// client dripping one byte every 300 ms (each read well within the
/// timeout) is closed about 2 s after its line began, over TCP and over a
/// UNIX socket (on its own thread, and on the shared threads past
/// `--unix-threads`); complete lines sent slowly keep the connection.
#[test]
fn a_slowly_dripped_line_is_cut_off_at_the_idle_timeout() {
    require_tools();
    let (_t, dir) = temp_dir();
    let port = free_port();
    let tcp = format!("127.0.0.1:{port}");
    let d = Daemon::start(
        Kind::Ours,
        &dir,
        &["-l", &tcp, "--idle-timeout-tcp", "2", "--idle-timeout-unix", "2", "--unix-threads", "1"],
    );
    let line = format!("UPDATE f.rrd {}:1:1 {}:2:2 {}:3:3", T0 + 300, T0 + 600, T0 + 900);
    let every = Duration::from_millis(300);
    let mut t = std::net::TcpStream::connect(&tcp).unwrap();
    t.set_read_timeout(Some(every)).unwrap();
    let closed = drip(&mut t, line.as_bytes(), every).expect("a dripping TCP line is closed");
    assert!(
        closed >= Duration::from_millis(1800) && closed < Duration::from_secs(4),
        "closed after {closed:?}"
    );
    // Two at once: the first has the one connection thread, the second
    // is served on the shared threads.
    let dripping: Vec<_> = (0..2)
        .map(|_| {
            let mut u = UnixStream::connect(&d.socket).unwrap();
            u.set_read_timeout(Some(every)).unwrap();
            let line = line.clone();
            std::thread::spawn(move || drip(&mut u, line.as_bytes(), every))
        })
        .collect();
    for d in dripping {
        let closed = d.join().unwrap().expect("a dripping UNIX-socket line is closed");
        assert!(
            closed >= Duration::from_millis(1800) && closed < Duration::from_secs(4),
            "closed after {closed:?}"
        );
    }
    // Complete lines 1.5 s apart: each within the timeout, so it stays.
    let mut c = d.client();
    for _ in 0..3 {
        assert_eq!(c.call("PING"), "0 PONG\n");
        std::thread::sleep(Duration::from_millis(1500));
    }
    assert_eq!(c.call("PING"), "0 PONG\n");
    let stats = c.call("STATS");
    assert!(stat_field(&stats, "ConnectionsIdleClosed") >= 2, "{stats}");
    d.stop();
}

/// A cross-site HTTP POST to the daemon's TCP port (a browser sends one
/// without a preflight) whose body holds protocol lines runs none of them:
/// the connection is closed at its request line, once logged at
/// LOG_WARNING, and the file keeps its bytes. rrdcached runs them.
#[test]
fn an_http_request_runs_nothing() {
    require_tools();
    let (_t, dir) = temp_dir();
    let file = dir.join("f.rrd");
    create_rrd(&file, T0);
    let before = std::fs::read(&file).unwrap();
    let port = free_port();
    let tcp = format!("127.0.0.1:{port}");
    let d = Daemon::start(Kind::Ours, &dir, &["-l", &tcp, "-V", "LOG_WARNING"]);
    let body = format!("UPDATE f.rrd {}:5:5\nUPDATE f.rrd {}:6:6\nFLUSH f.rrd\n", T0 + 300, T0 + 600);
    for head in ["POST / HTTP/1.1", "PUT /x?y HTTP/1.0", "GET / HTTP/1.1"] {
        let request = format!(
            "{head}\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://evil.example\r\nContent-Type: text/plain\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut s = std::net::TcpStream::connect(&tcp).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        std::io::Write::write_all(&mut s, request.as_bytes()).unwrap();
        let mut reply = Vec::new();
        let _ = std::io::Read::read_to_end(&mut s, &mut reply);
        assert!(reply.is_empty(), "{head}: replied {:?}", String::from_utf8_lossy(&reply));
    }
    let mut c = d.client();
    let stats = c.call("STATS");
    assert_eq!(stat_field(&stats, "ConnectionsHttpClosed"), 3, "{stats}");
    assert_eq!(stat_field(&stats, "UpdatesReceived"), 0, "{stats}");
    // A real session over TCP is served as before.
    let mut s = std::net::TcpStream::connect(&tcp).unwrap();
    std::io::Write::write_all(&mut s, b"PING\n").unwrap();
    let mut pong = [0u8; 7];
    std::io::Read::read_exact(&mut s, &mut pong).unwrap();
    assert_eq!(&pong, b"0 PONG\n");
    let log = d.log.clone();
    d.stop();
    assert_eq!(std::fs::read(&file).unwrap(), before, "the file was written");
    let log = std::fs::read_to_string(&log).unwrap();
    let warned = log.lines().filter(|l| l.contains("WARNING") && l.contains("HTTP")).count();
    assert_eq!(warned, 3, "one warning per connection:\n{log}");
}

/// A first BATCH naming more files than the look-ahead window (headers read
/// ahead at queue depth, crate::prefetch) answers exactly as file-by-file
/// opens would: missing files, files that are not RRDs and links out of the
/// base get their errors under their command numbers, every other file
/// gets its value, and the file outside the base is not touched.
#[test]
fn a_first_batch_over_many_files_reports_each_bad_one() {
    require_tools();
    let (_t, dir) = temp_dir();
    let (_o, outside) = temp_dir();
    let victim = outside.join("victim.rrd");
    create_rrd(&victim, T0);
    let victim_before = std::fs::read(&victim).unwrap();
    create_rrd(&dir.join("template.rrd"), T0);
    let n = 700;
    let mut expected_bad = Vec::new();
    for i in 0..n {
        let f = dir.join(format!("f{i}.rrd"));
        if i % 97 == 5 {
            std::os::unix::fs::symlink(&victim, &f).unwrap();
            expected_bad.push(i + 1);
        } else if i % 11 == 3 {
            std::fs::write(&f, b"not an rrd").unwrap();
            expected_bad.push(i + 1);
        } else if i % 7 == 2 {
            expected_bad.push(i + 1); // missing
        } else {
            std::fs::copy(dir.join("template.rrd"), &f).unwrap();
        }
    }
    let d = Daemon::start(Kind::Ours, &dir, &["-B"]);
    let mut c = d.client();
    c.send("BATCH");
    assert!(c.read_reply().starts_with("0 Go ahead"));
    // One write, so that the daemon has the lines after the first in hand
    // when it meets the first (that is what the look-ahead reads ahead).
    let lines: Vec<String> = (0..n).map(|i| format!("UPDATE f{i}.rrd {}:{i}:{i}", T0 + 300)).collect();
    c.send(&format!("{}\n.", lines.join("\n")));
    let reply = c.read_reply();
    let mut lines = reply.lines();
    let status = lines.next().unwrap();
    assert_eq!(status, format!("{} errors", expected_bad.len()), "{reply}");
    let numbers: Vec<usize> = lines.map(|l| l.split(' ').next().unwrap().parse().unwrap()).collect();
    assert_eq!(numbers, expected_bad, "{reply}");
    for (i, line) in reply.lines().skip(1).enumerate() {
        let k = expected_bad[i] - 1;
        let why = if k % 97 == 5 {
            "Permission denied"
        } else if k % 11 == 3 {
            "RRD Error"
        } else {
            "No such file"
        };
        assert!(line.contains(why), "command {}: {line:?} should say {why}", k + 1);
    }
    let stats = c.call("STATS");
    assert_eq!(stat_field(&stats, "PendingValues"), (n - expected_bad.len()) as u64, "{stats}");
    assert!(stat_field(&stats, "HeadersReadAhead") > 100, "the look-ahead did not run: {stats}");
    d.stop();
    assert_eq!(std::fs::read(&victim).unwrap(), victim_before);
}

/// A steady BATCH (every file known) sent in one write, so that each line
/// is handled with the two after it resolved and prefetched ahead
/// (rrd_daemon's connection::look_ahead), with lines the fast path does
/// not take in between: escaped names (the general path), names refused
/// under -B, a file named twice in a row. Every file ends up with exactly
/// its own values in order, and the refused lines get their errors under
/// their command numbers.
#[test]
fn a_steady_batch_with_lines_between_gives_every_file_its_own_values() {
    require_tools();
    let (_t, dir) = temp_dir();
    create_rrd(&dir.join("template.rrd"), T0);
    let n = 400;
    for i in 0..n {
        std::fs::copy(dir.join("template.rrd"), dir.join(format!("f{i}.rrd"))).unwrap();
    }
    let d = Daemon::start(Kind::Ours, &dir, &["-B"]);
    let mut c = d.client();
    let batch = |c: &mut Client, lines: &[String]| {
        c.send("BATCH");
        assert!(c.read_reply().starts_with("0 Go ahead"));
        c.send(&format!("{}\n.", lines.join("\n")));
        c.read_reply()
    };
    let first: Vec<String> = (0..n).map(|i| format!("UPDATE f{i}.rrd {}:{i}:{i}", T0 + 300)).collect();
    assert_eq!(batch(&mut c, &first).trim_end(), "0 errors");
    let mut lines = Vec::new();
    let mut expected: Vec<Vec<String>> = (0..n).map(|i| vec![format!("{}:{i}:{i}", T0 + 300)]).collect();
    let mut refused = Vec::new();
    for (i, want) in expected.iter_mut().enumerate() {
        let v = format!("{}:{i}:{}", T0 + 600, 2 * i);
        match i % 5 {
            // An escaped name: the same file, through the general path.
            1 => lines.push(format!("UPDATE f\\{i}.rrd {v}")),
            // Two lines of this file with a refused name between them.
            2 => {
                lines.push(format!("UPDATE f{i}.rrd {v}"));
                lines.push(format!("UPDATE ../f{i}.rrd {v}"));
                refused.push(lines.len());
                let again = format!("{}:{i}:{}", T0 + 900, 3 * i);
                lines.push(format!("UPDATE f{i}.rrd {again}"));
                want.push(v.clone());
                want.push(again);
                continue;
            }
            _ => lines.push(format!("UPDATE f{i}.rrd {v}")),
        }
        want.push(v);
    }
    let reply = batch(&mut c, &lines);
    let mut got = reply.lines();
    assert_eq!(got.next(), Some(format!("{} errors", refused.len()).as_str()), "{reply}");
    let numbers: Vec<usize> = got.map(|l| l.split(' ').next().unwrap().parse().unwrap()).collect();
    assert_eq!(numbers, refused, "{reply}");
    for (i, want) in expected.iter().enumerate() {
        let pending = c.call(&format!("PENDING f{i}.rrd"));
        let values: Vec<&str> = pending.lines().skip(1).collect();
        assert_eq!(values, *want, "f{i}.rrd: {pending}");
    }
    d.stop();
}
