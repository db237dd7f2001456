//! Pipe mode on several threads (`rrdscale -`: a reader, update workers
//! sharded by file, answers written in input order) must be
//! indistinguishable from `rrdtool -`: the same answers in the same order
//! and byte-identical files, with many files, interleaved lines for one
//! file, failing lines mid-stream, commands between updates that read or
//! replace the files (barriers), one file under several names, and a
//! client that waits for each answer before sending the next line.
//!
//! rrdtool is required: when missing, these tests fail with a message.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

mod common;
use common::pipe::{assert_bad_knob, cut_ok_times, pipe_command, run_pipe, tool_command};

const START: i64 = 1_000_000_000;

/// A file of the tests, made by rrdtool, starting at `START`.
fn rrdtool_create(path: &Path) {
    common::pipe::rrdtool_create(path, START);
}

/// Copies every file of `from` into a new directory `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Files and a stream for them, with rrdtool's answers.
struct Seeded {
    /// The files as made: `f0.rrd` and on.
    seed: PathBuf,
    /// Two rounds of one update to each file.
    input: String,
    /// A copy of the files `rrdtool -` ran `input` on.
    want: PathBuf,
    /// Its answers (OK lines' times cut).
    want_out: String,
}

/// `files` files made by rrdtool in a fresh directory's `seed`, a stream
/// of two updates to each, and what `rrdtool -` makes of it in a copy.
fn seeded(files: i64) -> (tempfile::TempDir, Seeded) {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    std::fs::create_dir(&seed).unwrap();
    for i in 0..files {
        rrdtool_create(&seed.join(format!("f{i}.rrd")));
    }
    let mut input = String::new();
    for round in 1..=2 {
        for i in 0..files {
            input.push_str(&format!("update f{i}.rrd {}:{i}:{}\n", START + 300 * round, i * round));
        }
    }
    let want = tmp.path().join("rrdtool");
    copy_dir(&seed, &want);
    let (want_out, _) = run_pipe("rrdtool", &want, None, &input);
    (tmp, Seeded { seed, input, want, want_out })
}

/// Asserts that every regular file under `want` (recursively) exists with
/// the same bytes under `got`.
fn assert_same_files(want: &Path, got: &Path, side: &str) {
    let mut compared = 0;
    let mut stack = vec![std::path::PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(want.join(&rel)).unwrap() {
            let e = e.unwrap();
            let r = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                stack.push(r);
                continue;
            }
            let w = std::fs::read(want.join(&r)).unwrap();
            let g = std::fs::read(got.join(&r))
                .unwrap_or_else(|e| panic!("{side}: {} missing: {e}", r.display()));
            assert!(w == g, "{side}: {} differs from rrdtool's", r.display());
            compared += 1;
        }
    }
    assert!(compared > 0, "no files compared");
}

/// Sides: rrdtool, rrdscale on one thread, rrdscale on four workers (more
/// than this machine's cores, so that workers really interleave).
const SIDES: [(&str, Option<&str>); 3] = [("rrdtool", None), ("one", Some("1")), ("four", Some("4"))];

/// Runs `input` on a copy of `seed` per side; returns (side, stdout).
fn run_sides(seed: &Path, input: &str) -> Vec<(&'static str, String, std::path::PathBuf)> {
    let rrdscale = env!("CARGO_BIN_EXE_rrdscale");
    let mut outputs = Vec::new();
    for (side, threads) in SIDES {
        let d = seed.parent().unwrap().join(side);
        copy_dir(seed, &d);
        let program = if side == "rrdtool" { "rrdtool" } else { rrdscale };
        let (out, err) = run_pipe(program, &d, threads.map(|n| ("RRDSCALE_PIPE_THREADS", n)), input);
        assert!(side == "rrdtool" || err.is_empty(), "{side}: stderr: {err}");
        outputs.push((side, out, d));
    }
    outputs
}

/// Many files, several lines per file interleaved with other files'
/// lines, failures mid-stream (too early, unknown file, bad value,
/// missing arguments), `updatev` (whose output is part of the answer), and
/// reads between updates: answers in input order, files as rrdtool's.
#[test]
fn many_files_interleaved_with_errors_answer_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    std::fs::create_dir(&seed).unwrap();
    const FILES: usize = 60;
    for f in 0..FILES {
        rrdtool_create(&seed.join(format!("f{f}.rrd")));
    }
    let mut input = String::new();
    for k in 1..=8i64 {
        let t = START + 300 * k;
        for f in 0..FILES {
            // Each file's lines stay in order; files interleave.
            input.push_str(&format!(
                "update f{f}.rrd {t}:{}:{}\n",
                (f as i64 * 7 + k) % 100,
                1000 * k + f as i64
            ));
            match (f + k as usize) % 23 {
                // The same file again at once: too early (same time).
                0 => input.push_str(&format!("update f{f}.rrd {t}:1:1\n")),
                5 => input.push_str("update missing.rrd N:1:1\n"),
                9 => input.push_str(&format!("update f{f}.rrd {}:x:1\n", t + 1)),
                13 => {
                    input.push_str(&format!("updatev f{f}.rrd {}:5:{}\n", t + 100, 1000 * k + f as i64 + 3))
                }
                17 => input.push_str("update f1.rrd\n"),
                _ => {}
            }
        }
        // A barrier reading what the updates before it wrote.
        input.push_str(&format!("lastupdate f{}.rrd\n", k as usize % FILES));
        input.push_str(&format!("last f{}.rrd\n", (3 * k) as usize % FILES));
    }
    input.push_str("fetch f7.rrd AVERAGE --start 1000000000 --end 1000002400\n");
    let outputs = run_sides(&seed, &input);
    let (_, want, want_dir) = &outputs[0];
    let lines = input.lines().count();
    let answers = want.lines().filter(|l| *l == "OK" || l.starts_with("ERROR")).count();
    assert_eq!(answers, lines, "rrdtool answers every line");
    assert!(want.contains("ERROR: "), "some lines fail");
    assert!(want.contains("return_value = 0"), "updatev printed its result");
    for (side, got, dir) in &outputs[1..] {
        assert_eq!(got, want, "{side}: answers differ from rrdtool's");
        assert_same_files(want_dir, dir, side);
    }
}

/// Commands that replace, create or move between files are barriers: the
/// updates before them are applied first, the ones after see their
/// effect; `cd` makes relative names mean other files.
#[test]
fn barriers_order_updates_around_other_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    std::fs::create_dir(&seed).unwrap();
    for f in ["a.rrd", "b.rrd", "c.rrd"] {
        rrdtool_create(&seed.join(f));
    }
    let mut input = String::new();
    let t = |k: i64| START + 300 * k;
    for k in 1..=4 {
        input.push_str(&format!("update a.rrd {}:{k}:{}\n", t(k), 100 * k));
        input.push_str(&format!("update b.rrd {}:{k}:{}\n", t(k), 200 * k));
    }
    // tune changes a.rrd's heartbeat: later updates use it.
    input.push_str("tune a.rrd --heartbeat a:300\n");
    input.push_str(&format!("update a.rrd {}:9:900\n", t(6)));
    // create replaces c.rrd (a new start): the updates after it go to the new file.
    input.push_str(&format!("update c.rrd {}:1:1\n", t(1)));
    input.push_str(&format!(
        "create c.rrd --start {} --step 300 DS:a:GAUGE:600:U:U DS:b:COUNTER:600:U:U RRA:AVERAGE:0.5:1:20\n",
        t(3)
    ));
    input.push_str(&format!("update c.rrd {}:2:2\n", t(2)));
    input.push_str(&format!("update c.rrd {}:4:4\n", t(4)));
    // Into a directory: the same names are other files there.
    input.push_str("mkdir sub\n");
    input.push_str("cd sub\n");
    input.push_str(&format!(
        "create a.rrd --start {} --step 300 DS:a:GAUGE:600:U:U DS:b:COUNTER:600:U:U RRA:AVERAGE:0.5:1:20\n",
        t(0)
    ));
    input.push_str(&format!("update a.rrd {}:5:5\n", t(1)));
    input.push_str(&format!("update b.rrd {}:5:5\n", t(5)));
    input.push_str("cd ..\n");
    input.push_str(&format!("update b.rrd {}:5:1000\n", t(5)));
    input.push_str("lastupdate b.rrd\n");
    input.push_str("info a.rrd\n");
    // Files created in the stream start at a random row (rrdtool's
    // create), so they are compared through what they hold.
    for f in ["c.rrd", "sub/a.rrd"] {
        input.push_str(&format!("lastupdate {f}\n"));
        input.push_str(&format!("fetch {f} AVERAGE --start {} --end {}\n", t(0), t(6)));
    }
    let outputs = run_sides(&seed, &input);
    let (_, want, want_dir) = &outputs[0];
    assert!(
        want.contains("ERROR: "),
        "update c.rrd at t(2) precedes the new file's start, b.rrd is not in sub"
    );
    for (side, got, dir) in &outputs[1..] {
        assert_eq!(got, want, "{side}: answers differ from rrdtool's");
        for f in ["a.rrd", "b.rrd"] {
            let w = std::fs::read(want_dir.join(f)).unwrap();
            assert!(w == std::fs::read(dir.join(f)).unwrap(), "{side}: {f} differs from rrdtool's");
        }
    }
}

/// One file under several names in one stream (`a.rrd`, `./a.rrd`,
/// `sub/../a.rrd`, a symbolic link, an absolute path): all its updates are
/// applied in order by one worker, none refused for a lock held by
/// another worker of the same process.
#[test]
fn one_file_under_several_names_stays_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    std::fs::create_dir(&seed).unwrap();
    rrdtool_create(&seed.join("a.rrd"));
    rrdtool_create(&seed.join("b.rrd"));
    let rrdscale = env!("CARGO_BIN_EXE_rrdscale");
    let mut results = Vec::new();
    for (side, threads) in SIDES {
        let d = tmp.path().join(side);
        copy_dir(&seed, &d);
        std::fs::create_dir(d.join("sub")).unwrap();
        std::os::unix::fs::symlink("a.rrd", d.join("link.rrd")).unwrap();
        let abs = d.join("a.rrd");
        let names = ["a.rrd", "./a.rrd", "sub/../a.rrd", "link.rrd", abs.to_str().unwrap()];
        let mut input = String::new();
        for k in 1..=40i64 {
            let name = names[k as usize % names.len()];
            input.push_str(&format!("update {name} {}:{k}:{}\n", START + 300 * k, 10 * k));
            input.push_str(&format!("update b.rrd {}:{k}:{}\n", START + 300 * k, 20 * k));
        }
        let program = if side == "rrdtool" { "rrdtool" } else { rrdscale };
        let (out, _) = run_pipe(program, &d, threads.map(|n| ("RRDSCALE_PIPE_THREADS", n)), &input);
        assert!(!out.contains("ERROR"), "{side}: {out}");
        assert_eq!(out.lines().count(), 80, "{side}: {out}");
        results.push((
            side,
            std::fs::read(d.join("a.rrd")).unwrap(),
            std::fs::read(d.join("b.rrd")).unwrap(),
        ));
    }
    for (side, a, b) in &results[1..] {
        assert!(*a == results[0].1, "{side}: a.rrd differs from rrdtool's");
        assert!(*b == results[0].2, "{side}: b.rrd differs from rrdtool's");
    }
}

/// A client that sends one line and waits for its answer before the next
/// (an interactive user, or a poller in lockstep) gets every answer at
/// once: nothing is held back waiting for more input.
#[test]
fn a_client_waiting_for_each_answer_gets_it() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for f in 0..4 {
        rrdtool_create(&d.join(format!("f{f}.rrd")));
    }
    let mut child =
        pipe_command(env!("CARGO_BIN_EXE_rrdscale"), d).env("RRDSCALE_PIPE_THREADS", "3").spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    let mut ask = |line: String| -> String {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("no answer to '{line}'"))
    };
    for k in 1..=10i64 {
        for f in 0..4 {
            let a = ask(format!("update f{f}.rrd {}:{k}:{k}", START + 300 * k));
            assert!(a.starts_with("OK u:"), "{a}");
        }
        let a = ask(format!("update f0.rrd {}:1:1", START + 300 * k));
        assert!(a.starts_with("ERROR: "), "{a}");
    }
    let last = ask("last f3.rrd".to_string());
    assert_eq!(last, (START + 3000).to_string());
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_bad_thread_count_is_an_error() {
    assert_bad_knob("RRDSCALE_PIPE_THREADS", "zero", "RRDSCALE_PIPE_THREADS must be a number from 1 to 64");
}

/// A client that stops reading answers (closes its end of the output)
/// makes the session end: no thread waits forever for a worker that can
/// no longer answer.
#[test]
fn a_closed_output_ends_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for f in 0..8 {
        rrdtool_create(&d.join(format!("f{f}.rrd")));
    }
    let mut child = pipe_command(env!("CARGO_BIN_EXE_rrdscale"), d)
        .env("RRDSCALE_PIPE_THREADS", "2")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for k in 1..=3000i64 {
            let line = format!("update f{}.rrd {}:{k}:{k}\ninfo f0.rrd\n", k % 8, START + 300 * (1 + k / 8));
            if stdin.write_all(line.as_bytes()).is_err() {
                return;
            }
        }
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status =
        rx.recv_timeout(Duration::from_secs(60)).expect("rrdscale - hangs after its output was closed");
    assert!(!status.unwrap().success(), "writing answers to a closed pipe is an error");
    writer.join().unwrap();
}

/// Pipe mode reads headers with `O_NOATIME` (its owner may): a file's
/// access time is left where it was, where rrdtool's update would have
/// refreshed it (relatime: it is older than the last write). What it
/// writes is unchanged.
#[test]
fn updates_leave_the_access_time_alone() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    rrdtool_create(&d.join("a.rrd"));
    let old = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000);
    std::fs::File::options()
        .write(true)
        .open(d.join("a.rrd"))
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_accessed(old))
        .unwrap();
    let (out, _) =
        run_pipe(env!("CARGO_BIN_EXE_rrdscale"), d, None, &format!("update a.rrd {}:1:1\n", START + 300));
    assert_eq!(out, "OK");
    let m = std::fs::metadata(d.join("a.rrd")).unwrap();
    assert_eq!(m.atime(), 1_000_000, "the access time moved");
    assert!(m.mtime() > 1_000_000, "the file was written");
}

/// A descriptor limit below what pipe mode would keep open (48 here, where
/// the usual bound is at least 512 kept files) is not an error: rrdtool,
/// which keeps none, gets every update through, and so must we. The files
/// the workers keep and the reader hands over are cut from the limit;
/// before they were, two workers took each other's given-back descriptors
/// and one in about fifteen runs failed an update.
#[test]
fn a_low_descriptor_limit_costs_kept_files_not_updates() {
    let files: i64 = 150;
    let (tmp, Seeded { seed, input, want, want_out }) = seeded(files);
    let got = tmp.path().join("rrdscale");
    copy_dir(&seed, &got);
    let mut child = tool_command("sh", &got)
        .args(["-c", "ulimit -n 48 && exec \"$0\" -", env!("CARGO_BIN_EXE_rrdscale")])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let got_out = cut_ok_times(&out.stdout);
    assert_eq!(want_out.lines().filter(|l| *l == "OK").count() as i64, 2 * files, "rrdtool: {want_out}");
    assert_eq!(got_out, want_out, "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_same_files(&want, &got, "rrdscale under ulimit -n 48");
}

/// Files whose pages are not cached (dropped before the run): the workers
/// find their updates reading from the disk and prefetch the next ones,
/// taking over the descriptors the reader opened for them; every path
/// twice in the stream (its second line through the kept descriptor).
/// Answers and files as rrdtool's, on one worker and on four.
#[test]
fn cold_files_prefetched_through_the_readers_descriptors() {
    let files: i64 = 400;
    let (tmp, Seeded { seed, input, want, want_out }) = seeded(files);
    let rrdscale = env!("CARGO_BIN_EXE_rrdscale");
    for threads in ["1", "4"] {
        let got = tmp.path().join(format!("rrdscale-{threads}"));
        copy_dir(&seed, &got);
        let evict =
            std::process::Command::new(rrdscale).arg("fadvise").arg("--dontneed").arg(&got).output().unwrap();
        assert!(evict.status.success(), "{}", String::from_utf8_lossy(&evict.stderr));
        let (out, err) = run_pipe(rrdscale, &got, Some(("RRDSCALE_PIPE_THREADS", threads)), &input);
        assert!(err.is_empty(), "{threads} workers: stderr: {err}");
        assert_eq!(out, want_out, "{threads} workers");
        assert_same_files(&want, &got, &format!("{threads} workers"));
    }
}
