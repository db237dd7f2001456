//! `rrdscale update` and `updatev`.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Result};
use rrd_engine::update::{self, UpdateOptions};

use crate::opts::{self, flag, value};

const SPECS: &[opts::Spec] = &[
    value(Some('t'), "template"),
    value(Some('d'), "daemon"),
    flag(Some('s'), "skip-past-updates"),
    value(Some('L'), "locking"),
];

pub fn run(args: &[String], out: &mut dyn Write, verbose: bool) -> Result<()> {
    if args.is_empty() {
        return super::command_usage(
            out,
            "update filename [--template|-t ds-name:ds-name:...] [--skip-past-updates|-s] [--daemon|-d <address>] time|N:value[:value...]",
        );
    }
    let p = opts::parse(args, SPECS)?;
    let options = UpdateOptions {
        template: p.value("template").map(str::to_string),
        skip_past_updates: p.has("skip-past-updates"),
    };
    if p.operands.len() < 2 {
        if verbose {
            writeln!(out, "return_value = -1")?;
        }
        bail!("Not enough arguments");
    }
    let (file, values) = p.operands.split_first().expect("checked above");
    let report = match update::update_file(Path::new(file), values, &options, verbose) {
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
        let header = rrd_engine::Rrd::open(Path::new(file), false).ok();
        for (time, rra_index, values) in report.summary.unwrap_or_default() {
            for (d, v) in values.iter().enumerate() {
                let (cf, pdp, ds) = match &header {
                    Some(r) => (
                        r.header.rra[rra_index].cf_name.as_str().to_string(),
                        r.header.rra[rra_index].pdp_count,
                        r.header.ds[d].name.as_str().to_string(),
                    ),
                    None => (String::from("?"), 0, String::from("?")),
                };
                writeln!(out, "[{time}]RRA[{cf}][{pdp}]DS[{ds}] = {}", super::fmt_info_value(*v))?;
            }
        }
    }
    if let Some(e) = report.error {
        return Err(e.into());
    }
    Ok(())
}
