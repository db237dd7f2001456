//! rrdscale under Debian's program names: a symlink named `rrdtool`,
//! `rrdupdate`, `rrdcreate`, `rrdinfo` or `rrdcached` pointing at the
//! binary makes it that program. Each case runs Debian's program and ours
//! on the same arguments (good and bad), each in its own copy of the same
//! directory, and requires the same standard output, standard error, exit
//! status and files (compared as Debian's `rrdtool dump` prints them).
//!
//! Two parts of the texts are rrdscale's own and are cut before comparing:
//! the banner line (`RRDtool 1.7.2  Copyright by ...`, which names
//! rrdscale and its version after rrdtool's version, and rrdtool's
//! `Compiled ...` line under it) and the closing paragraph of a help text
//! (which names the licence). Everything between them is compared as is.
//! Debian's programs are required: without them these tests fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const RRDSCALE: &str = env!("CARGO_BIN_EXE_rrdscale");
const T0: i64 = 1_000_000_000;

/// A directory of symlinks named as Debian's programs, all to our binary.
fn our_programs() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for name in ["rrdtool", "rrdupdate", "rrdcreate", "rrdinfo", "rrdcached"] {
        std::os::unix::fs::symlink(RRDSCALE, bin.join(name)).unwrap();
    }
    (t, bin)
}

/// The directory every case starts from: one RRD with a few updates.
fn seed(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let start = T0.to_string();
    let mut args = vec![
        "create".to_string(),
        "a.rrd".into(),
        "-b".into(),
        start,
        "-s".into(),
        "300".into(),
        "DS:x:GAUGE:600:U:U".into(),
        "DS:y:COUNTER:600:0:U".into(),
        "RRA:AVERAGE:0.5:1:10".into(),
        "RRA:MAX:0.5:3:5".into(),
    ];
    run_in("/usr/bin/rrdtool", &args, dir, "").expect_ok();
    args.truncate(2);
    args[0] = "update".into();
    for i in 1..=6 {
        args.push(format!("{}:{}:{}", T0 + 300 * i, i * 7, i * 1000));
    }
    run_in("/usr/bin/rrdtool", &args, dir, "").expect_ok();
}

fn run_in(program: &str, args: &[String], dir: &Path, stdin: &str) -> Output {
    run_found("/usr/bin", program, args, dir, stdin)
}

/// Runs `program` found in the directory `bin` (by name, as a shell finds
/// it, so that both sides see the same argv[0]).
fn run_found(bin: &str, program: &str, args: &[String], dir: &Path, stdin: &str) -> Output {
    use std::io::Write;
    let name = program.rsplit('/').next().unwrap();
    let mut child = Command::new(name)
        .env("PATH", bin)
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env_remove("RRDCACHED_ADDRESS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {program} ({e}); Debian's rrdtool 1.7.2 must be installed"));
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

trait ExpectOk {
    fn expect_ok(self);
}

impl ExpectOk for Output {
    fn expect_ok(self) {
        assert!(
            self.status.success(),
            "{}{}",
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&self.stderr)
        );
    }
}

/// A text with the banner and the closing paragraph replaced by markers,
/// and pipe mode's `OK u:… s:… r:…` timings cut.
fn normalize(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    let mut in_closing = false;
    for line in text.split_inclusive('\n') {
        if in_closing {
            if line.starts_with("For more information read the ") {
                in_closing = false;
            }
            continue;
        }
        if line.starts_with("RRDtool 1.7.2  Copyright by ") {
            out.push_str("<banner>\n");
        } else if line.starts_with("               Compiled ") {
            // rrdtool's second banner line.
        } else if line.starts_with("RRDtool is distributed") || line.starts_with("rrdscale is distributed") {
            out.push_str("<closing>\n");
            in_closing = true;
        } else if line.starts_with("OK u:") {
            out.push_str("OK\n");
        } else {
            out.push_str(line);
        }
    }
    assert!(!in_closing, "a closing paragraph without its last line:\n{text}");
    out
}

/// Every `.rrd` in `dir`, as Debian's rrdtool dumps it.
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".rrd"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let dump = run_in("/usr/bin/rrdtool", &["dump".into(), n.clone()], dir, "");
            (n, String::from_utf8_lossy(&dump.stdout).into_owned())
        })
        .collect()
}

/// Runs `program args` as Debian's and as ours, each in a fresh copy of
/// the seed directory; panics with both sides when they differ.
fn same(ours: &Path, program: &str, args: &[&str], stdin: &str) -> String {
    let t = tempfile::tempdir().unwrap();
    let (their_dir, our_dir) = (t.path().join("theirs"), t.path().join("ours"));
    // One seed, copied: rrdtool starts each archive at a random row.
    seed(&their_dir);
    std::fs::create_dir(&our_dir).unwrap();
    std::fs::copy(their_dir.join("a.rrd"), our_dir.join("a.rrd")).unwrap();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let theirs = run_found("/usr/bin", program, &args, &their_dir, stdin);
    let mine = run_found(ours.to_str().unwrap(), program, &args, &our_dir, stdin);
    let show = |o: &Output| {
        format!(
            "status {:?}\n--- stdout\n{}--- stderr\n{}",
            o.status.code(),
            normalize(&o.stdout),
            normalize(&o.stderr)
        )
    };
    let (a, b) = (show(&theirs), show(&mine));
    assert_eq!(a, b, "{program} {args:?}: Debian's (left) and ours (right) differ");
    assert_eq!(files(&their_dir), files(&our_dir), "{program} {args:?}: the files differ");
    a
}

#[test]
fn rrdtool_usage_and_help_match_debians() {
    let (_t, ours) = our_programs();
    for args in [
        &[][..],
        &["help"],
        &["--help"],
        &["-h"],
        &["help", "nosuch"],
        &["nosuch"],
        &["-v"],
        &["--version", "x"],
    ] {
        same(&ours, "rrdtool", args, "");
    }
    // Every command's help, through `help CMD` and the command alone.
    let commands = [
        "create",
        "update",
        "updatev",
        "graph",
        "graphv",
        "dump",
        "restore",
        "last",
        "lastupdate",
        "first",
        "info",
        "list",
        "fetch",
        "tune",
        "resize",
        "xport",
        "flushcached",
    ];
    for c in commands {
        let text = same(&ours, "rrdtool", &["help", c], "");
        assert!(text.contains(&format!("\trrdtool {c}")), "help {c} shows no synopsis:\n{text}");
        same(&ours, "rrdtool", &[c], "");
    }
    // Pipe mode answers help with the usage text.
    same(&ours, "rrdtool", &["-"], "help graph\ncreate\n\nlast a.rrd\n");
}

#[test]
fn rrdtool_commands_match_debians() {
    let (_t, ours) = our_programs();
    let t = |secs: i64| (T0 + secs).to_string();
    let cases: Vec<Vec<String>> = vec![
        vec!["last".into(), "a.rrd".into()],
        vec!["lastupdate".into(), "a.rrd".into()],
        vec!["info".into(), "a.rrd".into()],
        vec!["fetch".into(), "a.rrd".into(), "AVERAGE".into(), "-s".into(), t(0), "-e".into(), t(3000)],
        vec!["update".into(), "a.rrd".into(), format!("{}:1:1", t(2100)), format!("{}:2:2", t(2400))],
        vec!["update".into(), "a.rrd".into(), format!("{}:x:1", t(2100))],
        vec!["update".into(), "a.rrd".into(), format!("{}:1:1", t(300))],
        vec![
            "create".into(),
            "b.rrd".into(),
            "-b".into(),
            t(0),
            "DS:z:DERIVE:600:U:U".into(),
            "RRA:LAST:0:1:5".into(),
        ],
        vec![
            "create".into(),
            "a.rrd".into(),
            "-O".into(),
            "DS:z:GAUGE:600:U:U".into(),
            "RRA:LAST:0:1:5".into(),
        ],
        vec!["create".into(), "c.rrd".into()],
        vec!["dump".into(), "nosuch.rrd".into()],
        vec!["nosuch".into(), "x".into()],
        vec!["fetch".into(), "a.rrd".into()],
        vec!["tune".into(), "a.rrd".into(), "--heartbeat".into(), "x:900".into()],
        vec!["first".into(), "--rraindex".into(), "1".into(), "a.rrd".into()],
    ];
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        same(&ours, "rrdtool", &args, "");
    }
}

#[test]
fn rrdupdate_rrdcreate_rrdinfo_match_debians() {
    let (_t, ours) = our_programs();
    let good_create = ["b.rrd", "-b", "1000000000", "DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"];
    let cases: &[(&str, &[&str])] = &[
        ("rrdupdate", &[]),
        ("rrdupdate", &["a.rrd"]),
        ("rrdupdate", &["a.rrd", "1000002100:5:5"]),
        ("rrdupdate", &["a.rrd", "1000002100:5:5", "1000002400:6:7", "1000002700:U:8"]),
        ("rrdupdate", &["a.rrd", "-t", "y", "1000002100:9"]),
        ("rrdupdate", &["a.rrd", "-t", "nosuch", "1000002100:9"]),
        ("rrdupdate", &["a.rrd", "1000000600:x:1"]),
        ("rrdupdate", &["nosuch.rrd", "N:1"]),
        ("rrdupdate", &["a.rrd", "--bogus", "1:1"]),
        ("rrdupdate", &["-h"]),
        ("rrdupdate", &["-d", "unix:/nonexistent/sock", "a.rrd", "1000002100:5:5"]),
        ("rrdcreate", &[]),
        ("rrdcreate", &["a.rrd"]),
        ("rrdcreate", &good_create),
        ("rrdcreate", &["a.rrd", "-O", "DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"]),
        ("rrdcreate", &["b.rrd", "1000000300:5"]),
        ("rrdcreate", &["b.rrd", "--help"]),
        ("rrdcreate", &["b.rrd", "-s", "60", "DS:x:COUNTER:120:0:100", "RRA:MAX:0.1:2:3"]),
        ("rrdinfo", &[]),
        ("rrdinfo", &["a.rrd"]),
        ("rrdinfo", &["a.rrd", "b.rrd"]),
        ("rrdinfo", &["nosuch.rrd"]),
        ("rrdinfo", &["-v"]),
        ("rrdinfo", &["-d", "unix:/nonexistent/sock", "a.rrd"]),
    ];
    for (program, args) in cases {
        same(&ours, program, args, "");
    }
}

#[test]
fn rrdcached_name_runs_the_daemon() {
    let (_t, ours) = our_programs();
    // rrdcached's help: its status, its usage line. (A refused option is
    // a deliberate difference, status 1 where rrdcached's is 0: see
    // daemon_options.rs.)
    let dir = tempfile::tempdir().unwrap();
    let theirs = run_in("/usr/bin/rrdcached", &["-h".into()], dir.path(), "");
    let mine = run_in(ours.join("rrdcached").to_str().unwrap(), &["-h".into()], dir.path(), "");
    assert_eq!(mine.status.code(), theirs.status.code());
    assert!(String::from_utf8_lossy(&mine.stdout).contains("Usage: rrdcached [options]"), "{mine:?}");
    // Started as rrdcached in the foreground it serves rrdcached's protocol.
    let sock = dir.path().join("s.sock");
    let base = dir.path().join("base");
    std::fs::create_dir(&base).unwrap();
    let mut daemon = Command::new(ours.join("rrdcached"))
        .args(["-g", "-l"])
        .arg(format!("unix:{}", sock.display()))
        .arg("-b")
        .arg(&base)
        .arg("-p")
        .arg(dir.path().join("pid"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let answer = (|| {
        use std::io::{BufRead, BufReader, Write};
        for _ in 0..200 {
            if let Ok(mut s) = std::os::unix::net::UnixStream::connect(&sock) {
                s.write_all(b"PING\n").ok()?;
                let mut line = String::new();
                BufReader::new(s).read_line(&mut line).ok()?;
                return Some(line);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    })();
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert_eq!(answer.as_deref(), Some("0 PONG\n"));
}
