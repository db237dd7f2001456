//! `rrdscale dump`: rrdtool's options and operands, then the engine's dump.
//!
//! Options as in rrdtool 1.7.2: `--header|-h none|xsd|dtd` (any other value
//! is ignored, as rrdtool ignores it), `--no-header|-n`, and
//! `--daemon|-d address`, accepted and ignored because rrdscale has no
//! caching daemon to flush. The XML goes to standard output, or to the file
//! named by a second operand (created or truncated).

use std::fs::File;
use std::io::{BufWriter, ErrorKind, Write};
use std::path::Path;

use anyhow::{anyhow, Result};
use rrd_engine::dump::{dump, DumpHeader, DumpOptions};
use rrd_engine::Error;

use crate::opts::{self, flag, value};

const SPECS: &[opts::Spec] =
    &[value(Some('h'), "header"), flag(Some('n'), "no-header"), value(Some('d'), "daemon")];

const SYNOPSIS: &str =
    "dump [--header|-h {none,xsd,dtd}] [--no-header|-n] [--daemon|-d address] file.rrd [file.xml]";

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    if args.is_empty() {
        return super::command_usage(out, SYNOPSIS);
    }
    let usage = || anyhow!("usage rrdscale {SYNOPSIS}");
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
    // Leaves no pages of a cold file behind in the page cache.
    let result = rrd_engine::rrd::read_leaving_no_residue(Path::new(rrd_path), |rrd| {
        Ok(match xml_path {
            None => dump(rrd, out, &options).map_err(anyhow::Error::from),
            Some(path) => (|| {
                let file = File::create(path).map_err(|e| {
                    anyhow!("opening '{path}' for writing: {}", rrd_engine::error::os_message(&e))
                })?;
                let mut w = BufWriter::with_capacity(256 * 1024, file);
                dump(rrd, &mut w, &options)
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
