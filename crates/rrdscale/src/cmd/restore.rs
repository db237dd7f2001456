//! `rrdscale restore`: rrdtool's options and operands, then the engine's
//! restore.
//!
//! `file.xml` may be `-` for standard input (read up to end of file or a
//! Ctrl-Z byte, the end marker of rrdtool's pipe mode); `file.rrd` may be
//! `-` for standard output, as with rrdtool.
//!
//! Pipe mode holds the standard input lock while it reads commands, so it
//! must call [`run_with_input`] with its reader: [`run`] locks standard
//! input itself (only when the XML comes from `-`).

use std::io::{BufRead, Write};
use std::path::Path;

use anyhow::{anyhow, Result};
use rrd_engine::restore::{self, RestoreError, RestoreOptions};

use crate::opts::{self, flag};

const SPECS: &[opts::Spec] = &[flag(Some('r'), "range-check"), flag(Some('f'), "force-overwrite")];

const SYNOPSIS: &str = "restore [--range-check|-r] [--force-overwrite|-f] filename.xml filename.rrd";

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    execute(args, out, None)
}

/// As [`run`], reading an XML given as `-` from `input` (up to end of input
/// or a Ctrl-Z byte) instead of locking standard input.
#[allow(dead_code)] // for pipe mode
pub fn run_with_input(args: &[String], out: &mut dyn Write, input: &mut dyn BufRead) -> Result<()> {
    execute(args, out, Some(input))
}

fn execute(args: &[String], out: &mut dyn Write, input: Option<&mut dyn BufRead>) -> Result<()> {
    if args.is_empty() {
        return super::command_usage(out, SYNOPSIS);
    }
    let parsed = opts::parse(args, SPECS)?;
    let options = RestoreOptions {
        range_check: parsed.has("range-check"),
        force_overwrite: parsed.has("force-overwrite"),
    };
    let [xml_path, rrd_path] = parsed.operands.as_slice() else {
        return Err(anyhow!(
            "usage rrdscale restore [--range-check|-r] [--force-overwrite|-f] file.xml file.rrd"
        ));
    };
    let xml = if xml_path == "-" {
        let mut buf = Vec::new();
        let read = match input {
            Some(r) => r.read_until(0x1a, &mut buf),
            None => std::io::stdin().lock().read_until(0x1a, &mut buf),
        };
        read.map_err(|cause| RestoreError::Read { path: "-".into(), cause })?;
        if buf.last() == Some(&0x1a) {
            buf.pop();
        }
        buf
    } else {
        std::fs::read(xml_path).map_err(|cause| RestoreError::Read { path: xml_path.into(), cause })?
    };
    let restored = restore::parse(&xml, options.range_check)?;
    let cur_rows = restored.random_cur_rows();
    if rrd_path == "-" {
        restored.write_to(out, &cur_rows).map_err(|cause| RestoreError::Write { path: "-".into(), cause })?;
    } else {
        restore::write_file(&restored, &cur_rows, Path::new(rrd_path), options.force_overwrite)?;
    }
    Ok(())
}
