//! Updates for long-running callers (collectd's pattern: `rrd_update_r`
//! once per file per cycle): each file's decoded header and, within a
//! bound, its descriptor are kept between calls, so a warm update is a
//! lock, one `stat` of the path, the rows and live header written with
//! `pwrite`, and the unlock (librrd: open, `fstat`, lock, `mmap`, three
//! `madvise`, `munmap`, close, and the page faults). The kept header is
//! stamped by the clock after the write, not by an `fstat`
//! (`BatchUpdater::stamp_by_clock`).
//!
//! Validation is the batch updater's ([`BatchUpdater::update_kept`]):
//! under rrdtool's lock (an `fcntl` write lock, taken and released around
//! every call as a fresh open/close would), `stat(path)` gives device,
//! inode, length, mtime and ctime. A kept descriptor whose inode is no
//! longer the path's (a file renamed over it: `rrdtool create`/`restore`)
//! is closed and the path reopened before anything is read or written; a
//! kept header is used only while the stamp equals the one our own last
//! write left (anything else, a foreign update, a tune, a truncation, reads
//! the header again, and a truncated file then fails its length check).
//! A lock held by another process fails the call at once with "could not
//! lock RRD", as librrd's does, and keeps what was kept.
//!
//! Bounded: descriptors are the caller's resource. At most [`max_open`]
//! are kept in all: `RRDSCALE_LIBRRD_MAX_OPEN`, else half the soft
//! `RLIMIT_NOFILE` (at most 65,536). Kept descriptors are moved above the
//! `select()` range (1024 and up) when the limit allows, so the caller's own
//! sockets keep low numbers. When the bound is reached, a new file is
//! opened for its call and closed after it, except one in
//! [`ADMIT_ONE_IN`], which replaces a random kept one: a pass over more
//! files than the bound then keeps a stable subset open (random
//! replacement on every miss would keep evicting files just before their
//! turn). If an open fails for lack of descriptors (`EMFILE`, `ENFILE`), the
//! shard's kept descriptors are closed, the bound halved, and the open
//! retried once. At most [`MAX_KEPT`] headers are kept, taking at most
//! 1/16 of the process's memory limit (its cgroup's, else the machine's).
//!
//! When memory is short (kept headers over their bound), [`crate::ahead`]
//! reads ahead for the files the caller's order predicts.
//!
//! Shards by path so that threads updating different files rarely wait for
//! each other. `RRDSCALE_LIBRRD_KEEP=0` turns all of it off (every update
//! then opens, reads its header and closes, as librrd does).
//!
//! Deliberately absent: a fork while another thread is inside an update
//! leaves that shard's lock held in the child (as with any mutex); a
//! forked child shares the kept descriptors' open file descriptions, and
//! with them their `fcntl` locks, with its parent, so parent and child
//! must not update the same file at the same time through this library.

use std::collections::HashMap;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use rrd_engine::batch::{BatchUpdater, KeptHeader, UpdateRequest};
use rrd_engine::update::{UpdateOptions, UpdateReport};

const SHARDS: usize = 8;
/// Headers kept in all shards (a perftest header is about 1 KiB decoded).
const MAX_KEPT: usize = 65_536;
/// Most descriptors kept whatever the limit.
const MAX_OPEN_CEILING: usize = 65_536;
/// Once the bound is reached, one new file in this many replaces a kept one.
pub const ADMIT_ONE_IN: u64 = 64;
/// Kept descriptors are moved to this number or above.
const HIGH_FD: i32 = 1024;

struct Shard {
    /// Files whose descriptors are kept.
    kept_open: BatchUpdater,
    /// Files opened for one call only (the bound was reached).
    transient: BatchUpdater,
    /// Kept headers by path (its bytes, hashed as bytes: cheaper than a
    /// `Path`'s component-wise hash).
    kept: HashMap<OsString, KeptHeader>,
    /// Estimated memory of `kept` ([`kept_bytes`]).
    kept_bytes: usize,
    /// The admission sequence (xorshift64).
    rng: u64,
}

fn shards() -> &'static [Mutex<Shard>] {
    static SHARDS_CELL: OnceLock<Vec<Mutex<Shard>>> = OnceLock::new();
    SHARDS_CELL.get_or_init(|| {
        (0..SHARDS)
            .map(|i| {
                Mutex::new(Shard {
                    // The open-file cache's own bound is never reached: `update`
                    // admits a file only below the shard's share.
                    kept_open: updater(usize::MAX),
                    transient: updater(1),
                    kept: HashMap::new(),
                    kept_bytes: 0,
                    rng: 0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1),
                })
            })
            .collect()
    })
}

/// An updater whose kept headers are stamped by the clock: no `fstat`
/// after each write (`BatchUpdater::stamp_by_clock`).
fn updater(max_open: usize) -> BatchUpdater {
    let mut u = BatchUpdater::new(max_open);
    u.stamp_by_clock = true;
    u
}

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RRDSCALE_LIBRRD_KEEP").is_none_or(|v| v != "0"))
}

fn soft_nofile() -> usize {
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    lim.current.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// Estimated memory of a kept header: its decoded form is about as large
/// as its bytes in the file, twice over for the vectors' slack and the
/// path (an estimate for the bound, not an account).
fn kept_bytes(k: &KeptHeader) -> usize {
    usize::try_from(k.header.layout().data_off).unwrap_or(usize::MAX / 4).saturating_mul(2) + 256
}

/// Memory kept headers may take in all: 1/16 of the memory this process
/// may use (its cgroup's limit, or the machine's), so that under a memory
/// budget they do not push the files' pages out of the page cache.
fn kept_budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| usize::try_from(rrd_engine::pagecache::memory_limit() / 16).unwrap_or(usize::MAX))
}

/// The pages the file's next update will need, as far as its header now
/// tells, for a caller that updates once per step (collectd, MRTG): the
/// header's (read when it is not kept) and the page of the next row of
/// every archive that consolidates at the next step (the first archive,
/// one step per row, always).
fn next_pages(k: &KeptHeader) -> Vec<u64> {
    let last_header_page = k.header.layout().data_off.saturating_sub(1) / 4096;
    let mut pages: Vec<u64> = (0..=last_header_page).collect();
    let step = k.header.pdp_step().max(1);
    let next_pdp = u64::try_from(k.header.live().last_up).unwrap_or(0) / step + 1;
    for (i, rra) in k.header.rra().iter().enumerate() {
        let rows = k.header.layout().row_counts.get(i).copied().unwrap_or(0);
        let (Some(&cur), true) = (k.header.rra_ptr().get(i), rows > 0 && rra.pdp_count > 0) else { continue };
        if !next_pdp.is_multiple_of(rra.pdp_count) {
            continue;
        }
        let page = k.header.layout().row_off(i, (cur + 1) % rows) / 4096;
        if page > last_header_page && !pages.contains(&page) {
            pages.push(page);
        }
    }
    pages
}

/// The bound on kept descriptors, in all shards (see the module doc).
static MAX_OPEN: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Most descriptors kept between calls, in all shards.
pub fn max_open() -> usize {
    let v = MAX_OPEN.load(Ordering::Relaxed);
    if v != usize::MAX {
        return v;
    }
    let configured = std::env::var("RRDSCALE_LIBRRD_MAX_OPEN").ok().and_then(|v| v.trim().parse().ok());
    let v = configured.unwrap_or_else(|| soft_nofile() / 2).min(MAX_OPEN_CEILING);
    MAX_OPEN.store(v, Ordering::Relaxed);
    v
}

fn shard_of(path: &Path) -> &'static Mutex<Shard> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.as_os_str().hash(&mut h);
    &shards()[h.finish() as usize % SHARDS]
}

fn is_out_of_descriptors(e: &rrd_engine::Error) -> bool {
    matches!(e, rrd_engine::Error::Open { source, .. } if rrd_engine::batch::is_out_of_descriptors(source))
}

/// Forgets the kept header of `path` (spelled as the updates spell it), so
/// that its next update reads the header from the file: `rrd_open` calls
/// this for a file it opens writable, whose mapping may be written without
/// moving the file's stamp.
pub fn forget(path: &std::ffi::OsStr) {
    if !enabled() {
        return;
    }
    let mut s = shard_of(Path::new(path)).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(k) = s.kept.remove(path) {
        s.kept_bytes -= kept_bytes(&k);
    }
}

/// One update, as `rrd_update_r` makes it.
pub fn update(path: &Path, values: Vec<String>, opts: &UpdateOptions) -> rrd_engine::Result<UpdateReport> {
    if !enabled() {
        return rrd_engine::update::update_file(path, &values, opts, false);
    }
    let mut s = shard_of(path).lock().unwrap_or_else(|p| p.into_inner());
    let req = UpdateRequest { path: path.to_path_buf(), args: values, opts: opts.clone() };
    let (mut result, mut pages) = s.update_once(&req);
    if result.as_ref().is_err_and(is_out_of_descriptors) {
        // The caller's descriptors ran out: give back ours and keep fewer.
        s.kept_open = updater(usize::MAX);
        let _ = MAX_OPEN.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(max_open().min(v) / 2));
        (result, pages) = s.update_once(&req);
    }
    drop(s);
    if result.is_ok() {
        crate::ahead::after_update(path, &pages);
    }
    result
}

impl Shard {
    /// One update; also returns the pages it wrote.
    fn update_once(&mut self, req: &UpdateRequest) -> (rrd_engine::Result<UpdateReport>, Vec<u64>) {
        let (key, mut kept) = match self.kept.remove_entry(req.path.as_os_str()) {
            Some((key, k)) => {
                self.kept_bytes -= kept_bytes(&k);
                (Some(key), Some(k))
            }
            None => (None, None),
        };
        let share = max_open() / SHARDS;
        let open_kept = self.kept_open.files.contains(&req.path);
        let admit =
            open_kept || self.kept_open.files.len() < share || (share > 0 && self.admit_replacement());
        let result = if admit {
            if !open_kept && self.kept_open.files.len() >= share {
                self.kept_open.files.evict_one();
            }
            let r = self.kept_open.update_kept(req, false, &mut kept);
            // Also after a reopen (the file was replaced).
            self.move_high(&req.path);
            r
        } else {
            let r = self.transient.update_kept(req, false, &mut kept);
            self.transient.files.close(&req.path);
            r
        };
        // The pages the next update will need, for the read-ahead of the
        // next cycle (the kept header's list of pages written is emptied:
        // nothing here releases pages, so it would only grow).
        let ahead = crate::ahead::wanted();
        let pages = kept
            .as_mut()
            .map(|k| {
                k.written_pages.clear();
                if ahead {
                    next_pages(k)
                } else {
                    Vec::new()
                }
            })
            .unwrap_or_default();
        if let Some(k) = kept {
            let bytes = kept_bytes(&k);
            if self.kept.len() < MAX_KEPT / SHARDS && self.kept_bytes + bytes <= kept_budget() / SHARDS {
                self.kept_bytes += bytes;
                self.kept.insert(key.unwrap_or_else(|| req.path.as_os_str().to_owned()), k);
            } else if self.kept_bytes + bytes > kept_budget() / SHARDS {
                // Memory is short: the files' pages will not stay cached
                // from one cycle to the next either.
                crate::ahead::activate();
            }
        }
        (result, pages)
    }

    fn admit_replacement(&mut self) -> bool {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng.is_multiple_of(ADMIT_ONE_IN)
    }

    /// Moves a newly kept descriptor to [`HIGH_FD`] or above, when the
    /// limit leaves room there (a failed move keeps the original).
    fn move_high(&mut self, path: &Path) {
        static ROOM: OnceLock<bool> = OnceLock::new();
        if !*ROOM.get_or_init(|| soft_nofile() > HIGH_FD as usize * 2) {
            return;
        }
        let Some(of) = self.kept_open.files.peek_mut(path) else { return };
        let fd = of.file.as_raw_fd();
        if fd >= HIGH_FD {
            return;
        }
        if let Ok(high) = rustix::io::fcntl_dupfd_cloexec(&of.file, HIGH_FD) {
            of.file = std::fs::File::from(high);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The read-ahead asks for the header's pages and the page of the
    /// first archive's next row: the page its next update writes.
    #[test]
    fn next_pages_are_the_header_and_the_first_archives_next_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.rrd");
        let defs: Vec<String> = ["DS:in:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:2000", "RRA:MAX:0.5:6:600"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let opts = rrd_engine::create::CreateOptions { start: Some(1_700_000_000), ..Default::default() };
        rrd_engine::create::create(&path, &opts, &defs, 1_700_000_000).unwrap();
        let mut k = KeptHeader::read(&path).unwrap();
        let last_header_page = (k.header.layout().data_off - 1) / 4096;
        let page_of = |k: &KeptHeader, rra: usize, rows: u64| {
            (k.header.layout().rra_data_off[rra] + (k.header.rra_ptr()[rra] + 1) % rows * 8) / 4096
        };
        k.header.set_cur_row(1, 10).unwrap();
        for cur in [0u64, 254, 255, 1999] {
            k.header.set_cur_row(0, cur).unwrap();
            let mut want: Vec<u64> = (0..=last_header_page).collect();
            let row_page = page_of(&k, 0, 2000);
            if row_page > last_header_page {
                want.push(row_page);
            }
            // The next step is not a multiple of 6 steps: the MAX archive
            // does not consolidate.
            k.header.live_mut().last_up = 300 * 5_666_667;
            assert_ne!((k.header.live().last_up as u64 / 300 + 1) % 6, 0);
            assert_eq!(next_pages(&k), want, "current row {cur}");
            // One step before a multiple of 6: it does, one row on.
            k.header.live_mut().last_up = 300 * (6 * 944_445) - 300;
            want.push(page_of(&k, 1, 600));
            assert_eq!(next_pages(&k), want, "current row {cur}, consolidating");
        }
    }
}
