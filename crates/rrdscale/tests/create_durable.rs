//! Creates (issue 13, item 1): a created file is under its name, complete
//! and written back, when its command (or its pipe-mode OK line) reports
//! success; pipe mode answers a lone create at once and groups buffered
//! ones; sizes beyond the limit or the free space are refused before
//! anything is written; SIGINT/SIGTERM during a create leave no temporary
//! file. Runs on the real disk (DONTNEED does nothing on tmpfs).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rrd_engine::pagecache;

const SCHEMA: &[&str] = &["-b", "1000000000", "DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:4000"];

fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir under the target dir")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn resident(path: &Path) -> u64 {
    pagecache::resident_count(&File::open(path).unwrap()).unwrap().0
}

fn rrdscale(dir: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(env!("CARGO_BIN_EXE_rrdscale"));
    c.current_dir(dir)
        .env("TZ", "UTC")
        .env_remove("RRDCACHED_ADDRESS")
        .env_remove("RRDSCALE_CREATE_MAX_BYTES");
    // A test run started in the background by a shell without job control
    // inherits SIGINT ignored, and so would the child (rrdscale, like any
    // tool, keeps an ignored signal ignored): give it the default actions
    // a user's terminal gives.
    // SAFETY: only async-signal-safe calls (signal) between fork and exec.
    unsafe {
        c.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    c
}

fn create_line(name: &str) -> String {
    format!("create {name} {}\n", SCHEMA.join(" "))
}

#[test]
fn pipe_answers_a_lone_create_at_once_with_the_file_durable() {
    let dir = disk_dir();
    let mut child =
        rrdscale(dir.path()).arg("-").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // Like a person typing: one line, then wait for its answer with the
    // input still open.
    for name in ["a.rrd", "b.rrd"] {
        stdin.write_all(create_line(name).as_bytes()).unwrap();
        stdin.flush().unwrap();
        let answer = rx.recv_timeout(Duration::from_secs(20)).expect("an answer without more input");
        assert!(answer.starts_with("OK "), "{answer}");
        // At the OK: under its name, complete, and written back (DONTNEED
        // drops only clean pages, so no resident page means all were
        // written before the answer).
        let path = dir.path().join(name);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 32_584);
        assert_eq!(resident(&path), 0, "{name}: pages still cached at its OK line");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(names(dir.path()), ["a.rrd", "b.rrd"]);
}

#[test]
fn pipe_groups_buffered_creates_and_keeps_answers_in_order() {
    let dir = disk_dir();
    std::fs::write(dir.path().join("f3.rrd"), b"exists").unwrap();
    let mut input = String::new();
    for i in 0..40 {
        if i == 3 {
            // Refused (no-overwrite) in the middle of a group.
            input.push_str(&format!("create f3.rrd -O {}\n", SCHEMA.join(" ")));
        } else if i == 7 {
            input.push_str("create bad.rrd DS:x:BAD\n");
        } else {
            input.push_str(&create_line(&format!("f{i}.rrd")));
        }
    }
    // A read of a file created just before, in the same group.
    input.push_str("last f0.rrd\n");
    // The same name twice: the second replaces the first, in order.
    input.push_str(&create_line("f1.rrd"));
    input.push_str("info f1.rrd\n");
    let out = rrdscale(dir.path())
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(input.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let answers: Vec<&str> = text.lines().filter(|l| l.starts_with("OK") || l.starts_with("ERROR")).collect();
    assert_eq!(answers.len(), 43, "{text}");
    for (i, a) in answers.iter().enumerate() {
        match i {
            3 => assert_eq!(*a, "ERROR: creating 'f3.rrd': File exists"),
            7 => assert_eq!(*a, "ERROR: invalid DS format"),
            _ => assert!(a.starts_with("OK "), "answer {i}: {a}\n{text}"),
        }
    }
    assert!(text.contains("\n1000000000\nOK"), "last of f0.rrd: {text}");
    assert!(text.contains("filename = \"f1.rrd\""), "{text}");
    let files = names(dir.path());
    assert_eq!(files.len(), 39, "{files:?}");
    assert!(files.iter().all(|f| f.ends_with(".rrd")), "temporary files left: {files:?}");
    assert_eq!(std::fs::read(dir.path().join("f3.rrd")).unwrap(), b"exists");
    // (f0 and f1 were read since; f3 was never replaced.)
    for f in files.iter().filter(|f| !["f0.rrd", "f1.rrd", "f3.rrd"].contains(&f.as_str())) {
        assert_eq!(resident(&dir.path().join(f)), 0, "{f}: pages left in the cache");
    }
}

#[test]
fn sizes_beyond_the_limit_or_the_free_space_are_refused_before_writing() {
    let dir = disk_dir();
    let run = |rows: &str, limit: Option<&str>| {
        let mut c = rrdscale(dir.path());
        c.args(["create", "big.rrd", "DS:x:GAUGE:600:U:U", &format!("RRA:AVERAGE:0.5:1:{rows}")]);
        if let Some(l) = limit {
            c.env("RRDSCALE_CREATE_MAX_BYTES", l);
        }
        let out = c.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap()
    };
    // 10^9 rows: 8 GB, over the default 4 GiB limit.
    let e = run("1000000000", None);
    assert!(
        e.contains("creating 'big.rrd': the file would be 8000000584 bytes (7.5 GiB), more than the limit of 4294967296 bytes (4.0 GiB); set RRDSCALE_CREATE_MAX_BYTES to allow it"),
        "{e}"
    );
    // 10^14 rows with no limit: more than any disk here has free.
    let e = run("100000000000000", Some("0"));
    assert!(
        e.contains("creating 'big.rrd': the file would be 800000000000584 bytes (727.6 TiB), but only "),
        "{e}"
    );
    assert!(e.contains(" are free on the filesystem of ."), "{e}");
    // A limit in the environment, with a suffix.
    let e = run("1000000", Some("1M"));
    assert!(e.contains("more than the limit of 1048576 bytes (1.0 MiB)"), "{e}");
    let e = run("10", Some("lots"));
    assert!(
        e.contains("RRDSCALE_CREATE_MAX_BYTES must be a number of bytes (like 4G or 0), not 'lots'"),
        "{e}"
    );
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

/// Starts a create of a 2.4 GB file, waits until its temporary file has
/// grown past 32 MiB, sends `signal`, and checks that the process died of
/// it and left nothing behind.
fn interrupted_create_leaves_nothing(signal: i32, pipe: bool) {
    let dir = disk_dir();
    let args = ["big.rrd", "DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:300000000"];
    let mut cmd = rrdscale(dir.path());
    let mut child = if pipe {
        let mut c = cmd.arg("-").stdin(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap();
        let line = format!("create {}\n", args.join(" "));
        c.stdin.as_mut().unwrap().write_all(line.as_bytes()).unwrap();
        c
    } else {
        cmd.arg("create").args(args).spawn().unwrap()
    };
    let tmp: PathBuf = dir.path().join(format!("big.rrd.tmp{}", child.id()));
    let t0 = Instant::now();
    while std::fs::metadata(&tmp).map_or(0, |m| m.len()) < 32 << 20 {
        assert!(t0.elapsed() < Duration::from_secs(60), "the create did not get going");
        assert!(child.try_wait().unwrap().is_none(), "the create ended before it was interrupted");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(signal), "ended by the signal, as before: {status:?}");
    assert!(names(dir.path()).is_empty(), "left behind: {:?}", names(dir.path()));
}

#[test]
fn sigterm_during_a_create_removes_its_temporary_file() {
    interrupted_create_leaves_nothing(libc::SIGTERM, false);
}

#[test]
fn sigint_during_a_pipe_mode_create_removes_its_temporary_file() {
    interrupted_create_leaves_nothing(libc::SIGINT, true);
}

#[test]
fn sigint_while_a_pipe_session_waits_for_input_still_ends_it() {
    let dir = disk_dir();
    let mut child =
        rrdscale(dir.path()).arg("-").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(create_line("a.rrd").as_bytes()).unwrap();
    let mut answer = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut answer).unwrap();
    assert!(answer.starts_with("OK "), "{answer}");
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGINT));
    assert_eq!(names(dir.path()), ["a.rrd"]);
}
