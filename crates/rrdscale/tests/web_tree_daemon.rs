//! `rrdscale web --tree DIR --daemon ADDR` draws what the daemon still
//! holds: values sent to a daemon that writes nothing for an hour are in
//! the tree's exports and Grafana answers, which without the daemon read
//! the file alone and find nothing. Against `rrdscale daemon` (which
//! answers FETCH from memory) the file's bytes are unchanged after the
//! requests: no request flushed. Against Debian's rrdcached (whose FETCH
//! writes the pending values itself first) the values are drawn too.

mod tree_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tree_support::{rfc3339, rrdtool, Server};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_daemon(program: &str, dir: &Path) -> (Killed, String) {
    let sock = dir.join("rrdcached.sock");
    let mut cmd = Command::new(program);
    if program.ends_with("rrdscale") {
        cmd.arg("daemon");
    }
    let child = cmd
        .args(["-g", "-w", "3600", "-z", "1", "-f", "7200", "-l"])
        .arg(format!("unix:{}", sock.display()))
        .arg("-p")
        .arg(dir.join("rrdcached.pid"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} (Debian package rrdcached for rrdcached) is needed: {e}"));
    let daemon = Killed(child);
    let began = Instant::now();
    while !sock.exists() {
        assert!(began.elapsed() < Duration::from_secs(10), "{program} did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    (daemon, format!("unix:{}", sock.display()))
}

/// The known values of a one-column tree export.
fn known(export: &Value) -> usize {
    export["rows"].as_array().unwrap().iter().filter(|r| r[1].is_number()).count()
}

#[test]
fn pending_values_are_drawn_without_a_flush() {
    pending_values_are_drawn(env!("CARGO_BIN_EXE_rrdscale"), true);
}

#[test]
fn pending_values_in_rrdcached_are_drawn() {
    pending_values_are_drawn("/usr/bin/rrdcached", false);
}

fn pending_values_are_drawn(program: &str, file_unchanged: bool) {
    let top = tempfile::tempdir().unwrap();
    let tree = top.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let file = tree.join("pending.rrd");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let t0 = now / 10 * 10 - 600;
    rrdtool(&[
        "create",
        file.to_str().unwrap(),
        "--start",
        &(t0 - 10).to_string(),
        "--step",
        "10",
        "DS:value:GAUGE:20:U:U",
        "RRA:AVERAGE:0.5:1:360",
    ]);
    let before = std::fs::read(&file).unwrap();
    let (_daemon, address) = start_daemon(program, top.path());
    let mut args =
        vec!["update".to_string(), "--daemon".into(), address.clone(), file.to_str().unwrap().into()];
    args.extend((0..=40).map(|i| format!("{}:{}", t0 + i * 10, i)));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    rrdtool(&refs);
    assert_eq!(std::fs::read(&file).unwrap(), before, "the daemon holds the values (nothing written yet)");

    let arg = format!("t={}", tree.display());
    let range = format!("start={}&end={}&w=100", t0 - 10, t0 + 400);
    let export = format!("/tree/t/export?file=pending.rrd&format=json&{range}");
    let query = json!({"range": {"from": rfc3339(t0 - 10), "to": rfc3339(t0 + 400)}, "targets": [{"target": "pending:value"}]});

    let alone = Server::start(&["--tree", &arg]);
    assert_eq!(known(&alone.get(&export).json()), 0, "the file alone holds nothing");
    assert_eq!(alone.post("/grafana/query", &query).json()[0]["datapoints"], json!([]));
    drop(alone);

    let through = Server::start(&["--tree", &arg, "--daemon", &address]);
    let drawn = through.get(&export).json();
    assert!(known(&drawn) >= 30, "the daemon's pending values are drawn: {drawn}");
    let points = through.post("/grafana/query", &query).json()[0]["datapoints"].clone();
    assert!(points.as_array().unwrap().len() >= 39, "{points}");
    assert_eq!(points[0], json!([0.0, (t0) * 1000]), "{points}");
    let png = through.get(&format!("/tree/t/png?file=pending.rrd&{range}"));
    assert_eq!(png.status, 200);
    drop(through);
    if file_unchanged {
        assert_eq!(std::fs::read(&file).unwrap(), before, "no request flushed the daemon");
    }
}
