//! `LIST [RECURSIVE] /<path>`: RRD files under the base directory.
//!
//! The listing itself follows `rrdtool list` 1.7.2 (`rrd_list_r`): entries in
//! `readdir` order; a regular file is listed when its name's first `.rrd`
//! ends it; anything else `stat` accepts (directories, sockets) is listed,
//! except that RECURSIVE descends into directories instead; a path whose
//! first `.rrd` ends it names one file; `*`/`?` make a glob; `..` anywhere is
//! refused ("Permission denied"). The daemon then drops entries that are
//! symbolic links pointing outside the base directory, as rrdcached does.

use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use rrd_protocol::{Command, Reply};

use super::{blocking, syntax_error, Args, Outcome};
use crate::state::Daemon;

const PATH_MAX: usize = 4096;

/// The `errno` text of a failed listing.
struct NoList(String);

fn first_rrd_ends(name: &[u8]) -> bool {
    name.windows(4).position(|w| w == b".rrd").is_some_and(|i| i + 4 == name.len())
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = dir.to_vec();
    p.push(b'/');
    p.extend_from_slice(name);
    p
}

fn past_prefix<'a>(prefix: &[u8], path: &'a [u8]) -> &'a [u8] {
    if prefix.len() > path.len() {
        return path;
    }
    let common = prefix.iter().zip(path).take_while(|(a, b)| a == b).count();
    &path[common..]
}

fn list_dir(recursive: bool, root: &[u8], dir: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), NoList> {
    let entries =
        std::fs::read_dir(OsStr::from_bytes(dir)).map_err(|e| NoList(rrd_engine::error::os_message(&e)))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.as_bytes();
        if dir.len() + name.len() + 1 >= PATH_MAX {
            continue;
        }
        let path = join(dir, name);
        let Ok(meta) = std::fs::metadata(OsStr::from_bytes(&path)) else { continue };
        if meta.is_dir() && recursive {
            let _ = list_dir(recursive, root, &path, out);
            continue;
        }
        if meta.is_file() && !first_rrd_ends(name) {
            continue;
        }
        let mut short = past_prefix(root, &path);
        if short.first() == Some(&b'/') {
            short = &short[1..];
        }
        out.push(short.to_vec());
    }
    Ok(())
}

fn glob(pattern: &[u8]) -> Vec<Vec<u8>> {
    let Ok(c_pattern) = CString::new(pattern) else { return Vec::new() };
    let mut matches = Vec::new();
    // SAFETY: glob fills a zeroed glob_t; we copy gl_pathc NUL-terminated
    // strings out of it and release it with globfree exactly once.
    unsafe {
        let mut buf: libc::glob_t = std::mem::zeroed();
        if libc::glob(c_pattern.as_ptr(), 0, None, &mut buf) == 0 {
            for i in 0..buf.gl_pathc {
                let p = *buf.gl_pathv.add(i);
                if !p.is_null() {
                    matches.push(CStr::from_ptr(p).to_bytes().to_vec());
                }
            }
        }
        libc::globfree(&mut buf);
    }
    matches
}

/// `rrd_list_r`: the names under `dirname` (empty is not an error here).
fn rrd_list(recursive: bool, dirname: &[u8]) -> Result<Vec<Vec<u8>>, NoList> {
    if dirname.windows(2).any(|w| w == b"..") {
        return Err(NoList("Permission denied".into()));
    }
    if dirname.iter().any(|&c| c == b'*' || c == b'?') {
        if recursive {
            return Err(NoList("Invalid argument".into()));
        }
        let out: Vec<Vec<u8>> = glob(dirname)
            .into_iter()
            .filter_map(|p| p.iter().rposition(|&c| c == b'/').map(|s| p[s + 1..].to_vec()))
            .collect();
        if out.is_empty() {
            return Err(NoList("No such file or directory".into()));
        }
        return Ok(out);
    }
    let path = OsStr::from_bytes(dirname);
    let meta = std::fs::metadata(path).map_err(|e| NoList(rrd_engine::error::os_message(&e)))?;
    if first_rrd_ends(dirname) {
        if !meta.is_file() {
            return Err(NoList("No such device or address".into()));
        }
        let slash =
            dirname.iter().rposition(|&c| c == b'/').ok_or_else(|| NoList("Invalid argument".into()))?;
        return Ok(vec![dirname[slash + 1..].to_vec()]);
    }
    if !meta.is_dir() {
        return Err(NoList("Not a directory".into()));
    }
    let mut out = Vec::new();
    list_dir(recursive, dirname, dirname, &mut out)?;
    Ok(out)
}

fn run_blocking(daemon: &Daemon, mut args: Args) -> Reply {
    let Some(base) = daemon.config.base_dir.as_ref() else {
        return Reply::error("No base directory defined");
    };
    let base = base.to_string_lossy().into_owned();
    let Some(first) = args.next() else { return syntax_error(Command::List) };
    let (recursive, name) = if first.starts_with('/') {
        (false, first)
    } else if first == "RECURSIVE" {
        match args.next() {
            Some(n) => (true, n),
            None => return syntax_error(Command::List),
        }
    } else {
        return syntax_error(Command::List);
    };
    let full = format!("{base}{}{name}", if name.starts_with('/') { "" } else { "/" });
    if daemon.config.base_only && daemon.paths.resolve(&full).is_err() {
        return Reply::error(format!("Cannot read: {full}"));
    }
    let names = match rrd_list(recursive, full.as_bytes()) {
        Ok(n) => n,
        Err(NoList(why)) => return Reply::error(format!("List {full}: {why}")),
    };
    let single = full.find(".rrd").is_some_and(|i| i + 4 == full.len());
    let mut body = Vec::new();
    for current in names {
        let current_s = String::from_utf8_lossy(&current).into_owned();
        let absolute = if single { full.clone() } else { format!("{full}/{current_s}") };
        if daemon.config.base_only && daemon.paths.resolve(&absolute).is_err() {
            continue;
        }
        let meta = match std::fs::symlink_metadata(&absolute) {
            Ok(m) => m,
            Err(e) => return Reply::error(format!("stat {absolute}: {}", rrd_engine::error::os_message(&e))),
        };
        let target = if meta.file_type().is_symlink() {
            match std::fs::read_link(&absolute) {
                Ok(t) => t.to_string_lossy().into_owned(),
                Err(e) => {
                    return Reply::error(format!(
                        "readlink {absolute}: {}",
                        rrd_engine::error::os_message(&e)
                    ))
                }
            }
        } else {
            absolute
        };
        // A link must point inside the base directory.
        if !target.starts_with(&base) {
            continue;
        }
        body.extend_from_slice(&current);
        body.push(b'\n');
    }
    Reply::ok("RRDs", body)
}

pub async fn run(daemon: &Arc<Daemon>, args: Args) -> Outcome {
    let d = daemon.clone();
    blocking(move || run_blocking(&d, args)).await.into()
}
