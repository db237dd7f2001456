//! Debian's `rrdcached` 1.7.2 runs on our library: it links librrd's
//! internal file API (`rrd_open`, `rrd_close`, `rrd_init`, `rrd_free`, to
//! read a file's last update and step), `rrd_strtodbl` (update times),
//! `rrd_update_r` (its flushes), `rrd_create_r2`, `rrd_info_r`,
//! `rrd_fetch_r`, `rrd_first_r` and `rrd_list_r`. The same session of
//! commands goes to one rrdcached on our library (`LD_LIBRARY_PATH`, ours
//! seen in its `/proc/PID/maps`) and one on Debian's librrd; every reply
//! and every file they leave must be equal.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const RRDCACHED: &str = "/usr/bin/rrdcached";

/// The commands of the session: creates, updates (too early, a bad time, a
/// missing file), reads of the last update before and after flushes, and
/// the reads that go through the library.
const SESSION: &[&str] = &[
    "CREATE a.rrd -b 1600000000 -s 300 DS:in:GAUGE:600:U:U DS:out:COUNTER:600:0:U RRA:AVERAGE:0.5:1:50 RRA:MAX:0.5:4:20",
    "CREATE b.rrd -b 1600000000 -s 60 DS:x:DERIVE:120:U:U RRA:LAST:0.5:1:30",
    "LAST a.rrd",
    "UPDATE a.rrd 1600000300:1:100 1600000600:2.5:250 1600000900:U:400",
    "UPDATE a.rrd 1600000100:1:1",
    "UPDATE a.rrd 1600001200x:1:1",
    "UPDATE a.rrd N1600001200:1:1",
    "UPDATE nope.rrd 1600000300:1:1",
    "UPDATE b.rrd 1600000060:5 1600000120:8 1600000180:20",
    "LAST a.rrd",
    "LAST nope.rrd",
    "FLUSH a.rrd",
    "LAST a.rrd",
    "FIRST a.rrd 0",
    "FIRST a.rrd 1",
    "INFO a.rrd",
    "FETCH a.rrd AVERAGE 1600000000 1600001800",
    "UPDATE a.rrd 1600001200:3:700 1600001500:4:900",
    "UPDATE b.rrd 1600000240:21",
    // FLUSH waits until the file is written; a FETCH right after FLUSHALL
    // would race rrdcached's flush thread (with librrd as with ours).
    "FLUSH b.rrd",
    "FETCH b.rrd LAST 1600000000 1600000300",
    "INFO b.rrd",
    "UPDATE a.rrd 1600001800:5:1000",
    "LAST a.rrd",
    "FLUSHALL",
];

fn reply(reader: &mut BufReader<UnixStream>) -> Vec<String> {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status: i64 = line.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let mut lines = vec![line.trim_end().to_string()];
    for _ in 0..status.max(0) {
        let mut l = String::new();
        reader.read_line(&mut l).unwrap();
        lines.push(l.trim_end().to_string());
    }
    lines
}

/// Runs the session against rrdcached on `lib_dir`'s library (Debian's
/// when None): the replies, and the directory of files it left.
fn session(lib_dir: Option<&Path>, ours: &Path) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let sock = dir.path().join("sock");
    let mut cmd = Command::new(RRDCACHED);
    cmd.arg("-g")
        .arg("-l")
        .arg(format!("unix:{}", sock.display()))
        .arg("-b")
        .arg(&data)
        .args(["-B", "-F", "-w", "3600", "-f", "7200", "-p"])
        .arg(dir.path().join("pid"))
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("RRDCACHED_ADDRESS")
        .env("TZ", "UTC")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(d) = lib_dir {
        cmd.env("LD_LIBRARY_PATH", d);
    }
    let mut daemon = cmd.spawn().expect("starting rrdcached");
    // The socket file appears at bind(), before listen(): connect until
    // it accepts.
    let deadline = Instant::now() + Duration::from_secs(10);
    let stream = loop {
        if let Ok(s) = UnixStream::connect(&sock) {
            break s;
        }
        if let Ok(Some(status)) = daemon.try_wait() {
            let mut err = String::new();
            std::io::Read::read_to_string(daemon.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("rrdcached exited ({status}) on {lib_dir:?}: {err}");
        }
        assert!(Instant::now() < deadline, "rrdcached never accepted a connection");
        std::thread::sleep(Duration::from_millis(20));
    };
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", daemon.id())).unwrap();
    let loaded =
        if lib_dir.is_some() { ours.to_path_buf() } else { Path::new(DEBIAN_LIBRRD).canonicalize().unwrap() };
    assert!(maps.contains(&loaded.display().to_string()), "{} loaded:\n{maps}", loaded.display());

    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut log = String::new();
    for command in SESSION {
        writer.write_all(format!("{command}\n").as_bytes()).unwrap();
        log.push_str(&format!("> {command}\n"));
        for mut line in reply(&mut reader) {
            // Create picks each archive's current row at random.
            if let Some(at) = line.find(".cur_row ") {
                line.truncate(at + ".cur_row".len());
            }
            log.push_str(&line);
            log.push('\n');
        }
    }
    writer.write_all(b"QUIT\n").unwrap();
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    let status = daemon.wait().unwrap();
    assert!(status.success(), "rrdcached exited with {status}");
    // The directories differ between the two sides.
    (dir, log.replace(&data.display().to_string(), "DATA"))
}

#[test]
fn debian_rrdcached_runs_on_our_library_as_on_librrd() {
    require(RRDCACHED, "rrdcached");
    require(DEBIAN_LIBRRD, "librrd8");
    let (lib_dir, lib) = library_dir();
    let (ours_dir, ours) = session(Some(lib_dir.path()), &lib);
    let (theirs_dir, theirs) = session(None, &lib);
    assert_same_text(&ours, &theirs, "rrdcached's replies");
    for expected in [
        "> LAST a.rrd\n0 1599999900\n",
        "illegal attempt to update using time 1600000100.000000",
        "Cannot find timestamp in '1600001200x:1:1'",
        "RRD Error: opening 'DATA/nope.rrd': No such file or directory",
        "Successfully flushed DATA/a.rrd",
        "last_update 1 1600000900",
        "ds[out].last_ds 2 400",
    ] {
        assert!(ours.contains(expected), "{expected} in:\n{ours}");
    }
    assert_eq!(assert_same_files(&ours_dir.path().join("data"), &theirs_dir.path().join("data")), 2);
}
