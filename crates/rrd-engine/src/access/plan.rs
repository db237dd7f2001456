//! Knowing what an update will touch before touching it.
//!
//! Given a file's header state and the update arguments, [`plan_update`]
//! returns the exact byte ranges the update reads and writes, and the pages
//! they fall in. It runs the real update arithmetic on a copy of the header
//! (the math never does I/O, so this costs microseconds and no syscalls), so
//! the plan cannot drift from what [`crate::update`] does.
//!
//! Users: the page-cache simulator and benchmarks (pages per update), the
//! daemon and pipe mode (prefetch exactly the pages the next updates need,
//! many files at once, before writing any of them).

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::Path;

use rrd_format::{Header, Layout};

use crate::batch::UpdateRequest;
use crate::update::{Now, RowSink, UpdateOptions, Updater};

/// The bytes an update touches, in file order, adjacent ranges merged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdatePlan {
    /// Bytes read: the header, and for files with Holt-Winters archives the
    /// seasonal rows the update looks up (whole seasonal archives when the
    /// smoother runs).
    pub reads: Vec<Range<u64>>,
    /// Bytes written: the rows it produces and the live header.
    pub writes: Vec<Range<u64>>,
    /// The header after the update (what the file will hold).
    pub header_after: Option<Header>,
    /// The first argument that would fail, if any (the plan covers the
    /// arguments before it, which rrdtool also applies).
    pub error: Option<String>,
}

/// Page size assumed for page lists (x86_64 Linux).
pub const PAGE_LEN: u64 = 4096;

impl UpdatePlan {
    /// Pages read or written, sorted and unique.
    pub fn pages(&self) -> Vec<u64> {
        pages_of(self.reads.iter().chain(self.writes.iter()))
    }

    /// Pages written, sorted and unique.
    pub fn write_pages(&self) -> Vec<u64> {
        pages_of(self.writes.iter())
    }
}

/// The pages (of [`PAGE_LEN`] bytes) covered by `ranges`, sorted and unique.
pub fn pages_of<'a>(ranges: impl Iterator<Item = &'a Range<u64>>) -> Vec<u64> {
    let mut pages: Vec<u64> =
        ranges.filter(|r| !r.is_empty()).flat_map(|r| r.start / PAGE_LEN..=(r.end - 1) / PAGE_LEN).collect();
    pages.sort_unstable();
    pages.dedup();
    pages
}

/// Merges overlapping or adjacent ranges of a sorted list.
fn merge(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

struct RangeSink<'l> {
    layout: &'l Layout,
    ranges: Vec<Range<u64>>,
}

impl RowSink for RangeSink<'_> {
    fn row(&mut self, rra_index: usize, row_index: u64, _rra_time: i64, _values: &[f64]) {
        let off = self.layout.row_off(rra_index, row_index);
        self.ranges.push(off..off + self.layout.row_len());
    }
}

/// Plans `args` applied to a file whose header is `header`.
///
/// Without the file's rows, the seasonal rows a Holt-Winters update looks up
/// read as zeros: the ranges are exact (the smoother is planned as if no
/// seasonal value were unknown, so it may list rows the real update leaves
/// alone), but the Holt-Winters coefficients in `header_after` are not the
/// file's. [`plan_update_with_rows`] reads the real rows.
pub fn plan_update(
    header: &Header,
    args: &[String],
    opts: &UpdateOptions,
    now: Now,
) -> crate::Result<UpdatePlan> {
    plan_update_with_rows(header, args, opts, now, None)
}

/// [`plan_update`], reading seasonal rows from `store` (which must hold the
/// file `header` describes); the plan is then exact, `header_after` included.
pub fn plan_update_with_rows(
    header: &Header,
    args: &[String],
    opts: &UpdateOptions,
    now: Now,
    store: Option<&dyn crate::Store>,
) -> crate::Result<UpdatePlan> {
    let layout = header.layout();
    let mut after = header.clone();
    let mut sink = RangeSink { layout, ranges: Vec::new() };
    let mut error = None;
    let reads = std::cell::RefCell::new(std::iter::once(0..layout.data_off).collect::<Vec<_>>());
    {
        let mut real = store.map(crate::update::row_reader);
        let mut updater = Updater::new(&mut after, opts, now)?;
        let (layout_ref, reads_ref) = (layout, &reads);
        updater.set_row_reader(Box::new(move |_, rra, first, out: &mut [f64]| {
            let count = out.len() as u64 / layout_ref.ds_count.max(1);
            if count > 0 {
                let start = layout_ref.row_off(rra, first);
                reads_ref.borrow_mut().push(start..start + count * layout_ref.row_len());
            }
            match &mut real {
                Some(read) => read(layout_ref, rra, first, out),
                None => {
                    out.fill(0.0);
                    Ok(())
                }
            }
        }));
        for arg in args {
            if let Err(e) = updater.apply(arg, opts.skip_past_updates, &mut sink) {
                error = Some(e.to_string());
                break;
            }
        }
        if error.is_none() {
            error = updater.finish(&mut sink).err().map(|e| e.to_string());
        }
    }
    let mut writes = sink.ranges;
    writes.push(layout.live_range());
    Ok(UpdatePlan {
        reads: merge(reads.into_inner()),
        writes: merge(writes),
        header_after: Some(after),
        error,
    })
}

/// Runs of consecutive pages: `(first, count)`.
pub fn page_runs(pages: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for p in pages {
        match runs.last_mut() {
            Some((first, count)) if *first + *count == p => *count += 1,
            _ => runs.push((p, 1)),
        }
    }
    runs
}

/// A prefetch window bounded by memory: 1/8 of the memory this process may
/// use ([`crate::pagecache::memory_limit`]; at least 64 pages), so that
/// pages asked for are still cached when their updates run (see
/// [`crate::batch`]'s module doc for the measurement behind the bound).
pub fn window_pages_for_memory() -> u64 {
    (crate::pagecache::memory_limit() / 8 / PAGE_LEN).max(64)
}

/// How a prefetcher reaches the files of the requests it is given
/// ([`prefetch_window`]); `i` indexes those requests. Every method is best
/// effort: a file that cannot be reached is skipped (its update reports).
pub trait PrefetchTarget {
    /// Asks for the header page of request `i`'s file if its header is not
    /// known; returns the pages asked for (0 or 1).
    fn ask_header(&mut self, i: usize) -> u64;
    /// Calls `f` with the header to plan request `i` on and the pages of
    /// the file known to be resident (sorted), or does nothing when the
    /// header cannot be had.
    fn with_header(&mut self, i: usize, f: &mut dyn FnMut(&Header, &[u64]));
    /// Asks for `count` pages from page `first` of request `i`'s file.
    fn ask(&mut self, i: usize, first: u64, count: u64);
}

/// The window logic shared by [`crate::batch::BatchUpdater::prefetch`]
/// (`fadvise`) and [`crate::mapped::MappedFiles::prefetch`] (`madvise`):
/// first the header page of every request whose header is not known (so
/// the kernel reads them in parallel), then each request is planned on its
/// header (or on the header the earlier requests of this window leave for
/// the same file) and exactly the page runs it writes, less the resident
/// ones, are asked for. At most about `budget` pages: the requests past it
/// are not covered. Returns how many leading requests were covered (at
/// least one when there are any).
pub fn prefetch_window(requests: &[&UpdateRequest], budget: u64, target: &mut dyn PrefetchTarget) -> usize {
    // Pages a perftest update writes on a plain step, besides its header
    // page: the bound on header pages leaves room for the row pages.
    const ROW_PAGES_GUESS: u64 = 2;
    let mut covered = requests.len();
    let mut issued = 0u64;
    // Files whose header page this window has asked for or knows.
    let mut seen: HashSet<&Path> = HashSet::new();
    for (i, req) in requests.iter().enumerate() {
        // Each request: its header page (unless known) and the row guess.
        let estimate = (i as u64 + 1).saturating_mul(1 + ROW_PAGES_GUESS);
        if i > 0 && estimate > budget {
            covered = i;
            break;
        }
        if seen.insert(&req.path) {
            issued += target.ask_header(i);
        }
    }
    let now = Now::system();
    // The header after the earlier requests of this window for one file.
    let mut planned: HashMap<&Path, Header> = HashMap::new();
    for (i, req) in requests[..covered].iter().enumerate() {
        let mut runs = Vec::new();
        let mut after = None;
        let mut plan_on = |header: &Header, resident: &[u64]| {
            let Ok(p) = plan_update(header, &req.args, &req.opts, now) else { return };
            runs = page_runs(p.write_pages().into_iter().filter(|pg| resident.binary_search(pg).is_err()));
            after = p.header_after;
        };
        match planned.get(req.path.as_path()) {
            Some(h) => plan_on(h, &[]),
            None => target.with_header(i, &mut plan_on),
        }
        for (first, count) in runs {
            target.ask(i, first, count);
            issued = issued.saturating_add(count);
        }
        if let Some(after) = after {
            planned.insert(&req.path, after);
        }
        // Row pages beyond the guess (consolidations) can overshoot the
        // bound by one update's pages; the window then ends here.
        if issued > budget {
            return i + 1;
        }
    }
    covered
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testfile::header_at;

    /// The schema of rrdtool's perftest, last update at 1000000200.
    fn perftest_header() -> Header {
        header_at(1_000_000_200, 300, crate::schemas::PERFTEST)
    }

    /// One step on the perftest schema writes the live header and one row
    /// of RRA 0 only; a step that ends a consolidation period also writes the
    /// rows of the archives whose period ends there.
    #[test]
    fn plan_lists_exactly_the_rows_written() {
        let h = perftest_header();
        let layout = h.layout();
        let now = Now { secs: 0, usecs: 0 };
        let plan = plan_update(&h, &["1000000500:1:2".to_string()], &UpdateOptions::default(), now).unwrap();
        let row0 = layout.row_off(0, (h.rra_ptr()[0] + 1) % 600);
        assert_eq!(plan.writes.len(), 2, "{plan:?}");
        assert!(plan.writes.contains(&(row0..row0 + 16)));
        assert_eq!(plan.reads, vec![0..layout.data_off]);
        // 1000000800 is a multiple of 1800 and 7200 (6 and 24 steps) but not of
        // 43200 (144 steps): the 6- and 24-step rows complete, the 144-step do not.
        let after = plan.header_after.unwrap();
        let plan2 =
            plan_update(&after, &["1000000800:1:2".to_string()], &UpdateOptions::default(), now).unwrap();
        let rows_written: Vec<usize> = (0..7)
            .filter(|&r| {
                let off = layout.row_off(r, (after.rra_ptr()[r] + 1) % 600);
                plan2.writes.iter().any(|w| w.start <= off && off < w.end)
            })
            .collect();
        assert_eq!(rows_written, vec![0, 1, 2, 3, 4]);
    }

    /// A Holt-Winters update reads the seasonal rows it looks up (the row
    /// after next of SEASONAL and DEVSEASONAL), and with the file's rows the
    /// plan's header is the real update's.
    #[test]
    fn plan_lists_seasonal_reads_of_holt_winters_updates() {
        let h = header_at(1_000_000_200, 300, &["DS:x:GAUGE:600:U:U", "RRA:HWPREDICT:10:0.5:0.5:4"]);
        let layout = h.layout();
        let mut bytes = h.encode();
        bytes.resize(layout.file_len as usize, 0);
        let store = crate::MemStore::new(bytes);
        let args = ["1000000500:5".to_string()];
        let now = Now { secs: 0, usecs: 0 };
        let plan = plan_update_with_rows(&h, &args, &UpdateOptions::default(), now, Some(&store)).unwrap();
        for rra in [1, 2] {
            let row = (h.rra_ptr()[rra] + 2) % 4;
            let off = layout.row_off(rra, row);
            assert!(plan.reads.iter().any(|r| r.start <= off && off + 8 <= r.end), "RRA {rra}: {plan:?}");
        }
        // Without rows the ranges are the same.
        let blind = plan_update(&h, &args, &UpdateOptions::default(), now).unwrap();
        assert_eq!(blind.reads, plan.reads);
        assert_eq!(blind.writes, plan.writes);
        // The real update gives the planned header.
        let mut rrd = crate::Rrd::from_store(std::path::Path::new("m.rrd"), store).unwrap();
        let report =
            crate::update::update_rrd(&mut rrd, &args, &UpdateOptions::default(), false, now).unwrap();
        assert!(report.error.is_none());
        assert_eq!(Some(rrd.header), plan.header_after);
    }

    #[test]
    fn pages_cover_ranges() {
        let pages = pages_of([0..10, 4090..4100, 8192..8193].iter());
        assert_eq!(pages, vec![0, 1, 2]);
        assert_eq!(merge(vec![5..7, 0..5, 9..10]), vec![0..7, 9..10]);
    }
}
