//! Number parsing exactly as RRDtool 1.7.2 does it: the one copy of every
//! C conversion rrdtool, rrdcached and librrd's client apply to text.
//!
//! RRDtool does not use the C library's `strtod` for update values: it has
//! its own decimal parser that accumulates digits in a double and scales by
//! powers of ten, which is not always correctly rounded, accepts no hex, and
//! recognises `nan`/`inf` only as prefixes. Stored values must match bit for
//! bit, so this module reproduces that arithmetic rather than using Rust's
//! (correctly rounded) `str::parse`.
//!
//! Also here: the digit-string subtraction used for COUNTER and DERIVE (which
//! keeps every digit of 64-bit counters), the "scaled duration" syntax
//! (`300`, `5m`, `1d`) of create's step, heartbeat, steps and rows, and the
//! C library's integer conversions as glibc 2.36 on x86_64 (LP64) does them,
//! which is what Debian's rrdtool 1.7.2 binaries call:
//! - [`is_c_space`]: `isspace` in the "C" locale (rrdtool never sets another
//!   locale for parsing);
//! - [`strtol`] / [`strtoul`]: base 0 (`0x` hex, leading-`0` octal) or 2..=36,
//!   leading white space and a sign, the count of bytes consumed (C's end
//!   pointer) and whether `errno` became `ERANGE`. `strtol` saturates at
//!   `LONG_MIN`/`LONG_MAX`; `strtoul` saturates at `ULONG_MAX` and negates a
//!   negative number modulo 2^64. No `0b` prefix: the binaries link the
//!   pre-C23 `strtol`. `strtoll` is `strtol` (long is 64 bits);
//! - [`atoi`] / [`atol`]: glibc's `(int) strtol(s, NULL, 10)` and
//!   `strtol(s, NULL, 10)`, so `atoi` truncates a saturated value to its low
//!   32 bits (`atoi("99999999999999999999")` is -1).
//!
//! Invariant: every function takes arbitrary bytes and never panics; a C
//! string ends at its first NUL, and NUL is neither a digit nor a space, so
//! conversions stop there as C's do.
//!
//! Deliberately absent: glibc's own `strtod`/`atof` (correctly rounded, hex
//! floats); the places that call them (librrd's INFO reply values) call the C
//! library itself.

/// The NaN RRDtool stores for "unknown": the x86 default NaN (sign bit set),
/// which `printf` shows as `-nan`.
pub const DNAN: f64 = f64::from_bits(0xfff8_0000_0000_0000);
/// What `nan` parses to (RRDtool negates DNAN, clearing the sign bit).
pub const POS_NAN: f64 = f64::from_bits(0x7ff8_0000_0000_0000);

/// C's `DBL_MIN_EXP` and `DBL_MAX_EXP` (binary exponents, compared with the
/// decimal exponent by RRDtool's parser).
const DBL_MIN_EXP: i32 = -1021;
const DBL_MAX_EXP: i32 = 1024;

/// C's `isspace` in the "C" locale: space, `\t`, `\n`, `\v`, `\f`, `\r`.
pub fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// `s` after the white space C's conversions skip (the `isspace` loop).
pub fn trim_c_space(s: &str) -> &str {
    s.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8))
}

/// What one of C's `strto*` conversions reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Converted<T> {
    /// The value returned (saturated when `overflow`).
    pub value: T,
    /// How many bytes the end pointer moved: 0 when nothing was converted
    /// (no digits), in which case `value` is 0.
    pub consumed: usize,
    /// Whether `errno` was set to `ERANGE`.
    pub overflow: bool,
}

/// The scan shared by `strtol` and `strtoul`: white space, a sign, the
/// prefix `base` allows, digits. Returns whether a `-` was read, the
/// magnitude (saturated at `u64::MAX`, with the overflow flag) and the bytes
/// consumed (0 when no digit was read).
fn scan_integer(s: &[u8], base: u32) -> (bool, u64, bool, usize) {
    assert!(base == 0 || (2..=36).contains(&base), "C's strto* take base 0 or 2..=36, not {base}");
    let mut p = 0;
    while p < s.len() && is_c_space(s[p]) {
        p += 1;
    }
    let negative = s.get(p) == Some(&b'-');
    if matches!(s.get(p), Some(b'-' | b'+')) {
        p += 1;
    }
    let mut base = base;
    // `0x` counts only when a hex digit follows; otherwise glibc converts
    // the `0` alone (and base 0 then reads it as octal, the same zero).
    let hex_prefix = s.get(p) == Some(&b'0')
        && matches!(s.get(p + 1), Some(b'x' | b'X'))
        && s.get(p + 2).is_some_and(u8::is_ascii_hexdigit);
    if (base == 0 || base == 16) && hex_prefix {
        p += 2;
        base = 16;
    } else if base == 0 {
        base = if s.get(p) == Some(&b'0') { 8 } else { 10 };
    }
    let start = p;
    let mut magnitude: u64 = 0;
    let mut overflow = false;
    while let Some(d) = s.get(p).and_then(|&c| (c as char).to_digit(base)) {
        match magnitude.checked_mul(u64::from(base)).and_then(|m| m.checked_add(u64::from(d))) {
            Some(m) if !overflow => magnitude = m,
            _ => {
                overflow = true;
                magnitude = u64::MAX;
            }
        }
        p += 1;
    }
    if p == start {
        return (false, 0, false, 0);
    }
    (negative, magnitude, overflow, p)
}

/// C's `strtol(s, &end, base)` (and `strtoll`: long is 64 bits), as glibc
/// does it: saturating at `i64::MIN`/`i64::MAX` with `ERANGE`.
pub fn strtol(s: impl AsRef<[u8]>, base: u32) -> Converted<i64> {
    let (negative, magnitude, overflow, consumed) = scan_integer(s.as_ref(), base);
    let limit = if negative { 1u64 << 63 } else { i64::MAX as u64 };
    if overflow || magnitude > limit {
        let value = if negative { i64::MIN } else { i64::MAX };
        return Converted { value, consumed, overflow: true };
    }
    let value = if negative { (magnitude as i64).wrapping_neg() } else { magnitude as i64 };
    Converted { value, consumed, overflow: false }
}

/// C's `strtoul(s, &end, base)` (and `strtoull`), as glibc does it: a
/// magnitude beyond 64 bits is `u64::MAX` with `ERANGE`; a negative number
/// is negated modulo 2^64 (`"-1"` is `u64::MAX`, no error).
pub fn strtoul(s: impl AsRef<[u8]>, base: u32) -> Converted<u64> {
    let (negative, magnitude, overflow, consumed) = scan_integer(s.as_ref(), base);
    if overflow {
        return Converted { value: u64::MAX, consumed, overflow: true };
    }
    let value = if negative { magnitude.wrapping_neg() } else { magnitude };
    Converted { value, consumed, overflow: false }
}

/// C's `(int)` of a double on x86_64 (`cvttsd2si`): truncation toward
/// zero, and `INT_MIN` for NaN and anything out of range.
pub fn c_int(x: f64) -> i32 {
    if x.is_nan() || x >= 2_147_483_648.0 || x <= -2_147_483_649.0 {
        i32::MIN
    } else {
        x as i32
    }
}

/// C's `(long)` of a double on x86_64 (`cvttsd2si` with a 64-bit
/// destination): truncation toward zero, and `LONG_MIN` for NaN and
/// anything out of range (rrdtool's `time_t t = floor(x)` of a huge time).
pub fn c_long(x: f64) -> i64 {
    // 2^63 is exact in f64; -2^63 itself converts, anything below does not.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        x as i64
    } else {
        i64::MIN
    }
}

/// C's `atoi`: glibc's `(int) strtol(s, NULL, 10)`, so a value beyond `int`
/// keeps its low 32 bits; 0 when there are no digits.
pub fn atoi(s: impl AsRef<[u8]>) -> i32 {
    strtol(s, 10).value as i32
}

/// C's `atol`: glibc's `strtol(s, NULL, 10)`; 0 when there are no digits.
pub fn atol(s: impl AsRef<[u8]>) -> i64 {
    strtol(s, 10).value
}

/// RRDtool's `rrd_strtod`: returns the value and how many bytes it consumed
/// (0 when no digits were found, or when the decimal exponent is outside
/// `DBL_MIN_EXP..=DBL_MAX_EXP`, where rrdtool reports no conversion).
pub fn rrd_strtod(s: &str) -> (f64, usize) {
    rrd_strtod_bytes(s.as_bytes())
}

/// [`rrd_strtod`] over bytes. Exponent digits accumulate in a wrapping
/// 32-bit int, as in C (observed with `rrdtool create` on huge exponents).
pub fn rrd_strtod_bytes(b: &[u8]) -> (f64, usize) {
    let mut p = 0;
    while p < b.len() && is_c_space(b[p]) {
        p += 1;
    }
    let mut negative = false;
    if p < b.len() && (b[p] == b'-' || b[p] == b'+') {
        negative = b[p] == b'-';
        p += 1;
    }
    let mut number = 0.0f64;
    let mut exponent: i32 = 0;
    let mut digits = 0;
    while p < b.len() && b[p].is_ascii_digit() {
        number = number * 10.0 + f64::from(b[p] - b'0');
        p += 1;
        digits += 1;
    }
    if p < b.len() && b[p] == b'.' {
        p += 1;
        let mut decimals = 0i32;
        while p < b.len() && b[p].is_ascii_digit() {
            number = number * 10.0 + f64::from(b[p] - b'0');
            p += 1;
            digits += 1;
            decimals = decimals.wrapping_add(1);
        }
        exponent = exponent.wrapping_sub(decimals);
    }
    if digits == 0 {
        return (0.0, 0);
    }
    if negative {
        number = -number;
    }
    if p < b.len() && (b[p] == b'e' || b[p] == b'E') {
        p += 1;
        let mut exp_negative = false;
        if p < b.len() && (b[p] == b'-' || b[p] == b'+') {
            exp_negative = b[p] == b'-';
            p += 1;
        }
        let mut n: i32 = 0;
        while p < b.len() && b[p].is_ascii_digit() {
            n = n.wrapping_mul(10).wrapping_add(i32::from(b[p] - b'0'));
            p += 1;
        }
        exponent = if exp_negative { exponent.wrapping_sub(n) } else { exponent.wrapping_add(n) };
    }
    if !(DBL_MIN_EXP..=DBL_MAX_EXP).contains(&exponent) {
        // RRDtool returns HUGE_VAL and leaves endptr where it was (no
        // conversion), which the caller reports as "cannot convert".
        return (f64::INFINITY, 0);
    }
    let mut p10 = 10.0f64;
    let mut n = exponent.unsigned_abs();
    while n != 0 {
        if n & 1 == 1 {
            if exponent < 0 {
                number /= p10;
            } else {
                number *= p10;
            }
        }
        n >>= 1;
        p10 *= p10;
    }
    (number, p)
}

/// The words `rrd_strtodbl` accepts where no digits come first: `nan`,
/// `-nan`, `inf`, `-inf` (any case, as prefixes).
pub fn parse_special(s: &str) -> Option<f64> {
    let lower = |n: usize| s.get(..n).map(|p| p.to_ascii_lowercase());
    if lower(4).as_deref() == Some("-nan") {
        Some(DNAN)
    } else if lower(3).as_deref() == Some("nan") {
        Some(POS_NAN)
    } else if lower(3).as_deref() == Some("inf") {
        Some(f64::INFINITY)
    } else if lower(4).as_deref() == Some("-inf") {
        Some(f64::NEG_INFINITY)
    } else {
        None
    }
}

/// Why a string is not a number, worded as RRDtool words it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NumberError {
    #[error("Cannot convert '{0}' to float")]
    NotANumber(String),
    #[error("Converted '{input}' to {value:.6}, but cannot convert '{tail}'")]
    Trailing { input: String, value: f64, tail: String },
}

/// RRDtool's `rrd_strtodbl`: the whole string must be a number (or start
/// with `nan`/`inf`/`-nan`/`-inf` when no digits come first).
pub fn parse_double(s: &str) -> Result<f64, NumberError> {
    let (value, used) = rrd_strtod(s);
    if used == 0 {
        return parse_special(s).ok_or_else(|| NumberError::NotANumber(s.to_string()));
    }
    if used < s.len() {
        return Err(NumberError::Trailing { input: s.to_string(), value, tail: s[used..].to_string() });
    }
    Ok(value)
}

/// RRDtool's `rrd_diff`: `a - b` for two integers given as digit strings,
/// exact up to 30 digits. Leading non-digits are skipped (a `-` among them
/// makes the number negative), anything after the digits is ignored. Unknown
/// (DNAN) when either has no digits, the signs differ, or a number has more
/// than 30 digits.
pub fn rrd_diff(a: &str, b: &str) -> f64 {
    fn digits(s: &str) -> (bool, &str) {
        let bytes = s.as_bytes();
        let mut i = 0;
        let mut negative = false;
        while i < bytes.len() && !bytes[i].is_ascii_digit() {
            if bytes[i] == b'-' {
                negative = true;
            }
            i += 1;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        (negative, &s[start..i])
    }
    let (a_neg, a_digits) = digits(a);
    let (b_neg, b_digits) = digits(b);
    if a_digits.is_empty() || b_digits.is_empty() || a_neg != b_neg {
        return DNAN;
    }
    if a_digits.len().max(b_digits.len()) > rrd_format::LAST_DS_LEN {
        return DNAN;
    }
    // 30 decimal digits fit in an i128 (which holds 38).
    let a_val: i128 = a_digits.parse().expect("at most 30 digits");
    let b_val: i128 = b_digits.parse().expect("at most 30 digits");
    // rrdtool 1.7.2 converts the difference's digit string with its own
    // rrd_strtod (digits accumulated in a double, rounding at every step),
    // not with a correctly rounded atof: near 2^64 the two differ by ulps,
    // and those ulps show in COUNTER wrap-arounds.
    let exact = a_val - b_val;
    let (magnitude, _) = rrd_strtod(&exact.unsigned_abs().to_string());
    let diff = if exact < 0 { -magnitude } else { magnitude };
    if a_neg {
        -diff
    } else {
        diff
    }
}

/// RRDtool's `rrd_scaled_duration(token, divisor_secs)`: a count (`12`,
/// returned as is) or digits and a unit of which only the first character
/// after the digits is looked at (`s`, `m`, `h`, `d`, `w`, `M` = 31 days,
/// `y` = 366 days; `5mx` is `5m`), in seconds divided by `divisor_secs`.
/// Arithmetic is C's `unsigned long`: `strtoul` saturates, the scaling
/// wraps. The errors are rrdtool's texts.
pub fn scaled_duration(token: &str, divisor_secs: u64) -> Result<u64, &'static str> {
    let b = token.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_digit) {
        return Err("value must be (suffixed) positive number");
    }
    if divisor_secs == 0 {
        return Err("INTERNAL ERROR: Zero divisor");
    }
    let count = strtoul(b, 10);
    let (scale, divisor_secs): (u64, u64) = match b.get(count.consumed) {
        // A count: not scaled, not divided.
        None | Some(0) => (1, 1),
        Some(b's') => (1, divisor_secs),
        Some(b'm') => (60, divisor_secs),
        Some(b'h') => (3600, divisor_secs),
        Some(b'd') => (86_400, divisor_secs),
        Some(b'w') => (7 * 86_400, divisor_secs),
        Some(b'M') => (31 * 86_400, divisor_secs),
        Some(b'y') => (366 * 86_400, divisor_secs),
        Some(_) => return Err("value has trailing garbage"),
    };
    let value = count.value.wrapping_mul(scale);
    if value == 0 {
        return Err("value must be positive");
    }
    if value % divisor_secs != 0 {
        return Err("value would truncate when scaled");
    }
    Ok(value / divisor_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_long_is_x86_64s_truncating_conversion() {
        assert_eq!(c_long(1.9), 1);
        assert_eq!(c_long(-1.9), -1);
        assert_eq!(c_long(9_223_372_036_854_774_784.0), 9_223_372_036_854_774_784);
        assert_eq!(c_long(-9_223_372_036_854_775_808.0), i64::MIN);
        for out in [9_223_372_036_854_775_808.0, 1e19, -1e19, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            assert_eq!(c_long(out), i64::MIN, "{out}");
        }
    }

    #[test]
    fn strtod_matches_rrdtool_forms() {
        assert_eq!(parse_double("1").unwrap(), 1.0);
        assert_eq!(parse_double(" 1").unwrap(), 1.0);
        assert_eq!(parse_double("+1").unwrap(), 1.0);
        assert_eq!(parse_double(".5").unwrap(), 0.5);
        assert_eq!(parse_double("1.").unwrap(), 1.0);
        assert_eq!(parse_double("1E3").unwrap(), 1000.0);
        assert_eq!(parse_double("0.1e+2").unwrap(), 10.0);
        assert_eq!(parse_double("1e400").unwrap(), f64::INFINITY);
        assert_eq!(parse_double("1e-400").unwrap(), 0.0);
        assert_eq!(parse_double("-0").unwrap().to_bits(), (-0.0f64).to_bits());
        assert_eq!(parse_double("infinity").unwrap(), f64::INFINITY);
        assert_eq!(parse_double("-inf").unwrap(), f64::NEG_INFINITY);
        assert_eq!(parse_double("nan").unwrap().to_bits(), POS_NAN.to_bits());
        assert_eq!(parse_double("-NaN").unwrap().to_bits(), DNAN.to_bits());
    }

    #[test]
    fn strtod_errors_are_worded_like_rrdtool() {
        assert_eq!(parse_double("x").unwrap_err().to_string(), "Cannot convert 'x' to float");
        assert_eq!(
            parse_double("0x10").unwrap_err().to_string(),
            "Converted '0x10' to 0.000000, but cannot convert 'x10'"
        );
        assert!(parse_double("1 ").is_err());
        assert!(parse_double("").is_err());
        assert!(parse_double("-").is_err());
    }

    /// RRDtool scales by repeated multiplication, which differs from correct
    /// rounding for some inputs; the result must follow RRDtool.
    #[test]
    fn strtod_uses_rrdtool_arithmetic_not_correct_rounding() {
        let s = "0.1234567890123456789";
        let (v, _) = rrd_strtod(s);
        let mut n = 0.0f64;
        for c in "1234567890123456789".bytes() {
            n = n * 10.0 + f64::from(c - b'0');
        }
        // 19 = 10011b: divide by 10, 100, 1e16 in that order.
        let expected = n / 10.0 / 100.0 / 1e16;
        assert_eq!(v.to_bits(), expected.to_bits());
    }

    #[test]
    fn diff_handles_long_counters_and_signs() {
        assert_eq!(rrd_diff("18446744073709551615", "18446744073709551610"), 5.0);
        assert_eq!(rrd_diff("5", "10"), -5.0);
        assert_eq!(rrd_diff("-5", "-10"), 5.0);
        assert!(rrd_diff("-5", "10").is_nan());
        assert!(rrd_diff("U", "10").is_nan());
        assert!(rrd_diff(&"9".repeat(31), "1").is_nan());
        // Observed with rrdtool 1.7.2: a 64-bit wrap of 307676761 after
        // 18446744073487696704 stores 529534976 (correct rounding gives 529530880).
        let mut v = rrd_diff("307676761", "18446744073487696704");
        v += 4_294_967_295.0;
        v += 18_446_744_069_414_584_320.0;
        assert_eq!(v, 529_534_976.0);
    }

    /// Every byte C's `isspace` accepts in the "C" locale, and no other.
    #[test]
    fn c_space_is_exactly_the_six() {
        let spaces: Vec<u8> = (0..=255u8).filter(|&b| is_c_space(b)).collect();
        assert_eq!(spaces, b"\t\n\x0b\x0c\r ");
        for &space in &spaces {
            let text = [space, b'4', b'2'];
            assert_eq!(strtol(text, 10), Converted { value: 42, consumed: 3, overflow: false }, "{space:#x}");
            assert_eq!(strtoul(text, 0).value, 42);
            assert_eq!(atoi(text), 42);
        }
        // A no-break space (UTF-8) or a file separator is not white space.
        assert_eq!(strtol("\u{a0}42", 10).consumed, 0);
        assert_eq!(atoi(b"\x1c42"), 0);
        assert_eq!(trim_c_space(" \t\n\x0b\x0c\r x "), "x ");
        assert_eq!(trim_c_space("\u{a0}x"), "\u{a0}x");
    }

    #[test]
    fn strtol_signs_bases_and_garbage() {
        let c = |value, consumed| Converted { value, consumed, overflow: false };
        assert_eq!(strtol("", 0), c(0, 0));
        assert_eq!(strtol("   ", 10), c(0, 0));
        assert_eq!(strtol("-", 10), c(0, 0));
        assert_eq!(strtol("+ 1", 10), c(0, 0));
        assert_eq!(strtol("--1", 10), c(0, 0));
        assert_eq!(strtol("+17", 10), c(17, 3));
        assert_eq!(strtol(" -17x", 10), c(-17, 4));
        assert_eq!(strtol("12abc", 0), c(12, 2));
        // Base 0: hex after 0x, octal after a leading 0, else decimal.
        assert_eq!(strtol("0x1f", 0), c(31, 4));
        assert_eq!(strtol("-0X1F", 0), c(-31, 5));
        assert_eq!(strtol("010", 0), c(8, 3));
        assert_eq!(strtol("09", 0), c(0, 1));
        assert_eq!(strtol("0", 0), c(0, 1));
        // `0x` with no hex digit after it: the 0 alone.
        assert_eq!(strtol("0x", 0), c(0, 1));
        assert_eq!(strtol("0xg", 16), c(0, 1));
        assert_eq!(strtol("0x10", 16), c(16, 4));
        // Base 10 reads no prefix.
        assert_eq!(strtol("0x10", 10), c(0, 1));
        assert_eq!(strtol("010", 10), c(10, 3));
        assert_eq!(strtol("zz", 36), c(1295, 2));
        // A C string ends at its NUL.
        assert_eq!(strtol("5\u{0}6", 10), c(5, 1));
    }

    #[test]
    fn strtol_saturates_with_erange() {
        let max = Converted { value: i64::MAX, consumed: 20, overflow: true };
        assert_eq!(strtol("99999999999999999999", 10), max);
        assert_eq!(
            strtol("9223372036854775807", 10),
            Converted { value: i64::MAX, consumed: 19, overflow: false }
        );
        assert!(strtol("9223372036854775808", 10).overflow);
        assert_eq!(
            strtol("-9223372036854775808", 10),
            Converted { value: i64::MIN, consumed: 20, overflow: false }
        );
        assert_eq!(
            strtol("-9223372036854775809", 10),
            Converted { value: i64::MIN, consumed: 20, overflow: true }
        );
        assert_eq!(strtol("-0x8000000000000000", 0).value, i64::MIN);
        assert_eq!(strtol("0x8000000000000000", 0).value, i64::MAX);
        // Digits after the overflow are still consumed.
        assert_eq!(strtol("123456789012345678901234567890z", 10).consumed, 30);
    }

    #[test]
    fn strtoul_wraps_negatives_and_saturates() {
        assert_eq!(strtoul("-1", 0), Converted { value: u64::MAX, consumed: 2, overflow: false });
        assert_eq!(strtoul("18446744073709551615", 10).value, u64::MAX);
        assert!(!strtoul("18446744073709551615", 10).overflow);
        assert_eq!(
            strtoul("18446744073709551616", 10),
            Converted { value: u64::MAX, consumed: 20, overflow: true }
        );
        assert!(strtoul("-18446744073709551616", 10).overflow);
        assert_eq!(strtoul("0x", 0), Converted { value: 0, consumed: 1, overflow: false });
        assert_eq!(strtoul("abc", 0), Converted { value: 0, consumed: 0, overflow: false });
    }

    /// glibc's atoi is `(int) strtol(s, NULL, 10)`: saturation, then the
    /// low 32 bits.
    #[test]
    fn atoi_truncates_strtol_to_int() {
        assert_eq!(atoi(""), 0);
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi(" -7z"), -7);
        assert_eq!(atoi("0x10"), 0);
        assert_eq!(atoi("010"), 10);
        assert_eq!(atoi("2147483648"), i32::MIN);
        assert_eq!(atoi("4294967296"), 0);
        assert_eq!(atoi("4294967299"), 3);
        assert_eq!(atoi("99999999999999999999"), -1);
        assert_eq!(atoi("-99999999999999999999"), 0);
        assert_eq!(atol("99999999999999999999"), i64::MAX);
        assert_eq!(atol("-1000000800 "), -1_000_000_800);
    }

    #[test]
    fn int_of_double_is_x86_64s() {
        assert_eq!(c_int(2.9), 2);
        assert_eq!(c_int(-2.9), -2);
        assert_eq!(c_int(2_147_483_647.9), i32::MAX);
        assert_eq!(c_int(-2_147_483_648.9), i32::MIN);
        assert_eq!(c_int(2_147_483_648.0), i32::MIN);
        assert_eq!(c_int(f64::NAN), i32::MIN);
        assert_eq!(c_int(f64::INFINITY), i32::MIN);
        assert_eq!(c_int(f64::NEG_INFINITY), i32::MIN);
    }

    /// The C library itself is the oracle: glibc's conversions on random
    /// strings over an alphabet of the characters they treat specially.
    mod against_glibc {
        use super::*;
        use proptest::prelude::*;
        use rrd_sys::clib;
        use std::ffi::CString;

        fn glibc_strtol(s: &str, base: u32) -> Converted<i64> {
            let (value, consumed, overflow) = clib::strtol(&CString::new(s).unwrap(), base as i32);
            Converted { value, consumed, overflow }
        }

        fn glibc_strtoul(s: &str, base: u32) -> Converted<u64> {
            let (value, consumed, overflow) = clib::strtoul(&CString::new(s).unwrap(), base as i32);
            Converted { value, consumed, overflow }
        }

        fn glibc_atoi(s: &str) -> i32 {
            clib::atoi(&CString::new(s).unwrap())
        }

        fn text() -> impl Strategy<Value = String> {
            let pieces = prop::sample::select(vec![
                " ",
                "\t",
                "\n",
                "\x0b",
                "\x0c",
                "\r",
                "+",
                "-",
                "0",
                "0x",
                "0X",
                "1",
                "7",
                "8",
                "9",
                "a",
                "f",
                "g",
                "z",
                "x",
                ".",
                "99999999999",
                "18446744073709551615",
                "9223372036854775808",
                "\u{a0}",
            ]);
            prop::collection::vec(pieces, 0..8).prop_map(|v| v.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]
            #[test]
            fn conversions_equal_glibc(s in text(), base in prop::sample::select(vec![0u32, 2, 8, 10, 16, 36])) {
                prop_assert_eq!(strtol(&s, base), glibc_strtol(&s, base), "strtol({:?}, {})", s, base);
                prop_assert_eq!(strtoul(&s, base), glibc_strtoul(&s, base), "strtoul({:?}, {})", s, base);
                prop_assert_eq!(atoi(&s), glibc_atoi(&s), "atoi({:?})", s);
            }
        }
    }

    #[test]
    fn scaled_duration_counts_and_units() {
        assert_eq!(scaled_duration("300", 1), Ok(300));
        assert_eq!(scaled_duration("5m", 1), Ok(300));
        assert_eq!(scaled_duration("1h", 300), Ok(12));
        assert_eq!(scaled_duration("1w", 600), Ok(1008));
        assert_eq!(scaled_duration("7m", 300), Err("value would truncate when scaled"));
        assert_eq!(scaled_duration("0", 300), Err("value must be positive"));
        assert_eq!(scaled_duration("x", 300), Err("value must be (suffixed) positive number"));
        assert_eq!(scaled_duration("-5", 300), Err("value must be (suffixed) positive number"));
        assert_eq!(scaled_duration("1.5", 300), Err("value has trailing garbage"));
        assert_eq!(scaled_duration("5q", 1), Err("value has trailing garbage"));
        assert_eq!(scaled_duration(" 5", 1), Err("value must be (suffixed) positive number"));
        assert_eq!(scaled_duration("", 1), Err("value must be (suffixed) positive number"));
        assert_eq!(scaled_duration("5m", 0), Err("INTERNAL ERROR: Zero divisor"));
        // A count is neither scaled nor divided.
        assert_eq!(scaled_duration("7", 300), Ok(7));
        assert_eq!(scaled_duration("300s", 300), Ok(1));
        // Only the first character after the digits is read.
        assert_eq!(scaled_duration("10mx", 1), Ok(600));
        assert_eq!(scaled_duration("1M", 86_400), Ok(31));
        assert_eq!(scaled_duration("1y", 86_400), Ok(366));
        // unsigned long arithmetic: strtoul saturates, the scaling wraps.
        assert_eq!(scaled_duration("99999999999999999999", 1), Ok(u64::MAX));
        assert_eq!(scaled_duration("99999999999999999999s", 1), Ok(u64::MAX));
        assert_eq!(scaled_duration("18446744073709551615m", 1), Ok(u64::MAX.wrapping_mul(60)));
        assert_eq!(scaled_duration("0m", 1), Err("value must be positive"));
        // 2^62 minutes wrap to zero.
        assert_eq!(scaled_duration("4611686018427387904m", 1), Err("value must be positive"));
    }
}
