//! `rrdscale -`: one command per line on standard input, each answered by
//! its output and an `OK u:… s:… r:…` or `ERROR: …` line, as `rrdtool -`
//! does. Commands run in-process, so a long stream costs no process starts.
//!
//! Threads, because a poller (Cacti starts `rrdtool -` once per poll cycle
//! and feeds one `update` line per file, each file once) is bound by
//! per-file work on one core, and files are independent:
//! - the **reader** reads and parses lines; an update line goes to the
//!   **worker** of its file (sharded by device and inode, so every name of
//!   one file reaches the same worker and its lines stay in order; a path's
//!   first line opens the file here and the descriptor goes with it,
//!   `Router`); any
//!   other line is a **barrier**: the reader waits until every earlier
//!   update is applied, then runs it itself (it may read or replace those
//!   files; `restore -` reads from the same input);
//! - each worker applies its updates in the order received, through its
//!   own [`BatchUpdater`] (files kept open, bounded; readahead off; locks
//!   as rrdtool takes them); while its updates read from the disk it
//!   prefetches the pages of the updates it already holds (`PrefetchGate`);
//! - the calling thread **writes** the answers in input order (each line
//!   has a sequence number), and flushes only when no further answer is
//!   waiting: one `write` per batch for a stream, at once for a client
//!   that waits for each answer.
//!
//! Only lines already received are looked at, so an interactive client
//! that waits for each answer before sending the next line is never
//! blocked. `RRDSCALE_PIPE_THREADS` sets the number of workers (default:
//! the cores, at most 8).
//!
//! `rrdscale - DIR` first changes to directory DIR (failing: `ERROR: chdir
//! DIR <why>` on standard error, exit status errno, as rrdtool). Pipe mode
//! has rrdtool's remote commands too: `cd DIR`, `mkdir DIR` (mode 0777
//! less the umask), `pwd` (getcwd) and `ls` (the directory's entries in
//! readdir order, `. ` and `..` included: `d NAME` for a directory, `- NAME`
//! for a regular file named `*.rrd` or `*.RRD` with more than the suffix,
//! symbolic links followed, anything else left out), and `quit`; each with
//! rrdtool's `invalid parameter count for CMD` and error lines.
//!
//! Not a sandbox, as rrdtool 1.7.2 is not: its manual says it chroots into
//! DIR when run as root, but the 1.7.2 binary never does (its configure
//! script checks for `getuid`, its code for `HAVE_GETEUID`), and the
//! root-but-not-chroot refusals of `cd`/`mkdir` are compiled out where
//! chroot exists. So DIR is only where the session starts; `cd /` works.
//! Run a remote-mode server as a user that may only reach its RRDs.
//!
//! Creates share their syncs: a `create` line is written at once (to a
//! temporary name) and its answer waits for its group to be made durable
//! ([`rrd_engine::newfile`]). The group is committed, and its `OK` lines
//! printed in order, as soon as no further line is ready (no complete line
//! buffered and nothing readable on standard input), or when it holds 256
//! files or 64 MiB, or 100 ms after its first create, or before any other
//! command (which may read the new files). So a person typing, or a
//! client that waits for each answer, gets every `OK` at once, while a
//! poller that writes many lines ahead shares one sync among them; an `OK`
//! always means the file is durable under its name.
//!
//! `RRDSCALE_ACCESS=mmap` selects mapped access instead
//! ([`rrd_engine::mapped::MappedFiles`], headers kept): files stay mapped
//! between commands, with no descriptor and **no fcntl lock**, so it is for
//! a stream that is the only writer of its files; the pages of the buffered
//! update lines are prefetched as in the default mode (`MADV_WILLNEED` on the
//! mappings, same window). The default, `pread`, takes rrdtool's locks.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use rrd_client::ctext::strerror;
use rrd_engine::batch::{open_for_update, BatchUpdater, UpdateRequest};
use rrd_engine::mapped::MappedFiles;
use rrd_engine::newfile::NewFiles;
use rrd_engine::root::Root;

mod descriptors;
use descriptors::Budget;

/// How pipe mode reads and writes files (`RRDSCALE_ACCESS`).
enum Access {
    /// pread/pwrite through open files, rrdtool's locks, prefetch (default).
    Pread(BatchUpdater),
    /// Kept mappings, no locks, prefetch (`MADV_WILLNEED`).
    Mmap(MappedFiles),
}

impl Access {
    /// The access `RRDSCALE_ACCESS` names, for one of the budget's
    /// workers: each gets its share of the open files and of the prefetch
    /// window.
    fn from_env(budget: Budget) -> Result<Access> {
        let workers = budget.workers;
        match std::env::var("RRDSCALE_ACCESS").as_deref() {
            Err(_) | Ok("") | Ok("pread") => {
                let mut updater = BatchUpdater::new(budget.kept_per_worker);
                // A poller's session touches each file once.
                updater.keep_from_second_update = true;
                // Update reads leave the access time alone (compatibility.md).
                updater.files.no_atime = true;
                updater.bound_prefetch_by_memory();
                updater.max_prefetch_pages = (updater.max_prefetch_pages / workers as u64).max(64);
                Ok(Access::Pread(updater))
            }
            Ok("mmap") => {
                let mut files = MappedFiles::new(
                    (rrd_engine::mapped::DEFAULT_MAX_FILES / workers).max(1),
                    rrd_engine::mapped::DEFAULT_MAX_BYTES / workers as u64,
                );
                files.keep_headers = true;
                files.bound_prefetch_by_memory();
                files.max_prefetch_pages = (files.max_prefetch_pages / workers as u64).max(64);
                Ok(Access::Mmap(files))
            }
            Ok(other) => anyhow::bail!("RRDSCALE_ACCESS must be 'pread' or 'mmap', not '{other}'"),
        }
    }
}

/// Update lines prefetched together.
const LOOKAHEAD_MAX: usize = 256;

/// Splits a line into arguments: whitespace separates, single or double
/// quotes group (without the quotes).
pub fn split_line(line: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut in_arg = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_arg = true;
            }
            None if c.is_whitespace() => {
                if in_arg {
                    args.push(std::mem::take(&mut cur));
                    in_arg = false;
                }
            }
            None => {
                cur.push(c);
                in_arg = true;
            }
        }
    }
    if in_arg {
        args.push(cur);
    }
    args
}

fn cpu_times() -> (f64, f64) {
    rrd_sys::rusage::cpu_times()
}

/// An update line that can go through the batch path: not one for a
/// daemon (`update --daemon`, or `update` with `RRDCACHED_ADDRESS` set;
/// `updatev` never uses a daemon).
fn batchable(args: &[String]) -> Option<(UpdateRequest, bool)> {
    let verbose = match args.first().map(String::as_str) {
        Some("update") => false,
        Some("updatev") => true,
        _ => return None,
    };
    if !verbose && rrd_client::chosen(None).is_some() {
        return None;
    }
    match super::update::parse(&args[1..], verbose) {
        Ok(Some((req, None))) => Some((req, verbose)),
        _ => None,
    }
}

/// `rrdscale - [DIR]` (`args` after the `-`): changes to DIR, then runs
/// the commands on standard input.
pub fn run_remote(args: &[String], out: &mut dyn Write) -> Result<()> {
    match args {
        [] => {}
        // rrdtool treats "-" with more words as an unknown command.
        [_, _, ..] => bail!("unknown function '-'"),
        [dir] if dir.is_empty() => {}
        [dir] => {
            if let Err(e) = std::env::set_current_dir(dir) {
                let code = e.raw_os_error().unwrap_or(1);
                eprintln!("ERROR: chdir {dir} {}", strerror(code));
                std::process::exit(code);
            }
        }
    }
    run(&mut BufReader::with_capacity(1 << 20, std::io::stdin()), out)
}

/// What a remote-only command line did.
enum Remote {
    /// Not a remote command: run it as any other.
    No,
    /// `quit`: stop reading commands.
    Quit,
    /// `cd` succeeded: paths now resolve elsewhere.
    ChangedDirectory,
    /// Done (or failed), with this result.
    Done(Result<()>),
}

/// rrdtool's remote commands: `quit`, `cd`, `pwd`, `mkdir`, `ls`.
fn remote(args: &[String], out: &mut dyn Write) -> Remote {
    let name = args[0].as_str();
    if !matches!(name, "quit" | "cd" | "pwd" | "mkdir" | "ls") {
        return Remote::No;
    }
    let want = if matches!(name, "cd" | "mkdir") { 2 } else { 1 };
    if args.len() != want {
        return Remote::Done(Err(anyhow!("invalid parameter count for {name}")));
    }
    let os = |e: std::io::Error| strerror(e.raw_os_error().unwrap_or(libc::EIO));
    match name {
        "quit" => Remote::Quit,
        "cd" => match std::env::set_current_dir(&args[1]) {
            Ok(()) => Remote::ChangedDirectory,
            Err(e) => Remote::Done(Err(anyhow!("chdir {} {}", args[1], os(e)))),
        },
        "pwd" => Remote::Done(match std::env::current_dir() {
            Ok(cwd) => {
                let mut line = cwd.into_os_string().into_vec();
                line.push(b'\n');
                out.write_all(&line).map_err(anyhow::Error::from)
            }
            Err(e) => Err(anyhow!("getcwd {}", os(e))),
        }),
        "mkdir" => Remote::Done(
            std::fs::DirBuilder::new()
                .mode(0o777)
                .create(&args[1])
                .map_err(|e| anyhow!("mkdir {}: {}", args[1], os(e))),
        ),
        _ => Remote::Done(list_directory().and_then(|text| Ok(out.write_all(&text)?))),
    }
}

/// `ls`: the current directory as rrdtool's remote `ls` prints it.
fn list_directory() -> Result<Vec<u8>> {
    // The directory's own order (getdents64, as readdir), `.` and `..`
    // included, not std's read_dir (which skips those two): the order and
    // `.`/`..` are part of the output.
    let opened = std::fs::File::open(".").and_then(|f| rustix::fs::Dir::read_from(&f).map_err(Into::into));
    let dir = match opened {
        Ok(dir) => dir,
        Err(e) => bail!("opendir .: {}", strerror(e.raw_os_error().unwrap_or(libc::EIO))),
    };
    let mut text = Vec::new();
    for entry in dir {
        let Ok(entry) = entry else { break };
        let name = entry.file_name().to_bytes().to_vec();
        // stat, not lstat: links count as what they point to; an entry
        // that cannot be stat'ed is left out.
        let Ok(meta) = std::fs::metadata(std::ffi::OsStr::from_bytes(&name)) else { continue };
        if meta.is_dir() {
            text.extend_from_slice(b"d ");
        } else if meta.is_file() && name.len() > 4 && (name.ends_with(b".rrd") || name.ends_with(b".RRD")) {
            text.extend_from_slice(b"- ");
        } else {
            continue;
        }
        text.extend_from_slice(&name);
        text.push(b'\n');
    }
    Ok(text)
}

/// Longest a create's answer waits for the group's sync while more input
/// keeps arriving.
const CREATE_GROUP_WAIT: Duration = Duration::from_millis(100);

/// Whether another line is already here or on its way: a complete line in
/// the buffer, or bytes readable on the descriptor now (no waiting).
fn more_input<R: Read + AsFd>(input: &BufReader<R>) -> bool {
    if input.buffer().contains(&b'\n') {
        return true;
    }
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let fd = input.get_ref().as_fd();
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })).is_ok_and(|n| n > 0)
}

/// The answer to one command line: what the command printed, then `OK …`
/// or `ERROR: …`. `seq` is the line's place in the input: the writer
/// prints answers in that order whatever order they arrive in.
struct Reply {
    seq: u64,
    body: Vec<u8>,
    error: Option<String>,
}

impl Reply {
    fn of(seq: u64, body: Vec<u8>, result: Result<()>) -> Reply {
        Reply { seq, body, error: result.err().map(|e| super::error_message(&e)) }
    }
}

/// Answers travel to the writer in batches (one wake-up per batch).
type Replies = mpsc::Sender<Vec<Reply>>;

/// Creates waiting for their group's sync, and the answers held back
/// behind them (answers keep the order of the lines).
struct HeldCreates {
    group: NewFiles,
    answers: Vec<Held>,
    since: Option<Instant>,
}

enum Held {
    /// A staged create (index in the group, line number): OK once its
    /// group is durable, or its error.
    Staged(usize, u64),
    /// A create refused before anything was written.
    Failed(String, u64),
}

impl HeldCreates {
    fn new() -> HeldCreates {
        let mut group = NewFiles::new();
        group.remove_temps_on_signal(true);
        HeldCreates { group, answers: Vec::new(), since: None }
    }

    /// Makes the staged files durable, then sends the held answers. The
    /// caller has waited for the updates before them: a commit renames
    /// files, which must not happen under an earlier update of that name.
    fn answer(&mut self, replies: &Replies) -> Result<()> {
        if self.answers.is_empty() {
            return Ok(());
        }
        let mut results: Vec<Option<rrd_engine::Result<()>>> =
            self.group.commit().into_iter().map(Some).collect();
        let mut batch = Vec::with_capacity(self.answers.len());
        for held in self.answers.drain(..) {
            batch.push(match held {
                Held::Staged(i, seq) => {
                    let result = results[i].take().expect("one answer per staged file");
                    Reply::of(seq, Vec::new(), result.map_err(anyhow::Error::from))
                }
                Held::Failed(msg, seq) => Reply { seq, body: Vec::new(), error: Some(msg) },
            });
        }
        self.since = None;
        replies.send(batch).map_err(|_| anyhow!("the output of pipe mode is closed"))
    }
}

/// The status line's times: CPU of the whole process (every thread, as
/// `getrusage(RUSAGE_SELF)` counts) and elapsed, sampled at most once per
/// millisecond (the line shows hundredths of a second).
struct StatusClock {
    start: Instant,
    sampled: Option<(Instant, f64, f64)>,
}

impl StatusClock {
    const RESAMPLE: Duration = Duration::from_millis(1);

    fn line(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        let now = Instant::now();
        let (u, s) = match self.sampled {
            Some((at, u, s)) if now.duration_since(at) < Self::RESAMPLE => (u, s),
            _ => {
                let (u, s) = cpu_times();
                self.sampled = Some((now, u, s));
                (u, s)
            }
        };
        writeln!(out, "OK u:{u:.2} s:{s:.2} r:{:.2}", now.duration_since(self.start).as_secs_f64())
    }
}

/// The writer (the calling thread): prints answers in input order, and
/// flushes whenever no further answer is waiting, so a client that waits
/// for each answer gets it at once and a stream of them costs one `write`
/// per batch, not per line.
fn write_replies(rx: mpsc::Receiver<Vec<Reply>>, out: &mut dyn Write, start: Instant) -> std::io::Result<()> {
    let mut pending: BTreeMap<u64, Reply> = BTreeMap::new();
    let mut next = 0u64;
    let mut clock = StatusClock { start, sampled: None };
    while let Ok(batch) = rx.recv() {
        let mut take = |batch: Vec<Reply>| {
            for r in batch {
                pending.insert(r.seq, r);
            }
        };
        take(batch);
        while let Ok(more) = rx.try_recv() {
            take(more);
        }
        while let Some(r) = pending.remove(&next) {
            out.write_all(&r.body)?;
            match r.error {
                None => clock.line(out)?,
                Some(msg) => writeln!(out, "ERROR: {msg}")?,
            }
            next += 1;
        }
        out.flush()?;
    }
    // Answers left here follow a line that was never answered: the reader
    // stopped on an error in that line, which `run` returns.
    Ok(())
}

/// Work for an update worker.
enum Job {
    /// An update line that goes through the batch path, with the file the
    /// reader opened for it (the path's first update in the session).
    Update { seq: u64, req: UpdateRequest, verbose: bool, opened: Option<Opened> },
    /// The directory changed (`cd`): forget open files and mappings, which
    /// are kept by path.
    Reset,
}

/// Updates handed to workers and not yet applied; barriers wait for none.
/// A worker that stops early (its answers cannot be written, or a bug)
/// marks it stopped, so that a barrier fails instead of waiting forever.
struct InFlight {
    state: Mutex<InFlightState>,
    idle: Condvar,
}

#[derive(Default)]
struct InFlightState {
    count: u64,
    stopped: bool,
}

impl InFlight {
    fn new() -> InFlight {
        InFlight { state: Mutex::new(InFlightState::default()), idle: Condvar::new() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, InFlightState> {
        // The state is two numbers, consistent at every unlock.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn add(&self, n: u64) {
        self.lock().count += n;
    }

    fn done(&self, n: u64) {
        let mut st = self.lock();
        st.count -= n;
        if st.count == 0 {
            self.idle.notify_all();
        }
    }

    fn stop(&self) {
        self.lock().stopped = true;
        self.idle.notify_all();
    }

    fn wait_idle(&self) -> Result<()> {
        let mut st = self.lock();
        while st.count > 0 && !st.stopped {
            st = self.idle.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if st.count > 0 {
            bail!("an update worker of pipe mode stopped");
        }
        Ok(())
    }
}

/// Marks the in-flight count stopped when a worker ends, however it ends.
struct StopOnExit<'a>(&'a InFlight);

impl Drop for StopOnExit<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Updates applied without prefetch before the worker looks again whether
/// they read from the disk.
const PROBE_UPDATES: usize = 64;

/// Whether a worker's next updates are prefetched: only while its recent
/// updates (or their prefetch) read from the disk often enough.
///
/// Why: prefetching costs a header read and one or two `fadvise` calls per
/// update (about a third of a warm update's system calls), all wasted when
/// the pages are resident, as they are for a poller's files between two
/// cycles. The thread's own block-input count (`getrusage(RUSAGE_THREAD)`:
/// reads it submitted, synchronous or WILLNEED) tells, once per chunk, how
/// many pages the updates since the last look read: at least one per
/// [`UPDATES_PER_READ_PAGE_MAX`] updates means pages are cold, and the
/// next chunk is prefetched; fewer (a warm cache with a stray miss, which
/// costs less than the prefetch's system calls for that many updates)
/// means the next [`PROBE_UPDATES`] go without. A stream that turns cold
/// (or starts cold) pays one probe chunk of synchronous reads.
#[derive(Default)]
struct PrefetchGate {
    inblock: Option<i64>,
}

/// Fewer pages read than one per this many updates: not worth prefetching
/// (about 3 system calls per update, ~1 µs each, against a synchronous
/// read of ~100 µs).
const UPDATES_PER_READ_PAGE_MAX: i64 = 32;

impl PrefetchGate {
    /// Whether to prefetch after `updates` updates since the last call.
    fn prefetch_next(&mut self, updates: usize) -> bool {
        let Some(now) = rrd_sys::rusage::thread_blocks_read() else { return true };
        match self.inblock.replace(now) {
            // A session's first chunk is a probe too: a poller's files are
            // usually resident, and a cold start costs one probe chunk.
            None => false,
            Some(before) => {
                // ru_inblock counts 512-byte blocks.
                let pages = (now - before) / 8;
                pages * UPDATES_PER_READ_PAGE_MAX >= updates as i64 && now > before
            }
        }
    }
}

/// Answers a worker sends at once, at most (fewer when it runs out of work).
const REPLY_BATCH_MAX: usize = 64;

/// One update worker: applies the updates of its share of the files, in
/// the order they came, and prefetches the pages of the updates it has
/// already received (never waiting for more).
fn update_worker(
    rx: mpsc::Receiver<Vec<Job>>,
    replies: Replies,
    in_flight: &InFlight,
    handed: &AtomicUsize,
    budget: Budget,
) {
    let _stop = StopOnExit(in_flight);
    let mut access = match Access::from_env(budget) {
        Ok(a) => a,
        // Checked before the workers started.
        Err(e) => unreachable!("RRDSCALE_ACCESS was checked: {e}"),
    };
    let mut queue: VecDeque<Job> = VecDeque::new();
    let mut prefetched_ahead = 0usize;
    let mut gate = PrefetchGate::default();
    // Updates since the gate last decided.
    let mut since_gate = 0usize;
    let mut answers: Vec<Reply> = Vec::new();
    let mut applied = 0u64;
    loop {
        if queue.is_empty() {
            // Out of work: what is done is answered before waiting.
            if !answers.is_empty() && replies.send(std::mem::take(&mut answers)).is_err() {
                return;
            }
            in_flight.done(std::mem::take(&mut applied));
            match rx.recv() {
                Ok(jobs) => queue.extend(jobs),
                Err(_) => return,
            }
        }
        while queue.len() < LOOKAHEAD_MAX {
            match rx.try_recv() {
                Ok(jobs) => queue.extend(jobs),
                Err(_) => break,
            }
        }
        match queue.pop_front().expect("a job is queued") {
            Job::Reset => {
                access = Access::from_env(budget).unwrap_or_else(|e| unreachable!("checked: {e}"));
                prefetched_ahead = 0;
            }
            Job::Update { seq, req, verbose, mut opened } => {
                if prefetched_ahead == 0 && !gate.prefetch_next(since_gate) {
                    // Resident so far: the next updates go without asking.
                    prefetched_ahead = PROBE_UPDATES;
                    since_gate = 0;
                } else if prefetched_ahead == 0 {
                    since_gate = 0;
                    if let Access::Pread(updater) = &mut access {
                        // The files the reader opened for these updates
                        // join the open files (kept, as the prefetch reads
                        // their headers through them), instead of being
                        // opened again.
                        let queued = queue.iter_mut().map_while(|job| match job {
                            Job::Update { req, opened, .. } => Some((&*req, opened)),
                            Job::Reset => None,
                        });
                        for (req, opened) in std::iter::once((&req, &mut opened)).chain(queued) {
                            if let Some(Opened { file, len_bytes }) = opened.take() {
                                handed.fetch_sub(1, Ordering::Relaxed);
                                updater.files.adopt(&req.path, file, len_bytes);
                            }
                        }
                    }
                    // This update and the ones queued behind it, up to a reset.
                    let mut reqs: Vec<&UpdateRequest> = vec![&req];
                    for job in &queue {
                        match job {
                            Job::Update { req, .. } => reqs.push(req),
                            Job::Reset => break,
                        }
                    }
                    // Within the memory-bounded window: the rest is
                    // prefetched when its turn comes.
                    prefetched_ahead = match &mut access {
                        Access::Pread(updater) => updater.prefetch(&reqs),
                        Access::Mmap(files) => files.prefetch(&reqs),
                    }
                    .max(1);
                }
                prefetched_ahead -= 1;
                since_gate += 1;
                let outcome = match (&mut access, opened) {
                    (Access::Pread(updater), Some(Opened { file, len_bytes })) => {
                        handed.fetch_sub(1, Ordering::Relaxed);
                        updater.update_opened(&req, verbose, file, len_bytes)
                    }
                    (Access::Pread(updater), None) => updater.update(&req, verbose),
                    (Access::Mmap(files), opened) => {
                        if opened.is_some() {
                            handed.fetch_sub(1, Ordering::Relaxed);
                        }
                        files.update(&req.path, &req.args, &req.opts, verbose)
                    }
                };
                let mut body = Vec::new();
                let result = super::update::report(&mut body, &req.path, outcome, verbose);
                answers.push(Reply::of(seq, body, result));
                applied += 1;
            }
        }
        if answers.len() >= REPLY_BATCH_MAX {
            if replies.send(std::mem::take(&mut answers)).is_err() {
                return;
            }
            in_flight.done(std::mem::take(&mut applied));
        }
    }
}

/// Update workers: the machine's cores (at most 8), or `RRDSCALE_PIPE_THREADS`.
fn worker_count() -> Result<usize> {
    match std::env::var("RRDSCALE_PIPE_THREADS").as_deref() {
        Err(_) | Ok("") => Ok(std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8)),
        Ok(v) => match v.parse::<usize>() {
            Ok(n) if (1..=64).contains(&n) => Ok(n),
            _ => bail!("RRDSCALE_PIPE_THREADS must be a number from 1 to 64, not '{v}'"),
        },
    }
}

/// A file the reader opened for its update ([`open_for_update`]), with
/// the length its `fstat` gave.
struct Opened {
    file: std::fs::File,
    len_bytes: u64,
}

/// Paths remembered as seen (by hash) before the set starts over.
const SEEN_MAX: usize = 1 << 20;

/// Which worker updates a file: by device and inode, so that two names of
/// one file (`a.rrd`, `./a.rrd`, a link) go to the same worker and stay in
/// order (two workers would also refuse each other's lock). A path that
/// cannot be stat'ed or opened is routed by its name: its update fails
/// anyway.
///
/// The first line for a path in the session opens the file here, and the
/// descriptor travels with the line (`Opened`): the identity comes from
/// `fstat` of it, so the path is walked once instead of twice (a `stat`
/// here, an `open` in the worker: the reader's `stat` was 7-9 % of a
/// poller's CPU), and the worker neither opens nor `fstat`s it. Such a
/// file is closed after its update (a poller touches each file once). A
/// path seen before is `stat`'ed and its worker opens the file and keeps
/// it open, as for any long session.
struct Router<'a> {
    workers: usize,
    /// Whether files are opened here (pread access; mapped access opens
    /// nothing).
    open_here: bool,
    /// Hashes of the paths routed so far (a collision only costs a `stat`).
    seen: std::collections::HashSet<u64>,
    handed: &'a AtomicUsize,
    handed_max: usize,
}

impl Router<'_> {
    fn route(&mut self, path: &Path) -> (usize, Option<Opened>) {
        use std::hash::{Hash, Hasher};
        use std::os::unix::fs::MetadataExt;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        path.as_os_str().hash(&mut h);
        let name_hash = h.finish();
        if self.seen.len() >= SEEN_MAX {
            // Starting over only costs an open of a file a worker may
            // still have open (it then uses its own).
            self.seen.clear();
        }
        let first = self.open_here && self.seen.insert(name_hash);
        if first && self.handed.load(Ordering::Relaxed) < self.handed_max {
            if let Ok(file) = open_for_update(&Root::Anywhere, true, path) {
                if let Ok(m) = file.metadata() {
                    self.handed.fetch_add(1, Ordering::Relaxed);
                    let shard = self.of_inode(m.dev(), m.ino());
                    return (shard, Some(Opened { file, len_bytes: m.len() }));
                }
            }
        }
        match std::fs::metadata(path) {
            Ok(m) => (self.of_inode(m.dev(), m.ino()), None),
            Err(_) => ((name_hash % self.workers as u64) as usize, None),
        }
    }

    fn of_inode(&self, dev: u64, ino: u64) -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (dev, ino).hash(&mut h);
        (h.finish() % self.workers as u64) as usize
    }

    /// The directory changed: relative paths name other files now.
    fn reset(&mut self) {
        self.seen.clear();
    }
}

pub fn run<R: Read + AsFd + Send>(input: &mut BufReader<R>, out: &mut dyn Write) -> Result<()> {
    let start = Instant::now();
    let workers = worker_count()?;
    let budget = Budget::of_this_process(workers);
    // Open files of every worker, the session's own and a margin.
    descriptors::reserve(budget.total() + 64);
    // A bad RRDSCALE_ACCESS refuses the session before any line is read.
    let open_here = matches!(Access::from_env(budget)?, Access::Pread(_));
    let in_flight = InFlight::new();
    let handed = AtomicUsize::new(0);
    let (reply_tx, reply_rx) = mpsc::channel::<Vec<Reply>>();
    std::thread::scope(|scope| {
        let mut jobs = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (tx, rx) = mpsc::sync_channel::<Vec<Job>>(JOB_QUEUE_MAX / SEND_BATCH_MAX);
            let replies = reply_tx.clone();
            let (in_flight, handed) = (&in_flight, &handed);
            scope.spawn(move || update_worker(rx, replies, in_flight, handed, budget));
            jobs.push(tx);
        }
        let router = Router {
            workers,
            open_here,
            seen: std::collections::HashSet::new(),
            handed: &handed,
            handed_max: budget.handed_max,
        };
        let reader = scope.spawn({
            let in_flight = &in_flight;
            move || read_commands(input, jobs, reply_tx, in_flight, router)
        });
        let written = write_replies(reply_rx, out, start);
        let read = reader.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        // A closed output stops the reader too (its answers cannot be sent).
        written?;
        read
    })
}

/// Update lines queued per worker before the reader waits.
const JOB_QUEUE_MAX: usize = 4096;

/// Update lines the reader gathers for one worker before handing them over
/// (fewer when the input pauses or a barrier comes): one channel send, and
/// at most one wake-up of a sleeping worker, per batch instead of per line.
const SEND_BATCH_MAX: usize = 32;

/// Update lines read and not yet handed to their workers.
struct Pending<'a> {
    jobs: &'a [mpsc::SyncSender<Vec<Job>>],
    held: Vec<Vec<Job>>,
    in_flight: &'a InFlight,
}

impl<'a> Pending<'a> {
    fn new(jobs: &'a [mpsc::SyncSender<Vec<Job>>], in_flight: &'a InFlight) -> Pending<'a> {
        Pending { jobs, held: jobs.iter().map(|_| Vec::new()).collect(), in_flight }
    }

    fn push(&mut self, shard: usize, job: Job) -> Result<()> {
        self.held[shard].push(job);
        if self.held[shard].len() >= SEND_BATCH_MAX {
            self.send(shard)?;
        }
        Ok(())
    }

    fn send(&mut self, shard: usize) -> Result<()> {
        let batch = std::mem::take(&mut self.held[shard]);
        if batch.is_empty() {
            return Ok(());
        }
        let n = batch.len() as u64;
        self.in_flight.add(n);
        if self.jobs[shard].send(batch).is_err() {
            self.in_flight.done(n);
            bail!("the output of pipe mode is closed");
        }
        Ok(())
    }

    fn is_empty(&self) -> bool {
        self.held.iter().all(Vec::is_empty)
    }

    /// Hands every held line over (before a barrier waits for them, or
    /// when no further input is ready).
    fn send_all(&mut self) -> Result<()> {
        (0..self.held.len()).try_for_each(|shard| self.send(shard))
    }

    /// Every held line handed over and applied: what a barrier waits for.
    fn wait_idle(&mut self) -> Result<()> {
        self.send_all()?;
        self.in_flight.wait_idle()
    }
}

/// The reader: reads and parses each line; hands batchable updates to the
/// worker of their file; runs anything else itself once every earlier
/// update is applied (a barrier: it may read or replace their files).
fn read_commands<R: Read + AsFd>(
    input: &mut BufReader<R>,
    jobs: Vec<mpsc::SyncSender<Vec<Job>>>,
    replies: Replies,
    in_flight: &InFlight,
    mut router: Router,
) -> Result<()> {
    let closed = || anyhow!("the output of pipe mode is closed");
    let send = |r: Reply| replies.send(vec![r]).map_err(|_| closed());
    let mut line = String::new();
    let mut creates = HeldCreates::new();
    let mut seq = 0u64;
    let mut pending = Pending::new(&jobs, in_flight);
    loop {
        if !pending.is_empty() && !more_input(input) {
            // The input pauses (a client waiting for its answers): what
            // was read goes to work now.
            pending.send_all()?;
        }
        if !creates.answers.is_empty()
            && (creates.group.is_full()
                || creates.since.is_some_and(|t| t.elapsed() >= CREATE_GROUP_WAIT)
                || !more_input(input))
        {
            pending.wait_idle()?;
            creates.answer(&replies)?;
        }
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        let args = split_line(&line);
        let this = seq;
        seq += 1;
        let mut prepared_create = None;
        if args.first().map(String::as_str) == Some("create") {
            match super::create::prepare(&args[1..]) {
                Ok(super::create::Prepared::Local { file, options, defs, now })
                    if options.template.is_none()
                        && options.sources.is_empty()
                        && !creates.group.is_staged(&file) =>
                {
                    // Written now (to a temporary name), durable, renamed
                    // and answered with its group.
                    let held = match rrd_engine::create::create_in(
                        &mut creates.group,
                        &file,
                        &options,
                        &defs,
                        now,
                    ) {
                        Ok(i) => Held::Staged(i, this),
                        Err(e) => Held::Failed(super::error_message(&e.into()), this),
                    };
                    creates.answers.push(held);
                    creates.since.get_or_insert_with(Instant::now);
                    continue;
                }
                Ok(p) => prepared_create = Some(Ok(p)),
                Err(e) if creates.answers.is_empty() => prepared_create = Some(Err(e)),
                Err(e) => {
                    creates.answers.push(Held::Failed(super::error_message(&e), this));
                    continue;
                }
            }
        }
        if prepared_create.is_none() {
            if let Some((req, verbose)) = batchable(&args) {
                // Held creates are made durable and renamed first: this
                // update may be for one of them.
                if !creates.answers.is_empty() {
                    pending.wait_idle()?;
                    creates.answer(&replies)?;
                }
                let (shard, opened) = router.route(&req.path);
                pending.push(shard, Job::Update { seq: this, req, verbose, opened })?;
                continue;
            }
        }
        // A barrier: every earlier update is applied, held creates are
        // durable and visible, before this command runs.
        pending.wait_idle()?;
        creates.answer(&replies)?;
        let mut body = Vec::new();
        if let Some(prepared) = prepared_create {
            let result = prepared.and_then(|p| super::create::execute(p, &mut body));
            send(Reply::of(this, body, result))?;
            continue;
        }
        // A blank line gets the usage text and an OK, as in rrdtool (a
        // client waiting for the answer is not left hanging).
        let result = if args.is_empty() {
            super::dispatch(&[], &mut body)
        } else {
            match remote(&args, &mut body) {
                Remote::No if args[0] == "restore" => {
                    // `restore -` reads the XML from the same stream as the commands.
                    super::restore::run_with_input(&args[1..], &mut body, input)
                }
                Remote::No => super::dispatch(&args, &mut body),
                Remote::Quit => break,
                Remote::ChangedDirectory => {
                    // Open files and mappings are kept by path, and a
                    // relative path now names another file.
                    router.reset();
                    for tx in &jobs {
                        tx.send(vec![Job::Reset]).map_err(|_| closed())?;
                    }
                    Ok(())
                }
                Remote::Done(r) => r,
            }
        };
        send(Reply::of(this, body, result))?;
    }
    pending.wait_idle()?;
    creates.answer(&replies)?;
    Ok(())
}
