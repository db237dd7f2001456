//! Formats the graph options bring in, checked against RRDtool 1.7.2's
//! whitelists and formatted by our own code (never a C `printf`):
//! `--imginfo` (`...%s...%lu...%lu...`), `--left-axis-format` and
//! `--right-axis-format` (one double conversion), and the axis
//! formatters `timestamp` (strftime of the value as UTC seconds) and
//! `duration` (RRDtool's `strfduration` of the value as milliseconds).
//! Also `--pango-markup`: the markup subset rrd-graph understands.

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

/// DejaVu Sans Mono's OS/2 script metrics (in ems), which Pango uses
/// for `<sup>` and `<sub>`.
const SCRIPT_SIZE: f64 = 1433.0 / 2048.0;
const SUPERSCRIPT_OFFSET: f64 = 983.0 / 2048.0;
const SUBSCRIPT_OFFSET: f64 = 286.0 / 2048.0;

/// One run of text of a `--pango-markup` string with its style.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    pub text: String,
    pub bold: bool,
    pub italic: bool,
    /// `<span foreground=...>` (#RGB, #RRGGBB or #RRGGBBAA, or a few names).
    pub color: Option<crate::options::Rgba>,
    /// Font scale: 1 normally, 1/1.2 inside `<small>`, 1.2 inside
    /// `<big>`, the font's superscript size (DejaVu: 1433/2048) inside
    /// `<sup>` and `<sub>`, as Pango does.
    pub scale: f64,
    /// Baseline shift in ems of the base font (up is positive): the font's
    /// superscript and subscript offsets (DejaVu: 983/2048, 286/2048).
    pub rise_em: f64,
}

fn markup_color(v: &str) -> Option<crate::options::Rgba> {
    use crate::options::Rgba;
    let named = match v.to_ascii_lowercase().as_str() {
        "black" => Some(Rgba::new(0, 0, 0, 255)),
        "white" => Some(Rgba::new(255, 255, 255, 255)),
        "red" => Some(Rgba::new(255, 0, 0, 255)),
        "green" => Some(Rgba::new(0, 128, 0, 255)),
        "blue" => Some(Rgba::new(0, 0, 255, 255)),
        "gray" | "grey" => Some(Rgba::new(190, 190, 190, 255)),
        "yellow" => Some(Rgba::new(255, 255, 0, 255)),
        "orange" => Some(Rgba::new(255, 165, 0, 255)),
        _ => None,
    };
    if named.is_some() {
        return named;
    }
    let hex = v.strip_prefix('#')?;
    if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let n = u32::from_str_radix(hex, 16).ok()?;
    let x = |v: u32| (v * 17) as u8;
    Some(match hex.len() {
        3 => Rgba::new(x(n >> 8), x((n >> 4) & 15), x(n & 15), 255),
        6 => Rgba::new((n >> 16) as u8, (n >> 8) as u8, n as u8, 255),
        8 => Rgba::from_u32(n),
        _ => return None,
    })
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Splits Pango markup into styled runs: `<b>`, `<i>`, `<span
/// foreground|color|fgcolor=…>`, `<sup>`, `<sub>`, `<small>`, `<big>` are
/// honoured, other tags (and other span attributes) are dropped, entities
/// decoded. Text that is not well-formed markup is returned as it is, in
/// one run (Pango draws nothing for it; we keep it readable).
pub(crate) fn markup_spans(markup: &str) -> Vec<Span> {
    let plain = || {
        vec![Span {
            text: markup.to_string(),
            bold: false,
            italic: false,
            color: None,
            scale: 1.0,
            rise_em: 0.0,
        }]
    };
    #[derive(Clone)]
    struct Style {
        tag: String,
        bold: bool,
        italic: bool,
        color: Option<crate::options::Rgba>,
        scale: f64,
        rise_em: f64,
    }
    let mut stack: Vec<Style> =
        vec![Style { tag: String::new(), bold: false, italic: false, color: None, scale: 1.0, rise_em: 0.0 }];
    let mut spans: Vec<Span> = Vec::new();
    let mut rest = markup;
    while !rest.is_empty() {
        let top = stack.last().cloned().expect("the base style stays");
        let (text, tail) = match rest.find('<') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if !text.is_empty() {
            spans.push(Span {
                text: unescape(text),
                bold: top.bold,
                italic: top.italic,
                color: top.color,
                scale: top.scale,
                rise_em: top.rise_em,
            });
        }
        rest = tail;
        if rest.is_empty() {
            break;
        }
        let Some(close) = rest.find('>') else { return plain() };
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim();
            if stack.len() < 2 || stack.last().map(|s| s.tag.as_str()) != Some(name) {
                return plain();
            }
            stack.pop();
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, attrs) = tag.split_once(char::is_whitespace).unwrap_or((tag, ""));
        let mut st = top.clone();
        st.tag = name.to_string();
        match name {
            "b" => st.bold = true,
            "i" => st.italic = true,
            "sup" => {
                st.rise_em += SUPERSCRIPT_OFFSET * top.scale;
                st.scale = top.scale * SCRIPT_SIZE;
            }
            "sub" => {
                st.rise_em -= SUBSCRIPT_OFFSET * top.scale;
                st.scale = top.scale * SCRIPT_SIZE;
            }
            "small" => st.scale = top.scale / 1.2,
            "big" => st.scale = top.scale * 1.2,
            "span" => {
                let mut a = attrs;
                while let Some(eq) = a.find('=') {
                    let key = a[..eq].trim();
                    let after = a[eq + 1..].trim_start();
                    let Some(quote) = after.chars().next() else { return plain() };
                    if quote != '"' && quote != '\'' {
                        return plain();
                    }
                    let Some(end) = after[1..].find(quote) else { return plain() };
                    let value = &after[1..1 + end];
                    if matches!(key, "foreground" | "fgcolor" | "color") {
                        st.color = markup_color(value).or(st.color);
                    } else if matches!(key, "size" | "font_size") {
                        st.scale = match value {
                            "xx-small" => top.scale / 1.728,
                            "x-small" => top.scale / 1.44,
                            "small" | "smaller" => top.scale / 1.2,
                            "medium" => top.scale,
                            "large" | "larger" => top.scale * 1.2,
                            "x-large" => top.scale * 1.44,
                            "xx-large" => top.scale * 1.728,
                            // Absolute sizes need the base size; left alone.
                            _ => top.scale,
                        };
                    } else if key == "weight" && value == "bold" {
                        st.bold = true;
                    } else if key == "style" && value == "italic" {
                        st.italic = true;
                    }
                    a = &after[end + 2..];
                }
            }
            _ => {}
        }
        if !self_closing {
            stack.push(st);
        }
    }
    if stack.len() != 1 {
        return plain();
    }
    spans
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

    #[test]
    fn markup_subset() {
        let s = markup_spans("a<b>b</b><span foreground=\"#ff0000\" font=\"x\">c</span>x<sup>2</sup>&amp;");
        let texts: Vec<&str> = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["a", "b", "c", "x", "2", "&"]);
        assert!(s[1].bold && !s[0].bold);
        assert_eq!(s[2].color, Some(crate::options::Rgba::new(255, 0, 0, 255)));
        assert!(s[4].rise_em > 0.0 && s[4].scale < 1.0);
        assert!(markup_spans("<sub>x</sub>")[0].rise_em < 0.0);
        // Hostile or broken markup never panics.
        for bad in [
            "<span foreground=",
            "<span a=\"",
            "<span =x>",
            "<",
            "</",
            "<>",
            "a</b>",
            "<b></b></b>",
            "<span é='x'>y</span>",
        ] {
            let _ = markup_spans(bad);
        }
        let pieces =
            ["<", ">", "/", "b", "span", " ", "=", "\"", "'", "foreground", "#f00", "sup", "&amp;", "é", "x"];
        let mut seed: u64 = 1;
        for _ in 0..5000 {
            let mut text = String::new();
            for _ in 0..12 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            let _ = markup_spans(&text);
        }
        // Not markup: kept as text.
        assert_eq!(markup_spans("a<b")[0].text, "a<b");
        assert_eq!(markup_spans("<b>x</i>")[0].text, "<b>x</i>");
    }
}
