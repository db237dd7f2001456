//! Evaluation: every DEF fetched (identical fetches shared) and
//! consolidated to the global step, every CDEF run row by row over its
//! inputs, every VDEF and SHIFT applied, in element order.

use std::collections::HashMap;

use rrd_format::Cf;

use super::parse::{Def, Element, Parsed, ShiftBy};
use super::series_ops::{rpn_error, SeriesContext};
use super::vdef::vdef_calc;
use super::{FetchRequest, FetchSource, Reduction, SeriesData, VdefValue, XportRange};
use crate::error::{Error, Result, Unknown};
use crate::fetch::{FILL_NAN, MAX_FETCH_VALUES};
use crate::rpn::{Node, Program};

/// A variable: a DEF's data (possibly shared by several DEFs) or a CDEF's.
#[derive(Clone, Debug)]
pub(super) struct Series {
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) step: i64,
    /// Values per row (the DS count of a DEF's file, 1 for a CDEF).
    pub(super) ds_count: usize,
    /// Which value of a row is this variable's.
    pub(super) ds: usize,
    pub(super) data: std::rc::Rc<Vec<f64>>,
    /// A DEF's [`crate::fetch::FetchResult::past_end`]: what RRDtool's buffer holds one
    /// row after the data.
    pub(super) past_end: Option<std::rc::Rc<Vec<f64>>>,
}

impl Series {
    pub(super) fn to_data(&self) -> SeriesData {
        let values = (0..self.rows()).map(|row| self.value(row)).collect();
        SeriesData { start: self.start, end: self.end, step_secs: self.step, values }
    }

    pub(super) fn rows(&self) -> i64 {
        (self.end - self.start).checked_div(self.step).unwrap_or(0)
    }
    pub(super) fn value(&self, row: i64) -> f64 {
        if row < 0 || row >= self.rows() {
            return FILL_NAN;
        }
        self.data.get(row as usize * self.ds_count + self.ds).copied().unwrap_or(FILL_NAN)
    }

    /// [`Series::value`], and one row past the data what RRDtool's buffer
    /// holds there when it is known (PREDICT reads it at the last step).
    pub(super) fn value_in_buffer(&self, row: i64) -> f64 {
        match &self.past_end {
            Some(past) if row == self.rows() => past.get(self.ds).copied().unwrap_or(FILL_NAN),
            _ => self.value(row),
        }
    }
}

/// What an element left behind for later ones to read.
#[derive(Clone, Debug)]
pub(super) enum Slot {
    Series(Series),
    Value(VdefValue),
    /// XPORT elements define no variable.
    None,
}

impl Slot {
    pub(super) fn series(&self) -> Option<&Series> {
        match self {
            Slot::Series(s) => Some(s),
            _ => None,
        }
    }
}

/// Greatest common divisor of the steps, as RRDtool's `rrd_lcd` (which,
/// despite its name, computes the GCD).
pub(super) fn gcd_of(steps: impl IntoIterator<Item = i64>) -> i64 {
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

/// Fetches the DEFs (sharing identical fetches) and runs CDEFs and VDEFs
/// in order: what each element defines.
pub(super) fn run(range: &XportRange, parsed: &Parsed, source: &mut dyn FetchSource) -> Result<Vec<Slot>> {
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

/// A one-column series of `values` from `start`, for the tests.
#[cfg(test)]
pub(super) fn test_series(start: i64, step: i64, values: &[f64]) -> Series {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcd_is_what_rrdtool_calls_lcd() {
        assert_eq!(gcd_of([300, 900]), 300);
        assert_eq!(gcd_of([600, 900, 1500]), 300);
        assert_eq!(gcd_of([60]), 60);
    }
}
