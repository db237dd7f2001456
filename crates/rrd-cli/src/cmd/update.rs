//! `rrdscale update` and `updatev`: parsing rrdtool's options into an
//! [`UpdateRequest`], running it, and printing what rrdtool prints.
//! Pipe mode reuses the parsing and printing with its batch updater.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`), `update` sends the values
//! to the daemon instead, as rrdtool 1.7.2 does: an unreachable daemon is an
//! error (no fallback to the file), `--template` is mapped to DS order here
//! (the file's header is read for its DS names), `--template` together with
//! `--skip-past-updates` is refused, and `--skip-past-updates` alone is
//! ignored (the daemon refuses past values as usual). `updatev` does not
//! know `--daemon` and ignores `RRDCACHED_ADDRESS`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use rrd_client::Daemon;
use rrd_engine::batch::UpdateRequest;
use rrd_engine::update::{self, UpdateOptions, UpdateReport};

use crate::opts::{self, flag, value};

const SPECS: &[opts::Spec] = &[
    value(Some('t'), "template"),
    value(Some('d'), "daemon"),
    flag(Some('s'), "skip-past-updates"),
    value(Some('L'), "locking"),
];

/// The longest message rrdtool's option parser reports (its buffer is 48
/// bytes with the NUL).
const OPTPARSE_MESSAGE_MAX: usize = 47;

/// Parses `update` arguments (`updatev`'s when `verbose`): the request and
/// the `--daemon` address given, if any. `Ok(None)`: no arguments at all
/// (rrdtool prints its help and succeeds).
pub fn parse(args: &[String], verbose: bool) -> Result<Option<(UpdateRequest, Option<String>)>> {
    if args.is_empty() {
        return Ok(None);
    }
    if verbose {
        if let Some(option) = daemon_option_of_updatev(args) {
            // rrdtool's option parser keeps its message in 48 bytes.
            let mut message = format!("invalid option -- '{option}'");
            let mut cut = message.len().min(OPTPARSE_MESSAGE_MAX);
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            bail!(message);
        }
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
    let daemon = p.value("daemon").map(str::to_string);
    Ok(Some((UpdateRequest { path: PathBuf::from(file), args: values.to_vec(), opts }, daemon)))
}

/// `updatev` has no `--daemon`: the option as rrdtool names it in its
/// "invalid option" error (`d`, `daemon`, `daemon=ADDR`), if present.
fn daemon_option_of_updatev(args: &[String]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            return None;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            if !name.is_empty() && "daemon".starts_with(name) {
                return Some(long.to_string());
            }
            let takes_value = ["template", "locking"].iter().any(|o| o.starts_with(name));
            if takes_value && !name.is_empty() && !long.contains('=') {
                i += 1;
            }
        } else if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (pos, c) in cluster.char_indices() {
                match c {
                    'd' => return Some("d".to_string()),
                    't' | 'L' => {
                        // The value is the rest of the word, or the next word.
                        if pos + 1 == cluster.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    None
}

pub fn run(args: &[String], out: &mut dyn Write, verbose: bool) -> Result<()> {
    // A mistake in the arguments prints nothing else, even for updatev.
    let (req, daemon_option) = match parse(args, verbose)? {
        Some(r) => r,
        None => return super::command_help(out, if verbose { "updatev" } else { "update" }),
    };
    if !verbose {
        match rrd_client::daemon(daemon_option.as_deref()) {
            Daemon::Absent => {}
            Daemon::Unreachable(e) => return Err(e.into()),
            Daemon::Connected(mut session) => return update_via_daemon(&mut session, &req),
        }
    }
    let result = update::update_file(&req.path, &req.args, &req.opts, verbose);
    report(out, &req.path, result, verbose)
}

/// Sends an update to the daemon as rrdtool does.
fn update_via_daemon(session: &mut rrd_client::Session, req: &UpdateRequest) -> Result<()> {
    let file = req.path.to_string_lossy();
    let values = match &req.opts.template {
        Some(_) if req.opts.skip_past_updates => {
            bail!("The caching daemon cannot be used together with templates and skip-past-updates yet.")
        }
        Some(template) => {
            let rrd = rrd_engine::Rrd::open(&req.path, false)?;
            let names: Vec<&str> = rrd.header.ds().iter().map(|d| d.name.as_str()).collect();
            rrd_client::map_template(template, &names, &req.args).map_err(|e| anyhow!(e))?
        }
        None => req.args.clone(),
    };
    match session.update(&file, &values) {
        Ok(()) => Ok(()),
        Err(e) if e.message().is_some() => Err(e.into()),
        // librrd words a failure that set no text only when its status is
        // an errno; a refusal with status -1 passes in silence.
        Err(e) if e.status() > 0 => Err(anyhow!(
            "Failed sending the values to rrdcached: {}",
            rrd_client::ctext::strerror(e.status())
        )),
        Err(_) => Ok(()),
    }
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
                let rra = &rrd.header.rra()[*rra_index];
                for (d, v) in values.iter().enumerate() {
                    writeln!(
                        out,
                        "[{time}]RRA[{}][{}]DS[{}] = {}",
                        rra.cf_name.as_str(),
                        rra.pdp_count,
                        rrd.header.ds()[d].name.as_str(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn updatev_names_its_daemon_option_like_rrdtool() {
        let find = |v: &[&str]| daemon_option_of_updatev(&s(v));
        assert_eq!(find(&["f", "-d", "x", "1:1"]), Some("d".into()));
        assert_eq!(find(&["f", "-sdx", "1:1"]), Some("d".into()));
        assert_eq!(find(&["f", "--daemon=unix:/s", "1:1"]), Some("daemon=unix:/s".into()));
        assert_eq!(find(&["f", "--dae", "x"]), Some("dae".into()));
        // Values of -t and --template are not options.
        assert_eq!(find(&["f", "-t", "-d", "1:1"]), None);
        assert_eq!(find(&["f", "--template", "-d", "1:1"]), None);
        assert_eq!(find(&["f", "-td", "1:1"]), None);
        assert_eq!(find(&["f", "--", "-d", "x"]), None);
        let e = parse(&s(&["f", "--daemon=unix:/a/very/long/socket/path/name", "1:1"]), true).unwrap_err();
        assert_eq!(e.to_string(), "invalid option -- 'daemon=unix:/a/very/long/soc");
        assert_eq!(e.to_string().len(), OPTPARSE_MESSAGE_MAX);
    }
}
