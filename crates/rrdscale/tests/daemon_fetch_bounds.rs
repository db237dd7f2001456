//! FETCH memory is bounded by the archive, not by the range asked for:
//! rows before and after the archive are counted and streamed, never
//! built. The reply on the wire stays rrdcached's, byte for byte (its
//! padding rows included), which is checked for a range of 10^6 seconds on
//! a one-second file with a ten-row archive; a range of 10^7 seconds must
//! leave the daemon's peak resident memory about where it was.

mod daemon_common;

use std::io::{BufRead, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use daemon_common::{require_tools, rrdtool, temp_dir, Daemon, Kind};

const END: i64 = 1_700_000_000;

fn one_second_file(dir: &Path) {
    let f = dir.join("big.rrd");
    let f = f.to_str().unwrap();
    rrdtool(&[
        "create",
        f,
        "-s",
        "1",
        "-b",
        &(END - 20).to_string(),
        "DS:x:GAUGE:5:U:U",
        "DS:y:GAUGE:5:U:U",
        "RRA:AVERAGE:0.5:1:10",
    ]);
    for i in 1..=10 {
        rrdtool(&["update", f, &format!("{}:{i}:{}", END - 20 + 2 * i, 100 - i)]);
    }
}

/// A whole reply as bytes: the status line, then as many lines as it says
/// (FETCHBIN: read until the peer is quiet).
fn raw_reply(socket: &Path, line: &str, binary: bool) -> Vec<u8> {
    let s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    (&s).write_all(format!("{line}\n").as_bytes()).unwrap();
    let mut r = std::io::BufReader::new(&s);
    let mut out = Vec::new();
    r.read_until(b'\n', &mut out).unwrap();
    let n: i64 = String::from_utf8_lossy(&out).split(' ').next().unwrap().parse().unwrap();
    if binary {
        s.set_read_timeout(Some(Duration::from_millis(1500))).unwrap();
        let mut rest = Vec::new();
        let _ = r.read_to_end(&mut rest);
        out.extend_from_slice(&rest);
        return out;
    }
    for _ in 0..n.max(0) {
        r.read_until(b'\n', &mut out).unwrap();
    }
    out
}

#[test]
fn a_large_range_is_answered_as_rrdcached_answers_it() {
    require_tools();
    let (_t, dir) = temp_dir();
    one_second_file(&dir);
    let lines = [
        (format!("FETCH big.rrd AVERAGE {} {END}", END - 1_000_000), false),
        (format!("FETCH big.rrd AVERAGE {} {}", END - 300, END + 200), false),
        (format!("FETCH big.rrd AVERAGE {} {END} y", END - 100_000), false),
        (format!("FETCHBIN big.rrd AVERAGE {} {END}", END - 200_000), true),
    ];
    let theirs: Vec<Vec<u8>> = {
        let d = Daemon::start(Kind::Rrdcached, &dir, &[]);
        let r = lines.iter().map(|(l, b)| raw_reply(&d.socket, l, *b)).collect();
        d.stop();
        r
    };
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    for ((line, binary), expected) in lines.iter().zip(&theirs) {
        let ours = raw_reply(&d.socket, line, *binary);
        assert!(ours.len() > 100, "{line}: {}", String::from_utf8_lossy(&ours));
        assert!(ours == *expected, "{line}: {} bytes here, {} from rrdcached", ours.len(), expected.len());
    }
    d.stop();
}

/// A /proc/PID/status field in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = text.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_huge_range_does_not_build_the_reply() {
    require_tools();
    let (_t, dir) = temp_dir();
    one_second_file(&dir);
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let pid = d.child.id();
    let before = status_kb(pid, "VmHWM:");
    let s = UnixStream::connect(&d.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    (&s).write_all(format!("FETCH big.rrd AVERAGE {} {END}\n", END - 10_000_000).as_bytes()).unwrap();
    let mut first = vec![0u8; 65536];
    (&s).read_exact(&mut first).unwrap();
    assert!(first.starts_with(b"10000007 Success\n"), "{}", String::from_utf8_lossy(&first[..80]));
    // The daemon is now blocked writing the rest to us: whatever it built
    // is resident.
    std::thread::sleep(Duration::from_millis(1500));
    let peak = status_kb(pid, "VmHWM:");
    assert!(
        peak < before + 40 * 1024,
        "peak resident memory went from {before} kB to {peak} kB for one FETCH"
    );
    drop(s);
    assert_eq!(d.client().call("PING"), "0 PONG\n");
    d.stop();
}
