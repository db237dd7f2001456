//! `rrdscale bench` at tiny sizes, so the benchmarks never rot: every
//! workload with and without `--vs rrdtool`, every mode, and a memory
//! budget. Asserts the report's rows, that the benchmarked files are valid
//! RRDs afterwards (`rrdtool info` succeeds) whose last update is the one
//! the report claims (`rrdtool lastupdate`), and that all sides' files are
//! byte-identical. No timing is asserted.
//!
//! rrdtool and librrd are required: when missing, these tests fail with a
//! message saying so.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::tools::succeeded;

fn rrdscale() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rrdscale"));
    c.env("TZ", "UTC").env("LC_ALL", "C");
    c
}

fn rrdtool(args: &[&str]) -> std::process::Output {
    Command::new("rrdtool")
        .args(args)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .expect("rrdtool 1.7.2 must be installed to compare against it (apt-get install rrdtool)")
}

/// Runs `rrdscale bench ARGS`, asserting success; returns the report.
fn bench(args: &[&str]) -> String {
    let out = rrdscale().arg("bench").args(args).output().expect("running rrdscale bench");
    let stdout = succeeded(&format!("rrdscale bench {}", args.join(" ")), &out);
    stdout
}

/// Runs `rrdscale bench LINE --dir DIR/b FLAG DIR/PATH...` in a fresh
/// directory DIR (a `PATH` that is absolute is taken as it is), asserting
/// success; returns DIR and the report.
fn bench_in(line: &str, paths: &[(&str, &str)]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    for (flag, path) in [("--dir", "b")].iter().chain(paths) {
        args.push(flag.to_string());
        args.push(dir.path().join(path).to_str().unwrap().to_string());
    }
    let report = bench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    (dir, report)
}

/// The directories listed as "Files of <side>: `<dir>`".
fn side_dirs(report: &str) -> Vec<(String, PathBuf)> {
    report
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("- Files of ")?;
            let (side, dir) = rest.split_once(": `")?;
            let dir = dir.split('`').next()?;
            Some((side.to_string(), PathBuf::from(dir)))
        })
        .collect()
}

/// The "Last update of files a..b: T" lines.
fn last_updates(report: &str) -> Vec<(u64, u64, i64)> {
    report
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("- Last update of files ")?;
            let (range, t) = rest.split_once(": ")?;
            let (a, b) = range.split_once("..")?;
            let t = t.split_whitespace().next()?;
            Some((a.parse().ok()?, b.parse().ok()?, t.parse().ok()?))
        })
        .collect()
}

/// Path of file `i` as the bench lays files out.
fn file_path(dir: &Path, i: u64) -> PathBuf {
    dir.join(format!("{:04}", i / 1000)).join(format!("{i:07}.rrd"))
}

/// Every side's first and last file of every run is a valid RRD whose last
/// update is the one the report claims.
fn check_files(report: &str, expected_sides: &[&str]) {
    let dirs = side_dirs(report);
    let labels: Vec<&str> = dirs.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(labels, expected_sides, "sides listed in the report:\n{report}");
    let runs = last_updates(report);
    assert!(!runs.is_empty(), "no last-update lines in the report:\n{report}");
    for (side, dir) in &dirs {
        for &(a, b, t) in &runs {
            for i in [a, b - 1] {
                let f = file_path(dir, i);
                let f = f.to_str().unwrap();
                let info = rrdtool(&["info", f]);
                assert!(
                    info.status.success(),
                    "rrdtool info {f} ({side}): {}",
                    String::from_utf8_lossy(&info.stderr)
                );
                let last = rrdtool(&["lastupdate", f]);
                assert!(last.status.success(), "rrdtool lastupdate {f}");
                let text = String::from_utf8_lossy(&last.stdout);
                let data = text.lines().find(|l| l.contains(':')).unwrap_or("");
                assert!(
                    data.starts_with(&format!("{t}:")),
                    "{side}: {f} was last updated at '{data}', the report says {t}"
                );
            }
        }
    }
}

fn row_count(report: &str, prefix: &str) -> usize {
    report.lines().filter(|l| l.starts_with(prefix)).count()
}

#[test]
fn perftest_against_rrdtool_in_every_mode() {
    let (dir, report) = bench_in(
        "perftest --files 50 --updates-per-round 3 --rounds 2 --mode direct,batch,pipe,mapped \
         --vs rrdtool,rrdtool-pipe",
        &[("--json", "r.json"), ("--svg", "svg")],
    );
    let json = dir.path().join("r.json");
    let svg = dir.path().join("svg");
    for mode in ["direct", "batch", "pipe", "mapped"] {
        assert_eq!(row_count(&report, &format!("| rrdscale | 100 | perftest | {mode} |")), 1, "{report}");
    }
    assert_eq!(row_count(&report, "| rrdtool 1.7.2 | 100 | perftest | librrd |"), 1, "{report}");
    assert_eq!(row_count(&report, "| rrdtool 1.7.2 | 100 | perftest | pipe |"), 1, "{report}");
    // Two rounds of three passes; creates per side per round.
    for round in 1..=2 {
        for pass in 1..=3 {
            assert_eq!(row_count(&report, &format!("| {round} | {pass} | 2023-11-15 ")), 1, "{report}");
        }
    }
    assert_eq!(row_count(&report, "| librrd | 2 | 50 |"), 1, "{report}");
    assert!(report.contains("Byte-identical across sides: 100 of 100 compared files"), "{report}");
    assert!(report.contains("Reproduce with: `rrdscale bench perftest --files 50"), "{report}");
    check_files(
        &report,
        &["rrdscale direct", "rrdscale batch", "rrdscale pipe", "rrdscale mapped", "librrd", "rrdtool pipe"],
    );
    // The saved JSON renders the same report again.
    let again = bench(&["report", json.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    assert_eq!(again, report);
    let j = std::fs::read_to_string(&json).unwrap();
    assert!(j.starts_with('{') && j.contains("\"command\"") && j.contains("\"Librrd\""), "{j}");
    for name in ["perftest-updates.svg", "perftest-cpu.svg", "perftest-pages.svg"] {
        let s = std::fs::read_to_string(svg.join(name)).unwrap();
        assert!(s.starts_with("<svg") && s.matches("<polyline").count() == 6, "{name}");
    }
}

/// Cacti's pattern: a fresh `rrdscale -` and `rrdtool -` per pass. The
/// counters of each pass are the fresh process's own (read from its
/// zombie before it is reaped): a new process always takes minor faults,
/// and every update writes.
#[test]
fn perftest_with_a_process_per_pass() {
    let (dir, report) = bench_in(
        "perftest --files 40 --updates-per-round 3 --mode pipe-cycle,pipe --vs rrdtool,rrdtool-pipe-cycle",
        &[("--json", "r.json")],
    );
    let json = dir.path().join("r.json");
    assert_eq!(row_count(&report, "| rrdscale | 40 | perftest | pipe-cycle |"), 1, "{report}");
    assert_eq!(row_count(&report, "| rrdtool 1.7.2 | 40 | perftest | pipe-cycle |"), 1, "{report}");
    assert!(report.contains("Byte-identical across sides: 40 of 40 compared files"), "{report}");
    check_files(&report, &["rrdscale pipe-cycle", "rrdscale pipe", "librrd", "rrdtool pipe-cycle"]);
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for side in j["sides"].as_array().unwrap() {
        let label = side["label"].as_str().unwrap();
        if !label.ends_with("pipe-cycle") {
            continue;
        }
        let passes = side["passes"].as_array().unwrap();
        assert_eq!(passes.len(), 3, "{label}");
        for p in passes {
            let c = &p["counters"];
            assert_eq!(p["errors"].as_u64(), Some(0), "{label}: {p}");
            assert!(c["minflt"].as_u64().unwrap() > 50, "{label}: not a fresh process's counters: {c}");
            assert!(
                c["write_bytes"].as_u64().unwrap() > 0 || c["syscw"].as_u64().unwrap() >= 40,
                "{label}: {c}"
            );
        }
    }
}

#[test]
fn perftest_alone_has_no_ratio() {
    let (_dir, report) = bench_in("perftest --files 20 --updates-per-round 2 --schema mrtg", &[]);
    let row =
        report.lines().find(|l| l.starts_with("| rrdscale | 20 | mrtg | direct |")).expect("summary row");
    assert!(row.ends_with("| – | – |"), "no reference, no ratio: {row}");
    assert!(!report.contains("librrd"), "{report}");
    check_files(&report, &["rrdscale direct"]);
}

#[test]
fn growthforecast_against_rrdtool() {
    let (_dir, report) =
        bench_in("growthforecast --sizes 20,40 --passes 2 --mode direct,batch --vs rrdtool", &[]);
    for n in [20, 40] {
        for side in ["rrdscale direct", "rrdscale batch", "librrd"] {
            assert_eq!(row_count(&report, &format!("| {n} | {side} |")), 1, "{report}");
        }
        assert_eq!(
            row_count(&report, &format!("| {n} | rrdscale direct vs librrd (speedup) |")),
            1,
            "{report}"
        );
    }
    assert!(report.contains("| pass 1 (cold) s | pass 2 s |"), "{report}");
    // Files 0..20 got 4 updates, files 20..40 two: two runs of last updates.
    assert_eq!(last_updates(&report).len(), 2, "{report}");
    assert!(report.contains("Byte-identical across sides: 40 of 40 compared files"), "{report}");
    check_files(&report, &["rrdscale direct", "rrdscale batch", "librrd"]);
}

#[test]
fn growthforecast_alone() {
    let (_dir, report) = bench_in("growthforecast --sizes 20,40 --passes 2 --mode pipe", &[]);
    assert_eq!(row_count(&report, "| 40 | rrdscale pipe |"), 1, "{report}");
    assert!(!report.contains("speedup"), "{report}");
    check_files(&report, &["rrdscale pipe"]);
}

/// A memory budget puts each side in its own memory cgroup (needs root and
/// a cgroup hierarchy, as on the project's machines) and removes it after.
#[test]
fn memory_budget_charges_each_side_and_cleans_up() {
    let (_dir, report) = bench_in(
        "perftest --files 30 --updates-per-round 2 --evict round --mode direct,batch,mapped --vs rrdtool \
         --memory-budget 64M",
        &[],
    );
    assert!(report.contains("Memory budget: 64.0 MiB (67108864 bytes)"), "{report}");
    assert!(report.contains("### Cold passes only"), "{report}");
    let row = report
        .lines()
        .find(|l| l.starts_with("| rrdtool 1.7.2 | 30 | perftest | librrd |"))
        .expect("librrd row");
    assert!(row.contains(" MiB |"), "peak cgroup memory is reported: {row}");
    check_files(&report, &["rrdscale direct", "rrdscale batch", "rrdscale mapped", "librrd"]);
    // Each side had its own cgroup, and none is left behind.
    let cgroups: Vec<&str> = report
        .lines()
        .filter_map(|l| l.strip_prefix("- Memory cgroup of "))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    assert_eq!(cgroups.len(), 4, "{report}");
    for cg in cgroups {
        assert!(cg.contains("rrdscale-bench-"), "{cg}");
        assert!(!Path::new(cg).exists(), "the cgroup {cg} was left behind");
    }
}

#[test]
fn bad_options_are_errors() {
    let out = rrdscale().args(["bench", "perftest", "--mode", "fast"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("ERROR: "), "{out:?}");
    let out = rrdscale().args(["bench", "perftest", "--schema", "nonsense"]).output().unwrap();
    assert!(!out.status.success());
    let help = rrdscale().args(["bench", "--help"]).output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("growthforecast"));
}

/// `--mode librrd`: rrdscale's own librrd.so.8 (the cdylib the workspace
/// build leaves in `target/<profile>/deps/`) beside Debian's in one run,
/// each in its own worker; both sides' files byte-identical.
#[test]
fn our_librrd_against_debians_in_one_run() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_rrdscale"));
    let ours = exe.with_file_name("deps").join("librrd.so");
    assert!(
        ours.is_file(),
        "{} is missing: build the workspace (cargo test --workspace builds it)",
        ours.display()
    );
    let (dir, report) = bench_in(
        "perftest --files 40 --updates-per-round 3 --mode librrd --vs rrdtool",
        &[("--librrd", ours.to_str().unwrap())],
    );
    assert_eq!(row_count(&report, "| rrdscale | 40 | perftest | librrd.so.8 |"), 1, "{report}");
    assert_eq!(row_count(&report, "| rrdtool 1.7.2 | 40 | perftest | librrd |"), 1, "{report}");
    assert!(report.contains(&format!("rrdscale's {}", ours.display())), "ours named in the tools: {report}");
    assert!(report.contains("Byte-identical across sides: 40 of 40 compared files"), "{report}");
    check_files(&report, &["rrdscale librrd.so.8", "librrd"]);
    // A library that is not ours is refused, by name.
    let out = rrdscale()
        .args(["bench", "perftest", "--files", "2", "--mode", "librrd", "--librrd"])
        .arg("/usr/lib/x86_64-linux-gnu/librrd.so.8")
        .arg("--dir")
        .arg(dir.path().join("c"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not rrdscale's librrd"), "{out:?}");
}
