//! `xport`: DEF, CDEF, VDEF and XPORT elements evaluated over a time range
//! and written as XML or JSON, as RRDtool 1.7.2's `rrd_xport` does; and
//! [`evaluate`], the same data path for callers that draw (`rrd-graph`).
//!
//! The pipeline is RRDtool's graph data path:
//! 1. every DEF fetches its archive at the wished step (the global step, or
//!    its own `step=`), then is consolidated up to the global step when the
//!    archive is finer (`reduce=` picks the function, default the DEF's CF).
//!    Files are consolidated while they are read ([`crate::reduce`]), so a
//!    DEF holds about `(end - start) / step + 2` rows (the graph's width)
//!    whatever the archive's step and the range: memory per DEF is that
//!    plus a 512 KiB read buffer, not the archive rows the range spans;
//! 2. every CDEF runs over the latest start and earliest end of its inputs,
//!    at the greatest common divisor of their steps, each input advancing
//!    one row whenever the evaluation time is a multiple of its step;
//! 3. every VDEF reduces its DEF or CDEF to one value (and, for MAXIMUM,
//!    MINIMUM, FIRST and LAST, the time of that value); a CDEF that names a
//!    VDEF sees that value as a constant, as in RRDtool's `data_calc`;
//! 4. the XPORT columns are sampled at the greatest common divisor of their
//!    steps over the requested range.
//!
//! CDEFs are evaluated by the shared RPN calculator ([`crate::rpn`]); this
//! module supplies the time series: variables, PREV, PREV(vname), COUNT,
//! TIME, STEPWIDTH, LTIME, NEWDAY/NEWWEEK/NEWMONTH/NEWYEAR, TREND/TRENDNAN
//! and PREDICT/PREDICTSIGMA/PREDICTPERC.
//! SHIFT moves a DEF's or CDEF's rows in time (by seconds or a VDEF's
//! value, truncated to whole steps), in element order as RRDtool's
//! `data_calc` does.
//! PREDICT, PREDICTSIGMA, PREDICTPERC and NEWWEEK (the C locale's week,
//! from Sunday) too.
//! Deliberately absent (an error names them): every drawing element
//! (LINE, AREA, PRINT, ...;
//! `rrd-graph` parses those itself and hands only DEF/CDEF/VDEF/SHIFT
//! here).

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use rrd_format::Cf;

use crate::attime;
use crate::error::{Error, Result, Unknown};
use crate::fetch::{fetch, FetchResult, FILL_NAN, MAX_FETCH_VALUES};
use crate::numparse::c_int;
use crate::numparse::rrd_strtod;
use crate::reduce::{fetch_reduced, reduce_result};
use crate::rpn::{Context, Node, Op, Program, RpnError, Stack};
use crate::rrd::Rrd;
use rrd_lang::cformat::rrd_snprintf_e;
use rrd_lang::ctime;

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

/// The rows of one evaluated DEF or CDEF: row `i` covers the interval
/// `(start + i * step_secs, start + (i + 1) * step_secs]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesData {
    pub start: i64,
    pub end: i64,
    pub step_secs: i64,
    pub values: Vec<f64>,
}

/// What a VDEF computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VdefValue {
    pub value: f64,
    /// The end of the row the value came from (MAXIMUM, MINIMUM, LAST) or
    /// its start (FIRST); `None` for functions without a time and when
    /// every row was unknown (RRDtool's `never`).
    pub when: Option<i64>,
}

/// One evaluated variable.
#[derive(Clone, Debug, PartialEq)]
pub enum Variable {
    Series(SeriesData),
    Value(VdefValue),
}

/// Every DEF, CDEF and VDEF of an [`evaluate`] call, in definition order.
#[derive(Clone, Debug, Default)]
pub struct Evaluation {
    /// The step every DEF was consolidated to at least: `--step`, or the
    /// range divided by `max_rows` (the graph width) when that is larger.
    pub global_step_secs: i64,
    variables: Vec<(String, Variable)>,
    /// Where each name's first definition is in `variables`.
    index: HashMap<String, usize>,
}

impl Evaluation {
    fn new(global_step_secs: i64, variables: Vec<(String, Variable)>) -> Evaluation {
        let mut index = HashMap::with_capacity(variables.len());
        for (i, (name, _)) in variables.iter().enumerate() {
            index.entry(name.clone()).or_insert(i);
        }
        Evaluation { global_step_secs, variables, index }
    }

    /// The variable called `name` (the first definition wins, as in
    /// RRDtool's `find_var`), found in constant time.
    pub fn get(&self, name: &str) -> Option<&Variable> {
        self.index.get(name).map(|&i| &self.variables[i].1)
    }

    /// Variables in definition order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Variable)> {
        self.variables.iter().map(|(n, v)| (n.as_str(), v))
    }
}

/// The VDEF functions of RRDtool 1.7.2.
#[derive(Clone, Copy, Debug, PartialEq)]
enum VdefOp {
    Percent,
    PercentNan,
    Maximum,
    Average,
    Stdev,
    Minimum,
    Total,
    First,
    Last,
    LslSlope,
    LslInt,
    LslCorrel,
}

impl VdefOp {
    fn from_name(name: &str) -> Option<VdefOp> {
        Some(match name {
            "PERCENT" => VdefOp::Percent,
            "PERCENTNAN" => VdefOp::PercentNan,
            "MAXIMUM" => VdefOp::Maximum,
            "AVERAGE" => VdefOp::Average,
            "STDEV" => VdefOp::Stdev,
            "MINIMUM" => VdefOp::Minimum,
            "TOTAL" => VdefOp::Total,
            "FIRST" => VdefOp::First,
            "LAST" => VdefOp::Last,
            "LSLSLOPE" => VdefOp::LslSlope,
            "LSLINT" => VdefOp::LslInt,
            "LSLCORREL" => VdefOp::LslCorrel,
            _ => return None,
        })
    }
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
    /// A DEF's [`FetchResult::past_end`]: what RRDtool's buffer holds one
    /// row after the data.
    past_end: Option<std::rc::Rc<Vec<f64>>>,
}

impl Series {
    fn to_data(&self) -> SeriesData {
        let values = (0..self.rows()).map(|row| self.value(row)).collect();
        SeriesData { start: self.start, end: self.end, step_secs: self.step, values }
    }

    fn rows(&self) -> i64 {
        (self.end - self.start).checked_div(self.step).unwrap_or(0)
    }
    fn value(&self, row: i64) -> f64 {
        if row < 0 || row >= self.rows() {
            return FILL_NAN;
        }
        self.data.get(row as usize * self.ds_count + self.ds).copied().unwrap_or(FILL_NAN)
    }

    /// [`Series::value`], and one row past the data what RRDtool's buffer
    /// holds there when it is known (PREDICT reads it at the last step).
    fn value_in_buffer(&self, row: i64) -> f64 {
        match &self.past_end {
            Some(past) if row == self.rows() => past.get(self.ds).copied().unwrap_or(FILL_NAN),
            _ => self.value(row),
        }
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
    /// The DEF's own `:daemon=` address.
    daemon: Option<String>,
}

/// One DEF's read: the file, the consolidation function of the archive
/// wanted, the range and resolution asked for, and the DEF's own
/// `:daemon=` address, when it has one.
#[derive(Clone, Copy, Debug)]
pub struct FetchRequest<'a> {
    pub file: &'a str,
    pub cf: Cf,
    pub start: i64,
    pub end: i64,
    pub resolution_secs: u64,
    pub daemon: Option<&'a str>,
}

/// How a DEF's rows finer than its step are consolidated: to at least
/// `min_step` seconds a row, with `cf` (rrdtool's `rrd_reduce_data`).
#[derive(Clone, Copy, Debug)]
pub struct Reduction {
    pub min_step: i64,
    pub cf: Cf,
}

/// Where DEFs get their rows. [`LocalFiles`] reads the files; the CLI's
/// `--daemon` implementation asks a caching daemon (FETCH), as rrdtool's
/// graph and xport do, so pending values are seen without a flush.
pub trait FetchSource {
    /// The rows of the file's best archive for the request.
    fn fetch(&mut self, req: &FetchRequest) -> Result<FetchResult>;

    /// [`FetchSource::fetch`], then consolidated as `reduce` says when the
    /// archive is finer, as a DEF's rows are. The default consolidates the
    /// fetched rows; [`LocalFiles`] consolidates while reading, so a long
    /// range over a fine archive costs memory in the output rows only
    /// ([`crate::reduce`]).
    fn fetch_reduced(&mut self, req: &FetchRequest, reduce: Reduction) -> Result<FetchResult> {
        let got = self.fetch(req)?;
        reduce_result(got, reduce.min_step, reduce.cf)
    }
}

/// DEFs read their files directly (a DEF's `:daemon=` is ignored).
pub struct LocalFiles;

impl FetchSource for LocalFiles {
    fn fetch(&mut self, req: &FetchRequest) -> Result<FetchResult> {
        let rrd = Rrd::open(Path::new(req.file), false)?;
        fetch(&rrd, req.cf, req.start, req.end, req.resolution_secs)
    }

    fn fetch_reduced(&mut self, req: &FetchRequest, reduce: Reduction) -> Result<FetchResult> {
        let rrd = Rrd::open(Path::new(req.file), false)?;
        fetch_reduced(&rrd, req.cf, req.start, req.end, req.resolution_secs, reduce.min_step, reduce.cf)
    }
}

enum Element {
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
enum ShiftBy {
    Secs(i64),
    Vdef(usize),
}

/// What an element left behind for later ones to read.
#[derive(Clone, Debug)]
enum Slot {
    Series(Series),
    Value(VdefValue),
    /// XPORT elements define no variable.
    None,
}

impl Slot {
    fn series(&self) -> Option<&Series> {
        match self {
            Slot::Series(s) => Some(s),
            _ => None,
        }
    }
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

/// The names the elements parsed so far define, one per element ("" for
/// an XPORT), with the element that defines each first: RRDtool's
/// `find_var` finds the first definition. Looked up in constant time, so
/// thousands of elements parse in linear time.
#[derive(Default)]
struct Names {
    list: Vec<String>,
    first: HashMap<String, usize>,
}

impl Names {
    fn push(&mut self, name: &str) {
        self.first.entry(name.to_string()).or_insert(self.list.len());
        self.list.push(name.to_string());
    }

    /// The element that first defined `name`.
    fn position(&self, name: &str) -> Option<usize> {
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
fn parse_rpn(expr: &str, vars: &Names) -> Result<Program> {
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

/// The time series a CDEF step sees: each variable at its current row, the
/// outputs so far, the evaluation time and step.
struct SeriesContext<'a> {
    series: &'a [Slot],
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
            .and_then(Slot::series)
            .ok_or(RpnError::MissingValue { index, available: self.series.len() })
    }
}

/// Local time of `t` (for LTIME and NEW*), as the C library has it.
fn local_tm(t: i64) -> Option<ctime::Tm> {
    ctime::localtime(t)
}

/// RRDtool's `tzoffset`: local minus UTC wall-clock time, with its day
/// correction that compares the day of the year before the year (so across
/// New Year it is off by two days, which LTIME inherits).
fn tz_offset(t: i64) -> i64 {
    let Some(gm) = ctime::gmtime(t) else { return 0 };
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
        position: usize,
        nodes: &[Node],
        stack: &mut Stack,
    ) -> Result<(), RpnError> {
        if matches!(op, Op::Trend | Op::TrendNan) {
            return self.trend(op, position, nodes, stack);
        }
        if matches!(op, Op::Predict | Op::PredictSigma | Op::PredictPerc) {
            return self.predict(op, position, nodes, stack);
        }
        let day_changed = |pick: fn(&ctime::Tm) -> i32| -> f64 {
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
            // The first day of the week is the locale's; rrdscale runs in
            // the C locale, whose week starts on Sunday.
            Op::NewWeek => match (local_tm(self.time), local_tm(self.time - self.step)) {
                (Some(a), Some(b)) if a.tm_wday == FIRST_WEEKDAY && a.tm_wday != b.tm_wday => 1.0,
                _ => 0.0,
            },
            Op::NewMonth => day_changed(|tm| tm.tm_mon),
            Op::NewYear => day_changed(|tm| tm.tm_year),
            _ => return Err(RpnError::NeedsTimeSeries { op: op.name() }),
        };
        stack.push(value)
    }
}

/// `tm_wday` of the first day of the week in the C locale (Sunday), as
/// RRDtool's `find_first_weekday` finds it there.
const FIRST_WEEKDAY: i32 = 0;

impl SeriesContext<'_> {
    /// RRDtool's data pointer of variable `var` while its expression runs:
    /// one row past the current one when the time is a multiple of its
    /// step (the variable's node has already moved it on).
    fn data_row(&self, var: usize, step: i64) -> i64 {
        let cursor = self.cursors[var];
        if self.time % step == 0 {
            cursor + 1
        } else {
            cursor
        }
    }

    /// PREDICT, PREDICTSIGMA and PREDICTPERC, as RRDtool's `rpn_calc`:
    /// `shift1,...,shiftN,N,window,[percentile,]x,OP` (or `step,-N,...`
    /// for N shifts of `0, step, 2 step, ...`): the values of `x` around
    /// each shift back in time (`window` seconds from it), averaged, their
    /// standard deviation, or a percentile (negative: the nearest value,
    /// else interpolated). Only rows the CDEF has already passed count.
    fn predict(
        &mut self,
        op: Op,
        position: usize,
        nodes: &[Node],
        stack: &mut Stack,
    ) -> Result<(), RpnError> {
        // Not after a variable: RRDtool reads a step of 0 and finds no rows.
        let var = match position.checked_sub(1).and_then(|p| nodes.get(p)) {
            Some(Node::Variable(v)) => Some(*v),
            _ => None,
        };
        let underflow = || RpnError::StackUnderflow { op: op.name() };
        // RRDtool's stack pointer: the variable's value stays on top and
        // is replaced by the result at the end.
        let mut top = stack.depth() as i64 - 1;
        let mut percentile = f64::NAN;
        if op == Op::PredictPerc {
            if top < 1 {
                return Err(underflow());
            }
            top -= 1;
            percentile = stack.get(top);
            if percentile.abs() > 100.0 {
                return Err(RpnError::PredictPercentile { value: percentile });
            }
            percentile /= 100.0;
        }
        if top < 2 {
            return Err(underflow());
        }
        top -= 1;
        let window = c_int(stack.get(top));
        top -= 1;
        let shifts = c_int(stack.get(top));
        if top < i64::from(shifts) {
            return Err(underflow());
        }
        top -= if shifts < 0 { 1 } else { i64::from(shifts) };
        let series = var.map(|v| self.series(v)).transpose()?;
        let step = series.map_or(1, |s| s.step.max(1));
        let locstep = if series.is_some() { ((window as f32) / (step as f32)).ceil() as i32 } else { -1 };
        let row = var.map_or(0, |v| self.data_row(v, step));
        let produced = self.output.len() as i64;
        let (mut sum, mut sum2, mut count) = (0.0, 0.0, 0usize);
        let mut values = Vec::new();
        for shift in 0..shifts.unsigned_abs() as i64 {
            let shift_secs =
                if shifts < 0 { c_int(shift as f64 * stack.get(top)) } else { c_int(stack.get(top + shift)) };
            if shift_secs < 0 {
                return Err(RpnError::NegativeShiftStep { step: shift_secs });
            }
            let shift_rows = ((shift_secs as f32) / (step as f32)).ceil() as i64;
            for i in 0..=i64::from(locstep.max(-1)) {
                let offset = shift_rows + i;
                if let (true, Some(series)) = (offset >= 0 && offset < produced, series) {
                    let v = series.value_in_buffer(row - offset);
                    if !v.is_nan() {
                        sum += v;
                        sum2 += v * v;
                        values.push(v);
                        count += 1;
                    }
                }
            }
        }
        let mut value = FILL_NAN;
        match op {
            Op::Predict if count > 0 => value = sum / count as f64,
            Op::PredictSigma if count > 1 => {
                let v = count as f64 * sum2 - sum * sum;
                if v >= 0.0 {
                    value = (v / ((count as f32) as f64 * ((count as f32) as f64 - 1.0))).sqrt();
                }
            }
            Op::PredictPerc if count > 0 => {
                crate::rpn::eval::glibc_msort(&mut values);
                let idxf = percentile * ((count as f32) as f64 - 1.0);
                if percentile < 0.0 {
                    value = values[(idxf.abs().round() as usize).min(count - 1)];
                } else {
                    let idx = idxf.floor() as usize;
                    let delta = idxf - idx as f64;
                    value = values[idx.min(count - 1)];
                    if delta != 0.0 {
                        value += (values[(idx + 1).min(count - 1)] - values[idx.min(count - 1)]) * delta;
                    }
                }
            }
            _ => {}
        }
        while stack.depth() as i64 - 1 > top {
            stack.pop();
        }
        stack.set(top, value)
    }

    /// TREND and TRENDNAN: the variable named just before the window
    /// length, averaged over the last `ceil(window / step)` of its rows up
    /// to the current one (TREND lets one unknown row make the average
    /// unknown, TRENDNAN skips unknown rows). Unknown until the CDEF has
    /// produced enough rows, counted as RRDtool counts them (in `float`).
    fn trend(&mut self, op: Op, position: usize, nodes: &[Node], stack: &mut Stack) -> Result<(), RpnError> {
        stack.need(1, op)?;
        let var = match position.checked_sub(2).and_then(|p| nodes.get(p)) {
            Some(Node::Variable(v)) => *v,
            _ => return Err(RpnError::MalformedTrend),
        };
        let window = stack.pop();
        let series = self.series(var)?;
        let step = series.step;
        // C's time_t conversion of the window (NaN and overflow become 0
        // here, where RRDtool's result is undefined).
        let mut dur = if window.is_finite() { window as i64 } else { 0 };
        let needed = ((dur as f32) / (step as f32)).ceil();
        let value = if (self.output.len() as f32 + 1.0) >= needed {
            // RRDtool reads backwards from the variable's data pointer,
            // which has already moved past the current row when the
            // evaluation time is a multiple of the variable's step.
            let cursor = self.cursors[var];
            let mut row = if self.time % step == 0 { cursor } else { cursor - 1 };
            let ignore_nan = op == Op::Trend;
            let (mut sum, mut count) = (0.0, 0u64);
            loop {
                let v = series.value(row);
                row -= 1;
                if ignore_nan || !v.is_nan() {
                    sum += v;
                    count += 1;
                }
                dur -= step;
                if dur <= 0 {
                    break;
                }
            }
            if count == 0 {
                FILL_NAN
            } else {
                sum / count as f64
            }
        } else {
            FILL_NAN
        };
        let top = stack.depth() as i64 - 1;
        stack.set(top, value)
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

/// What makes two DEFs share one fetch (RRDtool's `gdes_fetch_key`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
fn fetch_def(def: &Def, global_step: i64, source: &mut dyn FetchSource) -> Result<(Series, Vec<String>)> {
    let req = FetchRequest {
        file: &def.file,
        cf: def.cf,
        start: def.start,
        end: def.end,
        resolution_secs: def.step.max(0) as u64,
        daemon: def.daemon.as_deref(),
    };
    let reduce = Reduction { min_step: def.step.max(global_step), cf: def.reduce.unwrap_or(def.cf) };
    let got = source.fetch_reduced(&req, reduce)?;
    let ds_count = got.ds_names.len();
    let series = Series {
        start: got.start,
        end: got.end,
        step: got.step_secs as i64,
        ds_count,
        ds: 0,
        data: std::rc::Rc::new(got.data),
        past_end: got.past_end.map(std::rc::Rc::new),
    };
    Ok((series, got.ds_names))
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
struct Parsed {
    global_step: i64,
    elements: Vec<Element>,
    /// The variable name each element defines ("" for XPORT).
    names: Vec<String>,
}

/// Parses a VDEF's `source,FUNCTION` or `source,param,FUNCTION` as
/// RRDtool's `parse_vdef` and `vdef_parse` do, with their messages.
fn parse_vdef(vname: &str, body: &str, names: &Names, parsed: &[Element]) -> Result<Element> {
    let Some((source, function)) = body.split_once(',') else {
        return Err(Error::invalid(format!("Comma expected in VDEF definition {body}")));
    };
    let var = names
        .position(source)
        .ok_or_else(|| Error::invalid(format!("Not a valid vname: {source} in line {body}")))?;
    if !matches!(parsed[var], Element::Def(_) | Element::Cdef(_)) {
        return Err(Error::invalid(format!("variable '{source}' not DEF nor CDEF in VDEF '{body}'")));
    }
    let is_func = |s: &str| !s.is_empty() && s.len() <= 29 && s.bytes().all(|c| c.is_ascii_uppercase());
    let (param, name) = match function.split_once(',') {
        Some((p, f))
            if !p.is_empty()
                && p.len() <= 40
                && p.bytes().all(|c| c.is_ascii_digit() || b".e+-".contains(&c))
                && rrd_strtod(p).1 == p.len()
                && is_func(f) =>
        {
            (rrd_strtod(p).0, f)
        }
        _ if is_func(function) => (f64::NAN, function),
        _ => return Err(Error::invalid(format!("Unknown function string '{function}' in VDEF '{vname}'"))),
    };
    let op = VdefOp::from_name(name)
        .ok_or_else(|| Error::invalid(format!("Unknown function '{name}' in VDEF '{vname}'\n")))?;
    match op {
        VdefOp::Percent | VdefOp::PercentNan => {
            if param.is_nan() {
                return Err(Error::invalid(format!("Function '{name}' needs parameter in VDEF '{vname}'\n")));
            }
            if !(0.0..=100.0).contains(&param) {
                return Err(Error::invalid(format!(
                    "Parameter '{param:.6}' out of range in VDEF '{vname}'\n"
                )));
            }
        }
        _ if !param.is_nan() => {
            return Err(Error::invalid(format!("Function '{name}' needs no parameter in VDEF '{vname}'\n")))
        }
        _ => {}
    }
    Ok(Element::Vdef { var, op, param })
}

/// Parses every element first, as RRDtool does before fetching anything.
fn parse_elements(range: &XportRange, elements: &[String]) -> Result<Parsed> {
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
                    let fields = split_fields(body);
                    let [file, ds_name, cf, options @ ..] = fields.as_slice() else {
                        return Err(Error::invalid(format!("Invalid DEF '{text}'")));
                    };
                    let (mut step, mut reduce_cf, mut start, mut end) = (global_step, None, None, None);
                    let mut daemon = None;
                    for opt in options {
                        match opt.split_once('=') {
                            Some(("step", v)) => {
                                step =
                                    v.parse().map_err(|_| Error::invalid(format!("bad step in '{text}'")))?
                            }
                            Some(("reduce", v)) => reduce_cf = Some(parse_cf(v)?),
                            Some(("start", v)) => start = Some(v.to_string()),
                            Some(("end", v)) => end = Some(v.to_string()),
                            Some(("daemon", v)) => daemon = Some(v.to_string()),
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
                        daemon,
                    })
                };
                names.push(vname);
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
                names.push("");
                parsed.push(Element::Xport { var, legend });
            }
            "SHIFT" => {
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
                        return Err(Error::invalid(format!(
                            "Offset cannot be a (C)DEF: '{offset}' in line '{text}'\n"
                        )))
                    }
                    None => ShiftBy::Secs(
                        parse_long(offset)
                            .ok_or_else(|| Error::invalid(format!("error parsing number {offset}")))?,
                    ),
                };
                names.push("");
                parsed.push(Element::Shift { var, by });
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

/// RRDtool's `getLong` (base 10): `strtol` that must read the whole text.
fn parse_long(s: &str) -> Option<i64> {
    let long = crate::numparse::strtol(s, 10);
    (long.consumed > 0 && long.consumed == s.len()).then_some(long.value)
}

/// RRDtool's `vdef_calc` over the rows of `src`.
fn vdef_calc(src: &Series, op: VdefOp, param: f64) -> VdefValue {
    let rows: Vec<f64> = (0..src.rows()).map(|r| src.value(r)).collect();
    let end_of = |row: usize| Some(src.start + (row as i64 + 1) * src.step);
    let none = |value: f64| VdefValue { value, when: None };
    match op {
        VdefOp::Percent | VdefOp::PercentNan => {
            let mut sorted: Vec<f64> =
                rows.iter().copied().filter(|v| op == VdefOp::Percent || !v.is_nan()).collect();
            if sorted.is_empty() {
                return none(FILL_NAN);
            }
            // RRDtool's order: unknown first, then -inf, finite values, +inf.
            let rank = |v: f64| match () {
                _ if v.is_nan() => 0,
                _ if v == f64::NEG_INFINITY => 1,
                _ if v == f64::INFINITY => 3,
                _ => 2,
            };
            sorted.sort_by(|a, b| {
                rank(*a).cmp(&rank(*b)).then(a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal))
            });
            let field = (param * (sorted.len() - 1) as f64 / 100.0).round() as usize;
            none(sorted[field.min(sorted.len() - 1)])
        }
        VdefOp::Maximum | VdefOp::Minimum => {
            let Some(first) = rows.iter().position(|v| !v.is_nan()) else {
                return none(FILL_NAN);
            };
            let mut best = VdefValue { value: rows[first], when: end_of(first) };
            for (row, &v) in rows.iter().enumerate().skip(first) {
                let better = if op == VdefOp::Maximum { v > best.value } else { v < best.value };
                if v.is_finite() && better {
                    best = VdefValue { value: v, when: end_of(row) };
                }
            }
            best
        }
        VdefOp::Total | VdefOp::Average | VdefOp::Stdev => {
            let finite: Vec<f64> = rows.iter().copied().filter(|v| v.is_finite()).collect();
            if finite.is_empty() {
                return none(FILL_NAN);
            }
            let sum: f64 = finite.iter().sum();
            let count = finite.len() as f64;
            none(match op {
                VdefOp::Total => sum * src.step as f64,
                VdefOp::Average => sum / count,
                _ => {
                    let average = sum / count;
                    let squares: f64 = finite.iter().map(|v| (v - average).powi(2)).sum();
                    (squares / count).sqrt()
                }
            })
        }
        VdefOp::First => match rows.iter().position(|v| !v.is_nan()) {
            Some(row) => VdefValue { value: rows[row], when: Some(src.start + row as i64 * src.step) },
            None => none(FILL_NAN),
        },
        VdefOp::Last => match rows.iter().rposition(|v| !v.is_nan()) {
            Some(row) => VdefValue { value: rows[row], when: end_of(row) },
            None => none(FILL_NAN),
        },
        VdefOp::LslSlope | VdefOp::LslInt | VdefOp::LslCorrel => {
            let (mut n, mut sx, mut sy, mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            for (x, &y) in rows.iter().enumerate() {
                if y.is_finite() {
                    let x = x as f64;
                    n += 1.0;
                    sx += x;
                    sxx += x * x;
                    sxy += x * y;
                    sy += y;
                    syy += y * y;
                }
            }
            if n == 0.0 {
                return none(FILL_NAN);
            }
            let slope = (sx * sy - n * sxy) / (sx * sx - n * sxx);
            none(match op {
                VdefOp::LslSlope => slope,
                VdefOp::LslInt => (sy - slope * sx) / n,
                _ => (sxy - sx * sy / n) / ((sxx - sx * sx / n) * (syy - sy * sy / n)).sqrt(),
            })
        }
    }
}

/// Fetches the DEFs (sharing identical fetches) and runs CDEFs and VDEFs
/// in order: what each element defines.
fn run(range: &XportRange, parsed: &Parsed, source: &mut dyn FetchSource) -> Result<Vec<Slot>> {
    let mut series: Vec<Slot> = Vec::with_capacity(parsed.elements.len());
    let mut fetched: HashMap<FetchKey, (Series, std::rc::Rc<Vec<String>>)> = HashMap::new();
    // Scratch for CDEFs: each variable's current row.
    let mut cursors: Vec<i64> = Vec::new();
    // (variable, shift in seconds) of every SHIFT run so far.
    let mut shifts: Vec<(usize, i64)> = Vec::new();
    for element in &parsed.elements {
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
                let (base, ds_names) = match fetched.get(&key) {
                    Some((base, names)) => (base.clone(), names.clone()),
                    None => {
                        let (base, names) = fetch_def(def, parsed.global_step, source)?;
                        let names = std::rc::Rc::new(names);
                        fetched.insert(key, (base.clone(), names.clone()));
                        (base, names)
                    }
                };
                let ds = ds_names.iter().position(|n| *n == def.ds_name).ok_or_else(|| {
                    Error::Unknown(Unknown::DefDs { ds: def.ds_name.clone(), file: def.file.clone() })
                })?;
                series.push(Slot::Series(Series { ds, ..base }));
            }
            Element::Cdef(program) => {
                let out = eval_cdef(program, &series, range.now, &mut cursors)?;
                series.push(Slot::Series(out));
            }
            Element::Vdef { var, op, param } => {
                let src = series[*var].series().ok_or_else(|| Error::invalid("VDEF of a VDEF"))?;
                series.push(Slot::Value(vdef_calc(src, *op, *param)));
            }
            Element::Xport { .. } => series.push(Slot::None),
            Element::Shift { var, by } => {
                // As RRDtool's data_calc: undo the variable's current shift,
                // then move it by the offset truncated to whole steps.
                let wanted = match *by {
                    ShiftBy::Secs(s) => s,
                    ShiftBy::Vdef(v) => match &series[v] {
                        // C's double-to-time_t conversion (unknown: 0 here).
                        Slot::Value(val) if val.value.is_finite() => val.value as i64,
                        _ => 0,
                    },
                };
                if let Slot::Series(s) = &mut series[*var] {
                    let previous = shifts.iter().rev().find(|(v, _)| v == var).map_or(0, |(_, d)| *d);
                    let shift = if s.step > 0 { wanted / s.step * s.step } else { 0 };
                    s.start = s.start.saturating_sub(previous).saturating_add(shift);
                    s.end = s.end.saturating_sub(previous).saturating_add(shift);
                    shifts.push((*var, shift));
                }
                series.push(Slot::None);
            }
        }
    }
    Ok(series)
}

/// Runs one CDEF over the variables defined so far. `cursors` is scratch
/// space kept across CDEFs (only the entries of the variables read are
/// set and read), so a CDEF costs time in its own inputs and rows, not in
/// the number of elements before it.
fn eval_cdef(program: &Program, series: &[Slot], now_clock: i64, cursors: &mut Vec<i64>) -> Result<Series> {
    // A VDEF read by a CDEF is a constant there (RRDtool turns the node
    // into a number, PREV(vdef) included).
    let nodes: Vec<Node> = program
        .nodes()
        .iter()
        .map(|n| match *n {
            Node::Variable(v) | Node::PrevOf(v) => match series.get(v) {
                Some(Slot::Value(value)) => Node::Number(value.value),
                _ => *n,
            },
            other => other,
        })
        .collect();
    let program = Program::from_nodes(nodes);
    // The variables read (a DEF's, or an earlier CDEF's).
    let mut vars: Vec<usize> = program
        .nodes()
        .iter()
        .filter_map(|n| match *n {
            Node::Variable(v) | Node::PrevOf(v) => Some(v),
            _ => None,
        })
        .filter(|v| series.get(*v).and_then(Slot::series).is_some())
        .collect();
    vars.sort_unstable();
    vars.dedup();
    let inputs: Vec<&Series> = vars.iter().filter_map(|v| series[*v].series()).collect();
    if inputs.is_empty() {
        return Err(Error::invalid("rpn expressions without DEF or CDEF variables are not supported"));
    }
    // The latest start, the earliest end, the common step.
    let start = inputs.iter().map(|s| s.start).max().expect("non-empty");
    let end = inputs.iter().map(|s| s.end).min().expect("non-empty");
    let step = gcd_of(inputs.iter().map(|s| s.step));
    if step <= 0 {
        return Err(Error::invalid("CDEF step is zero"));
    }
    // Each variable starts at the row covering the CDEF's start and moves
    // on whenever the time is a multiple of its step.
    cursors.resize(series.len(), 0);
    for &v in &vars {
        let s = series[v].series().expect("filtered above");
        cursors[v] = (start - s.start).max(0) / s.step;
    }
    let rows = ((end - start) / step).max(0) as usize;
    if rows > MAX_FETCH_VALUES {
        return Err(Error::invalid(format!("CDEF needs {rows} rows, more than rrdscale computes")));
    }
    let mut out = Vec::with_capacity(rows);
    let mut t = start + step;
    while t <= end {
        let mut ctx = SeriesContext { series, cursors, output: &out, time: t, step, clock: now_clock };
        let v = program.eval_with(&mut ctx).map_err(rpn_error)?;
        out.push(v);
        for &v in &vars {
            if t % series[v].series().expect("filtered above").step == 0 {
                cursors[v] += 1;
            }
        }
        t += step;
    }
    Ok(Series { start, end, step, ds_count: 1, ds: 0, data: std::rc::Rc::new(out), past_end: None })
}

/// Evaluates DEF, CDEF and VDEF elements (XPORT elements are checked and
/// skipped) over `range`, for callers that draw rather than export.
pub fn evaluate(range: &XportRange, elements: &[String]) -> Result<Evaluation> {
    evaluate_with(range, elements, &mut LocalFiles)
}

/// [`evaluate`], with DEFs' rows from `source`.
pub fn evaluate_with(
    range: &XportRange,
    elements: &[String],
    source: &mut dyn FetchSource,
) -> Result<Evaluation> {
    let parsed = parse_elements(range, elements)?;
    let slots = run(range, &parsed, source)?;
    let variables = parsed
        .names
        .iter()
        .zip(slots)
        .filter_map(|(name, slot)| match slot {
            Slot::Series(s) => Some((name.clone(), Variable::Series(s.to_data()))),
            Slot::Value(v) => Some((name.clone(), Variable::Value(v))),
            Slot::None => None,
        })
        .collect();
    Ok(Evaluation::new(parsed.global_step, variables))
}

/// Runs an xport over `elements` (`DEF:...`, `CDEF:...`, `VDEF:...`,
/// `XPORT:...`).
pub fn xport(range: &XportRange, elements: &[String]) -> Result<XportResult> {
    xport_with(range, elements, &mut LocalFiles)
}

/// [`xport`], with DEFs' rows from `source`.
pub fn xport_with(
    range: &XportRange,
    elements: &[String],
    source: &mut dyn FetchSource,
) -> Result<XportResult> {
    if elements.is_empty() {
        return Err(Error::invalid("can't make an xport without contents"));
    }
    let parsed = parse_elements(range, elements)?;
    let series = run(range, &parsed, source)?;
    let columns: Vec<(usize, String)> = parsed
        .elements
        .iter()
        .filter_map(|e| match e {
            Element::Xport { var, legend } => Some((*var, legend.clone())),
            _ => None,
        })
        .collect();
    if columns.is_empty() {
        return Err(Error::invalid("no XPORT found, nothing to do"));
    }
    let col_series: Vec<&Series> = columns
        .iter()
        .map(|(v, _)| series[*v].series().ok_or_else(|| Error::invalid("XPORT of an XPORT")))
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
        s.push_str(&format!("      <entry>{}</entry>\n", crate::numparse::trim_c_space(legend)));
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
        s.push_str(crate::numparse::trim_c_space(legend));
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
            past_end: None,
        }
    }

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

    #[test]
    fn series_context_serves_variables_and_time_operators() {
        let s = vec![Slot::Series(series(0, 10, &[1.0, f64::NAN, 4.0]))];
        let run = |expr: &str, row: i64, output: &[f64]| {
            let program = parse_rpn(expr, &Names::from(&["a"][..])).unwrap();
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
        // TREND needs ceil(window / step) rows of output first, then
        // averages back from the current row (TRENDNAN skipping unknowns).
        assert!(run("a,3600,TREND", 0, &[]).unwrap().is_nan());
        assert_eq!(run("a,10,TREND", 0, &[]).unwrap(), 1.0);
        assert!(run("a,20,TREND", 2, &[0.0, 0.0]).unwrap().is_nan());
        assert_eq!(run("a,20,TRENDNAN", 2, &[0.0, 0.0]).unwrap(), 4.0);
        assert_eq!(run("a,30,TRENDNAN", 2, &[0.0, 0.0]).unwrap(), 2.5);
        assert_eq!(run("1,20,TREND", 2, &[0.0, 0.0]).unwrap_err().to_string(), "malformed trend arguments");
    }

    #[test]
    fn vdef_functions_reduce_a_series() {
        let s = series(1000, 100, &[3.0, f64::NAN, 7.0, 1.0, f64::NAN]);
        let v = |op, param| vdef_calc(&s, op, param);
        assert_eq!(v(VdefOp::Maximum, f64::NAN), VdefValue { value: 7.0, when: Some(1300) });
        assert_eq!(v(VdefOp::Minimum, f64::NAN), VdefValue { value: 1.0, when: Some(1400) });
        assert_eq!(v(VdefOp::First, f64::NAN), VdefValue { value: 3.0, when: Some(1000) });
        assert_eq!(v(VdefOp::Last, f64::NAN), VdefValue { value: 1.0, when: Some(1400) });
        assert_eq!(v(VdefOp::Average, f64::NAN).value, 11.0 / 3.0);
        assert_eq!(v(VdefOp::Total, f64::NAN).value, 1100.0);
        assert_eq!(v(VdefOp::PercentNan, 50.0).value, 3.0);
        // PERCENT counts unknown rows (sorted first).
        assert_eq!(v(VdefOp::Percent, 100.0).value, 7.0);
        assert!(v(VdefOp::Percent, 0.0).value.is_nan());
        let empty = series(0, 10, &[f64::NAN, f64::NAN]);
        assert_eq!(vdef_calc(&empty, VdefOp::Maximum, f64::NAN).when, None);
        assert!(vdef_calc(&empty, VdefOp::Average, f64::NAN).value.is_nan());
    }

    #[test]
    fn vdef_parse_messages_are_rrdtools() {
        let names = Names::from(&["a"][..]);
        let parsed = vec![Element::Cdef(Program::from_nodes(vec![Node::Number(1.0)]))];
        let err = |body: &str| parse_vdef("m", body, &names, &parsed).err().unwrap().to_string();
        assert_eq!(err("a"), "Comma expected in VDEF definition a");
        assert_eq!(err("zz,MAXIMUM"), "Not a valid vname: zz in line zz,MAXIMUM");
        assert_eq!(err("a,FOO"), "Unknown function 'FOO' in VDEF 'm'\n");
        assert_eq!(err("a,PERCENT"), "Function 'PERCENT' needs parameter in VDEF 'm'\n");
        assert_eq!(err("a,101,PERCENT"), "Parameter '101.000000' out of range in VDEF 'm'\n");
        assert_eq!(err("a,5,MAXIMUM"), "Function 'MAXIMUM' needs no parameter in VDEF 'm'\n");
        assert_eq!(err("a,MAXIMUM,1"), "Unknown function string 'MAXIMUM,1' in VDEF 'm'");
        assert!(matches!(
            parse_vdef("m", "a,95.5,PERCENT", &names, &parsed),
            Ok(Element::Vdef { var: 0, op: VdefOp::Percent, .. })
        ));
    }

    #[test]
    fn gcd_is_what_rrdtool_calls_lcd() {
        assert_eq!(gcd_of([300, 900]), 300);
        assert_eq!(gcd_of([600, 900, 1500]), 300);
        assert_eq!(gcd_of([60]), 60);
    }
}
