//! One module per subcommand, and the table that dispatches to them.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Result};

pub mod bench;
pub mod client;
pub mod create;
pub mod daemon;
pub mod dump;
pub mod fadvise;
pub mod fetch;
pub mod fincore;
pub mod first;
pub mod flushcached;
pub mod graph;
pub mod info;
pub mod last;
pub mod lastupdate;
pub mod list;
pub mod pagesim;
pub mod pipe;
pub mod resize;
pub mod restore;
pub mod tune;
pub mod update;
pub mod web;
pub mod xport;

/// The RRDtool version whose behaviour rrdscale reproduces.
pub const RRDTOOL_VERSION: &str = "1.7.2";

/// A subcommand: its name, a one-line summary for the usage text, and how
/// it runs.
struct Command {
    name: &'static str,
    summary: &'static str,
    run: fn(&[String], &mut dyn Write) -> Result<()>,
}

/// Every subcommand, in the order the usage text lists them: rrdtool's
/// first (in rrdtool's order), then rrdscale's own. [`dispatch`] looks
/// commands up here, so the usage text cannot leave one out.
const COMMANDS: &[Command] = &[
    Command { name: "create", summary: "create a new RRD", run: create::run },
    Command { name: "update", summary: "store new values", run: |a, o| update::run(a, o, false) },
    Command {
        name: "updatev",
        summary: "store new values, print what was written",
        run: |a, o| update::run(a, o, true),
    },
    Command { name: "graph", summary: "draw a graph (PNG, SVG)", run: |a, o| graph::run(a, o, false) },
    Command {
        name: "graphv",
        summary: "draw a graph, print its details",
        run: |a, o| graph::run(a, o, true),
    },
    Command { name: "dump", summary: "an RRD as XML", run: dump::run },
    Command { name: "restore", summary: "an RRD from XML (plain or gzip-compressed)", run: restore::run },
    Command { name: "last", summary: "time of the last update", run: last::run },
    Command { name: "lastupdate", summary: "the last update's time and values", run: lastupdate::run },
    Command { name: "first", summary: "time of an archive's first row", run: first::run },
    Command { name: "info", summary: "the header, as key = value lines", run: info::run },
    Command { name: "list", summary: "the RRDs of a directory", run: list::run },
    Command { name: "fetch", summary: "consolidated rows of a time range", run: fetch::run },
    Command { name: "tune", summary: "change settings, add or delete sources and archives", run: tune::run },
    Command { name: "resize", summary: "grow or shrink an archive", run: resize::run },
    Command { name: "xport", summary: "graph data as XML or JSON", run: xport::run },
    Command {
        name: "flushcached",
        summary: "make a daemon write a file's pending values",
        run: flushcached::run,
    },
    Command {
        name: "daemon",
        summary: "the caching daemon (rrdcached's options and protocol)",
        run: daemon::run,
    },
    Command { name: "web", summary: "the GrowthForecast-compatible HTTP API", run: web::run },
    Command { name: "bench", summary: "benchmarks, side by side with rrdtool", run: bench::run },
    Command { name: "pagesim", summary: "the page cache simulation and model", run: pagesim::run },
    Command { name: "fincore", summary: "how much of each file is in the page cache", run: fincore::run },
    Command { name: "fadvise", summary: "posix_fadvise over whole files", run: fadvise::run },
];

/// rrdtool's commands that, given no arguments, print the usage text (the
/// others print their own synopsis; rrdscale's own commands run).
const BARE_USAGE: &[&str] =
    &["graph", "graphv", "last", "lastupdate", "first", "info", "list", "fetch", "xport"];

/// Whether this process is in pipe mode (`rrdscale -`): its usage text
/// then also lists the commands only pipe mode has.
static PIPE_MODE: AtomicBool = AtomicBool::new(false);

/// Runs one command line (without the program name), writing its output.
pub fn dispatch(args: &[String], out: &mut dyn Write) -> Result<()> {
    let Some((name, rest)) = args.split_first() else {
        // rrdtool prints its usage and exits 0.
        return usage(out);
    };
    match name.as_str() {
        "-h" | "--help" | "-help" | "-?" | "help" => usage(out),
        // rrdtool prints its usage, whose first line is the version, for
        // these alone, and just the version line when more words follow.
        "--version" | "-v" | "version" | "v" | "-version" if rest.is_empty() => usage(out),
        "--version" | "-v" | "version" | "v" | "-version" => {
            writeln!(out, "{}", version_line())?;
            Ok(())
        }
        // In pipe mode, as in rrdtool's: "-" alone is a line too short to
        // be a command (usage), "-" with more words an unknown command.
        "-" if PIPE_MODE.load(Ordering::Relaxed) && rest.is_empty() => usage(out),
        "-" if PIPE_MODE.load(Ordering::Relaxed) => bail!("unknown function '-'"),
        "-" => {
            PIPE_MODE.store(true, Ordering::Relaxed);
            pipe::run_remote(rest, out)
        }
        // rrdtool answers a lone word with its usage text and status 0,
        // a known command or not; the commands that print their own
        // synopsis then do that instead.
        other => match COMMANDS.iter().find(|c| c.name == other) {
            Some(c) if rest.is_empty() && BARE_USAGE.contains(&c.name) => usage(out),
            Some(c) => (c.run)(rest, out),
            None if rest.is_empty() => usage(out),
            None => bail!("unknown function '{other}'"),
        },
    }
}

/// The text printed after `ERROR: `. Engine errors already name the file
/// and the cause in one sentence, as rrdtool's messages do.
pub fn error_message(e: &anyhow::Error) -> String {
    e.to_string()
}

/// The first line of the usage text, printed alone by `--version x`.
///
/// Tools find rrdtool's version by parsing this line: Cacti matches
/// `^RRDtool ([0-9.]+) ` in `rrdtool -v`'s output, others take its second
/// word or cut it before `Copyright`. So it starts with the RRDtool version
/// rrdscale is compatible with, in rrdtool's form, and names rrdscale and
/// its own version after that.
pub fn version_line() -> String {
    format!(
        "RRDtool {RRDTOOL_VERSION}  Copyright by the rrdscale contributors (rrdscale {}, compatible with RRDtool {RRDTOOL_VERSION})",
        env!("CARGO_PKG_VERSION")
    )
}

fn usage(out: &mut dyn Write) -> Result<()> {
    writeln!(out, "{}", version_line())?;
    writeln!(out)?;
    writeln!(out, "Usage: rrdscale [options] command command_options")?;
    writeln!(out, "       rrdscale - [directory]   (commands on standard input, one per line)")?;
    writeln!(out)?;
    writeln!(out, "Commands:")?;
    let width = COMMANDS.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in COMMANDS {
        writeln!(out, "  {:width$}  {}", c.name, c.summary)?;
    }
    if PIPE_MODE.load(Ordering::Relaxed) {
        writeln!(out)?;
        writeln!(out, "Valid remote commands: quit, ls, cd, mkdir, pwd")?;
    }
    Ok(())
}

/// The help text rrdtool prints when a command is given no arguments (it
/// exits 0 in that case, and so do we).
pub fn command_usage(out: &mut dyn Write, synopsis: &str) -> Result<()> {
    writeln!(out, "Usage: rrdscale {synopsis}")?;
    Ok(())
}

/// Seconds since the epoch.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A double as rrdtool's info-style output prints it: `%0.10e`, or `NaN`
/// (the engine's `info` formatting, so the two never drift apart).
pub fn fmt_info_value(v: f64) -> String {
    let bytes = rrd_engine::info::format_value(&rrd_engine::info::InfoValue::Value(v));
    String::from_utf8(bytes).expect("formatted numbers are ASCII")
}
