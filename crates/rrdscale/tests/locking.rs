//! Locking as rrdtool 1.7.2 does it: while another process holds a lock on
//! a file, `update`, `fetch` and `dump` fail with "could not lock RRD" and
//! leave the file untouched (so two writers never interleave a
//! read-modify-write); `RRD_LOCKING=none` skips the lock.

use std::fs::OpenOptions;
use std::os::unix::io::AsRawFd;
use std::process::Command;

fn rrdscale(dir: &std::path::Path, args: &[&str], locking: Option<&str>) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rrdscale"));
    c.args(args).current_dir(dir).env("TZ", "UTC").env_remove("RRD_LOCKING");
    if let Some(l) = locking {
        c.env("RRD_LOCKING", l);
    }
    c.output().unwrap()
}

#[test]
fn a_locked_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out = rrdscale(
        dir.path(),
        &["create", "l.rrd", "-b", "1000000000", "-s", "300", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:5"],
        None,
    );
    assert!(out.status.success());
    let path = dir.path().join("l.rrd");
    let before = std::fs::read(&path).unwrap();

    // Another process's view: this test process holds a POSIX write lock,
    // as a running rrdtool update would.
    let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
    // SAFETY: zeroed flock is valid; fcntl reads it; fd valid while `f` lives.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    assert_eq!(unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETLK, &fl) }, 0);

    for args in [&["update", "l.rrd", "1000000300:1"][..], &["fetch", "l.rrd", "AVERAGE"], &["dump", "l.rrd"]]
    {
        let out = rrdscale(dir.path(), args, None);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "ERROR: could not lock RRD\n", "{args:?}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "a refused update must not touch the file");

    // RRD_LOCKING=none goes ahead, as rrdtool does.
    let out = rrdscale(dir.path(), &["update", "l.rrd", "1000000300:1"], Some("none"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_ne!(std::fs::read(&path).unwrap(), before);
    drop(f);
}

/// Pipe mode (`rrdscale -`) takes the same lock for each update line and
/// holds it no longer than the line: a locked file's update is refused
/// untouched while the other files of the stream go on, and between two
/// lines of a running session another process can lock the file it just
/// updated (the file's first line goes through a descriptor the reader
/// opened and the worker closes, its second through a kept one).
#[test]
fn pipe_mode_locks_each_update_and_releases_it() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    for name in ["l.rrd", "m.rrd"] {
        let out = rrdscale(
            dir.path(),
            &["create", name, "-b", "1000000000", "-s", "300", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:5"],
            None,
        );
        assert!(out.status.success());
    }
    let (l, m) = (dir.path().join("l.rrd"), dir.path().join("m.rrd"));
    let before = std::fs::read(&l).unwrap();
    let try_lock = |path: &std::path::Path| {
        let f = OpenOptions::new().read(true).write(true).open(path).unwrap();
        // SAFETY: zeroed flock is valid; fcntl reads it; fd valid while `f` lives.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = libc::F_WRLCK as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        let ok = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETLK, &fl) } == 0;
        ok.then_some(f)
    };
    let held = try_lock(&l).expect("nobody holds l.rrd yet");

    let mut child = Command::new(env!("CARGO_BIN_EXE_rrdscale"))
        .arg("-")
        .current_dir(dir.path())
        .env("TZ", "UTC")
        .env_remove("RRD_LOCKING")
        .env_remove("RRDSCALE_ACCESS")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: &str| {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        answers.read_line(&mut answer).unwrap();
        answer
    };
    assert_eq!(ask("update l.rrd 1000000300:1"), "ERROR: could not lock RRD\n");
    assert_eq!(std::fs::read(&l).unwrap(), before, "a refused update must not touch the file");
    for (k, line) in ["update m.rrd 1000000300:1", "update m.rrd 1000000600:2"].iter().enumerate() {
        assert!(ask(line).starts_with("OK u:"), "line {k}");
        // The session is still running: the lock of that line is gone.
        assert!(try_lock(&m).is_some(), "m.rrd still locked after line {k}");
    }
    drop(held);
    assert!(ask("update l.rrd 1000000300:1").starts_with("OK u:"));
    assert_ne!(std::fs::read(&l).unwrap(), before);
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
