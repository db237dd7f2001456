//! RRDtool 1.7.2's `rrd_reduce_data`: how graph and xport consolidate a
//! DEF's fetched rows to a coarser step (the graph's pixel step, or the
//! DEF's own `step=`) when the archive they come from is finer.
//!
//! One arithmetic, two ways of feeding it:
//! - [`reduce_result`] consolidates rows already in memory (what a daemon's
//!   FETCH answered);
//! - [`fetch_reduced`] consolidates while reading the archive, and never
//!   holds the fine rows: the rows outside the archive, which rrdtool's
//!   fetch fills with NaN before reducing them, become unknown output rows
//!   without being made, and the stored rows are read in chunks of at most
//!   [`CHUNK_VALUES`] values.
//!
//! Memory bound of [`fetch_reduced`]: the output (`(end - start) / step + 2`
//! rows of one value per DS, where `step` is at least the requested one,
//! so for a graph about its width) plus one chunk of [`CHUNK_VALUES`]
//! doubles (512 KiB), whatever the range and the archive's step. Time:
//! linear in the output rows plus the archive rows stored in the range.
//! A 53-year range over a 1-minute archive (28 million rows, 440 MB when
//! fetched whole) is reduced to 400 pixels in a few KiB.
//!
//! The result is the same as `fetch` followed by `rrd_reduce_data`, value
//! for value: each output row consolidates the same rows in the same order
//! (unknown rows contribute nothing to a consolidation, so skipping the
//! ones that are not stored changes no sum, count, minimum or maximum).
//!
//! Deliberately absent: the decision of which step to reduce to (the
//! caller's: `xport` and `graph` pass the larger of the DEF's step and the
//! global one).

use rrd_format::Cf;

use crate::error::{Error, Result};
use crate::fetch::{fetch, FetchPlan, FetchResult, FILL_NAN, MAX_FETCH_VALUES};
use crate::rrd::Rrd;
use crate::store::Store;

/// Values read from an archive at a time by [`fetch_reduced`].
pub const CHUNK_VALUES: usize = 1 << 16;

/// The geometry of one reduction: `rrd_reduce_data`'s arithmetic on the
/// fetched range, before any value is looked at.
#[derive(Clone, Debug, PartialEq)]
struct Reduction {
    /// Fetched rows per output row.
    factor: i64,
    /// The output's step, start and end.
    step: i64,
    start: i64,
    end: i64,
    /// Fetched rows before the first consolidated group (they belong to
    /// the unknown first row that a misaligned start makes).
    skip: u64,
    /// An unknown first row (misaligned start) and last row (misaligned end).
    lead: bool,
    trail: bool,
    /// Consolidated rows between them.
    groups: u64,
}

impl Reduction {
    /// `cur_step` is the fetched step, `start..end` the fetched range and
    /// `step` the wished one.
    fn new(cur_step: i64, start: i64, end: i64, step: i64) -> Result<Reduction> {
        let factor = ((step as f64) / (cur_step as f64)).ceil() as i64;
        if cur_step <= 0 || factor <= 0 {
            return Err(Error::invalid(format!("cannot reduce rows of {cur_step} s to {step} s")));
        }
        // Ranges and steps that overflow (hostile DEF times) are errors.
        let overflow = || Error::invalid("the reduced range is out of range");
        let step = cur_step.checked_mul(factor).ok_or_else(overflow)?;
        // RRDtool counts rows in an unsigned long; wrapping keeps its
        // verdicts on short ranges (a sanity-check error rather than a panic).
        let mut row_count = (end.checked_sub(start).ok_or_else(overflow)? / cur_step) as u64;
        let end_offset = end % step;
        let start_offset = start % step;
        let (mut start, mut end) = (start, end);
        let mut skip = 0;
        if start_offset != 0 {
            start -= start_offset;
            skip = (factor - start_offset / cur_step) as u64;
            row_count = row_count.wrapping_sub(skip);
        }
        if end_offset != 0 {
            end = (end - end_offset).checked_add(step).ok_or_else(overflow)?;
            row_count = row_count.wrapping_sub((end_offset / cur_step) as u64);
        }
        if !row_count.is_multiple_of(factor as u64) {
            return Err(Error::invalid(format!(
                "SANITY CHECK: {row_count} rows cannot be reduced by {factor} \n"
            )));
        }
        // rrdtool consolidates while the count, as a signed number, is at
        // least one group.
        let groups = if (row_count as i64) >= factor { row_count / factor as u64 } else { 0 };
        Ok(Reduction {
            factor,
            step,
            start,
            end,
            skip,
            lead: start_offset != 0,
            trail: end_offset != 0,
            groups,
        })
    }

    /// The output's values, refused beyond what a fetch may return.
    fn out_values(&self, ds_count: usize) -> Result<usize> {
        let rows = self.groups as u128 + u128::from(self.lead) + u128::from(self.trail);
        match usize::try_from(rows * ds_count as u128) {
            Ok(n) if n <= MAX_FETCH_VALUES => Ok(n),
            _ => Err(Error::invalid("reduced data size overflow")),
        }
    }
}

/// One output row being consolidated: per DS, the running value and how
/// many known values went into it, as `rrd_reduce_data` keeps them.
struct Consolidation {
    cf: Cf,
    acc: Vec<f64>,
    valid: Vec<u64>,
}

impl Consolidation {
    fn new(cf: Cf, ds_count: usize) -> Consolidation {
        Consolidation { cf, acc: vec![f64::NAN; ds_count], valid: vec![0; ds_count] }
    }

    /// Adds the next fetched row (unknown values are skipped).
    fn add(&mut self, row: &[f64]) {
        for ((acc, valid), &v) in self.acc.iter_mut().zip(&mut self.valid).zip(row) {
            if v.is_nan() {
                continue;
            }
            *valid += 1;
            // A sum that became NaN (inf - inf) restarts, as in rrdtool.
            *acc = if acc.is_nan() {
                v
            } else {
                match self.cf {
                    Cf::Minimum => acc.min(v),
                    Cf::Maximum | Cf::Failures => acc.max(v),
                    Cf::Last => v,
                    _ => *acc + v,
                }
            };
        }
    }

    /// Appends the consolidated row to `out` and starts the next one.
    fn finish(&mut self, out: &mut Vec<f64>) {
        for (acc, valid) in self.acc.iter_mut().zip(&mut self.valid) {
            out.push(match (*valid, self.cf) {
                (0, _) => FILL_NAN,
                (_, Cf::Minimum | Cf::Maximum | Cf::Failures | Cf::Last) => *acc,
                _ => *acc / *valid as f64,
            });
            *acc = f64::NAN;
            *valid = 0;
        }
    }
}

/// Appends `rows` unknown rows of `ds_count` values.
fn unknown_rows(out: &mut Vec<f64>, rows: u64, ds_count: usize) {
    out.resize(out.len() + rows as usize * ds_count, FILL_NAN);
}

/// The fetched rows (row-major, `ds_count` values a row, the first
/// covering `(start, start + cur_step]`) consolidated with `cf` to about
/// `step`: the new start, end and step, and the rows.
pub fn reduce(
    cf: Cf,
    cur_step: i64,
    start: i64,
    end: i64,
    step: i64,
    ds_count: usize,
    data: &[f64],
) -> Result<(i64, i64, i64, Vec<f64>)> {
    let r = Reduction::new(cur_step, start, end, step)?;
    let mut out = Vec::with_capacity(r.out_values(ds_count)?);
    let rows = data.len().checked_div(ds_count).unwrap_or(0) as u64;
    let factor = r.factor as u64;
    if r.lead {
        unknown_rows(&mut out, 1, ds_count);
    }
    let mut group = Consolidation::new(cf, ds_count);
    for g in 0..r.groups {
        // Rows past the data are unknown (rrdtool reads NaN there too).
        let from = (r.skip + g * factor).min(rows);
        let to = (r.skip + (g + 1) * factor).min(rows);
        for k in from..to {
            let k = k as usize * ds_count;
            group.add(&data[k..k + ds_count]);
        }
        group.finish(&mut out);
    }
    if r.trail {
        unknown_rows(&mut out, 1, ds_count);
    }
    Ok((r.start, r.end, r.step, out))
}

/// A fetch result consolidated to at least `min_step` seconds a row with
/// `cf` when its rows are finer (as graph and xport do with every DEF);
/// returned as it is otherwise.
pub fn reduce_result(got: FetchResult, min_step: i64, cf: Cf) -> Result<FetchResult> {
    let cur_step = got.step_secs as i64;
    if cur_step >= min_step {
        return Ok(got);
    }
    let ds_count = got.ds_names.len();
    let (start, end, step, data) = reduce(cf, cur_step, got.start, got.end, min_step, ds_count, &got.data)?;
    // The fetched row at the consolidated row count (see `past_end`).
    let at = data.len();
    let past_end = got.data.get(at..at + ds_count).filter(|_| ds_count > 0).map(<[f64]>::to_vec);
    Ok(FetchResult { start, end, step_secs: step as u64, data, past_end, ..got })
}

/// [`fetch`] followed by [`reduce_result`], without holding the fetched
/// rows: see the module documentation for the memory bound.
pub fn fetch_reduced<S: Store>(
    rrd: &Rrd<S>,
    cf: Cf,
    start: i64,
    end: i64,
    resolution_secs: u64,
    min_step: i64,
    reduce_cf: Cf,
) -> Result<FetchResult> {
    let header = &rrd.header;
    let plan = FetchPlan::new(header, cf, start, end, resolution_secs)?;
    if plan.step >= min_step {
        // Rows at least as coarse as wished: as many as the caller's step
        // allows over the range.
        return fetch(rrd, cf, start, end, resolution_secs);
    }
    let ds_count = header.ds().len();
    let ds_names = header.ds().iter().map(|d| d.name.as_str().to_string()).collect();
    let r = Reduction::new(plan.step, plan.start, plan.end, min_step)?;
    let mut out = Vec::with_capacity(r.out_values(ds_count)?);
    if r.lead {
        unknown_rows(&mut out, 1, ds_count);
    }
    // Fetched row k is archive row plan.first + k. The stored ones that
    // fall into a group: lo..hi (fetched indices).
    let (skip, factor) = (r.skip as i128, r.factor as i128);
    let grouped_end = skip + r.groups as i128 * factor;
    let lo = (plan.valid_from - plan.first).max(skip);
    let hi = (plan.valid_to - plan.first).min(grouped_end);
    if lo < hi {
        let first_group = ((lo - skip) / factor) as u64;
        let last_group = ((hi - 1 - skip) / factor) as u64;
        unknown_rows(&mut out, first_group, ds_count);
        let mut group = Consolidation::new(reduce_cf, ds_count);
        let mut current = first_group as i128;
        let chunk_rows = (CHUNK_VALUES / ds_count.max(1)).max(1) as i128;
        let mut buf = Vec::with_capacity(chunk_rows as usize * ds_count);
        let mut k = lo;
        while k < hi {
            let n = chunk_rows.min(hi - k);
            buf.clear();
            plan.read(rrd, plan.first + k, plan.first + k + n, &mut buf)?;
            for (i, row) in buf.chunks_exact(ds_count.max(1)).enumerate() {
                let g = (k + i as i128 - skip) / factor;
                while current < g {
                    group.finish(&mut out);
                    current += 1;
                }
                group.add(row);
            }
            k += n;
        }
        group.finish(&mut out);
        unknown_rows(&mut out, r.groups - last_group - 1, ds_count);
    } else {
        unknown_rows(&mut out, r.groups, ds_count);
    }
    if r.trail {
        unknown_rows(&mut out, 1, ds_count);
    }
    let past_end = fetched_row(rrd, &plan, (out.len() / ds_count.max(1)) as i128, ds_count)?;
    Ok(FetchResult {
        start: r.start,
        end: r.end,
        step_secs: r.step as u64,
        rra_index: plan.rra_index,
        ds_names,
        data: out,
        past_end,
    })
}

/// Fetched row `k` (archive row `plan.first + k`) as `fetch` would return
/// it: stored, or unknown outside the archive's valid rows; `None` past the
/// fetched rows (see [`FetchResult::past_end`]).
fn fetched_row<S: Store>(
    rrd: &Rrd<S>,
    plan: &FetchPlan,
    k: i128,
    ds_count: usize,
) -> Result<Option<Vec<f64>>> {
    if ds_count == 0 || k >= plan.rows as i128 {
        return Ok(None);
    }
    let row = plan.first + k;
    if row < plan.valid_from || row >= plan.valid_to {
        return Ok(Some(vec![FILL_NAN; ds_count]));
    }
    let mut buf = Vec::with_capacity(ds_count);
    plan.read(rrd, row, row + 1, &mut buf)?;
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemStore;
    use std::path::Path;

    /// A two-DS file with the given RRAs (cf, pdp_count, row_count,
    /// cur_row), each value from `value(rra, ring row, ds)`.
    fn file(
        step: u64,
        last_up: i64,
        rras: &[(Cf, u64, u64, u64)],
        value: impl Fn(usize, u64, usize) -> f64,
    ) -> Rrd<MemStore> {
        crate::testfile::mem_file(step, last_up, &["x", "y"], rras, value)
    }

    fn same_bits(a: &FetchResult, b: &FetchResult) -> bool {
        a.start == b.start
            && a.end == b.end
            && a.step_secs == b.step_secs
            && a.ds_names == b.ds_names
            && a.data.len() == b.data.len()
            && a.data.iter().zip(&b.data).all(|(x, y)| x.to_bits() == y.to_bits())
            && a.past_end.as_ref().map(|r| r.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
                == b.past_end.as_ref().map(|r| r.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
    }

    #[test]
    fn reduce_consolidates_and_pads_like_rrdtool() {
        // Six 300 s rows from 900 to 2700, reduced to 900 s: start and end
        // are already aligned, so two full rows.
        let data = [1.0, 2.0, 3.0, 4.0, f64::NAN, 6.0];
        let (start, end, step, out) = reduce(Cf::Average, 300, 900, 2700, 900, 1, &data).unwrap();
        assert_eq!((start, end, step), (900, 2700, 900));
        assert_eq!(out, vec![2.0, 5.0]);
        let (.., out) = reduce(Cf::Maximum, 300, 900, 2700, 900, 1, &data).unwrap();
        assert_eq!(out, vec![3.0, 6.0]);
        // A misaligned start drops the partial first row and pads with NaN.
        let (start, end, _, out) = reduce(Cf::Average, 300, 1200, 2700, 900, 1, &data[1..]).unwrap();
        assert_eq!((start, end), (900, 2700));
        assert!(out[0].is_nan());
        assert_eq!(out[1], 5.0);
        // A sum that meets inf - inf restarts from the next known value.
        let data = [f64::INFINITY, f64::NEG_INFINITY, 4.0];
        let (.., out) = reduce(Cf::Average, 300, 900, 1800, 900, 1, &data).unwrap();
        assert_eq!(out, vec![4.0 / 3.0]);
    }

    /// RRDtool consolidates in place: after the consolidated rows its
    /// buffer still holds the fetched rows, and the one at the consolidated
    /// row count is what its PREDICT reads one step past the end.
    #[test]
    fn the_row_after_consolidated_data_is_the_fetched_one() {
        let got = FetchResult {
            start: 900,
            end: 2700,
            step_secs: 300,
            rra_index: 0,
            ds_names: vec!["x".into(), "y".into()],
            data: vec![1.0, 10.0, 2.0, 20.0, 3.0, 30.0, 4.0, 40.0, 5.0, 50.0, 6.0, 60.0],
            past_end: None,
        };
        let reduced = reduce_result(got.clone(), 900, Cf::Average).unwrap();
        assert_eq!(reduced.data, vec![2.0, 20.0, 5.0, 50.0]);
        assert_eq!(reduced.past_end, Some(vec![3.0, 30.0]));
        // Not consolidated: nothing is known past the end.
        assert_eq!(reduce_result(got, 300, Cf::Average).unwrap().past_end, None);
    }

    /// Reducing while reading gives the bits that fetching every row and
    /// then reducing gives: ranges before, across, inside and after the
    /// archive, aligned or not, every CF, unknown and infinite values, a
    /// ring that wraps, steps that are and are not multiples.
    #[test]
    fn streaming_equals_fetch_then_reduce() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        let values: Vec<f64> = (0..4000)
            .map(|_| match next() % 23 {
                0..=2 => f64::NAN,
                3 => f64::INFINITY,
                4 => f64::NEG_INFINITY,
                n => n as f64 * 1.25 + (next() % 1000) as f64 / 7.0,
            })
            .collect();
        let value =
            |rra: usize, row: u64, ds: usize| values[(rra * 997 + row as usize * 2 + ds) % values.len()];
        let last_up = 1_700_000_000 + 17;
        let rrd = file(
            60,
            last_up,
            &[(Cf::Average, 1, 1500, 733), (Cf::Maximum, 1, 700, 0), (Cf::Average, 5, 300, 299)],
            value,
        );
        let mut checked = 0;
        for cf in [Cf::Average, Cf::Maximum] {
            for reduce_cf in [Cf::Average, Cf::Minimum, Cf::Maximum, Cf::Last, Cf::Failures] {
                for (back, span) in [
                    (100_000, 50_000),
                    (100_000, 200_000),
                    (90_001, 80_013),
                    (30_000, 3_000),
                    (1_000, 500_000),
                    (-5_000, 20_000),
                    (40_000_000, 10_000),
                ] {
                    for min_step in [1, 60, 61, 120, 299, 300, 777, 3600, 86_400] {
                        let start = last_up - back;
                        let end = start + span;
                        let streamed = fetch_reduced(&rrd, cf, start, end, 60, min_step, reduce_cf);
                        let whole = fetch(&rrd, cf, start, end, 60)
                            .and_then(|got| reduce_result(got, min_step, reduce_cf));
                        match (streamed, whole) {
                            (Ok(a), Ok(b)) => {
                                assert!(
                                    same_bits(&a, &b),
                                    "{cf:?}/{reduce_cf:?} {start}..{end} step {min_step}:\n{a:?}\n{b:?}"
                                );
                                checked += a.data.iter().filter(|v| !v.is_nan()).count();
                            }
                            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                            (a, b) => panic!("{cf:?} {start}..{end} step {min_step}: {a:?} vs {b:?}"),
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000, "only {checked} known values compared");
    }

    #[test]
    fn hostile_ranges_and_steps_are_errors_not_panics() {
        let rrd = file(60, 1_700_000_017, &[(Cf::Average, 1, 100, 5)], |_, row, _| row as f64);
        for (start, end) in [(i64::MIN, i64::MAX), (0, i64::MAX), (i64::MIN, 0), (i64::MAX - 10, i64::MAX)] {
            for min_step in [61, 1 << 40, i64::MAX] {
                let _ = fetch_reduced(&rrd, Cf::Average, start, end, 60, min_step, Cf::Average);
            }
        }
        assert!(reduce(Cf::Average, 0, 0, 600, 300, 1, &[1.0]).is_err());
        assert!(reduce(Cf::Average, 60, i64::MIN, i64::MAX - 100, 300, 1, &[1.0]).is_err());
        // A step of 292 billion years is silly but fits: one unknown row.
        let (.., out) = reduce(Cf::Average, 60, 0, 600, i64::MAX, 1, &[1.0]).unwrap();
        assert!(out.iter().all(|v| v.is_nan()));
    }

    /// A store that counts the bytes read.
    struct Counting(MemStore, std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64);

    impl Store for Counting {
        fn len(&self) -> std::io::Result<u64> {
            self.0.len()
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            use std::sync::atomic::Ordering::Relaxed;
            self.1.fetch_add(buf.len() as u64, Relaxed);
            self.2.fetch_max(buf.len() as u64, Relaxed);
            self.0.read_at(buf, offset)
        }
        fn write_at(&self, _: &[u8], _: u64) -> std::io::Result<()> {
            panic!("fetch must not write");
        }
    }

    /// 53 years over a 1-minute archive (28 million fetched rows, which
    /// `fetch` refuses to materialise for more than a few DS): the output
    /// has one row per wished step, only stored rows are read, in chunks.
    #[test]
    fn long_ranges_cost_the_output_and_the_stored_rows() {
        let last_up = 1_999_999_980;
        let rows = 200_000u64;
        let mem =
            file(60, last_up, &[(Cf::Average, 1, rows, 12_345)], |_, row, ds| (row * 2 + ds as u64) as f64);
        let bytes = mem.store.into_inner();
        let counting = Counting(MemStore::new(bytes), Default::default(), Default::default());
        let rrd = Rrd::from_store(Path::new("c.rrd"), counting).unwrap();
        let (start, end) = (315_360_011, 2_000_000_000);
        let min_step = (end - start) / 400;
        let r = fetch_reduced(&rrd, Cf::Average, start, end, min_step as u64, min_step, Cf::Average).unwrap();
        assert_eq!(r.step_secs as i64, (min_step + 59) / 60 * 60);
        assert!(r.row_count() <= 402, "{} rows", r.row_count());
        let known = r.data.iter().filter(|v| !v.is_nan()).count();
        // The archive's 139 days are about three 49-day output rows.
        assert!(known >= 2 * 2, "the archive's rows are in the output ({known} values)");
        use std::sync::atomic::Ordering::Relaxed;
        let row_bytes = 16;
        assert!(rrd.store.1.load(Relaxed) <= rows * row_bytes, "read {} bytes", rrd.store.1.load(Relaxed));
        assert!(
            rrd.store.2.load(Relaxed) <= CHUNK_VALUES as u64 * 8,
            "a read of {} bytes",
            rrd.store.2.load(Relaxed)
        );
        // The same numbers as the archive's own rows, averaged by hand for
        // the last complete output row.
        let step = r.step_secs as i64;
        let last_row = (0..r.row_count()).rev().find(|&i| !r.row(i)[0].is_nan()).unwrap();
        let row_end = r.start + (last_row as i64 + 1) * step;
        let whole = fetch(&rrd, Cf::Average, row_end - step, row_end - 60, 60).unwrap();
        assert_eq!(whole.start, row_end - step);
        let x: Vec<f64> = (0..whole.row_count()).map(|i| whole.row(i)[0]).filter(|v| !v.is_nan()).collect();
        let average = x.iter().sum::<f64>() / x.len() as f64;
        assert_eq!(r.row(last_row)[0], average);
    }
}
