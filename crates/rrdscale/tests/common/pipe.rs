//! Running `PROGRAM -` (rrdtool's pipe mode or ours) on a command stream,
//! as the pipe-mode tests (`pipe_parallel`, `pipe_mapped`) compare them.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `program -` in `dir` on `input`, with the daemon address and pipe
/// mode's knobs (`RRDSCALE_ACCESS`, `RRDSCALE_PIPE_THREADS`) removed from
/// its environment and `env` (a name and value) set. Returns stdout with
/// the OK lines' times cut (they differ from run to run), and stderr.
pub fn run_pipe(program: &str, dir: &Path, env: Option<(&str, &str)>, input: &str) -> (String, String) {
    let mut c = Command::new(program);
    c.arg("-")
        .current_dir(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env_remove("RRDCACHED_ADDRESS")
        .env_remove("RRDSCALE_ACCESS")
        .env_remove("RRDSCALE_PIPE_THREADS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
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
    let stdout = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| if l.starts_with("OK u:") { "OK" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    (stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}
