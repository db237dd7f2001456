//! glibc's number conversions, called as they are: `atof` (librrd's
//! client parses replies with it), and `strtol`, `strtoul`, `atoi` and the
//! `snprintf` of one double as the oracles rrd-lang's own C-compatible
//! parsers and printer are tested against.

use std::ffi::CStr;

/// glibc's `atof` (its correctly rounded `strtod`, as librrd calls it).
pub fn atof(c: &CStr) -> f64 {
    // SAFETY: `c` is a valid NUL-terminated string.
    unsafe { libc::atof(c.as_ptr()) }
}

/// `atoi(c)`.
pub fn atoi(c: &CStr) -> i32 {
    // SAFETY: `c` is NUL-terminated.
    unsafe { libc::atoi(c.as_ptr()) }
}

/// `strtol(c, &end, base)`: the value, the bytes consumed (`end - c`),
/// and whether `errno` became `ERANGE`.
pub fn strtol(c: &CStr, base: i32) -> (i64, usize, bool) {
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `c` is NUL-terminated and outlives the call; errno is this
    // thread's; strtol sets `end` within `c` (at most at its NUL).
    unsafe {
        *libc::__errno_location() = 0;
        let value = libc::strtol(c.as_ptr(), &mut end, base);
        let overflow = *libc::__errno_location() == libc::ERANGE;
        (value, end.offset_from(c.as_ptr()) as usize, overflow)
    }
}

/// `strtoul(c, &end, base)`, as [`strtol`].
pub fn strtoul(c: &CStr, base: i32) -> (u64, usize, bool) {
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: as in strtol.
    unsafe {
        *libc::__errno_location() = 0;
        let value = libc::strtoul(c.as_ptr(), &mut end, base);
        let overflow = *libc::__errno_location() == libc::ERANGE;
        (value, end.offset_from(c.as_ptr()) as usize, overflow)
    }
}

/// `snprintf` of one double with `%[flag][width][.precision]conv`, the
/// conversion one of `e E f F g G` and the flag one of `- + 0 #` or a
/// space. Panics on anything else (so the format always has exactly the
/// one double argument given).
pub fn snprintf_double(
    flag: Option<char>,
    width: usize,
    precision: Option<usize>,
    conv: char,
    v: f64,
) -> String {
    assert!(matches!(conv, 'e' | 'E' | 'f' | 'F' | 'g' | 'G'), "not a double conversion: {conv}");
    assert!(flag.is_none_or(|f| matches!(f, '-' | '+' | ' ' | '0' | '#')), "not a flag: {flag:?}");
    let mut fmt = String::from("%");
    fmt.extend(flag);
    if width > 0 {
        fmt.push_str(&width.to_string());
    }
    if let Some(p) = precision {
        fmt.push_str(&format!(".{p}"));
    }
    fmt.push(conv);
    let fmt = std::ffi::CString::new(fmt).expect("no NUL in a format built here");
    let mut buf = vec![0u8; 128];
    loop {
        // SAFETY: `fmt` is NUL-terminated and has exactly one conversion,
        // a double's, which `v` is; snprintf writes at most `buf.len()`
        // bytes into `buf`.
        let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), v) };
        let n = usize::try_from(n).expect("snprintf of a double does not fail");
        if n < buf.len() {
            buf.truncate(n);
            return String::from_utf8(buf).expect("a number's text is ASCII");
        }
        buf.resize(n + 1, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_report_value_end_and_range() {
        assert_eq!(atof(c"1.5e3xyz"), 1500.0);
        assert_eq!(atoi(c"  -42z"), -42);
        assert_eq!(strtol(c" 0x1fg", 0), (31, 5, false));
        assert_eq!(strtol(c"99999999999999999999", 10), (i64::MAX, 20, true));
        assert_eq!(strtoul(c"-1", 10), (u64::MAX, 2, false));
        assert_eq!(strtol(c"z", 10), (0, 0, false));
        assert_eq!(snprintf_double(Some('+'), 9, Some(2), 'f', 2.5), "    +2.50");
        assert_eq!(snprintf_double(None, 0, None, 'f', 1e300).len(), 301 + 7);
    }
}
