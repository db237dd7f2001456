//! The C library's time functions, behind safe functions: AT-style times
//! replay their clock edits through `localtime_r`/`mktime` (`rrd_lang::attime`)
//! and graph labels and legends print through `strftime` (rrd-graph), whose
//! output (the process time zone, glibc's conversions and locale words)
//! must match rrdtool's byte for byte, and dump and xport print and
//! compute local times as rrdtool does. rrd-lang re-exports it as
//! `rrd_lang::ctime`.

use std::ffi::CStr;

pub use libc::tm as Tm;

extern "C" {
    /// POSIX `tzset` (not in the libc crate): reads `TZ`.
    fn tzset();
}

/// `tzset()`: the process time zone re-read from `TZ`.
pub fn reset_timezone() {
    // SAFETY: tzset has no arguments and only updates the C library's
    // time zone state.
    unsafe { tzset() };
}

/// An all-zero `struct tm` (00:00:00 on day 0 of January 1900, no zone
/// name), the state rrdtool's dump starts from before its first
/// `localtime_r`.
pub fn zeroed_tm() -> Tm {
    // SAFETY: `tm` is a plain C struct for which all-zero bytes are a valid
    // value (the zone name pointer is then null, which strftime treats as
    // an empty name).
    unsafe { std::mem::zeroed() }
}

/// `localtime_r` in the process time zone; `None` where it fails.
pub fn localtime(t: i64) -> Option<Tm> {
    let t = libc::time_t::try_from(t).ok()?;
    // SAFETY: an all-zero `tm` is a valid value (null `tm_zone`), and
    // localtime_r reads `t` and writes only the struct it is given.
    unsafe {
        let mut tm: Tm = std::mem::zeroed();
        (!libc::localtime_r(&t, &mut tm).is_null()).then_some(tm)
    }
}

/// `localtime_r` into an existing struct, ignoring failure as rrdtool
/// does: for a count too large for `tm_year`, glibc has then already
/// written the time of day, the weekday, the DST flag and a truncated year,
/// and rrdtool goes on with those (where the C library leaves the struct
/// alone instead, the previous fields stay).
pub fn localtime_into(t: i64, tm: &mut Tm) {
    let Some(t) = libc::time_t::try_from(t).ok() else { return };
    // SAFETY: `tm` is a valid, exclusively borrowed struct; localtime_r
    // writes only into it.
    unsafe { libc::localtime_r(&t, tm) };
}

/// `gmtime_r`; `None` where it fails.
pub fn gmtime(t: i64) -> Option<Tm> {
    let t = libc::time_t::try_from(t).ok()?;
    // SAFETY: as localtime.
    unsafe {
        let mut tm: Tm = std::mem::zeroed();
        (!libc::gmtime_r(&t, &mut tm).is_null()).then_some(tm)
    }
}

/// `mktime`: normalises `tm` in place as C does; -1 on failure.
#[allow(clippy::useless_conversion)] // time_t is i64 here, not everywhere.
pub fn mktime(tm: &mut Tm) -> i64 {
    // SAFETY: `tm` is a valid, exclusively borrowed struct; mktime reads
    // and normalises it and consults only the process time zone.
    i64::from(unsafe { libc::mktime(tm) })
}

/// `strftime(buf, size, fmt, tm)`: the bytes written (none when the
/// result does not fit in `size` bytes with its NUL, or is empty).
pub fn strftime(fmt: &CStr, tm: &Tm, size: usize) -> Vec<u8> {
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: the buffer's length is passed (strftime writes no more); the
    // format is NUL-terminated; `tm` is a valid struct.
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), size, fmt.as_ptr(), tm) };
    buf.truncate(n);
    buf
}
