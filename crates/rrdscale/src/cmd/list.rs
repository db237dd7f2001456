//! `rrdscale list [--recursive] [--daemon addr] [--noflush] dirname`: the
//! RRD files (and, without `--recursive`, the subdirectories) of a
//! directory, exactly as `rrdtool list` 1.7.2 prints them.
//!
//! RRDtool's rules, reproduced: entries come in `readdir` order; a regular
//! file is listed when its name's first `.rrd` ends it; anything else that
//! `stat` (following symlinks) accepts is listed too, except that with
//! `--recursive` directories are descended into instead; paths are printed
//! relative to the argument. An argument with `*` or `?` is a glob whose
//! matches are printed by base name. An argument whose first `.rrd` ends it
//! names a single file. A failure is not an error: rrdtool prints the C
//! library's message for `errno` on stderr, without a newline, and exits 0.
//! Where rrdtool's `errno` is left over from an earlier call, this prints the
//! message 1.7.2 was seen to print in that case.
//!
//! With `--daemon ADDR` (or `RRDCACHED_ADDRESS`) the daemon lists instead
//! (its LIST, relative to its base directory; FLUSHALL first unless
//! `--noflush`), as rrdtool 1.7.2 does. A `--daemon` that cannot be reached
//! prints `Error connecting to rrdcached: <why>` on stderr and fails; an
//! unreachable `RRDCACHED_ADDRESS` means listing locally, then failing with
//! the connection error.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use anyhow::{bail, Result};

use crate::opts;
use rrd_client::Daemon;
use rrd_engine::error::os_message;

/// C's `PATH_MAX`: rrdtool skips entries whose path would not fit.
const PATH_MAX: usize = 4096;

/// Why a listing produced nothing: the text rrdtool's `strerror(errno)` gives.
struct NoList(String);

fn errno_text(e: &std::io::Error) -> NoList {
    NoList(os_message(e))
}

/// Where `prefix` and `path` stop agreeing (rrdtool's `move_past_prefix`,
/// which does not require the whole prefix to match).
fn past_prefix<'a>(prefix: &[u8], path: &'a [u8]) -> &'a [u8] {
    if prefix.len() > path.len() {
        return path;
    }
    let common = prefix.iter().zip(path).take_while(|(a, b)| a == b).count();
    &path[common..]
}

/// Whether the first `.rrd` in `name` ends it.
fn first_rrd_suffix_ends(name: &[u8]) -> bool {
    name.windows(4).position(|w| w == b".rrd").is_some_and(|i| i + 4 == name.len())
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
    p.extend_from_slice(dir);
    p.push(b'/');
    p.extend_from_slice(name);
    p
}

/// rrdtool's `rrd_list_rec`: lists `dir`, printing paths past `root`.
fn list_dir(recursive: bool, root: &[u8], dir: &[u8], out: &mut Vec<u8>) -> Result<(), NoList> {
    let entries = std::fs::read_dir(OsStr::from_bytes(dir)).map_err(|e| errno_text(&e))?;
    let before = out.len();
    for entry in entries {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let name = name.as_bytes();
        if dir.len() + name.len() + 1 >= PATH_MAX {
            continue;
        }
        let path = join(dir, name);
        let Ok(meta) = std::fs::metadata(OsStr::from_bytes(&path)) else { continue };
        if meta.is_dir() && recursive {
            // An empty subdirectory contributes nothing and is no error.
            let _ = list_dir(recursive, root, &path, out);
            continue;
        }
        if meta.is_file() && !first_rrd_suffix_ends(name) {
            continue;
        }
        let mut short = past_prefix(root, &path);
        if short.first() == Some(&b'/') {
            short = &short[1..];
        }
        out.extend_from_slice(short);
        out.push(b'\n');
    }
    if out.len() == before {
        // rrdtool returns NULL for an empty listing with errno untouched.
        return Err(NoList("Success".into()));
    }
    Ok(())
}

/// The paths `pattern` matches, sorted, as glibc's `glob(pattern, 0)`.
fn glob(pattern: &[u8]) -> Vec<Vec<u8>> {
    let Ok(c_pattern) = CString::new(pattern) else { return Vec::new() };
    let mut matches = Vec::new();
    // SAFETY: glob_t is plain data that glob() fills in; we read gl_pathc
    // entries of gl_pathv, each a NUL-terminated string owned by the glob_t,
    // copy them out, and release them with globfree() exactly once.
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

/// rrdtool's `rrd_list_r`.
fn list(recursive: bool, dirname: &[u8]) -> Result<Vec<u8>, NoList> {
    let mut out = Vec::new();
    if dirname.windows(2).any(|w| w == b"..") {
        return Err(NoList("Permission denied".into()));
    }
    if dirname.iter().any(|&c| c == b'*' || c == b'?') {
        if recursive {
            return Err(NoList("Invalid argument".into()));
        }
        for path in glob(dirname) {
            // Only matches with a directory part are printed, by base name.
            if let Some(slash) = path.iter().rposition(|&c| c == b'/') {
                out.extend_from_slice(&path[slash + 1..]);
                out.push(b'\n');
            }
        }
        if out.is_empty() {
            return Err(NoList("No such file or directory".into()));
        }
        return Ok(out);
    }
    let path = OsStr::from_bytes(dirname);
    if first_rrd_suffix_ends(dirname) {
        let meta = std::fs::metadata(path).map_err(|e| errno_text(&e))?;
        if !meta.is_file() {
            return Err(NoList("No such device or address".into()));
        }
        let Some(slash) = dirname.iter().rposition(|&c| c == b'/') else {
            return Err(NoList("Invalid argument".into()));
        };
        out.extend_from_slice(&dirname[slash + 1..]);
        out.push(b'\n');
        return Ok(out);
    }
    let meta = std::fs::metadata(path).map_err(|e| errno_text(&e))?;
    if !meta.is_dir() {
        return Err(NoList("Not a directory".into()));
    }
    list_dir(recursive, dirname, dirname, &mut out)?;
    Ok(out)
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let parsed = opts::parse(
        args,
        &[
            opts::value(Some('d'), "daemon"),
            opts::flag(Some('F'), "noflush"),
            opts::flag(Some('r'), "recursive"),
        ],
    )?;
    let [dirname] = parsed.operands.as_slice() else {
        bail!("Usage: rrdtool list [--daemon <addr> [--noflush]] [--recursive] <directory>");
    };
    let recursive = parsed.has("recursive");
    let local = |out: &mut dyn Write| -> Result<()> {
        match list(recursive, &OsString::from(dirname).into_vec()) {
            Ok(text) => out.write_all(&text)?,
            Err(NoList(message)) => {
                out.flush()?;
                eprint!("{message}");
            }
        }
        Ok(())
    };
    let option = parsed.value("daemon");
    match rrd_client::daemon(option) {
        // `--daemon ""` names no daemon: rrdtool says so and lists nothing.
        Daemon::Absent if option.is_some() => {
            out.flush()?;
            eprintln!("Error connecting to rrdcached");
            Ok(())
        }
        Daemon::Absent => local(out),
        Daemon::Unreachable(e) if option.is_some() => {
            out.flush()?;
            eprintln!("Error connecting to rrdcached: {e}");
            Err(e.into())
        }
        Daemon::Unreachable(e) => super::client::after_fallback(local(out), e),
        Daemon::Connected(mut session) => {
            if !parsed.has("noflush") {
                session.flush_all()?;
            }
            match session.list(recursive, dirname) {
                Ok(names) => {
                    for name in names {
                        out.write_all(name.as_bytes())?;
                        out.write_all(b"\n")?;
                    }
                    Ok(())
                }
                Err(e) if e.message().is_some() => Err(e.into()),
                Err(_) => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_and_suffix_rules_follow_rrdtool() {
        assert_eq!(past_prefix(b"L/", b"L//x.rrd"), b"/x.rrd");
        assert_eq!(past_prefix(b"L", b"L/sub/y.rrd"), b"/sub/y.rrd");
        assert_eq!(past_prefix(b"long/prefix", b"a"), b"a");
        assert!(first_rrd_suffix_ends(b"x.rrd"));
        assert!(!first_rrd_suffix_ends(b"x.rrd.rrd"));
        assert!(!first_rrd_suffix_ends(b"x.RRD"));
        assert!(!first_rrd_suffix_ends(b".rr"));
    }
}
