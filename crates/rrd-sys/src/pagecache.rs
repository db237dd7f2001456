//! The page cache as seen from one open file: which pages of it are resident
//! (`mmap` + `mincore`), and advice to the kernel about them
//! (`posix_fadvise`, with `fdatasync` first when the advice is to drop them).
//!
//! These are the primitives of the LISA paper's `fincore` and `fadvise`
//! tools; the CLI subcommands, the benchmarks (to start cold passes) and the
//! page simulator's validation all call them.
//!
//! Invariants:
//! - Residency is probed without touching the data: the file is mapped
//!   `PROT_NONE`, so no page is ever faulted in, read or written, and a file
//!   that shrinks while mapped cannot raise `SIGBUS` here.
//! - Every mapping is unmapped before the function returns, on error paths
//!   too (`crate::map::residency` owns it).
//! - Mappings are made in bounded windows, so a huge file costs at most one
//!   window of address space and one window of `mincore` bytes at a time.
//!
//! Deliberately absent: anything that remembers advice. `RANDOM`,
//! `SEQUENTIAL`, `NORMAL` and `NOREUSE` attach to the open file description
//! and end when the caller closes the [`File`]; only the effects of
//! `DONTNEED` (pages dropped) and `WILLNEED` (reads started) outlive it.
//! Nothing here looks at RRD structure; the update path decides which ranges
//! to advise.

use std::fs::File;
use std::io;
use std::num::NonZeroU64;
use std::os::fd::AsFd;

/// Pages mapped and probed per `mmap`/`mincore` round: 1 GiB with 4 KiB
/// pages. RRD files are far smaller and take one round; the bound only
/// matters for the occasional huge file given to `fincore`.
const WINDOW_PAGES: u64 = 1 << 18;

/// The kernel's page size in bytes: the unit of residency and of readahead.
pub fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// Number of pages a file of `len_bytes` occupies (the partial last page
/// counts as one, as the kernel caches it whole).
pub fn page_count(len_bytes: u64) -> u64 {
    len_bytes.div_ceil(page_size())
}

/// For each page of `file` (as long as it is now), whether it is in the page
/// cache. A zero-length file gives an empty vector without any mapping.
///
/// The file must be open for reading (mapping needs it); nothing is read.
pub fn resident_pages(file: &File) -> io::Result<Vec<bool>> {
    let len_bytes = file.metadata()?.len();
    let page = page_size();
    let pages = page_count(len_bytes);
    let capacity = usize::try_from(pages).map_err(|_| too_large(len_bytes))?;
    let mut resident = Vec::with_capacity(capacity);
    let mut probe = Vec::new();
    let mut first = 0u64;
    while first < pages {
        let count = (pages - first).min(WINDOW_PAGES);
        probe.clear();
        probe.resize(count as usize, 0u8);
        crate::map::residency(file, first * page, &mut probe)?;
        // Only bit 0 is defined; the others are reserved by the kernel.
        resident.extend(probe.iter().map(|b| b & 1 == 1));
        first += count;
    }
    Ok(resident)
}

/// How many pages of `file` are resident, and how many it has.
pub fn resident_count(file: &File) -> io::Result<(u64, u64)> {
    let pages = resident_pages(file)?;
    let resident = pages.iter().filter(|&&r| r).count() as u64;
    Ok((resident, pages.len() as u64))
}

/// The runs of resident pages as inclusive `(first, last)` page numbers, in
/// ascending order.
pub fn resident_ranges(resident: &[bool]) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for (i, _) in resident.iter().enumerate().filter(|(_, &r)| r) {
        let i = i as u64;
        match ranges.last_mut() {
            Some((_, last)) if *last + 1 == i => *last = i,
            _ => ranges.push((i, i)),
        }
    }
    ranges
}

/// Page ranges as `fincore --pages` prints them: `0-3,17`, or `-` when no
/// page is resident.
pub fn format_ranges(ranges: &[(u64, u64)]) -> String {
    if ranges.is_empty() {
        return "-".to_string();
    }
    let parts: Vec<String> =
        ranges.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    parts.join(",")
}

/// Advice about a range of a file, as `posix_fadvise` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Advice {
    /// Default readahead. Lasts while this open file description does.
    Normal,
    /// Doubled readahead. Lasts while this open file description does.
    Sequential,
    /// No readahead. Lasts while this open file description does.
    Random,
    /// Data used once. Lasts while this open file description does.
    NoReuse,
    /// Start reading the range into the cache now, asynchronously.
    WillNeed,
    /// Drop the clean cached pages of the range. Dirty pages are only
    /// queued for writeback; use [`evict`] to drop those too.
    DontNeed,
}

impl Advice {
    /// Whether the advice survives closing the file (it changes the cache
    /// rather than the open file description).
    pub fn outlives_close(self) -> bool {
        matches!(self, Advice::WillNeed | Advice::DontNeed)
    }

    fn to_rustix(self) -> rustix::fs::Advice {
        match self {
            Advice::Normal => rustix::fs::Advice::Normal,
            Advice::Sequential => rustix::fs::Advice::Sequential,
            Advice::Random => rustix::fs::Advice::Random,
            Advice::NoReuse => rustix::fs::Advice::NoReuse,
            Advice::WillNeed => rustix::fs::Advice::WillNeed,
            Advice::DontNeed => rustix::fs::Advice::DontNeed,
        }
    }
}

/// `posix_fadvise(file, offset_bytes, len_bytes, advice)`. A `len_bytes` of
/// 0 means "to the end of the file, however long it grows", as in POSIX.
pub fn advise(file: &File, advice: Advice, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
    rustix::fs::fadvise(file.as_fd(), offset_bytes, NonZeroU64::new(len_bytes), advice.to_rustix())
        .map_err(io::Error::from)
}

/// Drops every cached page of `file`: `fdatasync` so that no page is dirty
/// (the kernel does not drop dirty pages), then `DONTNEED` over the whole
/// file. Pages another process has mapped or locked stay resident.
///
/// The file may be open read-only; `fdatasync` works on any descriptor.
pub fn evict(file: &File) -> io::Result<()> {
    rustix::fs::fdatasync(file.as_fd())?;
    advise(file, Advice::DontNeed, 0, 0)
}

fn too_large(len_bytes: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("the file is {len_bytes} bytes long, more than this machine can address"),
    )
}

/// The memory this process may use: the tightest limit of its memory
/// cgroup and their ancestors (v1 or v2, [`crate::cgroup`]) when there is
/// one, else the machine's memory. Budgets derive from it (the
/// batch updater's prefetch window, the daemon's pending values and kept
/// headers), so that a memory cgroup sized for the page cache is not
/// overrun by our own buffers.
pub fn memory_limit() -> u64 {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(u64::MAX, |kib| kib.saturating_mul(1024));
    // Without a readable cgroup (no /proc, no memory controller), the
    // machine's memory is the bound.
    let cgroup = crate::cgroup::own_memory_cgroup().ok().and_then(|c| crate::cgroup::limit_of(&c));
    cgroup.map_or(machine, |c| c.min(machine))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};

    /// A file on a disk-backed filesystem (tmpfs ignores DONTNEED), under
    /// the cargo target directory.
    fn disk_file(pages: u64) -> (tempfile::TempDir, File) {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pagecache-tests");
        std::fs::create_dir_all(&base).unwrap();
        let dir = tempfile::tempdir_in(&base).unwrap();
        let path = dir.path().join("f");
        let mut f = std::fs::OpenOptions::new().create_new(true).read(true).write(true).open(path).unwrap();
        f.write_all(&vec![0xa5u8; (pages * page_size()) as usize]).unwrap();
        (dir, f)
    }

    #[test]
    fn ranges_merge_adjacent_pages() {
        let r = [true, true, true, true, false, false, true, false, true, true];
        assert_eq!(resident_ranges(&r), vec![(0, 3), (6, 6), (8, 9)]);
        assert_eq!(format_ranges(&resident_ranges(&r)), "0-3,6,8-9");
        assert_eq!(format_ranges(&resident_ranges(&[false, false])), "-");
        assert_eq!(format_ranges(&resident_ranges(&[])), "-");
    }

    #[test]
    fn page_count_rounds_partial_pages_up() {
        let p = page_size();
        assert_eq!(page_count(0), 0);
        assert_eq!(page_count(1), 1);
        assert_eq!(page_count(p), 1);
        assert_eq!(page_count(p + 1), 2);
    }

    #[test]
    fn empty_file_has_no_pages() {
        let dir = tempfile::tempdir().unwrap();
        File::create(dir.path().join("empty")).unwrap();
        let f = File::open(dir.path().join("empty")).unwrap();
        assert!(resident_pages(&f).unwrap().is_empty());
    }

    #[test]
    fn evict_then_read_makes_exactly_the_read_pages_resident() {
        let (_dir, mut f) = disk_file(16);
        evict(&f).unwrap();
        assert_eq!(resident_count(&f).unwrap(), (0, 16));
        // RANDOM turns readahead off for this descriptor, so a read brings
        // in only the page it touches.
        advise(&f, Advice::Random, 0, 0).unwrap();
        let mut buf = vec![0u8; 100];
        f.seek(SeekFrom::Start(5 * page_size() + 10)).unwrap();
        f.read_exact(&mut buf).unwrap();
        let pages = resident_pages(&f).unwrap();
        assert_eq!(resident_ranges(&pages), vec![(5, 5)]);
        evict(&f).unwrap();
        assert_eq!(resident_count(&f).unwrap(), (0, 16));
    }

    #[test]
    fn willneed_reads_the_range_in() {
        let (_dir, f) = disk_file(8);
        evict(&f).unwrap();
        advise(&f, Advice::WillNeed, 2 * page_size(), 3 * page_size()).unwrap();
        // WILLNEED only starts the reads; give them a moment to land.
        let mut pages = Vec::new();
        for _ in 0..200 {
            pages = resident_pages(&f).unwrap();
            if pages[2..5].iter().all(|&r| r) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(pages[2..5].iter().all(|&r| r), "pages 2-4 not resident: {pages:?}");
    }

    #[test]
    fn dirty_pages_are_written_then_dropped() {
        let (_dir, f) = disk_file(4);
        // Freshly written, so every page is resident and dirty.
        assert_eq!(resident_count(&f).unwrap(), (4, 4));
        evict(&f).unwrap();
        assert_eq!(resident_count(&f).unwrap(), (0, 4));
    }
}
