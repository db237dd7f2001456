//! The time and duration texts of PRINT/GPRINT as RRDtool 1.7.2 writes
//! them: `:strftime` (a VDEF's time, local, through the C library's
//! `strftime`; RRDtool's `time_clean` dashes when the VDEF has no time),
//! `:valstrftime` (the value as seconds since the epoch, UTC) and
//! `:valstrfduration` (the value as milliseconds, RRDtool's own duration
//! format: `%W %d %D %h %H %m %M %s %S %f`, each with optional `0`,
//! width and precision).
//!
//! `strftime` only ever receives a checked, NUL-free format and a buffer
//! of RRDtool's size; it takes no variadic arguments, so a user's format
//! cannot read memory it should not.

use crate::error::{GraphError, Result};
use rrd_lang::cformat::{printf, Conversion};

/// RRDtool's `FMT_LEG_LEN`: the buffer every PRINT/GPRINT text is made in.
const FMT_LEG_LEN: usize = 200;

use rrd_lang::ctime;

/// `valstrftime`'s format when none is given.
const DEFAULT_TIMESTAMP_FMT: &str = "%Y-%m-%d %H:%M:%S";
/// `valstrfduration`'s format when none is given.
const DEFAULT_DURATION_FMT: &str = "%H:%02m:%02s";

fn tm_of(t: i64, local: bool) -> Option<libc::tm> {
    if local {
        ctime::reset_timezone();
        ctime::localtime(t)
    } else {
        ctime::gmtime(t)
    }
}

/// C's `strftime` into RRDtool's buffer: `None` when the result does not
/// fit (or is empty, which C cannot tell apart).
fn c_strftime(fmt: &str, tm: &libc::tm) -> Option<String> {
    c_strftime_in(fmt, tm, FMT_LEG_LEN)
}

/// C's `strftime` into a buffer of `size` bytes.
fn c_strftime_in(fmt: &str, tm: &libc::tm, size: usize) -> Option<String> {
    let fmt = std::ffi::CString::new(fmt.split('\0').next().unwrap_or("")).ok()?;
    let out = ctime::strftime(&fmt, tm, size.max(1));
    (!out.is_empty()).then(|| String::from_utf8_lossy(&out).into_owned())
}

/// The local time `t` through `strftime` in a buffer of `size` bytes
/// (empty when it does not fit), as the data formats print times under an
/// `--x-grid` label format.
pub(crate) fn strftime_local_in(fmt: &str, t: i64, size: usize) -> String {
    tm_of(t, true).and_then(|tm| c_strftime_in(fmt, &tm, size)).unwrap_or_default()
}

/// `:strftime`: the time `when` (a VDEF's; `None` when it has none) in
/// local time; RRDtool's `time_clean` placeholder when there is none.
pub(crate) fn strftime_local(fmt: &str, when: Option<i64>) -> String {
    match when.and_then(|t| tm_of(t, true)) {
        Some(tm) => c_strftime(fmt, &tm).unwrap_or_default(),
        None => time_clean(fmt),
    }
}

/// `:valstrftime`: the value (truncated to whole seconds, as RRDtool's
/// `timestamp_to_tm` does) as a UTC time stamp, or `%.0f` of it when it is
/// not finite. `None`: strftime made nothing (RRDtool fails the graph
/// without a message then).
pub(crate) fn val_strftime(fmt: &str, value: f64) -> Option<String> {
    let in_range = value.is_finite() && value >= i64::MIN as f64 && value <= i64::MAX as f64;
    let tm = if in_range { tm_of(value as i64, false) } else { None };
    let Some(tm) = tm else {
        return Some(printf(value, Conversion { flag: None, width: 0, precision: Some(0), conv: 'f' }));
    };
    c_strftime(if fmt.is_empty() { DEFAULT_TIMESTAMP_FMT } else { fmt }, &tm)
}

/// `:valstrfduration`: the value (milliseconds) as RRDtool's
/// `strfduration` writes it, or `%f` of it when it is not finite.
pub(crate) fn val_strfduration(fmt: &str, value: f64) -> Result<String> {
    if !value.is_finite() {
        return Ok(printf(value, Conversion { flag: None, width: 0, precision: None, conv: 'f' }));
    }
    let mut out = strfduration(fmt, value)?;
    // RRDtool writes into its legend buffer and keeps what fits.
    truncate_bytes(&mut out, FMT_LEG_LEN - 1);
    Ok(out)
}

/// RRDtool's `strfduration`: `value` milliseconds with `fmt` (default
/// `%H:%02m:%02s`), for `:valstrfduration` and the `duration` axis
/// formatter. "Wrong duration format" for a conversion it does not know.
pub(crate) fn strfduration(fmt: &str, value: f64) -> Result<String> {
    let fmt = if fmt.is_empty() { DEFAULT_DURATION_FMT } else { fmt };
    let seconds = value.abs() / 1000.0;
    let minutes = seconds / 60.0;
    let hours = minutes / 60.0;
    let days = hours / 24.0;
    let weeks = days / 7.0;
    let bad = || GraphError::invalid("Wrong duration format");
    let mut out = String::new();
    if value < 0.0 {
        out.push('-');
    }
    let b = fmt.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            let start = i;
            while i < b.len() && b[i] != b'%' {
                i += 1;
            }
            out.push_str(&fmt[start..i]);
            continue;
        }
        i += 1;
        let zpad = b.get(i) == Some(&b'0');
        if zpad {
            i += 1;
        }
        let number = |i: &mut usize| {
            let s = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            fmt[s..*i].parse::<usize>().ok()
        };
        let width = number(&mut i).unwrap_or(0);
        let mut precision = 0;
        if b.get(i) == Some(&b'.') {
            i += 1;
            if let Some(p) = number(&mut i) {
                precision = p;
            }
        }
        if width > 4096 || precision > 300 {
            return Err(bad());
        }
        let v = match b.get(i) {
            Some(b'%') => {
                out.push('%');
                i += 1;
                continue;
            }
            Some(b'W') => weeks,
            Some(b'd') => days - weeks.trunc() * 7.0,
            Some(b'D') => days,
            Some(b'h') => hours - days.trunc() * 24.0,
            Some(b'H') => hours,
            Some(b'm') => minutes - hours.trunc() * 60.0,
            Some(b'M') => minutes,
            Some(b's') => seconds - minutes.trunc() * 60.0,
            Some(b'S') => seconds,
            Some(b'f') => value.abs() - seconds.trunc() * 1000.0,
            _ => return Err(bad()),
        };
        i += 1;
        let scale = 10f64.powi(precision as i32);
        let truncated = (v * scale).trunc() / scale;
        let conv = Conversion { flag: zpad.then_some('0'), width, precision: Some(precision), conv: 'f' };
        out.push_str(&printf(truncated, conv));
    }
    Ok(out)
}

fn truncate_bytes(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}

/// RRDtool's `time_clean`: a strftime format with each conversion replaced
/// by dashes of about its width (for a VDEF without a time).
pub(crate) fn time_clean(fmt: &str) -> String {
    let f = fmt.as_bytes();
    let at = |j: usize| f.get(j).copied().unwrap_or(0);
    let mut out: Vec<u8> = Vec::new();
    let mut j = 0;
    while j < FMT_LEG_LEN - 1 && j < f.len() {
        if f[j] != b'%' {
            out.push(f[j]);
            j += 1;
            continue;
        }
        let next = at(j + 1);
        let (text, skip): (&[u8], usize) = match next {
            b'E' | b'O' => (b"-", 3),
            b'C' | b'd' | b'g' | b'H' | b'I' | b'm' | b'M' | b'S' | b'U' | b'V' | b'W' | b'y' => (b"--", 2),
            b'j' => (b"---", 2),
            b'G' | b'Y' => (b"----", 2),
            b'R' => (b"--:--", 2),
            b'T' => (b"--:--:--", 2),
            b'F' => (b"----------", 2),
            b'D' => (b"--/--/--", 2),
            b'n' => (b"\r\n", 2),
            b't' => (b"\t", 2),
            b'%' => (b"%", 2),
            b' ' => (b"% ", 2),
            b'.' => (b"%.", 2),
            b'@' => (b"%@", 2),
            0 => (b"-", 2),
            _ => (b"-", 2),
        };
        out.extend_from_slice(text);
        j += skip;
    }
    out.truncate(FMT_LEG_LEN - 1);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_rrdtools() {
        // 1 h 2 min 3.5 s.
        let ms = 3_723_500.0;
        assert_eq!(val_strfduration("", ms).unwrap(), "1:02:03");
        assert_eq!(val_strfduration("%H:%02m:%04.1s", ms).unwrap(), "1:02:03.5");
        assert_eq!(val_strfduration("%D days %h h %f ms %%", ms).unwrap(), "0 days 1 h 500 ms %");
        assert_eq!(val_strfduration("%.2M", -ms).unwrap(), "-62.05");
        assert_eq!(val_strfduration("%q", ms).unwrap_err().to_string(), "Wrong duration format");
        assert_eq!(val_strfduration("%H", f64::NAN).unwrap(), "nan");
    }

    #[test]
    fn time_clean_dashes_conversions() {
        assert_eq!(time_clean("Last %Y-%m-%d %H:%M:%S %c %%"), "Last ---------- --:--:-- - %");
        assert_eq!(time_clean("%T %R %F %D %j %Ex"), "--:--:-- --:-- ---------- --/--/-- --- -");
    }

    #[test]
    fn value_times_are_utc_or_plain_numbers() {
        assert_eq!(val_strftime("", 1_700_000_000.0).unwrap(), "2023-11-14 22:13:20");
        assert_eq!(val_strftime("%s", 1.5).unwrap(), "1");
        assert_eq!(val_strftime("%s", f64::INFINITY).unwrap(), "inf");
        assert_eq!(val_strftime("%H", 3600.0).unwrap(), "01");
    }
}
