//! `rrdscale dump`: rrdtool's options and operands, then the engine's dump.
//!
//! Options as in rrdtool 1.7.2: `--header|-h none|xsd|dtd` (any other value
//! is ignored, as rrdtool ignores it), `--no-header|-n`, and
//! `--daemon|-d address`. The XML goes to standard output, or to the file
//! named by a second operand (created or truncated).
//!
//! With a daemon (`--daemon`, else `RRDCACHED_ADDRESS`), as rrdtool 1.7.2:
//! the daemon is asked to FLUSH the file first, so the dump includes the
//! values still pending there; a failed flush fails the command before
//! anything is written. Then, as rrdtool 1.9, the daemon is asked for the
//! XML (`DUMP`, streamed to the output as it arrives; an output file that
//! ends up incomplete is removed, as rrdtool removes it); a daemon that
//! does not know DUMP (rrdcached 1.7.2) means the file is read here. A daemon that cannot be reached means the file is
//! dumped anyway, then the command fails with the connection error
//! (rrdtool's error text stays set; see `client.rs`).

use std::fs::File;
use std::io::{BufWriter, ErrorKind, Write};
use std::path::Path;

use anyhow::{anyhow, Result};
use rrd_engine::dump::{dump, DumpHeader, DumpOptions};
use rrd_engine::Error;

use crate::opts::{self, flag, value};

const SPECS: &[opts::Spec] =
    &[value(Some('h'), "header"), flag(Some('n'), "no-header"), value(Some('d'), "daemon")];

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    if args.is_empty() {
        return super::command_help(out, "dump");
    }
    // rrdtool's text, line breaks included (librrd callers read it from
    // rrd_get_error).
    let usage = || {
        anyhow!(
            "usage rrdtool dump [--header|-h {{none,xsd,dtd}}]\n[--no-header|-n]\n[--daemon|-d address]\nfile.rrd [file.xml]"
        )
    };
    let parsed = opts::parse(args, SPECS).map_err(|_| usage())?;
    let mut options = DumpOptions::default();
    // Later options win, as in rrdtool's getopt loop.
    for (name, val) in &parsed.opts {
        match *name {
            "header" => {
                if let Some(h) = val.as_deref().and_then(DumpHeader::parse) {
                    options.header = h;
                }
            }
            "no-header" => options.header = DumpHeader::None,
            _ => {}
        }
    }
    let (rrd_path, xml_path) = match parsed.operands.as_slice() {
        [rrd] => (rrd, None),
        [rrd, xml] => (rrd, Some(xml)),
        _ => return Err(usage()),
    };
    match rrd_client::daemon(parsed.value("daemon")) {
        rrd_client::Daemon::Absent => write_dump(rrd_path, xml_path.map(String::as_str), &options, out),
        rrd_client::Daemon::Unreachable(e) => super::client::after_fallback(
            write_dump(rrd_path, xml_path.map(String::as_str), &options, out),
            e,
        ),
        rrd_client::Daemon::Connected(mut session) => {
            session.flush(rrd_path).map_err(|e| super::client::flush_failure(rrd_path, e))?;
            if daemon_dump(&mut session, rrd_path, xml_path.map(String::as_str), &options, out)? {
                return Ok(());
            }
            drop(session);
            write_dump(rrd_path, xml_path.map(String::as_str), &options, out)
        }
    }
}

/// The header's name in a DUMP request (librrd's `str_opt_xmlheader`).
fn header_name(header: DumpHeader) -> &'static str {
    match header {
        DumpHeader::Dtd => "dtd",
        DumpHeader::Xsd => "xsd",
        DumpHeader::None => "none",
    }
}

/// The daemon's DUMP to `xml_path` or `out`; `false` (nothing written)
/// when the daemon does not know DUMP.
fn daemon_dump(
    client: &mut rrd_client::Client,
    rrd_path: &str,
    xml_path: Option<&str>,
    options: &DumpOptions,
    out: &mut dyn Write,
) -> Result<bool> {
    let header = header_name(options.header);
    let Some(path) = xml_path else {
        return match client.dump(rrd_path, header, out) {
            Ok(outcome) => Ok(outcome == rrd_client::DumpOutcome::Dumped),
            // `rrdscale dump --daemon ... f.rrd | head`: the reader is gone.
            Err(rrd_client::ClientError::Stream(why)) if why == rrd_lang::ctext::strerror(libc::EPIPE) => {
                Ok(true)
            }
            Err(e) => Err(e.into()),
        };
    };
    let file = File::create(path)
        .map_err(|e| anyhow!("opening '{path}' for writing: {}", rrd_lang::ctext::io_text(&e)))?;
    let mut w = BufWriter::with_capacity(256 * 1024, file);
    let result = client.dump(rrd_path, header, &mut w).map_err(anyhow::Error::from).and_then(|outcome| {
        w.flush().map(|()| outcome).map_err(|e| anyhow!("writing '{path}': {}", rrd_lang::ctext::io_text(&e)))
    });
    match result {
        Ok(rrd_client::DumpOutcome::Dumped) => Ok(true),
        // Created for nothing: the file is dumped here instead.
        Ok(rrd_client::DumpOutcome::Unknown) => Ok(false),
        Err(e) => {
            drop(w);
            let _ = std::fs::remove_file(path);
            Err(e)
        }
    }
}

/// Dumps the file at `rrd_path` to `xml_path`, or to `out` without one.
pub fn write_dump(
    rrd_path: &str,
    xml_path: Option<&str>,
    options: &DumpOptions,
    out: &mut dyn Write,
) -> Result<()> {
    // Leaves no pages of a cold file behind in the page cache.
    let result = rrd_engine::rrd::read_leaving_no_residue(Path::new(rrd_path), |rrd| {
        Ok(match xml_path {
            None => dump(rrd, out, options).map_err(anyhow::Error::from),
            Some(path) => (|| {
                let file = File::create(path)
                    .map_err(|e| anyhow!("opening '{path}' for writing: {}", rrd_lang::ctext::io_text(&e)))?;
                let mut w = BufWriter::with_capacity(256 * 1024, file);
                dump(rrd, &mut w, options)
                    .and_then(|()| w.flush().map_err(|source| Error::Io { path: path.into(), source }))?;
                Ok(())
            })(),
        })
    })?;
    match result {
        // `rrdscale dump f.rrd | head`: the reader is gone, nothing to report.
        Err(e) if matches!(e.downcast_ref::<Error>(), Some(Error::Io { source, .. }) if source.kind() == ErrorKind::BrokenPipe) => {
            Ok(())
        }
        other => other,
    }
}
