//! The command-line places where rrdtool 1.7.2 reads a number with a C
//! library call or its own scaled-duration parser, against the real rrdtool:
//! `create`'s step, heartbeat, RRA steps and rows (`rrd_scaled_duration`:
//! only the first character after the digits is read, `strtoul` saturates,
//! the scaling wraps), `fetch -r` (the same), `first --rraindex` (`strtol`
//! base 0 into an `int`), `resize` (`strtol` base 0), `tune --step` (`atoi`)
//! and `tune --heartbeat` (`%ld`). Each case runs both programs in their own
//! directory and must give the same exit status, stdout and stderr, and,
//! where a file was written, the same `info` (less the random `cur_row`).
//!
//! These inputs are the edges where the copies of C's conversions the code
//! had before `rrd-lang` disagreed (hex, octal, overflow, trailing garbage).
//! Every command runs with TZ=UTC and LC_ALL=C; without rrdtool the test
//! fails saying so.

mod common;

use std::path::Path;

use common::tools::run_in as run;

const OURS: &str = env!("CARGO_BIN_EXE_rrdscale");

/// `info` of `file` without the random start rows, or `None` if absent.
fn info(program: &str, file: &str, dir: &Path) -> Option<String> {
    if !dir.join(file).exists() {
        return None;
    }
    let out = run(program, &["info", file], dir);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Some(text.lines().filter(|l| !l.contains("cur_row")).collect::<Vec<_>>().join("\n"))
}

/// Runs `setup` (with rrdtool, in both directories), then `args` with each
/// program in its own directory, and reports how they differ.
fn compare(setup: &[&[&str]], args: &[&str], written: Option<&str>) -> Option<String> {
    let theirs = tempfile::tempdir().unwrap();
    let ours = tempfile::tempdir().unwrap();
    for dir in [theirs.path(), ours.path()] {
        for step in setup {
            let out = run("rrdtool", step, dir);
            assert!(out.status.success(), "setup {step:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let a = run("rrdtool", args, theirs.path());
    let b = run(OURS, args, ours.path());
    let mut problems = Vec::new();
    if a.status.code() != b.status.code() {
        problems.push(format!("exit status: rrdtool {:?}, rrdscale {:?}", a.status.code(), b.status.code()));
    }
    if a.stdout != b.stdout {
        problems.push(format!(
            "stdout: rrdtool {:?}, rrdscale {:?}",
            String::from_utf8_lossy(&a.stdout),
            String::from_utf8_lossy(&b.stdout)
        ));
    }
    if a.stderr != b.stderr {
        problems.push(format!(
            "stderr: rrdtool {:?}, rrdscale {:?}",
            String::from_utf8_lossy(&a.stderr),
            String::from_utf8_lossy(&b.stderr)
        ));
    }
    if let Some(file) = written {
        let (x, y) = (info("rrdtool", file, theirs.path()), info("rrdtool", file, ours.path()));
        if x != y {
            problems.push(format!("info of {file}: rrdtool {x:?}, rrdscale {y:?}"));
        }
    }
    (!problems.is_empty()).then(|| format!("`{}`:\n  {}", args.join(" "), problems.join("\n  ")))
}

fn finish(what: &str, failures: Vec<String>, count: usize) {
    assert!(count > 0, "{what}: nothing was compared");
    assert!(failures.is_empty(), "{what}: {} of {count} differ:\n{}", failures.len(), failures.join("\n"));
}

const START: &str = "1000000000";

/// `create`'s scaled durations: step, heartbeat, RRA steps and rows.
#[test]
fn create_durations_match_rrdtool() {
    let mut failures = Vec::new();
    let mut count = 0;
    let steps = [
        "300",
        "5mx",
        "300sx",
        "010",
        "0x10",
        " 5",
        "+5",
        "5q",
        "0",
        "0m",
        "7",
        "1M",
        "99999999999999999999",
        "4611686018427387904m",
        "18446744073709551615s",
    ];
    for step in steps {
        let args = ["create", "a.rrd", "-b", START, "-s", step, "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"];
        count += 1;
        failures.extend(compare(&[], &args, Some("a.rrd")));
    }
    for heartbeat in ["600", "10mzz", "5s", "1h", "0x10", "99999999999999999999", "0", "x"] {
        let ds = format!("DS:a:GAUGE:{heartbeat}:U:U");
        let args = ["create", "a.rrd", "-b", START, "-s", "300", &ds, "RRA:AVERAGE:0.5:1:10"];
        count += 1;
        failures.extend(compare(&[], &args, Some("a.rrd")));
    }
    for (steps, rows) in
        [("1hx", "1dq"), ("7m", "10"), ("5m", "7m"), ("300s", "1d"), ("12", "0x10"), ("1h", "1y")]
    {
        let rra = format!("RRA:AVERAGE:0.5:{steps}:{rows}");
        let args = ["create", "a.rrd", "-b", START, "-s", "300", "DS:a:GAUGE:600:U:U", &rra];
        count += 1;
        failures.extend(compare(&[], &args, Some("a.rrd")));
    }
    finish("create", failures, count);
}

/// `fetch -r`, `first --rraindex`, `resize` and `tune` on a file rrdtool
/// made.
#[test]
fn read_and_change_numbers_match_rrdtool() {
    let create: &[&str] = &[
        "create",
        "f.rrd",
        "-b",
        START,
        "-s",
        "300",
        "DS:a:GAUGE:600:U:U",
        "RRA:AVERAGE:0.5:1:10",
        "RRA:AVERAGE:0.5:6:10",
    ];
    let update: &[&str] = &["update", "f.rrd", "1000000300:1", "1000000600:2", "1000000900:3"];
    let setup = [create, update];
    let mut failures = Vec::new();
    let mut count = 0;
    for r in ["300", "5mx", "30m", "0x10", "010", "0", "-1", "x"] {
        let args = ["fetch", "f.rrd", "AVERAGE", "-r", r, "-s", "1000000000", "-e", "1000000900"];
        count += 1;
        failures.extend(compare(&setup, &args, None));
    }
    for index in
        ["1", "0x1", "010", " 1", "+1", "1x", "x", "4294967296", "4294967297", "99999999999999999999", "-1"]
    {
        let args = ["first", "f.rrd", "--rraindex", index];
        count += 1;
        failures.extend(compare(&setup, &args, None));
    }
    for (rra, rows) in [("0", "5"), ("0x1", "010"), (" 1", "0x5x"), ("x", "5")] {
        let args = ["resize", "f.rrd", rra, "GROW", rows];
        count += 1;
        failures.extend(compare(&setup, &args, Some("resize.rrd")));
    }
    for tune in [
        &["--heartbeat", "a:1200"][..],
        &["--heartbeat", "a: 1200x"],
        &["--heartbeat", "a:0x10"],
        &["--heartbeat", "a:99999999999999999999"],
        &["--heartbeat", "a:-"],
        &["--step", "0x10"],
        &["--step", "600x"],
    ] {
        let mut args = vec!["tune", "f.rrd"];
        args.extend_from_slice(tune);
        count += 1;
        failures.extend(compare(&setup, &args, Some("f.rrd")));
    }
    finish("fetch, first, resize, tune", failures, count);
}

/// `resize` by strtol's saturated row count: rrdtool starts writing 2^63 - 1
/// rows and never ends (so it is not run here); rrdscale refuses with a
/// clear error, writes no `resize.rrd`, and does not panic.
#[test]
fn resize_by_a_saturated_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let create = ["create", "f.rrd", "-b", START, "-s", "300", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"];
    assert!(run("rrdtool", &create, dir.path()).status.success());
    let out = run(OURS, &["resize", "f.rrd", "0", "GROW", "99999999999999999999"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("ERROR: ") && stderr.contains("too large"), "{stderr}");
    assert!(!dir.path().join("resize.rrd").exists());
}

/// `update`'s time stamp is read as a double and floored into a `time_t`:
/// a time beyond 64 bits becomes LONG_MIN (x86_64's conversion of an out of
/// range double), so rrdtool refuses it as too early and names that number.
/// Each case is one `update` after one at 1000000300.
#[test]
fn update_times_beyond_64_bits_match_rrdtool() {
    let create: &[&str] =
        &["create", "f.rrd", "-b", START, "-s", "300", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"];
    let update: &[&str] = &["update", "f.rrd", "1000000300:1"];
    let setup = [create, update];
    let mut failures = Vec::new();
    let mut count = 0;
    for time in [
        "99999999999",
        "9223372036854775807",
        "9223372036854775808",
        "9999999999999999999",
        "1e19",
        "1e300",
        "1e400",
        "-1e300",
        "inf",
        "nan",
        "1000000600.5",
        "0x3B9ACD58",
    ] {
        let value = format!("{time}:5");
        let args = ["update", "f.rrd", &value];
        count += 1;
        failures.extend(compare(&setup, &args, Some("f.rrd")));
    }
    finish("update times", failures, count);
}
