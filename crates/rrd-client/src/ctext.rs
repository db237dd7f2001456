//! The C library's text conversions, called directly: librrd's client reads
//! every number in a reply with `strtol`, `strtod`, `atof`, `atol` or
//! `atoi`, and prints `strerror` texts, so the exact C functions are what
//! makes our output equal rrdtool's for any reply, odd ones included.
//!
//! Invariant: every function takes arbitrary bytes (a C string ends at its
//! first NUL, so these do too) and never panics.
//! Deliberately absent: locale handling; the process runs in the "C" locale
//! (Rust never calls `setlocale`), which is what rrdtool forces for parsing.

use std::ffi::{CStr, CString};

/// `s` up to its first NUL, as C would see it.
fn c_string(s: &[u8]) -> CString {
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    CString::new(&s[..end]).unwrap_or_default()
}

fn clear_errno() {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = 0 };
}

fn errno() -> i32 {
    // SAFETY: as above; reading our own thread's errno.
    unsafe { *libc::__errno_location() }
}

/// What `strtol(s, &end, base)` returns: the value, how many bytes were
/// consumed (0: no digits), and whether errno was set (overflow).
pub fn strtol(s: &[u8], base: i32) -> (i64, usize, bool) {
    let c = c_string(s);
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    clear_errno();
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call;
    // strtol stores into `end` a pointer inside it.
    let value = unsafe { libc::strtol(c.as_ptr(), &mut end, base) };
    let failed = errno() != 0;
    let consumed = (end as usize).saturating_sub(c.as_ptr() as usize);
    (value, consumed, failed)
}

/// `strtod`, accepted only when it consumes the whole string (librrd's
/// `rrd_strtodbl(...) == 2`).
pub fn strtod_whole(s: &[u8]) -> Option<f64> {
    let c = c_string(s);
    if c.as_bytes().is_empty() {
        return None;
    }
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: as in `strtol`.
    let value = unsafe { libc::strtod(c.as_ptr(), &mut end) };
    let consumed = (end as usize).saturating_sub(c.as_ptr() as usize);
    (consumed == c.as_bytes().len()).then_some(value)
}

/// `atof`.
pub fn atof(s: &[u8]) -> f64 {
    let c = c_string(s);
    // SAFETY: `c` is a valid NUL-terminated string.
    unsafe { libc::atof(c.as_ptr()) }
}

/// `atol`.
pub fn atol(s: &[u8]) -> i64 {
    let c = c_string(s);
    // SAFETY: `c` is a valid NUL-terminated string.
    unsafe { libc::atol(c.as_ptr()) }
}

/// `atoi`.
pub fn atoi(s: &[u8]) -> i32 {
    let c = c_string(s);
    // SAFETY: `c` is a valid NUL-terminated string.
    unsafe { libc::atoi(c.as_ptr()) }
}

/// `strerror(code)`: the C library's sentence for an errno value.
pub fn strerror(code: i32) -> String {
    let text = std::io::Error::from_raw_os_error(code).to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The C library's sentence for an I/O error (its errno's `strerror`).
pub fn io_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => strerror(code),
        None => e.to_string(),
    }
}

/// `gai_strerror(code)`.
pub fn gai_strerror(code: i32) -> String {
    // SAFETY: gai_strerror returns a pointer to a static NUL-terminated
    // string for any code.
    unsafe {
        let p = libc::gai_strerror(code);
        if p.is_null() {
            return format!("Unknown error {code}");
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_reports_consumption_and_overflow() {
        assert_eq!(strtol(b"17 Success", 0), (17, 2, false));
        assert_eq!(strtol(b"-1 err", 0), (-1, 2, false));
        assert_eq!(strtol(b"0x10", 0), (16, 4, false));
        assert_eq!(strtol(b"  12", 10), (12, 4, false));
        assert_eq!(strtol(b"Success", 0).1, 0);
        assert!(strtol(b"99999999999999999999999", 10).2);
        assert_eq!(strtol(b"5\0junk", 10), (5, 1, false));
    }

    #[test]
    fn strtod_needs_the_whole_string() {
        assert_eq!(strtod_whole(b"1.5e+00"), Some(1.5));
        let n = strtod_whole(b"-nan").unwrap();
        assert!(n.is_nan() && n.is_sign_negative());
        let p = strtod_whole(b"nan").unwrap();
        assert!(p.is_nan() && !p.is_sign_negative());
        assert_eq!(strtod_whole(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(strtod_whole(b"1.5x"), None);
        assert_eq!(strtod_whole(b""), None);
    }

    #[test]
    fn c_conversions_and_texts() {
        assert_eq!(atol(b"1000000800"), 1_000_000_800);
        assert_eq!(atol(b"RRD Error"), 0);
        assert_eq!(atoi(b"2 GAUGE"), 2);
        assert_eq!(atof(b"5.0000000000e+02"), 500.0);
        assert_eq!(strerror(libc::ENOENT), "No such file or directory");
        assert_eq!(strerror(libc::ENOBUFS), "No buffer space available");
        assert_eq!(gai_strerror(libc::EAI_NONAME), "Name or service not known");
    }
}
