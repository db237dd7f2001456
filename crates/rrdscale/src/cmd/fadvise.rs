//! `rrdscale fadvise --dontneed|--willneed|--random|--sequential|--normal|
//! --noreuse [-j N] [-v] [-r] [--all-files] FILE|DIR...`: `posix_fadvise`
//! over whole files, the LISA paper's `fadvise` tool, fast enough for
//! hundreds of thousands of files.
//!
//! `--dontneed` first makes the file's pages clean with `fdatasync` (the
//! kernel does not drop dirty pages) and then drops them, so a benchmark can
//! start cold. `--willneed` starts asynchronous reads of the whole file.
//! Several advices may be given; each file gets them in command-line order.
//!
//! `--random`, `--sequential`, `--normal` and `--noreuse` attach to the open
//! file description, which ends when this command closes the file: they have
//! no lasting effect, and the command says so on stderr. (The GrowthForecast tuning log ran
//! `fadvise -random -dontneed` over 60,000 files; only the DONTNEED part
//! could have mattered.) An updater wanting RANDOM must advise its own
//! descriptor.
//!
//! Speed: the 60,000-files-in-an-hour of the GrowthForecast tuning log came from one process per
//! file and from `fsync` waiting on the disk one file at a time. Here one
//! process walks the operands (directories recursively, `*.rrd` only unless
//! `--all-files`, as `fincore` does) and a pool of worker threads (`-j`,
//! default 16) opens, syncs and advises, so that disk waits overlap: the
//! journal commits and cache flushes of concurrent `fdatasync` calls are
//! shared. Measured on this machine's ext4 disk, 10,000 files of 2 pages:
//! clean, 5.7 s with 1 worker, 0.47 s with 2, 0.2 s with 16; dirty, 27 s
//! with 1 worker, 0.75 s with 16.
//!
//! Deliberately absent: offsets and lengths (whole files only; the library's
//! `pagecache::advise` takes ranges), and any output on stdout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use rrd_engine::pagecache::{self, Advice};
use rrd_lang::ctext::io_text as os_message;

use super::fincore::{open_regular, walk_operands};
use rrd_cli::opts;

const DEFAULT_JOBS: usize = 16;
const MAX_JOBS: usize = 256;

const HELP: &str = "\
Usage: rrdscale fadvise ADVICE... [options] FILE|DIR...
posix_fadvise over whole files; directories are walked for *.rrd files.

Advice (one or more, applied to each file in the order given):
  --dontneed     fdatasync, then drop the file's pages from the page cache
  --willneed     start reading the whole file into the page cache (asynchronous)
  --random       no readahead          } these four attach to the open file,
  --sequential   more readahead        } which this command closes at once:
  --normal       default readahead     } they have NO lasting effect; a program
  --noreuse      data used once        } must advise its own descriptor

Options:
  -j, --jobs N       worker threads (default 16); fdatasync waits on the disk
  -r, --recursive    walk directory operands (the default for directories)
  -a, --all-files    in directories, take every regular file, not only *.rrd
  -v, --verbose      report files, failures and elapsed time on stderr
  -h, --help         this text

Files that cannot be advised are reported on stderr and make the exit status
1; the other files are still advised.
";

/// The advice flags, by long option name.
const ADVICE_FLAGS: &[(&str, Advice)] = &[
    ("dontneed", Advice::DontNeed),
    ("willneed", Advice::WillNeed),
    ("random", Advice::Random),
    ("sequential", Advice::Sequential),
    ("normal", Advice::Normal),
    ("noreuse", Advice::NoReuse),
];

fn advice_name(a: Advice) -> &'static str {
    ADVICE_FLAGS.iter().find(|(_, x)| *x == a).map_or("?", |(n, _)| n)
}

/// Applies every advice to one file, or says why it could not.
fn advise_file(path: &Path, advice: &[Advice]) -> std::result::Result<(), String> {
    let (file, _) = open_regular(path)?;
    for &a in advice {
        let result = match a {
            Advice::DontNeed => pagecache::evict(&file),
            other => pagecache::advise(&file, other, 0, 0),
        };
        result.map_err(|e| format!("{} failed: {}", advice_name(a), os_message(&e)))?;
    }
    Ok(())
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let mut specs = vec![
        opts::value(Some('j'), "jobs"),
        opts::flag(Some('r'), "recursive"),
        opts::flag(Some('a'), "all-files"),
        opts::flag(Some('v'), "verbose"),
        opts::flag(Some('h'), "help"),
    ];
    specs.extend(ADVICE_FLAGS.iter().map(|(name, _)| opts::flag(None, name)));
    let parsed = opts::parse(args, &specs)?;
    if parsed.has("help") {
        out.write_all(HELP.as_bytes())?;
        return Ok(());
    }
    let advice: Vec<Advice> = parsed
        .opts
        .iter()
        .filter_map(|(name, _)| ADVICE_FLAGS.iter().find(|(n, _)| n == name).map(|(_, a)| *a))
        .collect();
    if advice.is_empty() {
        bail!("fadvise: no advice given; use --dontneed, --willneed, --random, --sequential, --normal or --noreuse");
    }
    if parsed.operands.is_empty() {
        bail!("fadvise: no files given (see 'rrdscale fadvise --help')");
    }
    let jobs = match parsed.value("jobs") {
        None => DEFAULT_JOBS,
        Some(v) => {
            let n: usize = v.parse().ok().filter(|n| (1..=MAX_JOBS).contains(n)).with_context(|| {
                format!("fadvise: --jobs wants a number of worker threads from 1 to {MAX_JOBS}, not '{v}'")
            })?;
            n
        }
    };
    let fleeting: Vec<&str> =
        advice.iter().filter(|a| !a.outlives_close()).map(|&a| advice_name(a)).collect();
    if !fleeting.is_empty() {
        eprintln!(
            "rrdscale fadvise: note: --{} attaches to the open file description and ends when each file is \
             closed, so it has no lasting effect (only --dontneed and --willneed do)",
            fleeting.join(", --")
        );
    }

    let started = Instant::now();
    let done = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let mut walk_failed = 0u64;
    // A bounded queue: the walk runs ahead of the workers by at most this
    // many paths, so memory stays flat over any number of files.
    let (tx, rx) = mpsc::sync_channel::<PathBuf>(4096);
    let rx = Mutex::new(rx);
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                // The lock is held only to take the next path.
                let next = rx.lock().map(|r| r.recv());
                let Ok(Ok(path)) = next else { break };
                match advise_file(&path, &advice) {
                    Ok(()) => done.fetch_add(1, Ordering::Relaxed),
                    Err(why) => {
                        eprintln!("rrdscale fadvise: {}: {why}", path.display());
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            });
        }
        let walked = walk_operands(
            &parsed.operands,
            parsed.has("all-files"),
            &mut |path| {
                // Fails only if every worker has gone, which they do not
                // while the sender lives.
                tx.send(path).map_err(|_| anyhow::anyhow!("fadvise: the worker threads stopped early"))
            },
            &mut |path, why| {
                eprintln!("rrdscale fadvise: {}: {why}", path.display());
                walk_failed += 1;
            },
        );
        // Closing the queue lets the workers finish; the scope joins them.
        drop(tx);
        walked
    })?;

    let done = done.into_inner();
    let failed = failed.into_inner() + walk_failed;
    if parsed.has("verbose") {
        let secs = started.elapsed().as_secs_f64();
        let names: Vec<&str> = advice.iter().map(|&a| advice_name(a)).collect();
        eprintln!(
            "rrdscale fadvise: {} applied to {done} files ({failed} failed) in {secs:.3} s with {jobs} workers \
             ({:.0} files/s)",
            names.join("+"),
            if secs > 0.0 { done as f64 / secs } else { 0.0 }
        );
    }
    if failed > 0 {
        bail!("fadvise: {failed} of {} files or directories could not be advised", failed + done);
    }
    Ok(())
}
