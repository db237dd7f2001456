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
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

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

/// How a daemon's walk is bounded (rrdtool's own walk has no bounds).
pub struct WalkRules<'a> {
    /// Descend into a directory reached through a symbolic link only when
    /// it resolves beneath (or to) this canonical directory.
    pub beneath: &'a Path,
    /// At most this many names listed.
    pub names_max: usize,
    /// At most this many directory entries looked at.
    pub visits_max: u64,
    /// Give up at this time.
    pub deadline: Instant,
    /// Asked every few hundred entries: `true` ends the walk (the client
    /// went away).
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// Why a bounded walk ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkStop {
    Names(usize),
    Visits(u64),
    Time,
    Stopped,
}

/// Why a bounded listing failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkError {
    List(ListError),
    Stopped(WalkStop),
}

impl From<ListError> for WalkError {
    fn from(e: ListError) -> WalkError {
        WalkError::List(e)
    }
}

/// The walk's state: rules, the directories on the current path by
/// (device, inode) (a directory that is its own ancestor is a loop), and
/// what was looked at.
struct Walk<'r, 'a> {
    rules: Option<&'r WalkRules<'a>>,
    ancestors: Vec<(u64, u64)>,
    /// Directories reached through links: where each really is, if it is
    /// beneath the allowed directory (one `realpath` per directory, not per
    /// link to it).
    linked_dirs: std::collections::HashMap<(u64, u64), Option<Vec<u8>>>,
    visits: u64,
    out: Vec<Vec<u8>>,
}

impl Walk<'_, '_> {
    /// Counts an entry; checks the bounds every 256 entries.
    fn visit(&mut self) -> Result<(), WalkStop> {
        let Some(rules) = self.rules else { return Ok(()) };
        self.visits += 1;
        if self.visits > rules.visits_max {
            return Err(WalkStop::Visits(rules.visits_max));
        }
        if self.out.len() > rules.names_max {
            return Err(WalkStop::Names(rules.names_max));
        }
        if self.visits.is_multiple_of(256) {
            if Instant::now() >= rules.deadline {
                return Err(WalkStop::Time);
            }
            if (rules.stop)() {
                return Err(WalkStop::Stopped);
            }
        }
        Ok(())
    }

    /// Where to open the directory at `path` to descend into it: `path`
    /// itself, or, for a link in a bounded walk, its real path (so that
    /// chains of links are not resolved again at every level below). A
    /// bounded walk refuses a loop and a link leaving the allowed
    /// directory (`None`).
    fn descend_to(&mut self, path: &[u8], meta: &std::fs::Metadata, linked: bool) -> Option<Vec<u8>> {
        let Some(rules) = self.rules else { return Some(path.to_vec()) };
        if self.ancestors.contains(&(meta.dev(), meta.ino())) {
            return None;
        }
        if !linked {
            return Some(path.to_vec());
        }
        let id = (meta.dev(), meta.ino());
        if let Some(known) = self.linked_dirs.get(&id) {
            return known.clone();
        }
        let real = std::fs::canonicalize(OsStr::from_bytes(path)).ok()?;
        let at = real.starts_with(rules.beneath).then(|| real.into_os_string().into_vec());
        self.linked_dirs.insert(id, at.clone());
        at
    }
}

/// rrdtool's `rrd_list_rec`: the entries of `dir`, as paths past `root`.
/// `at` is where `dir` is opened and its entries looked at: `dir` itself
/// for rrdtool's walk, its real path for a bounded one. A subdirectory
/// that cannot be read contributes nothing; a bound stops everything.
fn list_dir(
    recursive: bool,
    root: &[u8],
    dir: &[u8],
    at: &[u8],
    walk: &mut Walk<'_, '_>,
) -> Result<(), WalkError> {
    let entries = std::fs::read_dir(OsStr::from_bytes(at)).map_err(|e| errno_text(&e))?;
    for entry in entries.flatten() {
        walk.visit().map_err(WalkError::Stopped)?;
        let name = entry.file_name();
        let name = name.as_bytes();
        if dir.len() + name.len() + 1 >= PATH_MAX {
            continue;
        }
        let path = join(dir, name);
        let real = join(at, name);
        let Ok(meta) = std::fs::metadata(OsStr::from_bytes(&real)) else { continue };
        if meta.is_dir() && recursive {
            let linked = entry.file_type().is_ok_and(|t| t.is_symlink());
            if let Some(next_at) = walk.descend_to(&real, &meta, linked) {
                walk.ancestors.push((meta.dev(), meta.ino()));
                let r = list_dir(recursive, root, &path, &next_at, walk);
                walk.ancestors.pop();
                if let Err(WalkError::Stopped(why)) = r {
                    return Err(WalkError::Stopped(why));
                }
            }
            continue;
        }
        if meta.is_file() && !first_rrd_suffix_ends(name) {
            continue;
        }
        let mut short = past_prefix(root, &path);
        if short.first() == Some(&b'/') {
            short = &short[1..];
        }
        walk.out.push(short.to_vec());
    }
    Ok(())
}

/// The paths `pattern` matches, sorted, as glibc's `glob(pattern, 0)`.
use rrd_sys::glob::glob;

/// The names `dirname` lists (see the module doc), in rrdtool's order. An
/// empty directory is an empty list, not an error.
pub fn rrd_list(recursive: bool, dirname: &[u8]) -> Result<Vec<Vec<u8>>, ListError> {
    rrd_list_bounded(recursive, dirname, None).map_err(|e| match e {
        WalkError::List(e) => e,
        // An unbounded walk does not stop; should it, say so in errno's words.
        WalkError::Stopped(_) => ListError("Interrupted system call".into()),
    })
}

/// [`rrd_list`], bounded by `rules` (the daemon's LIST): directory loops
/// (a directory that is its own ancestor, by device and inode) and links
/// to directories outside `rules.beneath` are not descended into, and the
/// walk stops with [`WalkError::Stopped`] past its bounds. For a tree
/// without loops or such links the names are rrdtool's, in its order.
pub fn rrd_list_bounded(
    recursive: bool,
    dirname: &[u8],
    rules: Option<&WalkRules<'_>>,
) -> Result<Vec<Vec<u8>>, WalkError> {
    if dirname.windows(2).any(|w| w == b"..") {
        return Err(ListError("Permission denied".into()).into());
    }
    if dirname.iter().any(|&c| c == b'*' || c == b'?') {
        if recursive {
            return Err(ListError("Invalid argument".into()).into());
        }
        let out: Vec<Vec<u8>> = glob(dirname)
            .into_iter()
            .filter_map(|p| p.iter().rposition(|&c| c == b'/').map(|s| p[s + 1..].to_vec()))
            .collect();
        if out.is_empty() {
            return Err(ListError("No such file or directory".into()).into());
        }
        return Ok(out);
    }
    let meta = std::fs::metadata(OsStr::from_bytes(dirname)).map_err(|e| errno_text(&e))?;
    if first_rrd_suffix_ends(dirname) {
        if !meta.is_file() {
            return Err(ListError("No such device or address".into()).into());
        }
        let slash =
            dirname.iter().rposition(|&c| c == b'/').ok_or_else(|| ListError("Invalid argument".into()))?;
        return Ok(vec![dirname[slash + 1..].to_vec()]);
    }
    if !meta.is_dir() {
        return Err(ListError("Not a directory".into()).into());
    }
    let mut walk = Walk {
        rules,
        ancestors: vec![(meta.dev(), meta.ino())],
        linked_dirs: Default::default(),
        visits: 0,
        out: Vec::new(),
    };
    list_dir(recursive, dirname, dirname, dirname, &mut walk)?;
    if let Some(r) = rules {
        if walk.out.len() > r.names_max {
            return Err(WalkError::Stopped(WalkStop::Names(r.names_max)));
        }
    }
    Ok(walk.out)
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
