//! `update`: readings in, primary and consolidated data points out, with
//! RRDtool 1.7.2's arithmetic reproduced operation for operation.
//!
//! The math works on a [`Header`] in memory and reports the rows it
//! produces through [`RowSink`]; it never touches a file. [`update_file`]
//! is the file-backed driver: it reads the header, runs every argument,
//! then writes each changed row once (in file order) and the live header
//! once. That is the whole I/O of an update of a classic file: no data
//! rows are read.
//!
//! Holt-Winters files (the formulas are `hw`'s) also read rows of
//! their SEASONAL and DEVSEASONAL archives, through a [`RowReader`] the
//! caller gives ([`Updater::set_row_reader`]); the updater lays the rows it
//! already wrote in this call over what the reader returns, as rrdtool's
//! mmap would show them. When an argument's step wraps a seasonal archive
//! (burn-in) or passes its smoothing row, [`Updater::finish`] runs the
//! seasonal smoother once at the end of the call, rewriting whole seasonal
//! archives (reported through [`RowSink::smoothed_row`]).
//!
//! Semantics worth knowing (all observed in rrdtool 1.7.2):
//! - Arguments are applied in order; the first failing argument stops the
//!   call, and the effects of the arguments before it (and whatever the
//!   failing one changed before it failed) are kept, as rrdtool's mmap-based
//!   update keeps them.
//! - A gap of more than one step whose start is not on a step boundary is
//!   processed as two updates: first the open PDP, then the rest.
//! - An RRA advances by at most `row_cnt` rows per argument.
//! - Only the primary CDP value is refreshed for one-PDP archives when a
//!   single step elapsed; the secondary value keeps its old content.

use std::collections::BTreeMap;
use std::path::Path;

use rrd_format::{Cf, Dst, Header, CDP_PRIMARY_VAL, CDP_SECONDARY_VAL, PDP_UNKN_SEC_CNT, PDP_VAL};

use crate::consolidate::{self, CdpInput};
use crate::error::{Error, Result, Unknown};
use crate::numparse::{self, DNAN};
use crate::rrd::Rrd;
use crate::store::Store;

/// Receives the rows an update writes, in the order rrdtool writes them.
pub trait RowSink {
    /// Row `row_index` of RRA `rra_index` now holds `values`; `rra_time` is
    /// the time rrdtool's `updatev` reports for it.
    fn row(&mut self, rra_index: usize, row_index: u64, rra_time: i64, values: &[f64]);

    /// Row `row_index` of RRA `rra_index` was rewritten by the seasonal
    /// smoother at the end of the update (`updatev` does not report these).
    fn smoothed_row(&mut self, rra_index: usize, row_index: u64, values: &[f64]) {
        self.row(rra_index, row_index, 0, values);
    }
}

/// Reads `out.len() / ds_count` consecutive rows of an archive, starting at
/// a row index, from wherever the file lives. Holt-Winters updates read
/// rows of their SEASONAL and DEVSEASONAL archives through this. The
/// updater passes the layout of the header it updates (which it holds
/// mutably, so the reader cannot keep one of its own).
pub type RowReader<'a> =
    Box<dyn FnMut(&rrd_format::Layout, usize, u64, &mut [f64]) -> std::io::Result<()> + 'a>;

/// Collects the last value written to each row (file order) and, when
/// asked, the `updatev` summary.
#[derive(Default)]
pub struct RowCollector {
    pub rows: BTreeMap<(usize, u64), Vec<f64>>,
    /// `(rra_time, rra_index, ds values)` in write order, for `updatev`.
    pub summary: Option<Vec<(i64, usize, Vec<f64>)>>,
}

impl RowSink for RowCollector {
    fn row(&mut self, rra_index: usize, row_index: u64, rra_time: i64, values: &[f64]) {
        self.rows.insert((rra_index, row_index), values.to_vec());
        if let Some(s) = &mut self.summary {
            s.push((rra_time, rra_index, values.to_vec()));
        }
    }
    fn smoothed_row(&mut self, rra_index: usize, row_index: u64, values: &[f64]) {
        self.rows.insert((rra_index, row_index), values.to_vec());
    }
}

/// Options of `rrdtool update`.
#[derive(Clone, Debug, Default)]
pub struct UpdateOptions {
    /// `--template`: DS names, in the order the values are given.
    pub template: Option<String>,
    /// `--skip-past-updates`: silently skip arguments not after the last update.
    pub skip_past_updates: bool,
}

/// The current time, as `gettimeofday` gives it.
#[derive(Clone, Copy, Debug)]
pub struct Now {
    pub secs: i64,
    pub usecs: i64,
}

impl Now {
    pub fn system() -> Now {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Now { secs: d.as_secs() as i64, usecs: i64::from(d.subsec_micros()) }
    }
}

/// Why one argument failed. `TooEarly` is skipped under
/// `--skip-past-updates`; everything else stops the call.
#[derive(Debug)]
enum ArgError {
    TooEarly(String),
    Fatal(String),
}

/// Why [`Updater::apply`] or [`Updater::finish`] refused. The text is
/// rrdtool's own (callers prefix the file name), so `Display` is just it;
/// the kind lets a caller tell a value that came too early (which
/// `--skip-past-updates` and a cache of pending values treat differently)
/// from everything else, without matching on the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// The time is not after the file's last update ("illegal attempt to
    /// update using time … when last update time is …").
    #[error("{0}")]
    TooEarly(String),
    /// Anything else rrdtool refuses: a malformed argument, a value a data
    /// source cannot take, a seasonal row that could not be read.
    #[error("{0}")]
    Refused(String),
}

/// The seasonal rows looked up during one argument (rrdtool keeps two
/// buffers per argument, shared by every SEASONAL and DEVSEASONAL archive).
#[derive(Default)]
struct CoefBufs {
    last: Option<Vec<f64>>,
    next: Option<Vec<f64>>,
}

/// An update in progress on one file's header.
pub struct Updater<'h> {
    header: &'h mut Header,
    /// `tmpl_idx[k]` is the DS that the k-th value of an argument feeds.
    tmpl_idx: Vec<usize>,
    programs: Vec<Option<crate::rpn::Program>>,
    now: Now,
    /// Where rows of SEASONAL/DEVSEASONAL archives are read from (files
    /// without Holt-Winters archives never read rows).
    reader: Option<RowReader<'h>>,
    /// Rows of SEASONAL/DEVSEASONAL archives written by this updater, which
    /// later lookups must see (rrdtool's writes go straight to its mmap).
    written: std::collections::HashMap<(usize, u64), Vec<f64>>,
    /// Whether the seasonal smoother runs when the call ends.
    smooth_scheduled: bool,
}

impl<'h> Updater<'h> {
    pub fn new(header: &'h mut Header, opts: &UpdateOptions, now: Now) -> Result<Updater<'h>> {
        crate::hw::check_dependencies(header)
            .map_err(|e| Error::invalid(format!("this file cannot be updated: {e}")))?;
        let tmpl_idx = match &opts.template {
            None => (0..header.ds_count()).filter(|&i| header.ds()[i].dst != Dst::Compute).collect(),
            Some(t) => {
                let mut idx = Vec::new();
                for name in t.split(':') {
                    if idx.len() >= header.ds_count() {
                        return Err(Error::invalid("tmplt contains more DS definitions than RRD"));
                    }
                    let i = header
                        .ds_index(name)
                        .ok_or_else(|| Error::Unknown(Unknown::TemplateDs(name.to_string())))?;
                    idx.push(i);
                }
                idx
            }
        };
        let mut programs = Vec::with_capacity(header.ds_count());
        for ds in header.ds() {
            programs.push(if ds.dst == Dst::Compute {
                Some(crate::rpn::Program::from_par(&ds.par).map_err(|e| {
                    Error::invalid(format!(
                        "DS '{}' has an invalid COMPUTE expression: {e}",
                        ds.name.as_str()
                    ))
                })?)
            } else {
                None
            });
        }
        Ok(Updater {
            header,
            tmpl_idx,
            programs,
            now,
            reader: None,
            written: Default::default(),
            smooth_scheduled: false,
        })
    }

    /// Gives the updater access to the file's rows (needed by files with
    /// SEASONAL or DEVSEASONAL archives).
    pub fn set_row_reader(&mut self, reader: RowReader<'h>) {
        self.reader = Some(reader);
    }

    /// Reads `count` rows of `rra` from `first` (no wrap), as the file holds
    /// them now, including rows this update already wrote.
    fn read_rows(&mut self, rra: usize, first: u64, count: u64) -> Result<Vec<f64>, String> {
        let ds_count = self.header.ds_count();
        let mut out = vec![DNAN; count as usize * ds_count];
        let reader = self.reader.as_mut().ok_or_else(|| {
            "updating Holt-Winters archives needs the file's seasonal rows, and none were given".to_string()
        })?;
        reader(self.header.layout(), rra, first, &mut out)
            .map_err(|e| format!("reading seasonal row failed: {e}"))?;
        for k in 0..count {
            if let Some(v) = self.written.get(&(rra, first + k)) {
                out[k as usize * ds_count..(k as usize + 1) * ds_count].copy_from_slice(v);
            }
        }
        Ok(out)
    }

    /// `lookup_seasonal`: the row `offset` rows after the current one.
    fn lookup_seasonal(
        &mut self,
        rra: usize,
        offset: u64,
        buf: &mut Option<Vec<f64>>,
    ) -> Result<(), ArgError> {
        let row_cnt = self.header.rra()[rra].row_count;
        let row = self.header.rra_ptr()[rra].wrapping_add(offset) % row_cnt;
        *buf = Some(self.read_rows(rra, row, 1).map_err(ArgError::Fatal)?);
        Ok(())
    }

    /// `do_schedule_smooth`: whether this step wraps the seasonal archive
    /// (during burn-in, counted in the first data source's scratch) or
    /// passes its smoothing row (after burn-in).
    fn schedule_smooth(&mut self, rra: usize, elapsed: u64) -> bool {
        let ds_count = self.header.ds_count();
        let cur_row = self.header.rra_ptr()[rra];
        let row_cnt = self.header.rra()[rra].row_count;
        let smooth_idx = self.header.rra()[rra].par[rrd_format::RRA_SEASONAL_SMOOTH_IDX];
        let init = &mut self.header.cdp_mut()[rra * ds_count].scratch[rrd_format::CDP_INIT_SEASONAL];
        let reached = cur_row.wrapping_add(elapsed);
        if *init > crate::hw::BURNIN_CYCLES {
            if smooth_idx > cur_row {
                return reached >= smooth_idx;
            }
            return reached >= row_cnt && reached >= row_cnt.wrapping_add(smooth_idx);
        }
        if reached >= row_cnt {
            *init = init.wrapping_add(1);
            return *init != 0;
        }
        false
    }

    /// Ends the call: runs the seasonal smoother if one of the arguments
    /// scheduled it (at most once per call, as rrdtool does). Call it only
    /// when every argument succeeded; rrdtool skips it after an error.
    pub fn finish(&mut self, sink: &mut dyn RowSink) -> std::result::Result<(), UpdateError> {
        if !self.smooth_scheduled {
            return Ok(());
        }
        self.smooth_scheduled = false;
        let ds_count = self.header.ds_count();
        for rra in 0..self.header.rra_count() {
            if !matches!(self.header.rra()[rra].cf, Cf::Seasonal | Cf::DevSeasonal) {
                continue;
            }
            let row_cnt = self.header.rra()[rra].row_count;
            let mut values = self.read_rows(rra, 0, row_cnt).map_err(UpdateError::Refused)?;
            if crate::hw::apply_smoother(self.header, rra, &mut values) {
                for (row, v) in values.chunks_exact(ds_count).enumerate() {
                    sink.smoothed_row(rra, row as u64, v);
                    self.written.insert((rra, row as u64), v.to_vec());
                }
            }
        }
        Ok(())
    }

    /// Applies one argument (`time:v1:v2...` or `time@...`). `Ok(false)`
    /// means it was skipped as too early under `--skip-past-updates`.
    pub fn apply(
        &mut self,
        arg: &str,
        skip_past: bool,
        sink: &mut dyn RowSink,
    ) -> std::result::Result<bool, UpdateError> {
        match self.process_arg(arg, sink) {
            Ok(()) => Ok(true),
            Err(ArgError::TooEarly(_)) if skip_past => Ok(false),
            Err(ArgError::TooEarly(m)) => Err(UpdateError::TooEarly(m)),
            Err(ArgError::Fatal(m)) => Err(UpdateError::Refused(m)),
        }
    }

    fn process_arg(&mut self, arg: &str, sink: &mut dyn RowSink) -> Result<(), ArgError> {
        let (updvals, cur_secs, cur_usecs) = self.parse_arg(arg)?;
        let live = *self.header.live();
        let mut interval = (cur_secs - live.last_up) as f64 + (cur_usecs - live.last_up_usec) as f64 / 1e6;
        let mut pdp_new = self.update_pdp_prep(&updvals, interval).map_err(ArgError::Fatal)?;
        let mut bufs = CoefBufs::default();

        let step = self.header.pdp_step();
        let last_up = live.last_up as u64;
        let proc_pdp_st = last_up - last_up % step;
        let occu_pdp_age = cur_secs as u64 % step;
        let occu_pdp_st = cur_secs as u64 - occu_pdp_age;
        let (mut pre_int, post_int) = if occu_pdp_st > proc_pdp_st {
            let pre = (occu_pdp_st as i64 - live.last_up) as f64 - live.last_up_usec as f64 / 1e6;
            (pre, occu_pdp_age as f64 + cur_usecs as f64 / 1e6)
        } else {
            (interval, 0.0)
        };
        let mut proc_pdp_cnt = proc_pdp_st / step;
        let mut elapsed = (occu_pdp_st.wrapping_sub(proc_pdp_st)) / step;

        if elapsed == 0 {
            self.simple_update(interval, &pdp_new);
        } else {
            if elapsed > 1 {
                let sec_open_pdp = (pre_int as u64) % step;
                if sec_open_pdp > 0 {
                    let open = sec_open_pdp as f64;
                    let mut open_new = vec![DNAN; pdp_new.len()];
                    for (o, n) in open_new.iter_mut().zip(pdp_new.iter_mut()) {
                        if !n.is_nan() && interval > 0.0 {
                            *o = *n * open / interval;
                            *n -= *o;
                        }
                    }
                    let pdp_temp = self.process_all_pdp_st(open, open, 0.0, 1, &open_new)?;
                    let (steps, skip) = self.update_all_cdp_prep(1, proc_pdp_cnt, &pdp_temp, &mut bufs)?;
                    self.update_aberrant_cdps(1, &pdp_temp, &mut bufs)?;
                    self.write_to_rras(&steps, &skip, live.last_up + sec_open_pdp as i64, sink);
                    interval -= open;
                    pre_int -= open;
                    elapsed -= 1;
                    proc_pdp_cnt += 1;
                }
            }
            let pdp_temp = self.process_all_pdp_st(interval, pre_int, post_int, elapsed, &pdp_new)?;
            let (steps, skip) = self.update_all_cdp_prep(elapsed, proc_pdp_cnt, &pdp_temp, &mut bufs)?;
            self.update_aberrant_cdps(elapsed, &pdp_temp, &mut bufs)?;
            self.write_to_rras(&steps, &skip, cur_secs, sink);
        }
        self.header.live_mut().last_up = cur_secs;
        self.header.live_mut().last_up_usec = cur_usecs;
        Ok(())
    }

    /// Splits an argument into the time and one string per DS ("U" where the
    /// template gives none), and resolves the time.
    fn parse_arg(&self, arg: &str) -> Result<(Vec<String>, i64, i64), ArgError> {
        let ds_count = self.header.ds_count();
        let (sep_pos, at_style) = match arg.find('@') {
            Some(p) => (p, true),
            None => match arg.find(':') {
                Some(p) => (p, false),
                None => {
                    return Err(ArgError::Fatal(format!(
                        "expected timestamp not found in data source from {arg}"
                    )))
                }
            },
        };
        let time_str = &arg[..sep_pos];
        let mut updvals = vec!["U".to_string(); ds_count];
        // rrdtool splits the rest on ':' only (an '@' is just the first separator).
        let fields: Vec<&str> = arg[sep_pos + 1..].split(':').collect();
        let tmpl_cnt = self.tmpl_idx.len();
        if fields.len() > tmpl_cnt {
            return Err(ArgError::Fatal(format!(
                "found extra data on update argument: {}",
                fields[tmpl_cnt..].join(":")
            )));
        }
        if fields.len() != tmpl_cnt {
            return Err(ArgError::Fatal(format!(
                "expected {tmpl_cnt} data source readings (got {}) from {time_str}",
                fields.len()
            )));
        }
        for (k, f) in fields.iter().enumerate() {
            updvals[self.tmpl_idx[k]] = (*f).to_string();
        }

        let (secs, mut usecs);
        if at_style {
            let t = crate::attime::parse_time(time_str, self.now.secs)
                .map_err(|e| ArgError::Fatal(format!("ds time: {time_str}: {e}")))?;
            secs = t;
            usecs = 0;
        } else if time_str == "N" {
            secs = self.now.secs;
            usecs = self.now.usecs;
        } else {
            let mut t = numparse::parse_double(time_str).map_err(|e| {
                ArgError::Fatal(format!("error while parsing time in get_time_from_reading - {e}"))
            })?;
            if t < 0.0 {
                // rrdtool scales the microseconds by the float constant
                // 1e-6f, which is not 1e-6 as a double.
                t += self.now.secs as f64 + self.now.usecs as f64 * f64::from(1e-6f32);
            }
            // C's `time_t = floor(t)`: a time beyond 64 bits (or NaN)
            // becomes LONG_MIN, which the check below then refuses, with
            // that number in the message, as rrdtool does.
            secs = numparse::c_long(t.floor());
            usecs = numparse::c_long((t - secs as f64) * 1e6);
        }
        if self.header.version().0 < 3 {
            usecs = 0;
        }
        let live = self.header.live();
        if secs < live.last_up || (secs == live.last_up && usecs <= live.last_up_usec) {
            return Err(ArgError::TooEarly(format!(
                "illegal attempt to update using time {secs} when last update time is {} (minimum one second step)",
                live.last_up
            )));
        }
        Ok((updvals, secs, usecs))
    }

    /// Turns the readings into `pdp_new` (rate × seconds) and remembers
    /// them as `last_ds`. Mutates `last_ds` as it goes, so a failure keeps
    /// the changes made to the data sources before the failing one.
    fn update_pdp_prep(&mut self, updvals: &[String], interval: f64) -> Result<Vec<f64>, String> {
        let mut pdp_new = vec![DNAN; self.header.ds_count()];
        for (i, val) in updvals.iter().enumerate() {
            let ds = &self.header.ds()[i];
            let heartbeat = ds.heartbeat() as f64;
            let (dst, min, max) = (ds.dst, ds.min(), ds.max());
            let pdp = &mut self.header.pdp_mut()[i];
            if heartbeat < interval {
                pdp.set_last_ds("U");
            }
            if !val.starts_with('U') && dst != Dst::Compute && heartbeat >= interval {
                let mut rate = DNAN;
                let mut new = DNAN;
                match dst {
                    Dst::Counter | Dst::Derive => {
                        for (k, c) in val.bytes().enumerate() {
                            if k == 0 && dst == Dst::Derive && c == b'-' {
                                continue;
                            }
                            if !c.is_ascii_digit() {
                                let kind = if dst == Dst::Derive { "signed" } else { "unsigned" };
                                return Err(format!("not a simple {kind} integer: '{val}'"));
                            }
                        }
                        if !pdp.last_ds_str().starts_with('U') {
                            new = numparse::rrd_diff(val, pdp.last_ds_str());
                            if dst == Dst::Counter {
                                if new < 0.0 {
                                    new += 4_294_967_295.0;
                                }
                                if new < 0.0 {
                                    new += 18_446_744_069_414_584_320.0;
                                }
                            }
                            rate = new / interval;
                        }
                    }
                    Dst::Absolute => {
                        let v = numparse::parse_double(val)
                            .map_err(|e| format!("Function update_pdp_prep, case DST_ABSOLUTE - {e}"))?;
                        new = v;
                        rate = v / interval;
                    }
                    Dst::Gauge => {
                        let v = numparse::parse_double(val)
                            .map_err(|e| format!("Function update_pdp_prep, case DST_GAUGE - {e}"))?;
                        new = v * interval;
                        rate = v;
                    }
                    Dst::Dcounter | Dst::Dderive => {
                        if !pdp.last_ds_str().starts_with('U') {
                            let what = if dst == Dst::Dcounter { "DST_DCOUNTER" } else { "DST_DDERIVE" };
                            let newval = numparse::parse_double(val)
                                .map_err(|e| format!("Function update_pdp_prep, case {what} - {e}"))?;
                            let oldval = numparse::parse_double(pdp.last_ds_str())
                                .map_err(|e| format!("Function update_pdp_prep, case {what} - {e}"))?;
                            let reset = dst == Dst::Dcounter
                                && ((newval > 0.0 && oldval > newval) || (newval < 0.0 && newval > oldval));
                            if !reset {
                                new = newval - oldval;
                                rate = new / interval;
                            }
                        }
                    }
                    Dst::Compute => unreachable!("excluded above"),
                }
                if !rate.is_nan() && ((!max.is_nan() && rate > max) || (!min.is_nan() && rate < min)) {
                    new = DNAN;
                }
                pdp_new[i] = new;
            }
            pdp.set_last_ds(val);
        }
        Ok(pdp_new)
    }

    fn simple_update(&mut self, interval: f64, pdp_new: &[f64]) {
        for (pdp, &new) in self.header.pdp_mut().iter_mut().zip(pdp_new) {
            if new.is_nan() {
                let unkn = pdp.scratch[PDP_UNKN_SEC_CNT] as f64 + interval.floor();
                pdp.scratch[PDP_UNKN_SEC_CNT] = unkn as u64;
            } else {
                let val = f64::from_bits(pdp.scratch[PDP_VAL]);
                let sum = if val.is_nan() { new } else { val + new };
                pdp.scratch[PDP_VAL] = sum.to_bits();
            }
        }
    }

    fn process_all_pdp_st(
        &mut self,
        interval: f64,
        pre_int: f64,
        post_int: f64,
        elapsed: u64,
        pdp_new: &[f64],
    ) -> Result<Vec<f64>, ArgError> {
        let step = self.header.pdp_step();
        let diff_pdp_st = elapsed * step;
        let mut pdp_temp = vec![DNAN; self.header.ds_count()];
        for i in 0..self.header.ds_count() {
            let mrhb = self.header.ds()[i].heartbeat() as f64;
            let scratch = &mut self.header.pdp_mut()[i].scratch;
            let mut pre_unknown = 0.0;
            if pdp_new[i].is_nan() {
                pre_unknown = pre_int;
            } else {
                let mut val = f64::from_bits(scratch[PDP_VAL]);
                if val.is_nan() {
                    val = 0.0;
                }
                val += pdp_new[i] / interval * pre_int;
                scratch[PDP_VAL] = val.to_bits();
            }
            let unkn = scratch[PDP_UNKN_SEC_CNT];
            pdp_temp[i] = if interval > mrhb || (step as f64 / 2.0) < (unkn as i64) as f64 {
                DNAN
            } else {
                f64::from_bits(scratch[PDP_VAL]) / (diff_pdp_st.wrapping_sub(unkn) as f64 - pre_unknown)
            };
            if let Some(program) = &self.programs[i] {
                pdp_temp[i] = program.eval(&pdp_temp).map_err(|e| ArgError::Fatal(e.rrdtool_message()))?;
            }
            if pdp_new[i].is_nan() {
                scratch[PDP_UNKN_SEC_CNT] = post_int.floor() as u64;
                scratch[PDP_VAL] = DNAN.to_bits();
            } else {
                scratch[PDP_UNKN_SEC_CNT] = 0;
                scratch[PDP_VAL] = (pdp_new[i] / interval * post_int).to_bits();
            }
        }
        Ok(pdp_temp)
    }

    /// Consolidates `pdp_temp` into every RRA's CDP scratch area and returns
    /// how many rows each RRA advances, and which of them advance without
    /// writing (seasonal archives jumping over a gap).
    // `r` indexes the header and the results while `self` is borrowed mutably.
    #[allow(clippy::needless_range_loop)]
    fn update_all_cdp_prep(
        &mut self,
        elapsed: u64,
        proc_pdp_cnt: u64,
        pdp_temp: &[f64],
        bufs: &mut CoefBufs,
    ) -> Result<(Vec<u64>, Vec<bool>), ArgError> {
        let ds_count = self.header.ds_count();
        let mut steps = Vec::with_capacity(self.header.rra_count());
        let mut skip = vec![false; self.header.rra_count()];
        for r in 0..self.header.rra_count() {
            let rra = &self.header.rra()[r];
            let (cf, pdp_cnt, row_cnt, xff) = (rra.cf, rra.pdp_count, rra.row_count, rra.xff());
            let (start_pdp_offset, step_cnt) =
                consolidate::rows_completed(pdp_cnt, row_cnt, proc_pdp_cnt, elapsed);
            steps.push(step_cnt);
            if matches!(cf, Cf::Seasonal | Cf::DevSeasonal) {
                if step_cnt > 1 {
                    // A gap: the rows in between keep their coefficients;
                    // the scratch area jumps to the rows after the gap.
                    skip[r] = true;
                    self.lookup_seasonal(r, elapsed, &mut bufs.last)?;
                    self.lookup_seasonal(r, elapsed + 1, &mut bufs.next)?;
                }
                if self.schedule_smooth(r, elapsed) {
                    self.smooth_scheduled = true;
                }
            }
            for (d, &temp) in pdp_temp.iter().enumerate() {
                let idx = r * ds_count + d;
                if pdp_cnt > 1 {
                    let input = CdpInput {
                        cf,
                        pdp_value: temp,
                        rows_completed: step_cnt,
                        elapsed_pdps: elapsed,
                        start_pdp_offset,
                        pdp_count: pdp_cnt,
                        xff,
                    };
                    consolidate::update_cdp(&mut self.header.cdp_mut()[idx].scratch, &input);
                } else if elapsed > 2 {
                    self.reset_cdp(r, d, elapsed, temp, bufs)?;
                }
            }
        }
        Ok((steps, skip))
    }

    /// `reset_cdp`: a one-PDP archive after a gap of more than two steps.
    fn reset_cdp(
        &mut self,
        r: usize,
        d: usize,
        elapsed: u64,
        temp: f64,
        bufs: &CoefBufs,
    ) -> Result<(), ArgError> {
        let cf = self.header.rra()[r].cf;
        let window = self.header.rra()[r].par[rrd_format::RRA_WINDOW_LEN];
        let ds_count = self.header.ds_count();
        let s = &mut self.header.cdp_mut()[r * ds_count + d].scratch;
        match cf {
            Cf::Seasonal | Cf::DevSeasonal => {
                let (Some(last), Some(next)) = (&bufs.last, &bufs.next) else {
                    // rrdtool dereferences a buffer it never filled here.
                    return Err(ArgError::Fatal(
                        "a seasonal archive of one row cannot be updated across a gap".to_string(),
                    ));
                };
                s[rrd_format::CDP_HW_LAST_SEASONAL] = last[d].to_bits();
                s[rrd_format::CDP_HW_SEASONAL] = next[d].to_bits();
            }
            Cf::HwPredict | Cf::MhwPredict | Cf::DevPredict => {
                if cf != Cf::DevPredict {
                    s[rrd_format::CDP_NULL_COUNT] = s[rrd_format::CDP_NULL_COUNT].wrapping_add(elapsed);
                    s[rrd_format::CDP_LAST_NULL_COUNT] =
                        s[rrd_format::CDP_LAST_NULL_COUNT].wrapping_add(elapsed - 1);
                }
                s[CDP_PRIMARY_VAL] = DNAN.to_bits();
                s[CDP_SECONDARY_VAL] = DNAN.to_bits();
            }
            Cf::Failures => {
                // Steps missed in a gap are not failures.
                s[CDP_PRIMARY_VAL] = 0f64.to_bits();
                s[CDP_SECONDARY_VAL] = 0f64.to_bits();
                crate::hw::erase_violations(s, window);
            }
            _ => consolidate::fill_one_pdp(s, temp),
        }
        Ok(())
    }

    /// `update_aberrant_cdps`: for one or two elapsed steps, every one-PDP
    /// archive takes the PDP into its primary (then secondary) value, and
    /// the Holt-Winters archives update their state, archive by archive in
    /// file order within each step.
    fn update_aberrant_cdps(
        &mut self,
        elapsed: u64,
        pdp_temp: &[f64],
        bufs: &mut CoefBufs,
    ) -> Result<(), ArgError> {
        if !(1..3).contains(&elapsed) {
            return Ok(());
        }
        for pass in 0..elapsed {
            let slot = if pass == 0 { CDP_PRIMARY_VAL } else { CDP_SECONDARY_VAL };
            for r in 0..self.header.rra_count() {
                if self.header.rra()[r].pdp_count != 1 {
                    continue;
                }
                let cf = self.header.rra()[r].cf;
                if matches!(cf, Cf::Seasonal | Cf::DevSeasonal) {
                    self.lookup_seasonal(r, elapsed + 1 + pass, &mut bufs.next)?;
                }
                let coef = bufs.next.as_deref().unwrap_or(&[]);
                for (d, &temp) in pdp_temp.iter().enumerate() {
                    crate::hw::update_aberrant_cf(self.header, r, d, slot, temp, coef);
                }
            }
        }
        Ok(())
    }

    fn write_to_rras(&mut self, steps: &[u64], skip: &[bool], current_time: i64, sink: &mut dyn RowSink) {
        let ds_count = self.header.ds_count();
        let mut values = vec![0.0; ds_count];
        for (r, &step_cnt) in steps.iter().enumerate() {
            let seasonal = matches!(self.header.rra()[r].cf, Cf::Seasonal | Cf::DevSeasonal);
            let step_time = (self.header.rra()[r].pdp_count * self.header.pdp_step()) as i64;
            for k in 0..step_cnt {
                let row = self.header.advance_row(r);
                if skip[r] {
                    continue;
                }
                let (slot, step_subtract) =
                    if k == 0 { (CDP_PRIMARY_VAL, 1) } else { (CDP_SECONDARY_VAL, 2) };
                let remaining = step_cnt - k;
                // rrdtool computes this in unsigned arithmetic; wrapping
                // reproduces the times its updatev prints.
                let back = remaining.wrapping_sub(step_subtract).wrapping_mul(step_time as u64) as i64;
                let rra_time = (current_time - current_time.rem_euclid(step_time)).wrapping_sub(back);
                for (d, v) in values.iter_mut().enumerate() {
                    *v = f64::from_bits(self.header.cdp()[r * ds_count + d].scratch[slot]);
                }
                sink.row(r, row, rra_time, &values);
                if seasonal {
                    self.written.insert((r, row), values.clone());
                }
            }
        }
    }
}

/// The outcome of [`update_file`]: the error of the first failing argument
/// (if any; earlier arguments were still applied and written), and the
/// `updatev` summary when one was requested.
pub struct UpdateReport {
    pub error: Option<Error>,
    pub summary: Option<Vec<(i64, usize, Vec<f64>)>>,
}

/// Updates one file with `args`, writing each changed row once and the live
/// header once. Errors that prevent any work (cannot open, bad template) are
/// returned as `Err`; an argument that fails is reported in
/// [`UpdateReport::error`] after the earlier ones were written.
pub fn update_file(
    path: &Path,
    args: &[String],
    opts: &UpdateOptions,
    verbose: bool,
) -> Result<UpdateReport> {
    let mut rrd = Rrd::open(path, true)?;
    update_rrd(&mut rrd, args, opts, verbose, Now::system())
}

/// [`update_file`] over any store.
pub fn update_rrd<S: Store>(
    rrd: &mut Rrd<S>,
    args: &[String],
    opts: &UpdateOptions,
    verbose: bool,
    now: Now,
) -> Result<UpdateReport> {
    update_rrd_live(rrd, args, opts, verbose, now).map(|(report, _)| report)
}

/// [`update_rrd`], also returning the live header bytes it wrote (a caller
/// that keeps an image of the header updates it with them).
pub fn update_rrd_live<S: Store>(
    rrd: &mut Rrd<S>,
    args: &[String],
    opts: &UpdateOptions,
    verbose: bool,
    now: Now,
) -> Result<(UpdateReport, Vec<u8>)> {
    if args.is_empty() {
        return Err(Error::invalid("Not enough arguments"));
    }
    let mut sink = RowCollector { rows: BTreeMap::new(), summary: verbose.then(Vec::new) };
    let mut error = None;
    {
        let mut updater = Updater::new(&mut rrd.header, opts, now)?;
        updater.set_row_reader(row_reader(&rrd.store));
        for arg in args {
            if let Err(msg) = updater.apply(arg, opts.skip_past_updates, &mut sink) {
                error = Some(Error::Update { path: rrd.path.clone(), source: msg });
                break;
            }
        }
        if error.is_none() {
            if let Err(msg) = updater.finish(&mut sink) {
                error = Some(Error::Update { path: rrd.path.clone(), source: msg });
            }
        }
    }
    for ((r, row), values) in &sink.rows {
        rrd.write_row(*r, *row, values)?;
    }
    let live = rrd.write_live()?;
    Ok((UpdateReport { error, summary: sink.summary }, live))
}

/// A [`RowReader`] over a store.
pub fn row_reader<'a, S: Store + ?Sized>(store: &'a S) -> RowReader<'a> {
    Box::new(move |layout, rra, first, out| {
        let count = out.len() as u64 / layout.ds_count.max(1);
        if first + count > layout.row_counts[rra] {
            return Err(std::io::Error::other("row out of range"));
        }
        let mut buf = vec![0u8; out.len() * 8];
        if !buf.is_empty() {
            store.read_at(&mut buf, layout.row_off(rra, first))?;
        }
        out.copy_from_slice(&rrd_format::decode_values(&buf));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    //! The update arithmetic without a file and without rrdtool: cases the
    //! differential harness exercises (fractional times, counter wraps at
    //! 2^32 and 2^64, unknowns from the heartbeat, xff, catch-ups over
    //! several steps, every classic CF), with the expected values worked out
    //! by hand in the comments.
    use super::*;
    use rrd_format::{CDP_UNKN_PDP_CNT, CDP_VAL};

    /// A header with step 10 s, last update at 1000 (a row boundary for
    /// every archive below, so no row starts with unknown PDPs).
    fn header(defs: &[&str]) -> Header {
        crate::testfile::header_at(1000, 10, defs)
    }

    /// Runs `args` and returns `updatev`'s summary: (time, archive, values).
    fn run(h: &mut Header, args: &[&str]) -> Vec<(i64, usize, Vec<f64>)> {
        let mut sink = RowCollector { rows: BTreeMap::new(), summary: Some(Vec::new()) };
        let mut u = Updater::new(h, &UpdateOptions::default(), Now { secs: 5000, usecs: 0 }).unwrap();
        for a in args {
            assert!(u.apply(a, false, &mut sink).unwrap(), "{a} applied");
        }
        u.finish(&mut sink).unwrap();
        sink.summary.unwrap()
    }

    /// The values written to archive `rra`, DS `ds`, in write order.
    fn column(summary: &[(i64, usize, Vec<f64>)], rra: usize, ds: usize) -> Vec<f64> {
        summary.iter().filter(|s| s.1 == rra).map(|s| s.2[ds]).collect()
    }

    fn same(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn fractional_times_weight_each_reading_by_its_seconds() {
        let mut h = header(&["DS:g:GAUGE:20:U:U", "RRA:AVERAGE:0.5:1:10"]);
        let s = run(&mut h, &["1005:2", "1012.5:4", "1020:6"]);
        // [1000,1010]: 2 for 5 s and 4 for 5 s -> 3; [1010,1020]: 4 for
        // 2.5 s and 6 for 7.5 s -> (10 + 45) / 10 = 5.5.
        assert_eq!(s, vec![(1010, 0, vec![3.0]), (1020, 0, vec![5.5])]);
        assert_eq!((h.live().last_up, h.live().last_up_usec), (1020, 0));
    }

    #[test]
    fn counters_wrap_at_2_pow_32_and_2_pow_64() {
        let mut h = header(&["DS:c:COUNTER:20:U:U", "RRA:LAST:0.5:1:10"]);
        let s = run(
            &mut h,
            &["1010:4294967290", "1020:5", "1030:18446744073709549568", "1040:2048", "1050:2047"],
        );
        let got = column(&s, 0, 0);
        // The first reading has no predecessor: unknown. 2^32 wrap: rrdtool
        // adds 2^32 - 1 (not 2^32) to the negative difference:
        // 5 - 4294967290 + 4294967295 = 10 over 10 s.
        // 2^64 wrap: both corrections are added in doubles (the sum is not
        // exact at this magnitude), so the expectation is that double sum.
        let wrap64 =
            (2048.0 - 18_446_744_073_709_549_568.0 + 4_294_967_295.0 + 18_446_744_069_414_584_320.0) / 10.0;
        // 2047 after 2048: a decrease, read as a 2^32 wrap of 2^32 - 2.
        let small = (-1.0 + 4_294_967_295.0) / 10.0;
        assert!(same(&got[..2], &[DNAN, 1.0]) && same(&got[3..], &[wrap64, small]), "{got:?}");
        // 18446744073709549568 after 5 is an increase, huge but legal; the
        // digit-wise difference is not correctly rounded (rrdtool's
        // `rrd_diff`, tested in `numparse`), so only its magnitude here.
        let jump = (18_446_744_073_709_549_568.0 - 5.0) / 10.0;
        assert!(((got[2] - jump) / jump).abs() < 1e-15, "{got:?}");
    }

    #[test]
    fn a_gap_beyond_the_heartbeat_is_unknown_and_xff_decides_the_row() {
        let mut h = header(&[
            "DS:g:GAUGE:15:U:U",
            "RRA:AVERAGE:0.5:1:10",
            "RRA:AVERAGE:0.5:4:10",
            "RRA:AVERAGE:0.2:4:10",
        ]);
        // 1010: 8. 1030: 20 s after, beyond the 15 s heartbeat: the PDPs
        // at 1020 and 1030 are unknown. 1040: 4.
        let s = run(&mut h, &["1010:8", "1030:1", "1040:4"]);
        assert!(same(&column(&s, 0, 0), &[8.0, DNAN, DNAN, 4.0]));
        // Rows of 4 PDPs: 2 unknown of 4 is within xff 0.5 -> (8 + 4) / 2;
        // not within xff 0.2.
        assert_eq!(column(&s, 1, 0), vec![6.0]);
        assert!(same(&column(&s, 2, 0), &[DNAN]));
        assert_eq!(s.iter().find(|r| r.1 == 1).unwrap().0, 1040);
    }

    #[test]
    fn a_catch_up_writes_every_cf_for_every_row_it_crosses() {
        let mut h = header(&[
            "DS:g:GAUGE:100:U:U",
            "RRA:AVERAGE:0.5:1:10",
            "RRA:MAX:0.5:2:10",
            "RRA:MIN:0.5:2:10",
            "RRA:LAST:0.5:2:10",
            "RRA:AVERAGE:0.5:2:10",
        ]);
        // 1010: 7 (one PDP). 1055: 3 over 45 s, 40 of them in the PDPs
        // ending 1020..1050 (each 3), 5 s left open in the next PDP.
        let s = run(&mut h, &["1010:7", "1055:3"]);
        assert_eq!(column(&s, 0, 0), vec![7.0, 3.0, 3.0, 3.0, 3.0]);
        // Rows of two PDPs: [1010, 1020] = {7, 3} then [1030, 1040] = {3, 3};
        // the PDP of 1050 opens a third row.
        assert_eq!(column(&s, 1, 0), vec![7.0, 3.0]);
        assert_eq!(column(&s, 2, 0), vec![3.0, 3.0]);
        assert_eq!(column(&s, 3, 0), vec![3.0, 3.0]);
        assert_eq!(column(&s, 4, 0), vec![5.0, 3.0]);
        // The open row of the AVERAGE archive carries one PDP of 3; the
        // open PDP holds 5 s of 3.
        let cdp = &h.cdp()[4].scratch;
        assert_eq!((f64::from_bits(cdp[CDP_VAL]), cdp[CDP_UNKN_PDP_CNT]), (3.0, 0));
        assert_eq!(f64::from_bits(h.pdp()[0].scratch[PDP_VAL]), 15.0);
        // The primary row of the first update is stamped with its PDP's end.
        assert_eq!(s.iter().find(|r| r.1 == 1).unwrap().0, 1020);
        // Next: 9 at 1060. The PDP ending 1060 is 5 s of 3 and 5 s of 9,
        // 6; it closes the row {3, 6}: MAX 6, MIN 3, LAST 6, AVERAGE 4.5.
        let s = run(&mut h, &["1060:9"]);
        assert_eq!(column(&s, 0, 0), vec![6.0]);
        assert_eq!(column(&s, 1, 0), vec![6.0]);
        assert_eq!(column(&s, 2, 0), vec![3.0]);
        assert_eq!(column(&s, 3, 0), vec![6.0]);
        assert_eq!(column(&s, 4, 0), vec![4.5]);
    }

    #[test]
    fn an_update_not_after_the_last_is_refused_and_changes_nothing() {
        let mut h = header(&["DS:g:GAUGE:20:U:U", "RRA:AVERAGE:0.5:1:10"]);
        run(&mut h, &["1010:1"]);
        let before = h.clone();
        let mut sink = RowCollector::default();
        let mut u = Updater::new(&mut h, &UpdateOptions::default(), Now { secs: 5000, usecs: 0 }).unwrap();
        let err = u.apply("1010:2", false, &mut sink).unwrap_err();
        assert!(matches!(&err, UpdateError::TooEarly(m) if m.contains("minimum one second step")), "{err}");
        assert_eq!(u.apply("1009:2", true, &mut sink), Ok(false));
        assert!(sink.rows.is_empty());
        drop(u);
        assert_eq!(h.encode(), before.encode());
    }
}
