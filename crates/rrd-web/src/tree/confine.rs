//! Untrusted names → places beneath a tree's root, and names → safe text.
//!
//! A request names a file or directory by its path relative to the tree,
//! as raw bytes (percent-decoded from the URL, so names that are not
//! UTF-8 can be named). [`relative`] refuses an absolute path, NUL and
//! any `..` component (`%2e%2e` arrives here decoded, so it is refused
//! too); empty and `.` components are dropped. Directories are then
//! resolved ([`dir_path`]: canonicalized, and refused unless still under
//! the root, which catches a link leaving the tree); files are opened
//! through the tree's [`rrd_engine::root::Root`], which refuses a link
//! leaving the root at the open itself.
//!
//! Also here: the percent codec of URLs ([`pct_encode`], [`pct_decode`])
//! and HTML escaping ([`html`]), so every name shown passes one door.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use super::{Tree, TreeError};

/// The most bytes a relative path may have.
pub const MAX_PATH_BYTES: usize = 4096;

/// `raw` as a relative path with no `..`, no root, no NUL; `.` and empty
/// components dropped (so `a//./b` is `a/b`).
pub fn relative(raw: &[u8]) -> Result<PathBuf, TreeError> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(TreeError::Refused("the path is too long"));
    }
    if raw.contains(&0) {
        return Err(TreeError::Refused("the path holds a NUL byte"));
    }
    if raw.first() == Some(&b'/') {
        return Err(TreeError::Refused("an absolute path is not a path in the tree"));
    }
    let mut out = PathBuf::new();
    for c in Path::new(OsStr::from_bytes(raw)).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => return Err(TreeError::Refused("'..' is not allowed in a tree path")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(TreeError::Refused("an absolute path is not a path in the tree"))
            }
        }
    }
    Ok(out)
}

/// The canonical directory `rel` names, refused unless it is the root or
/// beneath it.
pub fn dir_path(tree: &Tree, rel: &Path) -> Result<PathBuf, TreeError> {
    let real = match std::fs::canonicalize(tree.dir.join(rel)) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(TreeError::NotFound),
        Err(e) => return Err(e.into()),
    };
    if !real.starts_with(&tree.dir) {
        return Err(TreeError::Escape);
    }
    if !real.is_dir() {
        return Err(TreeError::NotFound);
    }
    Ok(real)
}

/// The path a file named by `rel` is opened at (through the tree's
/// `Root`, which does the confinement at the open). The root itself is
/// not a file.
pub fn file_path(tree: &Tree, rel: &Path) -> Result<PathBuf, TreeError> {
    if rel.as_os_str().is_empty() {
        return Err(TreeError::Refused("no file named"));
    }
    Ok(tree.dir.join(rel))
}

/// Percent-decodes `s` into bytes (`+` stays `+`: paths are not forms).
pub fn pct_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Percent-encodes every byte but unreserved ones and `/`.
pub fn pct_encode(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for &c in b {
        if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

/// [`pct_encode`] of a path's bytes.
pub fn pct_path(p: &Path) -> String {
    pct_encode(p.as_os_str().as_bytes())
}

/// HTML-escapes text (element content and quoted attribute values).
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A name as text: invalid UTF-8 shown as U+FFFD (the URL keeps the
/// real bytes), control characters as `?`.
pub fn shown(name: &OsStr) -> String {
    name.to_string_lossy().chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// Bytes of a path, for building URLs.
pub fn bytes_of(p: OsString) -> Vec<u8> {
    p.into_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_refuses_parents_roots_and_nul() {
        assert_eq!(relative(b"a//./b.rrd").unwrap(), PathBuf::from("a/b.rrd"));
        assert_eq!(relative(b"").unwrap(), PathBuf::new());
        for bad in [&b"../x"[..], b"a/../../x", b"/etc/passwd", b"a\0b", b"a/.."] {
            assert!(relative(bad).is_err(), "{bad:?}");
        }
        assert!(relative(&pct_decode("%2e%2e/%2E%2E/etc")).is_err());
    }

    #[test]
    fn percent_codec_round_trips_any_bytes() {
        let raw = b"h\xffst/<script>a b%.rrd";
        let enc = pct_encode(raw);
        assert!(!enc.contains('<') && !enc.contains(' '), "{enc}");
        assert_eq!(pct_decode(&enc), raw);
        assert_eq!(pct_decode("100%"), b"100%");
        assert_eq!(pct_decode("%4"), b"%4");
    }

    #[test]
    fn html_escapes_markup() {
        assert_eq!(html("<script>\"x\"&'"), "&lt;script&gt;&quot;x&quot;&amp;&#39;");
        assert_eq!(shown(OsStr::from_bytes(b"a\xff\x07")), "a\u{fffd}?");
    }
}
