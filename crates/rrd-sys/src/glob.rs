//! `glob(3)` as glibc implements it, for `rrdtool list`'s patterns, whose
//! matches (sorting, hidden files, brace and escape rules) must be the C
//! library's byte for byte.

use std::ffi::{CStr, CString};

/// The paths `pattern` matches, sorted, as `glob(pattern, 0)`; none when
/// nothing matches, on a read error, or when the pattern has a NUL byte.
pub fn glob(pattern: &[u8]) -> Vec<Vec<u8>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn matches_sorted_and_skips_hidden() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.rrd", "a.rrd", ".h.rrd", "c.txt"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let mut pattern = dir.path().as_os_str().as_bytes().to_vec();
        pattern.extend_from_slice(b"/*.rrd");
        let got = glob(&pattern);
        let names: Vec<&[u8]> = got.iter().map(|p| &p[p.len() - 5..]).collect();
        assert_eq!(names, [b"a.rrd", b"b.rrd"]);
        assert!(glob(b"/no/such/dir/*").is_empty());
        assert!(glob(b"a\0b").is_empty());
    }
}
