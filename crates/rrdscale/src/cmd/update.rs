//! `rrdscale update` and `updatev`: parsing rrdtool's options into an
//! [`UpdateRequest`], running it, and printing what rrdtool prints.
//! Pipe mode reuses the parsing and printing with its batch updater.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use rrd_engine::batch::UpdateRequest;
use rrd_engine::update::{self, UpdateOptions, UpdateReport};

use crate::opts::{self, flag, value};

const SPECS: &[opts::Spec] = &[
    value(Some('t'), "template"),
    value(Some('d'), "daemon"),
    flag(Some('s'), "skip-past-updates"),
    value(Some('L'), "locking"),
];

const SYNOPSIS: &str = "update filename [--template|-t ds-name:ds-name:...] [--skip-past-updates|-s] [--daemon|-d <address>] time|N:value[:value...]";

/// Parses `update` arguments. `Ok(None)`: no arguments at all (rrdtool
/// prints its help and succeeds).
pub fn parse_request(args: &[String]) -> Result<Option<UpdateRequest>> {
    if args.is_empty() {
        return Ok(None);
    }
    let p = opts::parse(args, SPECS)?;
    let opts = UpdateOptions {
        template: p.value("template").map(str::to_string),
        skip_past_updates: p.has("skip-past-updates"),
    };
    if p.operands.len() < 2 {
        bail!("Not enough arguments");
    }
    let (file, values) = p.operands.split_first().expect("checked above");
    Ok(Some(UpdateRequest { path: PathBuf::from(file), args: values.to_vec(), opts }))
}

pub fn run(args: &[String], out: &mut dyn Write, verbose: bool) -> Result<()> {
    let req = match parse_request(args) {
        Ok(Some(r)) => r,
        Ok(None) => return super::command_usage(out, SYNOPSIS),
        Err(e) => {
            if verbose {
                writeln!(out, "return_value = -1")?;
            }
            return Err(e);
        }
    };
    let result = update::update_file(&req.path, &req.args, &req.opts, verbose);
    report(out, &req.path, result, verbose)
}

/// Prints an update's outcome as rrdtool does: for `updatev`, the return
/// value and one line per value written; the first error as the result.
pub fn report(
    out: &mut dyn Write,
    path: &Path,
    result: rrd_engine::Result<UpdateReport>,
    verbose: bool,
) -> Result<()> {
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            if verbose {
                writeln!(out, "return_value = -1")?;
            }
            return Err(e.into());
        }
    };
    if verbose {
        let rc = if report.error.is_some() { -1 } else { 0 };
        writeln!(out, "return_value = {rc}")?;
        let summary = report.summary.as_deref().unwrap_or_default();
        if !summary.is_empty() {
            let rrd = rrd_engine::Rrd::open(path, false)?;
            for (time, rra_index, values) in summary {
                let rra = &rrd.header.rra[*rra_index];
                for (d, v) in values.iter().enumerate() {
                    writeln!(
                        out,
                        "[{time}]RRA[{}][{}]DS[{}] = {}",
                        rra.cf_name.as_str(),
                        rra.pdp_count,
                        rrd.header.ds[d].name.as_str(),
                        super::fmt_info_value(*v)
                    )?;
                }
            }
        }
    }
    if let Some(e) = report.error {
        return Err(e.into());
    }
    Ok(())
}
