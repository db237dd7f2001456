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
//! `RRDSCALE_ACCESS=mmap` selects mapped access instead
//! ([`rrd_engine::mapped::MappedFiles`], headers kept): files stay mapped
//! between commands, with no descriptor and **no fcntl lock**, so it is for
//! a stream that is the only writer of its files; nothing is prefetched
//! (it is the warm mode). The default, `pread`, takes rrdtool's locks.

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Instant;

use anyhow::Result;
use rrd_engine::batch::{BatchUpdater, UpdateRequest};
use rrd_engine::mapped::MappedFiles;

/// How pipe mode reads and writes files (`RRDSCALE_ACCESS`).
enum Access {
    /// pread/pwrite through open files, rrdtool's locks, prefetch (default).
    Pread(BatchUpdater),
    /// Kept mappings, no locks, no prefetch.
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

pub fn run<R: Read>(input: &mut BufReader<R>, out: &mut dyn Write) -> Result<()> {
    let start = Instant::now();
    let mut access = Access::from_env()?;
    let mut prefetched_ahead = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        let args = split_line(&line);
        if args.is_empty() {
            continue;
        }
        if args[0] == "quit" {
            break;
        }
        let result = match (batchable(&args), &mut access) {
            (Some((req, verbose)), Access::Mmap(files)) => {
                let outcome = files.update(&req.path, &req.args, &req.opts, verbose);
                super::update::report(out, &req.path, outcome, verbose)
            }
            (Some((req, verbose)), Access::Pread(updater)) => {
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
                    prefetched_ahead = updater.prefetch(&refs).max(1);
                }
                prefetched_ahead -= 1;
                let outcome = updater.update(&req, verbose);
                super::update::report(out, &req.path, outcome, verbose)
            }
            // `restore -` reads the XML from the same stream as the commands.
            (None, _) if args[0] == "restore" => super::restore::run_with_input(&args[1..], out, input),
            (None, _) => super::dispatch(&args, out),
        };
        match result {
            Ok(()) => {
                let (u, s) = cpu_times();
                writeln!(out, "OK u:{u:.2} s:{s:.2} r:{:.2}", start.elapsed().as_secs_f64())?;
            }
            Err(e) => writeln!(out, "ERROR: {}", super::error_message(&e))?,
        }
        out.flush()?;
    }
    Ok(())
}
