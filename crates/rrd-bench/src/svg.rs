//! The workspace's one SVG chart writer, hand-written (no dependency: the
//! output is a few hundred lines of text). The bench report draws line
//! charts with [`line_chart`] (one series per side and pass, linear or
//! logarithmic axes, tick labels at round numbers, a legend); `rrdscale
//! pagesim` draws the paper's figures from the same parts: a document
//! ([`open`], [`close`]), plot areas ([`Frame`]: data to pixels, axes,
//! lines, markers), [`linear_ticks`] and [`legend`].
//!
//! Deliberately absent: anything interactive, and fonts beyond the
//! viewer's sans-serif.

use std::fmt::Write as _;

/// One line of a chart.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Index into the palette (a side keeps its colour across charts).
    pub color: usize,
    /// 0 = solid, 1 = dashed, 2 = dotted (e.g. the pass number).
    pub dash: usize,
}

/// A chart's axes and labels.
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub log_x: bool,
    pub log_y: bool,
}

const W: f64 = 820.0;
const H: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 260.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const COLORS: [&str; 8] =
    ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

/// Text made safe for an SVG text node or attribute.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Starts a document of `width` × `height` pixels on a white background.
pub fn open(s: &mut String, width: f64, height: f64) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{width}" height="{height}" fill="white"/>"#);
}

/// Ends a document begun by [`open`].
pub fn close(s: &mut String) {
    s.push_str("</svg>\n");
}

/// A plot area inside a document: maps data to pixels, linearly or by
/// decades on either axis.
pub struct Frame {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
    /// The data range of each axis (positive on a log axis).
    pub x: (f64, f64),
    pub y: (f64, f64),
    pub log_x: bool,
    pub log_y: bool,
}

impl Frame {
    /// The pixel column of `x`.
    pub fn px(&self, x: f64) -> f64 {
        let (lo, hi, v) = if self.log_x {
            (self.x.0.log10(), self.x.1.log10(), x.max(self.x.0).log10())
        } else {
            (self.x.0, self.x.1, x)
        };
        self.left + (v - lo) / (hi - lo) * self.width
    }

    /// The pixel row of `y` (a log axis clamps values below its range).
    pub fn py(&self, y: f64) -> f64 {
        let (lo, hi, v) = if self.log_y {
            (self.y.0.log10(), self.y.1.log10(), y.max(self.y.0).log10())
        } else {
            (self.y.0, self.y.1, y)
        };
        self.top + self.height - (v - lo) / (hi - lo) * self.height
    }

    /// Axes, horizontal grid, ticks and labels (already formatted), with
    /// the axis labels and a bold title.
    pub fn axes(
        &self,
        s: &mut String,
        x_ticks: &[(f64, String)],
        y_ticks: &[(f64, String)],
        x_label: &str,
        y_label: &str,
        title: &str,
    ) {
        let (l, t, w, h) = (self.left, self.top, self.width, self.height);
        for (v, label) in y_ticks {
            let y = self.py(*v);
            let _ = writeln!(
                s,
                r##"<line x1="{l:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"##,
                l + w,
                l - 6.0,
                y + 4.0,
                esc(label)
            );
        }
        for (v, label) in x_ticks {
            let x = self.px(*v);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#000"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"##,
                t + h,
                t + h + 4.0,
                t + h + 17.0,
                esc(label)
            );
        }
        let _ = writeln!(
            s,
            r##"<rect x="{l:.1}" y="{t:.1}" width="{w:.1}" height="{h:.1}" fill="none" stroke="#000"/>"##
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">{}</text>"##,
            l + w / 2.0,
            t + h + 34.0,
            esc(x_label)
        );
        let _ = writeln!(
            s,
            r##"<text transform="translate({:.1},{:.1}) rotate(-90)" text-anchor="middle" font-size="12">{}</text>"##,
            l - 44.0,
            t + h / 2.0,
            esc(y_label)
        );
        if !title.is_empty() {
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="13" font-weight="bold">{}</text>"##,
                l + w / 2.0,
                t - 10.0,
                esc(title)
            );
        }
    }

    /// A line through `points`; `dash` is an SVG dash array ("6 4").
    pub fn polyline(&self, s: &mut String, points: &[(f64, f64)], color: &str, dash: Option<&str>) {
        let pts: Vec<String> =
            points.iter().map(|&(x, y)| format!("{:.1},{:.1}", self.px(x), self.py(y))).collect();
        let dash = dash.map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"{dash}/>"#,
            pts.join(" ")
        );
    }

    /// A hollow circle at each point (a series drawn as points only).
    pub fn markers(&self, s: &mut String, points: &[(f64, f64)], color: &str) {
        for &(x, y) in points {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
                self.px(x),
                self.py(y)
            );
        }
    }

    /// A small filled dot at each point (on a line's measured points).
    pub fn dots(&self, s: &mut String, points: &[(f64, f64)], color: &str) {
        for &(x, y) in points {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#,
                self.px(x),
                self.py(y)
            );
        }
    }
}

/// One legend line: its label, colour, dash array, and whether the series
/// is drawn as markers rather than a line.
pub type LegendEntry<'a> = (&'a str, &'a str, Option<&'a str>, bool);

/// A legend, one entry per 16 px from `(x, y)`.
pub fn legend(s: &mut String, x: f64, y: f64, entries: &[LegendEntry]) {
    for (i, (label, color, dash, marker)) in entries.iter().enumerate() {
        let yy = y + i as f64 * 16.0;
        if *marker {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{yy:.1}" r="3.5" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
                x + 11.0
            );
        } else {
            let dash = dash.map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
            let _ = writeln!(
                s,
                r#"<line x1="{x:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{color}" stroke-width="2"{dash}/>"#,
                x + 22.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            x + 28.0,
            yy + 4.0,
            esc(label)
        );
    }
}

/// `[0, step, 2·step, …]` up to `max`, with a step from 1-2-5 × 10^k;
/// returns the axis top (the last tick) too.
pub fn linear_ticks(max: f64) -> (f64, Vec<(f64, String)>) {
    let raw = (max / 5.0).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|&v| v >= raw).unwrap_or(10.0 * mag);
    let top = (max / step).ceil().max(1.0) * step;
    let n = (top / step).round() as usize;
    let ticks =
        (0..=n).map(|i| (i as f64 * step, format!("{}", (i as f64 * step * 1e6).round() / 1e6))).collect();
    (top, ticks)
}

/// Round tick positions covering `[lo, hi]` (in data units).
fn ticks(lo: f64, hi: f64, log: bool) -> Vec<f64> {
    if log {
        let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        return (a..=b).map(|e| 10f64.powi(e)).collect();
    }
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| span / s <= 6.0).unwrap_or(10.0 * mag);
    // From the tick at or below `lo` to the first tick at or above `hi`,
    // so the axis ends on a labelled value.
    let mut t = (lo / step).floor() * step;
    let mut out = vec![t];
    while t < hi - step * 1e-9 {
        t += step;
        out.push(t);
    }
    out
}

fn label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Renders `series` as an SVG document.
pub fn line_chart(chart: &Chart, series: &[Series]) -> String {
    let pts = series.iter().flat_map(|s| s.points.iter()).filter(|(x, y)| {
        x.is_finite() && y.is_finite() && (!chart.log_x || *x > 0.0) && (!chart.log_y || *y > 0.0)
    });
    let (mut x0, mut x1, mut y0, mut y1) =
        (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if !chart.log_y {
        y0 = y0.min(0.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let xt = ticks(x0, x1, chart.log_x);
    let yt = ticks(y0, y1, chart.log_y);
    let (x0, x1) = (xt.first().copied().unwrap_or(x0).min(x0), xt.last().copied().unwrap_or(x1).max(x1));
    let (y0, y1) = (yt.first().copied().unwrap_or(y0).min(y0), yt.last().copied().unwrap_or(y1).max(y1));
    let frame = Frame {
        left: LEFT,
        top: TOP,
        width: W - LEFT - RIGHT,
        height: H - TOP - BOTTOM,
        x: (x0, x1),
        y: (y0, y1),
        log_x: chart.log_x,
        log_y: chart.log_y,
    };
    let mut s = String::new();
    open(&mut s, W, H);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" font-size="15" text-anchor="middle">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        esc(chart.title)
    );
    // A grid both ways (the report's charts are read off it).
    for &t in &xt {
        let x = frame.px(t);
        let _ =
            writeln!(s, r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#ddd"/>"##, H - BOTTOM);
    }
    let label_ticks = |ts: &[f64]| -> Vec<(f64, String)> { ts.iter().map(|&t| (t, label(t))).collect() };
    frame.axes(&mut s, &label_ticks(&xt), &label_ticks(&yt), chart.x_label, chart.y_label, "");
    let mut entries = Vec::new();
    for ser in series {
        let color = COLORS[ser.color % COLORS.len()];
        let dash = match ser.dash % 3 {
            0 => None,
            1 => Some("7 4"),
            _ => Some("2 3"),
        };
        let points: Vec<(f64, f64)> = ser
            .points
            .iter()
            .copied()
            .filter(|(x, y)| {
                x.is_finite() && y.is_finite() && (!chart.log_x || *x > 0.0) && (!chart.log_y || *y > 0.0)
            })
            .collect();
        if !points.is_empty() {
            frame.polyline(&mut s, &points, color, dash);
            frame.dots(&mut s, &points, color);
        }
        entries.push((ser.name.as_str(), color, dash, false));
    }
    legend(&mut s, W - RIGHT + 12.0, TOP + 10.0, &entries);
    close(&mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 10.0, false), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 19_000.0, false), vec![0.0, 5000.0, 10_000.0, 15_000.0, 20_000.0]);
        assert_eq!(ticks(20.0, 60_000.0, true), vec![10.0, 100.0, 1000.0, 10_000.0, 100_000.0]);
        assert_eq!(label(250_000.0), "250k");
        assert_eq!(label(0.5), "0.5");
    }

    #[test]
    fn chart_has_one_line_per_series() {
        let series = vec![
            Series { name: "a<b".into(), points: vec![(1.0, 2.0), (2.0, 3.0)], color: 0, dash: 0 },
            Series { name: "c".into(), points: vec![(1.0, 1.0), (2.0, 0.0)], color: 1, dash: 1 },
        ];
        let chart = Chart { title: "t", x_label: "x", y_label: "y", log_x: false, log_y: true };
        let svg = line_chart(&chart, &series);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a&lt;b"));
        assert_eq!(svg.matches("stroke-dasharray").count(), 2, "one dashed line and its legend");
        // The zero point is left out on a log axis, not drawn at infinity.
        assert!(!svg.contains("inf") && !svg.contains("NaN"));
    }
}
