//! Running `PROGRAM -` (rrdtool's pipe mode or ours) on a command stream,
//! as the pipe-mode tests (`pipe_parallel`, `pipe_mapped`, `cli_verbs`)
//! compare them, and the files they start from.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// `program` in `dir` with `TZ=UTC`, `LC_ALL=C`, and without the daemon
/// address or pipe mode's knobs (`RRDSCALE_ACCESS`,
/// `RRDSCALE_PIPE_THREADS`) the test itself may have been given; stdin
/// and stdout piped. The caller adds the arguments.
pub fn tool_command(program: &str, dir: &Path) -> Command {
    let mut c = Command::new(program);
    c.current_dir(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env_remove("RRDCACHED_ADDRESS")
        .env_remove("RRDSCALE_ACCESS")
        .env_remove("RRDSCALE_PIPE_THREADS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    c
}

/// `program -` in `dir`, as [`tool_command`] sets it up.
pub fn pipe_command(program: &str, dir: &Path) -> Command {
    let mut c = tool_command(program, dir);
    c.arg("-");
    c
}

/// Pipe mode's answers with the OK lines' times cut (they differ from run
/// to run).
pub fn cut_ok_times(stdout: &[u8]) -> String {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| if l.starts_with("OK u:") { "OK" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `program -` in `dir` on `input`, with the daemon address and pipe
/// mode's knobs (`RRDSCALE_ACCESS`, `RRDSCALE_PIPE_THREADS`) removed from
/// its environment and `env` (a name and value) set. Returns stdout with
/// the OK lines' times cut (they differ from run to run), and stderr.
pub fn run_pipe(program: &str, dir: &Path, env: Option<(&str, &str)>, input: &str) -> (String, String) {
    let mut c = pipe_command(program, dir);
    c.stderr(Stdio::piped());
    if let Some((name, value)) = env {
        c.env(name, value);
    }
    let mut child =
        c.spawn().unwrap_or_else(|e| panic!("starting {program} - ({e}); rrdtool 1.7.2 must be installed"));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    let name = program.to_string();
    // Written from a thread while the answers are read: a long input would
    // otherwise fill both pipes. A process that refuses to start (a bad
    // knob) may exit before reading: a broken pipe is its answer then.
    let writer = std::thread::spawn(move || {
        if let Err(e) = stdin.write_all(input.as_bytes()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "writing to {name} -: {e}");
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (cut_ok_times(&out.stdout), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Runs `rrdscale -` in a fresh directory with the knob `name=value` set
/// and asserts that it refuses to start, printing nothing on stdout and
/// `message` on stderr.
pub fn assert_bad_knob(name: &str, value: &str, message: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (out, err) = run_pipe(env!("CARGO_BIN_EXE_rrdscale"), tmp.path(), Some((name, value)), "quit\n");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains(message), "{err}");
}

/// Creates `path` with rrdtool: two data sources (a gauge and a counter),
/// step 300 s, starting at `start`.
pub fn rrdtool_create(path: &Path, start: i64) {
    let out = Command::new("rrdtool")
        .arg("create")
        .arg(path)
        .args(["--start", &start.to_string(), "--step", "300"])
        .args(["DS:a:GAUGE:600:U:U", "DS:b:COUNTER:600:U:U", "RRA:AVERAGE:0.5:1:20", "RRA:MAX:0.5:4:10"])
        .env("TZ", "UTC")
        .output()
        .expect("rrdtool 1.7.2 must be installed (/usr/bin/rrdtool) for these tests");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
