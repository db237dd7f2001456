//! The measuring process of one side: `rrdscale bench --internal-worker
//! SPEC` (SPEC is a JSON [`WorkerSpec`]). It moves itself into its memory
//! cgroup (if any) before touching a file, starts the side's tool (a pipe
//! child inherits the cgroup), then executes the steps, each when a line
//! arrives on its stdin (the parent runs the sides in lockstep), and reports
//! one JSON [`Event`] per line on stdout.
//!
//! Invariants: the update strings, paths and pipe lines of a step are built
//! before its clock starts; counters are those of the process that does the
//! I/O (this one, or the pipe child); every failed update or create is
//! counted and its first message kept, never dropped.
//!
//! Deliberately absent: judging results, and any output but events.

use std::ffi::CString;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use rrd_engine::batch::{BatchUpdater, UpdateRequest};
use rrd_engine::create::CreateOptions;
use rrd_engine::mapped::MappedFiles;
use rrd_engine::pagecache;
use rrd_engine::update::{update_file, UpdateOptions};
use serde::{Deserialize, Serialize};

use crate::cgroup::MemoryCgroup;
use crate::librrd::Librrd;
use crate::procstat::{Counters, Meter};
use crate::schema::Schema;
use crate::side::{Mode, Side};
use crate::workload::{file_dirs, file_path, Step};
use crate::BenchError;

/// Everything a worker needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerSpec {
    pub side: Side,
    /// The side's copy of the files.
    pub dir: PathBuf,
    pub schema: Schema,
    pub steps: Vec<Step>,
    /// The cgroup to enter first (created by the parent).
    pub cgroup: Option<PathBuf>,
    /// Updates prefetched together (batch mode).
    pub chunk: usize,
    /// Files kept open (batch mode).
    pub max_open: usize,
    /// The rrdscale binary (pipe mode runs `rrdscale -`).
    pub rrdscale_exe: PathBuf,
    /// rrdscale's `librrd.so.8` (librrd.so.8 mode loads it by this path).
    #[serde(default)]
    pub rrdscale_librrd: PathBuf,
}

/// What a worker reports, one JSON object per line.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event")]
pub enum Event {
    Started {
        pid: u32,
        measured_pid: u32,
        version: String,
    },
    Progress {
        step: usize,
        done: u64,
    },
    Created {
        step: usize,
        round: usize,
        count: u64,
        errors: u64,
        first_error: Option<String>,
        counters: Counters,
    },
    Evicted {
        step: usize,
        count: u64,
        secs: f64,
    },
    Passed {
        step: usize,
        id: usize,
        updates: u64,
        errors: u64,
        first_error: Option<String>,
        counters: Counters,
    },
    Finished,
}

/// Failures of one step: how many, and the first message.
#[derive(Default)]
struct Failures {
    count: u64,
    first: Option<String>,
}

impl Failures {
    fn record(&mut self, msg: impl Into<String>) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(msg.into());
        }
    }

    /// Records what an update call reported: an error, or an argument the
    /// update rejected.
    fn record_update(&mut self, outcome: rrd_engine::Result<rrd_engine::update::UpdateReport>) {
        match outcome {
            Ok(rep) => {
                if let Some(e) = rep.error {
                    self.record(e.to_string());
                }
            }
            Err(e) => self.record(e.to_string()),
        }
    }
}

/// A step's work, prepared before the clock starts.
enum Prepared {
    /// rrdscale's library: update requests.
    Requests(Vec<UpdateRequest>),
    /// A library create of each path, with this start time.
    Creates(Vec<PathBuf>, i64),
    /// Pipe commands, newline included.
    Lines(Vec<String>),
    /// librrd updates: path and argument.
    Calls(Vec<(CString, CString)>),
}

/// A tool that creates and updates files.
trait Runner {
    /// The process doing the I/O.
    fn measured_pid(&self) -> u32;
    fn version(&self) -> String;
    fn prepare_updates(&self, jobs: Vec<UpdateRequest>) -> Result<Prepared, BenchError>;
    /// By default the runner creates the files itself in [`Runner::run`]
    /// (through the library it links), from the paths and start time.
    fn prepare_creates(
        &self,
        paths: Vec<PathBuf>,
        start: i64,
        _schema: &Schema,
    ) -> Result<Prepared, BenchError> {
        Ok(Prepared::Creates(paths, start))
    }
    /// Runs prepared updates or creates, calling `progress(done)` now and then.
    fn run(&mut self, work: &Prepared, failures: &mut Failures, progress: &mut dyn FnMut(u64));
    /// [`Runner::run`], measured: the counters of the process doing the I/O.
    fn run_metered(
        &mut self,
        work: &Prepared,
        failures: &mut Failures,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Counters, BenchError> {
        let meter =
            Meter::start(self.measured_pid()).map_err(|e| BenchError::io("reading /proc counters", e))?;
        self.run(work, failures, progress);
        meter.stop().map_err(|e| BenchError::io("reading /proc counters", e))
    }
    /// Called before the files are evicted from the page cache: a runner
    /// holding mappings drops their page-table entries, since
    /// `POSIX_FADV_DONTNEED` leaves mapped pages in place.
    fn before_evict(&mut self) {}
}

const PROGRESS_EVERY: usize = 1024;

struct RrdscaleLib {
    batch: Option<BatchUpdater>,
    /// Mapped mode (when set, `batch` is `None`).
    mapped: Option<MappedFiles>,
    chunk: usize,
    step_secs: u64,
    defs: Vec<String>,
}

impl Runner for RrdscaleLib {
    fn measured_pid(&self) -> u32 {
        std::process::id()
    }
    fn version(&self) -> String {
        format!("rrdscale {}", env!("CARGO_PKG_VERSION"))
    }
    fn prepare_updates(&self, jobs: Vec<UpdateRequest>) -> Result<Prepared, BenchError> {
        Ok(Prepared::Requests(jobs))
    }
    fn run(&mut self, work: &Prepared, failures: &mut Failures, progress: &mut dyn FnMut(u64)) {
        let reqs = match work {
            Prepared::Requests(reqs) => reqs,
            Prepared::Creates(paths, start) => {
                let opts = CreateOptions {
                    start: Some(*start),
                    step_secs: Some(self.step_secs),
                    ..Default::default()
                };
                // Durable in groups (one commit per full group and one at
                // the end, inside the timed step), as a library user who
                // creates many files would.
                let mut group = rrd_engine::newfile::NewFiles::new();
                for (i, p) in paths.iter().enumerate() {
                    if let Err(e) = rrd_engine::create::create_in(&mut group, p, &opts, &self.defs, 0) {
                        failures.record(e.to_string());
                    }
                    if group.is_full() || i + 1 == paths.len() {
                        for r in group.commit() {
                            if let Err(e) = r {
                                failures.record(e.to_string());
                            }
                        }
                    }
                    if (i + 1) % PROGRESS_EVERY == 0 {
                        progress(i as u64 + 1);
                    }
                }
                return;
            }
            _ => unreachable!("rrdscale's library runs requests and creates"),
        };
        // Batch and mapped: chunks of requests, each prefetched (within the
        // memory-bounded window: prefetch again where it ended) then applied.
        let mut windowed =
            |prefetch: &mut dyn FnMut(&[&UpdateRequest]) -> usize,
             update: &mut dyn FnMut(&UpdateRequest) -> rrd_engine::Result<_>| {
                let mut done = 0u64;
                for chunk in reqs.chunks(self.chunk.max(1)) {
                    let refs: Vec<&UpdateRequest> = chunk.iter().collect();
                    let mut covered = 0;
                    for (i, r) in chunk.iter().enumerate() {
                        if i == covered {
                            covered += prefetch(&refs[i..]).max(1);
                        }
                        failures.record_update(update(r));
                    }
                    done += chunk.len() as u64;
                    progress(done);
                }
            };
        if let Some(files) = &mut self.mapped {
            let files = std::cell::RefCell::new(files);
            return windowed(&mut |refs| files.borrow_mut().prefetch(refs), &mut |r| {
                files.borrow_mut().update(&r.path, &r.args, &r.opts, false)
            });
        }
        match &mut self.batch {
            // One call per request, progress every PROGRESS_EVERY.
            None => {
                for (i, r) in reqs.iter().enumerate() {
                    failures.record_update(update_file(&r.path, &r.args, &r.opts, false));
                    if (i + 1) % PROGRESS_EVERY == 0 {
                        progress(i as u64 + 1);
                    }
                }
            }
            Some(updater) => {
                let updater = std::cell::RefCell::new(updater);
                windowed(&mut |refs| updater.borrow_mut().prefetch(refs), &mut |r| {
                    updater.borrow_mut().update(r, false)
                })
            }
        }
    }
    fn before_evict(&mut self) {
        if let Some(files) = &self.mapped {
            files.unmap_pages();
        }
    }
}

struct LibrrdRunner {
    lib: Librrd,
    step_secs: u64,
    defs: Vec<String>,
}

fn c_path(p: &Path) -> Result<CString, BenchError> {
    CString::new(p.to_string_lossy().as_bytes())
        .map_err(|_| BenchError::Invalid(format!("the path {} contains a NUL byte", p.display())))
}

impl Runner for LibrrdRunner {
    fn measured_pid(&self) -> u32 {
        std::process::id()
    }
    fn version(&self) -> String {
        format!("librrd {}", self.lib.version())
    }
    fn prepare_updates(&self, jobs: Vec<UpdateRequest>) -> Result<Prepared, BenchError> {
        let mut calls = Vec::with_capacity(jobs.len());
        for j in jobs {
            let arg = CString::new(j.args.join(" "))
                .map_err(|_| BenchError::Invalid("an update argument contains a NUL byte".into()))?;
            calls.push((c_path(&j.path)?, arg));
        }
        Ok(Prepared::Calls(calls))
    }
    fn run(&mut self, work: &Prepared, failures: &mut Failures, progress: &mut dyn FnMut(u64)) {
        match work {
            Prepared::Calls(calls) => {
                for (i, (path, arg)) in calls.iter().enumerate() {
                    if let Err(e) = self.lib.update(path, &[arg.as_c_str()]) {
                        failures.record(format!("{}: {e}", path.to_string_lossy()));
                    }
                    if (i + 1) % PROGRESS_EVERY == 0 {
                        progress(i as u64 + 1);
                    }
                }
            }
            Prepared::Creates(paths, start) => {
                for (i, p) in paths.iter().enumerate() {
                    if let Err(e) = self.lib.create(p, self.step_secs, *start, &self.defs) {
                        failures.record(format!("{}: {e}", p.display()));
                    }
                    if (i + 1) % PROGRESS_EVERY == 0 {
                        progress(i as u64 + 1);
                    }
                }
            }
            _ => unreachable!("librrd runs calls and creates"),
        }
    }
}

/// `rrdscale -` or `rrdtool -`, fed lines by a writer thread while this
/// thread reads the answers, so the tool always has lines waiting (which
/// rrdscale's pipe mode looks ahead into). One process for the whole run,
/// or (`per_cycle`, Cacti's poller) a fresh one per step, whose start and
/// exit are inside the step's clock and counters.
struct PipeRunner {
    program: PathBuf,
    per_cycle: bool,
    /// The running tool (always, unless `per_cycle`).
    child: Option<PipeChild>,
    version: String,
}

struct PipeChild {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl PipeChild {
    fn spawn(program: &Path) -> Result<PipeChild, BenchError> {
        let mut child = Command::new(program)
            .arg("-")
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| BenchError::io(format!("starting '{} -'", program.display()), e))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("piped stdout"));
        Ok(PipeChild { child, stdin, stdout })
    }

    /// Writes `lines` (from a thread) and reads one answer per line.
    fn feed(&mut self, lines: &[String], failures: &mut Failures, progress: &mut dyn FnMut(u64)) {
        let Some(stdin) = self.stdin.as_mut() else {
            failures.record("the pipe to the tool is closed");
            return;
        };
        let stdout = &mut self.stdout;
        std::thread::scope(|s| {
            let writer = s.spawn(move || -> std::io::Result<()> {
                let mut w = BufWriter::with_capacity(1 << 16, stdin);
                for l in lines {
                    w.write_all(l.as_bytes())?;
                }
                w.flush()
            });
            let mut answered = 0usize;
            let mut line = String::new();
            while answered < lines.len() {
                line.clear();
                match stdout.read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        failures
                            .record(format!("the tool stopped after {answered} of {} commands", lines.len()));
                        break;
                    }
                    Ok(_) => {}
                }
                if line.starts_with("OK") {
                    answered += 1;
                } else if let Some(msg) = line.strip_prefix("ERROR") {
                    answered += 1;
                    failures.record(msg.trim_start_matches(':').trim().to_string());
                } else {
                    // Output of a command (none for update/create): not an answer.
                    continue;
                }
                if answered.is_multiple_of(PROGRESS_EVERY) {
                    progress(answered as u64);
                }
            }
            match writer.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.record(format!("writing to the tool: {e}")),
                Err(_) => failures.record("the writer thread panicked"),
            }
        });
    }

    /// Closes the tool's input and waits for it to exit, leaving it a
    /// zombie (`waitid(WNOWAIT)`) so that its final counters can still be
    /// read from /proc; [`PipeChild::reap`] then collects it.
    fn end_without_reaping(&mut self) -> std::io::Result<()> {
        drop(self.stdin.take());
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        use rustix::process::{waitid, WaitId, WaitIdOptions};
        waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT)?;
        Ok(())
    }

    fn reap(mut self) -> std::io::Result<std::process::ExitStatus> {
        drop(self.stdin.take());
        self.child.wait()
    }
}

impl PipeRunner {
    fn spawn(program: &Path, version: String, per_cycle: bool) -> Result<PipeRunner, BenchError> {
        let child = if per_cycle { None } else { Some(PipeChild::spawn(program)?) };
        Ok(PipeRunner { program: program.to_path_buf(), per_cycle, child, version })
    }
}

fn pipe_word(p: &Path) -> Result<String, BenchError> {
    let s = p.to_string_lossy().into_owned();
    if s.chars().any(|c| c.is_whitespace() || c == '"' || c == '\'') {
        return Err(BenchError::Invalid(format!(
            "pipe mode needs a directory without spaces or quotes, not {}",
            p.display()
        )));
    }
    Ok(s)
}

impl Runner for PipeRunner {
    fn measured_pid(&self) -> u32 {
        // Per cycle, each step measures its own fresh child.
        self.child.as_ref().map_or(std::process::id(), |c| c.child.id())
    }
    fn version(&self) -> String {
        self.version.clone()
    }
    fn prepare_updates(&self, jobs: Vec<UpdateRequest>) -> Result<Prepared, BenchError> {
        let mut lines = Vec::with_capacity(jobs.len());
        for j in jobs {
            lines.push(format!("update {} {}\n", pipe_word(&j.path)?, j.args.join(" ")));
        }
        Ok(Prepared::Lines(lines))
    }
    fn prepare_creates(
        &self,
        paths: Vec<PathBuf>,
        start: i64,
        schema: &Schema,
    ) -> Result<Prepared, BenchError> {
        let tail = format!("-b {start} -s {} {}", schema.step_secs, schema.defs.join(" "));
        let mut lines = Vec::with_capacity(paths.len());
        for p in paths {
            lines.push(format!("create {} {tail}\n", pipe_word(&p)?));
        }
        Ok(Prepared::Lines(lines))
    }
    fn run(&mut self, work: &Prepared, failures: &mut Failures, progress: &mut dyn FnMut(u64)) {
        let Prepared::Lines(lines) = work else { unreachable!("pipes run lines") };
        match self.child.as_mut() {
            Some(child) => child.feed(lines, failures, progress),
            None => failures.record("the pipe to the tool is closed"),
        }
    }
    fn run_metered(
        &mut self,
        work: &Prepared,
        failures: &mut Failures,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Counters, BenchError> {
        if !self.per_cycle {
            let meter =
                Meter::start(self.measured_pid()).map_err(|e| BenchError::io("reading /proc counters", e))?;
            self.run(work, failures, progress);
            return meter.stop().map_err(|e| BenchError::io("reading /proc counters", e));
        }
        let Prepared::Lines(lines) = work else { unreachable!("pipes run lines") };
        // The clock starts before the process does: Cacti pays the start.
        let started = Instant::now();
        let mut child = PipeChild::spawn(&self.program)?;
        let meter = Meter::of_new_process(child.child.id(), started);
        child.feed(lines, failures, progress);
        let ended = child.end_without_reaping();
        let counters = ended
            .and_then(|()| meter.stop())
            .map_err(|e| BenchError::io("reading the finished tool's /proc counters", e));
        match child.reap() {
            Ok(status) if !status.success() => failures.record(format!("the tool exited with {status}")),
            Ok(_) => {}
            Err(e) => failures.record(format!("waiting for the tool: {e}")),
        }
        counters
    }
}

impl Drop for PipeRunner {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            let _ = child.reap();
        }
    }
}

/// Drops every cached page of files `0..count` (fdatasync first: dirty
/// pages are not dropped).
pub fn evict_files(dir: &Path, count: u64) -> Result<(), BenchError> {
    for i in 0..count {
        let p = file_path(dir, i);
        let f = File::open(&p).map_err(|e| BenchError::io(format!("opening {}", p.display()), e))?;
        pagecache::evict(&f).map_err(|e| BenchError::io(format!("evicting {}", p.display()), e))?;
    }
    Ok(())
}

fn emit(out: &mut dyn Write, event: &Event) -> Result<(), BenchError> {
    let line =
        serde_json::to_string(event).map_err(|e| BenchError::Worker(format!("encoding an event: {e}")))?;
    writeln!(out, "{line}").and_then(|_| out.flush()).map_err(|e| BenchError::io("writing an event", e))
}

fn make_runner(spec: &WorkerSpec) -> Result<Box<dyn Runner>, BenchError> {
    let schema = &spec.schema;
    Ok(match spec.side {
        Side::Rrdscale(Mode::Direct) | Side::Rrdscale(Mode::Batch) | Side::Rrdscale(Mode::Mapped) => {
            Box::new(RrdscaleLib {
                batch: (spec.side == Side::Rrdscale(Mode::Batch)).then(|| {
                    // The worker is in its cgroup already: the bound sees its limit.
                    let mut updater = BatchUpdater::new(spec.max_open);
                    updater.bound_prefetch_by_memory();
                    updater
                }),
                mapped: (spec.side == Side::Rrdscale(Mode::Mapped)).then(|| {
                    let mut files = MappedFiles::default();
                    // Prefetch within the same memory-bounded window as batch.
                    files.bound_prefetch_by_memory();
                    // Kept headers (about 6 KB per perftest file of anonymous
                    // memory) only when there is no memory budget: under one,
                    // that memory would come out of the page cache.
                    files.keep_headers = spec.cgroup.is_none();
                    files
                }),
                chunk: spec.chunk,
                step_secs: schema.step_secs,
                defs: schema.defs.clone(),
            })
        }
        Side::Rrdscale(Mode::Pipe) => Box::new(PipeRunner::spawn(
            &spec.rrdscale_exe,
            format!("rrdscale {} (pipe)", env!("CARGO_PKG_VERSION")),
            false,
        )?),
        Side::Rrdscale(Mode::PipeCycle) => Box::new(PipeRunner::spawn(
            &spec.rrdscale_exe,
            format!("rrdscale {} (pipe, one process per pass)", env!("CARGO_PKG_VERSION")),
            true,
        )?),
        Side::Rrdscale(Mode::Librrd) => Box::new(LibrrdRunner {
            lib: Librrd::load_path(&spec.rrdscale_librrd)?,
            step_secs: schema.step_secs,
            defs: schema.defs.clone(),
        }),
        Side::Librrd => Box::new(LibrrdRunner {
            lib: Librrd::load()?,
            step_secs: schema.step_secs,
            defs: schema.defs.clone(),
        }),
        Side::RrdtoolPipe => {
            Box::new(PipeRunner::spawn(Path::new("rrdtool"), "rrdtool 1.7.2 (pipe)".into(), false)?)
        }
        Side::RrdtoolPipeCycle => Box::new(PipeRunner::spawn(
            Path::new("rrdtool"),
            "rrdtool 1.7.2 (pipe, one process per pass)".into(),
            true,
        )?),
    })
}

/// Descriptors a worker needs besides the batch updater's open files.
const SPARE_FDS: u64 = 256;

/// Raises this process's descriptor limit so the batch updater can keep
/// `max_open` files open (raising the hard limit needs root).
fn ensure_fd_limit(max_open: usize) -> Result<(), BenchError> {
    let need = max_open as u64 + SPARE_FDS;
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    // None is RLIM_INFINITY.
    if lim.current.is_none_or(|cur| cur >= need) {
        return Ok(());
    }
    let wanted = Rlimit { current: Some(need), maximum: lim.maximum.map(|max| max.max(need)) };
    if let Err(e) = setrlimit(Resource::Nofile, wanted) {
        return Err(BenchError::Invalid(format!(
            "--max-open {max_open} needs {need} file descriptors, but the limit is {} and cannot be raised ({})",
            lim.maximum.map_or("unlimited".to_string(), |m| m.to_string()),
            std::io::Error::from(e)
        )));
    }
    Ok(())
}

/// Runs a worker: `spec` is a JSON [`WorkerSpec`].
pub fn main(spec: &str, out: &mut dyn Write) -> Result<(), BenchError> {
    let spec: WorkerSpec = serde_json::from_str(spec)
        .map_err(|e| BenchError::Worker(format!("the worker spec is not valid: {e}")))?;
    if let Some(cg) = &spec.cgroup {
        MemoryCgroup::enter(cg, std::process::id())?;
    }
    if spec.side == Side::Rrdscale(Mode::Batch) {
        ensure_fd_limit(spec.max_open)?;
    }
    let schema = spec.schema.clone();
    // One runner for every step: files stay open across passes in batch
    // and pipe mode, as they would in a long-running user.
    let mut runner = make_runner(&spec)?;
    emit(
        out,
        &Event::Started {
            pid: std::process::id(),
            measured_pid: runner.measured_pid(),
            version: runner.version(),
        },
    )?;
    let mut go = String::new();
    let stdin = std::io::stdin();
    for (index, step) in spec.steps.iter().enumerate() {
        // Lockstep: the parent runs step i on every side before step i+1,
        // so a change in the machine's background load hits all sides alike.
        go.clear();
        if stdin.lock().read_line(&mut go).map_err(|e| BenchError::io("reading the go-ahead", e))? == 0 {
            return Err(BenchError::Worker(
                "the parent closed the worker's input before the last step".into(),
            ));
        }
        let r = runner.as_mut();
        let mut failures = Failures::default();
        match step {
            Step::CreateBench { round, count, start_time } => {
                let scratch = spec.dir.join(".create-bench");
                for d in file_dirs(&scratch, *count) {
                    std::fs::create_dir_all(&d)
                        .map_err(|e| BenchError::io(format!("creating {}", d.display()), e))?;
                }
                let paths: Vec<PathBuf> = (0..*count).map(|i| file_path(&scratch, i)).collect();
                let work = r.prepare_creates(paths, *start_time, &schema)?;
                let counters = r.run_metered(&work, &mut failures, &mut |done| {
                    let _ = emit(out, &Event::Progress { step: index, done });
                })?;
                std::fs::remove_dir_all(&scratch)
                    .map_err(|e| BenchError::io(format!("removing {}", scratch.display()), e))?;
                emit(
                    out,
                    &Event::Created {
                        step: index,
                        round: *round,
                        count: *count,
                        errors: failures.count,
                        first_error: failures.first,
                        counters,
                    },
                )?;
            }
            Step::Evict { count } => {
                let t = Instant::now();
                r.before_evict();
                evict_files(&spec.dir, *count)?;
                emit(out, &Event::Evicted { step: index, count: *count, secs: t.elapsed().as_secs_f64() })?;
            }
            Step::Pass(p) => {
                let mut jobs = Vec::with_capacity(p.files() as usize);
                for s in &p.segments {
                    for f in s.first..s.end {
                        jobs.push(UpdateRequest {
                            path: file_path(&spec.dir, f),
                            args: vec![schema.update_arg(f, s.time)],
                            opts: UpdateOptions::default(),
                        });
                    }
                }
                let updates = jobs.len() as u64;
                let work = r.prepare_updates(jobs)?;
                let counters = r.run_metered(&work, &mut failures, &mut |done| {
                    let _ = emit(out, &Event::Progress { step: index, done });
                })?;
                emit(
                    out,
                    &Event::Passed {
                        step: index,
                        id: p.id,
                        updates,
                        errors: failures.count,
                        first_error: failures.first,
                        counters,
                    },
                )?;
            }
        }
    }
    drop(runner);
    emit(out, &Event::Finished)
}
