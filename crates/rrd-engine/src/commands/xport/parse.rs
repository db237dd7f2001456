//! Parsing of the command line's elements (DEF, CDEF, VDEF, XPORT, SHIFT)
//! into [`Element`]s, before anything is fetched, with RRDtool's checks
//! and messages: names, fields split at unescaped colons, a CDEF's RPN, a
//! DEF's options and times.

use std::collections::HashMap;

use rrd_format::Cf;

use super::vdef::parse_vdef;
use super::vdef::VdefOp;
use super::XportRange;
use crate::attime;
use crate::error::{Error, Result};
use crate::numparse::rrd_strtod;
use crate::rpn::{Node, Op, Program};

/// The longest variable name RRDtool accepts.
const VNAME_MAX: usize = 255;
/// The longest legend RRDtool keeps.
const LEGEND_MAX: usize = 200;

pub(super) struct Def {
    pub(super) file: String,
    pub(super) ds_name: String,
    pub(super) cf: Cf,
    pub(super) reduce: Option<Cf>,
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) step: i64,
    /// The DEF's own `:daemon=` address.
    pub(super) daemon: Option<String>,
}

pub(super) enum Element {
    Def(Def),
    Cdef(Program),
    Vdef {
        var: usize,
        op: VdefOp,
        param: f64,
    },
    Xport {
        var: usize,
        legend: String,
    },
    /// SHIFT: moves a DEF's or CDEF's rows in time.
    Shift {
        var: usize,
        by: ShiftBy,
    },
}

/// A SHIFT's offset: seconds, or a VDEF's value.
#[derive(Clone, Copy, Debug)]
pub(super) enum ShiftBy {
    Secs(i64),
    Vdef(usize),
}

fn valid_vname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= VNAME_MAX
        && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// Splits at colons not escaped by a backslash, unescaping `\:`.
fn split_fields(s: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&':') {
            fields.last_mut().expect("never empty").push(':');
            chars.next();
        } else if c == ':' {
            fields.push(String::new());
        } else {
            fields.last_mut().expect("never empty").push(c);
        }
    }
    fields
}

pub(super) fn parse_cf(name: &str) -> Result<Cf> {
    Cf::parse(name).ok_or_else(|| Error::invalid(format!("bad CF: {name}")))
}

/// The names the elements parsed so far define, one per element ("" for
/// an XPORT), with the element that defines each first: RRDtool's
/// `find_var` finds the first definition. Looked up in constant time, so
/// thousands of elements parse in linear time.
#[derive(Default)]
pub(super) struct Names {
    list: Vec<String>,
    first: HashMap<String, usize>,
}

impl Names {
    pub(super) fn push(&mut self, name: &str) {
        self.first.entry(name.to_string()).or_insert(self.list.len());
        self.list.push(name.to_string());
    }

    /// The element that first defined `name`.
    pub(super) fn position(&self, name: &str) -> Option<usize> {
        self.first.get(name).copied()
    }
}

#[cfg(test)]
impl<S: AsRef<str>> From<&[S]> for Names {
    fn from(list: &[S]) -> Names {
        let mut names = Names::default();
        for n in list {
            names.push(n.as_ref());
        }
        names
    }
}

/// Parses a CDEF's RPN as RRDtool's `rpn_parse` does, resolving names
/// against the variables defined so far (the first definition of a name
/// wins, as in RRDtool's `find_var`).
pub(super) fn parse_rpn(expr: &str, vars: &Names) -> Result<Program> {
    if expr.is_empty() {
        return Err(Error::invalid("can not parse an empty rpn expression"));
    }
    let lookup = |name: &str| vars.position(name);
    let tokens: Vec<&str> = expr.split(',').collect();
    let mut nodes = Vec::with_capacity(tokens.len());
    for (k, &token) in tokens.iter().enumerate() {
        // A number counts only when a comma follows it (RRDtool's scanner)
        // and all of it parses.
        let comma_follows = k + 1 < tokens.len();
        let numeric = !token.is_empty() && token.bytes().all(|c| c.is_ascii_digit() || b"-.e+".contains(&c));
        if numeric && comma_follows {
            let (v, used) = rrd_strtod(token);
            if used == token.len() {
                nodes.push(Node::Number(v));
                continue;
            }
        }
        if let Some(op) = Op::from_name(token) {
            nodes.push(Node::Op(op));
            continue;
        }
        if let Some(inner) = token.strip_prefix("PREV(").and_then(|t| t.strip_suffix(')')) {
            let var = lookup(inner).ok_or_else(|| Error::invalid(format!("variable '{inner}' not found")))?;
            nodes.push(Node::PrevOf(var));
            continue;
        }
        match lookup(token) {
            Some(var) if valid_vname(token) => nodes.push(Node::Variable(var)),
            _ => return Err(Error::invalid(format!("don't understand '{}'", tokens[k..].join(",")))),
        }
    }
    Ok(Program::from_nodes(nodes))
}

/// Resolves a DEF's `start=`/`end=` against the xport's own range.
fn def_times(start: Option<&str>, end: Option<&str>, range: &XportRange) -> Result<(i64, i64)> {
    if start.is_none() && end.is_none() {
        // The range itself, not its numbers parsed again as times (an
        // eight-digit count of seconds reads as a YYYYMMDD date).
        return Ok((range.start, range.end));
    }
    let parse = |s: &str, which: &'static str| {
        attime::parse(s).map_err(|source| Error::Time { which: Some(which), source })
    };
    let start_spec = parse(start.map_or_else(|| range.start.to_string(), str::to_string).as_str(), "start")?;
    let end_spec = parse(end.map_or_else(|| range.end.to_string(), str::to_string).as_str(), "end")?;
    attime::resolve_start_end(&start_spec, &end_spec, range.now)
        .map_err(|source| Error::Time { which: None, source })
}

/// The parsed elements and what they need from the range.
pub(super) struct Parsed {
    pub(super) global_step: i64,
    pub(super) elements: Vec<Element>,
    /// The variable name each element defines ("" for XPORT).
    pub(super) names: Vec<String>,
}

/// Parses every element first, as RRDtool does before fetching anything.
pub(super) fn parse_elements(range: &XportRange, elements: &[String]) -> Result<Parsed> {
    if range.end < range.start {
        return Err(Error::invalid(format!(
            "start ({}) should be less than end ({})",
            range.start, range.end
        )));
    }
    let span =
        range.end.checked_sub(range.start).ok_or_else(|| Error::invalid("the xport range is too long"))?;
    let global_step = range.step_secs.max(span / range.max_rows.max(1));

    let mut names = Names::default();
    let mut parsed: Vec<Element> = Vec::new();
    for text in elements {
        let (kind, rest) = text.split_once(':').unwrap_or((text.as_str(), ""));
        match kind {
            "DEF" | "CDEF" | "VDEF" => {
                let (vname, body) = rest.split_once('=').unwrap_or((rest, ""));
                if !valid_vname(vname) {
                    return Err(Error::invalid(format!("Invalid vname '{vname}' in line '{text}'")));
                }
                let element = if kind == "CDEF" {
                    Element::Cdef(parse_rpn(body, &names)?)
                } else if kind == "VDEF" {
                    parse_vdef(vname, body, &names, &parsed)?
                } else {
                    parse_def(text, body, global_step, range)?
                };
                names.push(vname);
                parsed.push(element);
            }
            "XPORT" => {
                let element = parse_xport(text, rest, &names, &parsed)?;
                names.push("");
                parsed.push(element);
            }
            "SHIFT" => {
                let element = parse_shift(text, rest, &names, &parsed)?;
                names.push("");
                parsed.push(element);
            }
            other => {
                return Err(Error::invalid(format!(
                    "the graph element {other} is not supported by rrdscale xport yet"
                )))
            }
        }
    }
    Ok(Parsed { global_step, elements: parsed, names: names.list })
}

/// Parses a DEF's `file:ds:CF[:step=...][:reduce=...][:start=...][:end=...][:daemon=...]`.
fn parse_def(text: &str, body: &str, global_step: i64, range: &XportRange) -> Result<Element> {
    let fields = split_fields(body);
    let [file, ds_name, cf, options @ ..] = fields.as_slice() else {
        return Err(Error::invalid(format!("Invalid DEF '{text}'")));
    };
    let (mut step, mut reduce_cf, mut start, mut end) = (global_step, None, None, None);
    let mut daemon = None;
    for opt in options {
        match opt.split_once('=') {
            Some(("step", v)) => {
                step = v.parse().map_err(|_| Error::invalid(format!("bad step in '{text}'")))?
            }
            Some(("reduce", v)) => reduce_cf = Some(parse_cf(v)?),
            Some(("start", v)) => start = Some(v.to_string()),
            Some(("end", v)) => end = Some(v.to_string()),
            Some(("daemon", v)) => daemon = Some(v.to_string()),
            _ => return Err(Error::invalid(format!("Unused Arguments \"{opt}\" in command : {text}"))),
        }
    }
    let (start, end) = def_times(start.as_deref(), end.as_deref(), range)?;
    Ok(Element::Def(Def {
        file: file.clone(),
        ds_name: ds_name.clone(),
        cf: parse_cf(cf)?,
        reduce: reduce_cf,
        start,
        end,
        step,
        daemon,
    }))
}

/// Parses an XPORT's `vname[:legend]`.
fn parse_xport(text: &str, rest: &str, names: &Names, parsed: &[Element]) -> Result<Element> {
    let fields = split_fields(rest);
    if fields.len() > 2 {
        return Err(Error::invalid(format!(
            "Unused Arguments \"{}\" in command : {text}",
            fields[2..].join(":")
        )));
    }
    let vname = fields[0].as_str();
    if vname.is_empty() {
        return Err(Error::invalid("No positional VNAME"));
    }
    let var = names
        .position(vname)
        .ok_or_else(|| Error::invalid(format!("{vname} is not a vname nor a number")))?;
    if matches!(parsed[var], Element::Vdef { .. }) {
        return Err(Error::invalid(format!("Cannot shift a VDEF: '{vname}' in line '{text}'\n")));
    }
    let mut legend = fields.get(1).cloned().unwrap_or_default();
    if legend.len() > LEGEND_MAX {
        let mut cut = LEGEND_MAX;
        while !legend.is_char_boundary(cut) {
            cut -= 1;
        }
        legend.truncate(cut);
    }
    Ok(Element::Xport { var, legend })
}

/// Parses a SHIFT's `vname:offset` (seconds, or a VDEF).
fn parse_shift(text: &str, rest: &str, names: &Names, parsed: &[Element]) -> Result<Element> {
    let fields = split_fields(rest);
    let vname = fields[0].as_str();
    let var = names
        .position(vname)
        .ok_or_else(|| Error::invalid(format!("{vname} is not a vname nor a number")))?;
    if matches!(parsed[var], Element::Vdef { .. }) {
        return Err(Error::invalid(format!("Cannot shift a VDEF: '{vname}' in line '{text}'\n")));
    }
    let Some(offset) = fields.get(1) else {
        return Err(Error::invalid("No shift given"));
    };
    if let Some(extra) = fields.get(2) {
        return Err(Error::invalid(format!("Unused Arguments \"{extra}\" in command : {text}")));
    }
    let by = match names.position(offset) {
        Some(v) if matches!(parsed[v], Element::Vdef { .. }) => ShiftBy::Vdef(v),
        Some(_) => {
            return Err(Error::invalid(format!("Offset cannot be a (C)DEF: '{offset}' in line '{text}'\n")))
        }
        None => ShiftBy::Secs(
            parse_long(offset).ok_or_else(|| Error::invalid(format!("error parsing number {offset}")))?,
        ),
    };
    Ok(Element::Shift { var, by })
}

/// RRDtool's `getLong` (base 10): `strtol` that must read the whole text.
fn parse_long(s: &str) -> Option<i64> {
    let long = crate::numparse::strtol(s, 10);
    (long.consumed > 0 && long.consumed == s.len()).then_some(long.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_def_without_times_takes_the_range_as_it_is() {
        // 94,694,401 has eight digits: parsed again as a time it would be
        // read as a date (month 46 of year 9469) and refused.
        let range = XportRange { start: 94_694_401, end: 1_000_000_800, step_secs: 0, max_rows: 10, now: 0 };
        assert_eq!(def_times(None, None, &range).unwrap(), (94_694_401, 1_000_000_800));
        assert_eq!(def_times(Some("end-1h"), None, &range).unwrap(), (1_000_000_800 - 3600, 1_000_000_800));
    }

    #[test]
    fn rpn_parses_numbers_only_before_a_comma() {
        let vars = Names::from(&["a", "e"][..]);
        let nodes = |e: &str| parse_rpn(e, &vars).map(|p| p.nodes().to_vec());
        assert_eq!(
            nodes("a,1.5e1,+").unwrap(),
            vec![Node::Variable(0), Node::Number(15.0), Node::Op(Op::Add)]
        );
        // "e" and "-" are not numbers: a variable and an operator.
        assert_eq!(nodes("e,a,-").unwrap(), vec![Node::Variable(1), Node::Variable(0), Node::Op(Op::Sub)]);
        assert_eq!(nodes("a,PREV(e),+").unwrap()[1], Node::PrevOf(1));
        assert_eq!(nodes("a,1").unwrap_err().to_string(), "don't understand '1'");
        assert_eq!(nodes("a,zz,+").unwrap_err().to_string(), "don't understand 'zz,+'");
    }
}
