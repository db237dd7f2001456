//! One module per subcommand, and the table that dispatches to them.

use std::io::Write;

use anyhow::{bail, Result};

/// Runs one command line (without the program name), writing its output.
pub fn dispatch(args: &[String], out: &mut dyn Write) -> Result<()> {
    let Some((name, rest)) = args.split_first() else {
        usage(out)?;
        bail!("no command given");
    };
    match name.as_str() {
        "-h" | "--help" | "help" => usage(out),
        other => {
            let _ = rest;
            bail!("unknown command '{other}'")
        }
    }
}

/// The text printed after `ERROR: `: the causes joined, like rrdtool's
/// single-line messages.
pub fn error_message(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = e.chain().map(|c| c.to_string()).collect();
    parts.dedup();
    parts.join(": ")
}

fn usage(out: &mut dyn Write) -> Result<()> {
    writeln!(out, "Usage: rrdscale COMMAND [options]")?;
    writeln!(out, "Commands mirror rrdtool's: create update updatev fetch info last first lastupdate")?;
    writeln!(out, "dump restore tune resize xport list, and '-' for commands on standard input.")?;
    Ok(())
}
