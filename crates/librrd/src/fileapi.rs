//! librrd's internal file API (`rrd_open`, `rrd_close`, `rrd_read`,
//! `rrd_write`, `rrd_seek`, `rrd_tell`, `rrd_lock`, `rrd_flush`,
//! `rrd_dontneed`, `rrd_init`, `rrd_free`), which `rrd.h` declares for
//! programs that read raw files (Debian's `rrdcached` 1.7.2 reads a file's
//! last update and step with it).
//!
//! Why it is done as librrd does it, with a mapping: the caller reads the
//! header through the `rrd_t` pointers `rrd_open` fills, and a program
//! written against librrd may also write through them (the mapping of a
//! file opened `RRD_READWRITE` is the file's own pages) or `rrd_write` a
//! header it changed in place. So `rrd_open` maps the whole file (shared
//! and writable with `RRD_READWRITE`, private and read-only otherwise),
//! points the `rrd_t`'s sections into the mapping, and `rrd_read`/
//! `rrd_write` copy at `rrd_file_t.pos`.
//!
//! Layout: [`RrdT`], [`RrdFileT`] and [`RrdSimpleFileT`] are librrd
//! 1.7.2's `rrd_t`, `rrd_file_t` and `rrd_simple_file_t` (x86-64, checked
//! at compile time); the header sections keep the file's own layout, which
//! is the C structs' (`stat_head_t` 128 bytes, `ds_def_t` 120, ...).
//!
//! Ownership, as librrd's:
//! - `rrd_open` returns a `malloc`ed `rrd_file_t` (and its private part),
//!   which `rrd_close` unmaps, closes (releasing the lock) and frees; the
//!   `rrd_t` is the caller's.
//! - After `rrd_open`, the `rrd_t`'s sections point into the mapping: valid
//!   until `rrd_close`. `rrd_free` frees only what lies outside the mapping
//!   (what the caller `malloc`ed for `RRD_CREAT`, or the `live_head` made
//!   for a version 1-2 file), and sets the pointers to NULL; call it after
//!   a failed `rrd_open` too. (librrd's own test of "inside the mapping"
//!   also keeps memory below the mapping, usually the heap, unfreed: a
//!   leak ours does not have.)
//!
//! Checks and error texts are librrd's (cookie, float cookie, version,
//! each section within the file, the data's length), not the engine's
//! stricter validation: a caller gets what librrd would give it. Unlike
//! librrd, NULL arguments are refused with an error instead of a crash, and
//! `rrd_write` to a file opened read-only fails instead of faulting.
//!
//! Within this process, a file opened `RRD_READWRITE` is forgotten by the
//! kept-header cache of `rrd_update_r` ([`crate::writer::forget`]) when it
//! is opened and when it is closed: a write through the mapping may leave
//! the file's stamp (mtime, ctime) where the cache's last write left it.

use std::ffi::{c_char, c_int, c_long, c_uint, c_void, CStr};
use std::ptr;

use crate::ffi;

/// librrd 1.7.2's `rrd_t`.
#[repr(C)]
pub struct RrdT {
    pub stat_head: *mut u8,
    pub ds_def: *mut u8,
    pub rra_def: *mut u8,
    pub live_head: *mut u8,
    pub legacy_last_up: *mut u8,
    pub pdp_prep: *mut u8,
    pub cdp_prep: *mut u8,
    pub rra_ptr: *mut u8,
    pub rrd_value: *mut u8,
    pub mmap_start: *mut c_void,
    pub mmap_size: c_long,
}

/// librrd 1.7.2's `rrd_file_t` (without librados).
#[repr(C)]
pub struct RrdFileT {
    pub header_len: usize,
    pub file_len: usize,
    pub pos: usize,
    pub pvt: *mut c_void,
    pub rrd: *mut RrdT,
}

/// librrd 1.7.2's `rrd_simple_file_t` (with mmap).
#[repr(C)]
pub struct RrdSimpleFileT {
    pub fd: c_int,
    pub file_start: *mut c_char,
    pub mm_prot: c_int,
    pub mm_flags: c_int,
}

/// What `pvt` points to: librrd's public part first, then what `rrd_close`
/// needs.
#[repr(C)]
struct Private {
    public: RrdSimpleFileT,
    /// The path (`malloc`ed), for [`crate::writer::forget`] when writable.
    path: *mut c_char,
}

const _: () = assert!(std::mem::size_of::<RrdT>() == 88);
const _: () = assert!(std::mem::size_of::<RrdFileT>() == 40);
const _: () = assert!(std::mem::size_of::<RrdSimpleFileT>() == 24);

pub const RRD_READONLY: c_uint = 1 << 0;
pub const RRD_READWRITE: c_uint = 1 << 1;
pub const RRD_CREAT: c_uint = 1 << 2;
pub const RRD_READAHEAD: c_uint = 1 << 3;
pub const RRD_COPY: c_uint = 1 << 4;
pub const RRD_EXCL: c_uint = 1 << 5;
pub const RRD_READVALUES: c_uint = 1 << 6;
pub const RRD_LOCK: c_uint = 1 << 7;

/// Section sizes in the file (the C structs' sizes on x86-64).
const STAT_HEAD: usize = 128;
const DS_DEF: usize = 120;
const RRA_DEF: usize = 120;
const LIVE_HEAD: usize = 16;
const LEGACY_LAST_UP: usize = 8;
const PDP_PREP: usize = 112;
const CDP_PREP: usize = 80;
const RRA_PTR: usize = 8;
const VALUE: usize = 8;
/// Offsets within `stat_head_t` and `rra_def_t`.
const VERSION_AT: usize = 4;
const FLOAT_COOKIE_AT: usize = 16;
const DS_CNT_AT: usize = 24;
const RRA_CNT_AT: usize = 32;
const PDP_STEP_AT: usize = 40;
const ROW_CNT_AT: usize = 24;
const PDP_CNT_AT: usize = 32;
const FLOAT_COOKIE: f64 = 8.642135E130;

/// Reads a `u64` (`unsigned long`) at `p + at`.
///
/// # Safety
/// `p + at .. p + at + 8` is readable.
unsafe fn ulong_at(p: *const u8, at: usize) -> u64 {
    // SAFETY: as promised.
    unsafe { ptr::read_unaligned(p.add(at) as *const u64) }
}

/// The file format version in a `stat_head_t`, as `atoi` reads it.
///
/// # Safety
/// `stat_head` points to 128 readable bytes.
unsafe fn version(stat_head: *const u8) -> (i32, String) {
    // SAFETY: the 5 version bytes are within the section.
    let bytes = unsafe { std::slice::from_raw_parts(stat_head.add(VERSION_AT), 5) };
    let text = bytes.iter().take_while(|&&b| b != 0).map(|&b| b as char).collect::<String>();
    (rrd_lang::numparse::atoi(text.as_bytes()), text)
}

fn os_error() -> String {
    rrd_lang::ctext::strerror(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// The size of the header `rrd` describes (librrd's `rrd_get_header_size`),
/// and of the whole file; None on overflow.
///
/// # Safety
/// `rrd.stat_head` points to a `stat_head_t`, `rrd.rra_def` to its
/// `rra_cnt` `rra_def_t`s.
unsafe fn described_size(rrd: &RrdT) -> Option<(usize, usize)> {
    // SAFETY: as promised.
    let (ds, rra, v) = unsafe {
        (
            ulong_at(rrd.stat_head, DS_CNT_AT) as usize,
            ulong_at(rrd.stat_head, RRA_CNT_AT) as usize,
            version(rrd.stat_head).0,
        )
    };
    let live = if v < 3 { LEGACY_LAST_UP } else { LIVE_HEAD };
    let header = STAT_HEAD
        .checked_add(DS_DEF.checked_mul(ds)?)?
        .checked_add(RRA_DEF.checked_mul(rra)?)?
        .checked_add(live)?
        .checked_add(PDP_PREP.checked_mul(ds)?)?
        .checked_add(CDP_PREP.checked_mul(ds)?.checked_mul(rra)?)?
        .checked_add(RRA_PTR.checked_mul(rra)?)?;
    let mut rows = 0usize;
    for i in 0..rra {
        // SAFETY: rra_def holds rra_cnt definitions, as promised.
        rows = rows.checked_add(unsafe { ulong_at(rrd.rra_def, i * RRA_DEF + ROW_CNT_AT) } as usize)?;
    }
    let data = VALUE.checked_mul(ds)?.checked_mul(rows)?;
    Some((header, header.checked_add(data)?))
}

/// An open file in the making; dropped without `done`, it unmaps and
/// closes (keeping the error text already set).
struct Opening {
    file: *mut RrdFileT,
    private: *mut Private,
    map: *mut c_void,
    len: usize,
}

impl Opening {
    fn fail(&mut self, text: &str) -> *mut RrdFileT {
        ffi::set_error(text);
        ptr::null_mut()
    }

    fn done(mut self) -> *mut RrdFileT {
        let f = self.file;
        self.file = ptr::null_mut();
        f
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        if self.file.is_null() {
            return;
        }
        // SAFETY: everything here was made by rrd_open and is not handed out.
        unsafe {
            if !self.map.is_null() {
                libc::munmap(self.map, self.len);
            }
            // The error text already set is the one the caller gets.
            let fd = (*self.private).public.fd;
            if fd >= 0 {
                libc::close(fd);
            }
            libc::free((*self.private).path as *mut c_void);
            libc::free(self.private as *mut c_void);
            libc::free(self.file as *mut c_void);
        }
    }
}

/// Takes `len` bytes of the mapping at `*at` for section `what`.
fn take(at: &mut usize, count: Option<usize>, file_len: usize, what: &str) -> Result<usize, String> {
    let eof = || format!("reached EOF while loading header rrd->{what}");
    let len = count.ok_or_else(eof)?;
    let end = at.checked_add(len).filter(|&e| e <= file_len).ok_or_else(eof)?;
    let start = *at;
    *at = end;
    Ok(start)
}

/// The open(2) flags for `rdwr`, with the mapping's protection and flags
/// set in `p` to match.
fn open_flags(rdwr: c_uint, p: &mut RrdSimpleFileT) -> c_int {
    let mut flags = 0;
    if rdwr & RRD_READONLY != 0 {
        flags |= libc::O_RDONLY;
        p.mm_flags = libc::MAP_PRIVATE | libc::MAP_NORESERVE;
    } else {
        if rdwr & RRD_READWRITE != 0 {
            flags |= libc::O_RDWR;
            p.mm_flags = libc::MAP_SHARED;
            p.mm_prot |= libc::PROT_WRITE;
        }
        if rdwr & RRD_CREAT != 0 {
            flags |= libc::O_CREAT | libc::O_TRUNC;
        }
        if rdwr & RRD_EXCL != 0 {
            flags |= libc::O_EXCL;
        }
    }
    if rdwr & RRD_READAHEAD != 0 {
        p.mm_flags |= libc::MAP_POPULATE | libc::MAP_NONBLOCK;
    }
    flags
}

/// Points `rrd`'s header sections into the mapping at `base` (`len`
/// bytes): each must fit, the magic, float cookie and version must be
/// ours, and the rows must fit after the header; with `RRD_READVALUES`
/// the values too. Sets `file`'s header length and position.
///
/// # Safety
/// `base` starts a mapping of `len` readable bytes, and `file` is the
/// `rrd_file_t` being opened.
unsafe fn map_sections(
    rrd: &mut RrdT,
    file: *mut RrdFileT,
    base: *mut u8,
    len: usize,
    rdwr: c_uint,
    shown: &str,
) -> Result<(), String> {
    // SAFETY: the header sections are read only within the mapping's
    // length (`take` checks each); `file` is valid, per the contract.
    unsafe {
        let mut at = 0usize;
        let stat = take(&mut at, Some(STAT_HEAD), len, "stat_head")?;
        rrd.stat_head = base.add(stat);
        if std::slice::from_raw_parts(rrd.stat_head, 4) != b"RRD\0" {
            return Err(format!("'{shown}' is not an RRD file"));
        }
        let cookie = ptr::read_unaligned(rrd.stat_head.add(FLOAT_COOKIE_AT) as *const f64);
        if cookie != FLOAT_COOKIE {
            return Err("This RRD was created on another architecture".into());
        }
        let (v, text) = version(rrd.stat_head);
        if v > 5 {
            return Err(format!("can't handle RRD file version {text}"));
        }
        let ds = ulong_at(rrd.stat_head, DS_CNT_AT) as usize;
        let rra = ulong_at(rrd.stat_head, RRA_CNT_AT) as usize;
        rrd.ds_def = base.add(take(&mut at, DS_DEF.checked_mul(ds), len, "ds_def")?);
        rrd.rra_def = base.add(take(&mut at, RRA_DEF.checked_mul(rra), len, "rra_def")?);
        if v < 3 {
            // Version 1 and 2 files keep only the seconds: the caller
            // gets a live_head_t of its own (freed by rrd_free).
            let live = ffi::alloc(LIVE_HEAD) as *mut u8;
            if live.is_null() {
                return Err("live_head_t malloc".into());
            }
            rrd.live_head = live;
            rrd.legacy_last_up = base.add(take(&mut at, Some(LEGACY_LAST_UP), len, "legacy_last_up")?);
            ptr::copy_nonoverlapping(rrd.legacy_last_up, live, 8);
            ptr::write_bytes(live.add(8), 0, 8);
        } else {
            rrd.live_head = base.add(take(&mut at, Some(LIVE_HEAD), len, "live_head")?);
        }
        rrd.pdp_prep = base.add(take(&mut at, PDP_PREP.checked_mul(ds), len, "pdp_prep")?);
        let cdp = CDP_PREP.checked_mul(ds).and_then(|n| n.checked_mul(rra));
        rrd.cdp_prep = base.add(take(&mut at, cdp, len, "cdp_prep")?);
        rrd.rra_ptr = base.add(take(&mut at, RRA_PTR.checked_mul(rra), len, "rra_ptr")?);
        (*file).header_len = at;
        (*file).pos = at;
        let mut rows = Some(0usize);
        for i in 0..rra {
            let n = ulong_at(rrd.rra_def, i * RRA_DEF + ROW_CNT_AT) as usize;
            rows = rows.and_then(|r| r.checked_add(n));
        }
        let values = rows.and_then(|r| r.checked_mul(ds));
        let correct = values.and_then(|n| n.checked_mul(VALUE)).and_then(|n| n.checked_add(at));
        match correct {
            Some(c) if c <= len => {}
            _ => {
                let shown_len = correct.map_or(i64::MAX, |c| c as i64);
                return Err(format!("'{shown}' is too small (should be {shown_len} bytes)"));
            }
        }
        if rdwr & RRD_READVALUES != 0 {
            let n = values.and_then(|n| n.checked_mul(VALUE));
            rrd.rrd_value = base.add(take(&mut at, n, len, "rrd_value")?);
            (*file).pos = (*file).header_len;
        }
        Ok(())
    }
}

/// `rrd_open(file_name, rrd, rdwr)`.
#[no_mangle]
pub unsafe extern "C" fn rrd_open(file_name: *const c_char, rrd: *mut RrdT, rdwr: c_uint) -> *mut RrdFileT {
    if file_name.is_null() || rrd.is_null() {
        ffi::set_error("rrd_open: no file name or no rrd_t");
        return ptr::null_mut();
    }
    // SAFETY: a NUL-terminated name and a writable rrd_t, per the contract;
    // the header sections are read only within the mapping's length.
    unsafe {
        let name = CStr::from_ptr(file_name);
        let shown = name.to_string_lossy();
        let rrd = &mut *rrd;
        let mut new_size = 0usize;
        if rdwr & RRD_CREAT != 0 {
            if rrd.stat_head.is_null() || rrd.rra_def.is_null() {
                ffi::set_error("rrd_open: RRD_CREAT needs the new file's header in rrd");
                return ptr::null_mut();
            }
            match described_size(rrd) {
                Some((_, total)) => new_size = total,
                None => {
                    ffi::set_error(&format!("'{shown}': the header describes a file too large"));
                    return ptr::null_mut();
                }
            }
        }
        let file = ffi::alloc(std::mem::size_of::<RrdFileT>()) as *mut RrdFileT;
        let private = ffi::alloc(std::mem::size_of::<Private>()) as *mut Private;
        if file.is_null() || private.is_null() {
            libc::free(file as *mut c_void);
            libc::free(private as *mut c_void);
            ffi::set_error(&format!("allocating rrd_file descriptor for '{shown}'"));
            return ptr::null_mut();
        }
        file.write(RrdFileT { header_len: 0, file_len: 0, pos: 0, pvt: private as *mut c_void, rrd });
        private.write(Private {
            public: RrdSimpleFileT {
                fd: -1,
                file_start: ptr::null_mut(),
                mm_prot: libc::PROT_READ,
                mm_flags: 0,
            },
            path: libc::strdup(file_name),
        });
        let mut o = Opening { file, private, map: ptr::null_mut(), len: 0 };
        let p = &mut (*private).public;

        let flags = open_flags(rdwr, p);
        p.fd = libc::open(file_name, flags, 0o666 as c_uint);
        if p.fd < 0 {
            return o.fail(&format!("opening '{shown}': {}", os_error()));
        }
        if p.mm_prot & libc::PROT_WRITE != 0 {
            crate::writer::forget(std::ffi::OsStr::from_encoded_bytes_unchecked(name.to_bytes()));
        }
        if rdwr & RRD_LOCK != 0 && lock(p.fd, rdwr & RRD_READWRITE != 0) != 0 {
            return o.fail("could not lock RRD");
        }
        if new_size == 0 {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(p.fd, &mut st) != 0 {
                return o.fail(&format!("fstat '{shown}': {}", os_error()));
            }
            (*file).file_len = st.st_size as usize;
        } else {
            (*file).file_len = new_size;
            let rc = libc::posix_fallocate(p.fd, 0, new_size as libc::off_t);
            if rc != 0 {
                return o.fail(&format!("posix_fallocate '{shown}': {}", rrd_lang::ctext::strerror(rc)));
            }
        }
        let len = (*file).file_len;
        let map = libc::mmap(ptr::null_mut(), len, p.mm_prot, p.mm_flags, p.fd, 0);
        if map == libc::MAP_FAILED {
            return o.fail(&format!("mmaping file '{shown}': {}", os_error()));
        }
        (o.map, o.len) = (map, len);
        rrd.mmap_start = map;
        rrd.mmap_size = len as c_long;
        p.file_start = map as *mut c_char;
        if rdwr & RRD_CREAT != 0 {
            return o.done();
        }
        // Readahead off: a reader of a header and a few rows would
        // otherwise pull in pages it never uses.
        let advice =
            if rdwr & (RRD_COPY | RRD_READAHEAD) != 0 { libc::MADV_SEQUENTIAL } else { libc::MADV_RANDOM };
        libc::madvise(map, len, advice);

        let sections = map_sections(rrd, file, map as *mut u8, len, rdwr, &shown);
        match sections {
            Ok(()) => o.done(),
            Err(text) => o.fail(&text),
        }
    }
}

/// rrdtool's lock: a write lock (or a read lock) on the whole file, not
/// waiting. 0, or -1 with `errno` set.
fn lock(fd: c_int, write: bool) -> c_int {
    // SAFETY: an all-zero flock is valid; fcntl reads it.
    unsafe {
        let mut l: libc::flock = std::mem::zeroed();
        l.l_type = if write { libc::F_WRLCK } else { libc::F_RDLCK } as libc::c_short;
        l.l_whence = libc::SEEK_SET as libc::c_short;
        libc::fcntl(fd, libc::F_SETLK, &l)
    }
}

/// The private part of an open file.
///
/// # Safety
/// `f` is NULL or a file from `rrd_open`, not yet closed.
unsafe fn private<'a>(f: *mut RrdFileT) -> Option<(&'a mut RrdFileT, &'a mut Private)> {
    // SAFETY: as promised.
    unsafe {
        let f = f.as_mut()?;
        let p = (f.pvt as *mut Private).as_mut()?;
        Some((f, p))
    }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_close(rrd_file: *mut RrdFileT) -> c_int {
    // SAFETY: a file from rrd_open, per the contract; freed here once.
    unsafe {
        let Some((f, p)) = private(rrd_file) else {
            ffi::set_error("rrd_close: no open file");
            return -1;
        };
        let mut rc = 0;
        if !p.public.file_start.is_null() && libc::munmap(p.public.file_start as *mut c_void, f.file_len) != 0
        {
            rc = -1;
            ffi::set_error(&format!("munmap rrd_file: {}", os_error()));
        }
        if p.public.fd >= 0 && libc::close(p.public.fd) != 0 {
            rc = -1;
            ffi::set_error(&format!("closing file: {}", os_error()));
        }
        if p.public.mm_prot & libc::PROT_WRITE != 0 && !p.path.is_null() {
            crate::writer::forget(std::ffi::OsStr::from_encoded_bytes_unchecked(
                CStr::from_ptr(p.path).to_bytes(),
            ));
        }
        libc::free(p.path as *mut c_void);
        libc::free(f.pvt);
        libc::free(rrd_file as *mut c_void);
        rc
    }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_read(rrd_file: *mut RrdFileT, buf: *mut c_void, count: usize) -> isize {
    // SAFETY: a live file from rrd_open; buf holds count bytes.
    unsafe {
        let Some((f, p)) = private(rrd_file) else { return -1 };
        if f.pos > f.file_len || count == 0 {
            return 0;
        }
        if buf.is_null() || p.public.file_start.is_null() {
            return -1;
        }
        let n = count.min(f.file_len - f.pos);
        if n == 0 {
            return 0;
        }
        ptr::copy_nonoverlapping(p.public.file_start.add(f.pos) as *const u8, buf as *mut u8, n);
        f.pos += n;
        n as isize
    }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_write(rrd_file: *mut RrdFileT, buf: *const c_void, count: usize) -> isize {
    // SAFETY: a live file from rrd_open; buf holds count bytes; the copy
    // stays within the mapping (checked), which is writable (checked).
    unsafe {
        let Some((f, p)) = private(rrd_file) else { return -1 };
        if count == 0 {
            return 0;
        }
        if buf.is_null() || p.public.file_start.is_null() {
            return -1;
        }
        if f.pos.checked_add(count).is_none_or(|end| end > f.file_len) {
            ffi::set_error(&format!(
                "attempting to write beyond end of file ({} + {} > {})",
                f.pos as i64, count as i64, f.file_len as i64
            ));
            return -1;
        }
        if p.public.mm_prot & libc::PROT_WRITE == 0 {
            ffi::set_error("attempting to write to a file opened read-only");
            return -1;
        }
        // memmove: a caller may write back a header section it changed in
        // place (the areas then overlap).
        ptr::copy(buf as *const u8, p.public.file_start.add(f.pos) as *mut u8, count);
        f.pos += count;
        count as isize
    }
}

/// Moves the position (no check against the length, as librrd's); 0, or
/// -1 for no file.
#[no_mangle]
pub unsafe extern "C" fn rrd_seek(rrd_file: *mut RrdFileT, off: libc::off_t, whence: c_int) -> libc::off_t {
    // SAFETY: a live file from rrd_open.
    let Some(f) = (unsafe { rrd_file.as_mut() }) else { return -1 };
    match whence {
        libc::SEEK_SET => f.pos = off as usize,
        libc::SEEK_CUR => f.pos = f.pos.wrapping_add(off as usize),
        libc::SEEK_END => f.pos = f.file_len.wrapping_add(off as usize),
        _ => {}
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn rrd_tell(rrd_file: *mut RrdFileT) -> libc::off_t {
    // SAFETY: a live file from rrd_open.
    unsafe { rrd_file.as_ref() }.map_or(-1, |f| f.pos as libc::off_t)
}

/// A write lock on the whole file: 0, or -1 (`errno` set, no error text).
#[no_mangle]
pub unsafe extern "C" fn rrd_lock(rrd_file: *mut RrdFileT) -> c_int {
    // SAFETY: a live file from rrd_open.
    match unsafe { private(rrd_file) } {
        Some((_, p)) => lock(p.public.fd, true),
        None => -1,
    }
}

/// A no-op, as in librrd 1.7.2 (the mapping is the file's pages).
#[no_mangle]
pub extern "C" fn rrd_flush(_rrd_file: *mut RrdFileT) {}

/// Drops the file's cached pages except the header's and, per archive, the
/// page of its current row (and the next page when the archive
/// consolidates within ten minutes), as librrd's does after an update.
#[no_mangle]
pub unsafe extern "C" fn rrd_dontneed(rrd_file: *mut RrdFileT, rrd: *mut RrdT) {
    const PAGE: usize = 4096;
    // SAFETY: a live file and the rrd_t it was opened with; every section
    // read is the header's.
    unsafe {
        let (Some((f, p)), Some(rrd)) = (private(rrd_file), rrd.as_ref()) else { return };
        if rrd.stat_head.is_null()
            || rrd.rra_def.is_null()
            || rrd.rra_ptr.is_null()
            || rrd.live_head.is_null()
        {
            return;
        }
        let ds = ulong_at(rrd.stat_head, DS_CNT_AT) as usize;
        let rra = ulong_at(rrd.stat_head, RRA_CNT_AT) as usize;
        let step = ulong_at(rrd.stat_head, PDP_STEP_AT);
        let last_up = ptr::read_unaligned(rrd.live_head as *const i64) as u64;
        // Pages to keep, as [from, to) byte ranges in file order.
        let mut keep = vec![(0, (f.header_len / PAGE + 1) * PAGE)];
        let mut rra_start = f.header_len;
        for i in 0..rra {
            let rows = ulong_at(rrd.rra_def, i * RRA_DEF + ROW_CNT_AT) as usize;
            let pdp_cnt = ulong_at(rrd.rra_def, i * RRA_DEF + PDP_CNT_AT);
            let cur = ulong_at(rrd.rra_ptr, i * RRA_PTR) as usize;
            let row_page = rra_start.saturating_add(cur.saturating_mul(ds * VALUE)) / PAGE * PAGE;
            let period = step.saturating_mul(pdp_cnt).max(1);
            let soon = period - last_up % period < 600;
            keep.push((row_page, row_page + if soon { 2 * PAGE } else { PAGE }));
            rra_start = rra_start.saturating_add(rows.saturating_mul(ds * VALUE));
        }
        keep.sort_unstable();
        let mut from = 0usize;
        for (a, b) in keep.into_iter().chain(std::iter::once((f.file_len, f.file_len))) {
            if a > from && from < f.file_len {
                let to = a.min(f.file_len);
                // Pages mapped here are unmapped first: the page cache
                // drops only pages no process maps.
                if !p.public.file_start.is_null() {
                    libc::madvise(
                        p.public.file_start.add(from) as *mut c_void,
                        to - from,
                        libc::MADV_DONTNEED,
                    );
                }
                libc::posix_fadvise(
                    p.public.fd,
                    from as libc::off_t,
                    (to - from) as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                );
            }
            from = from.max(b);
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_init(rrd: *mut RrdT) {
    // SAFETY: a writable rrd_t or NULL.
    if let Some(rrd) = unsafe { rrd.as_mut() } {
        *rrd = RrdT {
            stat_head: ptr::null_mut(),
            ds_def: ptr::null_mut(),
            rra_def: ptr::null_mut(),
            live_head: ptr::null_mut(),
            legacy_last_up: ptr::null_mut(),
            pdp_prep: ptr::null_mut(),
            cdp_prep: ptr::null_mut(),
            rra_ptr: ptr::null_mut(),
            rrd_value: ptr::null_mut(),
            mmap_start: ptr::null_mut(),
            mmap_size: 0,
        };
    }
}

/// Frees the sections that lie outside the file's mapping and sets every
/// section pointer to NULL (the mapping is `rrd_close`'s).
#[no_mangle]
pub unsafe extern "C" fn rrd_free(rrd: *mut RrdT) {
    // SAFETY: a rrd_t whose sections are NULL, inside the recorded mapping,
    // or malloced, per the contract.
    unsafe {
        let Some(rrd) = rrd.as_mut() else { return };
        let start = rrd.mmap_start as usize;
        let end = start.saturating_add(rrd.mmap_size.max(0) as usize);
        let mapped = |p: *mut u8| start != 0 && (start..end).contains(&(p as usize));
        for p in [
            &mut rrd.live_head,
            &mut rrd.stat_head,
            &mut rrd.ds_def,
            &mut rrd.rra_def,
            &mut rrd.rra_ptr,
            &mut rrd.pdp_prep,
            &mut rrd.cdp_prep,
            &mut rrd.rrd_value,
        ] {
            if !p.is_null() && !mapped(*p) {
                libc::free(*p as *mut c_void);
            }
            *p = ptr::null_mut();
        }
    }
}
