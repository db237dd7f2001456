//! One module per rrdtool command, and the table that dispatches to them.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use anyhow::{bail, Result};

pub mod client;
pub mod create;
pub mod dump;
pub mod fetch;
pub mod first;
pub mod flushcached;
pub mod graph;
pub mod info;
pub mod last;
pub mod lastupdate;
pub mod list;
pub mod pipe;
pub mod resize;
pub mod restore;
pub mod tune;
pub mod update;
pub mod xport;

use crate::help_text;

/// The RRDtool version whose behaviour rrdscale reproduces.
pub const RRDTOOL_VERSION: &str = "1.7.2";

/// How a command runs: its arguments (without its name), and where its
/// output goes.
pub type Run = fn(&[String], &mut dyn Write) -> Result<()>;

/// A command: its name, a one-line summary for the usage text and the
/// manual, its help, and how it runs.
pub struct Command {
    pub name: &'static str,
    pub summary: &'static str,
    /// rrdtool's help text for its commands (`help CMD`, or the command
    /// alone); `None` for rrdscale's own commands, which answer `--help`
    /// themselves.
    pub help: Option<&'static str>,
    pub run: Run,
}

/// rrdtool's commands, in the order its usage text lists them. [`dispatch`]
/// looks commands up here (and in the program's own, see [`Program`]), so
/// the usage text, the help and the manual cannot leave one out.
pub const RRDTOOL_COMMANDS: &[Command] = &[
    rrdtool("create", "create a new RRD", help_text::CREATE, create::run),
    rrdtool("update", "store new values", help_text::UPDATE, |a, o| update::run(a, o, false)),
    rrdtool("updatev", "store new values, print what was written", help_text::UPDATEV, |a, o| {
        update::run(a, o, true)
    }),
    rrdtool("graph", "draw a graph (PNG, SVG)", help_text::GRAPH, |a, o| graph::run(a, o, false)),
    rrdtool("graphv", "draw a graph, print its details", help_text::GRAPHV, |a, o| graph::run(a, o, true)),
    rrdtool("dump", "an RRD as XML", help_text::DUMP, dump::run),
    rrdtool("restore", "an RRD from XML (plain or gzip-compressed)", help_text::RESTORE, restore::run),
    rrdtool("last", "time of the last update", help_text::LAST, last::run),
    rrdtool("lastupdate", "the last update's time and values", help_text::LASTUPDATE, lastupdate::run),
    rrdtool("first", "time of an archive's first row", help_text::FIRST, first::run),
    rrdtool("info", "the header, as key = value lines", help_text::INFO, info::run),
    rrdtool("list", "the RRDs of a directory", help_text::LIST, list::run),
    rrdtool("fetch", "consolidated rows of a time range", help_text::FETCH, fetch::run),
    rrdtool("tune", "change settings, add or delete sources and archives", help_text::TUNE, tune::run),
    rrdtool("resize", "grow or shrink an archive", help_text::RESIZE, resize::run),
    rrdtool("xport", "graph data as XML or JSON", help_text::XPORT, xport::run),
    rrdtool(
        "flushcached",
        "make a daemon write a file's pending values",
        help_text::FLUSHCACHED,
        flushcached::run,
    ),
];

const fn rrdtool(name: &'static str, summary: &'static str, help: &'static str, run: Run) -> Command {
    Command { name, summary, help: Some(help), run }
}

/// The program this process is: the name its usage and help texts use,
/// and the commands it has besides rrdtool's. The `rrdscale` binary sets it
/// once at start ([`set_program`]); the library (`librrd.so.8`) keeps the
/// default, rrdtool with no more commands.
pub struct Program {
    pub name: &'static str,
    pub own: &'static [Command],
}

static PROGRAM: OnceLock<Program> = OnceLock::new();

/// Sets the program this process is; only the first call counts.
pub fn set_program(program: Program) {
    let _ = PROGRAM.set(program);
}

fn program() -> &'static Program {
    PROGRAM.get_or_init(|| Program { name: "rrdtool", own: &[] })
}

/// Every command the program runs: rrdtool's, then its own.
pub fn commands() -> impl Iterator<Item = &'static Command> {
    RRDTOOL_COMMANDS.iter().chain(program().own.iter())
}

fn find(name: &str) -> Option<&'static Command> {
    commands().find(|c| c.name == name)
}

/// Whether this process is in pipe mode (`rrdscale -`): its usage text
/// then also lists the commands only pipe mode has.
static PIPE_MODE: AtomicBool = AtomicBool::new(false);

/// Runs one command line (without the program name), writing its output.
pub fn dispatch(args: &[String], out: &mut dyn Write) -> Result<()> {
    let pipe_mode = PIPE_MODE.load(Ordering::Relaxed);
    let Some((name, rest)) = args.split_first() else {
        // rrdtool prints its usage and exits 0.
        return usage(out);
    };
    match name.as_str() {
        // `help CMD` prints that command's help; pipe mode, as rrdtool's,
        // answers every form of help with the usage text.
        "help" if !pipe_mode && rest.len() == 1 => match find(&rest[0]) {
            Some(Command { help: Some(help), .. }) => print_help(out, Some(help)),
            Some(own) => (own.run)(&["--help".to_string()], out),
            None => usage(out),
        },
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
        "-" if pipe_mode && rest.is_empty() => usage(out),
        "-" if pipe_mode => bail!("unknown function '-'"),
        "-" => {
            PIPE_MODE.store(true, Ordering::Relaxed);
            pipe::run_remote(rest, out)
        }
        // rrdtool answers one of its commands alone with that command's
        // help (pipe mode: the usage text), any other lone word with the
        // usage text, status 0 in both cases; rrdscale's own commands run.
        other => match find(other) {
            Some(Command { help: Some(help), .. }) if rest.is_empty() => {
                print_help(out, (!pipe_mode).then_some(*help))
            }
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

/// The usage text: under rrdtool's name, rrdtool's (its list of commands);
/// under rrdscale's, every command with its summary.
fn usage(out: &mut dyn Write) -> Result<()> {
    if program().name == "rrdscale" {
        return rrdscale_usage(out);
    }
    print_help(out, None)
}

fn rrdscale_usage(out: &mut dyn Write) -> Result<()> {
    writeln!(out, "{}", version_line())?;
    writeln!(out)?;
    writeln!(out, "Usage: rrdscale [options] command command_options")?;
    writeln!(out, "       rrdscale - [directory]   (commands on standard input, one per line)")?;
    writeln!(out, "       rrdscale help command    (that command's options)")?;
    writeln!(out)?;
    writeln!(out, "Commands:")?;
    let width = commands().map(|c| c.name.len()).max().unwrap_or(0);
    for c in commands() {
        writeln!(out, "  {:width$}  {}", c.name, c.summary)?;
    }
    if PIPE_MODE.load(Ordering::Relaxed) {
        writeln!(out)?;
        writeln!(out, "Valid remote commands: quit, ls, cd, mkdir, pwd")?;
    }
    Ok(())
}

/// rrdtool's layout: the banner, the `Usage:` line, then a command's help
/// (or, without one, the list of rrdtool's commands), then the closing
/// paragraph. Only the banner and the closing paragraph, which name the
/// authors and the licence, are rrdscale's own.
fn print_help(out: &mut dyn Write, help: Option<&str>) -> Result<()> {
    let name = program().name;
    writeln!(out, "{}", version_line())?;
    writeln!(out)?;
    writeln!(out, "Usage: {name} [options] command command_options")?;
    match help {
        Some(text) => out.write_all(text.replace("{prog}", name).as_bytes())?,
        None => {
            out.write_all(help_text::COMMAND_LIST.as_bytes())?;
            if PIPE_MODE.load(Ordering::Relaxed) {
                writeln!(out, "Valid remote commands: quit, ls, cd, mkdir, pwd")?;
                writeln!(out)?;
            }
        }
    }
    out.write_all(CLOSING.as_bytes())?;
    Ok(())
}

/// The paragraph after a help text (rrdtool's names its licence).
const CLOSING: &str = "rrdscale is distributed under the terms of the MIT or the Apache 2.0\n\
licence, at your option.\n\
\n\
For more information read the rrdscale manual pages\n\
\n";

/// A command's help as `help CMD` prints it (the commands call this when
/// their arguments are too few to run, as rrdtool's do); in pipe mode the
/// usage text, as rrdtool's pipe mode answers.
pub fn command_help(out: &mut dyn Write, name: &str) -> Result<()> {
    let help = find(name).and_then(|c| c.help);
    assert!(help.is_some(), "{name} is not one of rrdtool's commands");
    if PIPE_MODE.load(Ordering::Relaxed) {
        return usage(out);
    }
    print_help(out, help)
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
