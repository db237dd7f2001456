//! glibc's number conversions, called as they are: `atof` (librrd's
//! client parses replies with it), and `strtol`, `strtoul`, `atoi` as the
//! oracle rrd-lang's own C-compatible parsers are tested against.

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
    }
}
