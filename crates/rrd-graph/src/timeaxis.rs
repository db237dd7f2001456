//! The time axis: which grid lines and labels a graph gets, chosen from
//! the seconds each pixel covers as RRDtool 1.7.2 does, and placed at
//! local-time boundaries (hours, midnights, first weekdays, firsts of months)
//! with the C library's `localtime_r`/`mktime`, so `TZ` is honoured and
//! daylight-saving days come out as RRDtool draws them.
//!
//! `--x-grid` replaces the table's row; `--week-fmt` the format of the
//! weekly row. Deliberately not here: `--utc` (not in rrdtool 1.7.2).

/// Units the grid steps in (those of `--x-grid`).
pub(crate) use crate::options::TimeUnit as Unit;

/// One row of RRDtool's label table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct XLabel {
    /// Used when at least this many seconds fall on a pixel.
    min_secs_per_px: f64,
    /// For rows sharing `min_secs_per_px`: the longest range they suit.
    length: i64,
    pub grid: (Unit, i64),
    pub major: (Unit, i64),
    pub label: (Unit, i64),
    /// Seconds to shift a label right of its grid line (centres day names).
    pub precision: i64,
    pub format: &'static str,
}

impl XLabel {
    /// Whether this is the weekly row, whose format `--week-fmt` sets.
    pub fn is_weekly(&self) -> bool {
        self.label == (Week, 1) && self.major == (Week, 1)
    }

    /// A row given by `--x-grid` (its format is kept by the caller).
    pub fn user(grid: (Unit, i64), major: (Unit, i64), label: (Unit, i64), precision: i64) -> XLabel {
        XLabel { min_secs_per_px: 1.0, length: 0, grid, major, label, precision, format: "" }
    }
}

const fn row(
    min_secs_per_px: f64,
    length: i64,
    grid: (Unit, i64),
    major: (Unit, i64),
    label: (Unit, i64),
    precision: i64,
    format: &'static str,
) -> XLabel {
    XLabel { min_secs_per_px, length, grid, major, label, precision, format }
}

use Unit::*;

/// RRDtool's table of time grids.
const XLABELS: &[XLabel] = &[
    row(0.0, 0, (Second, 1), (Second, 5), (Second, 1), 0, "%H:%M:%S"),
    row(0.015, 0, (Second, 1), (Second, 5), (Second, 5), 0, "%H:%M:%S"),
    row(0.08, 0, (Second, 1), (Second, 5), (Second, 10), 0, "%H:%M:%S"),
    row(0.15, 0, (Second, 5), (Second, 15), (Second, 30), 0, "%H:%M:%S"),
    row(0.4, 0, (Second, 10), (Minute, 1), (Minute, 1), 0, "%H:%M"),
    row(0.7, 0, (Second, 20), (Minute, 1), (Minute, 1), 0, "%H:%M"),
    row(1.0, 0, (Second, 30), (Minute, 1), (Minute, 2), 0, "%H:%M"),
    row(2.0, 0, (Minute, 1), (Minute, 5), (Minute, 5), 0, "%H:%M"),
    row(5.0, 0, (Minute, 2), (Minute, 10), (Minute, 10), 0, "%H:%M"),
    row(10.0, 0, (Minute, 5), (Minute, 20), (Minute, 20), 0, "%H:%M"),
    row(30.0, 0, (Minute, 10), (Minute, 30), (Hour, 1), 0, "%H:%M"),
    row(60.0, 0, (Minute, 30), (Hour, 1), (Hour, 2), 0, "%H:%M"),
    row(60.0, 24 * 3600, (Minute, 30), (Hour, 1), (Hour, 3), 0, "%a %H:%M"),
    row(140.0, 0, (Hour, 1), (Hour, 2), (Hour, 4), 0, "%a %H:%M"),
    row(180.0, 0, (Hour, 1), (Hour, 3), (Hour, 6), 0, "%a %H:%M"),
    row(300.0, 0, (Hour, 2), (Hour, 6), (Hour, 12), 0, "%a %H:%M"),
    row(600.0, 0, (Hour, 6), (Day, 1), (Day, 1), 24 * 3600, "%a %d %b"),
    row(1200.0, 0, (Hour, 6), (Day, 1), (Day, 1), 24 * 3600, "%d %b"),
    row(1800.0, 0, (Hour, 12), (Day, 1), (Day, 2), 24 * 3600, "%a %d %b"),
    row(2400.0, 0, (Hour, 12), (Day, 1), (Day, 2), 24 * 3600, "%d %b"),
    row(3600.0, 0, (Day, 1), (Week, 1), (Week, 1), 7 * 24 * 3600, "Week %V"),
    row(12000.0, 0, (Day, 1), (Month, 1), (Month, 1), 30 * 24 * 3600, "%B %Y"),
    row(18000.0, 0, (Day, 2), (Month, 1), (Month, 1), 30 * 24 * 3600, "%B %Y"),
    row(23000.0, 0, (Week, 1), (Month, 1), (Month, 1), 30 * 24 * 3600, "%b %Y"),
    row(32000.0, 0, (Week, 1), (Month, 1), (Month, 1), 30 * 24 * 3600, "%b '%g"),
    row(42000.0, 0, (Week, 1), (Month, 1), (Month, 2), 30 * 24 * 3600, "%B %Y"),
    row(52000.0, 0, (Week, 1), (Month, 1), (Month, 2), 30 * 24 * 3600, "%b %Y"),
    row(78000.0, 0, (Week, 1), (Month, 1), (Month, 2), 30 * 24 * 3600, "%b '%g"),
    row(84000.0, 0, (Week, 2), (Month, 1), (Month, 3), 30 * 24 * 3600, "%B %Y"),
    row(94000.0, 0, (Week, 2), (Month, 1), (Month, 3), 30 * 24 * 3600, "%b %Y"),
    row(120000.0, 0, (Week, 2), (Month, 1), (Month, 3), 30 * 24 * 3600, "%b '%g"),
    row(130000.0, 0, (Month, 1), (Month, 2), (Month, 4), 0, "%Y-%m-%d"),
    row(142000.0, 0, (Month, 1), (Month, 3), (Month, 6), 0, "%Y-%m-%d"),
    row(220000.0, 0, (Month, 1), (Month, 6), (Month, 12), 0, "%Y-%m-%d"),
    row(400000.0, 0, (Month, 2), (Month, 12), (Month, 12), 365 * 24 * 3600, "%Y"),
    row(800000.0, 0, (Month, 4), (Month, 12), (Month, 24), 365 * 24 * 3600, "%Y"),
    row(2000000.0, 0, (Month, 6), (Month, 12), (Month, 24), 365 * 24 * 3600, "'%g"),
];

/// The table row for a graph of `span_secs` over `width_px` pixels.
pub(crate) fn choose(span_secs: i64, width_px: i64) -> XLabel {
    let factor = span_secs as f64 / width_px.max(1) as f64;
    let mut sel = 0;
    while sel + 1 < XLABELS.len() && XLABELS[sel + 1].min_secs_per_px <= factor {
        sel += 1;
    }
    while sel > 0
        && XLABELS[sel - 1].min_secs_per_px == XLABELS[sel].min_secs_per_px
        && XLABELS[sel].length > span_secs
    {
        sel -= 1;
    }
    XLABELS[sel]
}

use rrd_lang::ctime::{localtime as local, mktime as make};

/// The first boundary of `unit × step` at or before `start`.
pub(crate) fn first_time(start: i64, (unit, step): (Unit, i64)) -> i64 {
    let Some(mut tm) = local(start) else { return -1 };
    // rrdtool's long steps, as the int arithmetic of struct tm keeps them.
    let step = step.clamp(1, i64::from(i32::MAX)) as i32;
    // Every field finer than the unit starts its range (days at 1; a
    // week keeps its day, moved back below); then the unit's own field
    // is rounded down to a multiple of the step (days are not).
    if unit > Second {
        tm.tm_sec = 0;
    }
    if unit > Minute {
        tm.tm_min = 0;
    }
    if unit > Hour {
        tm.tm_hour = 0;
    }
    if unit > Week {
        tm.tm_mday = 1;
    }
    if unit > Month {
        tm.tm_mon = 0;
    }
    match unit {
        Second => tm.tm_sec -= tm.tm_sec % step,
        Minute => tm.tm_min -= tm.tm_min % step,
        Hour => tm.tm_hour -= tm.tm_hour % step,
        Day => {}
        // Weeks start on the locale's first weekday, which RRDtool reads
        // from the C library. rrdscale formats dates in the C locale (Rust
        // never calls setlocale), whose weeks start on Sunday (`locale
        // week-1stday` = 19971130, `first_weekday` = 1), so the grid falls
        // on Sundays as RRDtool's does there.
        Week => tm.tm_mday -= tm.tm_wday,
        Month => tm.tm_mon -= tm.tm_mon % step,
        Year => tm.tm_year -= (tm.tm_year + 1900) % step,
    }
    make(&mut tm)
}

/// The boundary after `current`, skipping times that do not exist.
pub(crate) fn next_time(current: i64, (unit, step): (Unit, i64)) -> i64 {
    let Some(mut tm) = local(current) else { return -1 };
    let step = step.clamp(1, i64::from(i32::MAX)) as i32;
    let mut limit = match unit {
        Second => 7200,
        Minute => 120,
        _ => 2,
    };
    loop {
        match unit {
            Second => tm.tm_sec += step,
            Minute => tm.tm_min += step,
            Hour => tm.tm_hour += step,
            Day => tm.tm_mday += step,
            Week => tm.tm_mday += 7 * step,
            Month => tm.tm_mon += step,
            Year => tm.tm_year += step,
        }
        let made = make(&mut tm);
        if made != -1 || limit < 0 {
            return made;
        }
        limit -= 1;
    }
}

/// `strftime` of `t` in local time (at most 99 bytes, as rrdtool keeps).
pub(crate) fn format_time(t: i64, format: &str) -> String {
    let Some(tm) = local(t) else { return String::new() };
    let Ok(fmt) = std::ffi::CString::new(format) else { return String::new() };
    String::from_utf8_lossy(&rrd_lang::ctime::strftime(&fmt, &tm, 99)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_follows_seconds_per_pixel() {
        // A day on 400 px: 216 s a pixel -> 6-hourly labels with day names.
        let day = choose(86_400, 400);
        assert_eq!((day.label, day.format), ((Hour, 6), "%a %H:%M"));
        // An hour: 9 s a pixel.
        assert_eq!(choose(3600, 400).format, "%H:%M");
        // A year: monthly.
        assert_eq!(choose(365 * 86_400, 400).major, (Month, 1));
        // A day at 60 s a pixel picks the row meant for ranges up to a day.
        assert_eq!(choose(86_400, 1440).format, "%a %H:%M");
        assert_eq!(choose(20_000, 333).format, "%H:%M");
    }

    #[test]
    fn boundaries_are_local_time() {
        // Runs with whatever TZ the test has; UTC is what CI uses.
        if std::env::var("TZ").as_deref() != Ok("UTC") {
            return;
        }
        let t = 1_700_000_123; // Tue 2023-11-14 22:15:23 UTC
        assert_eq!(first_time(t, (Hour, 6)), 1_699_984_800);
        assert_eq!(first_time(t, (Day, 1)), 1_699_920_000);
        assert_eq!(first_time(t, (Week, 1)), 1_699_747_200); // Sunday
        assert_eq!(next_time(1_699_920_000, (Day, 1)), 1_700_006_400);
        assert_eq!(format_time(1_699_920_000, "%a %d %b"), "Tue 14 Nov");
    }
}
