//! The differential runner: runs one generated case through the oracle
//! (rrdtool) and the candidate (rrdscale), each in its own directory, and
//! records every comparison.
//!
//! Owns: spawning the tools (with `TZ=UTC`, `LC_ALL=C`, a timeout), what is
//! compared and how it is normalised, the per-check tallies, failure reports,
//! reproducer scripts and shrinking.
//!
//! What is compared, per case:
//! - `create`, then each `update`/`updatev` call: exit status, stdout, and
//!   that a failing command's stderr starts with `ERROR:`;
//! - the raw file bytes of the two files after create and after each update
//!   call (normalised for the random initial `cur_row`, see [`normalize_file`]);
//! - read commands (`dump`, `info`, `fetch`, `last`, `first`, `lastupdate`):
//!   rrdtool on its own file is the reference; the candidate on rrdtool's file,
//!   the candidate on its own file, and rrdtool on the candidate's file must
//!   all print the same;
//! - that the candidate's read commands leave rrdtool's file untouched.
//!
//! Invariants: a check is recorded as passed or failed exactly once per
//! comparison; a case never touches a file outside its temporary directory.
//! Deliberately not here: generating cases (see `gen`) or deciding how many
//! to run (see the test functions).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::gen::{Case, Rng};

/// The file name both tools work on, each in its own directory.
pub const FILE: &str = "t.rrd";

/// What one command did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Exit code; `None` when killed by a signal or the timeout.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
}

impl Outcome {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    fn status_text(&self) -> String {
        match (self.code, self.timed_out) {
            (_, true) => "timed out".to_string(),
            (Some(c), _) => format!("exit {c}"),
            (None, _) => "killed by a signal".to_string(),
        }
    }
}

/// Runs `program args` in `dir` with the environment both tools get.
pub fn run(
    program: &Path,
    args: &[String],
    dir: &Path,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
) -> Outcome {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Outcome {
                code: Some(127),
                stderr: format!("ERROR: cannot run {}: {e}", program.display()).into_bytes(),
                ..Outcome::default()
            }
        }
    };
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let mut err_pipe = child.stderr.take().expect("stderr is piped");
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err_pipe.read_to_end(&mut buf);
        buf
    });
    let mut out_pipe = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out_pipe.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    // stdout reaches EOF when the process exits (or closes it), so waiting on
    // the reader is waiting on the process, with a deadline.
    let (stdout, timed_out) = match rx.recv_timeout(timeout) {
        Ok(buf) => (buf, false),
        Err(_) => {
            let _ = child.kill();
            (rx.recv().unwrap_or_default(), true)
        }
    };
    let status = child.wait();
    let stderr = err_reader.join().unwrap_or_default();
    let code = if timed_out { None } else { status.ok().and_then(|s| s.code()) };
    Outcome { code, stdout, stderr, timed_out }
}

/// One program under test: its path and the name used in reports.
#[derive(Clone, Debug)]
pub struct Tool {
    pub name: String,
    pub path: PathBuf,
}

#[derive(Clone, Debug)]
pub struct Harness {
    pub oracle: Tool,
    pub candidate: Tool,
    /// Where reproducer scripts go.
    pub out_dir: PathBuf,
    /// Compare whole stderr of failing commands, not just the `ERROR:` prefix.
    pub strict_errors: bool,
    pub timeout: Duration,
    /// Run read commands with rrdtool on the candidate's file too.
    pub oracle_reads_candidate: bool,
}

/// One command of a case, as the reproducer replays it.
#[derive(Clone, Debug)]
pub enum Step {
    /// A command that changes the file: each tool runs it on its own file.
    Write(Vec<String>),
    /// A read-only command: run by both tools on both files.
    Read(Vec<String>),
    /// Setup the harness did itself, as a shell line for the reproducer.
    Shell(String),
}

#[derive(Clone, Debug)]
pub struct Mismatch {
    pub check: String,
    /// Index into [`CaseReport::steps`] of the command that differed.
    pub step: usize,
    pub detail: String,
}

#[derive(Clone, Debug)]
pub struct CaseReport {
    pub index: u64,
    pub case: Case,
    pub steps: Vec<Step>,
    /// Every comparison made, by check name.
    pub checks: Vec<(String, bool)>,
    pub mismatches: Vec<Mismatch>,
    /// Calls where rrdtool's exit status contradicted the generator's
    /// intent: a generator bug, not an engine bug.
    pub surprises: Vec<String>,
}

impl CaseReport {
    fn check(&mut self, name: &str, step: usize, result: Result<(), String>) {
        self.checks.push((name.to_string(), result.is_ok()));
        if let Err(detail) = result {
            self.mismatches.push(Mismatch { check: name.to_string(), step, detail });
        }
    }

    pub fn failed(&self) -> bool {
        !self.mismatches.is_empty()
    }
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.:/=@%+,-".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

pub fn command_line(program: &str, args: &[String]) -> String {
    let mut s = program.to_string();
    for a in args {
        s.push(' ');
        s.push_str(&sh_quote(a));
    }
    s
}

/// At most `max` characters of `s`, marked when cut.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// A unified-style excerpt around the first differing line: three lines of
/// context, the differing run (up to six lines a side), and how many lines
/// differ in all when both outputs have the same number of lines.
pub fn first_diff(a_name: &str, a: &[u8], b_name: &str, b: &[u8]) -> String {
    let a = String::from_utf8_lossy(a);
    let b = String::from_utf8_lossy(b);
    let al: Vec<&str> = a.split_inclusive('\n').collect();
    let bl: Vec<&str> = b.split_inclusive('\n').collect();
    let common = al.len().min(bl.len());
    let first = (0..common).find(|&i| al[i] != bl[i]).unwrap_or(common);
    let from = first.saturating_sub(3);
    let mut s = format!("--- {a_name}\n+++ {b_name}\n@@ first difference at line {} @@\n", first + 1);
    for l in &al[from..first] {
        let _ = write!(s, " {}", with_newline(l));
    }
    // The run of differing lines, when both sides go on in step; else the
    // rest of each side.
    let run_end = if al.len() == bl.len() {
        (first..common).take_while(|&i| al[i] != bl[i]).take(6).last().map_or(first, |i| i + 1)
    } else {
        usize::MAX
    };
    let show = |lines: &[&str], sign: char, s: &mut String| {
        let end = run_end.min(lines.len()).min(first + 6);
        for l in lines.iter().take(end).skip(first) {
            let _ = write!(s, "{sign}{}", with_newline(l));
        }
        if run_end == usize::MAX && lines.len() > end {
            let _ = writeln!(s, "{sign}... ({} more lines)", lines.len() - end);
        }
    };
    show(&al, '-', &mut s);
    show(&bl, '+', &mut s);
    if run_end != usize::MAX {
        for l in al.iter().take(run_end + 2).skip(run_end) {
            let _ = write!(s, " {}", with_newline(l));
        }
        let differing = (0..common).filter(|&i| al[i] != bl[i]).count();
        let _ = writeln!(s, "({differing} of {} lines differ)", al.len());
    } else {
        let _ = writeln!(s, "(line counts: {} vs {})", al.len(), bl.len());
    }
    s
}

fn with_newline(l: &str) -> String {
    if l.ends_with('\n') {
        l.to_string()
    } else {
        format!("{l}\\ (no newline at end)\n")
    }
}

fn stderr_line(o: &Outcome) -> String {
    let s = String::from_utf8_lossy(&o.stderr);
    clip(s.trim_end(), 300)
}

/// Compares a candidate's outcome with the reference one. `normalize` is
/// applied to both stdouts first.
fn compare(
    ref_name: &str,
    reference: &Outcome,
    got_name: &str,
    got: &Outcome,
    normalize: fn(&[u8]) -> Vec<u8>,
    strict_errors: bool,
) -> Result<(), String> {
    let mut problems = String::new();
    if reference.code != got.code || got.timed_out {
        let _ = writeln!(
            problems,
            "status: {ref_name} {}, {got_name} {}",
            reference.status_text(),
            got.status_text()
        );
    }
    if !got.ok() && !got.stderr.starts_with(b"ERROR:") {
        let _ = writeln!(problems, "{got_name}'s stderr does not start with \"ERROR:\"");
    }
    if strict_errors && !reference.ok() && reference.stderr != got.stderr {
        let _ = writeln!(problems, "error messages differ");
    }
    let (a, b) = (normalize(&reference.stdout), normalize(&got.stdout));
    if a != b {
        problems.push_str(&first_diff(&format!("{ref_name} stdout"), &a, &format!("{got_name} stdout"), &b));
    }
    if problems.is_empty() {
        return Ok(());
    }
    if !reference.stderr.is_empty() || !got.stderr.is_empty() {
        let _ = writeln!(problems, "{ref_name} stderr: {}", stderr_line(reference));
        let _ = writeln!(problems, "{got_name} stderr: {}", stderr_line(got));
    }
    Err(problems)
}

fn identity(b: &[u8]) -> Vec<u8> {
    b.to_vec()
}

/// `info` prints `rra[i].cur_row`, which rrdtool picks at random on create;
/// two files with the same content differ only there.
fn hide_cur_row(b: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(b);
    let mut out = String::with_capacity(s.len());
    for line in s.split_inclusive('\n') {
        match line.find(".cur_row = ") {
            Some(i) if line.starts_with("rra[") => {
                out.push_str(&line[..i]);
                out.push_str(".cur_row = (random)\n");
            }
            _ => out.push_str(line),
        }
    }
    out.into_bytes()
}

/// Canonical form of a file for byte comparison: rrdtool 1.7.2's `create`
/// starts each RRA at a random `cur_row`, so every RRA is rotated oldest
/// row first ([`rrd_testkit::canonical`]). The self-test of rrdtool
/// against itself checks that no other bytes need normalising.
pub use rrd_testkit::canonical::oldest_rows_first as normalize_file;

/// Names the header field or data cell at `off`, for byte-diff reports.
fn describe_offset(bytes: &[u8], off: usize) -> String {
    let Ok(h) = rrd_format::Header::decode(bytes, bytes.len() as u64) else {
        return format!("offset {off}");
    };
    let l = h.layout();
    let off = off as u64;
    let (ds, rra) = (l.ds_count, l.rra_count);
    let what = if off < l.ds_def_off {
        format!("stat_head+{off}")
    } else if off < l.rra_def_off {
        let r = off - l.ds_def_off;
        format!("ds_def[{}]+{}", r / 120, r % 120)
    } else if off < l.live_head_off {
        let r = off - l.rra_def_off;
        format!("rra_def[{}]+{}", r / 120, r % 120)
    } else if off < l.pdp_prep_off {
        format!("live_head+{}", off - l.live_head_off)
    } else if off < l.cdp_prep_off {
        let r = off - l.pdp_prep_off;
        format!("pdp_prep[ds {}]+{}", r / 112, r % 112)
    } else if off < l.rra_ptr_off {
        let r = off - l.cdp_prep_off;
        let i = r / 80;
        format!("cdp_prep[rra {}, ds {}] scratch[{}]", i / ds.max(1), i % ds.max(1), (r % 80) / 8)
    } else if off < l.data_off {
        format!("rra_ptr[{}]", (off - l.rra_ptr_off) / 8)
    } else {
        let mut s = format!("data+{}", off - l.data_off);
        for i in (0..rra as usize).rev() {
            if off >= l.rra_data_off[i] {
                let r = (off - l.rra_data_off[i]) / l.row_len();
                let d = ((off - l.rra_data_off[i]) % l.row_len()) / 8;
                // Rows are reported in canonical order (oldest first).
                s = format!("rra[{i}] row {r} (canonical) ds {d}");
                break;
            }
        }
        let _ = h;
        s
    };
    format!("offset {off} ({what})")
}

/// Compares the two files byte for byte after normalisation.
fn compare_files(oracle_file: &Path, candidate_file: &Path, names: (&str, &str)) -> Result<(), String> {
    let a = std::fs::read(oracle_file).map_err(|e| format!("{}'s file: {e}", names.0))?;
    let b = std::fs::read(candidate_file).map_err(|e| format!("{}'s file: {e}", names.1))?;
    let na = normalize_file(&a).map_err(|e| format!("{}'s file {e}", names.0))?;
    let nb = normalize_file(&b).map_err(|e| format!("{}'s file {e}", names.1))?;
    if na == nb {
        return Ok(());
    }
    let mut s = String::new();
    if na.len() != nb.len() {
        let _ = writeln!(s, "lengths: {} {} bytes, {} {} bytes", names.0, na.len(), names.1, nb.len());
    }
    let diffs: Vec<usize> = (0..na.len().min(nb.len())).filter(|&i| na[i] != nb[i]).collect();
    let _ = writeln!(s, "{} differing bytes (after normalising cur_row); first ones:", diffs.len());
    let mut last_cell = None;
    let mut shown = 0;
    for &i in &diffs {
        let cell = i / 8;
        if last_cell == Some(cell) {
            continue;
        }
        last_cell = Some(cell);
        let lo = cell * 8;
        let hi = (lo + 8).min(na.len()).min(nb.len());
        let word = |v: &[u8]| {
            let bytes: Vec<String> = v[lo..hi].iter().map(|b| format!("{b:02x}")).collect();
            let f = if hi - lo == 8 {
                format!(" = {:e}", f64::from_le_bytes(v[lo..hi].try_into().expect("8 bytes")))
            } else {
                String::new()
            };
            format!("{}{f}", bytes.join(" "))
        };
        let _ = writeln!(
            s,
            "  {}: {} [{}] vs {} [{}]",
            describe_offset(&na, i),
            names.0,
            word(&na),
            names.1,
            word(&nb)
        );
        shown += 1;
        if shown == 8 {
            break;
        }
    }
    Err(s)
}

/// Where a case's two files live: `a/` is the oracle's, `b/` the candidate's.
struct Dirs {
    _tmp: tempfile::TempDir,
    a: PathBuf,
    b: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let tmp =
            tempfile::Builder::new().prefix("rrdscale-diff-").tempdir().expect("make a temporary directory");
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).expect("make a/");
        std::fs::create_dir(&b).expect("make b/");
        Dirs { _tmp: tmp, a, b }
    }
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// The read commands run after the updates. Depends only on the case and the
/// file's last update time, so a shrunk case reads the same way.
pub fn read_commands(case: &Case, last: i64) -> Vec<Vec<String>> {
    let s = &case.schema;
    let mut rng = Rng::new(case.seed ^ 0x005e_ed0f_4ead);
    let mut reads = vec![strings(&["dump", FILE]), strings(&["info", FILE])];
    match rng.below(6) {
        0 => reads.push(strings(&["dump", "--no-header", FILE])),
        1 => reads.push(strings(&["dump", "--header", "xsd", FILE])),
        2 => reads.push(strings(&["dump", FILE, "-h", "none"])),
        _ => {}
    }
    reads.push(strings(&["last", FILE]));
    reads.push(strings(&["lastupdate", FILE]));
    reads.push(strings(&["first", FILE]));
    for i in 0..s.rras.len() {
        let idx = i.to_string();
        if rng.chance(0.5) {
            reads.push(vec!["first".into(), "--rraindex".into(), idx, FILE.into()]);
        } else {
            reads.push(vec!["first".into(), FILE.into(), "--rraindex".into(), idx]);
        }
    }
    let step = s.step_secs as i64;
    // One xport over up to two data sources of the first CF.
    if let (Some(cf), Some(r)) = (s.cfs().first(), s.rras.first()) {
        let span = step * (r.pdp_per_row * r.rows) as i64;
        let mut a = vec!["xport".to_string()];
        if rng.chance(0.3) {
            a.push("--json".into());
        }
        a.extend(["-s".to_string(), (last - span).to_string(), "-e".to_string(), last.to_string()]);
        let mut exported = Vec::new();
        for (k, ds) in s.ds.iter().take(2).enumerate() {
            a.push(format!("DEF:v{k}={FILE}:{}:{cf}", ds.name));
            exported.push(format!("XPORT:v{k}:{}", ds.name));
        }
        a.extend(exported);
        reads.push(a);
    }
    for cf in s.cfs() {
        let candidates: Vec<_> = s.rras.iter().filter(|r| r.cf == cf).collect();
        let mut kinds: Vec<u64> = (0..6).collect();
        rng.shuffle(&mut kinds);
        // Always the plain "last span" fetch, plus three others.
        kinds.retain(|&k| k != 0);
        kinds.truncate(3);
        kinds.insert(0, 0);
        for k in kinds {
            let r = rng.pick(&candidates);
            let res = step * r.pdp_per_row as i64;
            let span = res * r.rows as i64;
            let mut a = vec!["fetch".to_string(), FILE.to_string(), cf.to_string()];
            let mut push = |xs: &[String]| a.extend(xs.iter().cloned());
            match k {
                0 => push(&["-s".into(), (last - span).to_string(), "-e".into(), last.to_string()]),
                1 => push(&[
                    "-r".into(),
                    res.to_string(),
                    "-s".into(),
                    (last - span / 2).to_string(),
                    "-e".into(),
                    (last + 2 * res).to_string(),
                ]),
                2 => {
                    let from = rng.range(s.start - span, last.max(s.start));
                    let to = from + rng.range(1, 2 * span.max(1));
                    push(&[
                        "--resolution".into(),
                        (res * rng.range(1, 3) + rng.range(0, step)).to_string(),
                        "--start".into(),
                        from.to_string(),
                        "--end".into(),
                        to.to_string(),
                    ])
                }
                3 => {
                    let from = rng.range(s.start, last.max(s.start));
                    push(&[
                        "-a".into(),
                        "-r".into(),
                        res.to_string(),
                        "-s".into(),
                        from.to_string(),
                        "-e".into(),
                        (from + span).to_string(),
                    ])
                }
                4 => push(&["-e".into(), last.to_string(), "-s".into(), format!("end-{}s", span.max(1))]),
                _ => push(&[
                    "--align-start".into(),
                    "--start".into(),
                    (s.start + rng.range(0, step)).to_string(),
                    "--end".into(),
                    format!("start+{}", 3 * res),
                ]),
            }
            reads.push(a);
        }
    }
    reads
}

impl Harness {
    // One case's steps in order, comparing both tools after each.
    #[allow(clippy::too_many_lines)]
    pub fn run_case(&self, index: u64, case: &Case) -> CaseReport {
        let dirs = Dirs::new();
        let (on, cn) = (self.oracle.name.as_str(), self.candidate.name.as_str());
        let mut rep = CaseReport {
            index,
            case: case.clone(),
            steps: Vec::new(),
            checks: Vec::new(),
            mismatches: Vec::new(),
            surprises: Vec::new(),
        };
        let (fa, fb) = (dirs.a.join(FILE), dirs.b.join(FILE));
        let both = |args: &[String]| {
            (
                run(&self.oracle.path, args, &dirs.a, None, self.timeout),
                run(&self.candidate.path, args, &dirs.b, None, self.timeout),
            )
        };

        let create = case.create_args();
        let (oa, ob) = both(&create);
        rep.steps.push(Step::Write(create));
        rep.check("create", 0, compare(on, &oa, cn, &ob, identity, self.strict_errors));
        if !oa.ok() {
            rep.surprises.push(format!("{on} rejected create: {}", stderr_line(&oa)));
            return rep;
        }
        // `--no-overwrite` on the file just made: an error for both, and the
        // file stays as it was (the byte comparison below sees to that).
        if case.seed.is_multiple_of(8) {
            let mut again = case.create_args();
            again.insert(2, "-O".into());
            let (oa, ob) = both(&again);
            let step = rep.steps.len();
            rep.steps.push(Step::Write(again));
            rep.check("create -O", step, compare(on, &oa, cn, &ob, identity, self.strict_errors));
        }
        let mut files_agree = fb.exists();
        if files_agree {
            let r = compare_files(&fa, &fb, (on, cn));
            files_agree = r.is_ok();
            rep.check("raw bytes after create", rep.steps.len() - 1, r);
        }
        // rrdtool starts every archive at a random row, and the seasonal
        // smoother of Holt-Winters archives runs when an archive's current
        // row passes a fixed row (from the file name's hash): two files
        // created apart smooth at different updates, rrdtool against itself
        // included. So the updates of a Holt-Winters case run on two copies
        // of the oracle's file (the create was compared above, with rows
        // rotated).
        if case.schema.has_hw() && fa.exists() {
            let copied = std::fs::copy(&fa, &fb).map(|_| ()).map_err(|e| format!("copying the file: {e}"));
            files_agree = copied.is_ok();
            rep.steps.push(Step::Shell(format!("cp \"$W/a/{FILE}\" \"$W/b/{FILE}\"")));
            rep.check("copy the Holt-Winters file", rep.steps.len() - 1, copied);
        }

        for call in &case.calls {
            let args = call.args();
            let (oa, ob) = both(&args);
            let step = rep.steps.len();
            rep.steps.push(Step::Write(args.clone()));
            rep.check(call.verb, step, compare(on, &oa, cn, &ob, identity, self.strict_errors));
            if oa.ok() != call.expect_ok {
                let line = command_line("", &args);
                rep.surprises.push(format!(
                    "{on} {} step {step} although the generator meant it to {}: {}\n    {}",
                    if oa.ok() { "accepted" } else { "rejected" },
                    if call.expect_ok { "pass" } else { "fail" },
                    stderr_line(&oa),
                    clip(&line, 600)
                ));
            }
            // After the first byte difference every later one is a
            // consequence; checking on would only add noise.
            if files_agree {
                let r = compare_files(&fa, &fb, (on, cn));
                files_agree = r.is_ok();
                rep.check("raw bytes after update", step, r);
            }
        }

        let last_out = run(&self.oracle.path, &strings(&["last", FILE]), &dirs.a, None, self.timeout);
        let last =
            String::from_utf8_lossy(&last_out.stdout).trim().parse::<i64>().unwrap_or(case.schema.start);
        let before = std::fs::read(&fa).unwrap_or_default();
        for args in read_commands(case, last) {
            let step = rep.steps.len();
            let cmd = args[0].clone();
            let cross_file: fn(&[u8]) -> Vec<u8> = if cmd == "info" { hide_cur_row } else { identity };
            let reference = run(&self.oracle.path, &args, &dirs.a, None, self.timeout);
            let c_on_a = run(&self.candidate.path, &args, &dirs.a, None, self.timeout);
            rep.check(
                &format!("{cmd} [{cn} on {on}'s file]"),
                step,
                compare(on, &reference, cn, &c_on_a, identity, self.strict_errors),
            );
            let c_on_b = run(&self.candidate.path, &args, &dirs.b, None, self.timeout);
            rep.check(
                &format!("{cmd} [{cn} on its own file]"),
                step,
                compare(on, &reference, cn, &c_on_b, cross_file, self.strict_errors),
            );
            // rrdtool on the candidate's file. When the two files are equal
            // byte for byte (after the cur_row normalisation), rrdtool's
            // output on one is its output on the other (the self-test of
            // rrdtool against itself shows it), so then only `dump` and
            // `info` are rerun, to keep the run time down.
            let needed = !files_agree || cmd == "dump" || cmd == "info";
            if self.oracle_reads_candidate && needed {
                let o_on_b = run(&self.oracle.path, &args, &dirs.b, None, self.timeout);
                rep.check(
                    &format!("{cmd} [{on} on {cn}'s file]"),
                    step,
                    compare(
                        &format!("{on} on its file"),
                        &reference,
                        &format!("{on} on {cn}'s file"),
                        &o_on_b,
                        cross_file,
                        self.strict_errors,
                    ),
                );
            }
            rep.steps.push(Step::Read(args));
        }
        let after = std::fs::read(&fa).unwrap_or_default();
        let step = rep.steps.len().saturating_sub(1);
        rep.check(
            &format!("{cn}'s reads leave {on}'s file unchanged"),
            step,
            if before == after { Ok(()) } else { Err(format!("{on}'s file changed while {cn} read it")) },
        );

        // restore: both tools restore the same XML (rrdtool's dump of its
        // file) into a new file; the two files must be equal byte for byte.
        let xml = run(&self.oracle.path, &strings(&["dump", FILE]), &dirs.a, None, self.timeout);
        if xml.ok()
            && std::fs::write(dirs.a.join("d.xml"), &xml.stdout).is_ok()
            && std::fs::write(dirs.b.join("d.xml"), &xml.stdout).is_ok()
        {
            rep.steps.push(Step::Shell(format!(
                "(cd \"$W/a\" && \"$ORACLE\" dump {FILE} > d.xml) && cp \"$W/a/d.xml\" \"$W/b/d.xml\""
            )));
            let mut args = strings(&["restore", "d.xml", "r.rrd"]);
            if case.seed.is_multiple_of(3) {
                args.insert(1, "-r".into());
            }
            let (oa, ob) = both(&args);
            let step = rep.steps.len();
            rep.steps.push(Step::Write(args));
            rep.check("restore", step, compare(on, &oa, cn, &ob, identity, self.strict_errors));
            if oa.ok() {
                let r = compare_files(&dirs.a.join("r.rrd"), &dirs.b.join("r.rrd"), (on, cn));
                rep.check("raw bytes after restore", step, r);
            }
        }
        rep
    }

    /// Tries smaller versions of a failing case that still fail the same
    /// check: fewer update calls, fewer entries, fewer RRAs. Returns the
    /// smallest found, if smaller than the original.
    pub fn shrink(&self, report: &CaseReport, budget: usize) -> Option<CaseReport> {
        let check = report.mismatches.first()?.check.clone();
        let still_fails = |c: &Case| {
            let r = self.run_case(report.index, c);
            if r.mismatches.iter().any(|m| m.check == check) {
                Some(r)
            } else {
                None
            }
        };
        let mut best: Option<CaseReport> = None;
        let mut cur = report.case.clone();
        let mut tries = 0;
        let mut progress = true;
        while progress && tries < budget {
            progress = false;
            let mut candidates: Vec<Case> = Vec::new();
            let n = cur.calls.len();
            // Fewer calls: cut the tail, then drop quarters, then single calls.
            for keep in [0, n / 4, n / 2, 3 * n / 4, n.saturating_sub(1)] {
                if keep < n {
                    let mut c = cur.clone();
                    c.calls.truncate(keep);
                    candidates.push(c);
                }
            }
            if cur.schema.rras.len() > 1 {
                for i in 0..cur.schema.rras.len() {
                    // An explicit Holt-Winters group names its archives by
                    // index: removing one before it would break the group.
                    let group_after =
                        cur.schema.rras[i + 1..].iter().any(|r| r.hw.as_ref().is_some_and(|a| a.len() > 1));
                    if group_after {
                        continue;
                    }
                    let mut c = cur.clone();
                    c.schema.rras.remove(i);
                    candidates.push(c);
                }
            }
            if n >= 8 {
                for q in 0..4 {
                    let mut c = cur.clone();
                    c.calls.drain(q * n / 4..(q + 1) * n / 4);
                    candidates.push(c);
                }
            }
            for i in 0..n {
                let mut c = cur.clone();
                c.calls.remove(i);
                candidates.push(c);
            }
            // Fewer entries per call: either half of a call.
            for i in 0..n {
                let len = cur.calls[i].entries.len();
                if len > 1 {
                    let mut c = cur.clone();
                    c.calls[i].entries.truncate(len / 2);
                    candidates.push(c);
                    let mut c = cur.clone();
                    c.calls[i].entries.drain(..len / 2);
                    candidates.push(c);
                }
            }
            for c in candidates {
                if tries >= budget {
                    break;
                }
                tries += 1;
                if let Some(r) = still_fails(&c) {
                    cur = c;
                    best = Some(r);
                    progress = true;
                    break;
                }
            }
        }
        best
    }

    /// Writes a shell script that replays a case with both tools and shows
    /// the first difference. Returns its path.
    pub fn write_reproducer(&self, seed: u64, report: &CaseReport) -> std::io::Result<PathBuf> {
        let m = report.mismatches.first().expect("a failed case has a mismatch");
        std::fs::create_dir_all(&self.out_dir)?;
        let path = self.out_dir.join(format!("{seed}-{}.sh", report.index));
        let (on, cn) = (&self.oracle.name, &self.candidate.name);
        let mut s = String::new();
        let _ = writeln!(s, "#!/usr/bin/env bash");
        let _ = writeln!(
            s,
            "# Differential case {} of seed {seed} (case seed {:#x}).",
            report.index, report.case.seed
        );
        let _ = writeln!(s, "# First difference: {}", m.check);
        for l in m.detail.lines().take(20) {
            let _ = writeln!(s, "#   {l}");
        }
        let _ = writeln!(
            s,
            "# Whole case again: RRDSCALE_DIFF_SEED={seed} RRDSCALE_DIFF_ONLY={} \\",
            report.index
        );
        let _ = writeln!(s, "#   cargo test -p rrdscale --test differential random_cases_match_rrdtool");
        let _ =
            writeln!(s, "# Files: $W/a/{FILE} is {on}'s, $W/b/{FILE} is {cn}'s. Raw bytes differ in cur_row");
        let _ = writeln!(s, "# and row order even when equal: rrdtool starts each RRA at a random row.");
        let _ = writeln!(s, "set -u\nexport TZ=UTC LC_ALL=C");
        let _ = writeln!(s, "ORACLE=${{ORACLE:-{}}}", sh_quote(&self.oracle.path.to_string_lossy()));
        let _ = writeln!(s, "CANDIDATE=${{CANDIDATE:-{}}}", sh_quote(&self.candidate.path.to_string_lossy()));
        let _ = writeln!(s, "W=$(mktemp -d); mkdir -p \"$W/a\" \"$W/b\"; echo \"work dir: $W\"");
        s.push_str(REPRO_FUNCTIONS);
        for step in &report.steps[..=m.step] {
            match step {
                Step::Write(args) => {
                    let _ = writeln!(s, "{}", command_line("both", args));
                }
                Step::Read(args) => {
                    let _ = writeln!(s, "{}", command_line("reads", args));
                }
                Step::Shell(line) => {
                    let _ = writeln!(s, "{line}");
                }
            }
        }
        if m.check.starts_with("raw bytes") {
            let _ = writeln!(s, "cmp -l \"$W/a/{FILE}\" \"$W/b/{FILE}\" | head -20");
        }
        let _ = writeln!(s, "exit $fail");
        std::fs::write(&path, s)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
        Ok(path)
    }
}

const REPRO_FUNCTIONS: &str = r#"fail=0
# A command that changes the file: each tool on its own file.
both() {
  (cd "$W/a" && "$ORACLE" "$@" >"$W/o.out" 2>"$W/o.err"); local ro=$?
  (cd "$W/b" && "$CANDIDATE" "$@" >"$W/c.out" 2>"$W/c.err"); local rc=$?
  echo "\$ $*   [oracle $ro, candidate $rc]"
  if [ $ro != $rc ] || ! cmp -s "$W/o.out" "$W/c.out"; then
    fail=1; cat "$W/o.err" "$W/c.err"; diff -u "$W/o.out" "$W/c.out" | head -40
  fi
}
# A read command: the oracle on its file is the reference.
reads() {
  (cd "$W/a" && "$ORACLE" "$@" >"$W/ref.out" 2>&1); local r0=$?
  (cd "$W/a" && "$CANDIDATE" "$@" >"$W/ca.out" 2>&1); local r1=$?
  (cd "$W/b" && "$CANDIDATE" "$@" >"$W/cb.out" 2>&1); local r2=$?
  (cd "$W/b" && "$ORACLE" "$@" >"$W/ob.out" 2>&1); local r3=$?
  echo "\$ $*   [oracle $r0, candidate on oracle's file $r1, candidate on own $r2, oracle on candidate's $r3]"
  for f in ca cb ob; do
    if ! cmp -s "$W/ref.out" "$W/$f.out"; then fail=1; diff -u "$W/ref.out" "$W/$f.out" | head -40; fi
  done
}
"#;

/// Tallies of every check over many cases.
#[derive(Default)]
pub struct Tally {
    pub by_check: BTreeMap<String, (u64, u64)>,
}

impl Tally {
    pub fn add(&mut self, report: &CaseReport) {
        for (name, ok) in &report.checks {
            let e = self.by_check.entry(name.clone()).or_default();
            if *ok {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
    }

    pub fn table(&self) -> String {
        let mut s = String::new();
        let w = self.by_check.keys().map(|k| k.len()).max().unwrap_or(10);
        for (name, (ok, bad)) in &self.by_check {
            let _ = writeln!(s, "  {name:<w$}  {ok:>6} passed  {bad:>6} failed");
        }
        s
    }
}

/// A human report of one failed case.
pub fn describe_failure(h: &Harness, seed: u64, r: &CaseReport) -> String {
    let m = &r.mismatches[0];
    let mut failed: Vec<&str> = r.mismatches.iter().map(|m| m.check.as_str()).collect();
    failed.dedup();
    let mut distinct: Vec<&str> = Vec::new();
    for f in failed {
        if !distinct.contains(&f) {
            distinct.push(f);
        }
    }
    let mut s = format!(
        "=== case {} of seed {seed} (case seed {:#x}): {} updates in {} calls; {} mismatches in: {}\n",
        r.index,
        r.case.seed,
        r.case.update_count(),
        r.case.calls.len(),
        r.mismatches.len(),
        distinct.join(", ")
    );
    // The first mismatch of each distinct check (up to three): later checks
    // are often consequences of the first, but not always.
    for (k, check) in distinct.iter().take(3).enumerate() {
        let Some(m) = r.mismatches.iter().find(|m| m.check == *check) else { continue };
        let which = if k == 0 { "first difference" } else { "then also" };
        let _ = writeln!(s, "{which}: {} (step {})", m.check, m.step);
        match &r.steps[m.step] {
            Step::Write(args) => {
                let _ = writeln!(s, "  {}", clip(&command_line(&h.oracle.path.to_string_lossy(), args), 400));
                let _ =
                    writeln!(s, "  {}", clip(&command_line(&h.candidate.path.to_string_lossy(), args), 400));
            }
            Step::Read(args) => {
                let _ = writeln!(s, "  {}", command_line("<tool>", args));
            }
            Step::Shell(line) => {
                let _ = writeln!(s, "  {line}");
            }
        }
        let limit = if k == 0 { 60 } else { 16 };
        for l in m.detail.lines().take(limit) {
            let _ = writeln!(s, "  | {l}");
        }
    }
    let _ = writeln!(s, "commands up to there:");
    let steps = &r.steps[..=m.step];
    let shown: Vec<&Step> = if steps.len() > 30 {
        steps[..10].iter().chain(steps[steps.len() - 20..].iter()).collect()
    } else {
        steps.iter().collect()
    };
    for (i, st) in shown.iter().enumerate() {
        if steps.len() > 30 && i == 10 {
            let _ = writeln!(s, "  ... ({} more)", steps.len() - 30);
        }
        let line = match st {
            Step::Write(a) | Step::Read(a) => command_line("", a),
            Step::Shell(l) => format!(" {l}"),
        };
        let line = clip(&line, 400);
        let _ = writeln!(s, " {line}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_leaves_plain_words_alone() {
        assert_eq!(sh_quote("DS:a:GAUGE:600:U:U"), "DS:a:GAUGE:600:U:U");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
    }

    #[test]
    fn first_diff_shows_the_differing_run_and_counts_it() {
        let d = first_diff("x", b"1\n2\n3\n4\n5\n", "y", b"1\n2\nthree\n4\nfive\n");
        assert!(d.contains("@@ first difference at line 3 @@"), "{d}");
        assert!(d.contains("-3\n+three\n"), "{d}");
        assert!(d.contains("(2 of 5 lines differ)"), "{d}");
        let d = first_diff("x", b"1\n2\n", "y", b"1\n");
        assert!(d.contains("-2\n") && d.contains("(line counts: 2 vs 1)"), "{d}");
    }

    #[test]
    fn info_cur_row_is_hidden_and_nothing_else() {
        let out = hide_cur_row(b"rra[0].cur_row = 17\nrra[0].rows = 20\n");
        assert_eq!(out, b"rra[0].cur_row = (random)\nrra[0].rows = 20\n");
    }
}
