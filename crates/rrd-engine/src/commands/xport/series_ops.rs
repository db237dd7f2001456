//! The time-series operators of a CDEF: [`SeriesContext`] gives the shared
//! RPN calculator ([`crate::rpn`]) each variable at its current row, PREV,
//! PREV(vname), COUNT, TIME, STEPWIDTH, LTIME, NEWDAY/NEWWEEK/NEWMONTH/
//! NEWYEAR, TREND/TRENDNAN and PREDICT/PREDICTSIGMA/PREDICTPERC.

use super::eval::{Series, Slot};
use crate::error::Error;
use crate::fetch::FILL_NAN;
use crate::numparse::c_int;
use crate::rpn::{Context, Node, Op, RpnError, Stack};
use rrd_lang::ctime;

/// The time series a CDEF step sees: each variable at its current row, the
/// outputs so far, the evaluation time and step.
pub(super) struct SeriesContext<'a> {
    pub(super) series: &'a [Slot],
    /// Current row of each variable (indexed like `series`).
    pub(super) cursors: &'a [i64],
    pub(super) output: &'a [f64],
    pub(super) time: i64,
    pub(super) step: i64,
    pub(super) clock: i64,
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
pub(super) fn rpn_error(e: RpnError) -> Error {
    match e {
        RpnError::NeedsTimeSeries { op } => {
            Error::invalid(format!("the RPN operator {op} is not supported by rrdscale xport yet"))
        }
        other => Error::invalid(other.rrdtool_message()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::eval::test_series as series;
    use super::super::parse::{parse_rpn, Names};
    use super::*;

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
}
