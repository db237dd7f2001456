//! What the `daemon-*` benchmarks share: their common options, the files
//! (one master created with rrdscale's create and copied N times, then a
//! byte-identical copy per side), each side's run directory and memory
//! cgroup, the client threads that send `BATCH`es of `UPDATE`s, the checks
//! on the files afterwards, and the report (Markdown table + JSON).
//!
//! Invariants: every side gets the same files and the same update lines in
//! the same order (only the directory in the path differs); lines are built
//! before a clock starts; every failed reply is counted and its first
//! message kept; a failed check fails the run after the report is written.
//!
//! Deliberately absent: any verdict on targets (the report states figures
//! and ratios) and running two daemons at once (sides run one after the
//! other, so they never compete for the disk or the CPUs).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use rrd_engine::create::{create, CreateOptions};
use serde::{Deserialize, Serialize};

use crate::cgroup::{MemoryCgroup, Usage};
use crate::daemon::{DaemonKind, DaemonSpec, RRDCACHED};
use crate::host::{load_average, machine, mkdirs, shell_quote};
use crate::report::{thousands, Machine};
use crate::schema::Schema;
use crate::workload::file_path;
use crate::BenchError;

/// The daemon benchmarks compare against this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum DaemonVersus {
    /// rrdcached 1.7.2 (`--rrdcached PATH`, default /usr/bin/rrdcached).
    Rrdcached,
}

/// Options every `daemon-*` workload takes.
#[derive(Debug, Args, Clone)]
pub struct DaemonCommon {
    /// Also run rrdcached on a copy of the same files.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub vs: Vec<DaemonVersus>,
    /// The rrdcached binary.
    #[arg(long, default_value = RRDCACHED)]
    pub rrdcached: PathBuf,
    /// Run each daemon in its own memory cgroup with this limit (page cache
    /// charged to it), e.g. 50M. Needs root and cgroup v1 or v2.
    #[arg(long, value_parser = crate::host::parse_size)]
    pub memory_budget: Option<u64>,
    /// Write threads of both daemons (`-t`).
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Client connections sending updates at once (default 4;
    /// `daemon-ingest --pattern roundtrip`: 1).
    #[arg(long)]
    pub clients: Option<usize>,
    /// UPDATE lines per BATCH.
    #[arg(long, default_value_t = 1000)]
    pub batch_lines: usize,
    /// Directory for the files (kept afterwards). Default: a temporary
    /// directory under /var/tmp, removed at the end unless --keep.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the temporary directory.
    #[arg(long)]
    pub keep: bool,
    /// The files' last update (epoch seconds); the first pending value is
    /// one step later. Default 2023-11-15 10:00 UTC.
    #[arg(long, default_value_t = 1_700_042_400)]
    pub start_time: i64,
    #[command(flatten)]
    pub record: crate::cli::RunRecord,
    /// An extra argument for our daemon (repeatable), e.g.
    /// `--daemon-arg=--max-kept-bytes=0`.
    #[arg(long = "daemon-arg", allow_hyphen_values = true)]
    pub daemon_args: Vec<String>,
}

/// One side's figures (names are the JSON keys; units are in the names).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DaemonSideResult {
    pub label: String,
    pub kind: Option<DaemonKind>,
    pub command_line: String,
    pub metrics: BTreeMap<String, f64>,
    pub memory: Option<Usage>,
}

impl DaemonSideResult {
    pub fn get(&self, key: &str) -> f64 {
        self.metrics.get(key).copied().unwrap_or(f64::NAN)
    }

    pub fn set(&mut self, key: &str, v: f64) {
        self.metrics.insert(key.to_string(), v);
    }
}

/// A consistency check of the run (not a timing judgement).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

/// A column of the report's table: a metric key, its heading, decimals.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Column {
    pub key: String,
    pub title: String,
    pub decimals: usize,
}

pub fn col(key: &str, title: &str, decimals: usize) -> Column {
    Column { key: key.into(), title: title.into(), decimals }
}

/// The results of one `daemon-*` run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DaemonResults {
    pub workload: String,
    pub command: String,
    pub machine: Machine,
    pub memory_budget_bytes: Option<u64>,
    pub schema: Schema,
    pub file_bytes: u64,
    pub files: u64,
    /// Parameters worth printing (name → value as text).
    pub params: BTreeMap<String, String>,
    pub columns: Vec<Column>,
    pub sides: Vec<DaemonSideResult>,
    /// `ours / rrdcached` ratios by name.
    pub ratios: BTreeMap<String, f64>,
    pub checks: Vec<Check>,
    pub notes: Vec<String>,
    /// Extra tables (title, header, rows), e.g. the disk probe.
    pub tables: Vec<(String, Vec<String>, Vec<Vec<String>>)>,
    pub dir: PathBuf,
    pub dir_kept: bool,
}

fn fmt_num(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    if decimals == 0 {
        thousands(v)
    } else {
        format!("{v:.decimals$}")
    }
}

fn table(s: &mut String, header: &[String], rows: &[Vec<String>]) {
    let _ = writeln!(s, "| {} |", header.join(" | "));
    let _ = writeln!(
        s,
        "|{}",
        header.iter().enumerate().map(|(i, _)| if i == 0 { "---|" } else { "---:|" }).collect::<String>()
    );
    for r in rows {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
    let _ = writeln!(s);
}

/// The Markdown report.
pub fn markdown(r: &DaemonResults) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## rrdscale bench {}\n", r.workload);
    let _ = writeln!(s, "Command: `{}`\n", r.command);
    let _ = writeln!(s, "{}", r.machine.line());
    let budget = match r.memory_budget_bytes {
        Some(b) => {
            format!("{:.1} MiB per daemon, its own memory cgroup (page cache charged)", b as f64 / 1048576.0)
        }
        None => "none".into(),
    };
    let _ = writeln!(s, "Memory budget: {budget}.");
    let _ = writeln!(
        s,
        "Files: {} × {} ({} bytes each): `{}`.",
        thousands(r.files as f64),
        r.schema.name,
        thousands(r.file_bytes as f64),
        r.schema.spec()
    );
    if !r.params.is_empty() {
        let p: Vec<String> = r.params.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(s, "Parameters: {}.", p.join(", "));
    }
    let _ = writeln!(s);
    let mut header = vec!["side".to_string()];
    header.extend(r.columns.iter().map(|c| c.title.clone()));
    header.push("peak cgroup memory".into());
    let rows: Vec<Vec<String>> = r
        .sides
        .iter()
        .map(|side| {
            let mut row = vec![side.label.clone()];
            row.extend(r.columns.iter().map(|c| fmt_num(side.get(&c.key), c.decimals)));
            row.push(
                side.memory
                    .and_then(|u| u.max_usage_bytes)
                    .map_or("–".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0)),
            );
            row
        })
        .collect();
    table(&mut s, &header, &rows);
    if !r.ratios.is_empty() {
        let _ = writeln!(s, "Ratios (rrdscale against rrdcached; above 1 means rrdscale is better):\n");
        for (k, v) in &r.ratios {
            let _ = writeln!(s, "- {k}: **{}**", if v.is_finite() { format!("{v:.2}×") } else { "–".into() });
        }
        let _ = writeln!(s);
    }
    for (title, header, rows) in &r.tables {
        let _ = writeln!(s, "{title}:\n");
        table(&mut s, header, rows);
    }
    let _ = writeln!(s, "Checks:\n");
    for c in &r.checks {
        let _ = writeln!(s, "- {} {}: {}", if c.ok { "ok" } else { "FAILED" }, c.name, c.detail);
    }
    let _ = writeln!(s);
    for n in &r.notes {
        let _ = writeln!(s, "{n}\n");
    }
    for side in &r.sides {
        let _ = writeln!(s, "- {}: `{}`", side.label, side.command_line);
    }
    let _ = writeln!(s, "\nFiles: {}{}.", r.dir.display(), if r.dir_kept { "" } else { " (removed)" });
    s
}

/// Where a run works, and whether it removes that place afterwards.
pub struct Workspace {
    pub base: PathBuf,
    owned: bool,
    keep: bool,
    pub command: String,
    pub load_before: String,
}

impl Workspace {
    pub fn new(common: &DaemonCommon, args: &[String]) -> Result<Workspace, BenchError> {
        let (base, owned) = match &common.dir {
            Some(d) => (d.clone(), false),
            None => (PathBuf::from("/var/tmp").join(format!("rrdscale-dbench-{}", std::process::id())), true),
        };
        if base.join("master").exists() {
            return Err(BenchError::Invalid(format!(
                "{} already holds a run; remove it or choose another --dir",
                base.display()
            )));
        }
        fs::create_dir_all(&base).map_err(|e| BenchError::io(format!("creating {}", base.display()), e))?;
        let base =
            base.canonicalize().map_err(|e| BenchError::io(format!("resolving {}", base.display()), e))?;
        let command = std::iter::once("rrdscale bench".to_string())
            .chain(args.iter().map(|a| shell_quote(a)))
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Workspace { base, owned, keep: common.keep, command, load_before: load_average() })
    }

    pub fn master(&self) -> PathBuf {
        self.base.join("master")
    }

    /// Whether the directory stays after the run.
    pub fn kept(&self) -> bool {
        !self.owned || self.keep
    }

    pub fn machine(&self) -> Machine {
        machine(&self.base, self.load_before.clone())
    }

    /// A report of this run with what every workload fills the same way;
    /// the caller adds columns, sides, ratios, checks, notes and tables
    /// (`DaemonResults { columns, .., ..ws.results(..) }`).
    pub fn results(
        &self,
        workload: &str,
        memory_budget_bytes: Option<u64>,
        schema: Schema,
        file_bytes: u64,
        files: u64,
        params: &[(&str, String)],
    ) -> DaemonResults {
        DaemonResults {
            workload: workload.into(),
            command: self.command.clone(),
            machine: self.machine(),
            memory_budget_bytes,
            schema,
            file_bytes,
            files,
            params: params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            columns: Vec::new(),
            sides: Vec::new(),
            ratios: BTreeMap::new(),
            checks: Vec::new(),
            notes: Vec::new(),
            tables: Vec::new(),
            dir: self.base.clone(),
            dir_kept: true,
        }
    }
}

impl Drop for Workspace {
    /// Removes the directory unless it is kept (also when the run failed).
    fn drop(&mut self) {
        if !self.kept() {
            let _ = fs::remove_dir_all(&self.base);
        }
    }
}

/// Creates file 0 with rrdscale's create (last update `start`) and copies it
/// to files 1..n; returns the file size.
pub fn make_master(schema: &Schema, n: u64, start: i64, dir: &Path) -> Result<u64, BenchError> {
    make_master_from(schema, n, start, dir, None)
}

/// [`make_master`], with every file a copy of `from` when given (an earlier
/// run's `master/0000/0000000.rrd`): the random start rows of a fresh file
/// decide which rows share a page, so only the same file makes two runs'
/// pages per file comparable. `from` must be what a fresh create gives up
/// to its live header (definitions, last update): otherwise the pending
/// values would not fit it.
pub fn make_master_from(
    schema: &Schema,
    n: u64,
    start: i64,
    dir: &Path,
    from: Option<&Path>,
) -> Result<u64, BenchError> {
    mkdirs(dir, n)?;
    let first = file_path(dir, 0);
    let opts = CreateOptions { start: Some(start), step_secs: Some(schema.step_secs), ..Default::default() };
    create(&first, &opts, &schema.defs, 0)
        .map_err(|e| BenchError::Invalid(format!("creating the benchmark files failed: {e}")))?;
    let mut bytes =
        fs::read(&first).map_err(|e| BenchError::io(format!("reading {}", first.display()), e))?;
    if let Some(from) = from {
        let given = fs::read(from).map_err(|e| BenchError::io(format!("reading {}", from.display()), e))?;
        let rrd = rrd_engine::Rrd::open(&first, false)
            .map_err(|e| BenchError::Invalid(format!("reading the fresh file back failed: {e}")))?;
        // Through the live header's last_up (8 bytes).
        let fixed = (rrd.layout().live_head_off + 8) as usize;
        if given.len() != bytes.len() || given[..fixed] != bytes[..fixed] {
            return Err(BenchError::Invalid(format!(
                "{} is not a {} file last updated at {start}",
                from.display(),
                schema.name
            )));
        }
        bytes = given;
        fs::write(&first, &bytes).map_err(|e| BenchError::io(format!("writing {}", first.display()), e))?;
    }
    let pb = crate::host::bar(n, "creating files".into());
    for i in 1..n {
        let p = file_path(dir, i);
        fs::write(&p, &bytes).map_err(|e| BenchError::io(format!("writing {}", p.display()), e))?;
        if i % 1024 == 0 {
            pb.set_position(i);
        }
    }
    pb.finish_and_clear();
    Ok(bytes.len() as u64)
}

/// Copies files 0..n of `master` into `dest`.
pub fn copy_files(master: &Path, dest: &Path, n: u64, label: &str) -> Result<(), BenchError> {
    mkdirs(dest, n)?;
    let pb = crate::host::bar(n, format!("copying for {label}"));
    for i in 0..n {
        let (a, b) = (file_path(master, i), file_path(dest, i));
        fs::copy(&a, &b)
            .map_err(|e| BenchError::io(format!("copying {} to {}", a.display(), b.display()), e))?;
        if i % 1024 == 0 {
            pb.set_position(i);
        }
    }
    pb.finish_and_clear();
    Ok(())
}

/// `-w` of the workloads that measure no periodic flush: far beyond the
/// run, so nothing is written until FLUSHALL.
pub const WRITE_INTERVAL: u64 = 1_000_000;

/// The sides of a run: ours with each `--sync` policy given, then rrdcached
/// when asked for (which must then be installed).
pub fn sides(common: &DaemonCommon, syncs: &[&str]) -> Result<Vec<DaemonKind>, BenchError> {
    sides_with(common, syncs.iter().map(|s| DaemonKind::Rrdscale { sync: s.to_string() }).collect())
}

/// The sides of a run: `ours`, then rrdcached when asked for.
pub fn sides_with(common: &DaemonCommon, ours: Vec<DaemonKind>) -> Result<Vec<DaemonKind>, BenchError> {
    let mut v = ours;
    if common.vs.contains(&DaemonVersus::Rrdcached) {
        crate::daemon::require_rrdcached(&common.rrdcached)?;
        v.push(DaemonKind::Rrdcached);
    }
    Ok(v)
}

/// One side's place: files under `<base>/<side>/files`, the daemon's run
/// directory `<base>/<side>/run`.
pub struct SideDirs {
    pub files: PathBuf,
    pub run: PathBuf,
}

pub fn side_dirs(base: &Path, kind: &DaemonKind) -> SideDirs {
    let root = base.join(kind.dir_name());
    SideDirs { files: root.join("files"), run: root.join("run") }
}

/// The daemon spec of a side.
pub fn spec_for(
    kind: &DaemonKind,
    common: &DaemonCommon,
    exe: &Path,
    run_dir: &Path,
    write_interval_secs: u64,
    max_pending_values: u64,
) -> DaemonSpec {
    DaemonSpec {
        kind: kind.clone(),
        program: if kind.is_ours() { exe.to_path_buf() } else { common.rrdcached.clone() },
        run_dir: run_dir.to_path_buf(),
        write_interval_secs,
        write_threads: common.threads,
        max_pending_values,
        extra: if kind.is_ours() { common.daemon_args.clone() } else { Vec::new() },
    }
}

/// A side's memory cgroup, when there is a budget.
pub fn cgroup_for(common: &DaemonCommon, k: usize) -> Result<Option<MemoryCgroup>, BenchError> {
    match common.memory_budget {
        Some(limit) => {
            Ok(Some(MemoryCgroup::create(&format!("rrdscale-dbench-{}-{k}", std::process::id()), limit)?))
        }
        None => Ok(None),
    }
}

/// How updates are sent: connections, lines per BATCH, values per line.
#[derive(Clone, Copy, Debug)]
pub struct Batching {
    pub clients: usize,
    pub batch_lines: usize,
    pub per_line: u64,
}

/// Client connections when `--clients` is not given.
pub const DEFAULT_CLIENTS: usize = 4;

impl DaemonCommon {
    /// `--clients`, or [`DEFAULT_CLIENTS`].
    pub fn clients(&self) -> usize {
        self.clients.unwrap_or(DEFAULT_CLIENTS)
    }

    /// This run's batching with `per_line` values per UPDATE line.
    pub fn batching(&self, per_line: u64) -> Batching {
        Batching { clients: self.clients(), batch_lines: self.batch_lines, per_line }
    }
}

/// The update lines of a run, split by client and by BATCH: value `k`
/// (1-based, `k` in `values`) of file `f` is at `start + k·step`; client `c`
/// sends the files `f ≡ c (mod clients)`; values go round by round (every
/// file's value k before any file's value k+1), `per_line` values per
/// UPDATE line.
pub struct UpdatePlan {
    /// Per client, per batch: the body (UPDATE lines).
    pub batches: Vec<Vec<Vec<u8>>>,
    pub lines: u64,
    pub values: u64,
}

pub fn plan_updates(
    schema: &Schema,
    dir: &Path,
    files: u64,
    values: std::ops::RangeInclusive<u64>,
    start: i64,
    b: Batching,
) -> UpdatePlan {
    let clients = b.clients.max(1);
    let batch_lines = b.batch_lines.max(1);
    let per_line = b.per_line.max(1);
    let mut batches: Vec<Vec<Vec<u8>>> = vec![Vec::new(); clients];
    let mut current: Vec<(Vec<u8>, usize)> = vec![(Vec::new(), 0); clients];
    let (mut lines, mut count) = (0u64, 0u64);
    let paths: Vec<String> = (0..files).map(|f| file_path(dir, f).display().to_string()).collect();
    let (first, last) = (*values.start(), *values.end());
    let mut k = first;
    while k <= last {
        let upto = (k + per_line - 1).min(last);
        for (f, path) in paths.iter().enumerate() {
            let c = f % clients;
            let (buf, n) = &mut current[c];
            buf.extend_from_slice(b"UPDATE ");
            buf.extend_from_slice(path.as_bytes());
            for j in k..=upto {
                let t = start + (j * schema.step_secs) as i64;
                buf.push(b' ');
                buf.extend_from_slice(schema.update_arg(f as u64, t).as_bytes());
                count += 1;
            }
            buf.push(b'\n');
            lines += 1;
            *n += 1;
            if *n == batch_lines {
                batches[c].push(std::mem::take(buf));
                *n = 0;
            }
        }
        k = upto + 1;
    }
    for (c, (buf, n)) in current.into_iter().enumerate() {
        if n > 0 {
            batches[c].push(buf);
        }
    }
    UpdatePlan { batches, lines, values: count }
}

/// What sending a plan took.
#[derive(Clone, Debug, Default)]
pub struct SendResult {
    pub secs: f64,
    pub errors: u64,
    pub first_error: Option<String>,
}

/// Sends a plan over `plan.batches.len()` connections at once (connected
/// before the clock starts); the time runs until every batch's reply is
/// read.
pub fn send_plan(socket: &Path, plan: UpdatePlan) -> Result<SendResult, BenchError> {
    let n = plan.batches.len();
    let barrier = Arc::new(Barrier::new(n + 1));
    let mut handles = Vec::new();
    for batches in plan.batches {
        let mut conn = crate::daemon::Conn::connect(socket)?;
        let barrier = barrier.clone();
        handles.push(std::thread::spawn(move || -> Result<(u64, Option<String>), BenchError> {
            barrier.wait();
            let (mut errors, mut first) = (0u64, None);
            for b in &batches {
                let errs = conn.batch(b)?;
                errors += errs.len() as u64;
                if first.is_none() {
                    first = errs.first().cloned();
                }
            }
            let _ = conn.request("QUIT");
            Ok((errors, first))
        }));
    }
    barrier.wait();
    let t = Instant::now();
    let mut r = SendResult::default();
    for h in handles {
        let (e, f) = h.join().map_err(|_| BenchError::Worker("a client thread panicked".into()))??;
        r.errors += e;
        if r.first_error.is_none() {
            r.first_error = f;
        }
    }
    r.secs = t.elapsed().as_secs_f64();
    Ok(r)
}

/// How many of files 0..n have their last update at `expected`, and the
/// first that does not.
pub fn count_last_update(dir: &Path, n: u64, expected: i64) -> (u64, Option<String>) {
    count_last_update_by(dir, n, |_| expected)
}

/// How many of files 0..n have their last update at `expected(file)`, and
/// the first that does not.
pub fn count_last_update_by(dir: &Path, n: u64, expected: impl Fn(u64) -> i64) -> (u64, Option<String>) {
    let mut ok = 0;
    let mut first = None;
    for i in 0..n {
        let expected = expected(i);
        let p = file_path(dir, i);
        match rrd_engine::Rrd::open(&p, false) {
            Ok(r) if r.header.live().last_up == expected => ok += 1,
            Ok(r) => {
                if first.is_none() {
                    first = Some(format!(
                        "{} was last updated at {}, not {expected}",
                        p.display(),
                        r.header.live().last_up
                    ));
                }
            }
            Err(e) => {
                if first.is_none() {
                    first = Some(format!("{}: {e}", p.display()));
                }
            }
        }
    }
    (ok, first)
}

/// Compares up to `n` files (spread evenly) of each side's copy with the
/// first side's; returns a check.
pub fn verify_sides(dirs: &[PathBuf], files: u64, n: u64) -> Check {
    verify_sides_against(dirs, None, files, n)
}

/// How many values each side sent to each file, for sides that may have
/// sent different numbers (a run for a fixed time), and what it takes to
/// make a reference file: `counts[s](i)` values went from side `s` to file
/// `i` (values 1..=k, value j at `start + j·step`, from `schema`).
pub struct SentCounts<'a> {
    pub counts: Vec<&'a dyn Fn(u64) -> u64>,
    pub master: &'a Path,
    /// Where reference files are made (removed afterwards).
    pub scratch: &'a Path,
    pub schema: &'a Schema,
    pub start: i64,
}

/// [`verify_sides`], where `sent` may say that sides sent different
/// numbers of values to a file. Files that got the same values on every
/// side are compared with each other; a file that did not is compared, on
/// each side, with rrdscale's library update of a copy of the master file
/// with the values that side sent.
pub fn verify_sides_against(dirs: &[PathBuf], sent: Option<&SentCounts>, files: u64, n: u64) -> Check {
    let picks: Vec<u64> =
        if n >= files { (0..files).collect() } else { (0..n).map(|k| k * files / n.max(1)).collect() };
    let (mut same, mut against_library, mut first) = (0u64, 0u64, None);
    for &i in &picks {
        let ks: Vec<u64> = match sent {
            Some(s) => s.counts.iter().map(|c| c(i)).collect(),
            None => vec![0; dirs.len()],
        };
        let mut references: BTreeMap<u64, Result<Vec<u8>, String>> = BTreeMap::new();
        let all_same = ks.iter().all(|&k| k == ks[0]);
        match sent {
            Some(s) if !all_same => {
                against_library += 1;
                for &k in &ks {
                    references.entry(k).or_insert_with(|| library_update(s, i, k));
                }
            }
            _ => {
                references.insert(ks[0], Ok(fs::read(file_path(&dirs[0], i)).unwrap_or_default()));
            }
        }
        let mut eq = true;
        for (d, k) in dirs.iter().zip(&ks) {
            let b = fs::read(file_path(d, i)).unwrap_or_default();
            let problem = match &references[k] {
                Err(e) => Some(e.clone()),
                Ok(a) if a.is_empty() || *a != b => {
                    let at = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
                    let theirs = if all_same {
                        file_path(&dirs[0], i).display().to_string()
                    } else {
                        format!("the library's update with the same {k} values")
                    };
                    Some(format!("{} and {theirs} differ at byte {at}", file_path(d, i).display()))
                }
                Ok(_) => None,
            };
            if let Some(p) = problem {
                eq = false;
                first.get_or_insert(p);
            }
        }
        same += u64::from(eq);
    }
    if let Some(s) = sent {
        let _ = fs::remove_dir_all(s.scratch);
    }
    let how = if against_library > 0 {
        format!(
            " ({against_library} of them received different numbers of values on different sides and \
             were compared with rrdscale's library update of the same values)"
        )
    } else {
        String::new()
    };
    Check {
        name: "files equal across sides".into(),
        ok: same == picks.len() as u64,
        detail: match first {
            None => format!("{same} of {} files compared are byte-identical on every side{how}", picks.len()),
            Some(f) => format!("{same} of {} identical{how}; {f}", picks.len()),
        },
    }
}

/// Master file `i` after values 1..=k, through rrdscale's library (the
/// master file itself for k = 0).
fn library_update(s: &SentCounts, i: u64, k: u64) -> Result<Vec<u8>, String> {
    if k == 0 {
        let p = file_path(s.master, i);
        return fs::read(&p).map_err(|e| format!("reading {}: {e}", p.display()));
    }
    fs::create_dir_all(s.scratch).map_err(|e| format!("creating {}: {e}", s.scratch.display()))?;
    let p = s.scratch.join(format!("{i}-{k}.rrd"));
    fs::copy(file_path(s.master, i), &p).map_err(|e| format!("copying master file {i}: {e}"))?;
    let step = s.schema.step_secs;
    let args: Vec<String> = (1..=k).map(|j| s.schema.update_arg(i, s.start + (j * step) as i64)).collect();
    let r = rrd_engine::update::update_file(&p, &args, &Default::default(), false)
        .map_err(|e| format!("the library's update of file {i}: {e}"))?;
    if let Some(e) = r.error {
        return Err(format!("the library's update of file {i}: {e}"));
    }
    let bytes = fs::read(&p).map_err(|e| format!("reading {}: {e}", p.display()))?;
    let _ = fs::remove_file(&p);
    Ok(bytes)
}

/// `ours / theirs` of a metric, for the first ours side with `sync` and
/// the rrdcached side.
pub fn ratio(sides: &[DaemonSideResult], ours_label: &str, key: &str, higher_is_better: bool) -> Option<f64> {
    let ours = sides.iter().find(|s| s.label == ours_label)?;
    let theirs = sides.iter().find(|s| s.kind == Some(DaemonKind::Rrdcached))?;
    let (a, b) = (ours.get(key), theirs.get(key));
    Some(if higher_is_better { a / b } else { b / a })
}

/// Writes the report (and JSON), removes the workspace unless kept, and
/// fails when a check failed.
pub fn finish(
    mut r: DaemonResults,
    ws: &Workspace,
    json: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), BenchError> {
    r.dir_kept = ws.kept();
    r.machine.load_after = load_average();
    out.write_all(markdown(&r).as_bytes()).map_err(|e| BenchError::io("writing the report", e))?;
    if let Some(p) = json {
        let text = serde_json::to_string_pretty(&r)
            .map_err(|e| BenchError::Worker(format!("encoding the results: {e}")))?;
        fs::write(p, text).map_err(|e| BenchError::io(format!("writing {}", p.display()), e))?;
    }
    let failed: Vec<String> =
        r.checks.iter().filter(|c| !c.ok).map(|c| format!("{}: {}", c.name, c.detail)).collect();
    if !failed.is_empty() {
        return Err(BenchError::Failed(format!("checks failed (see the report): {}", failed.join("; "))));
    }
    Ok(())
}

/// Sleeps in small steps until `f` is true or `timeout` passes.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_with_different_counts_are_checked_against_the_library() {
        let tmp = tempfile::tempdir().unwrap();
        let schema = Schema::parse("perftest").unwrap();
        let (master, a, b) = (tmp.path().join("m"), tmp.path().join("a"), tmp.path().join("b"));
        make_master(&schema, 3, 1000, &master).unwrap();
        copy_files(&master, &a, 3, "a").unwrap();
        copy_files(&master, &b, 3, "b").unwrap();
        // Side a sent 2, 2 and 0 values to files 0, 1, 2; side b 2, 3 and 2.
        let (ka, kb) = (|i| if i == 2 { 0u64 } else { 2 }, |i| if i == 1 { 3u64 } else { 2 });
        let scratch = tmp.path().join("scratch");
        let sent = SentCounts {
            counts: vec![&ka, &kb],
            master: &master,
            scratch: &scratch,
            schema: &schema,
            start: 1000,
        };
        for (dir, k) in [(&a, &ka as &dyn Fn(u64) -> u64), (&b, &kb)] {
            for i in 0..3 {
                let bytes = library_update(&sent, i, k(i)).unwrap();
                fs::write(file_path(dir, i), bytes).unwrap();
            }
        }
        let dirs = vec![a.clone(), b.clone()];
        let c = verify_sides_against(&dirs, Some(&sent), 3, 10);
        assert!(c.ok, "{}", c.detail);
        assert!(c.detail.contains("(2 of them received different numbers"), "{}", c.detail);
        // The file that got 3 values on side b is not the one with 2.
        fs::copy(file_path(&a, 1), file_path(&b, 1)).unwrap();
        let c = verify_sides_against(&dirs, Some(&sent), 3, 10);
        assert!(!c.ok && c.detail.contains("the library's update with the same 3 values"), "{}", c.detail);
        assert!(!scratch.exists());
        // Without counts: a plain comparison (file 2 differs: 0 and 2 values).
        let c = verify_sides(&dirs, 3, 10);
        assert!(!c.ok && c.detail.starts_with("2 of 3 identical"), "{}", c.detail);
    }

    #[test]
    fn plan_splits_by_client_and_batch() {
        let schema = Schema::parse("perftest").unwrap();
        let p = plan_updates(
            &schema,
            Path::new("/d"),
            5,
            1..=3,
            1000,
            Batching { clients: 2, batch_lines: 4, per_line: 1 },
        );
        assert_eq!(p.lines, 15);
        assert_eq!(p.values, 15);
        // Client 0 has files 0, 2, 4: 9 lines in batches of 4, 4, 1.
        let sizes: Vec<usize> =
            p.batches[0].iter().map(|b| b.iter().filter(|&&c| c == b'\n').count()).collect();
        assert_eq!(sizes, vec![4, 4, 1]);
        let text = String::from_utf8(p.batches[0][0].clone()).unwrap();
        assert!(text.starts_with("UPDATE /d/0000/0000000.rrd 1300:"), "{text}");
        // Round by round: file 0's second value comes after file 4's first.
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].starts_with("UPDATE /d/0000/0000004.rrd 1300:"));
        assert!(lines[3].starts_with("UPDATE /d/0000/0000000.rrd 1600:"));
        let two = plan_updates(
            &schema,
            Path::new("/d"),
            2,
            1..=3,
            1000,
            Batching { clients: 1, batch_lines: 100, per_line: 2 },
        );
        assert_eq!((two.lines, two.values), (4, 6));
    }
}
