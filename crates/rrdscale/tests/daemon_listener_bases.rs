//! `-b` and `--skip-past-updates` per listener: one daemon serving two
//! trees, each UNIX socket with its own base directory, under `-B`. A
//! relative name goes to the listener's own base; an absolute name inside
//! one base is taken by that base's listener and refused by the other's;
//! a flush writes each file where it lies (read back with rrdtool); a past
//! value is skipped (and counted) on the listener with
//! `--skip-past-updates` and refused with rrdcached's error on the other.

mod daemon_common;

use std::path::Path;

use daemon_common::{create_rrd, require_tools, rrdtool, stat_field, temp_dir, Client, Daemon, Kind};

const T0: i64 = 1_000_000_000;

fn v(i: i64, x: i64) -> String {
    format!("{}:{x}:{}", T0 + 300 * i, 100 * x)
}

/// The last update of `file` as rrdtool reads it: its time and values.
fn last_update(file: &Path) -> String {
    let out = rrdtool(&["lastupdate", file.to_str().unwrap()]);
    out.lines().find(|l| l.contains(':')).unwrap_or_default().trim().to_string()
}

#[test]
fn each_listener_has_its_base_and_its_skip_flag() {
    require_tools();
    let (_t, dir) = temp_dir();
    let (_a, a) = temp_dir();
    let (_b, b) = temp_dir();
    for base in [&a, &b] {
        create_rrd(&base.join("x.rrd"), T0);
    }
    let (sock_a, sock_b) = (dir.join("a.sock"), dir.join("b.sock"));
    let (la, lb) = (format!("unix:{}", sock_a.display()), format!("unix:{}", sock_b.display()));
    // B's listener before the skip flag, A's after it: only A skips.
    let d = Daemon::start(
        Kind::Ours,
        &dir,
        &[
            "-B",
            "-b",
            b.to_str().unwrap(),
            "-l",
            &lb,
            "-b",
            a.to_str().unwrap(),
            "--skip-past-updates",
            "-l",
            &la,
        ],
    );
    let mut ca = Client::connect(&sock_a);
    let mut cb = Client::connect(&sock_b);
    let (xa, xb) = (a.join("x.rrd"), b.join("x.rrd"));

    // A relative name: each listener's own base.
    assert_eq!(ca.call(&format!("UPDATE x.rrd {}", v(1, 1))), "0 errors, enqueued 1 value(s).\n");
    assert_eq!(cb.call(&format!("UPDATE x.rrd {}", v(1, 2))), "0 errors, enqueued 1 value(s).\n");
    assert_eq!(ca.call("PENDING x.rrd"), format!("1 updates pending\n{}\n", v(1, 1)));
    assert_eq!(cb.call("PENDING x.rrd"), format!("1 updates pending\n{}\n", v(1, 2)));

    // An absolute name inside A: taken by A's listener, refused by B's.
    let abs_a = xa.display().to_string();
    assert_eq!(ca.call(&format!("UPDATE {abs_a} {}", v(2, 3))), "0 errors, enqueued 1 value(s).\n");
    let denied = format!("-1 {abs_a}: Permission denied\n");
    assert_eq!(cb.call(&format!("UPDATE {abs_a} {}", v(3, 9))), denied);
    assert_eq!(cb.call(&format!("INFO {abs_a}")), denied);
    let abs_b = xb.display().to_string();
    assert_eq!(ca.call(&format!("FLUSH {abs_b}")), format!("-1 {abs_b}: Permission denied\n"));
    // The first socket (`-l` before any `-b` in Daemon::start's words)
    // takes the last `-b` of the line: A's.
    let mut first = d.client();
    assert_eq!(first.call("PENDING x.rrd"), format!("2 updates pending\n{}\n{}\n", v(1, 1), v(2, 3)));
    assert_eq!(first.call(&format!("INFO {abs_b}")), format!("-1 {abs_b}: Permission denied\n"));

    // A flush writes each file beneath its own base.
    assert_eq!(ca.call("FLUSH x.rrd"), format!("0 Successfully flushed {abs_a}.\n"));
    assert_eq!(cb.call("FLUSH x.rrd"), format!("0 Successfully flushed {abs_b}.\n"));
    assert_eq!(last_update(&xa), format!("{}: 3 300", T0 + 600));
    assert_eq!(last_update(&xb), format!("{}: 2 200", T0 + 300));

    // The same past value: skipped and counted on A's listener, rrdcached's
    // error on B's.
    assert_eq!(ca.call(&format!("UPDATE x.rrd {}", v(1, 7))), "0 errors, enqueued 0 value(s).\n");
    assert_eq!(
        cb.call(&format!("UPDATE x.rrd {}", v(1, 7))),
        format!(
            "-1 illegal attempt to update using time {}.000000 when last update time is {}.000000 (minimum one second step)\n",
            T0 + 300,
            T0 + 300
        )
    );
    assert_eq!(stat_field(&cb.call("STATS"), "UpdatesSkipped"), 1);
    assert_eq!(last_update(&xa), format!("{}: 3 300", T0 + 600));
    d.stop();
}
