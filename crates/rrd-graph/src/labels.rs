//! Formats the graph options bring in, checked against RRDtool 1.7.2's
//! whitelists and formatted by our own code (never a C `printf`):
//! `--imginfo` (`...%s...%lu...%lu...`), `--left-axis-format` and
//! `--right-axis-format` (one double conversion), and the axis
//! formatters `timestamp` (strftime of the value as UTC seconds) and
//! `duration` (RRDtool's `strfduration` of the value as milliseconds).
//! (`--pango-markup` is Pango's own: `render::text`.)

use crate::printf::PrintFormat;

/// `--imginfo`'s whitelist, as RRDtool prints it.
pub(crate) const IMGINFO_PATTERN: &str = "^(?:[^%]+|%%)*%s(?:[^%]+|%%)*%lu(?:[^%]+|%%)*%lu(?:[^%]+|%%)*$";

/// The axis formats' whitelist, as RRDtool prints it.
pub(crate) const AXIS_PATTERN: &str = "^(?:[^%]+|%%)*%[-+ 0#]?[0-9]*(?:[.][0-9]+)?l[eEfFgG](?:[^%]+|%%)*$";

/// `--imginfo FORMAT` with the file name and the image size, or `None`
/// when the format does not match RRDtool's whitelist.
pub(crate) fn imginfo(fmt: &str, file: &str, width: i64, height: i64) -> Option<String> {
    let mut out = String::new();
    let mut rest = fmt;
    let mut expect = ["%s", "%lu", "%lu"].into_iter();
    let mut values = [file.to_string(), width.to_string(), height.to_string()].into_iter();
    let mut next = expect.next();
    loop {
        match rest.find('%') {
            None => {
                out.push_str(rest);
                return next.is_none().then_some(out);
            }
            Some(i) => {
                out.push_str(&rest[..i]);
                rest = &rest[i..];
                if let Some(r) = rest.strip_prefix("%%") {
                    out.push('%');
                    rest = r;
                } else if let Some(conv) = next.filter(|c| rest.starts_with(c)) {
                    out.push_str(&values.next().unwrap_or_default());
                    rest = &rest[conv.len()..];
                    next = expect.next();
                } else {
                    return None;
                }
            }
        }
    }
}

/// A checked `--left-axis-format`/`--right-axis-format`.
pub(crate) fn axis_format(fmt: &str) -> Option<PrintFormat> {
    PrintFormat::parse(fmt).ok().filter(|f| !f.has_symbol)
}

/// The `timestamp` formatter: `fmt` (default `%Y-%m-%d %H:%M:%S`) of the
/// value as seconds since the epoch in UTC; `%f` of the value when it is
/// not a whole number of seconds.
pub(crate) fn timestamp_label(value: f64, fmt: &str) -> String {
    let fmt = if fmt.is_empty() { "%Y-%m-%d %H:%M:%S" } else { fmt };
    if !(value >= i64::MIN as f64 && value <= i64::MAX as f64) || value.trunc() != value {
        return format!("{value:.6}");
    }
    let Some(tm) = rrd_lang::ctime::gmtime(value as i64) else { return String::new() };
    let Ok(cfmt) = std::ffi::CString::new(fmt) else { return String::new() };
    String::from_utf8_lossy(&rrd_lang::ctime::strftime(&cfmt, &tm, 100)).into_owned()
}

/// The `duration` formatter: RRDtool's `strfduration` of `ms`
/// milliseconds with `fmt` (default `%H:%02m:%02s`); empty when the
/// format is not one it knows.
pub(crate) fn duration_label(ms: f64, fmt: &str) -> String {
    crate::timefmt::strfduration(fmt, ms).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imginfo_fills_name_and_size() {
        assert_eq!(
            imginfo("<IMG SRC=\"/img/%s\" WIDTH=\"%lu\" HEIGHT=\"%lu\">", "a.png", 481, 155).as_deref(),
            Some("<IMG SRC=\"/img/a.png\" WIDTH=\"481\" HEIGHT=\"155\">")
        );
        assert_eq!(imginfo("%s %lu%%%lu", "x", 1, 2).as_deref(), Some("x 1%2"));
        assert_eq!(imginfo("%s %lu", "x", 1, 2), None);
        assert_eq!(imginfo("%d %lu %lu", "x", 1, 2), None);
        assert_eq!(imginfo("%s %lu %lu %s", "x", 1, 2), None);
    }

    #[test]
    fn axis_formats_are_one_double() {
        assert!(axis_format("%5.1lf").is_some());
        assert!(axis_format("%lf %%").is_some());
        assert!(axis_format("%lf %s").is_none());
        assert!(axis_format("%d").is_none());
    }

    #[test]
    fn durations_follow_strfduration() {
        assert_eq!(duration_label(3_723_000.0, ""), "1:02:03");
        assert_eq!(duration_label(90_000.0, "%M min"), "1 min");
        assert_eq!(duration_label(-1500.0, "%.1S s"), "-1.5 s");
        assert_eq!(duration_label(1.0, "%q"), "");
    }

    #[test]
    fn timestamps_are_utc() {
        assert_eq!(timestamp_label(1_700_000_000.0, ""), "2023-11-14 22:13:20");
        assert_eq!(timestamp_label(0.5, ""), "0.500000");
    }
}
