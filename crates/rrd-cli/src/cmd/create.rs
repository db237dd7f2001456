//! `rrdscale create`: rrdtool's options, then the engine.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`) the daemon creates the file
//! (CREATE, with `-b`/`-s` resolved to seconds here, `-s 0` when no step
//! was given, `-r`/`-t` names as given), as rrdtool 1.7.2 does. An
//! unreachable daemon means creating the file directly, without an error.
//!
//! A file created here is durable under its name when the command reports
//! success (rrdtool 1.7.2 never syncs a new file); in pipe mode creates
//! share their syncs (see `pipe.rs`). An interrupted create (SIGINT,
//! SIGTERM, SIGHUP) removes its temporary file.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use rrd_client::{CreateRequest, Daemon};
use rrd_engine::create::{self, CreateOptions};
use rrd_engine::newfile::NewFiles;

use crate::opts::{self, flag, value};

const SPECS: &[opts::Spec] = &[
    value(Some('b'), "start"),
    value(Some('s'), "step"),
    value(Some('d'), "daemon"),
    value(Some('r'), "source"),
    value(Some('t'), "template"),
    flag(Some('O'), "no-overwrite"),
];

/// A `create` command line, parsed.
pub enum Prepared {
    /// No arguments: the usage text is the answer.
    Usage,
    /// For the daemon (`--daemon` or `RRDCACHED_ADDRESS`, reachable).
    Daemon(Box<(rrd_client::Session, CreateRequest)>),
    /// To be created here.
    Local { file: PathBuf, options: CreateOptions, defs: Vec<String>, now: i64 },
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    execute(prepare(args)?, out)
}

/// Runs a prepared create by itself: a local file is durable under its
/// name before this returns (a group of one file), so before the command
/// reports success.
pub fn execute(prepared: Prepared, out: &mut dyn Write) -> Result<()> {
    match prepared {
        Prepared::Usage => super::command_help(out, "create"),
        Prepared::Daemon(d) => {
            let (mut session, req) = *d;
            match session.create(&req) {
                Err(e) if e.message().is_some() => Err(e.into()),
                _ => Ok(()),
            }
        }
        Prepared::Local { file, options, defs, now } => {
            let mut group = NewFiles::new();
            group.remove_temps_on_signal(true);
            create::create_in(&mut group, &file, &options, &defs, now)?;
            group.commit().pop().expect("one staged file, one result")?;
            Ok(())
        }
    }
}

/// Parses a `create` command line as rrdtool does (and connects to the
/// daemon when it names one); writes nothing.
pub fn prepare(args: &[String]) -> Result<Prepared> {
    if args.is_empty() {
        return Ok(Prepared::Usage);
    }
    let p = opts::parse(args, SPECS)?;
    let now = super::now_secs();
    let mut options = CreateOptions { no_overwrite: p.has("no-overwrite"), ..Default::default() };
    if let Some(start) = p.value("start") {
        let t = rrd_lang::attime::parse_time(start, now).map_err(|e| anyhow::anyhow!("start time: {e}"))?;
        if t < 3600 * 24 * 365 * 10 {
            bail!("the first entry to the RRD should be after 1980");
        }
        options.start = Some(t);
    }
    if let Some(step) = p.value("step") {
        let s =
            rrd_lang::numparse::scaled_duration(step, 1).map_err(|e| anyhow::anyhow!("step size: {e}"))?;
        options.step_secs = Some(s);
    }
    options.template = p.value("template").map(PathBuf::from);
    options.sources = p.values("source").into_iter().map(PathBuf::from).collect();
    // rrdtool checks the sources while reading its options, before it
    // looks for the file name.
    rrd_engine::create::check_source_paths(&options.sources)?;
    let Some((file, defs)) = p.operands.split_first() else {
        bail!("need name of an rrd file to create");
    };
    if let Daemon::Connected(session) = rrd_client::daemon(p.value("daemon")) {
        let req = CreateRequest {
            file: file.clone(),
            step_secs: options.step_secs.unwrap_or(0),
            start: options.start,
            no_overwrite: options.no_overwrite,
            sources: p.values("source").into_iter().map(str::to_string).collect(),
            template: p.value("template").map(str::to_string),
            definitions: defs.to_vec(),
        };
        return Ok(Prepared::Daemon(Box::new((session, req))));
    }
    Ok(Prepared::Local { file: PathBuf::from(file), options, defs: defs.to_vec(), now })
}
