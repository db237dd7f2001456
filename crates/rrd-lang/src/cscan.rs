//! C's `sscanf` conversions as rrdtool's option parsing calls them
//! (`tune`'s `DS:` edits and thresholds, `graph`'s `--x-grid`), so that
//! text rrdtool half-accepts is half-accepted here too: a conversion takes
//! the longest prefix it can and leaves the rest, a `%N[set]` stops after
//! `N` bytes, `%ld` saturates as `strtol` does and `%u` wraps a negative
//! number into `unsigned int` as glibc does.
//!
//! Free functions convert one field at the start of a string and return
//! what follows; [`Scan`] walks one format over a string, field by field.

use crate::numparse::{self, NumberError};

/// `%N[set]`: one to `max` bytes of the set at the start of `s`, and what
/// follows.
pub fn set(s: &str, max: usize, ok: impl Fn(u8) -> bool) -> Option<(&str, &str)> {
    let n = s.bytes().take(max).take_while(|c| ok(*c)).count();
    (n > 0).then(|| s.split_at(n))
}

/// The bytes of a DS name (`DS_NAM_FMT`'s set: `a-zA-Z0-9_-`).
pub fn is_ds_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// `%19[a-zA-Z0-9_-]`: a DS name at the start of `s`, and what follows.
pub fn ds_name(s: &str) -> Option<(&str, &str)> {
    set(s, 19, is_ds_name_byte)
}

/// `%19[A-Z]`: a CF or DS type name, and what follows.
pub fn upper(s: &str) -> Option<(&str, &str)> {
    set(s, 19, |c| c.is_ascii_uppercase())
}

/// `%40[U0-9.e+-]`: the characters of a number or `U`.
pub fn number_chars(s: &str) -> Option<&str> {
    set(s, 40, |c| matches!(c, b'U' | b'0'..=b'9' | b'.' | b'e' | b'+' | b'-')).map(|(n, _)| n)
}

/// `DS_NAM_FMT ":"`: a DS name, a colon, and what follows the colon.
pub fn name_colon(s: &str) -> Option<(&str, &str)> {
    let (name, rest) = ds_name(s)?;
    Some((name, rest.strip_prefix(':')?))
}

/// `%ld` after white space: sign and digits, clamped like `strtol`; the
/// value and what follows.
pub fn long(s: &str) -> Option<(i64, &str)> {
    let t = numparse::trim_c_space(s);
    if t.starts_with(['+', '-']) && !t[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let long = numparse::strtol(t, 10);
    (long.consumed > 0).then(|| (long.value, &t[long.consumed..]))
}

/// `%u` as glibc's scanf reads it: white space, a sign, decimal digits,
/// stored as `unsigned int`; the value and what follows.
pub fn unsigned(s: &str) -> Option<(u32, &str)> {
    let t = numparse::trim_c_space(s);
    let b = t.as_bytes();
    let mut p = usize::from(t.starts_with(['+', '-']));
    let start = p;
    while p < b.len() && b[p].is_ascii_digit() {
        p += 1;
    }
    if p == start {
        return None;
    }
    let magnitude = t[start..p].parse::<u64>().unwrap_or(u64::MAX);
    let v = if t.starts_with('-') { magnitude.wrapping_neg() } else { magnitude };
    Some((v as u32, &t[p..]))
}

/// glibc `sscanf("%lf")` on a prefix: the longest leading run that parses
/// as a double (after white space). Hexadecimal floats are not recognised.
pub fn double(s: &str) -> Option<f64> {
    let t = numparse::trim_c_space(s);
    let end = t
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .take_while(|&i| i <= 64)
        .filter(|&i| t[..i].parse::<f64>().is_ok())
        .last()?;
    t[..end].parse().ok()
}

/// rrdtool's `rrd_strtodbl` status (2: the whole string is a number or a
/// special like `nan`; 1: a number followed by junk; 0: no number) and the
/// value it leaves behind in each case.
pub fn strtodbl(s: &str) -> (u32, f64) {
    match numparse::parse_double(s) {
        Ok(v) => (2, v),
        Err(NumberError::Trailing { value, .. }) => (1, value),
        Err(NumberError::NotANumber(_)) => (0, numparse::rrd_strtod(s).0),
    }
}

/// One format walked over a string, field by field.
#[derive(Debug, Clone)]
pub struct Scan<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Scan<'a> {
    pub fn new(s: &'a str) -> Scan<'a> {
        Scan { s, pos: 0 }
    }

    /// How many bytes the conversions took so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// What no conversion took yet.
    pub fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn advance_to(&mut self, rest: &'a str) {
        self.pos = self.s.len() - rest.len();
    }

    /// `%N[set]`: one to `max` bytes of the set.
    pub fn set(&mut self, max: usize, ok: impl Fn(u8) -> bool) -> Option<&'a str> {
        let (field, rest) = set(self.rest(), max, ok)?;
        self.advance_to(rest);
        Some(field)
    }

    /// A literal character.
    pub fn lit(&mut self, c: char) -> bool {
        match self.rest().strip_prefix(c) {
            Some(rest) => {
                self.advance_to(rest);
                true
            }
            None => false,
        }
    }

    /// `%ld`: optional white space and sign, then digits.
    pub fn long(&mut self) -> Option<i64> {
        let (v, rest) = long(self.rest())?;
        self.advance_to(rest);
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_take_prefixes_as_glibc() {
        assert_eq!(long("99999999999999999999"), Some((i64::MAX, "")));
        assert_eq!(long(" -5x"), Some((-5, "x")));
        assert_eq!(long("- 5"), None);
        assert_eq!(unsigned("-1"), Some((u32::MAX, "")));
        assert_eq!(unsigned(" 7:9"), Some((7, ":9")));
        assert_eq!(ds_name("a_b-1:x"), Some(("a_b-1", ":x")));
        assert_eq!(ds_name(&"n".repeat(25)).map(|(n, _)| n.len()), Some(19));
        assert_eq!(name_colon("ds:12"), Some(("ds", "12")));
        assert_eq!(name_colon("ds 12"), None);
        assert_eq!(upper("GAUGEx"), Some(("GAUGE", "x")));
        assert_eq!(number_chars("1e+5:U"), Some("1e+5"));
        assert_eq!(double(" 0.5xyz"), Some(0.5));
        assert_eq!(double("x"), None);
        assert_eq!(strtodbl("0.5"), (2, 0.5));
        assert_eq!(strtodbl("0.5x").0, 1);
        assert_eq!(strtodbl("x").0, 0);
    }

    #[test]
    fn a_scan_walks_fields_and_literals() {
        let mut sc = Scan::new("MINUTE:10:x");
        assert_eq!(sc.set(10, |c| c.is_ascii_uppercase()), Some("MINUTE"));
        assert!(sc.lit(':'));
        assert_eq!(sc.long(), Some(10));
        assert!(!sc.lit(';'));
        assert!(sc.lit(':'));
        assert_eq!(sc.rest(), "x");
        assert_eq!(sc.long(), None);
        assert_eq!(sc.rest(), "x");
    }
}
