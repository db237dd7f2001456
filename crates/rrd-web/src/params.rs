//! Reading untrusted request input: query and form parameters, names,
//! GrowthForecast's INT and colour rules, and the date forms GF accepts
//! (via Perl's `HTTP::Date::str2time`) for `datetime`, `from` and `to`.
//!
//! Invariants: nothing here panics on any input; names that could be a
//! path (`/`, `\`, `..`, NUL, control characters) never validate.
//! Deliberately not here: what a route does with a refused value (each
//! route builds GF's `{"error":1,"messages":{...}}` itself).

use std::collections::HashMap;

use serde_json::{json, Value};

/// Query parameters, then form-body parameters; the body wins (GF's
/// request object reads both and the body is parsed last).
pub fn params(query: Option<&str>, body: &[u8]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let q: Vec<(String, String)> = query.and_then(|q| serde_urlencoded::from_str(q).ok()).unwrap_or_default();
    let b: Vec<(String, String)> = serde_urlencoded::from_bytes(body).unwrap_or_default();
    out.extend(q);
    out.extend(b);
    out
}

/// Refuses names that could be a path or confuse a file system or a log.
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s != "."
        && !s.contains("..")
        && !s.chars().any(|c| c == '/' || c == '\\' || c.is_control())
}

/// `Err` holds the `messages` object of a 400 answer.
pub fn check_names(service: &str, section: &str, graph: &str) -> Result<(), Value> {
    let mut bad = serde_json::Map::new();
    for (key, v) in [("service_name", service), ("section_name", section), ("graph_name", graph)] {
        if !valid_name(v) {
            bad.insert(key.into(), json!(format!("{key} is not a valid name")));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(Value::Object(bad))
    }
}

/// GrowthForecast's INT rule: optional sign, then digits.
pub fn parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// GF's NATURAL rule: digits only, at least 1.
pub fn parse_natural(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|v| *v >= 1)
}

/// `YYYY-MM-DD[ HH:MM[:SS]]`, `/` or `-` between date fields, ` ` or `T`
/// before the time, an optional trailing `Z`; read as UTC (GF reads its
/// server's local time; rrdscale's server clock is UTC by decision).
pub fn parse_datetime(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches('Z');
    let (date, time) = s.split_once([' ', 'T']).unwrap_or((s, "00:00:00"));
    let d: Vec<&str> = date.split(['-', '/']).collect();
    let t: Vec<&str> = time.trim().split(':').collect();
    if d.len() != 3 || !(2..=3).contains(&t.len()) {
        return None;
    }
    let num = |x: &str| parse_int(x).filter(|v| *v >= 0);
    let (y, mo, da) = (num(d[0])?, num(d[1])?, num(d[2])?);
    let (h, mi, se) = (num(t[0])?, num(t[1])?, t.get(2).map_or(Some(0), |x| num(x))?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || se > 60 || y > 9999 {
        return None;
    }
    Some(crate::store::days_from_civil(y, mo as u32, da as u32) * 86_400 + h * 3600 + mi * 60 + se)
}

/// A `from`/`to` value: epoch seconds (as GF's vrule API takes them) or
/// a date in the forms of [`parse_datetime`].
pub fn parse_time(s: &str) -> Option<i64> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok().filter(|v| *v > 0);
    }
    parse_datetime(s)
}

/// `#RRGGBB`, the form GF's edit form accepts.
pub fn valid_color(s: &str) -> bool {
    s.len() == 7 && s.starts_with('#') && s[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// `RRGGBB` or `RRGGBBAA` without `#` (GF's background/canvas/... colours).
pub fn valid_bare_color(s: &str) -> bool {
    (s.len() == 6 || s.len() == 8) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_be_paths_are_refused() {
        for bad in ["", ".", "..", "a/b", "..x", "a\0b", "a\\b", "x\n"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        assert!(valid_name("web-01.example"));
    }

    #[test]
    fn ints_and_datetimes_parse_strictly() {
        assert_eq!(parse_int("-12"), Some(-12));
        assert_eq!(parse_int("1.5"), None);
        assert_eq!(parse_int("+"), None);
        assert_eq!(parse_natural("0"), None);
        assert_eq!(parse_natural("-3"), None);
        assert_eq!(parse_natural("7"), Some(7));
        assert_eq!(parse_datetime("2023-11-14 22:13:20"), Some(1_700_000_000));
        assert_eq!(parse_datetime("2023/11/14 22:13:20"), Some(1_700_000_000));
        assert_eq!(parse_datetime("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(parse_datetime("2023-13-14 22:13:20"), None);
        assert_eq!(parse_time("1700000000"), Some(1_700_000_000));
        assert_eq!(parse_time("2023-11-14"), Some(1_699_920_000));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn colors() {
        assert!(valid_color("#00ff00"));
        assert!(!valid_color("00ff00"));
        assert!(!valid_color("#00ff0"));
        assert!(valid_bare_color("f3f3f3"));
        assert!(valid_bare_color("f3f3f380"));
        assert!(!valid_bare_color("#f3f3f3"));
    }
}
