//! Running rrdtool and rrdscale side by side, as the comparison tests do:
//! each command in a given directory with `TZ` set (UTC unless a test
//! says otherwise) and `LC_ALL=C`, and the text that reports two runs that
//! differ. One copy here instead of one per test file; a missing rrdtool
//! fails the test with a message saying so.

use std::ffi::OsStr;
use std::fmt::Display;
use std::path::Path;
use std::process::{Command, Output};

use super::RRDTOOL;

/// rrdscale's binary, as cargo built it for the tests.
pub fn rrdscale_bin() -> &'static str {
    env!("CARGO_BIN_EXE_rrdscale")
}

/// Fails the test, saying how to install it, when rrdtool is missing.
pub fn require_rrdtool() {
    assert!(
        Path::new(RRDTOOL).exists(),
        "rrdtool not installed: run .ci/run or apt-get install rrdtool (looked for {RRDTOOL})"
    );
}

/// Runs `program ARGS` in `dir` with `TZ=tz` and `LC_ALL=C`.
pub fn run_tz<S: AsRef<OsStr>>(program: &str, args: &[S], dir: &Path, tz: &str) -> Output {
    require_rrdtool();
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("TZ", tz)
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

/// Runs `program ARGS` in `dir` with `TZ=UTC` and `LC_ALL=C`.
pub fn run_in<S: AsRef<OsStr>>(program: &str, args: &[S], dir: &Path) -> Output {
    run_tz(program, args, dir, "UTC")
}

/// Runs `rrdscale ARGS` in `dir` (`TZ=UTC`), asserting that it succeeded;
/// returns its stdout.
pub fn rrdscale_ok(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new(rrdscale_bin())
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .output()
        .expect("run rrdscale");
    assert!(out.status.success(), "rrdscale {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// One side of a difference report: `--- NAME (STATUS)` (the status only
/// when given), then the side's stdout and stderr.
pub fn side(name: &str, status: Option<&dyn Display>, stdout: &[u8], stderr: &[u8]) -> String {
    let status = status.map(|s| format!(" ({s})")).unwrap_or_default();
    format!("--- {name}{status}\n{}{}", String::from_utf8_lossy(stdout), String::from_utf8_lossy(stderr))
}

/// `WHAT:` then rrdtool's and rrdscale's stdout and stderr, for a failure
/// list; with the exit statuses when `statuses` is set.
pub fn differences(what: &str, theirs: &Output, ours: &Output, statuses: bool) -> String {
    let side_of = |name: &str, o: &Output| {
        let status = statuses.then_some(&o.status as &dyn Display);
        side(name, status, &o.stdout, &o.stderr)
    };
    format!("{what}:\n{}\n{}", side_of("rrdtool", theirs), side_of("rrdscale", ours))
}

/// Asserts that `failures` is empty, listing them all otherwise.
pub fn assert_no_failures(failures: &[String]) {
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

/// A command line written as one string, split at white space (for
/// arguments that hold none).
pub fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

/// Runs `args` with rrdtool and with rrdscale in `dir` (`TZ=tz`); when
/// their stdout or stderr differ, adds the report, headed `what`, to
/// `failures`.
pub fn compare_outputs(args: &[String], dir: &Path, tz: &str, what: &str, failures: &mut Vec<String>) {
    let theirs = run_tz(RRDTOOL, args, dir, tz);
    let ours = run_tz(rrdscale_bin(), args, dir, tz);
    if theirs.stdout != ours.stdout || theirs.stderr != ours.stderr {
        failures.push(differences(what, &theirs, &ours, false));
    }
}

/// Asserts that the run `what` (a command line, for the message)
/// succeeded, showing its status, stderr and stdout otherwise; returns its
/// stdout.
pub fn succeeded(what: &str, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed: {}\nstderr:\n{}\nstdout:\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
