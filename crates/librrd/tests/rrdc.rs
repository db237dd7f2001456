//! `rrd_client.h` (`rrdc_connect`, `rrdc_update`, `rrdc_flush`, `rrdc_info`,
//! `rrdc_fetch`, `rrdc_create`, ...) through ctypes against Debian's
//! rrdcached: our library and Debian's librrd, each talking to its own
//! daemon, get the same results and error texts (`rrdc.py`).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const RRDCACHED: &str = "/usr/bin/rrdcached";

fn side(library: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let sock = dir.path().join("sock");
    let mut daemon = Command::new(RRDCACHED)
        .arg("-g")
        .arg("-l")
        .arg(format!("unix:{}", sock.display()))
        .arg("-b")
        .arg(&data)
        .args(["-B", "-F", "-p"])
        .arg(dir.path().join("pid"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting rrdcached");
    let deadline = Instant::now() + Duration::from_secs(10);
    // The socket file appears at bind(), before listen(): wait until a
    // connection is accepted, not until the file exists.
    while std::os::unix::net::UnixStream::connect(&sock).is_err() {
        assert!(Instant::now() < deadline, "rrdcached never accepted a connection");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut cmd = Command::new(PYTHON);
    cmd.arg(script("rrdc.py")).arg(library).arg(&sock).arg(&data);
    let out = run(cmd, None);
    // SAFETY: a signal to our own child's pid.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    daemon.wait().unwrap();
    // The directories differ between the two sides.
    out.replace(&dir.path().display().to_string(), "DIR")
}

#[test]
fn rrdc_calls_match_librrd_against_rrdcached() {
    require(PYTHON, "python3");
    require(RRDCACHED, "rrdcached");
    require(DEBIAN_LIBRRD, "librrd8");
    let ours = side(&our_library());
    let theirs = side(Path::new(DEBIAN_LIBRRD));
    assert_same_text(&ours, &theirs, "rrdc_* results");
    assert!(ours.contains("\"fetch\""), "the script ran to the end");
    assert!(ours.contains("ds[v].last_ds"), "INFO came back through the daemon");
    assert!(ours.contains("\"UpdatesReceived\""), "rrdc_stats_get listed the daemon's counters");
    assert!(ours.contains("\"QueueLength\""), "rrdc_stats_get listed the daemon's gauges");
}
