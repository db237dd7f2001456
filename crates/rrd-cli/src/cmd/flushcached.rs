//! `rrdscale flushcached [--daemon|-d ADDR] FILE...`: asks the daemon to
//! write each file's pending values (one FLUSH per file, in order), as
//! `rrdtool flushcached` 1.7.2 does. Without `--daemon`,
//! `RRDCACHED_ADDRESS` names the daemon; with neither, it is an error.
//!
//! The first failure stops the command. Its message reproduces rrdtool's
//! exactly, quirk included: 1.7.2 formats that message into the very buffer
//! that holds the failure's own text, so what it prints is the prefix
//! `Flushing of file "F" failed: `, then that same prefix again followed by
//! whatever of the original text lay beyond the prefix's length, then
//! `. Skipping remaining N file(s).`, N counting every file after the FIRST
//! one. A failure without a text reads `unknown error`.

use std::io::Write;

use anyhow::{anyhow, bail, Result};
use rrd_client::{daemon, ClientError, Daemon};

use crate::opts;

/// rrdtool's message for the failure to flush `file`, `files` being how
/// many names the command was given.
fn failure_text(file: &str, e: &ClientError, files: usize) -> String {
    let prefix = format!("Flushing of file \"{file}\" failed: ");
    let original = e.message().unwrap_or_default();
    let shown = if original.is_empty() {
        "unknown error".to_string()
    } else {
        // The original text as it stood when printf read it: overwritten
        // by the prefix up to the prefix's length.
        let tail = original.as_bytes().get(prefix.len()..).unwrap_or_default();
        format!("{prefix}{}", String::from_utf8_lossy(tail))
    };
    let remaining = files.saturating_sub(1);
    let plural = if remaining == 1 { "" } else { "s" };
    format!("{prefix}{shown}. Skipping remaining {remaining} file{plural}.")
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    if args.is_empty() {
        return super::command_help(out, "flushcached");
    }
    let parsed = opts::parse(args, &[opts::value(Some('d'), "daemon")])?;
    if parsed.operands.is_empty() {
        bail!("Usage: rrdtool flushcached [--daemon|-d <addr>] <file> [<file> ...]");
    }
    let option = parsed.value("daemon");
    let mut session = match daemon(option) {
        Daemon::Connected(s) => s,
        Daemon::Unreachable(e) => return Err(e.into()),
        Daemon::Absent => bail!(
            "Daemon address \"{}\" unknown. Please use the \"--daemon\" option to set an address on the \
             command line or set the \"{}\" environment variable.",
            option.unwrap_or("(null)"),
            rrd_client::ENV_ADDRESS
        ),
    };
    for file in &parsed.operands {
        if let Err(e) = session.flush(file) {
            return Err(anyhow!(failure_text(file, &e, parsed.operands.len())));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_text_reproduces_rrdtools_overlap() {
        let e = ClientError::Daemon {
            address: "unix:/tmp/exp/sock".into(),
            message: "No such file: /tmp/exp/nx.rrd.".into(),
        };
        assert_eq!(
            failure_text("nx.rrd", &e, 2),
            "Flushing of file \"nx.rrd\" failed: Flushing of file \"nx.rrd\" failed: uch file: \
             /tmp/exp/nx.rrd.. Skipping remaining 1 file."
        );
        let r =
            ClientError::Realpath { path: "nodir/nx.rrd".into(), reason: "No such file or directory".into() };
        assert_eq!(
            failure_text("nodir/nx.rrd", &r, 1),
            "Flushing of file \"nodir/nx.rrd\" failed: Flushing of file \"nodir/nx.rrd\" failed: \
             directory. Skipping remaining 0 files."
        );
        assert_eq!(
            failure_text("", &ClientError::Silent, 3),
            "Flushing of file \"\" failed: unknown error. Skipping remaining 2 files."
        );
        // A text shorter than the prefix leaves only the prefix.
        let short = ClientError::Fetch("x".into());
        assert_eq!(
            failure_text("f", &short, 1),
            "Flushing of file \"f\" failed: Flushing of file \"f\" failed: . Skipping remaining 0 files."
        );
    }
}
