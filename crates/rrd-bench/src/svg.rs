//! Hand-written SVG line charts for the report: one series per side (and
//! pass), linear or logarithmic axes, tick labels at round numbers, a
//! legend. No dependency: the output is a few hundred lines of text.
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

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
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
    let f = |v: f64, log: bool| if log { v.log10() } else { v };
    let px = |x: f64| {
        LEFT + (f(x, chart.log_x) - f(x0, chart.log_x)) / (f(x1, chart.log_x) - f(x0, chart.log_x))
            * (W - LEFT - RIGHT)
    };
    let py = |y: f64| {
        H - BOTTOM
            - (f(y, chart.log_y) - f(y0, chart.log_y)) / (f(y1, chart.log_y) - f(y0, chart.log_y))
                * (H - TOP - BOTTOM)
    };

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" font-size="15" text-anchor="middle">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        esc(chart.title)
    );
    for &t in &xt {
        let x = px(t);
        let _ =
            writeln!(s, r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#ddd"/>"##, H - BOTTOM);
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            H - BOTTOM + 16.0,
            label(t)
        );
    }
    for &t in &yt {
        let y = py(t);
        let _ =
            writeln!(s, r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/>"##, W - RIGHT);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            y + 4.0,
            label(t)
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        W - LEFT - RIGHT,
        H - TOP - BOTTOM
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        H - 16.0,
        esc(chart.x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">{}</text>"#,
        (H - BOTTOM + TOP) / 2.0,
        (H - BOTTOM + TOP) / 2.0,
        esc(chart.y_label)
    );
    for (i, ser) in series.iter().enumerate() {
        let color = COLORS[ser.color % COLORS.len()];
        let dash = match ser.dash % 3 {
            0 => "",
            1 => r#" stroke-dasharray="7 4""#,
            _ => r#" stroke-dasharray="2 3""#,
        };
        let points: Vec<String> = ser
            .points
            .iter()
            .filter(|(x, y)| {
                x.is_finite() && y.is_finite() && (!chart.log_x || *x > 0.0) && (!chart.log_y || *y > 0.0)
            })
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        if !points.is_empty() {
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
                points.join(" ")
            );
            for p in &points {
                let (x, y) = p.split_once(',').expect("formatted above");
                let _ = writeln!(s, r#"<circle cx="{x}" cy="{y}" r="2.5" fill="{color}"/>"#);
            }
        }
        let ly = TOP + 10.0 + 18.0 * i as f64;
        let lx = W - RIGHT + 12.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"{dash}/>"#,
            lx + 22.0
        );
        let _ = writeln!(s, r#"<text x="{}" y="{}">{}</text>"#, lx + 28.0, ly + 4.0, esc(&ser.name));
    }
    s.push_str("</svg>\n");
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
