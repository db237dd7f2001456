//! The daemon's memory budget: beyond `--max-pending` values or
//! `--max-pending-bytes` of them, UPDATE gets a clear error line (and the
//! values are not taken); once a flush has written the pending values, the
//! same UPDATE is accepted again. No crash, no lost acknowledged value.

mod daemon_common;

use daemon_common::{create_rrd, require_tools, temp_dir, Daemon, Kind};

const T0: i64 = 1_000_000_000;

fn value(k: i64) -> String {
    format!("{}:{}:{}", T0 + 300 * k, k, k * 100)
}

fn pending(c: &mut daemon_common::Client) -> u64 {
    let stats = c.call("STATS");
    let line = stats.lines().find(|l| l.starts_with("PendingValues: ")).expect("PendingValues in STATS");
    line["PendingValues: ".len()..].parse().unwrap()
}

fn run(limit: &[&str], refusal: &str) {
    require_tools();
    let (_tmp, dir) = temp_dir();
    create_rrd(&dir.join("a.rrd"), T0);
    let mut args = vec!["-w", "3600"];
    args.extend_from_slice(limit);
    let daemon = Daemon::start(Kind::Ours, &dir, &args);
    let mut c = daemon.client();
    let path = dir.join("a.rrd");
    let path = path.to_str().unwrap();
    let mut k = 1;
    // Take values until the budget refuses one.
    let refused = loop {
        let reply = c.call(&format!("UPDATE {path} {}", value(k)));
        if reply.starts_with("-1 ") {
            break reply;
        }
        assert_eq!(reply, "0 errors, enqueued 1 value(s).\n", "value {k}");
        k += 1;
        assert!(k < 1000, "the budget never refused an update");
    };
    assert!(refused.starts_with(&format!("-1 {refusal}")), "{refused}");
    assert!(refused.contains("update refused, try again later"), "{refused}");
    let held = pending(&mut c);
    assert_eq!(held, (k - 1) as u64, "the refused value was not taken");
    // A flush makes room: the refused value is accepted now.
    assert_eq!(c.call(&format!("FLUSH {path}")), format!("0 Successfully flushed {path}.\n"));
    assert_eq!(pending(&mut c), 0);
    assert_eq!(c.call(&format!("UPDATE {path} {}", value(k))), "0 errors, enqueued 1 value(s).\n");
    assert_eq!(c.call(&format!("FLUSH {path}")), format!("0 Successfully flushed {path}.\n"));
    // LAST answers the file's last update, as `rrdtool last` prints it.
    assert_eq!(c.call(&format!("LAST {path}")), format!("0 {}\n", T0 + 300 * k));
    daemon.stop();
}

#[test]
fn max_pending_values_refuses_beyond_the_budget() {
    run(&["--max-pending", "5"], "Too many pending values (limit 5)");
}

#[test]
fn max_pending_bytes_refuses_beyond_the_budget() {
    run(&["--max-pending-bytes", "100"], "Too many pending bytes (limit 100)");
}
