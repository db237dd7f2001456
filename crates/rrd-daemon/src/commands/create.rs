//! `CREATE <file> [-b start] [-s step] [-r source] [-t template] [-O]
//! DS:... RRA:...`: rrdcached's way of running `rrdtool create`.
//!
//! Kept from rrdcached: options are matched by prefix (`-b`, `-s`, `-r`,
//! `-t`, `-O`) and take the NEXT field as value; anything else not `DS:` or
//! `RRA:` is a usage error; a start before 1980 is refused; a missing
//! directory is created only with `-R`; `-O` on the daemon forbids
//! overwriting whatever the client says. CREATEs run one at a time.
//!
//! Under `-B`, the new file (and with `-R` its missing directories) is
//! made relative to its directory opened beneath the listener's base
//! (`rrd_engine::root`): a directory swapped for a link out of the base
//! after the check by name is refused, nothing is made outside.
//!
//! Under `-B`, the `-r` sources and the `-t` template are confined as
//! UPDATE and INFO confine their file: one reached through a symbolic link
//! that leaves the base directory is refused (`f: Permission denied`);
//! rrdcached reads it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rrd_engine::create::{create, CreateOptions};
use rrd_protocol::{Command, Reply};

use super::{access_denied, blocking, syntax_error, Args, Outcome};
use crate::cache::unix_now;
use crate::state::{Daemon, Listening};

pub async fn run(daemon: &Arc<Daemon>, l: Listening, mut args: Args) -> Outcome {
    let Some(file) = args.next() else { return syntax_error(Command::Create).into() };
    let paths = daemon.paths_of(&l);
    let key = match paths.resolve(&file) {
        Ok(k) => k,
        Err(d) => return access_denied(&d.shown).into(),
    };
    if let Err(d) = paths.check_resolved(&key) {
        return access_denied(&d.shown).into();
    }
    let _serial = daemon.create_lock.lock().await;
    let dir = Path::new(&key).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
    if !dir.exists() {
        if !daemon.config.allow_recursive_mkdir {
            return Reply::error(format!(
                "No permission to recursively create: {}\nDid you pass -R to the daemon?",
                dir.display()
            ))
            .into();
        }
        // Beneath the base under -B: a directory on the way swapped for a
        // link out of it is refused before anything is made through it.
        match daemon.root.create_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if crate::paths::Paths::is_escape(&e) => return access_denied(&key).into(),
            Err(e) => {
                return Reply::error(format!(
                    "Cannot create {}: {}",
                    dir.display(),
                    crate::config::os_text(&e)
                ))
                .into()
            }
        }
    }
    // The engine opens the sources and the template through the root too,
    // so a link swapped in after the check below is refused all the same.
    // CREATE replaces a regular file (rrdtool's rename); anything else at
    // the path (a device node, a FIFO, a directory) is refused.
    if std::fs::metadata(&key).is_ok_and(|m| !m.is_file()) {
        return Reply::error(format!("Not a regular file: {key}")).into();
    }
    let mut opts = CreateOptions {
        no_overwrite: daemon.config.no_overwrite,
        source_root: daemon.root.clone(),
        // The file is made relative to its directory opened beneath the
        // base (-B): a directory swapped for a link out of it after the
        // check above is refused.
        target_root: daemon.root.clone(),
        ..Default::default()
    };
    let mut last_up: i64 = -1;
    let mut defs = Vec::new();
    while let Some(tok) = args.next() {
        if tok.starts_with("-b") || tok.starts_with("-s") || tok.starts_with("-r") || tok.starts_with("-t") {
            let Some(value) = args.next() else { return syntax_error(Command::Create).into() };
            match &tok[..2] {
                // rrdcached reads both with `atol` (base 10, saturating).
                "-b" => last_up = rrd_lang::numparse::atol(&value),
                "-s" => opts.step_secs = Some(rrd_lang::numparse::atol(&value).max(0) as u64),
                // Sources and templates are read from disk: write their
                // pending values first (as rrdcached flushes them).
                "-r" | "-t" => {
                    let k = match confined_source(daemon, paths, &value) {
                        Ok(k) => k,
                        Err(refused) => return refused.into(),
                    };
                    crate::commands::flush::flush_key(daemon, &k).await;
                    if tok.starts_with("-r") {
                        opts.sources.push(PathBuf::from(k));
                    } else {
                        opts.template = Some(PathBuf::from(k));
                    }
                }
                _ => unreachable!("prefixes checked above"),
            }
        } else if tok.starts_with("-O") {
            opts.no_overwrite = true;
        } else if tok.starts_with("DS:") || tok.starts_with("RRA:") {
            defs.push(tok);
        } else {
            return syntax_error(Command::Create).into();
        }
    }
    if last_up != -1 && last_up < 3600 * 24 * 365 * 10 {
        return Reply::error("The first entry must be after 1980.").into();
    }
    if last_up != -1 {
        opts.start = Some(last_up);
    }
    if opts.step_secs == Some(0) {
        opts.step_secs = None;
    }
    let path = PathBuf::from(&key);
    let result = blocking(move || create(&path, &opts, &defs, unix_now())).await;
    match result {
        Ok(()) => Reply::ok_line("RRD created OK").into(),
        Err(rrd_engine::Error::Io { source, .. }) if crate::paths::Paths::is_escape(&source) => {
            access_denied(&key).into()
        }
        Err(e) => Reply::error(format!("RRD Error: {e}")).into(),
    }
}

/// The key of a `-r` or `-t` file, refused (as UPDATE and INFO refuse it)
/// when it is not beneath the base directory under `-B`: by name (`..`,
/// absolute paths elsewhere) or through a symbolic link, of the file or of
/// a directory on its way. Whether it exists and is an RRD is the
/// engine's to say.
fn confined_source(daemon: &Daemon, paths: &crate::paths::Paths, name: &str) -> Result<String, Reply> {
    let key = paths.resolve(name).map_err(|_| access_denied(name))?;
    if !daemon.root.is_confined() {
        return Ok(key);
    }
    match daemon.root.open(Path::new(&key), false) {
        Err(e) if crate::paths::Paths::is_escape(&e) => Err(access_denied(&key)),
        _ => Ok(key),
    }
}
