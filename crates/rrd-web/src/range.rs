//! GrowthForecast's drawing terms (`t=`) and the options every graph,
//! xport, summary and series request shares: `t`, `from`/`to`, `width`,
//! `height`, `gmode`, `cf`, `step`, `sumup` and the cheap graph options
//! (`graphonly`, `logarithmic`, `legend`, `notitle`, the colours,
//! `border`, `upper_limit`/`lower_limit`, `rigid`).
//!
//! Spans, titles and the choice of file follow GF's `calc_period`: the
//! `s`-prefixed terms read the 1-minute file. `t=c`/`sc` take `from` and
//! `to` (default: 8 days ago and now) as dates or epoch seconds, UTC.
//!
//! Invariants: every value is validated here; a refused one yields GF's
//! message under its parameter name (the caller answers 400 with it,
//! where GF silently falls back to the default).
//! `xgrid`/`ygrid` are checked against rrdtool's `--x-grid`/`--y-grid`
//! grammar here and passed through to the graph options (rrd-graph
//! decides what it can draw; its refusal is a 400 under the same key).
//! Deliberately not here: vrules themselves ([`crate::vrule`]).

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::params::{parse_int, parse_natural, parse_time, valid_bare_color};
use crate::rrdfile::Resolution;

/// The time frame of one request.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeRange {
    pub start: i64,
    pub end: i64,
    pub title: String,
    pub resolution: Resolution,
}

/// GF's relative terms: seconds back from now and the title.
fn relative(t: &str) -> Option<(i64, &'static str)> {
    let base = t.strip_prefix('s').filter(|b| !b.is_empty() && *b != "c").unwrap_or(t);
    let short = base.len() != t.len();
    Some(match (base, short) {
        ("h", false) => (2 * 3600, "Hour (5min avg)"),
        ("h", true) => (2 * 3600, "Hour (1min avg)"),
        ("4h", false) => (4 * 3600, "4 Hours (5min avg)"),
        ("4h", true) => (4 * 3600, "4 Hours (1min avg)"),
        ("8h", false) => (8 * 3600, "8 Hours (5min avg)"),
        ("8h", true) => (8 * 3600, "8 Hours (1min avg)"),
        ("n", false) => (14 * 3600, "Half Day (5min avg)"),
        ("n", true) => (14 * 3600, "Half Day (1min avg)"),
        ("d", false) => (33 * 3600, "Day (5min avg)"),
        ("d", true) => (33 * 3600, "Day (1min avg)"),
        ("3d", false) => (3 * 86_400, "3 Days (5min avg)"),
        ("3d", true) => (3 * 86_400, "3 Days (1min avg)"),
        ("w", false) => (8 * 86_400, "Week (30min avg)"),
        ("m", false) => (35 * 86_400, "Month (2hour avg)"),
        ("y", false) => (400 * 86_400, "Year (1day avg)"),
        _ => return None,
    })
}

/// Everything a draw or export request asked for.
#[derive(Clone, Debug)]
pub struct DrawRequest {
    pub range: TimeRange,
    pub width: i64,
    pub height: i64,
    /// `gauge` (DS `num`) or `subtract` (DS `sub`).
    pub gmode: String,
    pub cf: String,
    /// xport's `--step` (0: automatic).
    pub step_secs: i64,
    /// `None`: not asked (a complex then uses its own `sumup`).
    pub sumup: Option<bool>,
    pub graphonly: bool,
    pub logarithmic: bool,
    pub legend: bool,
    pub notitle: bool,
    pub rigid: bool,
    pub upper_limit: Option<f64>,
    pub lower_limit: Option<f64>,
    pub border: i64,
    /// `--color` arguments, e.g. `BACK#F3F3F3`.
    pub colors: Vec<String>,
    /// `--x-grid` and `--y-grid`, as given (checked by [`valid_x_grid`],
    /// [`valid_y_grid`]).
    pub xgrid: Option<String>,
    pub ygrid: Option<String>,
    /// Whether vrules show their description in the legend (GF's
    /// `vrule_legend`, default 1).
    pub vrule_legend: bool,
}

/// rrdtool's `--x-grid`: `none`, or
/// `GTM:GST:MTM:MST:LTM:LST:LPR:LFM` (units SECOND…YEAR, positive
/// steps, a label precision of at least 0, then a strftime format that
/// may itself hold colons).
pub fn valid_x_grid(v: &str) -> bool {
    if v == "none" {
        return true;
    }
    let parts: Vec<&str> = v.splitn(8, ':').collect();
    let [gtm, gst, mtm, mst, ltm, lst, lpr, lfm] = parts.as_slice() else { return false };
    let unit = |u: &str| matches!(u, "SECOND" | "MINUTE" | "HOUR" | "DAY" | "WEEK" | "MONTH" | "YEAR");
    let step = |s: &str| parse_natural(s).is_some_and(|n| n <= 1_000_000);
    unit(gtm)
        && unit(mtm)
        && unit(ltm)
        && step(gst)
        && step(mst)
        && step(lst)
        && parse_int(lpr).is_some_and(|p| (0..=100_000_000).contains(&p))
        && !lfm.is_empty()
        && lfm.len() <= 64
        && !lfm.chars().any(char::is_control)
}

/// rrdtool's `--y-grid`: `none`, or `step:factor` (a positive step, a
/// positive whole label factor).
pub fn valid_y_grid(v: &str) -> bool {
    if v == "none" {
        return true;
    }
    let Some((step, factor)) = v.split_once(':') else { return false };
    step.parse::<f64>().is_ok_and(|s| s.is_finite() && s > 0.0)
        && parse_natural(factor).is_some_and(|f| f <= 1_000_000)
}

/// The widest and tallest picture a request may ask for.
const MAX_PIXELS: i64 = 4000;

/// Parses the shared parameters; `Err` holds the `messages` object.
// A flat walk over the request's parameters, one check each.
#[allow(clippy::too_many_lines)]
pub fn parse(p: &HashMap<String, String>, now: i64) -> Result<DrawRequest, Value> {
    let mut bad = serde_json::Map::new();
    let mut refuse = |key: &str, msg: &str| {
        bad.insert(key.into(), json!(msg));
    };
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());

    let t = get("t").unwrap_or("d");
    let mut range = TimeRange {
        start: now - 33 * 3600,
        end: now,
        title: String::new(),
        resolution: Resolution::FiveMinute,
    };
    if t == "c" || t == "sc" {
        let from = get("from").map_or(Some(now - 8 * 86_400), parse_time);
        let to = get("to").map_or(Some(now), parse_time);
        match (from, to) {
            (None, _) => refuse("from", "invalid From datetime"),
            (_, None) => refuse("to", "invalid To datetime"),
            (Some(f), Some(t)) if f > t => refuse("from", "from is newer than to"),
            (Some(f), Some(to_secs)) => {
                range.start = f;
                range.end = to_secs;
                range.title = format!(
                    "{} to {}",
                    get("from").map_or_else(|| crate::store::gf_time(f), str::to_string),
                    get("to").map_or_else(|| crate::store::gf_time(to_secs), str::to_string)
                );
                if t == "sc" {
                    range.resolution = Resolution::OneMinute;
                }
            }
        }
    } else {
        match relative(t) {
            Some((back, title)) => {
                range.start = now - back;
                range.title = title.into();
                if t.starts_with('s') {
                    range.resolution = Resolution::OneMinute;
                }
            }
            None => refuse("t", "invalid drawing term"),
        }
    }

    let mut dim = |key: &str, default: i64, msg: &str| match get(key) {
        None => default,
        Some(v) => parse_natural(v).filter(|v| (10..=MAX_PIXELS).contains(v)).unwrap_or_else(|| {
            refuse(key, msg);
            default
        }),
    };
    let width = dim("width", 390, "invalid width");
    let height = dim("height", 110, "invalid height");

    let gmode = get("gmode").unwrap_or("gauge").to_string();
    if !matches!(gmode.as_str(), "gauge" | "subtract") {
        refuse("gmode", "invalid drawing data");
    }
    let cf = get("cf").unwrap_or("AVERAGE").to_string();
    if !matches!(cf.as_str(), "AVERAGE" | "MAX") {
        refuse("cf", "invalid consolidation function");
    }
    let step_secs = match get("step") {
        None => 0,
        Some(v) => parse_natural(v).unwrap_or_else(|| {
            refuse("step", "invalid step size");
            0
        }),
    };
    let mut flag = |key: &str, default: bool| match get(key) {
        None => default,
        Some("0") => false,
        Some("1") => true,
        Some(_) => {
            refuse(key, &format!("invalid {key} flag"));
            default
        }
    };
    let sumup = get("sumup").is_some().then(|| flag("sumup", false));
    let graphonly = flag("graphonly", false);
    let logarithmic = flag("logarithmic", false);
    let legend = flag("legend", true);
    let notitle = flag("notitle", false);
    let rigid = flag("rigid", false);
    let vrule_legend = flag("vrule_legend", true);
    let mut limit = |key: &str| {
        get(key).and_then(|v| match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Some(x),
            _ => {
                refuse(key, &format!("invalid {key}"));
                None
            }
        })
    };
    let upper_limit = limit("upper_limit");
    let lower_limit = limit("lower_limit");
    if logarithmic && lower_limit.is_some_and(|l| l <= 0.0) {
        // rrdtool's own refusal (GF passes it on as a 500).
        refuse(
            "lower_limit",
            "for a logarithmic yaxis you must specify a lower-limit > 0 (logarithmic=1 takes a lower_limit above 0, or none)",
        );
    }
    let border = match get("border") {
        None => 3,
        Some(v) => parse_int(v).filter(|b| (0..=100).contains(b)).unwrap_or_else(|| {
            refuse("border", "invalid border width");
            3
        }),
    };
    let mut colors = Vec::new();
    for (key, tag, default) in [
        ("background_color", "BACK", "f3f3f3"),
        ("canvas_color", "CANVAS", "ffffff"),
        ("font_color", "FONT", "000000"),
        ("frame_color", "FRAME", "000000"),
        ("axis_color", "AXIS", "000000"),
        ("shadea_color", "SHADEA", "cfcfcf"),
        ("shadeb_color", "SHADEB", "9e9e9e"),
    ] {
        let v = get(key).unwrap_or(default);
        if valid_bare_color(v) {
            colors.push(format!("{tag}#{}", v.to_ascii_uppercase()));
        } else {
            refuse(key, &format!("invalid {} color", key.trim_end_matches("_color")));
        }
    }
    let xgrid = get("xgrid").map(str::to_string);
    if xgrid.as_deref().is_some_and(|v| !valid_x_grid(v)) {
        refuse("xgrid", "invalid xgrid: none, or GTM:GST:MTM:MST:LTM:LST:LPR:LFM as rrdtool's --x-grid");
    }
    let ygrid = get("ygrid").map(str::to_string);
    if ygrid.as_deref().is_some_and(|v| !valid_y_grid(v)) {
        refuse("ygrid", "invalid ygrid: none, or grid step:label factor as rrdtool's --y-grid");
    }
    if !bad.is_empty() {
        return Err(Value::Object(bad));
    }
    Ok(DrawRequest {
        range,
        width,
        height,
        gmode,
        cf,
        step_secs,
        sumup,
        graphonly,
        logarithmic,
        legend,
        notitle,
        rigid,
        upper_limit,
        lower_limit,
        border,
        colors,
        xgrid,
        ygrid,
        vrule_legend,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(q: &str) -> Result<DrawRequest, Value> {
        parse(&crate::params::params(Some(q), b""), 1_700_000_000)
    }

    #[test]
    fn terms_follow_calc_period() {
        let r = req("t=sh").unwrap().range;
        assert_eq!((r.end - r.start, r.resolution), (7200, Resolution::OneMinute));
        assert_eq!(r.title, "Hour (1min avg)");
        let r = req("").unwrap().range;
        assert_eq!((r.end - r.start, r.resolution), (33 * 3600, Resolution::FiveMinute));
        for t in
            ["h", "4h", "8h", "n", "d", "3d", "w", "m", "y", "sh", "s4h", "s8h", "sn", "sd", "s3d", "c", "sc"]
        {
            assert!(req(&format!("t={t}")).is_ok(), "{t}");
        }
        for t in ["sw", "sm", "sy", "s", "x", "H"] {
            assert_eq!(req(&format!("t={t}")).unwrap_err()["t"], "invalid drawing term", "{t}");
        }
    }

    #[test]
    fn custom_ranges_take_dates_or_epochs() {
        let r = req("t=c&from=2023-11-14%2000:00:00&to=1700000000").unwrap().range;
        assert_eq!((r.start, r.end), (1_699_920_000, 1_700_000_000));
        assert!(req("t=c&from=garbage").unwrap_err()["from"].is_string());
        assert!(req("t=c&from=1700000000&to=1690000000").unwrap_err()["from"].is_string());
        let r = req("t=sc").unwrap().range;
        assert_eq!((r.end - r.start, r.resolution), (8 * 86_400, Resolution::OneMinute));
    }

    #[test]
    fn options_are_validated() {
        let e = req("width=0&height=x&gmode=both&cf=MIN&graphonly=2&background_color=red").unwrap_err();
        for k in ["width", "height", "gmode", "cf", "graphonly", "background_color"] {
            assert!(e[k].is_string(), "{k}: {e}");
        }
        let r = req("width=500&gmode=subtract&cf=MAX&sumup=1&upper_limit=10").unwrap();
        assert_eq!((r.width, r.gmode.as_str(), r.cf.as_str(), r.sumup), (500, "subtract", "MAX", Some(true)));
        assert_eq!(r.upper_limit, Some(10.0));
        assert_eq!(r.colors[0], "BACK#F3F3F3");
        for q in ["logarithmic=1&lower_limit=0", "logarithmic=1&lower_limit=-2.5"] {
            assert!(req(q).unwrap_err()["lower_limit"].as_str().unwrap().contains("> 0"), "{q}");
        }
        assert_eq!(req("logarithmic=1&lower_limit=0.1").unwrap().lower_limit, Some(0.1));
        assert_eq!(req("logarithmic=0&lower_limit=-1").unwrap().lower_limit, Some(-1.0));
    }

    #[test]
    fn grids_follow_rrdtools_grammar() {
        for ok in ["none", "MINUTE:10:MINUTE:20:MINUTE:10:0:%M", "HOUR:6:DAY:1:HOUR:6:0:%H:%M"] {
            assert!(valid_x_grid(ok), "{ok}");
        }
        for bad in ["", "MINUTE:10", "FORTNIGHT:1:DAY:1:DAY:1:0:%d", "MINUTE:0:MINUTE:20:MINUTE:10:0:%M"] {
            assert!(!valid_x_grid(bad), "{bad}");
        }
        for ok in ["none", "10:1", "0.5:2"] {
            assert!(valid_y_grid(ok), "{ok}");
        }
        for bad in ["10", "0:1", "x:1", "10:0", "10:1.5", "nan:1"] {
            assert!(!valid_y_grid(bad), "{bad}");
        }
        let e = req("xgrid=HOUR&ygrid=1").unwrap_err();
        assert!(e["xgrid"].is_string() && e["ygrid"].is_string(), "{e}");
        let r = req("xgrid=none&ygrid=10:1&vrule_legend=0").unwrap();
        assert_eq!(
            (r.xgrid.as_deref(), r.ygrid.as_deref(), r.vrule_legend),
            (Some("none"), Some("10:1"), false)
        );
    }
}
