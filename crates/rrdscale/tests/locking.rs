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
