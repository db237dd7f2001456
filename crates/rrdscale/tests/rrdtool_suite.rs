//! What rrdtool 1.7.2's own `tests/` scripts check about graph and xport
//! (`rpn1`, `rpn2`, `graph1`, `xport1`, `vformatter1`: the ones that need
//! no daemon), re-created here in our own code and data.
//!
//! Those scripts and their expected-output files are rrdtool's (GPL) and
//! are not part of this repository; CI cannot download them either. So
//! each scenario below does what its script does, in our words: the same
//! kind of file (data source types, steps, archives), updates of the same
//! shape, then the same kind of graphv/xport/graph command. Every command
//! runs twice, once with the real rrdtool (`/usr/bin/rrdtool`) in one
//! directory and once with rrdscale in another (rrdtool's scripts also run
//! create and update through `$RRDTOOL`), and each command's standard
//! output, standard error and exit status must be equal. Where a script
//! states a fact (vformatter1's expected texts), it is asserted too.

use std::path::Path;
use std::process::Command;

const RRDTOOL: &str = "/usr/bin/rrdtool";

/// One command of a scenario, with its environment.
struct Step {
    args: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
}

fn step(args: &[&str]) -> Step {
    Step { args: args.iter().map(|s| s.to_string()).collect(), env: Vec::new() }
}

fn step_env(args: &[&str], env: &[(&'static str, &'static str)]) -> Step {
    Step { args: args.iter().map(|s| s.to_string()).collect(), env: env.to_vec() }
}

/// A `step` from owned strings.
fn step_owned(args: Vec<String>) -> Step {
    Step { args, env: Vec::new() }
}

struct Outcome {
    status: bool,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn run(program: &str, s: &Step, dir: &Path) -> Outcome {
    assert!(
        Path::new(RRDTOOL).exists(),
        "rrdtool not installed: run .ci/run or apt-get install rrdtool (looked for {RRDTOOL})"
    );
    let mut cmd = Command::new(program);
    // The scripts' environment: Europe/Zurich (their `functions`), C texts.
    cmd.args(&s.args).current_dir(dir).env("TZ", "Europe/Zurich").env("LC_ALL", "C");
    for (k, v) in &s.env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap_or_else(|e| panic!("running {program}: {e}"));
    Outcome { status: o.status.success(), stdout: o.stdout, stderr: o.stderr }
}

/// Runs every step with both tools (each in its own directory) and returns
/// rrdtool's outputs after checking rrdscale's equal them.
fn both(name: &str, steps: &[Step]) -> Vec<Outcome> {
    let theirs_dir = tempfile::Builder::new().prefix("rrdsuite-rrdtool-").tempdir().expect("tempdir");
    let ours_dir = tempfile::Builder::new().prefix("rrdsuite-rrdscale-").tempdir().expect("tempdir");
    let mut failures = Vec::new();
    let mut outcomes = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let theirs = run(RRDTOOL, s, theirs_dir.path());
        let ours = run(env!("CARGO_BIN_EXE_rrdscale"), s, ours_dir.path());
        if theirs.status != ours.status || theirs.stdout != ours.stdout || theirs.stderr != ours.stderr {
            failures.push(format!(
                "{name} step {i} {:?}:\n--- rrdtool ({})\n{}{}\n--- rrdscale ({})\n{}{}",
                s.args,
                theirs.status,
                String::from_utf8_lossy(&theirs.stdout),
                String::from_utf8_lossy(&theirs.stderr),
                ours.status,
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&ours.stderr)
            ));
        }
        outcomes.push(theirs);
    }
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
    outcomes
}

/// rpn1 and graph1: a COUNTER at the default 300 s step with two archives,
/// a quarter of updates (one of them repeating a value), then graphv over
/// an hour of it with CDEF chains (UN/IF, GT, a long vname, a constant
/// with many zeros), VDEFs and a VRULE with a legend.
fn counter_file() -> Vec<Step> {
    let mut steps = vec![step(&[
        "create",
        "speed.rrd",
        "--start",
        "1000000200",
        "DS:speed:COUNTER:600:U:U",
        "RRA:AVERAGE:0.5:1:24",
        "RRA:AVERAGE:0.5:6:10",
    ])];
    // Fifteen readings, five minutes apart, growing unevenly.
    let counts = [2000, 2013, 2020, 2020, 2020, 2031, 2040, 2052, 2057, 2064, 2069, 2074, 2078, 2081, 2082];
    for chunk in counts.iter().enumerate().collect::<Vec<_>>().chunks(3) {
        let mut args = vec!["update".to_string(), "speed.rrd".to_string()];
        args.extend(chunk.iter().map(|(i, c)| format!("{}:{c}", 1_000_000_500 + 300 * *i as i64)));
        steps.push(step_owned(args));
    }
    steps
}

#[test]
fn rpn1_cdef_chains_and_vdefs_in_graphv() {
    let mut steps = counter_file();
    steps.push(step(&[
        "graphv",
        "rpn1.png",
        "--start",
        "1000000200",
        "--end",
        "1000003800",
        "DEF:my-speed=speed.rrd:speed:AVERAGE",
        "CDEF:zeroed=my-speed,UN,0,my-speed,IF",
        "CDEF:perhour=zeroed,3600,*",
        "CDEF:above_the_limit_with_a_rather_long_name=perhour,40,GT,40,0,IF",
        "CDEF:excess=perhour,40.000000000000000000000000000000000,GT,perhour,40,-,0,IF",
        "CDEF:within=perhour,40,GT,0,perhour,IF",
        "VDEF:share=above_the_limit_with_a_rather_long_name,AVERAGE",
        "VDEF:top=within,MAXIMUM",
        "VDEF:least=excess,MINIMUM",
        "VRULE:1000002000#000000:marker",
        "PRINT:share:%lf",
        "PRINT:top:%lf",
        "PRINT:least:%lf",
    ]));
    let out = both("rpn1", &steps);
    let text = String::from_utf8_lossy(&out.last().expect("graphv").stdout).into_owned();
    // What the script looks at: three PRINT lines and the VRULE's legend.
    for key in ["print[0] = ", "print[1] = ", "print[2] = ", "legend[0] = \"  marker\""] {
        assert!(text.contains(key), "no {key} in\n{text}");
    }
}

#[test]
fn graph1_vdef_maximum_of_a_counter() {
    let mut steps = counter_file();
    steps.push(step(&[
        "graphv",
        "graph1.png",
        "--start",
        "1000000200",
        "--end",
        "1000003800",
        "DEF:my-speed=speed.rrd:speed:AVERAGE",
        "VDEF:most=my-speed,MAXIMUM",
        "PRINT:most:%lf",
    ]));
    let out = both("graph1", &steps);
    let text = String::from_utf8_lossy(&out.last().expect("graphv").stdout).into_owned();
    assert!(text.contains("print[0] = \""), "{text}");
}

/// rpn2: a DCOUNTER with a two-hour step across New Year in Europe/Zurich,
/// xport --json of the NEW* flags, accumulators through PREV, and the
/// window operators AVG, SMIN, SMAX, MEDIAN, STDEV, PERCENT, plus POW.
#[test]
fn rpn2_calendar_flags_and_window_operators() {
    let start = 1_167_480_000_i64; // 2006-12-30, in the last days of the year
    let mut steps = vec![step_owned(
        [
            "create",
            "calendar.rrd",
            "--step",
            "7200",
            "--start",
            &(start - 200).to_string(),
            "DS:speed:DCOUNTER:14000:U:U",
            "RRA:AVERAGE:0.5:1:30",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    )];
    let mut args = vec!["update".to_string(), "calendar.rrd".to_string()];
    for i in 0..19i64 {
        args.push(format!("{}:{}", start + 7200 * i, 650 * i));
    }
    steps.push(step_owned(args));
    let end = (start + 7200 * 18).to_string();
    let start_s = start.to_string();
    steps.push(step_env(
        &[
            "xport",
            "--json",
            "--start",
            &start_s,
            "--end",
            &end,
            "DEF:v=calendar.rrd:speed:AVERAGE",
            "CDEF:isday=v,POP,NEWDAY",
            "CDEF:isweek=v,POP,NEWWEEK",
            "CDEF:ismonth=v,POP,NEWMONTH",
            "CDEF:isyear=v,POP,NEWYEAR",
            "CDEF:perday=v,STEPWIDTH,*,NEWDAY,0,PREV,IF,ADDNAN",
            "CDEF:perweek=v,STEPWIDTH,*,NEWWEEK,0,PREV,IF,ADDNAN",
            "CDEF:permonth=v,STEPWIDTH,*,NEWMONTH,0,PREV,IF,ADDNAN",
            "CDEF:peryear=v,STEPWIDTH,*,NEWYEAR,0,PREV,IF,ADDNAN",
            "CDEF:mean=v,POP,2,2,3,19,4,AVG",
            "CDEF:least=v,POP,6,1,7,3.5,4,SMIN",
            "CDEF:most=v,POP,6,1,7,3.5,4,SMAX",
            "CDEF:mid=v,POP,6,1,7,3.5,4,MEDIAN",
            "CDEF:mid2=v,POP,6,1,7,3.5,13,5,MEDIAN",
            "CDEF:spread=v,POP,6,1,7,3.5,4,STDEV",
            "CDEF:pct=v,POP,0.25,2,2,2,2,2,2,2,6,12,90,10,PERCENT",
            "CDEF:square=v,2,POW",
            "XPORT:v:v",
            "XPORT:perday:perday",
            "XPORT:isday:isday",
            "XPORT:perweek:perweek",
            "XPORT:isweek:isweek",
            "XPORT:permonth:permonth",
            "XPORT:ismonth:ismonth",
            "XPORT:peryear:peryear",
            "XPORT:isyear:isyear",
            "XPORT:mean:mean",
            "XPORT:least:least",
            "XPORT:most:most",
            "XPORT:mid:mid",
            "XPORT:mid2:mid2",
            "XPORT:pct:pct",
            "XPORT:square:square",
            "XPORT:spread:spread",
        ],
        &[("LC_TIME", "C")],
    ));
    let out = both("rpn2", &steps);
    let json = String::from_utf8_lossy(&out.last().expect("xport").stdout).into_owned();
    assert!(json.contains("\"isweek\""), "{json}");
}

/// xport1: a DDERIVE and a DCOUNTER (minimum 0) at a 60 s step, updated
/// every 40 s for a few hours with fractional values, exported at a
/// 600 s step as JSON and as XML with `--enumds -t`.
#[test]
fn xport1_derive_and_counter_as_json_and_xml() {
    let mut steps = vec![step(&[
        "create",
        "meter.rrd",
        "--start",
        "1400000000",
        "--step",
        "60s",
        "DS:dv:DDERIVE:300:U:U",
        "DS:wh:DCOUNTER:300:0:U",
        "RRA:AVERAGE:0.5:1:600",
        "RRA:AVERAGE:0.5:10:144",
    ])];
    let mut energy = 0.0f64;
    let mut updates = Vec::new();
    for i in 0..390i64 {
        let t = 1_400_000_001 + 40 * i;
        // A slowly falling level with a flat stretch, and a meter that
        // keeps counting at a slowly falling rate.
        let level = if (20..47).contains(&i) { 50.0 } else { 55.0 - 0.03 * i as f64 };
        energy += 1.5 - 0.0005 * i as f64;
        updates.push(format!("{t}:{level:.6}:{energy:.6}"));
    }
    for chunk in updates.chunks(10) {
        let mut args = vec!["update".to_string(), "meter.rrd".to_string()];
        args.extend(chunk.iter().cloned());
        steps.push(step_owned(args));
    }
    let common = ["-s", "1400000000", "-e", "1400015200", "--step", "600"];
    let defs = ["DEF:dv=meter.rrd:dv:AVERAGE", "DEF:wh=meter.rrd:wh:AVERAGE", "XPORT:dv:dv", "XPORT:wh:wh"];
    let mut json = vec!["xport", "--json"];
    json.extend(common);
    json.extend(defs);
    steps.push(step(&json));
    let mut xml = vec!["xport", "--enumds", "-t"];
    xml.extend(common);
    xml.extend(defs);
    steps.push(step(&xml));
    let out = both("xport1", &steps);
    let xml = String::from_utf8_lossy(&out.last().expect("xport").stdout).into_owned();
    assert!(xml.contains("<v0>") && xml.contains("<v1>") && xml.contains("<t>"), "{xml}");
}

/// vformatter1: PRINT of a VDEF LAST as a number, with `strftime` (the
/// time of the value), `valstrftime` (the value as a time stamp) and
/// `valstrfduration` (the value as milliseconds), with no data, a zero and
/// 3000. `graph /dev/null` prints `0x0` and the PRINT line (nothing is
/// drawn).
#[test]
fn vformatter1_time_and_duration_formats() {
    let graph = |print: &str| {
        step_env(
            &[
                "graph",
                "/dev/null",
                "--start",
                "1420070400",
                "--end",
                "1420071000",
                "DEF:dv=fmt.rrd:v:LAST",
                "VDEF:v=dv,LAST",
                print,
            ],
            &[("TZ", "UTC")],
        )
    };
    let prints = [
        "PRINT:v:%0.1lf",
        "PRINT:v:%F %T:strftime",
        "PRINT:v:%F %T:valstrftime",
        "PRINT:v::valstrfduration",
        "PRINT:v:%H_%02m_%02s_%03f:valstrfduration",
    ];
    let mut steps = vec![step(&[
        "create",
        "fmt.rrd",
        "--start",
        "1420070400",
        "--step",
        "60s",
        "DS:v:GAUGE:60:U:U",
        "RRA:LAST:0:1:10",
    ])];
    steps.extend(prints.iter().map(|p| graph(p)));
    steps.push(step(&["update", "fmt.rrd", "--template", "v", "--", "1420070460:0"]));
    steps.extend(prints.iter().map(|p| graph(p)));
    steps.push(step(&["update", "fmt.rrd", "--template", "v", "--", "1420070520:3000"]));
    steps.extend(prints.iter().map(|p| graph(p)));
    let out = both("vformatter1", &steps);
    let text = |i: usize| String::from_utf8_lossy(&out[i].stdout).replace("-nan", "nan");
    // The facts the script states.
    assert_eq!(text(1), "0x0\nnan\n");
    assert_eq!(text(2), "0x0\n---------- --:--:--\n");
    assert_eq!(text(7), "0x0\n0.0\n");
    assert_eq!(text(8), "0x0\n2015-01-01 00:01:00\n");
    assert_eq!(text(9), "0x0\n1970-01-01 00:00:00\n");
    assert_eq!(text(11), "0x0\n0_00_00_000\n");
    assert_eq!(text(13), "0x0\n3000.0\n");
    assert_eq!(text(14), "0x0\n2015-01-01 00:02:00\n");
    assert_eq!(text(15), "0x0\n1970-01-01 00:50:00\n");
    assert_eq!(text(17), "0x0\n0_00_03_000\n");
}
