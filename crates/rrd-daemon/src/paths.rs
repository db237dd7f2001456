//! File names from clients become cache keys here.
//!
//! Each listener has its base directory (`-b`, a listener option like
//! `-P`: config.rs), so each distinct base has its [`Paths`]; a
//! connection resolves names with its listener's. A relative name is
//! taken relative to that base directory (`/tmp` without one, rrdcached's
//! working directory), then the path is normalized
//! lexically: empty and `.` components dropped, so `./x.rrd`, `x.rrd` and
//! `/base//x.rrd` are one file, one cache entry. `..` is resolved lexically
//! too, except under `-B`, where any `..` is refused as rrdcached refuses
//! `../`.
//!
//! Under `-B` a file must also *resolve* beneath the base directory, and
//! that is enforced where files are opened, not here: every open of an RRD
//! (first UPDATE, each flush, reads, replay) goes through the daemon's one
//! [`Root`] ([`open_root`]), an `openat2(RESOLVE_BENEATH)` on the
//! descriptor of the base directory that contains the key (the longest of
//! all listeners' bases that is a prefix of it: `rrd_engine::root`), so a
//! symbolic link swapped in at any moment is refused at the next open.
//! rrdcached does not check links at all. Only CREATE, which makes a file
//! that does not exist yet, checks its directory by name
//! ([`Paths::check_resolved`]).
//!
//! Invariant: every key is an absolute, normalized path; one cache holds
//! the keys of every listener.

use std::path::{Path, PathBuf};

use rrd_engine::root::Root;

/// Why a name was refused.
#[derive(Debug, PartialEq, Eq)]
pub struct Denied {
    /// The name as rrdcached would print it in `<file>: Permission denied`.
    pub shown: String,
}

#[derive(Clone, Debug)]
pub struct Paths {
    /// Canonical base directory (`/tmp` when `-b` is not given).
    base: PathBuf,
    /// `base` as text, as names are joined to it.
    base_text: String,
    base_only: bool,
}

/// How RRD files are opened: anywhere, or under `-B` beneath the base
/// directory (of those of `bases`) that contains them.
pub fn open_root(bases: &[Paths], base_only: bool) -> Root {
    if !base_only {
        return Root::Anywhere;
    }
    let dirs: Vec<&Path> = bases.iter().map(Paths::base).collect();
    Root::beneath_any(&dirs).unwrap_or_else(|e| {
        // Config::prepare made and checked the directories; if one is
        // gone now, open nothing rather than anything.
        crate::log!(Err, "cannot open a base directory: {e}; no file can be opened");
        Root::Nowhere
    })
}

impl Paths {
    pub fn new(base_dir: Option<&Path>, base_only: bool) -> Paths {
        let base = base_dir.map_or_else(|| PathBuf::from("/tmp"), Path::to_path_buf);
        Paths { base_text: base.display().to_string(), base, base_only }
    }

    /// Whether an RRD open failed because the file is not beneath the
    /// base directory (`-B`).
    pub fn is_escape(e: &std::io::Error) -> bool {
        Root::is_escape(e)
    }

    /// A directory name for LIST: the base directory itself counts as
    /// inside it.
    pub fn resolve_dir(&self, name: &str) -> Result<String, Denied> {
        let (joined, key) = self.normalize(name)?;
        if self.base_only && !self.is_beneath(Path::new(&key)) && Path::new(&key) != self.base {
            return Err(Denied { shown: joined });
        }
        Ok(key)
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Whether `-B` confines names to the base.
    pub fn base_only(&self) -> bool {
        self.base_only
    }

    /// The cache key for a client's file name.
    pub fn resolve(&self, name: &str) -> Result<String, Denied> {
        let (joined, key) = self.normalize(name)?;
        if self.base_only && !self.is_beneath(Path::new(&key)) {
            return Err(Denied { shown: joined });
        }
        Ok(key)
    }

    /// `name` joined to the base (as shown in refusals) and normalized
    /// lexically; `..` is refused under `-B`.
    fn normalize(&self, name: &str) -> Result<(String, String), Denied> {
        let joined = if name.starts_with('/') {
            name.to_string()
        } else {
            format!("{}/{}", self.base.display(), name)
        };
        let mut parts: Vec<&str> = Vec::new();
        for part in joined.split('/') {
            match part {
                "" | "." => {}
                ".." if self.base_only => return Err(Denied { shown: joined }),
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        let key = format!("/{}", parts.join("/"));
        Ok((joined, key))
    }

    /// [`Paths::resolve`] into `out` (cleared first), without allocating
    /// when the name is already in normal form (no empty, `.` or `..`
    /// component, no trailing `/`), which is what clients send.
    pub fn resolve_into(&self, name: &str, out: &mut String) -> Result<(), Denied> {
        out.clear();
        if !is_plain(name) {
            out.push_str(&self.resolve(name)?);
            return Ok(());
        }
        let relative = !name.starts_with('/');
        if relative {
            out.push_str(self.base_text.trim_end_matches('/'));
            out.push('/');
        }
        out.push_str(name);
        // A plain name has no `..` component, so a relative one is beneath
        // the base by construction; an absolute one must start with it.
        if self.base_only && !relative && !self.is_beneath_text(name) {
            return Err(Denied { shown: self.resolve(name).err().map_or_else(|| out.clone(), |d| d.shown) });
        }
        Ok(())
    }

    /// [`Paths::is_beneath`] for a plain absolute name, on bytes.
    fn is_beneath_text(&self, name: &str) -> bool {
        let base = self.base_text.trim_end_matches('/');
        name.strip_prefix(base).is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'))
    }

    fn is_beneath(&self, path: &Path) -> bool {
        path.strip_prefix(&self.base).is_ok_and(|rest| !rest.as_os_str().is_empty())
    }

    /// Under `-B`, checks that `key` resolves (symbolic links followed)
    /// beneath the base directory. A missing file is judged by its parent.
    pub fn check_resolved(&self, key: &str) -> Result<(), Denied> {
        if !self.base_only {
            return Ok(());
        }
        let path = Path::new(key);
        let real = match std::fs::canonicalize(path) {
            Ok(r) => r,
            Err(_) => match (path.parent(), path.file_name()) {
                (Some(parent), Some(name)) => match std::fs::canonicalize(parent) {
                    Ok(p) => p.join(name),
                    // Nothing exists to escape through; the open will fail.
                    Err(_) => return Ok(()),
                },
                _ => return Err(Denied { shown: key.to_string() }),
            },
        };
        if self.is_beneath(&real) {
            Ok(())
        } else {
            Err(Denied { shown: key.to_string() })
        }
    }
}

/// Whether `name` is already in normal form: not empty, no empty, `.` or
/// `..` component, no trailing `/` (what clients send). One pass over the
/// bytes: this runs for every UPDATE.
fn is_plain(name: &str) -> bool {
    let b = name.as_bytes();
    if b.is_empty() || b[0] == b'.' || b[b.len() - 1] == b'/' {
        return false;
    }
    !b.windows(2).any(|w| w[0] == b'/' && (w[1] == b'/' || w[1] == b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalize_to_one_key() {
        let p = Paths::new(Some(Path::new("/srv/rrd")), false);
        assert_eq!(p.resolve("x.rrd").unwrap(), "/srv/rrd/x.rrd");
        assert_eq!(p.resolve("./x.rrd").unwrap(), "/srv/rrd/x.rrd");
        assert_eq!(p.resolve("/srv/rrd//x.rrd").unwrap(), "/srv/rrd/x.rrd");
        assert_eq!(p.resolve("a/../x.rrd").unwrap(), "/srv/rrd/x.rrd");
        assert_eq!(p.resolve("/other/y.rrd").unwrap(), "/other/y.rrd");
    }

    #[test]
    fn resolving_in_place_agrees_with_resolve() {
        let names = [
            "x.rrd",
            "./x.rrd",
            "/srv/rrd//x.rrd",
            "a/../x.rrd",
            "/other/y.rrd",
            "sub/y.rrd",
            "/srv/rrd/sub/y.rrd",
            "../etc/passwd",
            "/etc/passwd",
            "/srv/rrdx/y.rrd",
            "/srv/rrd",
            "/srv/rrd/",
            "sub/",
            ".hidden.rrd",
            "sub/.hidden.rrd",
            "",
            "/",
            "a/./b.rrd",
        ];
        for base in ["/srv/rrd", "/srv/rrd/", "/"] {
            for base_only in [false, true] {
                let p = Paths::new(Some(Path::new(base)), base_only);
                let mut out = String::from("stale");
                for name in names {
                    let expected = p.resolve(name);
                    let got = p.resolve_into(name, &mut out).map(|()| out.clone());
                    assert_eq!(got, expected, "base {base} base_only {base_only} name {name:?}");
                }
            }
        }
    }

    #[test]
    fn base_only_refuses_escapes() {
        let p = Paths::new(Some(Path::new("/srv/rrd")), true);
        assert!(p.resolve("../etc/passwd").is_err());
        assert!(p.resolve("a/../x.rrd").is_err());
        assert!(p.resolve("/etc/passwd").is_err());
        assert!(p.resolve("/srv/rrdx/y.rrd").is_err());
        assert!(p.resolve("/srv/rrd").is_err());
        assert_eq!(p.resolve("/srv/rrd/sub/y.rrd").unwrap(), "/srv/rrd/sub/y.rrd");
    }

    #[test]
    fn symlinks_out_of_the_base_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("t.rrd"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("t.rrd"), base.join("evil.rrd")).unwrap();
        std::os::unix::fs::symlink(outside.path(), base.join("evildir")).unwrap();
        std::fs::write(base.join("ok.rrd"), b"x").unwrap();
        let p = Paths::new(Some(&base), true);
        let key = p.resolve("evil.rrd").unwrap();
        assert!(p.check_resolved(&key).is_err());
        let key = p.resolve("evildir/new.rrd").unwrap();
        assert!(p.check_resolved(&key).is_err());
        assert!(p.check_resolved(&p.resolve("ok.rrd").unwrap()).is_ok());
        assert!(p.check_resolved(&p.resolve("missing.rrd").unwrap()).is_ok());
    }
}
