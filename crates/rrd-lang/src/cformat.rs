//! Printing one double as rrdtool's C code prints it, in one copy: glibc's
//! `printf` (fetch, info, graph's PRINT/GPRINT and time labels) and
//! RRDtool 1.7.2's own portable `rrd_snprintf` (xport, dump, the xport
//! meta lists, librrd's exported `rrd_snprintf`). The two differ near
//! ties: glibc rounds the exact binary value (an exact tie to even),
//! `rrd_snprintf` scales by powers of ten computed in doubles and rounds
//! half up, so their last digits can differ, and bit-equal output needs
//! the right one in each place.
//!
//! [`Conversion`] is one `%[flag][width][.precision]<conv>` for `e`, `f`,
//! `g` (and their capitals); [`printf`] and [`rrd_snprintf`] print one
//! value with it. [`printf_e`], [`printf_e10`] and [`rrd_snprintf_e`] are
//! the `%.Ne` forms the commands use.
//!
//! Deliberately absent: parsing format strings (callers accept their own
//! whitelists, and a user's format never reaches a real `printf`), other
//! conversions, and more than one flag per conversion (rrdtool's PRINT
//! whitelist allows one).

/// One `%[flag][width][.precision]<conv>` conversion of a double.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conversion {
    /// One of `-`, `+`, space, `0`, `#`.
    pub flag: Option<char>,
    pub width: usize,
    /// `None`: C's default of 6.
    pub precision: Option<usize>,
    /// `e`, `E`, `f`, `F`, `g` or `G`.
    pub conv: char,
}

impl Conversion {
    /// `%.{precision}e`.
    pub fn e(precision: usize) -> Conversion {
        Conversion { flag: None, width: 0, precision: Some(precision), conv: 'e' }
    }
}

/// `printf("%.{precision}e")` with glibc: a mantissa with `precision`
/// decimals, an exact tie to even, at least two exponent digits, and
/// `nan`, `-nan`, `inf`, `-inf` for the special values.
pub fn printf_e(value: f64, precision: usize) -> String {
    printf(value, Conversion::e(precision))
}

/// `printf("%0.10e")`, how `fetch` and `info` print every value.
pub fn printf_e10(value: f64) -> String {
    printf_e(value, 10)
}

/// `rrd_snprintf("%0.{precision}e")`: how 1.7.2's `xport` and `dump`
/// print values (see [`rrd_snprintf`]). Empty if that printf gave up,
/// which `%e` of a double never makes it do (the scaled value is below 10).
pub fn rrd_snprintf_e(value: f64, precision: usize) -> String {
    rrd_snprintf(value, Conversion::e(precision)).unwrap_or_default()
}

/// The sign C prints before the digits: `-` for a negative value, else
/// what the `+` or space flag asks for.
fn sign(negative: bool, c: Conversion) -> &'static str {
    match (negative, c.flag) {
        (true, _) => "-",
        (false, Some('+')) => "+",
        (false, Some(' ')) => " ",
        _ => "",
    }
}

/// `sign` and `body` padded to the width: spaces after (`-`), zeros
/// between sign and digits (`0`, when `zeros` allows: never for `nan` and
/// `inf`), else spaces before.
fn pad(sign: &str, body: &str, c: Conversion, zeros: bool) -> String {
    let n = c.width.saturating_sub(sign.len() + body.len());
    match c.flag {
        Some('-') => format!("{sign}{body}{}", " ".repeat(n)),
        Some('0') if zeros => format!("{sign}{}{body}", "0".repeat(n)),
        _ => format!("{}{sign}{body}", " ".repeat(n)),
    }
}

/// `nan`/`inf` in the conversion's case.
fn special(v: f64, upper: bool) -> &'static str {
    match (v.is_nan(), upper) {
        (true, false) => "nan",
        (true, true) => "NAN",
        (false, false) => "inf",
        (false, true) => "INF",
    }
}

/// One double as glibc's `printf` prints it for `c`: the exact binary
/// value rounded (an exact tie to even), `-` on negative zero and on a
/// negative NaN (rrdtool's unknown prints `-nan`), infinities and NaN
/// padded with spaces even with the `0` flag.
pub fn printf(v: f64, c: Conversion) -> String {
    let upper = c.conv.is_ascii_uppercase();
    let alt = c.flag == Some('#');
    let body = if !v.is_finite() {
        special(v, upper).to_string()
    } else {
        let precision = c.precision.unwrap_or(6);
        match c.conv.to_ascii_lowercase() {
            'f' => {
                let mut s = format!("{:.*}", precision, v.abs());
                if alt && precision == 0 {
                    s.push('.');
                }
                s
            }
            'e' => c_exp(v, precision, upper, alt),
            _ => c_general(v, precision, upper, alt),
        }
    };
    pad(sign(v.is_sign_negative(), c), &body, c, v.is_finite())
}

/// `%e` of `|v|`: mantissa and an exponent of at least two digits.
fn c_exp(v: f64, precision: usize, upper: bool, alt: bool) -> String {
    let s = format!("{:.*e}", precision, v.abs());
    let mant = &s[..s.find('e').expect("LowerExp writes an exponent")];
    let exp = exponent(&s);
    let point = if alt && precision == 0 { "." } else { "" };
    let e = if upper { 'E' } else { 'e' };
    format!("{mant}{point}{e}{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
}

/// `%g` of `|v|`: `%e` or `%f` by the exponent, trailing zeros removed
/// (unless `#`).
fn c_general(v: f64, precision: usize, upper: bool, alt: bool) -> String {
    let p = precision.max(1);
    if v == 0.0 {
        return match (alt, p) {
            (true, 1) => "0.".to_string(),
            (true, _) => format!("{:.*}", p - 1, 0.0),
            _ => "0".to_string(),
        };
    }
    // The exponent X of the %e form with p - 1 digits after the point.
    let x = exponent(&format!("{:.*e}", p - 1, v.abs()));
    // glibc's own rule where rounding carries up to 10^P from just below:
    // it chose %f by the unrounded exponent, P - 1, which has no fraction
    // digits, and keeps that count when the carry turns it into %e, so
    // `%#.2g` of 99.5 is `1.e+02` (not C99's `1.0e+02`). Without `#` the
    // stripped zeros hide it. (40 digits never carry: a double is never
    // that close below a power of ten.)
    if alt && x == p as i32 && exponent(&format!("{:.40e}", v.abs())) == x - 1 {
        return c_exp(v, 0, upper, alt);
    }
    let s = if (p as i32) > x && x >= -4 {
        let mut f = format!("{:.*}", (p as i32 - 1 - x) as usize, v.abs());
        // `#` always shows the point, even with no digit after it.
        if alt && !f.contains('.') {
            f.push('.');
        }
        f
    } else {
        c_exp(v, p - 1, upper, alt)
    };
    if alt {
        return s;
    }
    // Strip trailing zeros of the fraction (before any exponent).
    let (num, exp) = s.split_at(s.find(['e', 'E']).unwrap_or(s.len()));
    let num = if num.contains('.') { num.trim_end_matches('0').trim_end_matches('.') } else { num };
    format!("{num}{exp}")
}

/// The decimal exponent of a `LowerExp` text.
fn exponent(e_form: &str) -> i32 {
    e_form.split_once('e').expect("LowerExp writes an exponent").1.parse().expect("a decimal exponent")
}

/// 10^e as rrd_snprintf computes it: repeated multiplication (or
/// division), each step rounded.
fn pow10(mut e: i32) -> f64 {
    let mut r = 1.0f64;
    while e > 0 {
        r *= 10.0;
        e -= 1;
    }
    while e < 0 {
        r /= 10.0;
        e += 1;
    }
    r
}

/// One double as RRDtool 1.7.2's own `rrd_snprintf` (C99-snprintf, built
/// with `long double` as `double`) prints it: the decimal exponent found
/// by repeated scaling and clamped to a double's decimal range (so
/// subnormals print as `0.000…e-308`), powers of ten by repeated
/// multiplication, the fraction scaled to an integer and rounded half up
/// (ties away from zero), at most 19 fractional digits, no sign on
/// negative zero or NaN. `None` when the integer part does not fit 64 bits
/// (that printf gives up there).
pub fn rrd_snprintf(v: f64, c: Conversion) -> Option<String> {
    let upper = c.conv.is_ascii_uppercase();
    let kind = c.conv.to_ascii_lowercase();
    let sign = sign(v < 0.0, c);
    if !v.is_finite() {
        return Some(pad(sign, special(v, upper), c, false));
    }
    // C's cast to uintmax_t, refusing what does not fit.
    let cast = |x: f64| if x >= u64::MAX as f64 { None } else { Some(x as u64) };
    let myround = |x: f64| cast(x).map(|i| if x - i as f64 >= 0.5 { i + 1 } else { i });
    let mut precision = c.precision.unwrap_or(6) as i32;
    let alt = c.flag == Some('#');
    let mut omit_zeros = false;
    let mut estyle = kind == 'e';
    let mut exponent = 0i32;
    if kind == 'e' || kind == 'g' {
        if kind == 'g' {
            precision = precision.max(1) - 1;
            omit_zeros = !alt;
        }
        // DBL_MIN_10_EXP and DBL_MAX_10_EXP bound the search.
        let mut tmp = v.abs();
        while tmp < 1.0 && tmp > 0.0 {
            exponent -= 1;
            if exponent < -307 {
                break;
            }
            tmp *= 10.0;
        }
        while tmp >= 10.0 {
            exponent += 1;
            if exponent > 308 {
                break;
            }
            tmp /= 10.0;
        }
        estyle = true;
    }
    let (int_part, frac_part) = loop {
        precision = precision.min(19);
        let mut u = v.abs();
        if estyle {
            u /= pow10(exponent);
        }
        let mut int_part = cast(u)?;
        let mask = pow10(precision);
        let mut frac = myround(mask * (u - int_part as f64))?;
        if frac as f64 >= mask {
            int_part += 1;
            frac = 0;
            if estyle && int_part == 10 {
                int_part = 1;
                exponent += 1;
            }
        }
        // %g with an exponent in range: again as %f.
        if kind == 'g' && estyle && precision + 1 > exponent && exponent >= -4 {
            precision -= exponent;
            estyle = false;
            continue;
        }
        break (int_part, frac);
    };
    let mut frac_digits = if frac_part != 0 { frac_part.to_string() } else { String::new() };
    let mut lead_zeros = (precision - frac_digits.len() as i32).max(0) as usize;
    if omit_zeros {
        if !frac_digits.is_empty() {
            let trimmed = frac_digits.trim_end_matches('0').len();
            precision -= (frac_digits.len() - trimmed) as i32;
            frac_digits.truncate(trimmed);
        } else {
            precision = 0;
            lead_zeros = 0;
        }
    }
    let mut body = int_part.to_string();
    if precision > 0 || alt {
        body.push('.');
    }
    body.push_str(&"0".repeat(lead_zeros));
    body.push_str(&frac_digits);
    if estyle {
        let e = if upper { 'E' } else { 'e' };
        let es = if exponent < 0 { '-' } else { '+' };
        body.push_str(&format!("{e}{es}{:02}", exponent.unsigned_abs()));
    }
    Some(pad(sign, &body, c, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numparse::DNAN;

    /// A conversion from its C spelling (`%[flag][width][.precision]conv`).
    fn spec(fmt: &str) -> Conversion {
        let s = fmt.strip_prefix('%').expect("starts with %");
        let (flag, s) = match s.chars().next() {
            Some(f @ ('-' | '+' | ' ' | '0' | '#')) => (Some(f), &s[1..]),
            _ => (None, s),
        };
        let conv = s.chars().last().expect("conversion");
        let s = &s[..s.len() - 1];
        let (width, precision) = match s.split_once('.') {
            Some((w, p)) => (w, Some(p.parse().expect("precision"))),
            None => (s, None),
        };
        Conversion {
            flag,
            width: if width.is_empty() { 0 } else { width.parse().expect("width") },
            precision,
            conv,
        }
    }

    // Every expected string below is what glibc 2.36's snprintf and
    // rrdtool 1.7.2's librrd `rrd_snprintf` printed for the same format and
    // the same bits.
    const CASES: &[(&str, f64, &str, &str)] = &[
        // (format, value, glibc, rrd_snprintf)
        ("%.10e", 20.111111111111, "2.0111111111e+01", "2.0111111111e+01"),
        ("%.10e", 0.0, "0.0000000000e+00", "0.0000000000e+00"),
        ("%.10e", -0.0, "-0.0000000000e+00", "0.0000000000e+00"),
        ("%.10e", 1e-300, "1.0000000000e-300", "1.0000000000e-300"),
        ("%.10e", -1.5e100, "-1.5000000000e+100", "-1.5000000000e+100"),
        // An exact tie: to even in glibc, up in rrd_snprintf.
        ("%.10e", 100000000005.0, "1.0000000000e+11", "1.0000000001e+11"),
        ("%.10e", 100000000015.0, "1.0000000002e+11", "1.0000000002e+11"),
        ("%.2e", 1.125, "1.12e+00", "1.13e+00"),
        ("%.10e", 9.99999999999, "1.0000000000e+01", "1.0000000000e+01"),
        // The daemon's FETCH precision; rrd_snprintf's powers of ten are
        // rounded doubles.
        ("%.17e", 0.1, "1.00000000000000006e-01", "1.00000000000000000e-01"),
        // Subnormals: rrd_snprintf's exponent stops at -308.
        ("%.10e", 5e-324, "4.9406564584e-324", "0.0000000000e-308"),
        ("%e", 5e-324, "4.940656e-324", "0.000000e-308"),
        ("%g", 5e-324, "4.94066e-324", "0e-308"),
        ("%.3e", 1e-320, "1.000e-320", "0.000e-308"),
        ("%.10e", 2.2250738585072014e-308, "2.2250738585e-308", "2.2250738585e-308"),
        ("%e", f64::MAX, "1.797693e+308", "1.797693e+308"),
        ("%.0f", 2.5, "2", "3"),
        ("%.0f", 0.5, "0", "1"),
        ("%.0f", 1.5, "2", "2"),
        ("%+.0f", -2.5, "-2", "-3"),
        ("%.1f", 0.25, "0.2", "0.3"),
        ("% .1f", -1.25, "-1.2", "-1.3"),
        ("%.0e", 9.5, "1e+01", "1e+01"),
        ("%.0e", 0.5, "5e-01", "5e-01"),
        // At most 19 fractional digits in rrd_snprintf.
        ("%.20f", 0.1, "0.10000000000000000555", "0.1000000000000000000"),
        ("%.20e", 1.0, "1.00000000000000000000e+00", "1.0000000000000000000e+00"),
        ("%.19f", 1.0 / 3.0, "0.3333333333333333148", "0.3333333333333332992"),
        ("%.3f", 1e19, "10000000000000000000.000", "10000000000000000000.000"),
        ("%f", 1.8e19, "18000000000000000000.000000", "18000000000000000000.000000"),
        ("%g", 0.0001, "0.0001", "0.0001"),
        ("%g", 1e-5, "1e-05", "1e-05"),
        ("%g", 100000.0, "100000", "100000"),
        ("%g", 1e6, "1e+06", "1e+06"),
        ("%g", 123456789.0, "1.23457e+08", "1.23457e+08"),
        ("%G", 1e-10, "1E-10", "1E-10"),
        ("%.2E", 0.000123, "1.23E-04", "1.23E-04"),
        ("%.2g", 99.5, "1e+02", "100"),
        // glibc keeps the %f form's zero fraction digits when rounding
        // carries to 10^P (rrd_snprintf has its own way).
        ("%#.2g", 99.5, "1.e+02", "100."),
        ("%#.3g", 999.5, "1.e+03", "1000."),
        ("%#.2G", 99.96, "1.E+02", "1.0E+02"),
        ("%#.2g", 9.96, "10.", "10."),
        ("%#.3g", 99.96, "100.", "100."),
        ("%#g", 1.0, "1.00000", "1.00000"),
        ("%#.3g", 100.0, "100.", "100."),
        ("%#.1g", 0.0, "0.", "0."),
        ("%+.3e", 0.0, "+0.000e+00", "+0.000e+00"),
        ("% f", -0.0, "-0.000000", " 0.000000"),
        ("%010.2f", -3.25159, "-000003.25", "-000003.25"),
        ("%-10.1e", 12345.0, "1.2e+04   ", "1.2e+04   "),
        ("%+12.4G", 1234.5, "       +1234", "       +1235"),
        ("%08f", f64::INFINITY, "     inf", "     inf"),
        ("%f", f64::NAN, "nan", "nan"),
    ];

    #[test]
    fn printf_is_glibcs() {
        for &(fmt, v, glibc, _) in CASES {
            assert_eq!(printf(v, spec(fmt)), glibc, "{fmt} {v:e}");
        }
        // rrdtool's unknown is a negative NaN; glibc prints its sign.
        assert_eq!(printf(DNAN, spec("%f")), "-nan");
        assert_eq!(printf(DNAN, spec("%5.2E")), " -NAN");
        assert_eq!(printf(f64::NEG_INFINITY, spec("%-6f")), "-inf  ");
    }

    /// Against the C library itself: random bits, decimals and binary
    /// ties, every conversion, flag and precision up to 20.
    #[test]
    fn printf_is_the_c_librarys() {
        let mut rng = rrd_testkit::Rng::new(0x00cf_02a7);
        let mut values =
            vec![0.0, -0.0, 0.5, 2.5, 99.5, 999.5, 5e-324, f64::MAX, f64::NAN, DNAN, f64::INFINITY];
        for _ in 0..150 {
            values.push(f64::from_bits(rng.next_u64()));
            values.push(rng.range(-1_000_000, 1_000_000) as f64 * 10f64.powi(rng.range(-25, 25) as i32));
            // Multiples of 1/16: exact ties at small precisions.
            values.push(rng.range(-100_000, 100_000) as f64 / 16.0);
        }
        let mut checked = 0;
        for conv in ['e', 'E', 'f', 'F', 'g', 'G'] {
            for flag in [None, Some('-'), Some('+'), Some(' '), Some('0'), Some('#')] {
                for precision in (0..=20).map(Some).chain([None]) {
                    let width = rng.index(3) * 7;
                    let c = Conversion { flag, width, precision, conv };
                    for &v in &values {
                        let want = rrd_sys::clib::snprintf_double(flag, width, precision, conv, v);
                        assert_eq!(printf(v, c), want, "{c:?} {v:e} ({:#x})", v.to_bits());
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 300_000);
    }

    #[test]
    fn rrd_snprintf_is_rrdtools() {
        for &(fmt, v, _, rrd) in CASES {
            assert_eq!(rrd_snprintf(v, spec(fmt)).as_deref(), Some(rrd), "{fmt} {v:e}");
        }
        assert_eq!(rrd_snprintf(DNAN, spec("%f")).as_deref(), Some("nan"));
        assert_eq!(rrd_snprintf(f64::NEG_INFINITY, spec("%e")).as_deref(), Some("-inf"));
        // rrdtool printed nothing more once the integer part passed 64 bits.
        assert_eq!(rrd_snprintf(1e20, spec("%f")), None);
        assert_eq!(rrd_snprintf(-1.9e19, spec("%.2f")), None);
    }

    #[test]
    fn e_forms_are_the_conversions() {
        // fetch, info (printf_e10), the daemon's FETCH (printf_e, 17),
        // xport and dump (rrd_snprintf_e, 10).
        assert_eq!(printf_e10(20.111111111111), "2.0111111111e+01");
        assert_eq!(printf_e10(DNAN), "-nan");
        assert_eq!(printf_e(0.1, 17), "1.00000000000000006e-01");
        assert_eq!(rrd_snprintf_e(-0.0, 10), "0.0000000000e+00");
        // A subnormal rrdtool 1.7.2's dump printed.
        assert_eq!(rrd_snprintf_e(f64::from_bits(1_600_000_000), 10), "0.0000007905e-308");
    }
}
