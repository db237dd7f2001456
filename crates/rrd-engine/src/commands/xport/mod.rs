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
//!
//! The files, one a stage a reader can follow on its own:
//! - this file: the public types, [`evaluate`] and [`xport`] (which chain
//!   the stages below), and the sampling of XPORT columns into the table;
//! - `parse`: the command line's elements, checked and parsed before any
//!   file is read, with RRDtool's messages;
//! - `source`: where DEFs get their rows ([`FetchSource`], [`LocalFiles`]);
//! - `eval`: the running of the parsed elements in order (fetches, CDEFs,
//!   VDEFs, SHIFTs);
//! - `series_ops`: the time-series operators a CDEF's RPN sees (variables,
//!   PREV, TIME, TREND, PREDICT, ...);
//! - `vdef`: the VDEF functions, parsed and computed;
//! - `write`: the XML and JSON writers ([`write_json`], [`write_xml`]).

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::fetch::MAX_FETCH_VALUES;

mod eval;
mod parse;
mod series_ops;
mod source;
mod vdef;
mod write;

use eval::{gcd_of, run, Series, Slot};
use parse::{parse_elements, Element};
pub use source::{FetchRequest, FetchSource, LocalFiles, Reduction};
pub use write::{write_json, write_xml};

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
