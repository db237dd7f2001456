//! File mappings: a read/write shared mapping of a whole file that the
//! mapped update mode reads and stores through ([`SharedMap`]), and a
//! `PROT_NONE` window used only to ask `mincore` which pages of a file are
//! in the page cache ([`residency`]).
//!
//! Invariants:
//! - No Rust reference into a shared mapping is ever formed: another
//!   process (rrdtool, a second rrdscale) may store into the same pages at
//!   any time, so bytes are copied in and out with raw copies, bounds
//!   checked first.
//! - Every mapping is unmapped exactly once, when its owner drops.
//!
//! Deliberately absent: protection against the file shrinking under a
//! [`SharedMap`] (an access past the new end raises `SIGBUS`, as in
//! rrdtool's mmap mode); callers map files they lock or own.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::ptr::NonNull;

use rustix::mm::{MapFlags, MsyncFlags, ProtFlags};

/// Advice on a range of a mapping (`madvise`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapAdvice {
    /// No readahead around faults (`MADV_RANDOM`).
    Random,
    /// Start reading the range into the cache (`MADV_WILLNEED`).
    WillNeed,
    /// Drop this process's page-table entries (`MADV_DONTNEED`). For a
    /// shared file mapping the data stays in the page cache (dirty state
    /// included) and is faulted back on the next access.
    DontNeed,
}

/// One file mapped `MAP_SHARED` read/write; unmapped when dropped.
#[derive(Debug)]
pub struct SharedMap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; moving it to
// another thread moves the only handle. It is not `Sync`: `write_at` takes
// `&self`, and two threads storing through one mapping would race.
unsafe impl Send for SharedMap {}

impl SharedMap {
    /// Maps the first `len` bytes of `file` (open read/write). The
    /// descriptor may be closed afterwards: the mapping keeps the file.
    /// `len` must not be 0 (the kernel refuses an empty mapping).
    pub fn new(file: &File, len: usize) -> io::Result<SharedMap> {
        SharedMap::window(file, 0, len)
    }

    /// Maps `len` bytes of `file` from byte `offset`, which must be a
    /// multiple of the page size (the kernel refuses others). Offsets given
    /// to [`SharedMap::read_at`] and [`SharedMap::write_at`] are relative
    /// to `offset`. The file must reach `offset + len`, or an access past
    /// its end raises `SIGBUS` ([`allocate`] makes sure it does).
    pub fn window(file: &File, offset: u64, len: usize) -> io::Result<SharedMap> {
        // SAFETY: a fresh mapping chosen by the kernel (null hint), so no
        // existing memory is replaced; nothing else refers to the range.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                file,
                offset,
            )
        }?;
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned a null address"))?;
        Ok(SharedMap { ptr, len })
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never, as made by [`SharedMap::new`]).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The start of `n` bytes at `offset`, if they lie within the mapping.
    fn start(&self, offset: u64, n: usize) -> io::Result<usize> {
        let start = usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        match start.checked_add(n) {
            Some(end) if end <= self.len => Ok(start),
            _ => Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }

    /// Copies `buf.len()` bytes at `offset` into `buf`; `UnexpectedEof`
    /// past the end.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = self.start(offset, buf.len())?;
        // SAFETY: `start` checked start + len <= mapping length; the source
        // is raw shared memory (no Rust reference to it is formed), the
        // destination is ours and does not overlap it.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(start), buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Copies `buf` into the mapping at `offset`; `UnexpectedEof` past the
    /// end (nothing is written then).
    pub fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let start = self.start(offset, buf.len())?;
        // SAFETY: as in `read_at`, bounds checked; the mapping is writable.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), self.ptr.as_ptr().add(start), buf.len()) };
        Ok(())
    }

    /// Whether the mapping begins with the bytes of `prefix` (false when
    /// `prefix` is longer than the mapping).
    pub fn starts_with(&self, prefix: &[u8]) -> bool {
        if prefix.len() > self.len {
            return false;
        }
        // SAFETY: both ranges are in bounds (checked above); memcmp reads
        // the shared mapping without forming a Rust reference to it.
        unsafe { libc::memcmp(self.ptr.as_ptr().cast(), prefix.as_ptr().cast(), prefix.len()) == 0 }
    }

    /// `madvise` over `range` (bytes, clipped to the mapping; its start is
    /// rounded down to a page, as madvise requires). Advice is a hint: the
    /// error is returned for callers that care, most ignore it.
    pub fn advise(&self, range: Range<usize>, advice: MapAdvice) -> io::Result<()> {
        let page = rustix::param::page_size();
        let start = (range.start.min(self.len) / page) * page;
        let end = range.end.min(self.len);
        if start >= end {
            return Ok(());
        }
        let advice = match advice {
            MapAdvice::Random => rustix::mm::Advice::Random,
            MapAdvice::WillNeed => rustix::mm::Advice::WillNeed,
            MapAdvice::DontNeed => rustix::mm::Advice::LinuxDontNeed,
        };
        // SAFETY: a page-aligned range within our mapping. These three
        // advices change no data of a shared file mapping: RANDOM and
        // WILLNEED steer reads, DONTNEED drops page-table entries only.
        unsafe { rustix::mm::madvise(self.ptr.as_ptr().add(start).cast(), end - start, advice) }
            .map_err(io::Error::from)
    }

    /// Writes the mapping's dirty pages to the file and waits
    /// (`msync(MS_SYNC)`).
    pub fn sync(&self) -> io::Result<()> {
        // SAFETY: the range is exactly our mapping.
        unsafe { rustix::mm::msync(self.ptr.as_ptr().cast(), self.len, MsyncFlags::SYNC) }
            .map_err(io::Error::from)
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: we own the mapping and nothing borrows it past this point.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Reserves the blocks of `len` bytes of `file` from `offset`
/// (`fallocate(2)`, mode 0), growing the file to `offset + len` if it is
/// shorter; bytes not written before read as zeros. Stores through a
/// mapping of the range then never need space the disk no longer has
/// (which would raise `SIGBUS`, not return an error). `EOPNOTSUPP` on file
/// systems that cannot reserve.
pub fn allocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), offset, len).map_err(io::Error::from)
}

/// Fills `vec` (one byte per page) with `mincore`'s residency bytes for
/// the `vec.len()` pages of `file` from byte `offset` (a multiple of the
/// page size). Only bit 0 of each byte is defined (resident).
///
/// The window is mapped `PROT_NONE`: no page is faulted in, read or
/// written, and a file shrinking meanwhile cannot raise `SIGBUS`. It is
/// unmapped before returning, on error paths too.
pub fn residency(file: &File, offset: u64, vec: &mut [u8]) -> io::Result<()> {
    if vec.is_empty() {
        return Ok(());
    }
    let len = vec
        .len()
        .checked_mul(rustix::param::page_size())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "residency window too large"))?;
    // SAFETY: a null hint lets the kernel choose a fresh range, so no
    // existing memory is replaced; PROT_NONE means no access can be made
    // through it. An unaligned offset is refused by the kernel (EINVAL).
    let addr = unsafe {
        rustix::mm::mmap(std::ptr::null_mut(), len, ProtFlags::empty(), MapFlags::SHARED, file, offset)
    }?;
    // SAFETY: `addr` is the page-aligned start of the live mapping of `len`
    // bytes made above, and `vec` has one writable byte per page of it,
    // which is all mincore writes.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let result = if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) };
    // SAFETY: exactly the mapping made above, referred to by nothing else.
    let _ = unsafe { rustix::mm::munmap(addr, len) };
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn file_of(len: usize) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&(0..len).map(|i| (i % 251) as u8).collect::<Vec<_>>()).unwrap();
        f
    }

    /// Proves stores through the mapping reach the file, reads see the
    /// file, and out-of-range accesses are refused without touching memory.
    #[test]
    fn shared_map_reads_writes_and_bounds() {
        let mut f = file_of(10_000);
        let m = SharedMap::new(&f, 10_000).unwrap();
        let mut buf = [0u8; 4];
        m.read_at(&mut buf, 251).unwrap();
        assert_eq!(buf, [0, 1, 2, 3]);
        m.write_at(b"rrd!", 9_996).unwrap();
        assert_eq!(m.read_at(&mut buf, 9_997).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(m.write_at(b"x", 10_000).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(m.read_at(&mut buf, u64::MAX).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert!(m.starts_with(&[0, 1, 2]));
        assert!(!m.starts_with(&[0, 2]));
        assert!(!m.starts_with(&vec![0; 10_001]));
        m.advise(0..10_000, MapAdvice::Random).unwrap();
        m.advise(5_000..9_000, MapAdvice::WillNeed).unwrap();
        m.advise(0..10_000, MapAdvice::DontNeed).unwrap();
        m.advise(20_000..30_000, MapAdvice::DontNeed).unwrap();
        m.sync().unwrap();
        let mut all = Vec::new();
        std::io::Seek::rewind(&mut f).unwrap();
        f.read_to_end(&mut all).unwrap();
        assert_eq!(&all[9_996..], b"rrd!");
        // Data survives DONTNEED on a shared mapping.
        m.read_at(&mut buf, 9_996).unwrap();
        assert_eq!(&buf, b"rrd!");
    }

    /// Proves `allocate` grows a file with zeros (and never shrinks or
    /// clears it), and a window mapped at a page offset stores at that
    /// offset of the file; an unaligned window offset is refused.
    #[test]
    fn allocated_window_stores_at_its_offset() {
        let page = rustix::param::page_size() as u64;
        let f = file_of(100);
        allocate(&f, page, 2 * page).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 3 * page);
        allocate(&f, 0, page).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 3 * page, "allocate never shrinks");
        let m = SharedMap::window(&f, page, 2 * page as usize).unwrap();
        m.write_at(b"window", page + 10).unwrap();
        assert!(m.write_at(b"x", 2 * page).is_err(), "past the window");
        let mut all = vec![0u8; (3 * page) as usize];
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut all, 0).unwrap();
        assert_eq!(all[..100], (0..100).map(|i| (i % 251) as u8).collect::<Vec<_>>()[..], "kept");
        let at = (2 * page + 10) as usize;
        assert_eq!(&all[at..at + 6], b"window");
        assert!(all[100..at].iter().chain(&all[at + 6..]).all(|&b| b == 0), "the rest reads as zeros");
        assert!(SharedMap::window(&f, 1, page as usize).is_err());
    }

    /// Proves residency reports pages just written (they are in the page
    /// cache) and refuses an unaligned offset.
    #[test]
    fn residency_sees_cached_pages() {
        let page = rustix::param::page_size();
        let f = file_of(4 * page);
        let mut vec = [0u8; 4];
        residency(&f, 0, &mut vec).unwrap();
        assert!(vec.iter().all(|b| b & 1 == 1), "{vec:?}");
        let mut one = [0u8; 1];
        residency(&f, 2 * page as u64, &mut one).unwrap();
        assert_eq!(one[0] & 1, 1);
        assert!(residency(&f, 1, &mut one).is_err());
        residency(&f, 0, &mut []).unwrap();
    }
}
