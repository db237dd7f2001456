//! `rrdtool list`'s directory walk (librrd's `rrd_list_r` in 1.7.2), shared
//! by the CLI's `list` and the daemon's `LIST`.
//!
//! The rules, reproduced: entries come in `readdir` order; a regular file is
//! listed when its name's first `.rrd` ends it; anything else that `stat`
//! (following symlinks) accepts is listed too, except that with `recursive`
//! directories are descended into instead (an unreadable or empty
//! subdirectory contributes nothing); paths are relative to the argument. An
//! argument with `*` or `?` is a glob whose matches are given by base name
//! (only matches with a directory part). An argument whose first `.rrd` ends
//! it names a single file. `..` anywhere is refused.
//!
//! Deliberately absent: printing, and what the callers add (the CLI's
//! messages for an empty listing, the daemon's base-directory confinement).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::error::os_message;

/// C's `PATH_MAX`: rrdtool skips entries whose path would not fit.
const PATH_MAX: usize = 4096;

/// Why nothing could be listed: the C library's text for the `errno`
/// rrdtool's walk ends with ("No such file or directory").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListError(pub String);

fn errno_text(e: &std::io::Error) -> ListError {
    ListError(os_message(e))
}

/// Where `prefix` and `path` stop agreeing (rrdtool's `move_past_prefix`,
/// which does not require the whole prefix to match).
pub fn past_prefix<'a>(prefix: &[u8], path: &'a [u8]) -> &'a [u8] {
    if prefix.len() > path.len() {
        return path;
    }
    let common = prefix.iter().zip(path).take_while(|(a, b)| a == b).count();
    &path[common..]
}

/// Whether the first `.rrd` in `name` ends it.
pub fn first_rrd_suffix_ends(name: &[u8]) -> bool {
    name.windows(4).position(|w| w == b".rrd").is_some_and(|i| i + 4 == name.len())
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
    p.extend_from_slice(dir);
    p.push(b'/');
    p.extend_from_slice(name);
    p
}

/// rrdtool's `rrd_list_rec`: the entries of `dir`, as paths past `root`.
fn list_dir(recursive: bool, root: &[u8], dir: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), ListError> {
    let entries = std::fs::read_dir(OsStr::from_bytes(dir)).map_err(|e| errno_text(&e))?;
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
        if meta.is_file() && !first_rrd_suffix_ends(name) {
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

/// The paths `pattern` matches, sorted, as glibc's `glob(pattern, 0)`.
use rrd_sys::glob::glob;

/// The names `dirname` lists (see the module doc), in rrdtool's order. An
/// empty directory is an empty list, not an error.
pub fn rrd_list(recursive: bool, dirname: &[u8]) -> Result<Vec<Vec<u8>>, ListError> {
    if dirname.windows(2).any(|w| w == b"..") {
        return Err(ListError("Permission denied".into()));
    }
    if dirname.iter().any(|&c| c == b'*' || c == b'?') {
        if recursive {
            return Err(ListError("Invalid argument".into()));
        }
        let out: Vec<Vec<u8>> = glob(dirname)
            .into_iter()
            .filter_map(|p| p.iter().rposition(|&c| c == b'/').map(|s| p[s + 1..].to_vec()))
            .collect();
        if out.is_empty() {
            return Err(ListError("No such file or directory".into()));
        }
        return Ok(out);
    }
    let meta = std::fs::metadata(OsStr::from_bytes(dirname)).map_err(|e| errno_text(&e))?;
    if first_rrd_suffix_ends(dirname) {
        if !meta.is_file() {
            return Err(ListError("No such device or address".into()));
        }
        let slash =
            dirname.iter().rposition(|&c| c == b'/').ok_or_else(|| ListError("Invalid argument".into()))?;
        return Ok(vec![dirname[slash + 1..].to_vec()]);
    }
    if !meta.is_dir() {
        return Err(ListError("Not a directory".into()));
    }
    let mut out = Vec::new();
    list_dir(recursive, dirname, dirname, &mut out)?;
    Ok(out)
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

    #[test]
    fn walks_filter_descend_and_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.rrd"), b"").unwrap();
        std::fs::write(root.join("b.txt"), b"").unwrap();
        std::fs::write(root.join("c.rrd.old"), b"").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/d.rrd"), b"").unwrap();
        let r = root.as_os_str().as_bytes();
        let mut flat = rrd_list(false, r).unwrap();
        flat.sort();
        assert_eq!(flat, vec![b"a.rrd".to_vec(), b"sub".to_vec()]);
        let mut deep = rrd_list(true, r).unwrap();
        deep.sort();
        assert_eq!(deep, vec![b"a.rrd".to_vec(), b"sub/d.rrd".to_vec()]);
        let one = [r, b"/sub/d.rrd"].concat();
        assert_eq!(rrd_list(false, &one).unwrap(), vec![b"d.rrd".to_vec()]);
        let pattern = [r, b"/*.rrd"].concat();
        assert_eq!(rrd_list(false, &pattern).unwrap(), vec![b"a.rrd".to_vec()]);
        assert_eq!(rrd_list(true, &pattern), Err(ListError("Invalid argument".into())));
        let up = [r, b"/../x"].concat();
        assert_eq!(rrd_list(false, &up), Err(ListError("Permission denied".into())));
        let missing = [r, b"/nx"].concat();
        assert_eq!(rrd_list(false, &missing), Err(ListError("No such file or directory".into())));
        let file = [r, b"/b.txt"].concat();
        assert_eq!(rrd_list(false, &file), Err(ListError("Not a directory".into())));
        std::fs::create_dir(root.join("empty")).unwrap();
        assert_eq!(rrd_list(false, &[r, b"/empty"].concat()), Ok(vec![]));
    }
}
