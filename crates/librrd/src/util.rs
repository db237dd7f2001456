//! librrd's small exported helpers that programs linked against it may
//! call: pointer arrays, `rrd_cf_conv`, `rrd_random`, `rrd_mkdir_p`, and
//! the callback form of dump.

use std::ffi::{c_char, c_int, c_long, c_void};
use std::ptr;

use crate::ffi::{self, guard};

/// Appends `src` to a `malloc`ed array of `*dest_size` pointers with room
/// for `*alloc`, growing it by `chunk` when full. 1, or 0 when memory runs
/// out (the array unchanged).
#[no_mangle]
pub unsafe extern "C" fn rrd_add_ptr_chunk(
    dest: *mut *mut *mut c_void,
    dest_size: *mut usize,
    src: *mut c_void,
    alloc: *mut usize,
    chunk: usize,
) -> c_int {
    if dest.is_null() || dest_size.is_null() || alloc.is_null() {
        return 0;
    }
    // SAFETY: librrd's contract: a malloced (or NULL) array of *alloc
    // slots, *dest_size of them used.
    unsafe {
        if *alloc <= *dest_size {
            let grown = (*dest_size).max(*alloc) + chunk.max(1);
            let p = libc::realloc(*dest as *mut c_void, grown * std::mem::size_of::<*mut c_void>());
            if p.is_null() {
                return 0;
            }
            *dest = p as *mut *mut c_void;
            *alloc = grown;
        }
        *(*dest).add(*dest_size) = src;
        *dest_size += 1;
    }
    1
}

#[no_mangle]
pub unsafe extern "C" fn rrd_add_ptr(
    dest: *mut *mut *mut c_void,
    dest_size: *mut usize,
    src: *mut c_void,
) -> c_int {
    if dest_size.is_null() {
        return 0;
    }
    // SAFETY: as for rrd_add_ptr_chunk; the array is exactly full.
    unsafe {
        let mut alloc = *dest_size;
        rrd_add_ptr_chunk(dest, dest_size, src, &mut alloc, 1)
    }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_add_strdup_chunk(
    dest: *mut *mut *mut c_char,
    dest_size: *mut usize,
    src: *const c_char,
    alloc: *mut usize,
    chunk: usize,
) -> c_int {
    if src.is_null() {
        return 0;
    }
    // SAFETY: src is a string; the copy is freed if it cannot be added.
    unsafe {
        let copy = libc::strdup(src);
        if copy.is_null() {
            return 0;
        }
        let ok =
            rrd_add_ptr_chunk(dest as *mut *mut *mut c_void, dest_size, copy as *mut c_void, alloc, chunk);
        if ok == 0 {
            libc::free(copy as *mut c_void);
        }
        ok
    }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_add_strdup(
    dest: *mut *mut *mut c_char,
    dest_size: *mut usize,
    src: *const c_char,
) -> c_int {
    if dest_size.is_null() {
        return 0;
    }
    // SAFETY: as for rrd_add_strdup_chunk; the array is exactly full.
    unsafe {
        let mut alloc = *dest_size;
        rrd_add_strdup_chunk(dest, dest_size, src, &mut alloc, 1)
    }
}

/// Frees each of `*cnt` pointers and the array; `*src` becomes NULL.
#[no_mangle]
pub unsafe extern "C" fn rrd_free_ptrs(src: *mut *mut *mut c_void, cnt: *mut usize) {
    if src.is_null() || cnt.is_null() {
        return;
    }
    // SAFETY: a malloced array of *cnt malloced pointers, per the contract.
    unsafe {
        let arr = *src;
        if arr.is_null() {
            return;
        }
        while *cnt > 0 {
            *cnt -= 1;
            libc::free(*arr.add(*cnt));
        }
        libc::free(arr as *mut c_void);
        *src = ptr::null_mut();
    }
}

/// A consolidation function's number in librrd's `enum cf_en`; -1 with the
/// error text set for an unknown name.
#[no_mangle]
pub unsafe extern "C" fn rrd_cf_conv(string: *const c_char) -> c_int {
    // SAFETY: a string, per the contract.
    let name = unsafe { ffi::text(string) };
    const NAMES: [&str; 10] = [
        "AVERAGE",
        "MIN",
        "MAX",
        "LAST",
        "HWPREDICT",
        "SEASONAL",
        "DEVPREDICT",
        "DEVSEASONAL",
        "FAILURES",
        "MHWPREDICT",
    ];
    match NAMES.iter().position(|n| *n == name) {
        Some(i) => i as c_int,
        None => {
            ffi::set_error(&format!("unknown consolidation function '{name}'"));
            -1
        }
    }
}

extern "C" {
    // glibc's; the libc crate does not declare them.
    fn srandom(seed: std::ffi::c_uint);
    fn random() -> c_long;
}

/// `random()`, seeded once from the time and the process id, as librrd.
#[no_mangle]
pub extern "C" fn rrd_random() -> c_long {
    static SEEDED: std::sync::Once = std::sync::Once::new();
    SEEDED.call_once(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as u32)
            .unwrap_or(0);
        // SAFETY: srandom has no preconditions.
        unsafe { srandom(t.wrapping_add(std::process::id())) };
    });
    // SAFETY: random has no preconditions.
    unsafe { random() }
}

/// `mkdir -p` with `mode` for the directories it makes: 0, or -1 with
/// `errno` set.
#[no_mangle]
pub unsafe extern "C" fn rrd_mkdir_p(pathname: *const c_char, mode: libc::mode_t) -> c_int {
    use std::os::unix::fs::DirBuilderExt;
    if pathname.is_null() {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return -1;
    }
    // SAFETY: a string, per the contract.
    let path = unsafe { ffi::text(pathname) };
    if path.is_empty() {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return -1;
    }
    match std::fs::DirBuilder::new().recursive(true).mode(mode).create(&path) {
        Ok(()) => 0,
        Err(e) => {
            // SAFETY: errno is this thread's.
            unsafe { *libc::__errno_location() = e.raw_os_error().unwrap_or(libc::EIO) };
            -1
        }
    }
}

type OutputCallback = unsafe extern "C" fn(*const c_void, usize, *mut c_void) -> usize;

/// Dumps `filename` as XML through `cb(data, len, user)` (header kinds as
/// `rrd_dump_opt_r`: 1 the DTD, 2 the schema, else none). 0, or -1 with the
/// error text set.
#[no_mangle]
pub unsafe extern "C" fn rrd_dump_cb_r(
    filename: *const c_char,
    opt_header: c_int,
    cb: Option<OutputCallback>,
    user: *mut c_void,
) -> c_int {
    // SAFETY: a string, per the contract.
    let file = unsafe { ffi::text(filename) };
    let Some(cb) = cb else {
        ffi::set_error("rrd_dump_cb_r: no output callback");
        return -1;
    };
    guard(-1, || {
        let header = match opt_header {
            1 => rrd_engine::dump::DumpHeader::Dtd,
            2 => rrd_engine::dump::DumpHeader::Xsd,
            _ => rrd_engine::dump::DumpHeader::None,
        };
        let mut text = Vec::new();
        let options = rrd_engine::dump::DumpOptions { header };
        if let Err(e) = rrd_cli::cmd::dump::write_dump(&file, None, &options, &mut text) {
            ffi::report(&e);
            return -1;
        }
        // SAFETY: the caller's callback with its own user pointer, given
        // bytes that live through the call.
        let written = unsafe { cb(text.as_ptr() as *const c_void, text.len(), user) };
        if written != text.len() {
            ffi::set_error("rrd_dump_cb_r: the output callback took less than it was given");
            return -1;
        }
        0
    })
}

/// librrd's `rrd_scaled_duration(token, divisor, &value)`: a count of
/// seconds, or digits and a unit letter (only the first character after
/// the digits is looked at: s, m, h, d, w, M = 31 days, y = 366 days),
/// divided by `divisor` (a bare count is not divided). NULL and `*valuep`
/// set, or a message that is not to be freed. Arithmetic is C's `unsigned
/// long` (`strtoul` saturates, the scaling wraps), as librrd's.
#[no_mangle]
pub unsafe extern "C" fn rrd_scaled_duration(
    token: *const c_char,
    divisor: std::ffi::c_ulong,
    valuep: *mut std::ffi::c_ulong,
) -> *const c_char {
    // SAFETY: a string, per the contract.
    let token = unsafe { ffi::text(token) };
    let b = token.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_digit) {
        return c"value must be (suffixed) positive number".as_ptr();
    }
    if divisor == 0 {
        return c"INTERNAL ERROR: Zero divisor".as_ptr();
    }
    let digits = b.iter().position(|c| !c.is_ascii_digit()).unwrap_or(b.len());
    let mut value: u64 = token[..digits].parse().unwrap_or(u64::MAX);
    let mut divisor = divisor;
    let scale: u64 = match b.get(digits) {
        None => {
            divisor = 0;
            1
        }
        Some(b's') => 1,
        Some(b'm') => 60,
        Some(b'h') => 3600,
        Some(b'd') => 86_400,
        Some(b'w') => 7 * 86_400,
        Some(b'M') => 31 * 86_400,
        Some(b'y') => 366 * 86_400,
        Some(_) => return c"value has trailing garbage".as_ptr(),
    };
    value = value.wrapping_mul(scale);
    if value == 0 {
        return c"value must be positive".as_ptr();
    }
    if divisor != 0 {
        if !value.is_multiple_of(divisor) {
            return c"value would truncate when scaled".as_ptr();
        }
        value /= divisor;
    }
    // SAFETY: an out-parameter, per the contract.
    unsafe { ffi::put(valuep, value) };
    ptr::null()
}

/// librrd's `rrd_lcd`: despite its name, the greatest common divisor of a
/// zero-terminated array of steps (graph uses it for a CDEF's step). The
/// array is left as librrd leaves it: each element the divisor of it and
/// all before it, the last twice. The GCD, or 0 for an empty array.
#[no_mangle]
pub unsafe extern "C" fn rrd_lcd(num: *mut c_long) -> c_long {
    if num.is_null() {
        return 0;
    }
    // SAFETY: a zero-terminated array, per the contract: element i + 1 is
    // read only when element i is not the terminator.
    unsafe {
        if *num == 0 {
            return 0;
        }
        let mut i = 0;
        while *num.add(i + 1) != 0 {
            // Euclid on (num[i], num[i + 1]), C's truncating remainder.
            let (mut a, mut b) = (*num.add(i), *num.add(i + 1));
            while b != 0 {
                (a, b) = (b, a.wrapping_rem(b));
            }
            *num.add(i) = a;
            *num.add(i + 1) = a;
            i += 1;
        }
        *num.add(i)
    }
}

/// librrd's `rrd_reduce_data(cf, cur_step, &start, &end, &step, &ds_cnt,
/// &data)`: rows fetched at `cur_step` consolidated with `cf` (librrd's
/// `enum cf_en`) to the smallest multiple of `cur_step` at least `*step`,
/// the range widened to it (`rrd_engine::reduce`'s arithmetic, which graph
/// and xport use). The result replaces `*data` in place (reallocated when
/// it is longer, which librrd would write past). 1, or 0 with the error
/// text set.
#[no_mangle]
pub unsafe extern "C" fn rrd_reduce_data(
    cf: c_int,
    cur_step: std::ffi::c_ulong,
    start: *mut libc::time_t,
    end: *mut libc::time_t,
    step: *mut std::ffi::c_ulong,
    ds_cnt: *mut std::ffi::c_ulong,
    data: *mut *mut f64,
) -> c_int {
    const CF_NAMES: [&str; 10] = [
        "AVERAGE",
        "MIN",
        "MAX",
        "LAST",
        "HWPREDICT",
        "SEASONAL",
        "DEVPREDICT",
        "DEVSEASONAL",
        "FAILURES",
        "MHWPREDICT",
    ];
    if start.is_null() || end.is_null() || step.is_null() || ds_cnt.is_null() || data.is_null() {
        ffi::set_error("rrd_reduce_data: NULL argument");
        return 0;
    }
    let Some(cf) =
        usize::try_from(cf).ok().and_then(|i| CF_NAMES.get(i)).and_then(|n| rrd_format::Cf::parse(n))
    else {
        ffi::set_error(&format!("rrd_reduce_data: unknown consolidation function {cf}"));
        return 0;
    };
    guard(0, || {
        // SAFETY: out-parameters and a malloced array of the fetched rows,
        // (end - start) / cur_step of ds_cnt values, per the contract.
        unsafe {
            let (s, e, wanted, ds) = (*start, *end, *step as i64, *ds_cnt as usize);
            let cur = cur_step as i64;
            if cur <= 0 || e < s || (*data).is_null() && e > s {
                ffi::set_error(&format!("rrd_reduce_data: no rows of {cur_step} s between {s} and {e}"));
                return 0;
            }
            let values = ((e - s) / cur) as usize * ds;
            let input =
                if values == 0 { &[][..] } else { std::slice::from_raw_parts(*data as *const f64, values) };
            match rrd_engine::reduce::reduce(cf, cur, s, e, wanted, ds, input) {
                Ok((s2, e2, st, out)) => {
                    if out.len() > values {
                        let p =
                            libc::realloc(*data as *mut c_void, std::mem::size_of_val(&out[..])) as *mut f64;
                        if p.is_null() {
                            ffi::set_error("rrd_reduce_data: out of memory");
                            return 0;
                        }
                        *data = p;
                    }
                    ptr::copy_nonoverlapping(out.as_ptr(), *data, out.len());
                    *start = s2;
                    *end = e2;
                    *step = st as std::ffi::c_ulong;
                    1
                }
                Err(e) => {
                    ffi::set_error(&e.to_string());
                    0
                }
            }
        }
    })
}

/// librrd's `rrd_strtod`: rrdtool's own conversion (digits accumulated in
/// a double, then scaled by powers of ten; not correctly rounded), which
/// sets `*endptr` only when it converted something and `errno` to `ERANGE`
/// when it did not or the result is infinite.
#[no_mangle]
pub unsafe extern "C" fn rrd_strtod(s: *const c_char, endptr: *mut *mut c_char) -> f64 {
    if s.is_null() {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return 0.0;
    }
    // SAFETY: a NUL-terminated string, per the contract.
    let bytes = unsafe { std::ffi::CStr::from_ptr(s) }.to_bytes();
    let (value, used) = rrd_lang::numparse::rrd_strtod_bytes(bytes);
    if used == 0 || value == f64::INFINITY {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::ERANGE };
    }
    if used > 0 {
        // SAFETY: an out-parameter (or NULL); s + used is within the string.
        unsafe { ffi::put(endptr, s.add(used) as *mut c_char) };
    }
    value
}

/// librrd's `rrd_strtodbl(str, &end, &value, error)`: 2 when the whole
/// string is a number (or starts with `nan`/`inf`/`-nan`/`-inf` where no
/// digits come first), 1 when a number is followed by more text, 0 when
/// none was found; with `error` not NULL, 1 and 0 set the error text
/// (`"<error> - Cannot convert ..."`).
#[no_mangle]
pub unsafe extern "C" fn rrd_strtodbl(
    s: *const c_char,
    endptr: *mut *mut c_char,
    dbl: *mut f64,
    error: *const c_char,
) -> std::ffi::c_uint {
    if s.is_null() || dbl.is_null() {
        return 0;
    }
    // SAFETY: NUL-terminated strings (error may be NULL) and out-parameters,
    // per the contract.
    unsafe {
        let bytes = std::ffi::CStr::from_ptr(s).to_bytes();
        let (value, used) = rrd_lang::numparse::rrd_strtod_bytes(bytes);
        *dbl = value;
        ffi::put(endptr, s.add(used) as *mut c_char);
        let text = String::from_utf8_lossy(bytes);
        let prefix = (!error.is_null()).then(|| ffi::text(error));
        if used == 0 {
            if let Some(v) = rrd_lang::numparse::parse_special(&text) {
                *dbl = v;
                return 2;
            }
            if let Some(p) = prefix {
                ffi::set_error(&format!("{p} - Cannot convert '{text}' to float"));
            }
            return 0;
        }
        if used < bytes.len() {
            if let Some(p) = prefix {
                let tail = String::from_utf8_lossy(&bytes[used..]);
                ffi::set_error(&format!(
                    "{p} - Converted '{text}' to {}, but cannot convert '{tail}'",
                    c_lf(value)
                ));
            }
            return 1;
        }
        2
    }
}

/// `printf("%lf", v)` as the C library prints it.
fn c_lf(v: f64) -> String {
    let mut buf = [0u8; 400];
    // SAFETY: the buffer's length is passed; the format takes one double.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr() as *mut c_char, buf.len(), c"%lf".as_ptr(), v) };
    String::from_utf8_lossy(&buf[..(n.max(0) as usize).min(buf.len() - 1)]).into_owned()
}
