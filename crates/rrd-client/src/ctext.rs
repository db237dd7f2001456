//! The text conversions librrd's client applies to replies that are not
//! integers, and the C library's error texts: `atof` (called directly: it is
//! glibc's correctly rounded `strtod`), rrdtool's `rrd_strtodbl` for FETCH
//! values, `strerror` and `gai_strerror`. Integers (`strtol`, `atol`,
//! `atoi`) are `rrd_lang::numparse`'s, which are glibc's to the bit.
//!
//! Invariant: every function takes arbitrary bytes (a C string ends at its
//! first NUL, so these do too) and never panics.
//! Deliberately absent: locale handling; the process runs in the "C" locale
//! (Rust never calls `setlocale`), which is what rrdtool forces for parsing.

use std::ffi::CString;

/// `s` up to its first NUL, as C would see it.
fn c_bytes(s: &[u8]) -> &[u8] {
    &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
}

fn c_string(s: &[u8]) -> CString {
    CString::new(c_bytes(s)).unwrap_or_default()
}

/// librrd's `rrd_strtodbl(s, ...) == 2`: rrdtool's own decimal parser
/// (not glibc's `strtod`) reads the whole C string, or it starts with
/// `nan`/`inf`/`-nan`/`-inf`.
pub fn strtod_whole(s: &[u8]) -> Option<f64> {
    // Bytes beyond ASCII are never part of a number; lossy decoding keeps
    // every ASCII byte where it was.
    rrd_lang::numparse::parse_double(&String::from_utf8_lossy(c_bytes(s))).ok()
}

/// `atof`.
pub fn atof(s: &[u8]) -> f64 {
    rrd_sys::clib::atof(&c_string(s))
}

/// `strerror` and the text of an I/O error: `rrd-lang`'s, which the engine
/// and the daemon print too.
pub use rrd_lang::ctext::{io_text, strerror};

/// `gai_strerror(code)`.
pub use rrd_sys::net::gai_strerror;

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(strtod_whole(b"2.5\0junk"), Some(2.5));
        assert_eq!(strtod_whole(b"nan\xff").map(f64::is_nan), Some(true));
        // rrdtool's parser, not a correctly rounded one: 19 digits
        // accumulated in a double, then three divisions.
        let mut n = 0.0f64;
        for c in "1234567890123456789".bytes() {
            n = n * 10.0 + f64::from(c - b'0');
        }
        let rrdtool = n / 10.0 / 100.0 / 1e16;
        assert_eq!(strtod_whole(b"0.1234567890123456789").map(f64::to_bits), Some(rrdtool.to_bits()));
    }

    #[test]
    fn c_conversions_and_texts() {
        assert_eq!(atof(b"5.0000000000e+02"), 500.0);
        assert_eq!(gai_strerror(libc::EAI_NONAME), "Name or service not known");
    }
}
