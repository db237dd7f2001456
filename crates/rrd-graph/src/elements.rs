//! Graph elements as RRDtool 1.7.2 writes them: `DEF`, `CDEF` and `VDEF`
//! (handed on to the engine as text), `LINE[width]`, `AREA`, `STACK`,
//! `HRULE`, `VRULE`, `COMMENT`, `GPRINT`, `PRINT` and `TEXTALIGN`.
//!
//! Fields are separated by unescaped colons (`\:` is a colon; any other
//! backslash stays). LINE, AREA, STACK and the rules read their fields as
//! RRDtool's argument parser does (`Args`): `key=value` fields (`vname=`,
//! `color=`, `legend=`, `stack=`, `dashes=`, ...), the keywords `STACK`,
//! `skipscale` and `dashes` anywhere after the first field, the rest
//! positional; a colour that is not hex keeps its element without colour
//! and legend and silently ends the element list, as in RRDtool. A
//! drawing element names an earlier DEF/CDEF/VDEF or gives a number;
//! legends of drawn elements get RRDtool's two-space prefix (room
//! for the colour box). Errors carry RRDtool's messages.
//!
//! PRINT/GPRINT take RRDtool's flags `strftime`, `valstrftime` and
//! `valstrfduration` in any field after the vname (texts: `timefmt`).
//!
//! `TICK` is a plot that marks where its value is non-zero; an AREA with
//! a second colour (`AREA:v#c1#c2[:legend][:gradheight=n]`) is filled
//! with a gradient; `SHIFT` is handed to the engine with the DEFs.
//!
//! `XPORT:vname[:legend]` names a column of the data formats.

use rrd_format::Cf;

use crate::error::{GraphError, Result};
use crate::options::Rgba;
use crate::printf::PrintFormat;

/// A number or the name of a variable.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ValueRef {
    Var(String),
    Number(f64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
    Justified,
    Center,
}

/// A LINE or an AREA.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Plot {
    pub is_area: bool,
    pub value: ValueRef,
    /// Stroke width of a LINE.
    pub width: f64,
    /// `None`: not drawn (RRDtool's fully transparent default).
    pub color: Option<Rgba>,
    pub stack: bool,
    pub skip_scale: bool,
    pub dashes: Option<Vec<f64>>,
    /// An AREA's second colour and `gradheight=` (RRDtool's default 50):
    /// filled with a vertical gradient.
    pub gradient: Option<(Rgba, f64)>,
    /// A TICK (`TICK:vname#color:fraction`): a vertical mark of this
    /// fraction of the graph height (negative: from the top) where the
    /// value is known and not zero. Never scales the y axis.
    pub tick: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    /// DEF, CDEF or VDEF, evaluated by the engine.
    Data {
        vname: String,
        is_vdef: bool,
    },
    Plot(Plot),
    HRule {
        value: ValueRef,
        color: Option<Rgba>,
        dashes: Option<Vec<f64>>,
    },
    VRule {
        value: ValueRef,
        color: Option<Rgba>,
        dashes: Option<Vec<f64>>,
    },
    Comment,
    /// PRINT (`graph_print`) or GPRINT; `cf` for the deprecated
    /// `vname:CF:format` form over a DEF or CDEF.
    Print {
        vname: String,
        cf: Option<Cf>,
        format: PrintStyle,
        graph: bool,
    },
    TextAlign(Align),
    /// SHIFT, evaluated by the engine with the DEFs and CDEFs.
    Shift,
    /// XPORT: a column of the data formats (a legend in a picture).
    Xport {
        vname: String,
    },
}

/// How a PRINT/GPRINT turns its value into text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PrintStyle {
    /// A checked printf format (the default).
    Number(PrintFormat),
    /// `:strftime`: the VDEF's time, local.
    Strftime(String),
    /// `:valstrftime`: the value as a UTC time stamp.
    ValueTime(String),
    /// `:valstrfduration`: the value as a duration in milliseconds.
    Duration(String),
}

/// One parsed element with its legend (before PRINT formatting).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Element {
    pub text: String,
    pub kind: Kind,
    pub legend: String,
}

/// Splits at unescaped colons as RRDtool 1.7.2's `parseArguments` does:
/// only `\:` is an escape (a backslash before anything else stays).
fn split_fields(s: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some(':')) {
            let next = chars.next().expect("peeked");
            fields.last_mut().expect("never empty").push(next);
        } else if c == ':' {
            fields.push(String::new());
        } else {
            fields.last_mut().expect("never empty").push(c);
        }
    }
    fields
}

/// `#RRGGBB[AA]` (or the short `#RGB[A]`).
fn parse_color(hex: &str, text: &str) -> Result<Rgba> {
    let bad = || GraphError::invalid(format!("Color problem in {text}"));
    if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let v = u32::from_str_radix(hex, 16).map_err(|_| bad())?;
    let expand = |n: u32| n * 0x11;
    Ok(match hex.len() {
        3 => Rgba::new(expand(v >> 8) as u8, expand((v >> 4) & 0xf) as u8, expand(v & 0xf) as u8, 255),
        4 => Rgba::new(
            expand(v >> 12) as u8,
            expand((v >> 8) & 0xf) as u8,
            expand((v >> 4) & 0xf) as u8,
            expand(v & 0xf) as u8,
        ),
        6 => Rgba::from_u32((v << 8) | 0xff),
        8 => Rgba::from_u32(v),
        _ => return Err(bad()),
    })
}

/// What the parser knows about the names defined so far.
#[derive(Default)]
struct Names {
    /// Whether each name is a VDEF's, as its first definition says
    /// (RRDtool's `find_var` finds the first). A map: graphs with
    /// thousands of elements look names up thousands of times.
    defined: std::collections::HashMap<String, bool>,
}

impl Names {
    fn define(&mut self, name: &str, is_vdef: bool) {
        self.defined.entry(name.to_string()).or_insert(is_vdef);
    }

    fn find(&self, name: &str) -> Option<bool> {
        self.defined.get(name).copied()
    }

    /// A variable or a number, as RRDtool reads the first field of drawing
    /// elements.
    fn value(&self, s: &str) -> Result<ValueRef> {
        if self.find(s).is_some() {
            return Ok(ValueRef::Var(s.to_string()));
        }
        let (v, used) = rrd_lang::numparse::rrd_strtod(s);
        if used > 0 && used == s.len() {
            return Ok(ValueRef::Number(v));
        }
        Err(GraphError::invalid(format!("{s} is not a vname nor a number")))
    }
}

/// `dashes[=on[,off...]]`: RRDtool's default is 5,5.
fn parse_dashes(spec: Option<&str>, text: &str) -> Result<Vec<f64>> {
    let Some(list) = spec else { return Ok(vec![5.0, 5.0]) };
    list.split(',')
        .map(|p| {
            let (v, used) = rrd_lang::numparse::rrd_strtod(p);
            if used == 0 || used != p.len() || v.is_nan() || v <= 0.0 {
                Err(GraphError::invalid(format!("Bad dashes in {text}")))
            } else {
                Ok(v)
            }
        })
        .collect()
}

fn unused(opt: &str, text: &str) -> GraphError {
    GraphError::invalid(format!("Unused Arguments \"{opt}\" in command : {text}"))
}

/// RRDtool's `FMT_LEG_LEN`: legends and formats keep this many bytes.
const FMT_LEG_LEN: usize = 200;

/// The first `FMT_LEG_LEN` bytes of `s` (RRDtool's `strncpy`).
fn leg_len(s: &str) -> &str {
    if s.len() <= FMT_LEG_LEN {
        return s;
    }
    let mut cut = FMT_LEG_LEN;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

/// Legend of a drawn element: RRDtool's two-space prefix when not empty.
fn box_legend(s: Option<&String>) -> String {
    match s {
        Some(l) if !l.is_empty() => format!("  {}", leg_len(l)),
        _ => String::new(),
    }
}

/// Parses every element in order.
// A flat match over the graph elements.
#[allow(clippy::too_many_lines)]
pub(crate) fn parse(elements: &[String]) -> Result<Vec<Element>> {
    let mut names = Names::default();
    let mut out: Vec<Element> = Vec::with_capacity(elements.len());
    for text in elements {
        let (head, rest) = text.split_once(':').unwrap_or((text.as_str(), ""));
        let fields = split_fields(rest);
        // A colour that is not hex makes RRDtool keep the element without
        // colour and legend and stop reading elements, without an error.
        let mut stop = false;
        let element = match head {
            "DEF" | "CDEF" | "VDEF" => {
                let vname = rest.split_once('=').map_or(rest, |(n, _)| n).to_string();
                let is_vdef = head == "VDEF";
                names.define(&vname, is_vdef);
                Element { text: text.clone(), kind: Kind::Data { vname, is_vdef }, legend: String::new() }
            }
            _ if head.starts_with("LINE") || head == "AREA" || head == "STACK" => {
                let (element, bad_color) = parse_plot(head, &fields, text, &names, &out)?;
                stop = bad_color;
                element
            }
            "HRULE" | "VRULE" => {
                let mut args = Args::new(&fields);
                let dashes = args.take("dashes").map(|v| parse_dashes(Some(&v), text)).transpose()?;
                args.take("dash-offset");
                let Head { value, color, legend, bad_color, .. } =
                    vname_colors_legend(&mut args, &names, text)?;
                if !bad_color {
                    args.finish(text)?;
                }
                stop = bad_color;
                let kind = if head == "HRULE" {
                    Kind::HRule { value, color, dashes }
                } else {
                    Kind::VRule { value, color, dashes }
                };
                Element { text: text.clone(), kind, legend: box_legend(legend.as_ref()) }
            }
            "COMMENT" => {
                if rest.is_empty() && !text.contains(':') {
                    return Err(GraphError::invalid("No positional CF/FORMAT"));
                }
                Element {
                    text: text.clone(),
                    kind: Kind::Comment,
                    legend: leg_len(&fields.join(":")).to_string(),
                }
            }
            "PRINT" | "GPRINT" => {
                // `strftime`, `valstrftime` and `valstrfduration` are flags
                // anywhere after the vname (the last formatter named wins);
                // `format=`, `cf=`, `strftime=` and `vformatter=` are keys.
                // Other fields, `=` or not, are positional.
                let mut strftime = false;
                let mut vformatter: Option<&str> = None;
                let (mut format_kv, mut cf_kv): (Option<String>, Option<String>) = (None, None);
                let mut fields = fields.clone();
                // A key given twice: the last one counts, the others stay
                // (and are unused arguments).
                let last_key =
                    |key: &str| fields.iter().skip(1).rposition(|f| f.starts_with(key)).map(|p| p + 1);
                let (last_format, last_cf) = (last_key("format="), last_key("cf="));
                let mut k = 1;
                let mut original = 0;
                while k < fields.len() {
                    original += 1;
                    match fields[k].as_str() {
                        "strftime" => strftime = true,
                        "valstrftime" => vformatter = Some("timestamp"),
                        "valstrfduration" => vformatter = Some("duration"),
                        other => match other.split_once('=') {
                            Some(("format", v)) if Some(original) == last_format => {
                                format_kv = Some(v.to_string())
                            }
                            Some(("cf", v)) if Some(original) == last_cf => cf_kv = Some(v.to_string()),
                            Some(("strftime", _)) => strftime = true,
                            Some(("vformatter", "timestamp")) => vformatter = Some("timestamp"),
                            Some(("vformatter", "duration")) => vformatter = Some("duration"),
                            Some(("vformatter", v)) => {
                                return Err(GraphError::invalid(format!("Unsupported vformatter: {v}")))
                            }
                            _ => {
                                k += 1;
                                continue;
                            }
                        },
                    }
                    fields.remove(k);
                }
                let vname = fields[0].clone();
                let is_vdef = names
                    .find(&vname)
                    .ok_or_else(|| GraphError::invalid(format!("undefined vname {vname}")))?;
                let mut positional = fields[1..].iter();
                let cf = if is_vdef {
                    None
                } else {
                    let name = match &cf_kv {
                        Some(c) => c.clone(),
                        None => positional
                            .next()
                            .cloned()
                            .ok_or_else(|| GraphError::invalid("No positional CDEF"))?,
                    };
                    Some(
                        Cf::parse(&name)
                            .ok_or_else(|| GraphError::invalid(format!("bad CF for DEF/CDEF: {name}")))?,
                    )
                };
                let format = match &format_kv {
                    Some(f) => f,
                    None => {
                        positional.next().ok_or_else(|| GraphError::invalid("No positional CF/FORMAT"))?
                    }
                };
                let rest: Vec<&String> = positional.collect();
                if !rest.is_empty() {
                    let rest: Vec<&str> = rest.iter().map(|s| s.as_str()).collect();
                    return Err(unused(&rest.join(":"), text));
                }
                let format = &leg_len(format).to_string();
                let format = if strftime {
                    PrintStyle::Strftime(format.clone())
                } else {
                    match vformatter {
                        Some("timestamp") => PrintStyle::ValueTime(format.clone()),
                        Some(_) => PrintStyle::Duration(format.clone()),
                        None => PrintStyle::Number(PrintFormat::parse(format)?),
                    }
                };
                Element {
                    text: text.clone(),
                    kind: Kind::Print { vname, cf, format, graph: head == "GPRINT" },
                    legend: String::new(),
                }
            }
            "TEXTALIGN" => {
                let align = match rest {
                    "left" => Align::Left,
                    "right" => Align::Right,
                    "justified" => Align::Justified,
                    "center" => Align::Center,
                    other => return Err(GraphError::invalid(format!("Unknown alignment type '{other}'"))),
                };
                Element { text: text.clone(), kind: Kind::TextAlign(align), legend: String::new() }
            }
            "TICK" => {
                let (element, bad_color) = parse_tick(&fields, text, &names)?;
                stop = bad_color;
                element
            }
            "SHIFT" => Element { text: text.clone(), kind: Kind::Shift, legend: String::new() },
            "XPORT" => {
                let vname = fields[0].clone();
                if vname.is_empty() {
                    return Err(GraphError::invalid("No positional VNAME"));
                }
                match names.find(&vname) {
                    None => return Err(GraphError::invalid(format!("{vname} is not a vname nor a number"))),
                    Some(true) => {
                        return Err(GraphError::invalid(format!(
                            "Cannot shift a VDEF: '{vname}' in line '{text}'\n"
                        )))
                    }
                    Some(false) => {}
                }
                if let Some(extra) = fields.get(2) {
                    return Err(unused(extra, text));
                }
                let legend = fields.get(1).map(|l| leg_len(l).to_string()).unwrap_or_default();
                Element { text: text.clone(), kind: Kind::Xport { vname }, legend }
            }
            other => {
                return Err(GraphError::invalid(format!("'{other}' is not a valid function name in {text}")))
            }
        };
        out.push(element);
        if stop {
            break;
        }
    }
    Ok(out)
}

/// One field of an element as RRDtool 1.7.2's `parseArguments` sees it:
/// `key=value`, a keyword (`STACK`, `skipscale`, `dashes` after a
/// positional field), or positional.
struct Arg {
    key: Option<&'static str>,
    own_key: Option<String>,
    value: String,
    keyvalue: String,
    used: bool,
}

/// The fields of a drawing element, consumed as RRDtool does: keys first
/// (the last of a repeated key counts), then positional fields in order
/// (an unknown `key=value` is positional too), then whatever is left is an
/// "Unused Arguments" error.
struct Args(Vec<Arg>);

impl Args {
    fn new(fields: &[String]) -> Args {
        let mut positional = 0;
        let args = fields
            .iter()
            .map(|f| {
                let (key, own_key, value) = match f.split_once('=') {
                    Some((k, v)) => (None, Some(k.to_string()), v.to_string()),
                    None => match f.as_str() {
                        "STACK" if positional > 0 => (Some("stack"), None, "1".to_string()),
                        "skipscale" if positional > 0 => (Some("skipscale"), None, "1".to_string()),
                        "dashes" if positional > 0 => (Some("dashes"), None, "5,5".to_string()),
                        _ => {
                            positional += 1;
                            (None, None, f.clone())
                        }
                    },
                };
                Arg { key, own_key, value, keyvalue: f.clone(), used: false }
            })
            .collect();
        Args(args)
    }

    /// The value of the last `key` (marked used).
    fn take(&mut self, key: &str) -> Option<String> {
        let arg = self
            .0
            .iter_mut()
            .rev()
            .find(|a| !a.used && (a.key == Some(key) || a.own_key.as_deref() == Some(key)))?;
        arg.used = true;
        Some(arg.value.clone())
    }

    /// The first field not used yet (marked used).
    fn next_unused(&mut self) -> Option<&Arg> {
        let arg = self.0.iter_mut().find(|a| !a.used)?;
        arg.used = true;
        Some(arg)
    }

    /// "Unused Arguments" for whatever is left.
    fn finish(&self, text: &str) -> Result<()> {
        let left: Vec<&str> = self.0.iter().filter(|a| !a.used).map(|a| a.keyvalue.as_str()).collect();
        if left.is_empty() {
            Ok(())
        } else {
            Err(unused(&left.join(":"), text))
        }
    }
}

/// `vname[#color[#color2]]` from the `vname`/`color`/`color2` keys or the
/// first positional field; the legend from the `legend` key or the next
/// positional field.
/// What [`vname_colors_legend`] read.
struct Head {
    value: ValueRef,
    color: Option<Rgba>,
    color2: Option<Rgba>,
    legend: Option<String>,
    /// A colour was not hex (see the caller).
    bad_color: bool,
}

fn vname_colors_legend(args: &mut Args, names: &Names, text: &str) -> Result<Head> {
    let (vname_kv, color_kv, color2_kv, legend_kv) =
        (args.take("vname"), args.take("color"), args.take("color2"), args.take("legend"));
    let field = match vname_kv {
        Some(v) => v,
        None => args
            .next_unused()
            .map(|a| a.value.clone())
            .ok_or_else(|| GraphError::invalid("No positional VNAME"))?,
    };
    let mut parts = field.splitn(3, '#');
    let value = names.value(parts.next().unwrap_or(""))?;
    let color_text = color_kv.or(parts.next().map(str::to_string));
    let color2_text = color2_kv.or(parts.next().map(str::to_string));
    let legend = match legend_kv {
        Some(l) => Some(l),
        None => args.next_unused().map(|a| a.keyvalue.clone()),
    };
    // A bad colour: the element keeps no colour (or only the first) and
    // no legend, and the caller stops reading elements.
    let Ok(color) = color_text.map(|c| parse_color(&c, text)).transpose() else {
        return Ok(Head { value, color: None, color2: None, legend: None, bad_color: true });
    };
    let Ok(color2) = color2_text.map(|c| parse_color(&c, text)).transpose() else {
        return Ok(Head { value, color, color2: None, legend: None, bad_color: true });
    };
    Ok(Head { value, color, color2, legend, bad_color: false })
}

fn parse_plot(
    head: &str,
    fields: &[String],
    text: &str,
    names: &Names,
    before: &[Element],
) -> Result<(Element, bool)> {
    let (is_area, width, implicit_stack) = if head == "STACK" {
        // The deprecated STACK repeats the kind of the previous LINE/AREA.
        let prev = before.iter().rev().find_map(|e| match &e.kind {
            Kind::Plot(p) if p.tick.is_none() => Some((p.is_area, p.width)),
            _ => None,
        });
        let (a, w) =
            prev.ok_or_else(|| GraphError::invalid(format!("No previous LINE or AREA found for {text}")))?;
        (a, w, true)
    } else if head == "AREA" {
        (true, 1.0, false)
    } else {
        let w = &head["LINE".len()..];
        let width = if w.is_empty() {
            1.0
        } else {
            let (v, used) = rrd_lang::numparse::rrd_strtod(w);
            if used != w.len() || v.is_nan() || v < 0.0 {
                return Err(GraphError::invalid(format!("Bad line width: {w}")));
            }
            v
        };
        (false, width, false)
    };
    let mut args = Args::new(fields);
    let stack = args.take("stack").is_some();
    let skip_scale = args.take("skipscale").is_some();
    let mut dashes = None;
    let mut gradheight = 50.0;
    if is_area {
        if let Some(v) = args.take("gradheight").filter(|v| !v.is_empty()) {
            let (h, used) = rrd_lang::numparse::rrd_strtod(&v);
            if used == 0 || used != v.len() {
                return Err(GraphError::invalid(format!("Bad gradheight: {v}")));
            }
            gradheight = h;
        }
    } else {
        if let Some(v) = args.take("dashes") {
            dashes = Some(parse_dashes(Some(&v), text)?);
        }
        args.take("dash-offset");
    }
    let Head { value, color, color2, legend, bad_color } = vname_colors_legend(&mut args, names, text)?;
    if !bad_color {
        args.finish(text)?;
    }
    let plot = Plot {
        is_area,
        value,
        width,
        color,
        stack: implicit_stack || stack,
        skip_scale,
        dashes,
        gradient: if is_area { color2.map(|c| (c, gradheight)) } else { None },
        tick: None,
    };
    Ok((
        Element { text: text.to_string(), kind: Kind::Plot(plot), legend: box_legend(legend.as_ref()) },
        bad_color,
    ))
}

/// `TICK:vname#color[#color2]:fraction[:legend]` (the legend without the
/// two-space prefix of LINE and AREA).
fn parse_tick(fields: &[String], text: &str, names: &Names) -> Result<(Element, bool)> {
    let mut parts = fields[0].splitn(3, '#');
    let value = names.value(parts.next().unwrap_or(""))?;
    let color_text = parts.next();
    let Some(fraction) = fields.get(1) else {
        return Err(GraphError::invalid("No positional FRACTION"));
    };
    let fraction = if fraction == "vname" {
        0.5
    } else {
        let (v, used) = rrd_lang::numparse::rrd_strtod(fraction);
        if used == 0 || used != fraction.len() {
            let vname = fields[0].split('#').next().unwrap_or("");
            return Err(GraphError::invalid(format!("error parsing number {vname}")));
        }
        v
    };
    // A bad colour keeps the element without colour and legend (and stops
    // the parsing), as for LINE.
    let color = color_text.map(|c| parse_color(c, text)).transpose();
    let bad_color = color.is_err();
    if let (Some(extra), false) = (fields.get(3), bad_color) {
        return Err(unused(extra, text));
    }
    let plot = Plot {
        is_area: false,
        value,
        width: 1.0,
        color: color.unwrap_or(None),
        stack: false,
        skip_scale: true,
        dashes: None,
        gradient: None,
        tick: Some(fraction),
    };
    let legend = if bad_color {
        String::new()
    } else {
        fields.get(2).map(|l| leg_len(l).to_string()).unwrap_or_default()
    };
    Ok((Element { text: text.to_string(), kind: Kind::Plot(plot), legend }, bad_color))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn els(list: &[&str]) -> Result<Vec<Element>> {
        parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn err(list: &[&str]) -> String {
        els(list).unwrap_err().to_string()
    }

    #[test]
    fn drawing_elements_parse() {
        let e = els(&[
            "DEF:a=x.rrd:a:AVERAGE",
            "VDEF:m=a,MAXIMUM",
            "LINE2.5:a#ff000080:in\\: bytes:STACK:dashes=3,2",
            "AREA:a#00ff00::skipscale",
            "STACK:a#0000ff:more",
            "HRULE:m#123:max",
            "VRULE:1700000000#abcd",
            "LINE:42",
            "COMMENT:a\\:b\\\\c\\l",
            "GPRINT:m:%6.2lf %s",
            "PRINT:a:MAX:%lf",
            "TEXTALIGN:center",
        ])
        .unwrap();
        let Kind::Plot(p) = &e[2].kind else { panic!() };
        assert_eq!((p.width, p.stack, p.color), (2.5, true, Some(Rgba::new(255, 0, 0, 128))));
        assert_eq!(p.dashes, Some(vec![3.0, 2.0]));
        assert_eq!(e[2].legend, "  in: bytes");
        let Kind::Plot(p) = &e[3].kind else { panic!() };
        assert!(p.is_area && p.skip_scale && !p.stack);
        assert_eq!(e[3].legend, "");
        let Kind::Plot(p) = &e[4].kind else { panic!() };
        assert!(p.is_area && p.stack);
        assert!(matches!(&e[5].kind, Kind::HRule { value: ValueRef::Var(v), color: Some(c), .. }
            if v == "m" && *c == Rgba::new(0x11, 0x22, 0x33, 255)));
        assert!(
            matches!(&e[7].kind, Kind::Plot(Plot { value: ValueRef::Number(n), color: None, .. }) if *n == 42.0)
        );
        assert_eq!(e[8].legend, "a:b\\\\c\\l");
        assert!(matches!(&e[10].kind, Kind::Print { cf: Some(Cf::Maximum), graph: false, .. }));
        assert!(matches!(e[11].kind, Kind::TextAlign(Align::Center)));
    }

    #[test]
    fn errors_are_rrdtools() {
        let d = "DEF:a=x.rrd:a:AVERAGE";
        assert_eq!(err(&[d, "LINE1:zz#ff0000"]), "zz is not a vname nor a number");
        assert_eq!(err(&[d, "LINEx:a#ff0000"]), "Bad line width: x");
        assert_eq!(
            err(&[d, "LINE1:a#ff0000:x:bogus"]),
            "Unused Arguments \"bogus\" in command : LINE1:a#ff0000:x:bogus"
        );
        assert_eq!(err(&[d, "GPRINT:a:%lf"]), "bad CF for DEF/CDEF: %lf");
        assert_eq!(err(&[d, "GPRINT:a:FOO:%lf"]), "bad CF for DEF/CDEF: FOO");
        assert_eq!(err(&[d, "VDEF:m=a,MAXIMUM", "GPRINT:m"]), "No positional CF/FORMAT");
        assert_eq!(err(&["COMMENT"]), "No positional CF/FORMAT");
        assert_eq!(err(&["TEXTALIGN:foo"]), "Unknown alignment type 'foo'");
        assert_eq!(err(&[d, "STACK:a#ff0000:x"]), "No previous LINE or AREA found for STACK:a#ff0000:x");
        assert_eq!(err(&["FOO:bar"]), "'FOO' is not a valid function name in FOO:bar");
        // A bad colour keeps the element (no colour, no legend) and ends
        // the element list, without an error.
        let kept = els(&[d, "LINE1:a#ff00zz:legend", "LINE2:a#ff0000"]).unwrap();
        assert_eq!(kept.len(), 2);
        assert!(matches!(&kept[1].kind, Kind::Plot(Plot { color: None, .. })) && kept[1].legend.is_empty());
        assert!(err(&[d, "VDEF:m=a,MAXIMUM", "GPRINT:m:%d"]).starts_with("invalid format string '%d'"));
    }
}
