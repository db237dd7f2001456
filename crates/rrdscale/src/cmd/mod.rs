//! One module per subcommand, and the table that dispatches to them.

use std::io::Write;

use anyhow::{bail, Result};

mod bench;
mod client;
mod create;
mod daemon;
mod dump;
mod fadvise;
mod fetch;
mod fincore;
mod first;
mod flushcached;
mod graph;
mod info;
mod last;
mod lastupdate;
mod list;
mod pagesim;
mod pipe;
mod resize;
mod restore;
mod tune;
mod update;
mod web;
mod xport;

/// Runs one command line (without the program name), writing its output.
pub fn dispatch(args: &[String], out: &mut dyn Write) -> Result<()> {
    let Some((name, rest)) = args.split_first() else {
        usage(out)?;
        bail!("no command given");
    };
    match name.as_str() {
        "-h" | "--help" | "help" => usage(out),
        "-" => pipe::run(&mut std::io::BufReader::with_capacity(1 << 20, std::io::stdin()), out),
        "daemon" => daemon::run(rest, out),
        "dump" => dump::run(rest, out),
        "fincore" => fincore::run(rest, out),
        "fadvise" => fadvise::run(rest, out),
        "fetch" => fetch::run(rest, out),
        "first" => first::run(rest, out),
        "graph" => graph::run(rest, out, false),
        "graphv" => graph::run(rest, out, true),
        "flushcached" => flushcached::run(rest, out),
        "info" => info::run(rest, out),
        "last" => last::run(rest, out),
        "lastupdate" => lastupdate::run(rest, out),
        "list" => list::run(rest, out),
        "xport" => xport::run(rest, out),
        "web" => web::run(rest, out),
        "restore" => restore::run(rest, out),
        "tune" => tune::run(rest, out),
        "resize" => resize::run(rest, out),
        "bench" => bench::run(rest, out),
        "create" => create::run(rest, out),
        "pagesim" => pagesim::run(rest, out),
        "update" => update::run(rest, out, false),
        "updatev" => update::run(rest, out, true),
        other => {
            let _ = rest;
            bail!("unknown command '{other}'")
        }
    }
}

/// The text printed after `ERROR: `. Engine errors already name the file
/// and the cause in one sentence, as rrdtool's messages do.
pub fn error_message(e: &anyhow::Error) -> String {
    e.to_string()
}

fn usage(out: &mut dyn Write) -> Result<()> {
    writeln!(out, "Usage: rrdscale COMMAND [options]")?;
    writeln!(out, "Commands mirror rrdtool's: create update updatev fetch info last first lastupdate")?;
    writeln!(
        out,
        "dump restore tune resize xport list flushcached, and '-' for commands on standard input."
    )?;
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
