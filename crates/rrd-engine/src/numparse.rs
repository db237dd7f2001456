//! Number parsing exactly as RRDtool 1.7.2 does it.
//!
//! RRDtool does not use the C library's `strtod` for update values: it has
//! its own decimal parser that accumulates digits in a double and scales by
//! powers of ten, which is not always correctly rounded, accepts no hex, and
//! recognises `nan`/`inf` only as prefixes. Stored values must match bit for
//! bit, so this module reproduces that arithmetic rather than using Rust's
//! (correctly rounded) `str::parse`.
//!
//! Also here: the digit-string subtraction used for COUNTER and DERIVE (which
//! keeps every digit of 64-bit counters) and the "scaled duration" syntax
//! (`300`, `5m`, `1d`) of create's step, heartbeat, steps and rows.

/// The NaN RRDtool stores for "unknown": the x86 default NaN (sign bit set),
/// which `printf` shows as `-nan`.
pub const DNAN: f64 = f64::from_bits(0xfff8_0000_0000_0000);
/// What `nan` parses to (RRDtool negates DNAN, clearing the sign bit).
pub const POS_NAN: f64 = f64::from_bits(0x7ff8_0000_0000_0000);

/// C's `DBL_MIN_EXP` and `DBL_MAX_EXP` (binary exponents, compared with the
/// decimal exponent by RRDtool's parser).
const DBL_MIN_EXP: i32 = -1021;
const DBL_MAX_EXP: i32 = 1024;

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
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

fn parse_special(s: &str) -> Option<f64> {
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

/// RRDtool's `rrd_scaled_duration`: a count (`12`) or a duration with a unit
/// (`5m`, `1h`, `1d`, `1w`, `1M`, `1y`) that is divided by `divisor_secs`.
pub fn scaled_duration(token: &str, divisor_secs: u64) -> Result<u64, &'static str> {
    let digits_end = token.bytes().position(|c| !c.is_ascii_digit()).unwrap_or(token.len());
    if digits_end == 0 {
        return Err("value must be (suffixed) positive number");
    }
    let value: u64 = token[..digits_end].parse().map_err(|_| "value must be (suffixed) positive number")?;
    let rest = &token[digits_end..];
    let scale: u64 = match rest {
        "" => {
            if value == 0 {
                return Err("value must be positive");
            }
            return Ok(value);
        }
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        "M" => 31 * 86_400,
        "y" => 366 * 86_400,
        _ => return Err("value has trailing garbage"),
    };
    let secs = value.checked_mul(scale).ok_or("value must be (suffixed) positive number")?;
    if secs == 0 {
        return Err("value must be positive");
    }
    if divisor_secs == 0 || secs % divisor_secs != 0 {
        return Err("value would truncate when scaled");
    }
    Ok(secs / divisor_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
