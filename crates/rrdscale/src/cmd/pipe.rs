//! `rrdscale -`: one command per line on standard input, each answered by
//! its output and an `OK u:… s:… r:…` or `ERROR: …` line, as `rrdtool -`
//! does. Commands run in-process, so a long stream costs no process starts.
//!
//! Updates go through a [`BatchUpdater`]: files stay open between commands
//! (bounded), readahead is off, and when several update lines are already
//! waiting in the input buffer, the pages they will touch are requested
//! from the disk all at once before the first of them runs. Only lines
//! already received are looked at, so an interactive client that waits for
//! each answer before sending the next line is never blocked.
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

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::DirBuilderExt;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use rrd_client::ctext::strerror;
use rrd_engine::batch::{BatchUpdater, UpdateRequest};
use rrd_engine::mapped::MappedFiles;
use rrd_engine::newfile::NewFiles;

/// How pipe mode reads and writes files (`RRDSCALE_ACCESS`).
enum Access {
    /// pread/pwrite through open files, rrdtool's locks, prefetch (default).
    Pread(BatchUpdater),
    /// Kept mappings, no locks, prefetch (`MADV_WILLNEED`).
    Mmap(MappedFiles),
}

impl Access {
    fn from_env() -> Result<Access> {
        match std::env::var("RRDSCALE_ACCESS").as_deref() {
            Err(_) | Ok("") | Ok("pread") => {
                let mut updater = BatchUpdater::new(max_open_files());
                updater.bound_prefetch_by_memory();
                Ok(Access::Pread(updater))
            }
            Ok("mmap") => {
                let mut files = MappedFiles::default();
                files.keep_headers = true;
                files.bound_prefetch_by_memory();
                Ok(Access::Mmap(files))
            }
            Ok(other) => anyhow::bail!("RRDSCALE_ACCESS must be 'pread' or 'mmap', not '{other}'"),
        }
    }
}

/// Open files kept between commands (each with its decoded header, a few
/// KiB): half the descriptor limit, within these bounds.
const MAX_OPEN_FILES: (usize, usize) = (512, 8192);

fn max_open_files() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit struct we own.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
    } else {
        0
    };
    (soft / 2).clamp(MAX_OPEN_FILES.0, MAX_OPEN_FILES.1)
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
    // SAFETY: getrusage fills the struct we pass and has no other effects.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        (t(ru.ru_utime), t(ru.ru_stime))
    }
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
    // readdir itself, not std's read_dir: the order and `.`/`..` are part
    // of the output.
    // SAFETY: opendir gets a NUL-terminated path; the handle is used only
    // here and closed once.
    let dir = unsafe { libc::opendir(c".".as_ptr()) };
    if dir.is_null() {
        let code = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        bail!("opendir .: {}", strerror(code));
    }
    let mut text = Vec::new();
    loop {
        // SAFETY: dir is an open directory stream; the entry is read before
        // the next readdir call.
        let entry = unsafe { libc::readdir(dir) };
        if entry.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated within the entry.
        let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) }.to_bytes().to_vec();
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
    // SAFETY: closes the stream opened above, once.
    unsafe { libc::closedir(dir) };
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
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd { fd: input.get_ref().as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd we own; a zero timeout never blocks.
    unsafe { libc::poll(&mut fd, 1, 0) > 0 }
}

/// Creates waiting for their group's sync, and the answers held back
/// behind them (answers keep the order of the lines).
struct HeldCreates {
    group: NewFiles,
    answers: Vec<Held>,
    since: Option<Instant>,
}

enum Held {
    /// A staged create: OK once its group is durable, or its error.
    Staged(usize),
    /// A create refused before anything was written.
    Failed(String),
}

impl HeldCreates {
    fn new() -> HeldCreates {
        let mut group = NewFiles::new();
        group.remove_temps_on_signal(true);
        HeldCreates { group, answers: Vec::new(), since: None }
    }

    /// Makes the staged files durable, then prints the held answers.
    fn answer(&mut self, out: &mut dyn Write, start: Instant) -> Result<()> {
        if self.answers.is_empty() {
            return Ok(());
        }
        let mut results: Vec<Option<rrd_engine::Result<()>>> =
            self.group.commit().into_iter().map(Some).collect();
        for held in self.answers.drain(..) {
            match held {
                Held::Staged(i) => match results[i].take().expect("one answer per staged file") {
                    Ok(()) => ok_line(out, start)?,
                    Err(e) => writeln!(out, "ERROR: {}", super::error_message(&e.into()))?,
                },
                Held::Failed(msg) => writeln!(out, "ERROR: {msg}")?,
            }
        }
        self.since = None;
        out.flush()?;
        Ok(())
    }
}

fn ok_line(out: &mut dyn Write, start: Instant) -> std::io::Result<()> {
    let (u, s) = cpu_times();
    writeln!(out, "OK u:{u:.2} s:{s:.2} r:{:.2}", start.elapsed().as_secs_f64())
}

pub fn run<R: Read + AsFd>(input: &mut BufReader<R>, out: &mut dyn Write) -> Result<()> {
    let start = Instant::now();
    let mut access = Access::from_env()?;
    let mut prefetched_ahead = 0usize;
    let mut line = String::new();
    let mut creates = HeldCreates::new();
    loop {
        if !creates.answers.is_empty()
            && (creates.group.is_full()
                || creates.since.is_some_and(|t| t.elapsed() >= CREATE_GROUP_WAIT)
                || !more_input(input))
        {
            creates.answer(out, start)?;
        }
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        let args = split_line(&line);
        let mut prepared_create = None;
        if args.first().map(String::as_str) == Some("create") {
            match super::create::prepare(&args[1..]) {
                Ok(super::create::Prepared::Local { file, options, defs, now })
                    if options.template.is_none()
                        && options.sources.is_empty()
                        && !creates.group.is_staged(&file) =>
                {
                    // Written now, durable and answered with its group.
                    let held = match rrd_engine::create::create_in(
                        &mut creates.group,
                        &file,
                        &options,
                        &defs,
                        now,
                    ) {
                        Ok(i) => Held::Staged(i),
                        Err(e) => Held::Failed(super::error_message(&e.into())),
                    };
                    creates.answers.push(held);
                    creates.since.get_or_insert_with(Instant::now);
                    continue;
                }
                Ok(p) => prepared_create = Some(Ok(p)),
                Err(e) if creates.answers.is_empty() => prepared_create = Some(Err(e)),
                Err(e) => {
                    creates.answers.push(Held::Failed(super::error_message(&e)));
                    continue;
                }
            }
        }
        // Anything else may read what the held creates wrote: they become
        // durable and visible, and are answered, first.
        creates.answer(out, start)?;
        if let Some(prepared) = prepared_create {
            let result = prepared.and_then(|p| super::create::execute(p, out));
            match result {
                Ok(()) => ok_line(out, start)?,
                Err(e) => writeln!(out, "ERROR: {}", super::error_message(&e))?,
            }
            out.flush()?;
            continue;
        }
        // A blank line gets the usage text and an OK, as in rrdtool (a
        // client waiting for the answer is not left hanging).
        let remote_result = if args.is_empty() {
            Some(super::dispatch(&[], out))
        } else {
            match remote(&args, out) {
                Remote::No => None,
                Remote::Quit => break,
                Remote::ChangedDirectory => {
                    // Open files and mappings are kept by path, and a
                    // relative path now names another file.
                    access = Access::from_env()?;
                    prefetched_ahead = 0;
                    Some(Ok(()))
                }
                Remote::Done(r) => Some(r),
            }
        };
        let result = match (remote_result, batchable(&args), &mut access) {
            (Some(r), _, _) => r,
            (None, Some((req, verbose)), access) => {
                if prefetched_ahead == 0 {
                    // This update and the update lines already buffered behind it.
                    let buffered = String::from_utf8_lossy(input.buffer()).into_owned();
                    let mut reqs = vec![req.clone()];
                    for l in buffered.lines().take(LOOKAHEAD_MAX) {
                        match batchable(&split_line(l)) {
                            Some((r, _)) => reqs.push(r),
                            None => break,
                        }
                    }
                    let refs: Vec<&UpdateRequest> = reqs.iter().collect();
                    // Within the memory-bounded window: the rest is
                    // prefetched when its turn comes.
                    prefetched_ahead = match access {
                        Access::Pread(updater) => updater.prefetch(&refs),
                        Access::Mmap(files) => files.prefetch(&refs),
                    }
                    .max(1);
                }
                prefetched_ahead -= 1;
                let outcome = match access {
                    Access::Pread(updater) => updater.update(&req, verbose),
                    Access::Mmap(files) => files.update(&req.path, &req.args, &req.opts, verbose),
                };
                super::update::report(out, &req.path, outcome, verbose)
            }
            // `restore -` reads the XML from the same stream as the commands.
            (None, None, _) if args[0] == "restore" => super::restore::run_with_input(&args[1..], out, input),
            (None, None, _) => super::dispatch(&args, out),
        };
        match result {
            Ok(()) => ok_line(out, start)?,
            Err(e) => writeln!(out, "ERROR: {}", super::error_message(&e))?,
        }
        out.flush()?;
    }
    creates.answer(out, start)?;
    Ok(())
}
