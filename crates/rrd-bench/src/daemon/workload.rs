//! The one driver of the `daemon-*` workloads: what every one of them does
//! in the same order, so a workload says only what differs.
//!
//! [`run`] parses the schema, chooses the sides (ours, then rrdcached with
//! `--vs rrdcached`), makes the workspace and the master files, gives every
//! side its own byte-identical copy (unless the workload grows its own),
//! lets the workload prepare once ([`DaemonWorkload::before_sides`], e.g. the
//! disk probe), runs [`DaemonWorkload::side`] for each side one after the
//! other, adds the checks across sides and the report's parts the workload
//! gives ([`DaemonWorkload::report`]), and writes the report
//! ([`crate::daemon::common::finish`]). A side that runs one daemon does it through
//! [`Side::run_daemon`]: its memory cgroup, its command line, start, the
//! workload's measurement, an error explained by the daemon's death when it
//! died, stop, the cgroup's peak memory.
//!
//! Invariants: sides run one after the other, never two daemons at once;
//! the per-side checks come first in the report, in side order, then the
//! checks across sides; a daemon is stopped (or killed, when the
//! measurement failed) before the next side starts.
//!
//! Deliberately absent: anything a workload measures; this module knows
//! no metric by name.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::daemon::common::{
    self, Check, Column, DaemonCommon, DaemonResults, DaemonSideResult, SideDirs, Workspace,
};
use crate::daemon::{DaemonKind, DaemonProc, DaemonSpec};
use crate::schema::Schema;
use crate::BenchError;

/// What makes one `daemon-*` workload different from the others.
pub trait DaemonWorkload {
    /// What a side hands to the checks across sides (its replies, how many
    /// values each file got...).
    type SideOut;

    /// The options every daemon workload takes.
    fn common(&self) -> &DaemonCommon;
    /// The report's workload name (`daemon-flush`, `daemon-ingest --pattern roundtrip`).
    fn name(&self) -> String;
    /// `--schema`: a name or a create line.
    fn schema(&self) -> &str;
    /// Files made in the master directory (and copied to every side).
    fn files(&self) -> u64;
    /// Refuses option values that make no sense, before anything is made.
    fn check(&self) -> Result<(), BenchError> {
        Ok(())
    }
    /// Our sides (rrdcached is added after them with `--vs rrdcached`).
    fn ours(&self, _exe: &Path) -> Vec<DaemonKind> {
        vec![DaemonKind::Rrdscale { sync: "always".into() }]
    }
    /// A file every master file is a copy of (`--master-file`).
    fn master_file(&self) -> Option<&Path> {
        None
    }
    /// Whether every side gets its copy of the files before the first side
    /// runs (false: the workload makes its own).
    fn copies(&self) -> bool {
        true
    }
    /// Untimed work once the files are made, before the first side.
    fn before_sides(&mut self, _run: &Run) -> Result<(), BenchError> {
        Ok(())
    }
    /// Runs and measures one side: sets its metrics and pushes its checks.
    fn side(&self, run: &Run, side: &mut Side) -> Result<Self::SideOut, BenchError>;
    /// The report's parts that are the workload's own, and the checks
    /// across sides.
    fn report(&self, run: &Run, sides: &[DaemonSideResult], outs: Vec<Self::SideOut>) -> Report;
}

/// What the sides of a run share.
pub struct Run {
    pub common: DaemonCommon,
    pub schema: Schema,
    /// Files in the master directory.
    pub files: u64,
    pub file_bytes: u64,
    pub kinds: Vec<DaemonKind>,
    /// Each side's directories, in the order of `kinds`.
    pub dirs: Vec<SideDirs>,
    pub ws: Workspace,
    /// The rrdscale binary (our daemon).
    pub exe: PathBuf,
}

impl Run {
    /// Every side's files directory.
    pub fn files_dirs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.files.clone()).collect()
    }
}

/// One side while it runs: its place, its figures and its checks.
pub struct Side<'a> {
    /// The side's number (names its memory cgroup).
    pub k: usize,
    pub kind: &'a DaemonKind,
    pub dirs: &'a SideDirs,
    pub result: DaemonSideResult,
    pub checks: Vec<Check>,
}

impl<'a> Side<'a> {
    fn new(k: usize, kind: &'a DaemonKind, dirs: &'a SideDirs) -> Side<'a> {
        Side {
            k,
            kind,
            dirs,
            result: DaemonSideResult { label: kind.label(), kind: Some(kind.clone()), ..Default::default() },
            checks: Vec::new(),
        }
    }

    pub fn label(&self) -> &str {
        &self.result.label
    }

    pub fn set(&mut self, key: &str, v: f64) {
        self.result.set(key, v);
    }

    pub fn get(&self, key: &str) -> f64 {
        self.result.get(key)
    }

    /// Adds a check named after the side (`<label>: <what>`).
    pub fn check(&mut self, what: &str, ok: bool, detail: String) {
        self.checks.push(Check { name: format!("{}: {what}", self.result.label), ok, detail });
    }

    /// The side's daemon command: `-w write_interval_secs`, `--max-pending
    /// max_pending_values` (ours).
    pub fn spec(&self, run: &Run, write_interval_secs: u64, max_pending_values: u64) -> DaemonSpec {
        common::spec_for(
            self.kind,
            &run.common,
            &run.exe,
            &self.dirs.run,
            write_interval_secs,
            max_pending_values,
        )
    }

    /// Starts the side's daemon (in its memory cgroup with a budget), runs
    /// `measure` with it, stops it and records the cgroup's peak memory. An
    /// error of `measure` says whether the daemon died
    /// ([`DaemonProc::explain`]); the daemon is then killed.
    pub fn run_daemon<T>(
        &mut self,
        run: &Run,
        write_interval_secs: u64,
        max_pending_values: u64,
        measure: impl FnOnce(&mut DaemonProc, &mut Side<'a>) -> Result<T, BenchError>,
    ) -> Result<T, BenchError> {
        let cg = common::cgroup_for(&run.common, self.k)?;
        let spec = self.spec(run, write_interval_secs, max_pending_values);
        self.result.command_line = spec.command_line().join(" ");
        let (mut daemon, _) = DaemonProc::start(&spec, cg.as_ref().map(|g| g.path.as_path()))?;
        let v = match measure(&mut daemon, self) {
            Ok(v) => v,
            Err(e) => return Err(daemon.explain(e)),
        };
        daemon.stop(Duration::from_secs(120))?;
        self.result.memory = cg.as_ref().map(|g| g.usage());
        Ok(v)
    }
}

/// The report's parts a workload gives; [`Report::new`] fills the rest
/// from the run.
pub struct Report {
    pub columns: Vec<Column>,
    /// Parameters worth printing, in order.
    pub params: Vec<(&'static str, String)>,
    pub ratios: BTreeMap<String, f64>,
    /// Checks across sides (after every side's own).
    pub checks: Vec<Check>,
    pub notes: Vec<String>,
    pub tables: Vec<(String, Vec<String>, Vec<Vec<String>>)>,
    /// The files the report names (default: the run's).
    pub files: u64,
    /// The budget the report names (default: `--memory-budget`).
    pub memory_budget_bytes: Option<u64>,
}

impl Report {
    pub fn new(run: &Run, columns: Vec<Column>, params: Vec<(&'static str, String)>) -> Report {
        Report {
            columns,
            params,
            ratios: BTreeMap::new(),
            checks: Vec::new(),
            notes: Vec::new(),
            tables: Vec::new(),
            files: run.files,
            memory_budget_bytes: run.common.memory_budget,
        }
    }
}

/// Runs a daemon workload from start to report (see the module's docs).
pub fn run<W: DaemonWorkload>(
    w: &mut W,
    args: &[String],
    exe: &Path,
    out: &mut dyn Write,
) -> Result<(), BenchError> {
    w.check()?;
    let common = w.common().clone();
    let schema = Schema::parse(w.schema())?;
    let kinds = common::sides_with(&common, w.ours(exe))?;
    let ws = Workspace::new(&common, args)?;
    let files = w.files();
    let file_bytes =
        common::make_master_from(&schema, files, common.start_time, &ws.master(), w.master_file())?;
    let dirs: Vec<SideDirs> = kinds.iter().map(|k| common::side_dirs(&ws.base, k)).collect();
    if w.copies() {
        for (k, d) in kinds.iter().zip(&dirs) {
            common::copy_files(&ws.master(), &d.files, files, &k.label())?;
        }
        crate::host::syncfs(&ws.base)?;
    }
    let run = Run { common, schema, files, file_bytes, kinds, dirs, ws, exe: exe.to_path_buf() };
    w.before_sides(&run)?;
    let (mut sides, mut checks, mut outs) = (Vec::new(), Vec::new(), Vec::new());
    for (k, (kind, d)) in run.kinds.iter().zip(&run.dirs).enumerate() {
        let mut side = Side::new(k, kind, d);
        outs.push(w.side(&run, &mut side)?);
        checks.append(&mut side.checks);
        sides.push(side.result);
    }
    let rep = w.report(&run, &sides, outs);
    checks.extend(rep.checks);
    let results = DaemonResults {
        columns: rep.columns,
        sides,
        ratios: rep.ratios,
        checks,
        notes: rep.notes,
        tables: rep.tables,
        ..run.ws.results(
            &w.name(),
            rep.memory_budget_bytes,
            run.schema.clone(),
            run.file_bytes,
            rep.files,
            &rep.params,
        )
    };
    common::finish(results, &run.ws, run.common.record.json.as_deref(), out)
}

/// `ours_label / rrdcached` of each `(key, name, higher_is_better)` that
/// both sides have, by name.
pub fn ratios(
    sides: &[DaemonSideResult],
    ours_label: &str,
    keys: &[(&str, &str, bool)],
) -> BTreeMap<String, f64> {
    keys.iter()
        .filter_map(|&(key, name, better)| {
            Some((name.to_string(), common::ratio(sides, ours_label, key, better)?))
        })
        .collect()
}
