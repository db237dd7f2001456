//! Pipe mode with mapped access (`RRDSCALE_ACCESS=mmap rrdscale -`): the
//! same command stream as the default (pread, locks) and as `rrdtool -`
//! must give the same answers and byte-identical files, including a file
//! replaced in the middle of the stream (the mapping must follow the path)
//! and updates that fail.
//!
//! rrdtool is required: when missing, these tests fail with a message.

use std::io::Write;
use std::process::Command;

mod common;
use common::pipe::{assert_bad_knob, pipe_command, rrdtool_create, run_pipe};

#[test]
fn mapped_pipe_mode_equals_pread_and_rrdtool() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    std::fs::create_dir(&seed).unwrap();
    rrdtool_create(&seed.join("a.rrd"), 1_000_000_000);
    rrdtool_create(&seed.join("b.rrd"), 1_000_000_000);
    // A fresh file to rename over a.rrd mid-stream (its own history).
    rrdtool_create(&seed.join("fresh.rrd"), 1_000_003_000);
    let sides = ["pread", "mmap", "rrdtool"];
    for side in sides {
        let d = tmp.path().join(side);
        std::fs::create_dir(&d).unwrap();
        for f in ["a.rrd", "b.rrd", "fresh.rrd"] {
            std::fs::copy(seed.join(f), d.join(f)).unwrap();
        }
    }
    let mut input = String::new();
    for k in 1..=12i64 {
        let t = 1_000_000_000 + 300 * k;
        input.push_str(&format!("update a.rrd {t}:{k}:{}\n", 1000 * k));
        input.push_str(&format!("update b.rrd {t}:U:{} {}:{k}:{}\n", 500 * k, t + 100, 510 * k));
    }
    // Too early: an error, the stream goes on.
    input.push_str("update a.rrd 1000000300:1:1\n");
    input.push_str("updatev b.rrd 1000004000:7:9000\n");
    input.push_str("last a.rrd\n");
    let first_half = input.clone();
    let mut second = String::new();
    for k in 11..=16i64 {
        let t = 1_000_000_000 + 300 * k;
        second.push_str(&format!("update a.rrd {t}:{k}:{}\n", 7 * k));
    }
    second.push_str("last a.rrd\n");
    let rrdscale = env!("CARGO_BIN_EXE_rrdscale");
    let mut outputs = Vec::new();
    for side in sides {
        let d = tmp.path().join(side);
        let (program, access) = match side {
            "rrdtool" => ("rrdtool", None),
            other => (rrdscale, Some(other)),
        };
        // One pipe process per half, a.rrd replaced in between (as
        // `rrdtool restore`/`create` do); the test below replaces a file
        // under one live mapped process.
        let (o1, e1) = run_pipe(program, &d, access.map(|a| ("RRDSCALE_ACCESS", a)), &first_half);
        std::fs::rename(d.join("fresh.rrd"), d.join("a.rrd")).unwrap();
        let (o2, e2) = run_pipe(program, &d, access.map(|a| ("RRDSCALE_ACCESS", a)), &second);
        outputs.push((side, format!("{o1}\n{o2}"), format!("{e1}{e2}")));
    }
    let (_, pread_out, _) = &outputs[0];
    let (_, mmap_out, mmap_err) = &outputs[1];
    assert_eq!(pread_out, mmap_out, "answers differ between pread and mmap access; stderr: {mmap_err}");
    assert!(mmap_out.contains("ERROR:"), "the too-early update is an error: {mmap_out}");
    // 24 updates, updatev and last, then 6 updates and last.
    assert_eq!(mmap_out.lines().filter(|l| *l == "OK").count(), 33, "{mmap_out}");
    for f in ["a.rrd", "b.rrd"] {
        let want = std::fs::read(tmp.path().join("rrdtool").join(f)).unwrap();
        for side in ["pread", "mmap"] {
            let got = std::fs::read(tmp.path().join(side).join(f)).unwrap();
            assert!(got == want, "{side}: {f} differs from rrdtool's");
        }
    }
}

/// Within one mapped pipe process, a file renamed over the path between
/// two commands is followed: the later updates land in the new file.
#[test]
fn mapped_pipe_mode_follows_a_replaced_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    rrdtool_create(&d.join("a.rrd"), 1_000_000_000);
    rrdtool_create(&d.join("fresh.rrd"), 1_000_000_000);
    std::fs::copy(d.join("fresh.rrd"), d.join("expected.rrd")).unwrap();
    let mut child =
        pipe_command(env!("CARGO_BIN_EXE_rrdscale"), d).env("RRDSCALE_ACCESS", "mmap").spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut answer = || {
        let mut l = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut l).unwrap();
        l
    };
    writeln!(stdin, "update a.rrd 1000000300:1:1").unwrap();
    stdin.flush().unwrap();
    assert!(answer().starts_with("OK"));
    // The update is in the old file; now replace it.
    std::fs::rename(d.join("fresh.rrd"), d.join("a.rrd")).unwrap();
    writeln!(stdin, "update a.rrd 1000000600:2:2").unwrap();
    stdin.flush().unwrap();
    assert!(answer().starts_with("OK"));
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let out = Command::new("rrdtool")
        .args(["update", "expected.rrd", "1000000600:2:2"])
        .current_dir(d)
        .env("TZ", "UTC")
        .output()
        .expect("rrdtool 1.7.2 must be installed");
    assert!(out.status.success());
    assert!(
        std::fs::read(d.join("a.rrd")).unwrap() == std::fs::read(d.join("expected.rrd")).unwrap(),
        "the update after the rename did not land in the new file"
    );
}

#[test]
fn a_bad_access_method_is_an_error() {
    assert_bad_knob("RRDSCALE_ACCESS", "carrier-pigeon", "RRDSCALE_ACCESS must be 'pread' or 'mmap'");
}
