//! `xport`: DEF, CDEF and XPORT elements evaluated over a time range and
//! written as XML or JSON, as RRDtool 1.7.2's `rrd_xport` does.
//!
//! The pipeline is RRDtool's graph data path:
//! 1. every DEF fetches its archive at the wished step (the global step, or
//!    its own `step=`), then is consolidated up to the global step when the
//!    archive is finer (`reduce=` picks the function, default the DEF's CF);
//! 2. every CDEF runs over the latest start and earliest end of its inputs,
//!    at the greatest common divisor of their steps, each input advancing
//!    one row whenever the evaluation time is a multiple of its step;
//! 3. the XPORT columns are sampled at the greatest common divisor of their
//!    steps over the requested range.
//!
//! CDEFs are evaluated by the shared RPN calculator ([`crate::rpn`]); this
//! module supplies the time series: variables, PREV, PREV(vname), COUNT,
//! TIME, STEPWIDTH, LTIME and NEWDAY/NEWMONTH/NEWYEAR. Deliberately absent
//! for now (an error names them): TREND, TRENDNAN, PREDICT, PREDICTSIGMA,
//! PREDICTPERC and NEWWEEK, VDEF and every drawing element (LINE, AREA,
//! PRINT, ...), SHIFT, and `--daemon`.

use std::io::{self, Write};
use std::path::Path;

use rrd_format::Cf;

use crate::attime;
use crate::error::{Error, Result};
use crate::fetch::{fetch, rrd_snprintf_e, FILL_NAN, MAX_FETCH_VALUES};
use crate::numparse::rrd_strtod;
use crate::rpn::{Context, Node, Op, Program, RpnError, Stack};
use crate::rrd::Rrd;

/// The longest variable name RRDtool accepts.
const VNAME_MAX: usize = 255;
/// The longest legend RRDtool keeps.
const LEGEND_MAX: usize = 200;
/// RRDtool's default `--maxrows` (the graph width).
pub const DEFAULT_MAX_ROWS: i64 = 400;

/// The time frame and step of one xport, as the options set them.
#[derive(Clone, Debug)]
pub struct XportRange {
    pub start: i64,
    pub end: i64,
    /// `--step` (0 when not given): the smallest step wished for.
    pub step_secs: i64,
    /// `--maxrows`: the step is at least `(end - start) / max_rows`.
    pub max_rows: i64,
    /// The clock, for NOW and for AT-style `start=`/`end=` of a DEF.
    pub now: i64,
}

/// The exported table.
#[derive(Clone, Debug, PartialEq)]
pub struct XportResult {
    /// The first row is stamped `start + step_secs`.
    pub start: i64,
    /// The stamp of the last row.
    pub end: i64,
    pub step_secs: i64,
    pub legends: Vec<String>,
    /// Row-major: rows × legends.len() values.
    pub data: Vec<f64>,
}

impl XportResult {
    pub fn row_count(&self) -> usize {
        self.data.len().checked_div(self.legends.len()).unwrap_or(0)
    }
}

/// How `write_xml`/`write_json` lay the table out.
#[derive(Clone, Copy, Debug, Default)]
pub struct XportFormat {
    /// `--showtime`/`-t`: a time stamp in every row.
    pub show_time: bool,
    /// `--enumds`: `<v0>`, `<v1>`, ... instead of `<v>` (XML only).
    pub enum_ds: bool,
}

/// A variable: a DEF's data (possibly shared by several DEFs) or a CDEF's.
#[derive(Clone, Debug)]
struct Series {
    start: i64,
    end: i64,
    step: i64,
    /// Values per row (the DS count of a DEF's file, 1 for a CDEF).
    ds_count: usize,
    /// Which value of a row is this variable's.
    ds: usize,
    data: std::rc::Rc<Vec<f64>>,
}

impl Series {
    fn rows(&self) -> i64 {
        (self.end - self.start).checked_div(self.step).unwrap_or(0)
    }
    fn value(&self, row: i64) -> f64 {
        if row < 0 || row >= self.rows() {
            return FILL_NAN;
        }
        self.data.get(row as usize * self.ds_count + self.ds).copied().unwrap_or(FILL_NAN)
    }
}

struct Def {
    file: String,
    ds_name: String,
    cf: Cf,
    reduce: Option<Cf>,
    start: i64,
    end: i64,
    step: i64,
}

enum Element {
    Def(Def),
    Cdef(Program),
    Xport { var: usize, legend: String },
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

fn parse_cf(name: &str) -> Result<Cf> {
    Cf::parse(name).ok_or_else(|| Error::invalid(format!("bad CF: {name}")))
}

/// Parses a CDEF's RPN as RRDtool's `rpn_parse` does, resolving names
/// against the variables defined so far (the first definition of a name
/// wins, as in RRDtool's `find_var`).
fn parse_rpn(expr: &str, vars: &[String]) -> Result<Program> {
    if expr.is_empty() {
        return Err(Error::invalid("can not parse an empty rpn expression"));
    }
    let lookup = |name: &str| vars.iter().position(|v| v == name);
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

/// The time series a CDEF step sees: each variable at its current row, the
/// outputs so far, the evaluation time and step.
struct SeriesContext<'a> {
    series: &'a [Option<Series>],
    /// Current row of each variable (indexed like `series`).
    cursors: &'a [i64],
    output: &'a [f64],
    time: i64,
    step: i64,
    clock: i64,
}

impl SeriesContext<'_> {
    fn series(&self, index: usize) -> Result<&Series, RpnError> {
        self.series
            .get(index)
            .and_then(Option::as_ref)
            .ok_or(RpnError::MissingValue { index, available: self.series.len() })
    }
}

/// Local time of `t` (for LTIME and NEW*), as the C library has it.
fn local_tm(t: i64) -> Option<libc::tm> {
    let t = libc::time_t::try_from(t).ok()?;
    // SAFETY: localtime_r only writes the tm we hand it and reads `t`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    ok.then_some(tm)
}

/// RRDtool's `tzoffset`: local minus UTC wall-clock time, with its day
/// correction that compares the day of the year before the year (so across
/// New Year it is off by two days, which LTIME inherits).
fn tz_offset(t: i64) -> i64 {
    let t_c = t as libc::time_t;
    // SAFETY: gmtime_r only writes the tm we hand it and reads `t_c`.
    let mut gm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::gmtime_r(&t_c, &mut gm) }.is_null() {
        return 0;
    }
    let Some(local) = local_tm(t) else { return 0 };
    let mut off = i64::from(local.tm_sec - gm.tm_sec)
        + i64::from(local.tm_min - gm.tm_min) * 60
        + i64::from(local.tm_hour - gm.tm_hour) * 3600;
    if local.tm_yday > gm.tm_yday || local.tm_year > gm.tm_year {
        off += 86_400;
    } else if local.tm_yday < gm.tm_yday || local.tm_year < gm.tm_year {
        off -= 86_400;
    }
    off
}

impl Context for SeriesContext<'_> {
    fn variable(&mut self, index: usize) -> Result<f64, RpnError> {
        Ok(self.series(index)?.value(self.cursors[index]))
    }

    fn prev_of(&mut self, index: usize) -> Result<f64, RpnError> {
        if self.output.is_empty() {
            return Ok(FILL_NAN);
        }
        Ok(self.series(index)?.value(self.cursors[index] - 1))
    }

    fn now(&mut self) -> f64 {
        self.clock as f64
    }

    fn series_op(
        &mut self,
        op: Op,
        _position: usize,
        _nodes: &[Node],
        stack: &mut Stack,
    ) -> Result<(), RpnError> {
        let day_changed = |pick: fn(&libc::tm) -> i32| -> f64 {
            match (local_tm(self.time), local_tm(self.time - self.step)) {
                (Some(a), Some(b)) if pick(&a) != pick(&b) => 1.0,
                _ => 0.0,
            }
        };
        let value = match op {
            Op::Time => self.time as f64,
            Op::StepWidth => self.step as f64,
            Op::Count => self.output.len() as f64 + 1.0,
            Op::Prev => self.output.last().copied().unwrap_or(FILL_NAN),
            Op::Ltime => tz_offset(self.time) as f64 + self.time as f64,
            Op::NewDay => day_changed(|tm| tm.tm_mday),
            Op::NewMonth => day_changed(|tm| tm.tm_mon),
            Op::NewYear => day_changed(|tm| tm.tm_year),
            _ => return Err(RpnError::NeedsTimeSeries { op: op.name() }),
        };
        stack.push(value)
    }
}

/// The message RRDtool prints for an RPN failure, or ours for an operator
/// this calculator does not have yet.
fn rpn_error(e: RpnError) -> Error {
    match e {
        RpnError::NeedsTimeSeries { op } => {
            Error::invalid(format!("the RPN operator {op} is not supported by rrdscale xport yet"))
        }
        other => Error::invalid(other.rrdtool_message()),
    }
}

/// Greatest common divisor of the steps, as RRDtool's `rrd_lcd` (which,
/// despite its name, computes the GCD).
fn gcd_of(steps: impl IntoIterator<Item = i64>) -> i64 {
    steps.into_iter().fold(0, |a, b| {
        let (mut x, mut y) = (a, b);
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    })
}

/// RRDtool's `rrd_reduce_data`: consolidates rows of `cur_step` into rows of
/// (about) `*step`, moving start back and end forward to the new step.
fn reduce(
    cf: Cf,
    cur_step: i64,
    start: &mut i64,
    end: &mut i64,
    step: &mut i64,
    ds_count: usize,
    data: &[f64],
) -> Result<Vec<f64>> {
    let factor = ((*step as f64) / (cur_step as f64)).ceil() as i64;
    *step = cur_step * factor;
    // RRDtool counts rows in an unsigned long; wrapping keeps its verdicts
    // on short ranges (a sanity-check error rather than a panic).
    let mut row_count = ((*end - *start) / cur_step) as u64;
    let end_offset = *end % *step;
    let start_offset = *start % *step;
    let mut out = Vec::new();
    let mut src = 0usize;
    if start_offset != 0 {
        *start -= start_offset;
        let skip = (factor - start_offset / cur_step) as u64;
        src += skip as usize * ds_count;
        out.resize(out.len() + ds_count, FILL_NAN);
        row_count = row_count.wrapping_sub(skip);
    }
    if end_offset != 0 {
        *end = *end - end_offset + *step;
        row_count = row_count.wrapping_sub((end_offset / cur_step) as u64);
    }
    let leftover = row_count % factor as u64;
    if leftover != 0 {
        return Err(Error::invalid(format!(
            "SANITY CHECK: {row_count} rows cannot be reduced by {factor} \n"
        )));
    }
    while (row_count as i64) >= factor {
        for col in 0..ds_count {
            let mut acc = f64::NAN;
            let mut valid = 0u64;
            for i in 0..factor as usize {
                let v = data.get(src + i * ds_count + col).copied().unwrap_or(FILL_NAN);
                if v.is_nan() {
                    continue;
                }
                valid += 1;
                acc = if acc.is_nan() {
                    v
                } else {
                    match cf {
                        Cf::Minimum => acc.min(v),
                        Cf::Maximum | Cf::Failures => acc.max(v),
                        Cf::Last => v,
                        _ => acc + v,
                    }
                };
            }
            out.push(match (valid, cf) {
                (0, _) => FILL_NAN,
                (_, Cf::Minimum | Cf::Maximum | Cf::Failures | Cf::Last) => acc,
                _ => acc / valid as f64,
            });
        }
        src += ds_count * factor as usize;
        row_count -= factor as u64;
    }
    if end_offset != 0 {
        out.resize(out.len() + ds_count, FILL_NAN);
    }
    Ok(out)
}

/// What makes two DEFs share one fetch (RRDtool's `gdes_fetch_key`).
#[derive(Clone, Debug, PartialEq)]
struct FetchKey {
    file: String,
    cf: Cf,
    reduce: Option<Cf>,
    start: i64,
    end: i64,
    step: i64,
}

/// Fetches a DEF's archive and consolidates it up to the global step:
/// the rows (every DS of the file) and the file's DS names.
fn fetch_def(def: &Def, global_step: i64) -> Result<(Series, Vec<String>)> {
    let rrd = Rrd::open(Path::new(&def.file), false)?;
    let got = fetch(&rrd, def.cf, def.start, def.end, def.step.max(0) as u64)?;
    let (mut start, mut end) = (got.start, got.end);
    let ds_count = got.ds_names.len();
    let fetched_step = got.step_secs as i64;
    let mut step = def.step.max(global_step);
    let data = if fetched_step < step {
        let cf = def.reduce.unwrap_or(def.cf);
        reduce(cf, fetched_step, &mut start, &mut end, &mut step, ds_count, &got.data)?
    } else {
        step = fetched_step;
        got.data
    };
    let series = Series { start, end, step, ds_count, ds: 0, data: std::rc::Rc::new(data) };
    Ok((series, got.ds_names))
}

/// Resolves a DEF's `start=`/`end=` against the xport's own range.
fn def_times(start: Option<&str>, end: Option<&str>, range: &XportRange) -> Result<(i64, i64)> {
    let parse =
        |s: &str, what: &str| attime::parse(s).map_err(|e| Error::invalid(format!("{what} time: {e}")));
    let start_spec = parse(start.map_or_else(|| range.start.to_string(), str::to_string).as_str(), "start")?;
    let end_spec = parse(end.map_or_else(|| range.end.to_string(), str::to_string).as_str(), "end")?;
    attime::resolve_start_end(&start_spec, &end_spec, range.now).map_err(|e| Error::invalid(e.to_string()))
}

/// Runs an xport over `elements` (`DEF:...`, `CDEF:...`, `XPORT:...`).
pub fn xport(range: &XportRange, elements: &[String]) -> Result<XportResult> {
    if elements.is_empty() {
        return Err(Error::invalid("can't make an xport without contents"));
    }
    if range.end < range.start {
        return Err(Error::invalid(format!(
            "start ({}) should be less than end ({})",
            range.start, range.end
        )));
    }
    let span =
        range.end.checked_sub(range.start).ok_or_else(|| Error::invalid("the xport range is too long"))?;
    let global_step = range.step_secs.max(span / range.max_rows.max(1));

    // Parse every element first, as RRDtool does before fetching anything.
    let mut names: Vec<String> = Vec::new();
    let mut parsed: Vec<Element> = Vec::new();
    for text in elements {
        let (kind, rest) = text.split_once(':').unwrap_or((text.as_str(), ""));
        match kind {
            "DEF" | "CDEF" => {
                let (vname, body) = rest.split_once('=').unwrap_or((rest, ""));
                if !valid_vname(vname) {
                    return Err(Error::invalid(format!("Invalid vname '{vname}' in line '{text}'")));
                }
                let element = if kind == "CDEF" {
                    Element::Cdef(parse_rpn(body, &names)?)
                } else {
                    let fields = split_fields(body);
                    let [file, ds_name, cf, options @ ..] = fields.as_slice() else {
                        return Err(Error::invalid(format!("Invalid DEF '{text}'")));
                    };
                    let (mut step, mut reduce_cf, mut start, mut end) = (global_step, None, None, None);
                    for opt in options {
                        match opt.split_once('=') {
                            Some(("step", v)) => {
                                step =
                                    v.parse().map_err(|_| Error::invalid(format!("bad step in '{text}'")))?
                            }
                            Some(("reduce", v)) => reduce_cf = Some(parse_cf(v)?),
                            Some(("start", v)) => start = Some(v.to_string()),
                            Some(("end", v)) => end = Some(v.to_string()),
                            Some(("daemon", _)) => {} // TODO: fetch through the daemon.
                            _ => {
                                return Err(Error::invalid(format!(
                                    "Unused Arguments \"{opt}\" in command : {text}"
                                )))
                            }
                        }
                    }
                    let (start, end) = def_times(start.as_deref(), end.as_deref(), range)?;
                    Element::Def(Def {
                        file: file.clone(),
                        ds_name: ds_name.clone(),
                        cf: parse_cf(cf)?,
                        reduce: reduce_cf,
                        start,
                        end,
                        step,
                    })
                };
                names.push(vname.to_string());
                parsed.push(element);
            }
            "XPORT" => {
                let fields = split_fields(rest);
                if fields.len() > 2 {
                    return Err(Error::invalid(format!(
                        "Unused Arguments \"{}\" in command : {text}",
                        fields[2..].join(":")
                    )));
                }
                let vname = fields[0].as_str();
                let var = names
                    .iter()
                    .position(|n| n == vname)
                    .ok_or_else(|| Error::invalid(format!("{vname} is not a vname nor a number")))?;
                let mut legend = fields.get(1).cloned().unwrap_or_default();
                if legend.len() > LEGEND_MAX {
                    let mut cut = LEGEND_MAX;
                    while !legend.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    legend.truncate(cut);
                }
                names.push(String::new());
                parsed.push(Element::Xport { var, legend });
            }
            other => {
                return Err(Error::invalid(format!(
                    "the graph element {other} is not supported by rrdscale xport yet"
                )))
            }
        }
    }

    // Fetch DEFs (sharing identical fetches), then run CDEFs, in order.
    let mut series: Vec<Option<Series>> = Vec::with_capacity(parsed.len());
    let mut fetched: Vec<(FetchKey, Series, Vec<String>)> = Vec::new();
    let mut columns: Vec<(usize, String)> = Vec::new();
    let now_clock = range.now;
    for element in &parsed {
        match element {
            Element::Def(def) => {
                let key = FetchKey {
                    file: def.file.clone(),
                    cf: def.cf,
                    reduce: def.reduce,
                    start: def.start,
                    end: def.end,
                    step: def.step,
                };
                let (base, ds_names) = match fetched.iter().find(|f| f.0 == key) {
                    Some((_, base, names)) => (base.clone(), names.clone()),
                    None => {
                        let (base, names) = fetch_def(def, global_step)?;
                        fetched.push((key, base.clone(), names.clone()));
                        (base, names)
                    }
                };
                let ds = ds_names.iter().position(|n| *n == def.ds_name).ok_or_else(|| {
                    Error::invalid(format!("No DS called '{}' in '{}'", def.ds_name, def.file))
                })?;
                series.push(Some(Series { ds, ..base }));
            }
            Element::Cdef(program) => {
                // The variables read (a DEF's, or an earlier CDEF's).
                let mut vars: Vec<usize> = program
                    .nodes()
                    .iter()
                    .filter_map(|n| match *n {
                        Node::Variable(v) | Node::PrevOf(v) => Some(v),
                        _ => None,
                    })
                    .filter(|v| series[*v].is_some())
                    .collect();
                vars.sort_unstable();
                vars.dedup();
                let inputs: Vec<&Series> = vars.iter().filter_map(|v| series[*v].as_ref()).collect();
                if inputs.is_empty() {
                    return Err(Error::invalid(
                        "rpn expressions without DEF or CDEF variables are not supported",
                    ));
                }
                // The latest start, the earliest end, the common step.
                let start = inputs.iter().map(|s| s.start).max().expect("non-empty");
                let end = inputs.iter().map(|s| s.end).min().expect("non-empty");
                let step = gcd_of(inputs.iter().map(|s| s.step));
                if step <= 0 {
                    return Err(Error::invalid("CDEF step is zero"));
                }
                // Each variable starts at the row covering the CDEF's start
                // and moves on whenever the time is a multiple of its step.
                let mut cursors = vec![0i64; series.len()];
                for &v in &vars {
                    let s = series[v].as_ref().expect("filtered above");
                    cursors[v] = (start - s.start).max(0) / s.step;
                }
                let rows = ((end - start) / step).max(0) as usize;
                if rows > MAX_FETCH_VALUES {
                    return Err(Error::invalid(format!(
                        "CDEF needs {rows} rows, more than rrdscale computes"
                    )));
                }
                let mut out = Vec::with_capacity(rows);
                let mut t = start + step;
                while t <= end {
                    let mut ctx = SeriesContext {
                        series: &series,
                        cursors: &cursors,
                        output: &out,
                        time: t,
                        step,
                        clock: now_clock,
                    };
                    let v = program.eval_with(&mut ctx).map_err(rpn_error)?;
                    out.push(v);
                    for &v in &vars {
                        if t % series[v].as_ref().expect("filtered above").step == 0 {
                            cursors[v] += 1;
                        }
                    }
                    t += step;
                }
                series.push(Some(Series {
                    start,
                    end,
                    step,
                    ds_count: 1,
                    ds: 0,
                    data: std::rc::Rc::new(out),
                }));
            }
            Element::Xport { var, legend } => {
                columns.push((*var, legend.clone()));
                series.push(None);
            }
        }
    }
    if columns.is_empty() {
        return Err(Error::invalid("no XPORT found, nothing to do"));
    }
    let col_series: Vec<&Series> = columns
        .iter()
        .map(|(v, _)| series[*v].as_ref().ok_or_else(|| Error::invalid("XPORT of an XPORT")))
        .collect::<Result<_>>()?;
    let step = gcd_of(col_series.iter().map(|s| s.step));
    if step <= 0 {
        return Err(Error::invalid("xport step is zero"));
    }
    let start = range.start - range.start % step;
    let mut end = range.end - range.end % step;
    if range.end > end {
        end += step;
    }
    let rows = ((end - start) / step).max(0);
    if rows as u128 * columns.len() as u128 > MAX_FETCH_VALUES as u128 {
        return Err(Error::invalid(format!("xport needs {rows} rows, more than rrdscale exports")));
    }
    let mut data = Vec::with_capacity(rows as usize * columns.len());
    for row in 0..rows {
        let t = start + row * step;
        for s in &col_series {
            data.push(s.value((t - s.start) / s.step));
        }
    }
    Ok(XportResult { start, end, step_secs: step, legends: columns.into_iter().map(|c| c.1).collect(), data })
}

fn strip_leading_space(s: &str) -> &str {
    s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r'])
}

/// Writes the table as `rrdtool xport` prints its XML.
pub fn write_xml(r: &XportResult, format: XportFormat, out: &mut dyn Write) -> io::Result<()> {
    let mut s = String::with_capacity(512 + r.data.len() * 24);
    s.push_str("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n\n<xport>\n  <meta>\n");
    s.push_str(&format!("    <start>{}</start>\n", r.start + r.step_secs));
    s.push_str(&format!("    <end>{}</end>\n", r.end));
    s.push_str(&format!("    <step>{}</step>\n", r.step_secs));
    s.push_str(&format!("    <rows>{}</rows>\n", r.row_count()));
    s.push_str(&format!("    <columns>{}</columns>\n", r.legends.len()));
    s.push_str("    <legend>\n");
    for legend in &r.legends {
        s.push_str(&format!("      <entry>{}</entry>\n", strip_leading_space(legend)));
    }
    s.push_str("    </legend>\n  </meta>\n  <data>\n");
    for row in 0..r.row_count() {
        s.push_str("    <row>");
        if format.show_time {
            s.push_str(&format!("<t>{}</t>", r.start + (row as i64 + 1) * r.step_secs));
        }
        for (j, v) in r.data[row * r.legends.len()..(row + 1) * r.legends.len()].iter().enumerate() {
            let text = if v.is_nan() { "NaN".to_string() } else { rrd_snprintf_e(*v, 10) };
            if format.enum_ds {
                s.push_str(&format!("<v{j}>{text}</v{j}>"));
            } else {
                s.push_str(&format!("<v>{text}</v>"));
            }
        }
        s.push_str("</row>\n");
        if s.len() > 1 << 16 {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    s.push_str("  </data>\n</xport>\n");
    out.write_all(s.as_bytes())
}

/// Writes the table as `rrdtool xport --json` prints it.
pub fn write_json(r: &XportResult, format: XportFormat, out: &mut dyn Write) -> io::Result<()> {
    let mut s = String::with_capacity(512 + r.data.len() * 20);
    s.push_str("{ \"about\": \"RRDtool graph JSON output\",\n  \"meta\": {\n");
    s.push_str(&format!("    \"start\": {},\n", r.start + r.step_secs));
    s.push_str(&format!("    \"end\": {},\n", r.end));
    s.push_str(&format!("    \"step\": {},\n", r.step_secs));
    s.push_str("    \"legend\": [\n");
    for (j, legend) in r.legends.iter().enumerate() {
        // 1.7.2 writes legends unescaped.
        s.push_str("      \"");
        s.push_str(strip_leading_space(legend));
        s.push('"');
        if j + 1 < r.legends.len() {
            s.push(',');
        }
        s.push('\n');
    }
    s.push_str("          ]\n     },\n  \"data\": [\n");
    let rows = r.row_count();
    let cols = r.legends.len();
    for row in 0..rows {
        s.push_str("    [ ");
        if format.show_time {
            s.push_str(&format!("\"{}\",", r.start + (row as i64 + 1) * r.step_secs));
        }
        for (j, v) in r.data[row * cols..(row + 1) * cols].iter().enumerate() {
            if v.is_nan() || v.is_infinite() {
                s.push_str("null");
            } else {
                s.push_str(&rrd_snprintf_e(*v, 10));
            }
            if j + 1 < cols {
                s.push_str(", ");
            }
        }
        s.push_str(if row + 1 < rows { " ],\n" } else { " ]\n" });
        if s.len() > 1 << 16 {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    s.push_str("  ]\n}\n");
    out.write_all(s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(start: i64, step: i64, values: &[f64]) -> Series {
        Series {
            start,
            end: start + step * values.len() as i64,
            step,
            ds_count: 1,
            ds: 0,
            data: std::rc::Rc::new(values.to_vec()),
        }
    }

    #[test]
    fn rpn_parses_numbers_only_before_a_comma() {
        let vars = vec!["a".to_string(), "e".to_string()];
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

    #[test]
    fn series_context_serves_variables_and_time_operators() {
        let s = vec![Some(series(0, 10, &[1.0, f64::NAN, 4.0]))];
        let run = |expr: &str, row: i64, output: &[f64]| {
            let program = parse_rpn(expr, &["a".to_string()]).unwrap();
            let mut ctx =
                SeriesContext { series: &s, cursors: &[row], output, time: 20, step: 10, clock: 99 };
            program.eval_with(&mut ctx).map_err(rpn_error)
        };
        assert_eq!(run("a,2,MAX", 0, &[]).unwrap(), 2.0);
        assert!(run("a,2,MAX", 1, &[]).unwrap().is_nan());
        assert_eq!(run("a,UN,5,7,IF", 1, &[]).unwrap(), 5.0);
        assert_eq!(run("a,TIME,+,STEPWIDTH,+,NOW,+", 2, &[]).unwrap(), 4.0 + 20.0 + 10.0 + 99.0);
        assert_eq!(run("a,PREV,+,COUNT,+", 0, &[7.0]).unwrap(), 1.0 + 7.0 + 2.0);
        assert!(run("a,PREV,+", 0, &[]).unwrap().is_nan());
        assert_eq!(run("PREV(a),1,+", 1, &[0.0]).unwrap(), 2.0);
        assert!(run("PREV(a),1,+", 1, &[]).unwrap().is_nan());
        assert_eq!(run("a,+", 0, &[]).unwrap_err().to_string(), "RPN stack underflow");
        assert_eq!(run("a,a", 0, &[]).unwrap_err().to_string(), "RPN final stack size != 1");
        assert!(run("a,3600,TREND", 0, &[]).unwrap_err().to_string().contains("TREND is not supported"));
    }

    #[test]
    fn reduce_consolidates_and_pads_like_rrdtool() {
        // Six 300 s rows from 900 to 2700, reduced to 900 s: start and end
        // are already aligned, so two full rows.
        let (mut start, mut end, mut step) = (900, 2700, 900);
        let data = [1.0, 2.0, 3.0, 4.0, f64::NAN, 6.0];
        let out = reduce(Cf::Average, 300, &mut start, &mut end, &mut step, 1, &data).unwrap();
        assert_eq!((start, end, step), (900, 2700, 900));
        assert_eq!(out, vec![2.0, 5.0]);
        let (mut start, mut end, mut step) = (900, 2700, 900);
        let out = reduce(Cf::Maximum, 300, &mut start, &mut end, &mut step, 1, &data).unwrap();
        assert_eq!(out, vec![3.0, 6.0]);
        // A misaligned start drops the partial first row and pads with NaN.
        let (mut start, mut end, mut step) = (1200, 2700, 900);
        let out = reduce(Cf::Average, 300, &mut start, &mut end, &mut step, 1, &data[1..]).unwrap();
        assert_eq!((start, end), (900, 2700));
        assert!(out[0].is_nan());
        assert_eq!(out[1], 5.0);
    }

    #[test]
    fn gcd_is_what_rrdtool_calls_lcd() {
        assert_eq!(gcd_of([300, 900]), 300);
        assert_eq!(gcd_of([600, 900, 1500]), 300);
        assert_eq!(gcd_of([60]), 60);
    }
}
