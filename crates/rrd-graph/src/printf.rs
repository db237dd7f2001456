//! PRINT/GPRINT formats: RRDtool 1.7.2's whitelist and a formatter of our
//! own, so a user's format string never reaches a real `printf`.
//!
//! A format is accepted when it matches RRDtool's pattern
//! `^(?:[^%]+|%%)*%[-+ 0#]?[0-9]*(?:[.][0-9]+)?l[eEfFgG](?:[^%]+|%%)*(?:%[sS])?(?:[^%]+|%%)*$`:
//! exactly one double conversion (one optional flag, width, precision),
//! then at most one `%s`/`%S` for the SI prefix, and `%%` anywhere. The
//! output is what glibc's `snprintf` prints for it, `-nan` for RRDtool's
//! unknown value included (the number itself printed by
//! `rrd_lang::cformat`, the one copy of C's number printing).
//!
//! Also here: RRDtool's `auto_scale` (value to SI prefix).

use crate::error::{GraphError, Result};
use rrd_lang::cformat;

/// The whitelist, as RRDtool prints it in its error message.
const PRINT_PATTERN: &str =
    "^(?:[^%]+|%%)*%[-+ 0#]?[0-9]*(?:[.][0-9]+)?l[eEfFgG](?:[^%]+|%%)*(?:%[sS])?(?:[^%]+|%%)*$";

/// One piece of an accepted format.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Text(String),
    Number(Conversion),
    /// `%s` (or `%S`, which RRDtool turns into `%s` after scaling).
    Symbol,
}

/// A `%[flag][width][.precision]l<conv>` conversion (rrd-lang's: one copy
/// of C's number printing).
pub use rrd_lang::cformat::Conversion;

/// A checked PRINT/GPRINT format.
#[derive(Clone, Debug, PartialEq)]
pub struct PrintFormat {
    pieces: Vec<Piece>,
    /// `%S`: scale with the prefix shared by all `%S` formats of a graph.
    pub shared_scale: bool,
    /// `%s` or `%S` present.
    pub has_symbol: bool,
}

fn invalid(fmt: &str) -> GraphError {
    GraphError::invalid(format!("invalid format string '{fmt}' (should match '{PRINT_PATTERN}')"))
}

/// Reads text and `%%` up to a `%` that starts a conversion.
fn literal(b: &[u8], i: &mut usize, out: &mut String, src: &str) {
    let start = *i;
    while *i < b.len() {
        if b[*i] == b'%' {
            if b.get(*i + 1) == Some(&b'%') {
                out.push_str(&src[start..*i]);
                out.push('%');
                *i += 2;
                return literal(b, i, out, src);
            }
            break;
        }
        *i += 1;
    }
    out.push_str(&src[start..*i]);
}

impl PrintFormat {
    /// Checks `fmt` against RRDtool's whitelist.
    pub fn parse(fmt: &str) -> Result<PrintFormat> {
        let b = fmt.as_bytes();
        let mut i = 0;
        let mut pieces = Vec::new();
        let mut text = String::new();
        literal(b, &mut i, &mut text, fmt);
        pieces.push(Piece::Text(std::mem::take(&mut text)));
        // The one double conversion.
        if b.get(i) != Some(&b'%') {
            return Err(invalid(fmt));
        }
        i += 1;
        let flag = match b.get(i) {
            Some(&c @ (b'-' | b'+' | b' ' | b'0' | b'#')) => {
                i += 1;
                Some(c as char)
            }
            _ => None,
        };
        let digits = |i: &mut usize| {
            let s = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            &fmt[s..*i]
        };
        let width_text = digits(&mut i);
        let mut precision = None;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let p = digits(&mut i);
            if p.is_empty() {
                return Err(invalid(fmt));
            }
            precision = Some(p.parse::<usize>().map_err(|_| invalid(fmt))?);
        }
        if b.get(i) != Some(&b'l') {
            return Err(invalid(fmt));
        }
        i += 1;
        let conv = match b.get(i) {
            Some(&c @ (b'e' | b'E' | b'f' | b'F' | b'g' | b'G')) => c as char,
            _ => return Err(invalid(fmt)),
        };
        i += 1;
        let width = if width_text.is_empty() { 0 } else { width_text.parse().map_err(|_| invalid(fmt))? };
        // Absurd widths would only allocate; glibc refuses them too.
        if width > 4096 || precision.is_some_and(|p| p > 4096) {
            return Err(invalid(fmt));
        }
        pieces.push(Piece::Number(Conversion { flag, width, precision, conv }));
        literal(b, &mut i, &mut text, fmt);
        pieces.push(Piece::Text(std::mem::take(&mut text)));
        let mut shared_scale = false;
        let mut has_symbol = false;
        if b.get(i) == Some(&b'%') && matches!(b.get(i + 1), Some(b's' | b'S')) {
            shared_scale = b[i + 1] == b'S';
            has_symbol = true;
            i += 2;
            pieces.push(Piece::Symbol);
            literal(b, &mut i, &mut text, fmt);
            pieces.push(Piece::Text(text));
        }
        if i != b.len() {
            return Err(invalid(fmt));
        }
        Ok(PrintFormat { pieces, shared_scale, has_symbol })
    }

    /// The formatted text, with `symbol` for `%s`/`%S`.
    pub fn format(&self, value: f64, symbol: &str) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Number(c) => out.push_str(&cformat::printf(value, *c)),
                Piece::Symbol => out.push_str(symbol),
            }
        }
        out
    }

    /// The text RRDtool's own portable printf (`rrd_snprintf`, which its
    /// xport meta lists use) makes of it: the number through
    /// [`cformat::rrd_snprintf`]. A value too large for its integer conversion
    /// ends the text there, as that printf gives up.
    pub fn format_rrd(&self, value: f64, symbol: &str) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Number(c) => match cformat::rrd_snprintf(value, *c) {
                    Some(t) => out.push_str(&t),
                    None => return out,
                },
                Piece::Symbol => out.push_str(symbol),
            }
        }
        out
    }
}

/// C's `(int)` conversion of a double on x86_64 (INT_MIN when out of range).
pub(crate) use rrd_lang::numparse::c_int;

/// RRDtool's `auto_scale`: the value divided by its SI magnitude, the
/// prefix ("?" beyond Exa/atto) and the magnitude factor.
pub fn auto_scale(value: f64, base: f64) -> (f64, &'static str, f64) {
    const SYMBOLS: [&str; 13] = ["a", "f", "p", "n", "u", "m", " ", "k", "M", "G", "T", "P", "E"];
    let (index, magfact) = if value == 0.0 || value.is_nan() {
        (0, 1.0)
    } else {
        let index = c_int((value.abs().ln() / base.ln()).floor());
        (index, base.powf(f64::from(index)))
    };
    let scaled = if value == 0.0 || value.is_nan() { value } else { value / magfact };
    let symbol = if (-6..=6).contains(&index) { SYMBOLS[(index + 6) as usize] } else { "?" };
    (scaled, symbol, magfact)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, v: f64) -> String {
        PrintFormat::parse(fmt).unwrap().format(v, "k")
    }

    #[test]
    fn whitelist_is_rrdtools() {
        for ok in [
            "%lf",
            "%6.2lf %s",
            "%5.1lf%S",
            "%le",
            "%lg",
            "%+8.3le",
            "%#lf",
            "%08.2lf",
            "%lF",
            "%lE",
            "%lG",
            "%5.2lf %S%%",
            "% 5lf",
            "%-5lf",
            "x%%y %lf z",
            "%%%lf%%",
        ] {
            assert!(PrintFormat::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "%%",
            "%d",
            "%lf %lf",
            "%e",
            "%s",
            "%s %lf",
            "%lf%s%s",
            "%.lf",
            "%5.lf",
            "abc",
            "%lf%",
            "%c %lf",
            "%lf %x",
            "%--5lf",
            "%n%lf",
            "%99999lf",
            "%.99999lf",
        ] {
            let e = PrintFormat::parse(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("invalid format string '{bad}' (should match '^(?:")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn output_is_glibcs() {
        // Expected strings are what rrdtool 1.7.2 printed for 89.98868.
        let v = 89.988680;
        assert_eq!(f("%lf", v), "89.988680");
        assert_eq!(f("%6.2lf %s", v), " 89.99 k");
        assert_eq!(f("%le", v), "8.998868e+01");
        assert_eq!(f("%lg", v), "89.9887");
        assert_eq!(f("%+8.3le", v), "+8.999e+01");
        assert_eq!(f("%08.2lf", v), "00089.99");
        assert_eq!(f("%lE", v), "8.998868E+01");
        assert_eq!(f("% 5lf", v), " 89.988680");
        assert_eq!(f("%10.3lf%%", 46.832661), "    46.833%");
        assert_eq!(f("%lg", 4692632.6645), "4.69263e+06");
        assert_eq!(f("%lg", 0.0001), "0.0001");
        assert_eq!(f("%lg", 0.00001), "1e-05");
        assert_eq!(f("%#lg", 1.0), "1.00000");
        assert_eq!(f("%.0lf", 2.5), "2");
        assert_eq!(f("%#.0lf", 2.0), "2.");
        assert_eq!(f("%-8.1lf|", -3.25), "-3.2    |");
        // rrdtool's unknown is a negative NaN.
        assert_eq!(f("%lf", -f64::NAN), "-nan");
        assert_eq!(f("%5.2lf|", -f64::NAN), " -nan|");
        assert_eq!(f("%lE", -f64::NAN), "-NAN");
        assert_eq!(f("%05lf", f64::INFINITY), "  inf");
        assert_eq!(f("%lf", f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn rrd_snprintf_rounds_ties_up_and_drops_nan_signs() {
        let rrd = |fmt: &str, v: f64| PrintFormat::parse(fmt).unwrap().format_rrd(v, "");
        // 12.25 is exact: glibc rounds the tie to even, rrd_snprintf up.
        assert_eq!(f("%.1lf", 12.25), "12.2");
        assert_eq!(rrd("%.1lf", 12.25), "12.3");
        assert_eq!(rrd("%.0lf", 2.5), "3");
        assert_eq!(rrd("%lf", -f64::NAN), "nan");
        assert_eq!(rrd("%+lf", f64::NAN), "+nan");
        assert_eq!(rrd("%lf", -0.0), "0.000000");
        assert_eq!(rrd("%8.2lf", -3.25159), "   -3.25");
        assert_eq!(rrd("%08.2lf", -3.25159), "-0003.25");
        assert_eq!(rrd("%-8.1lfx", 2.0), "2.0     x");
        assert_eq!(rrd("%le", 12345.678), "1.234568e+04");
        assert_eq!(rrd("%.2lE", 0.000123), "1.23E-04");
        assert_eq!(rrd("%lg", 0.0001), "0.0001");
        assert_eq!(rrd("%lg", 123456789.0), "1.23457e+08");
        assert_eq!(rrd("%#.3lg", 1.0), "1.00");
        assert_eq!(rrd("%lg", 100.0), "100");
        assert_eq!(f("%#.3lg", 100.0), "100.");
        assert_eq!(f("%#.1lg", 0.0), "0.");
        assert_eq!(rrd("%5.1lf", f64::INFINITY), "  inf");
        // Too large for its 64-bit integer part: the text stops there.
        assert_eq!(rrd("v=%lf!", 1e20), "v=");
    }

    #[test]
    fn auto_scale_picks_si_prefixes() {
        assert_eq!(auto_scale(46_832_661.0, 1000.0).1, "M");
        assert!((auto_scale(46_832_661.0, 1000.0).0 - 46.832661).abs() < 1e-9);
        assert_eq!(auto_scale(0.0, 1000.0), (0.0, " ", 1.0));
        assert_eq!(auto_scale(0.005, 1000.0).1, "m");
        assert_eq!(auto_scale(2048.0, 1024.0), (2.0, "k", 1024.0));
        let (v, s, m) = auto_scale(f64::INFINITY, 1000.0);
        assert_eq!((v, s, m), (f64::INFINITY, "?", 0.0));
        assert_eq!(auto_scale(1e30, 1000.0).1, "?");
    }
}
