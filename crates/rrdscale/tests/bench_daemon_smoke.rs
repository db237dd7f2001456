//! `rrdscale bench daemon-*` at tiny sizes (a few hundred files, seconds),
//! each side by side with the real rrdcached 1.7.2, so the daemon
//! benchmarks never rot. Asserts the report's structure and consistency
//! from its JSON: every side present, counts equal to what was sent, every
//! check passed (files current and byte-identical across sides after the
//! flush), ratios present. No timing is asserted.
//!
//! rrdcached is required: when /usr/bin/rrdcached is missing these tests
//! fail with a message saying so (CI installs the Debian package
//! `rrdcached`).

mod common;

use std::path::Path;
use std::process::Command;

use common::tools::succeeded;

use serde_json::Value;

fn require_rrdcached() {
    assert!(
        Path::new("/usr/bin/rrdcached").is_file(),
        "rrdcached 1.7.2 must be installed at /usr/bin/rrdcached to compare against it (apt-get install rrdcached)"
    );
}

/// Runs `rrdscale bench ARGS --vs rrdcached --json F` in a fresh directory
/// under /var/tmp (not tmpfs); returns the report and the parsed JSON.
fn bench(args: &[&str]) -> (String, Value) {
    require_rrdcached();
    let dir = tempfile::Builder::new()
        .prefix("dbench-smoke")
        .tempdir_in("/var/tmp")
        .expect("a directory in /var/tmp");
    let json = dir.path().join("out.json");
    let work = dir.path().join("work");
    let out = Command::new(env!("CARGO_BIN_EXE_rrdscale"))
        .arg("bench")
        .args(args)
        .args(["--vs", "rrdcached", "--dir"])
        .arg(&work)
        .arg("--json")
        .arg(&json)
        .env("TZ", "UTC")
        .output()
        .expect("running rrdscale bench");
    let stdout = succeeded(&format!("rrdscale bench {}", args.join(" ")), &out);
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the JSON file")).expect("JSON");
    (stdout, v)
}

fn sides(v: &Value) -> &Vec<Value> {
    v["sides"].as_array().expect("sides")
}

fn metric(side: &Value, key: &str) -> f64 {
    side["metrics"][key].as_f64().unwrap_or_else(|| panic!("{} has no metric {key}: {side}", side["label"]))
}

fn labels(v: &Value) -> Vec<String> {
    sides(v).iter().map(|s| s["label"].as_str().unwrap().to_string()).collect()
}

/// Every check passed, and there is at least `n` of them.
fn checks_pass(v: &Value, n: usize) {
    let checks = v["checks"].as_array().expect("checks");
    assert!(checks.len() >= n, "only {} checks: {checks:?}", checks.len());
    for c in checks {
        assert_eq!(c["ok"], Value::Bool(true), "check failed: {c}");
    }
}

#[test]
fn ingest_counts_match_and_files_agree() {
    let (report, v) = bench(&[
        "daemon-ingest",
        "--files",
        "200",
        "--values-per-file",
        "20",
        "--clients",
        "3",
        "--batch-lines",
        "97",
        "--verify",
        "200",
    ]);
    assert_eq!(labels(&v), ["rrdscale (--sync always)", "rrdscale (--sync none)", "rrdcached 1.7.2"]);
    for s in sides(&v) {
        assert_eq!(metric(s, "values_sent"), 4000.0);
        assert_eq!(metric(s, "updates_received"), 4000.0, "{}", s["label"]);
        assert_eq!(metric(s, "errors"), 0.0);
        assert!(metric(s, "values_per_s") > 0.0);
    }
    assert!(metric(&sides(&v)[0], "journal_syncs") >= 1.0, "--sync always synced nothing");
    assert!(v["params"].get("files evicted before the daemon starts").is_none(), "bulk evicts nothing");
    checks_pass(&v, 7);
    assert!(v["checks"].as_array().unwrap().iter().any(|c| c["name"] == "files equal across sides"
        && c["detail"].as_str().unwrap().starts_with("200 of 200")));
    assert_eq!(v["ratios"].as_object().unwrap().len(), 2);
    assert!(report.contains("| rrdcached 1.7.2 |"), "{report}");
}

/// The sides every new ingest pattern runs by default: ours with no
/// --sync option (labelled with the default it reports), always, none.
fn assert_default_syncs(v: &Value) {
    let l = labels(v);
    assert_eq!(l.len(), 4, "{l:?}");
    assert!(l[0].starts_with("rrdscale (default: ") && !l[0].contains('?'), "{l:?}");
    assert_eq!(l[1..], ["rrdscale (--sync always)", "rrdscale (--sync none)", "rrdcached 1.7.2"]);
    let default = &sides(v)[0];
    assert!(!default["command_line"].as_str().unwrap().contains("--sync"), "{default}");
}

#[test]
fn ingest_roundtrip_times_every_request() {
    let (report, v) =
        bench(&["daemon-ingest", "--pattern", "roundtrip", "--files", "50", "--secs", "1", "--clients", "2"]);
    assert_default_syncs(&v);
    for s in sides(&v) {
        let label = &s["label"];
        let n = metric(s, "values_sent");
        assert!(n > 0.0, "{label}: nothing sent");
        assert_eq!(metric(s, "updates_received"), n, "{label}");
        assert_eq!(metric(s, "errors"), 0.0, "{label}");
        assert_eq!(metric(s, "clients"), 2.0);
        assert!(metric(s, "values_per_s") > 0.0);
        let (p50, p99, p999, max) =
            (metric(s, "p50_us"), metric(s, "p99_us"), metric(s, "p999_us"), metric(s, "max_us"));
        assert!(0.0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max, "{label}: {p50} {p99} {p999} {max}");
    }
    // Every side: update accepted + files current; and the sides' files.
    checks_pass(&v, 9);
    assert!(v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["name"] == "files equal across sides"
            && c["detail"].as_str().unwrap().starts_with("50 of 50")));
    // values/s, p50 and p99 for each of our three sides.
    assert_eq!(v["ratios"].as_object().unwrap().len(), 9);
    assert!(report.contains("## rrdscale bench daemon-ingest --pattern roundtrip"), "{report}");
    assert!(report.contains("| p50 µs | p99 µs | p99.9 µs | max µs |"), "{report}");
    assert!(report.contains("| rrdcached 1.7.2 |"), "{report}");
}

#[test]
fn ingest_roundtrip_rounds_send_equal_counts() {
    let (_, v) = bench(&[
        "daemon-ingest",
        "--pattern",
        "roundtrip",
        "--files",
        "30",
        "--rounds",
        "3",
        "--clients",
        "4",
        "--syncs",
        "always",
    ]);
    assert_eq!(labels(&v), ["rrdscale (--sync always)", "rrdcached 1.7.2"]);
    for s in sides(&v) {
        assert_eq!(metric(s, "values_sent"), 90.0);
        assert_eq!(metric(s, "updates_received"), 90.0);
    }
    checks_pass(&v, 5);
    // Same values on both sides: compared with each other directly.
    assert!(v["checks"].as_array().unwrap().iter().any(|c| c["name"] == "files equal across sides"
        && c["detail"] == "30 of 30 files compared are byte-identical on every side"));
}

#[test]
fn ingest_batch_per_interval_reports_first_and_later_intervals() {
    let (report, v) =
        bench(&["daemon-ingest", "--pattern", "batch-per-interval", "--files", "50", "--intervals", "2"]);
    assert_default_syncs(&v);
    for s in sides(&v) {
        let label = &s["label"];
        assert_eq!(metric(s, "values_sent"), 100.0, "{label}");
        assert_eq!(metric(s, "updates_received"), 100.0, "{label}");
        assert_eq!(metric(s, "errors"), 0.0, "{label}");
        for key in ["first_secs", "first_values_per_s", "steady_median_secs", "steady_values_per_s"] {
            assert!(metric(s, key) > 0.0, "{label}: {key}");
        }
        assert!(metric(s, "interval_1_secs") > 0.0 && metric(s, "interval_2_secs") > 0.0);
    }
    checks_pass(&v, 9);
    assert!(v["checks"].as_array().unwrap().iter().any(|c| c["name"] == "files equal across sides"
        && c["detail"] == "50 of 50 files compared are byte-identical on every side"));
    // First-interval and later-interval values/s for each of our sides.
    assert_eq!(v["ratios"].as_object().unwrap().len(), 6);
    assert!(report.contains("## rrdscale bench daemon-ingest --pattern batch-per-interval"), "{report}");
    assert!(report.contains("Seconds per interval:"), "{report}");
    assert_eq!(v["params"]["files evicted before the daemon starts"], "true");
    assert!(report.contains("| side | 1 | 2 |"), "{report}");
}

#[test]
fn flush_writes_every_file_and_reports_pages() {
    let (report, v) = bench(&[
        "daemon-flush",
        "--files",
        "300",
        "--probe-bytes",
        "16M",
        "--probe-secs",
        "0.1",
        "--memory-budget",
        "50M",
        "--verify",
        "300",
    ]);
    assert_eq!(labels(&v), ["rrdscale (--sync always)", "rrdcached 1.7.2"]);
    for s in sides(&v) {
        assert_eq!(metric(s, "files"), 300.0);
        assert_eq!(metric(s, "updates_written"), 300.0, "{}", s["label"]);
        assert_eq!(metric(s, "values"), 3600.0);
        assert!(metric(s, "pages_written_per_file") > 0.0, "{}: nothing written", s["label"]);
        assert!(metric(s, "disk_bound_files_per_s") > 0.0);
        assert!(s["memory"]["max_usage_bytes"].as_u64().is_some(), "no cgroup usage: {s}");
    }
    checks_pass(&v, 5);
    assert!(report.contains("random write IOPS"), "{report}");
    assert!(v["ratios"].as_object().unwrap().contains_key("files/s, FLUSHALL until written"));
}

#[test]
fn restart_recovers_every_acknowledged_value() {
    let (_, v) = bench(&["daemon-restart", "--files", "300", "--values-per-file", "2"]);
    assert_eq!(labels(&v), ["rrdscale (--sync always)", "rrdcached 1.7.2"]);
    for s in sides(&v) {
        assert_eq!(metric(s, "values_sent"), 600.0);
        assert!(metric(s, "accept_secs") > 0.0 && metric(s, "drained_secs") >= metric(s, "accept_secs"));
    }
    assert_eq!(metric(&sides(&v)[0], "files_complete"), 300.0);
    checks_pass(&v, 2);
}

#[test]
fn read_answers_every_fetch_like_rrdcached() {
    let (_, v) = bench(&["daemon-read", "--files", "200", "--fetches", "50"]);
    assert_eq!(labels(&v), ["rrdscale (--sync always)", "rrdcached 1.7.2"]);
    for s in sides(&v) {
        assert_eq!(metric(s, "fetches"), 50.0);
        assert_eq!(metric(s, "errors"), 0.0);
        assert!(metric(s, "p50_ms") <= metric(s, "p99_ms") && metric(s, "p99_ms") <= metric(s, "max_ms"));
    }
    checks_pass(&v, 3);
}

#[test]
fn capacity_searches_and_reports_trials() {
    let (report, v) = bench(&[
        "daemon-capacity",
        "--min-files",
        "50",
        "--max-files",
        "100",
        "--speedup",
        "600",
        "--base-memory",
        "48M",
        "--max-minutes",
        "0.3",
    ]);
    assert_eq!(labels(&v), ["rrdscale (--sync always)", "rrdcached 1.7.2"]);
    let trials = v["tables"][0][2].as_array().expect("a trials table");
    for s in sides(&v) {
        let label = s["label"].as_str().unwrap();
        let n = metric(s, "capacity_files");
        // The search's answer is consistent with its trials: 0 (nothing
        // passed) or a size that passed, within the range, below any failure.
        assert!(n == 0.0 || (50.0..=100.0).contains(&n), "{label}: capacity {n}");
        let rows: Vec<&Vec<Value>> =
            trials.iter().map(|r| r.as_array().unwrap()).filter(|r| r[0] == label).collect();
        assert!(!rows.is_empty(), "{label} ran no trial");
        assert_eq!(rows[0][1], "50", "{label}: the search starts at --min-files");
        for r in &rows {
            let files: f64 = r[1].as_str().unwrap().replace(',', "").parse().unwrap();
            match r[2].as_str().unwrap() {
                "pass" => assert!(files <= n, "{label}: {files} passed but capacity is {n}"),
                "fail" => assert!(files > n, "{label}: {files} failed but capacity is {n}"),
                other => panic!("{label}: trial result {other}"),
            }
        }
    }
    checks_pass(&v, 2);
    assert!(report.contains("| rrdcached 1.7.2 | 50 |"), "{report}");
}
