//! The structural changes of `tune` (`DS:`, `DEL:`, `RRA:`, `DELRRA:`,
//! `RRA#i:+n|-n|=n`, `--step`): the whole file rebuilt in memory as an
//! [`Image`] and written to a temporary file renamed over the original.

use std::path::Path;

use rrd_format::{
    CdpPrep, Cf, DsDef, Header, HeaderParts, Par, PdpPrep, RraDef, Version, CDP_PRIMARY_VAL,
    CDP_SECONDARY_VAL, CDP_UNKN_PDP_CNT, CDP_VAL, LAST_DS_LEN, PDP_UNKN_SEC_CNT, PDP_VAL,
};

use super::err;
use super::tuner::init_cdp;
use crate::commands::rra_def::{handle_dependent_rras, parse_rra_def};
use crate::create;
use crate::error::Result;
use crate::numparse::{self, DNAN};
use crate::rrd::Rrd;
use crate::store::Store;
use rrd_lang::cscan;

/// A whole RRD in memory: the header and every value, archives in file
/// order and each archive's rows in file order.
#[derive(Clone, Debug)]
pub struct Image {
    pub header: Header,
    pub values: Vec<f64>,
}

impl Image {
    /// Reads every archive of an open file.
    pub fn read<S: Store>(rrd: &Rrd<S>) -> Result<Image> {
        let mut values = Vec::with_capacity((rrd.layout().file_len - rrd.layout().data_off) as usize / 8);
        for rra in 0..rrd.header.rra_count() {
            values.extend(rrd.read_rra(rra)?);
        }
        Ok(Image { header: rrd.header.clone(), values })
    }

    /// Writes the image to `path` atomically (temporary file + rename).
    pub fn write(&self, path: &Path) -> Result<()> {
        self.write_in(&crate::root::Root::Anywhere, path)
    }

    /// [`Image::write`] beneath `root`: the temporary file is made and
    /// renamed relative to the descriptor of `path`'s directory, opened
    /// beneath the root ([`crate::newfile::NewFiles::in_root`]).
    pub fn write_in(&self, root: &crate::root::Root, path: &Path) -> Result<()> {
        create::write_file_in(root, path, &self.header, false, |out| {
            let mut buf = Vec::with_capacity(1 << 16);
            for chunk in self.values.chunks(8192) {
                buf.clear();
                rrd_format::encode_values(chunk, &mut buf);
                out.write_all(&buf)?;
            }
            Ok(())
        })
    }
}

/// One archive operation of a structural change.
#[derive(Clone, Debug, PartialEq)]
pub struct RraModOp {
    /// `+`, `-`, `=` (rows; `DELRRA` is `=0`) or `a` (add an archive).
    pub op: u8,
    /// The archive (as numbered before the change); -1 for additions.
    pub index: i32,
    pub row_count: u32,
    /// `RRA:...` for additions.
    pub def: Option<String>,
    final_row_count: u32,
}

/// The structural arguments of one `tune` call, in the order given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModifyPlan {
    /// Names from `DEL:name`.
    pub delete_ds: Vec<String>,
    /// Whole `DS:...` arguments.
    pub add_ds: Vec<String>,
    pub rra_ops: Vec<RraModOp>,
}

impl ModifyPlan {
    pub fn is_empty(&self) -> bool {
        self.delete_ds.is_empty() && self.add_ds.is_empty() && self.rra_ops.is_empty()
    }
}

/// Sorts the arguments after the file name into a plan (`handle_modify`'s
/// parsing), with rrdtool's messages for what it cannot parse.
pub fn parse_modify_args(args: &[String]) -> Result<ModifyPlan> {
    let mut plan = ModifyPlan::default();
    for arg in args {
        if let Some(name) = arg.strip_prefix("DEL:").filter(|r| !r.is_empty()) {
            plan.delete_ds.push(name.to_string());
        } else if arg.starts_with("DS:") && arg.len() > 3 {
            plan.add_ds.push(arg.clone());
        } else if let Some(spec) = arg.strip_prefix("RRA#").filter(|r| !r.is_empty()) {
            let parsed = cscan::unsigned(spec).and_then(|(index, rest)| {
                let rest = rest.strip_prefix(':')?;
                let sign = rest.chars().next()?;
                let (number, _) = cscan::unsigned(&rest[sign.len_utf8()..])?;
                Some((index, sign, number))
            });
            let (index, sign, number) = parsed.ok_or_else(|| err("Failed to parse RRA# command"))?;
            if !matches!(sign, '=' | '-' | '+') {
                return Err(err(format!("Failed to parse RRA# command: invalid operation: {sign}")));
            }
            plan.rra_ops.push(RraModOp {
                op: sign as u8,
                index: index as i32,
                row_count: number,
                def: None,
                final_row_count: 0,
            });
        } else if arg.starts_with("RRA:") && arg.len() > 4 {
            plan.rra_ops.push(RraModOp {
                op: b'a',
                index: -1,
                row_count: 0,
                def: Some(arg.clone()),
                final_row_count: 0,
            });
        } else if let Some(index) = arg.strip_prefix("DELRRA:").filter(|r| !r.is_empty()) {
            let index = numparse::atoi(index);
            if index < 0 {
                return Err(err("DELRRA requires a non-negative, integer argument"));
            }
            plan.rra_ops.push(RraModOp { op: b'=', index, row_count: 0, def: None, final_row_count: 0 });
        } else {
            return Err(err(format!("unparseable argument: {arg}")));
        }
    }
    Ok(plan)
}

#[derive(Clone, Copy, PartialEq)]
enum DsOp {
    Copy,
    Delete,
    Add,
}

/// An archive of the input that may fill rows or scratch of another.
struct Candidate {
    index: usize,
    value_base: usize,
}

/// `find_candidate_rras` with `select_for_modify`: archives of the same CF,
/// or AVERAGE ones, finest step first and then the longest.
fn find_candidates(inp: &Image, tofill: &RraDef) -> Vec<Candidate> {
    let h = &inp.header;
    let mut out = Vec::new();
    let mut rows_before = 0u64;
    for (i, other) in h.rra().iter().enumerate() {
        if other.cf == tofill.cf || other.cf == Cf::Average {
            out.push(Candidate { index: i, value_base: rows_before as usize * h.ds().len() });
        }
        rows_before += other.row_count;
    }
    // glibc's qsort is a stable merge sort here, and so is `sort_by`.
    out.sort_by(|a, b| {
        let (ra, rb) = (&h.rra()[a.index], &h.rra()[b.index]);
        if ra.pdp_count == rb.pdp_count {
            rb.row_count.cmp(&ra.row_count)
        } else {
            ra.pdp_count.cmp(&rb.pdp_count)
        }
    });
    out
}

/// `a % b` made non-negative (rrdtool's `positive_mod`, on `int`s).
fn positive_mod(a: i32, b: i32) -> i32 {
    if b == 0 {
        return 0;
    }
    let x = a.wrapping_rem(b);
    if x < 0 {
        x + b
    } else {
        x
    }
}

/// What row times are computed from: the step and the last update of a
/// header, whether built (`HeaderParts`) or validated (`Header`).
#[derive(Clone, Copy)]
struct TimeBase {
    step: u64,
    last_up: i64,
}

impl From<&Header> for TimeBase {
    fn from(h: &Header) -> TimeBase {
        TimeBase { step: h.pdp_step(), last_up: h.live().last_up }
    }
}

impl From<&HeaderParts> for TimeBase {
    fn from(h: &HeaderParts) -> TimeBase {
        TimeBase { step: h.pdp_step, last_up: h.live.last_up }
    }
}

/// Seconds covered by one row of `rra`, as the C `int` rrdtool keeps it in.
fn timeslot(h: TimeBase, rra: &RraDef) -> i32 {
    rra.pdp_count.wrapping_mul(h.step) as i32
}

/// `end_time_for_row`: the end of the interval row `row` stands for, when
/// the archive's newest row is `cur_row`.
fn end_time_for_row(h: TimeBase, rra: &RraDef, cur_row: i32, row: i32) -> i64 {
    let slot = timeslot(h, rra);
    if slot == 0 {
        return 0;
    }
    let past = positive_mod(cur_row.wrapping_sub(row), rra.row_count as i32);
    let last_up = h.last_up;
    (last_up - last_up % i64::from(slot)) - i64::from(past.wrapping_mul(slot))
}

/// `row_for_time`: the row of `rra` whose interval holds `req_time`, or -1.
fn row_for_time(h: TimeBase, rra: &RraDef, cur_row: i32, req_time: i64) -> i32 {
    let slot = timeslot(h, rra);
    if slot == 0 {
        return -1;
    }
    let ts = i64::from(slot);
    let mut req = req_time;
    let delta = req % ts;
    if delta > 0 {
        req += ts - delta;
    }
    let mut last_up = h.last_up;
    let delta = req % ts;
    if delta > 0 {
        last_up += ts - delta;
    }
    if req > last_up {
        return -1;
    }
    let oldest = (last_up as i32).wrapping_sub((rra.row_count as i32).wrapping_mul(slot));
    if req <= i64::from(oldest) {
        return -1;
    }
    let past = ((last_up - req) / ts) as i32;
    if past >= rra.row_count as i32 {
        return -1;
    }
    positive_mod(cur_row.wrapping_sub(past), rra.row_count as i32)
}

/// `populate_row`: fills the still-unknown values of rows
/// `start..start + count` of a new or grown archive (`values` holds its
/// rows, newest at `cur_row`) from the input's archives. Only the classic
/// consolidation functions are filled.
#[allow(clippy::too_many_arguments)]
fn populate_rows(
    inp: &Image,
    out: &HeaderParts,
    ds_map: &[i32],
    new_rra: &RraDef,
    cur_row: i32,
    values: &mut [f64],
    start: i32,
    count: i32,
) {
    if inp.header.rra().is_empty() || !new_rra.cf.is_classic() {
        return;
    }
    let candidates = find_candidates(inp, new_rra);
    let ih = &inp.header;
    let in_ds = ih.ds().len();
    let out_ds = out.ds.len();
    let new_slot = new_rra.pdp_count.wrapping_mul(out.pdp_step) as i64;
    for ri in 0..count {
        let row = start + ri;
        let row_end = end_time_for_row(out.into(), new_rra, cur_row, row);
        let row_start = row_end - new_slot + 1;
        for c in &candidates {
            let r = &ih.rra()[c.index];
            let cand_cur = ih.rra_ptr()[c.index] as i32;
            let mut first = row_for_time(ih.into(), r, cand_cur, row_start);
            let mut last = row_for_time(ih.into(), r, cand_cur, row_end);
            if first == -1 && last != -1 {
                first = cand_cur;
            } else if first != -1 && last == -1 {
                last = ((i64::from(cand_cur) - 1) as u64 % r.row_count) as i32;
            } else if first == -1 && last == -1 {
                continue;
            }
            let mut cand_rows = last - first + 1;
            if cand_rows < 0 {
                cand_rows = (cand_rows as u64).wrapping_add(r.row_count) as i32;
            }
            let cand_slot = f64::from(timeslot(ih.into(), r));
            for (k, &in_k) in ds_map.iter().enumerate() {
                let idx = row as usize * out_ds + k;
                if idx >= values.len() || !values[idx].is_nan() {
                    continue;
                }
                let Ok(in_k) = usize::try_from(in_k) else { continue };
                let (mut acc, mut result, mut covered) = (DNAN, DNAN, 0.0f64);
                let mut cand_row = first as u64;
                for _ in 0..cand_rows {
                    let v = inp.values[c.value_base + cand_row as usize * in_ds + in_k];
                    cand_row = (cand_row + 1) % r.row_count;
                    if v.is_nan() {
                        continue;
                    }
                    match new_rra.cf {
                        Cf::Average => {
                            acc = if acc.is_nan() { v * cand_slot } else { acc + v * cand_slot };
                            covered += cand_slot;
                            result = acc / covered;
                        }
                        Cf::Minimum => {
                            acc = if acc.is_nan() || v <= acc { v } else { acc };
                            result = acc;
                        }
                        Cf::Maximum => {
                            acc = if acc.is_nan() || v >= acc { v } else { acc };
                            result = acc;
                        }
                        _ => {
                            acc = v;
                            result = v;
                        }
                    }
                }
                values[idx] = result;
            }
        }
    }
}

/// `prepare_CDPs`: the scratch area of a new archive `curr`, primed from
/// the finest fitting archive of the input so that the next update
/// continues the interval in progress.
fn prepare_cdps(
    inp: &Image,
    out: &mut HeaderParts,
    curr: usize,
    rows_before: usize,
    ds_map: &[i32],
    values: &[f64],
) {
    let rra_def = out.rra[curr].clone();
    let candidates = find_candidates(inp, &rra_def);
    let ih = &inp.header;
    let chosen =
        candidates.iter().find(|c| ih.rra()[c.index].pdp_count == 1 || ih.rra()[c.index].cf == Cf::Average);
    let out_ds = out.ds.len();
    let in_ds = ih.ds().len();
    for (i, &mapped) in ds_map.iter().enumerate() {
        let mut s: Par = [0; 10];
        init_cdp(out.live.last_up, out.pdp_step, &rra_def, &out.pdp[i], &mut s);
        if let (Some(c), Ok(mapped)) = (chosen, usize::try_from(mapped)) {
            let cand = &ih.rra()[c.index];
            let cand_cur = ih.rra_ptr()[c.index] as i32;
            let last_up = ih.live().last_up;
            let slot = i64::from(rra_def.pdp_count.wrapping_mul(ih.pdp_step()) as i32);
            if slot != 0 {
                let delta = last_up % slot;
                let end_time = if delta != 0 { last_up - delta + slot } else { last_up };
                let start_time = end_time - slot + 1;
                let start_row = row_for_time(ih.into(), cand, cand_cur, start_time);
                let end_row = if end_time >= last_up {
                    cand_cur
                } else {
                    row_for_time(ih.into(), cand, cand_cur, end_time)
                };
                let mut count = end_row - start_row + 1;
                if end_row < start_row {
                    count = (count as u64).wrapping_add(cand.row_count) as i32;
                }
                s = [0; 10];
                // rrdtool indexes the value array with a row count here.
                let curr_idx = rows_before + out_ds * out.rra_ptr[curr] as usize + i;
                s[CDP_PRIMARY_VAL] = values.get(curr_idx).copied().unwrap_or(DNAN).to_bits();
                s[CDP_VAL] = 0.0f64.to_bits();
                let cand_value = |row: u64| inp.values[c.value_base + row as usize * in_ds + mapped];
                if start_row == -1 {
                    s[CDP_SECONDARY_VAL] = ih.cdp()[c.index * in_ds + mapped].scratch[CDP_PRIMARY_VAL];
                } else {
                    let pre_start = if start_row == 0 { cand.row_count - 1 } else { start_row as u64 - 1 };
                    s[CDP_SECONDARY_VAL] = cand_value(pre_start).to_bits();
                    for j in 0..count.max(0) as u64 {
                        let v = cand_value((start_row as u64 + j) % cand.row_count);
                        if v.is_nan() {
                            s[CDP_UNKN_PDP_CNT] = s[CDP_UNKN_PDP_CNT].wrapping_add(1);
                        } else {
                            let cdp = f64::from_bits(s[CDP_VAL]);
                            s[CDP_VAL] = consolidate(cdp, v, rra_def.cf).to_bits();
                        }
                    }
                }
            }
        }
        let idx = curr * out_ds + i;
        out.cdp[idx].scratch = s;
    }
}

/// `calculate_cdp_val` for one elapsed PDP.
fn consolidate(cdp: f64, v: f64, cf: Cf) -> f64 {
    if cdp.is_nan() {
        return v;
    }
    match cf {
        Cf::Average => cdp + v,
        Cf::Minimum => {
            if v < cdp {
                v
            } else {
                cdp
            }
        }
        Cf::Maximum => {
            if v > cdp {
                v
            } else {
                cdp
            }
        }
        _ => v,
    }
}

/// `handle_rra_defs`: the kept archives' definitions, with their new row
/// counts (recorded in `ops`), and their scratch areas, an added DS's
/// initialised.
fn handle_rra_defs(ih: &Header, ops: &mut [RraModOp], ds_ops: &[DsOp], out: &mut HeaderParts) {
    let in_ds = ih.ds().len();
    for (j, in_rra) in ih.rra().iter().enumerate() {
        let mut final_rows = in_rra.row_count as i32;
        if let Some(op) = ops.iter_mut().find(|o| o.index == j as i32) {
            match op.op {
                b'=' => final_rows = op.row_count as i32,
                b'-' => final_rows = final_rows.wrapping_sub(op.row_count as i32),
                b'+' => final_rows = final_rows.wrapping_add(op.row_count as i32),
                _ => {}
            }
            final_rows = final_rows.max(0);
            op.final_row_count = final_rows as u32;
        }
        if final_rows == 0 {
            continue;
        }
        let mut def = in_rra.clone();
        def.row_count = final_rows as u64;
        let out_index = out.rra.len();
        out.rra.push(def);
        out.rra_ptr.push(final_rows as u64 - 1);
        let mut out_k = 0;
        for (i, op) in ds_ops.iter().enumerate() {
            match op {
                DsOp::Copy => out.cdp.push(ih.cdp()[j * in_ds + i].clone()),
                DsOp::Add => {
                    let mut s = [0; 10];
                    init_cdp(out.live.last_up, out.pdp_step, &out.rra[out_index], &out.pdp[out_k], &mut s);
                    out.cdp.push(CdpPrep { scratch: s });
                }
                DsOp::Delete => continue,
            }
            out_k += 1;
        }
    }
}

/// `mod_rras`: the data of the kept archives, oldest row first, cut or
/// grown as `ops` say (grown rows filled from the other archives).
fn mod_rras(
    inp: &Image,
    ops: &[RraModOp],
    ds_ops: &[DsOp],
    ds_map: &[i32],
    out: &HeaderParts,
    total_rows: u64,
) -> Vec<f64> {
    let ih = &inp.header;
    let (in_ds, out_ds) = (ih.ds().len(), out.ds.len());
    let mut values = vec![DNAN; total_rows as usize * out_ds];
    let (mut in_base, mut out_base, mut out_rra) = (0usize, 0usize, 0usize);
    for (rra_index, in_rra) in ih.rra().iter().enumerate() {
        let in_values = in_rra.row_count as usize * in_ds;
        let op = ops.iter().find(|o| o.index == rra_index as i32);
        if op.is_some_and(|o| o.final_row_count == 0) {
            // Skip the deleted archive's data too, so that the archives
            // after it read their own (rrdtool 1.7.2 does not: see the
            // module docs).
            in_base += in_values;
            continue;
        }
        let in_rows = in_rra.row_count;
        let out_rows = out.rra[out_rra].row_count;
        let out_values = out_rows as usize * out_ds;
        let (mut ii, mut oi) = (0u64, 0u64);
        if let Some(op) = op {
            let (mut kind, mut count) = (op.op, op.row_count);
            if kind == b'=' {
                if u64::from(count) < in_rows {
                    count = (in_rows - u64::from(count)) as u32;
                    kind = b'-';
                } else if u64::from(count) > in_rows {
                    count = (u64::from(count) - in_rows) as u32;
                    kind = b'+';
                }
            }
            match kind {
                b'-' => ii = u64::from(count),
                b'+' => {
                    // New rows go in front (they are the oldest) and are
                    // filled from the other archives where possible.
                    oi = u64::from(count).min(out_rows);
                    // The archive's own cur_row (its last row). rrdtool
                    // looks it up by the old index in the new list, which
                    // names another archive once an earlier one is deleted.
                    let cur_row = out.rra_ptr[out_rra] as i32;
                    let rra_def = out.rra[out_rra].clone();
                    populate_rows(
                        inp,
                        out,
                        ds_map,
                        &rra_def,
                        cur_row,
                        &mut values[out_base..out_base + out_values],
                        0,
                        oi as i32,
                    );
                }
                _ => {}
            }
        }
        let in_cur = ih.rra_ptr()[rra_index];
        while ii < in_rows && oi < out_rows {
            let real_ii = ((ii + in_cur + 1) % in_rows) as usize;
            let mut jj = 0;
            for (j, op) in ds_ops.iter().enumerate() {
                let dst = out_base + oi as usize * out_ds + jj;
                match op {
                    DsOp::Copy => values[dst] = inp.values[in_base + real_ii * in_ds + j],
                    DsOp::Add => values[dst] = DNAN,
                    DsOp::Delete => continue,
                }
                jj += 1;
            }
            ii += 1;
            oi += 1;
        }
        in_base += in_values;
        out_base += out_values;
        out_rra += 1;
    }
    values
}

/// `rrd_modify_structure`: one pass of DS and archive changes.
fn modify_structure(
    inp: &Image,
    delete_ds: &[String],
    add_ds: &[String],
    ops: &mut [RraModOp],
    hash: u64,
) -> Result<Image> {
    let ih = &inp.header;
    if !(3..=5).contains(&ih.version().0) {
        return Err(err("direct modification is only supported for version 3, 4 or 5 of RRD files. \
             Consider to dump/restore before retrying a modification"));
    }
    let mut out = HeaderParts {
        version: ih.version(),
        stat_pad: [0; 7],
        pdp_step: ih.pdp_step(),
        stat_par: [0; 10],
        ds: Vec::new(),
        rra: Vec::new(),
        live: *ih.live(),
        pdp: Vec::new(),
        cdp: Vec::new(),
        rra_ptr: Vec::new(),
    };
    let mut ds_ops: Vec<DsOp> = ih
        .ds()
        .iter()
        .map(|d| if delete_ds.iter().any(|n| n == d.name.as_str()) { DsOp::Delete } else { DsOp::Copy })
        .collect();
    for (i, op) in ds_ops.iter().enumerate() {
        if *op == DsOp::Copy {
            out.ds.push(ih.ds()[i].clone());
            out.pdp.push(ih.pdp()[i].clone());
        }
    }
    let mut names = create::DsNames::new(out.ds.iter().map(|d| d.name.as_str()));
    for arg in add_ds {
        let def: DsDef = names.parse_next(&arg[3..])?;
        out.ds.push(def);
        let mut pdp = PdpPrep { last_ds: [0; LAST_DS_LEN], pad: [0; 2], scratch: [0; 10] };
        pdp.set_last_ds("U");
        pdp.scratch[PDP_VAL] = 0.0f64.to_bits();
        pdp.scratch[PDP_UNKN_SEC_CNT] = (out.live.last_up as u64) % out.pdp_step;
        out.pdp.push(pdp);
        ds_ops.push(DsOp::Add);
    }
    if out.ds.is_empty() {
        // rrdtool fails its allocation of an empty DS area with this message.
        return Err(err("Cannot allocate memory"));
    }
    let out_ds = out.ds.len();
    let mut ds_map = Vec::with_capacity(out_ds);
    for (i, op) in ds_ops.iter().enumerate() {
        match op {
            DsOp::Copy => ds_map.push(i as i32),
            DsOp::Add => ds_map.push(-1),
            DsOp::Delete => {}
        }
    }

    handle_rra_defs(ih, ops, &ds_ops, &mut out);
    let total_rows: u64 = out.rra.iter().map(|r| r.row_count).sum();
    let mut values = mod_rras(inp, ops, &ds_ops, &ds_map, &out, total_rows);

    // New archives (`add_rras`).
    let last_rra_count = out.rra.len();
    let mut require_version = None;
    for op in ops.iter().filter(|o| o.op == b'a') {
        let def = op.def.as_deref().unwrap_or("RRA:");
        let rra = parse_rra_def(def, out.pdp_step, hash, &mut require_version)?;
        out.rra.push(rra);
        handle_dependent_rras(&mut out.rra, hash)?;
    }
    if out.rra.is_empty() {
        return Err(err("refusing to delete every RRA: the file would have no round robin archive left"));
    }
    if let Some(v) = require_version {
        if v < out.version.0 {
            out.version = Version(v);
        }
    }
    let mut rows_before = total_rows as usize;
    for curr in last_rra_count..out.rra.len() {
        let rows = out.rra[curr].row_count;
        out.cdp.extend((0..out_ds).map(|_| CdpPrep { scratch: [0; 10] }));
        out.rra_ptr.push(rows - 1);
        let base = values.len();
        values.resize(base + rows as usize * out_ds, DNAN);
        let rra_def = out.rra[curr].clone();
        populate_rows(inp, &out, &ds_map, &rra_def, rows as i32 - 1, &mut values[base..], 0, rows as i32);
        prepare_cdps(inp, &mut out, curr, rows_before, &ds_map, &values);
        rows_before += rows as usize;
    }
    let header = Header::from_parts(out).map_err(|e| err(format!("the RRD would be too large: {e}")))?;
    Ok(Image { header, values })
}

/// `stretch_rras`: the step shrinks by `factor` and every archive
/// consolidates `factor` times as many PDPs, so rows keep their meaning.
fn stretch(img: &mut Image, factor: u64) -> Result<()> {
    let mut h = img.header.clone().into_parts();
    let ds = h.ds.len();
    for (r, rra) in h.rra.iter_mut().enumerate() {
        if rra.cf.is_classic() {
            for d in 0..ds {
                // rrdtool multiplies the count's bits as a double.
                let slot = &mut h.cdp[r * ds + d].scratch[CDP_UNKN_PDP_CNT];
                *slot = (f64::from_bits(*slot) * factor as f64).to_bits();
            }
        }
        rra.pdp_count = rra.pdp_count.wrapping_mul(factor);
    }
    h.pdp_step /= factor;
    img.header = Header::from_parts(h).map_err(|e| err(format!("invalid 'newstep' parameter: {e}")))?;
    Ok(())
}

/// `rrd_modify_r2`: the structural change of one `tune` call, with the
/// optional new step applied first. `hash` is `FnvHash` of the file name
/// as given.
pub fn modify(inp: &Image, plan: &ModifyPlan, new_step: i32, hash: u64) -> Result<Image> {
    let mut ops = plan.rra_ops.clone();
    if new_step > 0 {
        let step = inp.header.pdp_step();
        let new_step = new_step as u64;
        if step.checked_rem(new_step) != Some(0) || step / new_step <= 1 {
            return Err(err(
                "invalid 'newstep' parameter. The newsize must divide the old step parameter without a remainder.",
            ));
        }
        let mut stretched = modify_structure(inp, &[], &[], &mut [], hash)?;
        stretch(&mut stretched, step / new_step)?;
        modify_structure(&stretched, &plan.delete_ds, &plan.add_ds, &mut ops, hash)
    } else {
        modify_structure(inp, &plan.delete_ds, &plan.add_ds, &mut ops, hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testfile::defs as s;
    use rrd_format::{RRA_DEPENDENT_RRA_IDX, RRA_SEASONAL_SMOOTH_IDX, RRA_WINDOW_LEN};

    fn image(defs: &[&str]) -> Image {
        let mut header = crate::testfile::header(defs);
        for r in 0..header.rra_count() {
            header.set_cur_row(r, 0).unwrap();
        }
        let n = header.layout().file_len - header.layout().data_off;
        Image { header, values: (0..n / 8).map(|i| i as f64).collect() }
    }

    #[test]
    fn modify_arguments_parse_as_rrdtool_does() {
        let plan = parse_modify_args(&s(&["DEL:a", "DS:b:GAUGE:600:U:U", "RRA#1:+5", "DELRRA:abc"])).unwrap();
        assert_eq!(plan.delete_ds, ["a"]);
        assert_eq!(plan.add_ds, ["DS:b:GAUGE:600:U:U"]);
        assert_eq!((plan.rra_ops[0].op, plan.rra_ops[0].index, plan.rra_ops[0].row_count), (b'+', 1, 5));
        assert_eq!((plan.rra_ops[1].op, plan.rra_ops[1].index, plan.rra_ops[1].row_count), (b'=', 0, 0));
        let msg = |a: &str| parse_modify_args(&s(&[a])).unwrap_err().to_string();
        assert_eq!(msg("RRA#0:*3"), "Failed to parse RRA# command: invalid operation: *");
        assert_eq!(msg("RRA#x:+3"), "Failed to parse RRA# command");
        assert_eq!(msg("DELRRA:-1"), "DELRRA requires a non-negative, integer argument");
        assert_eq!(msg("DEL:"), "unparseable argument: DEL:");
    }

    #[test]
    fn growing_puts_new_rows_first_and_cur_row_last() {
        let img = image(&["DS:a:GAUGE:600:U:U", "RRA:LAST:0.5:1:3"]);
        let plan = parse_modify_args(&s(&["RRA#0:+2"])).unwrap();
        let out = modify(&img, &plan, 0, 0).unwrap();
        assert_eq!(out.header.rra()[0].row_count, 5);
        assert_eq!(out.header.rra_ptr()[0], 4);
        // Input rows 0,1,2 with cur_row 0: oldest is row 1.
        assert!(out.values[0].is_nan() && out.values[1].is_nan());
        assert_eq!(&out.values[2..], &[1.0, 2.0, 0.0]);
    }

    #[test]
    fn deleting_a_source_drops_its_column_and_scratch() {
        let img = image(&["DS:a:GAUGE:600:U:U", "DS:b:GAUGE:600:U:U", "RRA:LAST:0.5:1:2"]);
        let plan = parse_modify_args(&s(&["DEL:a"])).unwrap();
        let out = modify(&img, &plan, 0, 0).unwrap();
        assert_eq!(out.header.ds().len(), 1);
        assert_eq!(out.header.cdp().len(), 1);
        // Rows (a,b): (0,1) (2,3), cur_row 0, so time order is row 1, row 0.
        assert_eq!(out.values, [3.0, 1.0]);
        let none = parse_modify_args(&s(&["DEL:a", "DEL:b"])).unwrap();
        assert_eq!(modify(&img, &none, 0, 0).unwrap_err().to_string(), "Cannot allocate memory");
    }

    #[test]
    fn deleting_an_archive_keeps_the_data_of_the_later_ones() {
        let img = image(&["DS:a:GAUGE:600:U:U", "RRA:LAST:0.5:1:2", "RRA:LAST:0.5:1:3", "RRA:MAX:0.5:1:2"]);
        // File order: archive 0 holds 0,1; archive 1 holds 2,3,4; archive 2
        // holds 5,6; every cur_row is 0, so each starts at its row 1.
        for args in [&["DELRRA:0"][..], &["RRA#0:=0"], &["RRA#0:-5"]] {
            let plan = parse_modify_args(&s(args)).unwrap();
            let out = modify(&img, &plan, 0, 0).unwrap();
            assert_eq!(out.header.rra().len(), 2, "{args:?}");
            assert_eq!(out.values, [3.0, 4.0, 2.0, 6.0, 5.0], "{args:?}");
            assert_eq!(out.header.rra_ptr(), [2, 1], "{args:?}");
        }
        let plan = parse_modify_args(&s(&["DELRRA:1"])).unwrap();
        assert_eq!(modify(&img, &plan, 0, 0).unwrap().values, [1.0, 0.0, 6.0, 5.0]);
    }

    #[test]
    fn stretching_needs_a_divisor_of_the_step() {
        let img = image(&["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:2:2"]);
        let plan = parse_modify_args(&s(&["RRA#0:+1"])).unwrap();
        assert!(modify(&img, &plan, 7, 0).unwrap_err().to_string().starts_with("invalid 'newstep'"));
        let out = modify(&img, &plan, 100, 0).unwrap();
        assert_eq!((out.header.pdp_step(), out.header.rra()[0].pdp_count), (100, 6));
    }

    #[test]
    fn hw_archives_bring_their_dependents() {
        let img = image(&["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"]);
        let plan = parse_modify_args(&s(&["RRA:HWPREDICT:20:0.5:0.1:5"])).unwrap();
        let out = modify(&img, &plan, 0, 12345).unwrap();
        let cfs: Vec<Cf> = out.header.rra().iter().map(|r| r.cf).collect();
        assert_eq!(
            cfs,
            [Cf::Average, Cf::HwPredict, Cf::Seasonal, Cf::DevSeasonal, Cf::DevPredict, Cf::Failures]
        );
        assert_eq!(out.header.rra()[1].par[RRA_DEPENDENT_RRA_IDX], 2);
        assert_eq!(out.header.rra()[2].par[RRA_SEASONAL_SMOOTH_IDX], 12345 % 5);
        assert_eq!(out.header.rra()[5].par[RRA_WINDOW_LEN], 9);
        let bad = parse_modify_args(&s(&["RRA:HWPREDICT:20:1.5:0.1:5"])).unwrap();
        assert_eq!(
            modify(&img, &bad, 0, 0).unwrap_err().to_string(),
            "Invalid alpha: must be between 0 and 1"
        );
    }
}
