//! `--skip-past-updates`: UPDATE values not later than the file's newest
//! time are dropped and counted (STATS `UpdatesSkipped`, /metrics
//! `rrdscale_updates_skipped_total`) instead of failing the UPDATE; the
//! other values are taken and journaled (a restart replays exactly them).
//! Without the option the UPDATE fails as rrdcached's does.

mod daemon_common;

use std::io::{Read, Write};
use std::time::Duration;

use daemon_common::{create_rrd, require_tools, rrdtool, stat_field, temp_dir, Daemon, Kind};

const T0: i64 = 1_000_000_000;

fn metrics(port: u16) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn v(i: i64, x: i64) -> String {
    format!("{}:{x}:{}", T0 + 300 * i, 100 * x)
}

#[test]
fn past_values_are_skipped_counted_and_not_journaled() {
    require_tools();
    let (_t, dir) = temp_dir();
    let file = dir.join("a.rrd");
    create_rrd(&file, T0);
    let copy = dir.join("copy.rrd");
    std::fs::copy(&file, &copy).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let metrics_addr = format!("127.0.0.1:{port}");
    let d = Daemon::start(Kind::Ours, &dir, &["--skip-past-updates", "--metrics", &metrics_addr]);
    let mut c = d.client();
    assert_eq!(c.call(&format!("UPDATE a.rrd {} {}", v(1, 1), v(2, 2))), "0 errors, enqueued 2 value(s).\n");
    // A pending time again, an older one, then a new one: the new one is taken.
    assert_eq!(
        c.call(&format!("UPDATE a.rrd {} {} {}", v(2, 9), v(1, 9), v(3, 3))),
        "0 errors, enqueued 1 value(s).\n"
    );
    // Nothing new: success with nothing enqueued.
    assert_eq!(c.call(&format!("UPDATE a.rrd {}", v(3, 9))), "0 errors, enqueued 0 value(s).\n");
    // In a BATCH, a skip is a success (no error line).
    c.send("BATCH");
    assert_eq!(c.read_reply(), "0 Go ahead.  End with dot '.' on its own line.\n");
    c.send(&format!("UPDATE a.rrd {} {}", v(1, 9), v(4, 4)));
    c.send(&format!("UPDATE a.rrd {}", v(4, 9)));
    c.send(".");
    assert_eq!(c.read_reply(), "0 errors\n");
    // Other errors stay errors.
    assert_eq!(c.call("UPDATE a.rrd nonsense"), "-1 Cannot find timestamp in 'nonsense'!\n");
    assert_eq!(c.call("UPDATE a.rrd"), "-1 No values updated.\n");
    let stats = c.call("STATS");
    assert_eq!(stat_field(&stats, "UpdatesSkipped"), 5, "{stats}");
    assert!(metrics(port).contains("\nrrdscale_updates_skipped_total 5\n"));
    // The journal holds the values taken, and only those: after a kill -9
    // the replay writes the same file as rrdtool with those values.
    d.kill9();
    let d = Daemon::start(Kind::Ours, &dir, &["--skip-past-updates"]);
    let mut c = d.client();
    assert_eq!(c.call("FLUSH a.rrd"), format!("0 Successfully flushed {}.\n", file.display()));
    for i in 1..=4 {
        rrdtool(&["update", copy.to_str().unwrap(), &v(i, i)]);
    }
    assert!(std::fs::read(&file).unwrap() == std::fs::read(&copy).unwrap(), "files differ");
    d.stop();
}

#[test]
fn without_the_option_a_past_value_fails_the_update() {
    require_tools();
    let (_t, dir) = temp_dir();
    create_rrd(&dir.join("a.rrd"), T0);
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let mut c = d.client();
    assert_eq!(c.call(&format!("UPDATE a.rrd {}", v(2, 2))), "0 errors, enqueued 1 value(s).\n");
    assert_eq!(
        c.call(&format!("UPDATE a.rrd {} {}", v(1, 1), v(3, 3))),
        format!(
            "-1 illegal attempt to update using time {}.000000 when last update time is {}.000000 (minimum one second step)\n",
            T0 + 300,
            T0 + 600
        )
    );
    let stats = c.call("STATS");
    assert_eq!(stat_field(&stats, "UpdatesSkipped"), 0, "{stats}");
    d.stop();
}
