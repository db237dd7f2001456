//! `fetch`: choosing an archive for a time range and reading its rows, as
//! RRDtool 1.7.2's `rrd_fetch_fn` does. (How values are printed, glibc's
//! `printf` for fetch and info, rrdtool's `rrd_snprintf` for xport and
//! dump, is `rrd_lang::cformat`.)
//!
//! Archive choice, in RRDtool's words: among the RRAs whose CF matches (or,
//! for the four classic CFs, any classic RRA with one PDP per row), prefer
//! one that covers the whole requested start ("full match") with the step
//! closest to the requested resolution; failing that, the one that covers
//! the most of the range ("partial match"), ties broken by the closer step.
//! The first candidate wins every tie. Start is then rounded down to the
//! step, end rounded up past the next boundary, and rows outside the archive
//! come back as NaN.
//!
//! Invariants: the result holds exactly `(end - start) / step` rows of
//! `ds_count` values each, the row stamped `start + step` first. Only the
//! rows in range are read, in at most two reads (the range may wrap around
//! the end of the ring).
//!
//! Deliberately absent: option parsing, AT-style times, the 1980 sanity check
//! and the printing of the table (the CLI owns those); pending values of a
//! daemon's cache (a caller merges them).

use rrd_format::{Cf, Header};

use crate::error::{Error, Result};
use crate::rrd::Rrd;
use crate::store::Store;

/// The NaN RRDtool fills rows outside an archive with (the x86 default NaN,
/// sign bit set, which `printf` shows as `-nan`).
pub const FILL_NAN: f64 = crate::numparse::DNAN;

/// The most values one fetch returns (2 GiB of doubles). RRDtool has no
/// limit but its malloc; a request beyond this is refused, not attempted.
pub const MAX_FETCH_VALUES: usize = 1 << 28;

/// Rows of one archive over a time range.
#[derive(Clone, Debug, PartialEq)]
pub struct FetchResult {
    /// Start of the range, a multiple of `step_secs`. The first row is
    /// stamped `start + step_secs`.
    pub start: i64,
    /// End of the range (the stamp of the last row), a multiple of `step_secs`.
    pub end: i64,
    pub step_secs: u64,
    /// The archive the rows come from.
    pub rra_index: usize,
    pub ds_names: Vec<String>,
    /// Row-major: `row_count() × ds_names.len()` values.
    pub data: Vec<f64>,
    /// When the rows were consolidated from finer ones (graph and xport
    /// DEFs): the fetched row that RRDtool's buffer still holds just after
    /// the consolidated data (its `rrd_reduce_data` works in place), the
    /// finer row at index `row_count()`. RRDtool's PREDICT reads it at
    /// the last output step. `None` when nothing was consolidated or the
    /// fetched rows end before it.
    pub past_end: Option<Vec<f64>>,
}

impl FetchResult {
    pub fn row_count(&self) -> usize {
        self.data.len().checked_div(self.ds_names.len()).unwrap_or(0)
    }

    /// The values of row `i` (stamped `start + (i + 1) × step`).
    pub fn row(&self, i: usize) -> &[f64] {
        let n = self.ds_names.len();
        &self.data[i * n..(i + 1) * n]
    }

    /// The time stamp of row `i`.
    pub fn row_time(&self, i: usize) -> i64 {
        self.start + (i as i64 + 1) * self.step_secs as i64
    }
}

/// Seconds covered by one row of RRA `rra_index`, or an error for a file
/// whose step × pdp_cnt does not fit.
fn rra_step_secs(header: &Header, rra_index: usize) -> Result<i64> {
    header
        .pdp_step()
        .checked_mul(header.rra()[rra_index].pdp_count)
        .and_then(|s| i64::try_from(s).ok())
        .ok_or_else(|| Error::invalid(format!("the step of RRA {rra_index} overflows")))
}

/// Whether RRA `rra_cf` may serve a request for `wanted`: the same CF, or
/// (1.7.2's shortcut) both classic when the RRA holds one PDP per row, since
/// then AVERAGE, MIN, MAX and LAST of one value are the same number.
fn cf_serves(wanted: Cf, rra_cf: Cf, pdp_count: u64) -> bool {
    rra_cf == wanted || (pdp_count == 1 && wanted.is_classic() && rra_cf.is_classic())
}

/// The archive `fetch` reads for `cf` over `start..end` at the wished
/// resolution, or None when no RRA serves `cf`.
pub fn choose_rra(
    header: &Header,
    cf: Cf,
    start: i64,
    end: i64,
    resolution_secs: u64,
) -> Result<Option<usize>> {
    let last_up = header.live().last_up as i128;
    let wished = resolution_secs as i128;
    let mut best_full: Option<(usize, i128)> = None;
    let mut best_part: Option<(usize, i128, i128)> = None;
    for (i, rra) in header.rra().iter().enumerate() {
        if !cf_serves(cf, rra.cf, rra.pdp_count) {
            continue;
        }
        let step = rra_step_secs(header, i)? as i128;
        let cal_end = last_up - last_up % step;
        let cal_start = cal_end - step * rra.row_count as i128;
        let step_diff = (wished - step).abs();
        if cal_start <= start as i128 {
            if !matches!(best_full, Some((_, d)) if step_diff >= d) {
                best_full = Some((i, step_diff));
            }
        } else {
            let covered = (end as i128 - start as i128) - (cal_start - start as i128);
            let better = match best_part {
                None => true,
                Some((_, d, m)) => m < covered || (m == covered && step_diff < d),
            };
            if better {
                best_part = Some((i, step_diff, covered));
            }
        }
    }
    Ok(best_full.map(|b| b.0).or(best_part.map(|b| b.0)))
}

/// Where a fetch reads: the archive, the rounded range and which of the
/// archive's rows (0 = oldest) it covers.
pub(crate) struct FetchPlan {
    pub rra_index: usize,
    /// Seconds per row of the archive.
    pub step: i64,
    /// The range, rounded to the step as rrdtool rounds it.
    pub start: i64,
    pub end: i64,
    /// Rows in the range: `(end - start) / step`.
    pub rows: u64,
    /// Archive row of the range's first row (may be negative, or past
    /// the archive: those rows are unknown).
    pub first: i128,
    /// The archive rows that are stored, as archive indices
    /// `valid_from..valid_to` (empty when the range misses the archive).
    pub valid_from: i128,
    pub valid_to: i128,
    /// Rows of the archive and its ring position.
    pub row_count: i128,
    pub cur_row: i128,
}

impl FetchPlan {
    /// Chooses the archive and rounds the range, as `rrd_fetch_fn` does.
    pub(crate) fn new(
        header: &Header,
        cf: Cf,
        start: i64,
        end: i64,
        resolution_secs: u64,
    ) -> Result<FetchPlan> {
        let rra_index = choose_rra(header, cf, start, end, resolution_secs)?
            .ok_or_else(|| Error::invalid("the RRD does not contain an RRA matching the chosen CF"))?;
        let step = rra_step_secs(header, rra_index)?;
        // Wide arithmetic: the times come from the caller and the step and
        // row count from the file, and neither may make this panic. C's `%`
        // truncates toward zero, as i128's does.
        let wide_step = step as i128;
        let start = start as i128 - start as i128 % wide_step;
        let end = end as i128 + (wide_step - end as i128 % wide_step);
        let (Ok(start_secs), Ok(end_secs)) = (i64::try_from(start), i64::try_from(end)) else {
            return Err(Error::invalid("the fetch range is out of range"));
        };
        let row_count = header.rra()[rra_index].row_count as i128;
        let rows = u64::try_from((end - start) / wide_step)
            .map_err(|_| Error::invalid("the fetch end precedes its start"))?;

        let last_up = header.live().last_up as i128;
        let rra_end = last_up - last_up % wide_step;
        let rra_start = rra_end - wide_step * (row_count - 1);
        // Row i of the archive (0 = oldest) is stamped rra_start + i × step; the
        // requested rows are i = first .. last (exclusive).
        let first = (start + wide_step - rra_start) / wide_step;
        let last = row_count - (rra_end - end) / wide_step;
        debug_assert_eq!(last - first, rows as i128);
        let valid_from = first.max(0);
        let valid_to = last.min(row_count).max(valid_from);
        Ok(FetchPlan {
            rra_index,
            step,
            start: start_secs,
            end: end_secs,
            rows,
            first,
            valid_from,
            valid_to,
            row_count,
            cur_row: header.rra_ptr()[rra_index] as i128,
        })
    }

    /// Reads the stored archive rows `from..to` (archive indices within
    /// `valid_from..valid_to`), oldest first, appending them to `out`: at
    /// most two reads (the rows may wrap around the end of the ring).
    pub(crate) fn read<S: Store>(
        &self,
        rrd: &Rrd<S>,
        from: i128,
        to: i128,
        out: &mut Vec<f64>,
    ) -> Result<()> {
        debug_assert!(self.valid_from <= from && from <= to && to <= self.valid_to);
        if from >= to {
            return Ok(());
        }
        // The oldest row sits just after cur_row; archive row i is ring row
        // (cur_row + 1 + i) mod row_count. Every value here is below
        // row_count, so it fits a u64.
        let ring_first = (self.cur_row + 1 + from) % self.row_count;
        let count = to - from;
        let before_wrap = count.min(self.row_count - ring_first);
        out.extend(rrd.read_rows(self.rra_index, ring_first as u64, before_wrap as u64)?);
        if before_wrap < count {
            out.extend(rrd.read_rows(self.rra_index, 0, (count - before_wrap) as u64)?);
        }
        Ok(())
    }
}

/// [`FetchResult`] without its padding: the rows outside the archive are
/// counted, not stored, so memory is bounded by the archive's rows
/// whatever range was asked for (a daemon streams the rows from here).
#[derive(Clone, Debug, PartialEq)]
pub struct FetchRows {
    /// As [`FetchResult::start`].
    pub start: i64,
    /// As [`FetchResult::end`].
    pub end: i64,
    pub step_secs: u64,
    pub rra_index: usize,
    pub ds_names: Vec<String>,
    /// Rows before the archive's oldest (all [`FILL_NAN`]).
    pub before: u64,
    /// The stored rows in range, row-major.
    pub stored: Vec<f64>,
    /// Rows after the archive's newest (all [`FILL_NAN`]).
    pub after: u64,
}

impl FetchRows {
    /// Rows in the range, padding included.
    pub fn row_count(&self) -> u64 {
        self.before + self.stored_rows() + self.after
    }

    fn stored_rows(&self) -> u64 {
        self.stored.len().checked_div(self.ds_names.len()).unwrap_or(0) as u64
    }

    /// Row `i`'s values, `None` for a padding row (every value
    /// [`FILL_NAN`]) or a row past the end.
    pub fn row(&self, i: u64) -> Option<&[f64]> {
        let n = self.ds_names.len();
        let j = usize::try_from(i.checked_sub(self.before)?).ok()?;
        self.stored.get(j * n..(j + 1) * n)
    }

    /// The time stamp of row `i`.
    pub fn row_time(&self, i: u64) -> i64 {
        self.start + (i as i64 + 1) * self.step_secs as i64
    }

    /// The rows with their padding, as [`fetch`] returns them; refused past
    /// [`MAX_FETCH_VALUES`].
    pub fn into_result(self) -> Result<FetchResult> {
        let ds_count = self.ds_names.len();
        let total = usize::try_from(self.row_count()).ok().and_then(|r| r.checked_mul(ds_count));
        if !matches!(total, Some(n) if n <= MAX_FETCH_VALUES) {
            return Err(Error::invalid("fetch data size overflow"));
        }
        let mut data = Vec::with_capacity(total.unwrap_or(0));
        // Both pads are at most the row count, which is bounded above.
        data.resize(self.before as usize * ds_count, FILL_NAN);
        data.extend_from_slice(&self.stored);
        data.resize(data.len() + self.after as usize * ds_count, FILL_NAN);
        Ok(FetchResult {
            start: self.start,
            end: self.end,
            step_secs: self.step_secs,
            rra_index: self.rra_index,
            ds_names: self.ds_names,
            data,
            past_end: None,
        })
    }
}

/// Fetches `cf` data for `start..end` at (about) `resolution_secs`, exactly
/// as `rrdtool fetch` and the graph/xport DEFs do.
pub fn fetch<S: Store>(
    rrd: &Rrd<S>,
    cf: Cf,
    start: i64,
    end: i64,
    resolution_secs: u64,
) -> Result<FetchResult> {
    let plan = FetchPlan::new(&rrd.header, cf, start, end, resolution_secs)?;
    let ds_count = rrd.header.ds().len();
    // Refused before anything is read, as before the rows were counted.
    if !matches!(usize::try_from(plan.rows).ok().and_then(|r| r.checked_mul(ds_count)), Some(n) if n <= MAX_FETCH_VALUES)
    {
        return Err(Error::invalid("fetch data size overflow"));
    }
    rows_of_plan(rrd, &plan)?.into_result()
}

/// [`fetch`] without materialising the padding: see [`FetchRows`]. Any
/// range is answered (reads are bounded by the archive).
pub fn fetch_rows<S: Store>(
    rrd: &Rrd<S>,
    cf: Cf,
    start: i64,
    end: i64,
    resolution_secs: u64,
) -> Result<FetchRows> {
    let plan = FetchPlan::new(&rrd.header, cf, start, end, resolution_secs)?;
    rows_of_plan(rrd, &plan)
}

fn rows_of_plan<S: Store>(rrd: &Rrd<S>, plan: &FetchPlan) -> Result<FetchRows> {
    let header = &rrd.header;
    let last = plan.first + plan.rows as i128;
    // Every bound here is within 0..=rows (a u64).
    let before = (plan.valid_from.min(last) - plan.first).max(0) as u64;
    let after = (last - plan.valid_to.max(plan.first)).max(0) as u64;
    let mut stored = Vec::new();
    plan.read(rrd, plan.valid_from, plan.valid_to, &mut stored)?;
    let ds_names = header.ds().iter().map(|d| d.name.as_str().to_string()).collect();
    Ok(FetchRows {
        start: plan.start,
        end: plan.end,
        step_secs: plan.step as u64,
        rra_index: plan.rra_index,
        ds_names,
        before,
        stored,
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemStore;
    use std::path::Path;

    /// A one-DS file with the given RRAs (cf, pdp_count, row_count), rows
    /// filled with `ring position + 1000 × rra index` so reads can be checked.
    fn file(step: u64, last_up: i64, rras: &[(Cf, u64, u64, u64)]) -> Rrd<MemStore> {
        crate::testfile::mem_file(step, last_up, &["x"], rras, |i, row, _| (row + 1000 * i as u64) as f64)
    }

    #[test]
    fn rows_wrap_around_the_ring_and_pad_with_nan() {
        // 10 rows of 300 s, cur_row 3: the oldest row is ring row 4.
        let rrd = file(300, 6000 + 150, &[(Cf::Average, 1, 10, 3)]);
        // rra_end = 6000, rra_start = 3300. Ask 2700..6599: one row before
        // the archive, its ten rows, two after.
        let r = fetch(&rrd, Cf::Average, 2700, 6599, 1).unwrap();
        assert_eq!((r.start, r.end, r.step_secs), (2700, 6600, 300));
        let want: Vec<f64> = [f64::NAN]
            .into_iter()
            .chain([4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 0.0, 1.0, 2.0, 3.0])
            .chain([f64::NAN, f64::NAN])
            .collect();
        assert_eq!(r.row_count(), want.len());
        for (got, want) in r.data.iter().zip(&want) {
            assert!(got == want || (got.is_nan() && want.is_nan()), "{:?}", r.data);
        }
        assert_eq!(r.row_time(0), 3000);
    }

    /// A range far wider than the archive: the padding is counted, not
    /// stored, and expands to exactly what `fetch` returns.
    #[test]
    fn fetch_rows_counts_the_padding_and_matches_fetch() {
        let rrd = file(300, 6000 + 150, &[(Cf::Average, 1, 10, 3)]);
        let huge = fetch_rows(&rrd, Cf::Average, 6000 - 300 * 100_000_000, 6000 + 300 * 1000, 1).unwrap();
        assert_eq!(huge.row_count(), 100_000_000 + 1001);
        assert_eq!(huge.after, 1001);
        assert_eq!(huge.stored.len(), 10);
        assert_eq!(huge.before, 100_000_000 - 10);
        assert!(huge.row(0).is_none() && huge.row(huge.before).is_some());
        let r = fetch_rows(&rrd, Cf::Average, 2700, 6599, 1).unwrap();
        assert_eq!((r.before, r.stored.len(), r.after), (1, 10, 2));
        let full = fetch(&rrd, Cf::Average, 2700, 6599, 1).unwrap();
        let expanded = r.into_result().unwrap();
        assert_eq!(expanded.data.len(), full.data.len());
        assert!(expanded.data.iter().zip(&full.data).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    /// A store that records every read (offset, length) it serves.
    struct Counting(MemStore, std::sync::Mutex<Vec<(u64, usize)>>);

    impl Store for Counting {
        fn len(&self) -> std::io::Result<u64> {
            self.0.len()
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.1.lock().unwrap().push((offset, buf.len()));
            self.0.read_at(buf, offset)
        }
        fn write_at(&self, _: &[u8], _: u64) -> std::io::Result<()> {
            panic!("fetch must not write");
        }
    }

    #[test]
    fn reads_only_the_rows_in_range_in_at_most_two_reads() {
        let mem = file(300, 6000 + 150, &[(Cf::Average, 1, 10, 3), (Cf::Average, 4, 10, 0)]);
        let bytes = mem.store.into_inner();
        let rrd =
            Rrd::from_store(Path::new("c.rrd"), Counting(MemStore::new(bytes), Default::default())).unwrap();
        rrd.store.1.lock().unwrap().clear();
        // Rows stamped 3600..6000 are ring rows 5..9 then 0..3 (wrapped):
        // two reads of exactly those rows.
        let r = fetch(&rrd, Cf::Average, 3300, 5700, 300).unwrap();
        assert_eq!(r.data, vec![5.0, 6.0, 7.0, 8.0, 9.0, 0.0, 1.0, 2.0, 3.0]);
        let reads = rrd.store.1.lock().unwrap().clone();
        let row0 = rrd.layout().row_off(0, 0);
        assert_eq!(reads, vec![(row0 + 5 * 8, 5 * 8), (row0, 4 * 8)]);
        // A range wholly outside the archive reads nothing.
        rrd.store.1.lock().unwrap().clear();
        let r = fetch(&rrd, Cf::Average, 7000, 8000, 300).unwrap();
        assert!(r.data.iter().all(|v| v.is_nan()));
        assert!(rrd.store.1.lock().unwrap().is_empty());
    }

    #[test]
    fn hostile_times_and_steps_are_errors_not_panics() {
        let rrd = file(300, 6150, &[(Cf::Average, 1, 10, 3)]);
        assert!(fetch(&rrd, Cf::Average, i64::MIN, i64::MAX, 1).is_err());
        assert!(fetch(&rrd, Cf::Average, 0, i64::MAX, 1).is_err());
        assert!(fetch(&rrd, Cf::Average, 5000, 100, 1).is_err());
        assert!(fetch(&rrd, Cf::Average, i64::MAX - 10, i64::MAX, u64::MAX).is_err());
        // A step whose archive spans more than i64 seconds.
        let huge = file(u64::MAX / 2, 6150, &[(Cf::Average, 3, 10, 3)]);
        assert!(fetch(&huge, Cf::Average, 0, 100, 1).is_err());
    }

    #[test]
    fn full_match_beats_partial_and_closest_step_wins() {
        let rrd = file(300, 1_000_000, &[(Cf::Average, 1, 10, 0), (Cf::Average, 12, 100, 0)]);
        // Only the coarse archive covers a start a day back.
        assert_eq!(choose_rra(&rrd.header, Cf::Average, 1_000_000 - 86_400, 1_000_000, 1).unwrap(), Some(1));
        // Both cover the last 10 minutes: the one closest to 300 s wins.
        assert_eq!(choose_rra(&rrd.header, Cf::Average, 1_000_000 - 600, 1_000_000, 1).unwrap(), Some(0));
        assert_eq!(choose_rra(&rrd.header, Cf::Average, 1_000_000 - 600, 1_000_000, 3600).unwrap(), Some(1));
        // MIN is served by the one-PDP AVERAGE archive, MAX of 12 PDPs is not.
        assert_eq!(choose_rra(&rrd.header, Cf::Minimum, 1_000_000 - 600, 1_000_000, 1).unwrap(), Some(0));
        assert_eq!(choose_rra(&rrd.header, Cf::HwPredict, 0, 1, 1).unwrap(), None);
    }
}
