//! `create --source`: prefilling a new RRD from existing ones, with the
//! results RRDtool 1.7.2 gives.
//!
//! What it owns:
//! - the checks rrdtool makes on `--source` paths while parsing options
//!   ([`check_source_paths`]) and the opening of the sources ([`Source`]);
//! - the `DS:new=old[index]:...` mappings ([`parse_mappings`]);
//! - [`prefill`]: the data area of the new file (each row consolidated from
//!   the best-matching archives of the sources, by CF and resolution, with
//!   rrdtool's coverage bookkeeping), and the PDP and CDP scratch areas
//!   (copied from a source when its last update is compatible, otherwise
//!   rebuilt from a one-PDP AVERAGE archive of the new file, temporarily
//!   added when the new file has none long enough).
//!
//! Invariants: the arithmetic follows rrdtool's C integer types where they
//! change results (`int` time slots and row offsets wrap at 32 bits,
//! unsigned row indices make `-1` "out of range"), and rrdtool's own
//! comparison-based sorts are reproduced step by step, because its ordering
//! of candidate archives is not a consistent total order and a different
//! sort algorithm would pick different archives. Untrusted source files
//! never make this code panic: every index is checked or derived from a
//! checked one.
//!
//! Deliberately not here: choosing `last_up` and laying out the header (that
//! is `create::build_header`, which asks [`latest_last_up`]), writing the
//! file, and Holt-Winters archives in the new file (`create --source`
//! refuses them; Holt-Winters archives of a source are simply never
//! candidates, as in rrdtool).

use std::fs;
use std::path::{Path, PathBuf};

use rrd_format::{
    Cf, Header, CDP_PRIMARY_VAL, CDP_SECONDARY_VAL, CDP_UNKN_PDP_CNT, CDP_VAL, PDP_UNKN_SEC_CNT,
};

use crate::consolidate::{self, CdpInput};
use crate::error::{os_message, Error, Result};
use crate::numparse::DNAN;
use crate::root::Root;
use crate::rrd::Rrd;

/// What `DS:name=mapped[index]:...` asks for: fill `ds_name` from the source
/// data source `mapped_name` (empty: the same name), only from the
/// `source_index`-th `--source` (1-based; `None`: any source).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DsMapping {
    pub ds_name: String,
    pub mapped_name: String,
    pub source_index: Option<i32>,
}

/// Reads the mappings of the `DS:` definitions among `defs`, in order. The
/// definitions must already have been validated (`create::parse_ds`); a
/// definition without `=` yields a mapping with an empty `mapped_name`, as
/// rrdtool records one for every `DS:` argument.
pub fn parse_mappings(defs: &[String]) -> Vec<DsMapping> {
    let mut out = Vec::new();
    for def in defs {
        let Some(body) = def.strip_prefix("DS:") else { continue };
        let name_part = body.split_once(':').map_or(body, |(n, _)| n);
        let (ds_name, mapped_name, source_index) = match name_part.split_once('=') {
            None => (name_part, "", None),
            Some((name, mapped)) => match mapped.split_once('[') {
                None => (name, mapped, None),
                Some((m, idx)) => {
                    let digits = idx.strip_suffix(']').unwrap_or(idx);
                    // strtol saturates; rrdtool then keeps an int.
                    let value = digits
                        .bytes()
                        .try_fold(0i64, |acc, c| {
                            c.is_ascii_digit()
                                .then(|| acc.saturating_mul(10).saturating_add(i64::from(c - b'0')))
                        })
                        .unwrap_or(0);
                    (name, m, Some(value as i32))
                }
            },
        };
        out.push(DsMapping {
            ds_name: ds_name.to_string(),
            mapped_name: mapped_name.to_string(),
            source_index,
        });
    }
    out
}

/// The checks rrdtool makes on each `--source` while parsing options: the
/// path must exist (following symbolic links) and be a regular file.
pub fn check_source_paths(paths: &[PathBuf]) -> Result<()> {
    for path in paths {
        let meta = fs::metadata(path).map_err(|e| {
            Error::invalid(format!("error checking for source RRD {}: {}", path.display(), os_message(&e)))
        })?;
        if !meta.is_file() {
            return Err(Error::invalid(format!("Not a regular file: {}", path.display())));
        }
    }
    Ok(())
}

/// [`check_source_paths`] for sources opened through `root`: under
/// confinement each source is opened as it will be read (a link out of
/// the root is refused) and checked to be a regular file.
pub fn check_source_paths_in(root: &Root, paths: &[PathBuf]) -> Result<()> {
    if !root.is_confined() {
        return check_source_paths(paths);
    }
    for path in paths {
        let checking = |e: &std::io::Error| {
            format!("error checking for source RRD {}: {}", path.display(), os_message(e))
        };
        let file = root.open(path, false).map_err(|e| {
            if Root::is_escape(&e) {
                Error::invalid(format!("source RRD {} is outside the base directory", path.display()))
            } else {
                Error::invalid(checking(&e))
            }
        })?;
        let meta = file.metadata().map_err(|e| Error::invalid(checking(&e)))?;
        if !meta.is_file() {
            return Err(Error::invalid(format!("Not a regular file: {}", path.display())));
        }
    }
    Ok(())
}

fn cannot_open(path: &Path) -> Error {
    Error::invalid(format!("Cannot open source RRD {}", path.display()))
}

/// The latest `last_up` of the sources (0 when there are none): the new
/// file's last update when `--start` is not given. Reads headers only.
pub fn latest_last_up(root: &Root, paths: &[PathBuf]) -> Result<i64> {
    let mut latest = 0i64;
    for path in paths {
        let rrd = Rrd::open_in(root, path, false).map_err(|_| cannot_open(path))?;
        latest = latest.max(rrd.header.live().last_up);
    }
    Ok(latest)
}

/// One opened source: its header and its archives' values, rows in file
/// order (row-major, `ds_count` values per row).
pub struct Source {
    pub header: Header,
    pub values: Vec<Vec<f64>>,
}

impl Source {
    /// Opens `path` and reads all of it; any failure is rrdtool's "Cannot
    /// open source RRD".
    pub fn open(root: &Root, path: &Path) -> Result<Source> {
        let rrd = Rrd::open_in(root, path, false).map_err(|_| cannot_open(path))?;
        let values = (0..rrd.header.rra().len())
            .map(|r| rrd.read_rra(r))
            .collect::<Result<Vec<_>>>()
            .map_err(|_| cannot_open(path))?;
        Ok(Source { header: rrd.header, values })
    }
}

/// Opens the sources and prefills `header` (whose `last_up`, `rra_ptr`,
/// fresh `pdp` and `cdp` must be set, as `create::build_header` leaves
/// them) from them. Returns each archive's rows, in file order.
pub fn prefill_from_files(
    header: &mut Header,
    root: &Root,
    paths: &[PathBuf],
    defs: &[String],
) -> Result<Vec<Vec<f64>>> {
    let sources = paths.iter().map(|p| Source::open(root, p)).collect::<Result<Vec<_>>>()?;
    prefill(header, &sources, &parse_mappings(defs))
}

/// Fills a new file's data area and prep areas from `sources`, in their
/// order (which decides ties and mapping indices). `header` is updated in
/// place (`pdp`, `cdp`); the result holds each archive's rows in file
/// order, `ds_count` values per row. Fails only when memory for the
/// archives cannot be had.
pub fn prefill(header: &mut Header, sources: &[Source], mappings: &[DsMapping]) -> Result<Vec<Vec<f64>>> {
    let ds_count = header.ds().len();
    let mut target = Target {
        step: header.pdp_step(),
        last_up: header.live().last_up,
        rras: header
            .rra()
            .iter()
            .zip(header.rra_ptr())
            .map(|(r, &cur_row)| Archive {
                cf: r.cf,
                pdp_count: r.pdp_count,
                row_count: r.row_count,
                xff: r.xff(),
                cur_row,
            })
            .collect(),
        values: header.rra().iter().map(|r| unknown_rows(r.row_count, ds_count)).collect::<Result<_>>()?,
        ds_count,
    };
    let real_rra_count = target.rras.len();
    let cdp_rra = target.rra_for_cdp_prefilling()?;

    // Pass 1: the rows of every archive (the temporary one included), and
    // the PDP state of each DS from the first compatible source.
    for r in 0..target.rras.len() {
        for d in 0..ds_count {
            let candidates = find_candidates(&target, header, r, d, sources, mappings, Selection::Create);
            if candidates.is_empty() {
                continue;
            }
            for row in 0..target.rras[r].row_count {
                target.prefill_bin(r, d, row, &candidates, sources);
            }
            prefill_pdp_prep(&target, header, d, &candidates, sources);
        }
    }
    // Pass 2: the CDP state, which may need the rows filled in pass 1. The
    // temporary archive's own CDP state is dropped with it, so skip it.
    for r in 0..real_rra_count {
        for d in 0..ds_count {
            let candidates = find_candidates(&target, header, r, d, sources, mappings, Selection::CdpMatch);
            target.prefill_cdp_prep(header, r, d, &candidates, sources, cdp_rra);
        }
    }
    target.values.truncate(real_rra_count);
    Ok(target.values)
}

/// `rows` rows of unknown values, or an error when that much memory
/// cannot be had (rather than aborting the process).
fn unknown_rows(rows: u64, ds_count: usize) -> Result<Vec<f64>> {
    let too_big = || Error::invalid("Memory allocation failed");
    let n = usize::try_from(rows).ok().and_then(|r| r.checked_mul(ds_count)).ok_or_else(too_big)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| too_big())?;
    v.resize(n, DNAN);
    Ok(v)
}

/// A target archive as the algorithm sees it.
#[derive(Clone, Debug)]
struct Archive {
    cf: Cf,
    pdp_count: u64,
    row_count: u64,
    xff: f64,
    cur_row: u64,
}

/// The new file while it is being filled: its archives (possibly with a
/// temporary one-PDP AVERAGE archive at the end) and their values.
struct Target {
    step: u64,
    last_up: i64,
    rras: Vec<Archive>,
    values: Vec<Vec<f64>>,
    ds_count: usize,
}

/// A candidate archive of a source for one target archive and DS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Candidate {
    source: usize,
    rra: usize,
    ds: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Selection {
    /// AVERAGE archives and those of the target's CF (filling rows).
    Create,
    /// Same CF and same PDP count (copying CDP state).
    CdpMatch,
}

impl Target {
    /// Index of the one-PDP AVERAGE archive CDP state is rebuilt from; adds
    /// a temporary one when none has at least twice the largest PDP count
    /// in rows.
    fn rra_for_cdp_prefilling(&mut self) -> Result<usize> {
        let mut largest_pdp = 0u64;
        let mut best: Option<usize> = None;
        for (i, r) in self.rras.iter().enumerate() {
            largest_pdp = largest_pdp.max(r.pdp_count);
            if r.pdp_count == 1 && r.cf == Cf::Average {
                match best {
                    Some(b) if self.rras[b].row_count >= r.row_count => {}
                    _ => best = Some(i),
                }
            }
        }
        let largest_pdp = largest_pdp.wrapping_mul(2);
        match best {
            Some(b) if self.rras[b].row_count >= largest_pdp => Ok(b),
            _ => {
                self.values.push(unknown_rows(largest_pdp, self.ds_count)?);
                self.rras.push(Archive {
                    cf: Cf::Average,
                    pdp_count: 1,
                    row_count: largest_pdp,
                    xff: 0.5,
                    cur_row: 0,
                });
                Ok(self.rras.len() - 1)
            }
        }
    }

    fn end_time_for_row(&self, r: usize, row: i32) -> i64 {
        let a = &self.rras[r];
        end_time_for_row(self.last_up, self.step, a.pdp_count, a.row_count, a.cur_row, row)
    }

    /// Fills row `row` (file order) of archive `r`, DS `d`, from the
    /// candidates, best first, until the row's time span is covered.
    fn prefill_bin(&mut self, r: usize, d: usize, row: u64, candidates: &[Candidate], sources: &[Source]) {
        let a = &self.rras[r];
        let bin_size = a.pdp_count.wrapping_mul(self.step) as i64;
        let min_required_coverage = (a.xff * bin_size as f64) as i64;
        let bin_end = self.end_time_for_row(r, row as i32);
        let bin_start = bin_end.wrapping_sub(bin_size).wrapping_add(1);
        let mut coverage = vec![Interval { covered: false, start: bin_start, end: bin_end }];
        let mut total_covered = 0i64;
        let mut value = DNAN;
        for c in candidates {
            if total_covered >= bin_size {
                break;
            }
            let src = &sources[c.source];
            let srra = &src.header.rra()[c.rra];
            let (s_step, s_last_up, s_rows) =
                (src.header.pdp_step(), src.header.live().last_up, srra.row_count);
            let s_cur = src.header.rra_ptr()[c.rra];
            let s_ds_count = src.header.ds().len();
            let end_bin =
                row_for_time(s_last_up, s_step, srra.pdp_count, s_rows, s_cur as i32, bin_end) as i64 as u64;
            let start_bin = row_for_time(s_last_up, s_step, srra.pdp_count, s_rows, s_cur as i32, bin_start)
                as i64 as u64;
            // Both ends must be inside the source archive, or it is not used.
            if start_bin >= s_rows || end_bin >= s_rows {
                continue;
            }
            // A span of exactly row_count rows counts as none (rrdtool
            // reduces it modulo row_count).
            let mut bin_count =
                positive_mod(end_bin.wrapping_sub(start_bin).wrapping_add(1) as i32, s_rows as i32);
            let mut ci = start_bin as u32;
            let cand_bin_size = srra.pdp_count.wrapping_mul(s_step) as i64;
            while bin_count > 0 && total_covered < bin_size {
                if u64::from(ci) == s_rows {
                    ci = 0;
                }
                let cand_end = end_time_for_row(s_last_up, s_step, srra.pdp_count, s_rows, s_cur, ci as i32);
                let cand_start = cand_end.wrapping_sub(cand_bin_size).wrapping_add(1);
                let covered = overlap(bin_start, bin_end, cand_start, cand_end).wrapping_add(1);
                let v = src.values[c.rra].get(ci as usize * s_ds_count + c.ds).copied().unwrap_or(DNAN);
                if covered > 0 && !v.is_nan() {
                    let newly = add_coverage(&mut coverage, cand_start, cand_end);
                    if newly > 0 {
                        total_covered = total_covered.wrapping_add(i64::from(newly));
                        value = consolidate(a.cf, value, v, bin_size as i32, newly);
                    }
                }
                ci = ci.wrapping_add(1);
                bin_count -= 1;
            }
        }
        if total_covered > min_required_coverage {
            let v = finish(a.cf, value, bin_size as i32, total_covered as i32);
            let ds_count = self.ds_count;
            if let Some(slot) = self.values[r].get_mut(row as usize * ds_count + d) {
                *slot = v;
            }
        }
    }

    /// The CDP state of archive `r`, DS `d`: copied from a source archive
    /// whose current CDP and PDP are the same time slots, otherwise rebuilt
    /// from the one-PDP archive `cdp_rra`.
    fn prefill_cdp_prep(
        &self,
        header: &mut Header,
        r: usize,
        d: usize,
        candidates: &[Candidate],
        sources: &[Source],
        cdp_rra: usize,
    ) {
        let a = &self.rras[r];
        let (begin, end) = cdp_start_end(self.last_up, self.step, a.pdp_count);
        let slot = r * self.ds_count + d;
        for c in candidates {
            let src = &sources[c.source];
            if src.header.pdp_step() != self.step {
                continue;
            }
            let srra = &src.header.rra()[c.rra];
            let (s_begin, s_end) =
                cdp_start_end(src.header.live().last_up, src.header.pdp_step(), srra.pdp_count);
            if s_begin == begin
                && s_end == end
                && (self.last_up as u64) / self.step
                    == (src.header.live().last_up as u64) / src.header.pdp_step()
            {
                if let Some(cdp) = src.header.cdp().get(c.rra * src.header.ds().len() + c.ds) {
                    header.cdp_mut()[slot] = cdp.clone();
                }
                return;
            }
        }

        // init_cdp for the classic CFs, with the unknown count forced to 0.
        let scratch = &mut header.cdp_mut()[slot].scratch;
        scratch[CDP_VAL] = DNAN.to_bits();
        scratch[CDP_UNKN_PDP_CNT] = 0;
        let c = &self.rras[cdp_rra];
        let cdp_value =
            |row: i32| self.values[cdp_rra].get(row as usize * self.ds_count + d).copied().unwrap_or(DNAN);
        if a.pdp_count == 1 {
            scratch[CDP_PRIMARY_VAL] = 0f64.to_bits();
            scratch[CDP_SECONDARY_VAL] = 0f64.to_bits();
            let row = row_for_time(
                self.last_up,
                self.step,
                c.pdp_count,
                c.row_count,
                c.cur_row as i32,
                begin.wrapping_sub(self.step as i64),
            );
            if row >= 0 {
                scratch[CDP_PRIMARY_VAL] = cdp_value(row).to_bits();
            }
            return;
        }
        let cdp_step = self.step.wrapping_mul(a.pdp_count) as i32;
        if cdp_step == 0 || self.step == 0 {
            return;
        }
        let mut t = begin.wrapping_sub(a.pdp_count.wrapping_mul(self.step) as i64);
        while t < end && t < self.last_up {
            let row = row_for_time(self.last_up, self.step, c.pdp_count, c.row_count, c.cur_row as i32, t);
            if row >= 0 {
                let v = cdp_value(row);
                let n =
                    a.pdp_count.wrapping_sub(t.wrapping_rem(i64::from(cdp_step)) as u64 / self.step) as i32;
                // rrdtool passes its int `n` as an unsigned long.
                let input = CdpInput {
                    cf: a.cf,
                    pdp_value: v,
                    rows_completed: u64::from(n == 1),
                    elapsed_pdps: 1,
                    start_pdp_offset: n as i64 as u64,
                    pdp_count: a.pdp_count,
                    xff: a.xff,
                };
                consolidate::update_cdp(&mut header.cdp_mut()[slot].scratch, &input);
            }
            // Stop rather than wrap around for absurd times.
            match t.checked_add(self.step as i64) {
                Some(next) => t = next,
                None => break,
            }
        }
    }
}

/// Copies the PDP state of DS `d` from the first source (in candidate
/// order) whose current PDP ends inside the new file's current PDP, has a
/// known last reading and the same DS type. Later calls for the same DS do
/// nothing once it is known.
fn prefill_pdp_prep(
    target: &Target,
    header: &mut Header,
    d: usize,
    candidates: &[Candidate],
    sources: &[Source],
) {
    if header.pdp()[d].last_ds_str() != "U" {
        return;
    }
    let step = target.step;
    let begin = pdp_begin(target.last_up, step);
    let end = begin.wrapping_add(step as i64).wrapping_sub(1);
    let mut previous: Option<usize> = None;
    for c in candidates {
        // Candidates come in blocks per source: look at each source once.
        if previous == Some(c.source) {
            continue;
        }
        previous = Some(c.source);
        let src = &sources[c.source];
        let Some(spdp) = src.header.pdp().get(c.ds) else { continue };
        if spdp.last_ds_str() == "U" {
            continue;
        }
        let s_begin = pdp_begin(src.header.live().last_up, src.header.pdp_step());
        let s_end = s_begin.wrapping_add(src.header.pdp_step() as i64).wrapping_sub(1);
        let same_type =
            name_bytes(&header.ds()[d].dst_name.0) == name_bytes(&src.header.ds()[c.ds].dst_name.0);
        if s_end <= end && s_end >= begin && same_type {
            header.pdp_mut()[d] = spdp.clone();
            // rrdtool reads the unknown-seconds counter as a double here,
            // so this only fires for absurd counters; kept for fidelity.
            let unknown_as_double = f64::from_bits(header.pdp()[d].scratch[PDP_UNKN_SEC_CNT]);
            if unknown_as_double > step as f64 {
                let source_known = (src.header.pdp_step() as f64 - unknown_as_double) as i64;
                let max_target_known = target.last_up.wrapping_sub(begin);
                header.pdp_mut()[d].scratch[PDP_UNKN_SEC_CNT] =
                    max_target_known.wrapping_sub(source_known).max(0) as u64;
            }
            break;
        }
    }
}

fn pdp_begin(last_up: i64, step: u64) -> i64 {
    if step == 0 {
        return last_up;
    }
    ((last_up as u64 / step).wrapping_mul(step) as i64).wrapping_add(1)
}

/// First and last second of the CDP that `last_up` falls in.
fn cdp_start_end(last_up: i64, step: u64, pdp_count: u64) -> (i64, i64) {
    let cdp_step = i64::from(pdp_count.wrapping_mul(step) as i32);
    if cdp_step == 0 {
        return (last_up, last_up);
    }
    let begin = last_up.wrapping_div(cdp_step).wrapping_mul(cdp_step).wrapping_add(1);
    (begin, begin.wrapping_add(cdp_step).wrapping_sub(1))
}

/// The bytes of a NUL-terminated name field, up to the NUL (strcmp).
fn name_bytes(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    &field[..end]
}

/// The candidate archives for target archive `r`, DS `d`: source by source
/// (in `--source` order, restricted by a mapping's index), the source
/// archives selected by `selection`, ordered as rrdtool orders them.
fn find_candidates(
    target: &Target,
    header: &Header,
    r: usize,
    d: usize,
    sources: &[Source],
    mappings: &[DsMapping],
    selection: Selection,
) -> Vec<Candidate> {
    let ds_name = name_bytes(&header.ds()[d].name.0);
    let mapping = mappings.iter().find(|m| m.ds_name.as_bytes() == ds_name);
    let looked_for = match mapping {
        Some(m) if !m.mapped_name.is_empty() => m.mapped_name.as_bytes(),
        _ => ds_name,
    };
    let tofill = &target.rras[r];
    let mut out = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        if let Some(Some(index)) = mapping.map(|m| m.source_index) {
            if index >= 0 && i64::from(index) != i as i64 + 1 {
                continue;
            }
        }
        let Some(ds) = src.header.ds().iter().position(|s| name_bytes(&s.name.0) == looked_for) else {
            continue;
        };
        let mut list: Vec<Candidate> = src
            .header
            .rra()
            .iter()
            .enumerate()
            .filter(|(_, maybe)| match selection {
                Selection::Create => maybe.cf == Cf::Average || maybe.cf == tofill.cf,
                Selection::CdpMatch => maybe.cf == tofill.cf && maybe.pdp_count == tofill.pdp_count,
            })
            .map(|(rra, _)| Candidate { source: i, rra, ds })
            .collect();
        // find_candidate_rras sorts with the C library's qsort (a stable
        // merge sort in glibc) by granularity, then the create path re-sorts
        // with rrdtool's own quicksort by closeness to the target.
        merge_sort(&mut list, &|a, b| sort_by_granularity(sources, a, b));
        if selection == Selection::Create {
            quick_sort(&mut list, &|a, b| order_for_target(sources, target, tofill, a, b));
        }
        out.extend(list);
    }
    out
}

/// rrdtool's `sort_candidates`: fewer PDPs per row first, then more rows
/// first (differences truncated to `int`, as in C).
fn sort_by_granularity(sources: &[Source], a: &Candidate, b: &Candidate) -> i32 {
    if a.source == b.source && a.rra == b.rra {
        return 0;
    }
    let ad = &sources[a.source].header.rra()[a.rra];
    let bd = &sources[b.source].header.rra()[b.rra];
    if ad.pdp_count == bd.pdp_count {
        return bd.row_count.wrapping_sub(ad.row_count) as i32;
    }
    ad.pdp_count.wrapping_sub(bd.pdp_count) as i32
}

/// rrdtool's `order_candidates`: an archive with the target's CF and
/// resolution first, then AVERAGE before other CFs, then finer resolution,
/// then more rows. Not a consistent order (two exact matches each claim to
/// go first), which is why the sort algorithm itself is reproduced.
fn order_for_target(
    sources: &[Source],
    target: &Target,
    tofill: &Archive,
    a: &Candidate,
    b: &Candidate,
) -> i32 {
    let ah = &sources[a.source].header;
    let bh = &sources[b.source].header;
    let (ad, bd) = (&ah.rra()[a.rra], &bh.rra()[b.rra]);
    let resolution = |pdp: u64, step: u64| pdp.wrapping_mul(step as i32 as i64 as u64);
    let ares = resolution(ad.pdp_count, ah.pdp_step());
    let bres = resolution(bd.pdp_count, bh.pdp_step());
    let tres = resolution(tofill.pdp_count, target.step);
    if ad.cf == tofill.cf && ares == tres {
        return -1;
    }
    if bd.cf == tofill.cf && bres == tres {
        return 1;
    }
    if ad.cf != bd.cf {
        if ad.cf == Cf::Average {
            return -1;
        }
        if bd.cf == Cf::Average {
            return 1;
        }
        return 0;
    }
    let d = ares.wrapping_sub(bres) as i32;
    if d != 0 {
        return d;
    }
    (ad.row_count.wrapping_sub(bd.row_count) as i32).wrapping_neg()
}

/// glibc's merge sort (`msort`): top-down, left half `n / 2`, ties keep
/// the left element.
fn merge_sort<T: Copy>(items: &mut [T], cmp: &dyn Fn(&T, &T) -> i32) {
    let n = items.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    merge_sort(&mut items[..n1], cmp);
    merge_sort(&mut items[n1..], cmp);
    let mut merged = Vec::with_capacity(n);
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < n {
        if cmp(&items[i], &items[j]) <= 0 {
            merged.push(items[i]);
            i += 1;
        } else {
            merged.push(items[j]);
            j += 1;
        }
    }
    merged.extend_from_slice(&items[i..n1]);
    merged.extend_from_slice(&items[j..n]);
    items.copy_from_slice(&merged);
}

/// rrdtool's `quick_sort` (src/quicksort.c), step for step: pivot at the
/// first element, two indices closing in, then recursion on both sides.
fn quick_sort<T>(items: &mut [T], cmp: &dyn Fn(&T, &T) -> i32) {
    if items.len() > 1 {
        quick_sort_range(items, cmp, 0, items.len() as isize - 1);
    }
}

fn quick_sort_range<T>(items: &mut [T], cmp: &dyn Fn(&T, &T) -> i32, begin: isize, end: isize) {
    if begin >= end {
        return;
    }
    let p = begin as usize;
    let mut l = begin + 1;
    let mut r = end;
    while l < r {
        if cmp(&items[l as usize], &items[p]) <= 0 {
            l += 1;
        } else if cmp(&items[r as usize], &items[p]) >= 0 {
            r -= 1;
        } else {
            items.swap(l as usize, r as usize);
        }
    }
    if cmp(&items[l as usize], &items[p]) <= 0 {
        items.swap(l as usize, p);
        l -= 1;
    } else {
        l -= 1;
        items.swap(l as usize, p);
    }
    quick_sort_range(items, cmp, begin, l);
    quick_sort_range(items, cmp, r, end);
}

/// `a mod b` in `[0, b)` for C ints (0 when `b` is 0, where C would trap).
fn positive_mod(a: i32, b: i32) -> i32 {
    if b == 0 {
        return 0;
    }
    let x = a.wrapping_rem(b);
    if x < 0 {
        x.wrapping_add(b)
    } else {
        x
    }
}

/// End time of row `row` (file order) of an archive whose newest row is
/// `cur_row` and that was last updated at `last_up`.
fn end_time_for_row(last_up: i64, step: u64, pdp_count: u64, row_count: u64, cur_row: u64, row: i32) -> i64 {
    let timeslot = pdp_count.wrapping_mul(step) as i32;
    if timeslot == 0 {
        return last_up;
    }
    let past = positive_mod((cur_row as u32 as i32).wrapping_sub(row), row_count as i32);
    last_up
        .wrapping_sub(last_up.wrapping_rem(i64::from(timeslot)))
        .wrapping_sub(i64::from(past.wrapping_mul(timeslot)))
}

/// The row (file order) holding time `req`, or -1 when it is outside the
/// archive. Like rrdtool, `last_up` is not rounded to a slot boundary (its
/// second alignment test looks at the already aligned request time).
fn row_for_time(last_up: i64, step: u64, pdp_count: u64, row_count: u64, cur_row: i32, req: i64) -> i32 {
    let timeslot = pdp_count.wrapping_mul(step) as i32;
    if timeslot == 0 {
        return -1;
    }
    let ts = i64::from(timeslot);
    let mut req = req;
    let mut last_up = last_up;
    let delta = req.wrapping_rem(ts);
    if delta > 0 {
        req = req.wrapping_add(ts - delta);
    }
    let delta = req.wrapping_rem(ts);
    if delta > 0 {
        last_up = last_up.wrapping_add(ts - delta);
    }
    if req > last_up {
        return -1;
    }
    let oldest = (last_up as i32).wrapping_sub((row_count as i32).wrapping_mul(timeslot));
    if req <= i64::from(oldest) {
        return -1;
    }
    let past = last_up.wrapping_sub(req).wrapping_div(ts) as i32;
    if past >= row_count as i32 {
        return -1;
    }
    let row = positive_mod(cur_row.wrapping_sub(past), row_count as i32);
    if row < 0 {
        row + row_count as i32
    } else {
        row
    }
}

/// rrdtool's `overlap` of two inclusive intervals: the length of the
/// intersection minus one, 0 for disjoint ones and for one-second ones.
fn overlap(start1: i64, end1: i64, start2: i64, end2: i64) -> i64 {
    if start1 >= end1 || start2 >= end2 || start1 > end2 || start2 > end1 {
        return 0;
    }
    end1.min(end2).wrapping_sub(start1.max(start2))
}

fn is_interval_within_interval(start1: i64, end1: i64, start2: i64, end2: i64) -> bool {
    let len1 = end1.wrapping_sub(start1);
    if len1 > end2.wrapping_sub(start2) {
        return false;
    }
    overlap(start1, end1, start2, end2) == len1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Interval {
    covered: bool,
    start: i64,
    end: i64,
}

/// Marks `[start, end]` (clipped to the bin) as covered and returns how
/// many seconds were not covered before, with rrdtool's case analysis
/// (including how it treats one-second intervals).
fn add_coverage(coverage: &mut Vec<Interval>, start: i64, end: i64) -> i32 {
    let (Some(first), Some(last)) = (coverage.first().copied(), coverage.last().copied()) else {
        return 0;
    };
    let mut start = start.max(first.start);
    let end = end.min(last.end);
    let mut newly = 0i64;
    if end < first.start || start > last.end {
        return 0;
    }
    let mut i = 0;
    while i < coverage.len() {
        let Interval { start: org_start, end: org_end, .. } = coverage[i];
        // (A) the new interval lies within this one.
        if is_interval_within_interval(start, end, org_start, org_end) {
            if coverage[i].covered {
                break;
            }
            let pieces: Vec<Interval> = if start == org_start && end == org_end {
                vec![Interval { covered: true, start, end }]
            } else if org_start == start {
                vec![
                    Interval { covered: true, start: org_start, end },
                    Interval { covered: false, start: end.wrapping_add(1), end: org_end },
                ]
            } else if org_end == end {
                vec![
                    Interval { covered: false, start: org_start, end: start.wrapping_sub(1) },
                    Interval { covered: true, start, end: org_end },
                ]
            } else {
                vec![
                    Interval { covered: false, start: org_start, end: start.wrapping_sub(1) },
                    Interval { covered: true, start, end },
                    Interval { covered: false, start: end.wrapping_add(1), end: org_end },
                ]
            };
            newly = newly.wrapping_add(end.wrapping_sub(start).wrapping_add(1));
            coverage.splice(i..=i, pieces);
            break;
        }
        // (B) this interval lies within the new one.
        if is_interval_within_interval(org_start, org_end, start, end) && !coverage[i].covered {
            coverage[i].covered = true;
            newly = newly.wrapping_add(coverage[i].end.wrapping_sub(coverage[i].start).wrapping_add(1));
        }
        // (C) the new interval starts here and goes on past the end.
        if start >= org_start && start <= org_end {
            if coverage[i].covered {
                start = org_end.wrapping_add(1);
                i += 1;
                continue;
            }
            if coverage[i].start == start {
                coverage[i].covered = true;
            } else {
                coverage.splice(
                    i..=i,
                    [
                        Interval { covered: false, start: org_start, end: start.wrapping_sub(1) },
                        Interval { covered: true, start, end: org_end },
                    ],
                );
                newly = newly.wrapping_add(org_end.wrapping_sub(start).wrapping_add(1));
            }
            start = org_end.wrapping_add(1);
        }
        i += 1;
    }
    // Merge neighbours of the same kind.
    let mut i = 0;
    while i + 1 < coverage.len() {
        if coverage[i].covered == coverage[i + 1].covered {
            coverage[i].end = coverage[i + 1].end;
            coverage.remove(i + 1);
            continue;
        }
        i += 1;
    }
    newly as i32
}

/// Adds a source value covering `newly` new seconds to a bin's estimate.
fn consolidate(cf: Cf, estimate: f64, added: f64, bin_size: i32, newly: i32) -> f64 {
    match cf {
        Cf::Minimum => {
            if estimate.is_nan() {
                added
            } else if estimate < added {
                estimate
            } else {
                added
            }
        }
        Cf::Maximum => {
            if estimate.is_nan() {
                added
            } else if estimate > added {
                estimate
            } else {
                added
            }
        }
        Cf::Last => added,
        _ => {
            let estimate = if estimate.is_nan() { 0.0 } else { estimate };
            estimate + added / f64::from(bin_size) * f64::from(newly)
        }
    }
}

/// A bin's final value once its sources are consolidated.
fn finish(cf: Cf, estimate: f64, bin_size: i32, total_covered: i32) -> f64 {
    if total_covered == 0 {
        return DNAN;
    }
    match cf {
        Cf::Average => estimate / f64::from(total_covered) * f64::from(bin_size),
        _ => estimate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testfile::defs;

    fn header(start: i64, d: &[&str]) -> Header {
        crate::testfile::header_at(start, 300, d)
    }

    #[test]
    fn mappings_are_read_from_ds_definitions() {
        let m = parse_mappings(&defs(&[
            "DS:plain:GAUGE:600:U:U",
            "RRA:AVERAGE:0.5:1:10",
            "DS:new=old:GAUGE:600:U:U",
            "DS:pinned=old[2]:COUNTER:600:U:U",
        ]));
        let expect = |n: &str, o: &str, i: Option<i32>| DsMapping {
            ds_name: n.into(),
            mapped_name: o.into(),
            source_index: i,
        };
        assert_eq!(
            m,
            vec![expect("plain", "", None), expect("new", "old", None), expect("pinned", "old", Some(2))]
        );
    }

    #[test]
    fn coverage_counts_each_second_once() {
        let mut cov = vec![Interval { covered: false, start: 1, end: 300 }];
        assert_eq!(add_coverage(&mut cov, -99, 100), 100);
        assert_eq!(add_coverage(&mut cov, 51, 150), 50);
        assert_eq!(add_coverage(&mut cov, 201, 250), 50);
        assert_eq!(
            cov,
            vec![
                Interval { covered: true, start: 1, end: 150 },
                Interval { covered: false, start: 151, end: 200 },
                Interval { covered: true, start: 201, end: 250 },
                Interval { covered: false, start: 251, end: 300 },
            ]
        );
        assert_eq!(add_coverage(&mut cov, 1, 600), 100);
        assert_eq!(cov, vec![Interval { covered: true, start: 1, end: 300 }]);
        assert_eq!(add_coverage(&mut cov, 1, 300), 0);
        assert_eq!(add_coverage(&mut cov, 301, 900), 0);
    }

    #[test]
    fn rows_and_times_agree() {
        // 10 rows of 600 s, newest row (file row 3) ends at 6000.
        let (last_up, step, pdp, rows, cur) = (6100, 300, 2, 10, 3);
        for row in 0..10 {
            let end = end_time_for_row(last_up, step, pdp, rows, cur, row);
            assert_eq!(end % 600, 0);
            assert_eq!(row_for_time(last_up, step, pdp, rows, cur as i32, end), row);
            assert_eq!(row_for_time(last_up, step, pdp, rows, cur as i32, end - 599), row);
        }
        assert_eq!(end_time_for_row(last_up, step, pdp, rows, cur, 3), 6000);
        assert_eq!(end_time_for_row(last_up, step, pdp, rows, cur, 4), 6000 - 9 * 600);
        // After the last update, and before the oldest row: out of range.
        assert_eq!(row_for_time(last_up, step, pdp, rows, cur as i32, 6101), -1);
        assert_eq!(row_for_time(last_up, step, pdp, rows, cur as i32, 6000 - 10 * 600), -1);
    }

    #[test]
    fn sorts_follow_the_c_algorithms() {
        let mut v = vec![5, 3, 9, 1, 4, 1, 8, 2, 7, 6, 0];
        quick_sort(&mut v, &|a, b| a - b);
        assert_eq!(v, vec![0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        // The merge sort is stable: equal keys keep their order.
        let mut w = vec![(2, 'a'), (1, 'b'), (2, 'c'), (1, 'd'), (0, 'e')];
        merge_sort(&mut w, &|a, b| a.0 - b.0);
        assert_eq!(w, vec![(0, 'e'), (1, 'b'), (1, 'd'), (2, 'a'), (2, 'c')]);
        // With a comparator that says "me first" for two elements, the
        // result depends on the algorithm; this is rrdtool's outcome.
        let mut x = vec![0, 1, 2];
        quick_sort(&mut x, &|a, b| {
            if *a != 0 {
                -1
            } else if *b != 0 {
                1
            } else {
                0
            }
        });
        assert_eq!(x, vec![1, 2, 0]);
    }

    #[test]
    fn averages_are_consolidated_from_a_finer_source() {
        // Source: ten 5-minute averages 1..=10, the newest ending at 3000.
        let mut sh = header(3000, &["DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"]);
        sh.set_cur_row(0, 9).unwrap();
        sh.pdp_mut()[0].set_last_ds("42");
        let source = Source { values: vec![(1..=10).map(f64::from).collect()], header: sh };
        // Target: 10-minute averages and 5-minute maxima of the same span.
        let mut th = header(3000, &["DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:2:5", "RRA:MAX:0.5:1:4"]);
        th.set_cur_row(0, 4).unwrap();
        th.set_cur_row(1, 3).unwrap();
        let values = prefill(&mut th, &[source], &[]).unwrap();
        assert_eq!(values, vec![vec![1.5, 3.5, 5.5, 7.5, 9.5], vec![7.0, 8.0, 9.0, 10.0]]);
        assert_eq!(th.pdp()[0].last_ds_str(), "42", "same PDP, same type: the state is copied");
    }

    /// Sources at the edges: every combination a header can hold prefills
    /// without panicking; the combinations no header can hold (step 0, no
    /// rows, a row pointer past the last row) are refused when built.
    #[test]
    fn absurd_sources_do_not_panic() {
        let target_defs = ["DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:3:5", "RRA:MAX:0.5:1:4", "RRA:LAST:0:7:3"];
        let mut prefilled = 0;
        for last_up in [i64::MAX, i64::MIN, -1, 0, 1] {
            for (step, rows, cur_row) in
                [(0, 10, 3), (1, 0, 0), (u64::MAX, 10, 9), (u64::MAX, 10, 99), (300, 10, u64::MAX), (1, 1, 0)]
            {
                let mut parts =
                    header(3000, &["DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10", "RRA:MAX:0.5:2:10"])
                        .into_parts();
                parts.live.last_up = last_up;
                parts.pdp_step = step;
                parts.rra[0].row_count = rows;
                parts.rra_ptr[0] = cur_row;
                parts.pdp[0].set_last_ds("1");
                let buildable = step != 0 && rows != 0 && cur_row < rows;
                let sh = match Header::from_parts(parts) {
                    Ok(sh) => sh,
                    Err(e) => {
                        assert!(!buildable, "{step}/{rows}/{cur_row} refused: {e}");
                        continue;
                    }
                };
                assert!(buildable, "{step}/{rows}/{cur_row} built");
                let values = vec![vec![1.0; rows as usize], vec![2.0; 10]];
                let mut th = header(3000, &target_defs);
                th.live_mut().last_up = last_up;
                let out = prefill(&mut th, &[Source { header: sh, values }], &[]).unwrap();
                assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), vec![5, 4, 3]);
                prefilled += 1;
            }
        }
        assert_eq!(prefilled, 10, "two buildable edge sources for each of five last_up values");
    }
}
