//! Differential tests: the same command lines through the real rrdtool
//! (/usr/bin/rrdtool, 1.7.2) and through `rrdscale`, compared byte for byte.
//!
//! - `random_cases_match_rrdtool`: the main property test, over random
//!   schemas and update streams (see `common/gen.rs`), comparing create and
//!   update exit statuses, `updatev` output, raw file bytes, and `dump`,
//!   `info`, `fetch`, `last`, `first`, `lastupdate` on both tools' files.
//! - `harness_self_check_rrdtool_against_itself`: the harness with rrdtool on
//!   both sides must see no difference, and rrdtool must accept exactly the
//!   calls the generator meant to be valid. This guards the harness (its
//!   normalisations and the generator) rather than the engine.
//! - `harness_reports_a_difference`: a deliberately wrong candidate must be
//!   caught, shrunk, and given a reproducer script that itself fails.
//! - `updates_with_now_match` and `pipe_mode_matches`: `N` times and
//!   `rrdtool -` pipe mode, where only time-independent output is compared.
//!
//! Knobs are documented in `common/mod.rs` (RRDSCALE_DIFF_CASES,
//! RRDSCALE_DIFF_SEED, RRDSCALE_DIFF_ONLY, ...). A missing rrdtool fails
//! every test here with "rrdtool not installed".

mod common;

use std::path::Path;
use std::time::Duration;

use common::harness::{run, Outcome, Tool};

/// Default number of random cases. Measured on the 2-core machine kind with
/// a release build: 300 cases took 86 s to 203 s of wall time while other
/// builds loaded the machine (load average 5 to 11); rrdtool's process
/// start-up (~10 ms a run, ~70 runs a case) dominates.
const DEFAULT_CASES: u64 = 300;

#[test]
fn random_cases_match_rrdtool() {
    let cfg = common::RunConfig::from_env(DEFAULT_CASES);
    let h = common::harness(common::rrdscale(), common::output_dir());
    println!("differential: seed {} (set RRDSCALE_DIFF_SEED to repeat)", cfg.seed);
    let result = common::run_all(&h, &cfg);
    if let Some(failure) = common::report_run(&h, &cfg, &result, "rrdtool vs rrdscale") {
        panic!("{failure}");
    }
}

#[test]
fn harness_self_check_rrdtool_against_itself() {
    let mut cfg = common::RunConfig::from_env(16);
    cfg.cases = cfg.cases.min(16);
    cfg.shrink = 0;
    let tmp = tempfile::tempdir().unwrap();
    let oracle = common::rrdtool();
    let h =
        common::harness(Tool { name: "rrdtool-again".into(), path: oracle.path }, tmp.path().to_path_buf());
    let result = common::run_all(&h, &cfg);
    let failure = common::report_run(&h, &cfg, &result, "rrdtool vs itself");
    let surprises = result.surprises();
    assert!(
        surprises.is_empty(),
        "the generator's intent disagrees with rrdtool (seed {}): {surprises:#?}",
        cfg.seed
    );
    assert!(failure.is_none(), "rrdtool differs from itself, so the harness compares too much: {failure:?}");
    // The generator must reach the interesting places, or the main test
    // proves little.
    let checks: Vec<&String> = result.tally.by_check.keys().collect();
    for needed in ["create", "update", "raw bytes after update", "dump [rrdtool-again on its own file]"] {
        assert!(checks.iter().any(|c| c.as_str() == needed), "no '{needed}' check ran; checks: {checks:?}");
    }
}

#[test]
fn harness_reports_a_difference() {
    let oracle = common::rrdtool();
    let tmp = tempfile::tempdir().unwrap();
    // A candidate that is rrdtool except that `dump` prints one space too many.
    let fake = tmp.path().join("fake-rrdtool");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nif [ \"$1\" = dump ]; then {0} \"$@\" | sed 's/<step>/<step >/'; exit 0; fi\nexec {0} \"$@\"\n",
            oracle.path.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = tmp.path().join("out");
    let h = common::harness(Tool { name: "fake".into(), path: fake }, out.clone());
    let cfg = common::RunConfig { seed: 42, cases: 2, only: None, threads: 2, shrink: 0 };
    let result = common::run_all(&h, &cfg);
    let failed = result.failed();
    assert_eq!(failed.len(), 2, "both cases must fail on dump");
    for r in &failed {
        let checks: Vec<&str> = r.mismatches.iter().map(|m| m.check.as_str()).collect();
        assert!(checks.contains(&"dump [fake on rrdtool's file]"), "{checks:?}");
        assert!(checks.contains(&"dump [fake on its own file]"), "{checks:?}");
        assert!(!checks.iter().any(|c| c.starts_with("update") || c.starts_with("create")), "{checks:?}");
        assert!(r.mismatches[0].detail.contains("-\t<step>"), "{}", r.mismatches[0].detail);
    }
    let small = h.shrink(failed[0], 40).expect("a dump difference shrinks");
    assert!(small.case.calls.is_empty(), "dump differs even without updates: {}", small.case.describe());
    assert_eq!(small.case.schema.rras.len(), 1);

    let script = h.write_reproducer(cfg.seed, &small).unwrap();
    assert_eq!(script, out.join(format!("42-{}.sh", small.index)));
    let replay = std::process::Command::new("bash")
        .arg(&script)
        .env("CANDIDATE", &h.candidate.path)
        .output()
        .expect("run bash");
    let text = String::from_utf8_lossy(&replay.stdout);
    assert_eq!(replay.status.code(), Some(1), "the reproducer must fail like the case: {text}");
    assert!(text.contains("+\t<step >"), "the reproducer shows the diff: {text}");
}

fn tool_run(tool: &Tool, args: &[&str], dir: &Path) -> Outcome {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    run(&tool.path, &args, dir, None, Duration::from_secs(60))
}

fn now_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// `N` means "now", so the times differ between the tools; the exit
/// statuses, the values and `last` (to within the time the test took) must not.
#[test]
fn updates_with_now_match() {
    let tools = [common::rrdtool(), common::rrdscale()];
    let start = now_secs() - 100;
    let create = format!("create|n.rrd|-b|{start}|-s|1|DS:a:GAUGE:5:U:U|DS:b:COUNTER:5:U:U|RRA:LAST:0:1:300");
    let script: Vec<Vec<&str>> = vec![
        create.split('|').collect(),
        vec!["update", "n.rrd", "N:1:100"],
        vec!["update", "n.rrd", "N:2:200"],
        vec!["update", "n.rrd", "-t", "b:a", "N:300:3"],
        // Not later than the last update: an error for both.
        vec!["update", "n.rrd", &"1000000000:1:1"],
    ];
    let mut outs: Vec<Vec<Outcome>> = Vec::new();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    for (tool, dir) in tools.iter().zip(&dirs) {
        outs.push(script.iter().map(|args| tool_run(tool, args, dir.path())).collect());
    }
    for (i, args) in script.iter().enumerate() {
        assert_eq!(
            outs[0][i].code,
            outs[1][i].code,
            "exit status of `{}`: {:?} vs {:?}",
            args.join(" "),
            outs[0][i],
            outs[1][i]
        );
    }
    let after = now_secs();
    let last: Vec<i64> = tools
        .iter()
        .zip(&dirs)
        .map(|(t, d)| {
            let o = tool_run(t, &["last", "n.rrd"], d.path());
            String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or(-1)
        })
        .collect();
    for (t, l) in tools.iter().zip(&last) {
        assert!(
            (start..=after).contains(l),
            "{}'s last update {l} is not between {start} and {after}",
            t.name
        );
    }
    // lastupdate prints "<time>: a b"; the values after the time must agree.
    let values: Vec<String> = tools
        .iter()
        .zip(&dirs)
        .map(|(t, d)| {
            let o = tool_run(t, &["lastupdate", "n.rrd"], d.path());
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.lines()
                .map(|l| l.split_once(':').map_or(l, |(_, v)| v).to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert_eq!(values[0], values[1], "lastupdate values differ");
}

/// One command's answer in pipe mode: its output lines and whether it ended
/// with `OK` or `ERROR:`.
#[derive(Debug, PartialEq)]
struct PipeAnswer {
    output: Vec<String>,
    ok: bool,
}

fn pipe_answers(stdout: &[u8]) -> Vec<PipeAnswer> {
    let mut answers = Vec::new();
    let mut output = Vec::new();
    for line in String::from_utf8_lossy(stdout).lines() {
        if line.starts_with("OK u:") || line == "OK" {
            answers.push(PipeAnswer { output: std::mem::take(&mut output), ok: true });
        } else if line.starts_with("ERROR:") {
            answers.push(PipeAnswer { output: std::mem::take(&mut output), ok: false });
        } else {
            output.push(line.to_string());
        }
    }
    answers
}

/// `rrdtool -` against `rrdscale -`: the same commands on standard input,
/// one `OK u:… s:… r:…` or `ERROR: …` line after each. The u:/s:/r: times
/// differ by nature; the statuses, and the output of time-independent
/// commands, must not.
#[test]
fn pipe_mode_matches() {
    let tools = [common::rrdtool(), common::rrdscale()];
    let b = 1_000_000_000;
    // (command, compare its output?)
    let script: Vec<(String, bool)> = vec![
        (format!("create p.rrd -b {b} -s 10 DS:a:GAUGE:20:U:U DS:b:COUNTER:20:0:U RRA:AVERAGE:0.5:1:10 RRA:MAX:0:3:10"), true),
        (format!("update p.rrd {}:1:100 {}:2:150", b + 10, b + 20), true),
        (format!("update p.rrd {}:1:100", b + 20), true),
        (format!("updatev p.rrd {}:4:300", b + 30), true),
        ("last p.rrd".to_string(), true),
        ("lastupdate p.rrd".to_string(), true),
        (format!("fetch p.rrd AVERAGE -s {b} -e {}", b + 100), true),
        ("first --rraindex 1 p.rrd".to_string(), true),
        ("info p.rrd".to_string(), false),
        ("dump p.rrd".to_string(), true),
        ("update missing.rrd 1:1".to_string(), true),
        ("create n.rrd -s 1 DS:a:GAUGE:5:U:U RRA:LAST:0:1:100".to_string(), true),
        ("update n.rrd N:1".to_string(), true),
        ("lastupdate n.rrd".to_string(), false),
    ];
    let input: String = script.iter().map(|(c, _)| format!("{c}\n")).collect();
    let mut answers = Vec::new();
    let mut statuses = Vec::new();
    for tool in &tools {
        let dir = tempfile::tempdir().unwrap();
        let o = run(
            &tool.path,
            &["-".to_string()],
            dir.path(),
            Some(input.clone().into_bytes()),
            Duration::from_secs(60),
        );
        statuses.push(o.code);
        answers.push(pipe_answers(&o.stdout));
    }
    assert_eq!(statuses[0], statuses[1], "exit status of pipe mode");
    assert_eq!(answers[0].len(), script.len(), "rrdtool answered every line: {:#?}", answers[0]);
    assert_eq!(
        answers[1].len(),
        script.len(),
        "rrdscale answers every line with OK or ERROR: {:#?}",
        answers[1]
    );
    for (i, (cmd, compare_output)) in script.iter().enumerate() {
        assert_eq!(answers[0][i].ok, answers[1][i].ok, "status of `{cmd}` in pipe mode");
        if *compare_output {
            assert_eq!(answers[0][i].output, answers[1][i].output, "output of `{cmd}` in pipe mode");
        }
    }
}

/// Prints the commands of one case: `RRDSCALE_DIFF_SEED=S RRDSCALE_DIFF_ONLY=I
/// cargo test -p rrdscale --test differential show_case -- --ignored --nocapture`.
#[test]
#[ignore = "a debugging aid, not a test"]
fn show_case() {
    let cfg = common::RunConfig::from_env(1);
    for index in cfg.indices() {
        let case = common::gen::Case::generate(common::gen::case_seed(cfg.seed, index));
        println!("# case {index} of seed {} (case seed {:#x})\n{}", cfg.seed, case.seed, case.describe());
    }
}
