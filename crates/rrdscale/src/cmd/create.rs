//! `rrdscale create`: rrdtool's options, then the engine.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`) the daemon creates the file
//! (CREATE, with `-b`/`-s` resolved to seconds here, `-s 0` when no step
//! was given, `-r`/`-t` names as given), as rrdtool 1.7.2 does. An
//! unreachable daemon means creating the file directly, without an error.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use rrd_client::{CreateRequest, Daemon};
use rrd_engine::create::{self, CreateOptions};

use crate::opts::{self, flag, value};

const SPECS: &[opts::Spec] = &[
    value(Some('b'), "start"),
    value(Some('s'), "step"),
    value(Some('d'), "daemon"),
    value(Some('r'), "source"),
    value(Some('t'), "template"),
    flag(Some('O'), "no-overwrite"),
];

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    if args.is_empty() {
        return super::command_usage(out, "create filename [--start|-b start time] [--step|-s step] [--template|-t template-file] [--source|-r source-file] [--no-overwrite|-O] [--daemon|-d address] [DS:ds-name:DST:dst arguments] [RRA:CF:cf arguments]");
    }
    let p = opts::parse(args, SPECS)?;
    let now = super::now_secs();
    let mut options = CreateOptions { no_overwrite: p.has("no-overwrite"), ..Default::default() };
    if let Some(start) = p.value("start") {
        let t = rrd_engine::attime::parse_time(start, now).map_err(|e| anyhow::anyhow!("start time: {e}"))?;
        if t < 3600 * 24 * 365 * 10 {
            bail!("the first entry to the RRD should be after 1980");
        }
        options.start = Some(t);
    }
    if let Some(step) = p.value("step") {
        let s =
            rrd_engine::numparse::scaled_duration(step, 1).map_err(|e| anyhow::anyhow!("step size: {e}"))?;
        options.step_secs = Some(s);
    }
    options.template = p.value("template").map(PathBuf::from);
    options.sources = p.values("source").into_iter().map(PathBuf::from).collect();
    // rrdtool checks the sources while reading its options, before it
    // looks for the file name.
    rrd_engine::prefill::check_source_paths(&options.sources)?;
    let Some((file, defs)) = p.operands.split_first() else {
        bail!("need name of an rrd file to create");
    };
    if let Daemon::Connected(mut session) = rrd_client::daemon(p.value("daemon")) {
        let req = CreateRequest {
            file: file.clone(),
            step_secs: options.step_secs.unwrap_or(0),
            start: options.start,
            no_overwrite: options.no_overwrite,
            sources: p.values("source").into_iter().map(str::to_string).collect(),
            template: p.value("template").map(str::to_string),
            definitions: defs.to_vec(),
        };
        return match session.create(&req) {
            Err(e) if e.message().is_some() => Err(e.into()),
            _ => Ok(()),
        };
    }
    create::create(std::path::Path::new(file), &options, defs, now)?;
    Ok(())
}
