//! librrd's two variadic entry points, `rrd_set_error(fmt, ...)` (formatted
//! by the C library's `vsnprintf`, as librrd's is) and `rrd_snprintf(buf,
//! size, fmt, ...)` (librrd's own formatter).
//!
//! Why assembly: stable Rust cannot define a C variadic function (nor read
//! a `va_list`). On x86-64 a variadic callee must save the argument
//! registers it may read (six integer, and eight vector ones when `%al` says
//! any were used) and describe them, with the stack arguments, in a
//! `va_list`; the naked functions here do exactly that, then pass the
//! `va_list` to a Rust function that reads it. Every argument kind
//! (integers, strings, doubles, more than fit in registers) is then read as
//! C reads it. Other architectures keep the older `rrd_set_error` that reads
//! five integer arguments and have no `rrd_snprintf`.
//!
//! `rrd_snprintf` is librrd's C99-snprintf, which prints doubles its own way
//! (ties rounded half up on a scaled value, not to even on the exact binary
//! one; negative zero without its sign; NaN unsigned; nothing more once an
//! integer part passes 64 bits, and -1): each conversion is read from the
//! `va_list` here ([`VaArgs`]), doubles formatted by rrd-lang's copy of
//! that formatter (`cformat::rrd_snprintf`, which graph's PRINT, xport and
//! dump use; padded here), the other
//! conversions by the C library's `snprintf` one at a time (the two agree
//! on them), `%c` unpadded as librrd's. A `long double` (`%Lf`) is not
//! supported (-1).

use std::ffi::{c_char, c_int, c_void};

/// The x86-64 System V `va_list` element.
#[repr(C)]
pub struct VaListTag {
    gp_offset: u32,
    fp_offset: u32,
    overflow_arg_area: *mut c_void,
    reg_save_area: *mut c_void,
}

extern "C" {
    // glibc's; the va_list is passed as a pointer to its one element, as C
    // passes an array.
    fn vsnprintf(s: *mut c_char, n: usize, format: *const c_char, ap: *mut VaListTag) -> c_int;
}

/// The error buffer's size (`rrd_context_t.rrd_error`).
const ERROR_LEN: usize = 4096;

/// `rrd_set_error`'s body: this thread's error text from `fmt` and `ap`.
unsafe extern "C" fn set_error_va(fmt: *const c_char, ap: *mut VaListTag) {
    if fmt.is_null() {
        return;
    }
    // SAFETY: the buffer is this thread's and ERROR_LEN long; the format
    // and its arguments are the caller's, as with librrd's vsnprintf.
    unsafe { vsnprintf(crate::rrd_get_error(), ERROR_LEN, fmt, ap) };
}

/// `rrd_snprintf`'s body; -1 for a NULL format.
unsafe extern "C" fn snprintf_va(
    buf: *mut c_char,
    size: usize,
    fmt: *const c_char,
    ap: *mut VaListTag,
) -> c_int {
    if fmt.is_null() {
        return -1;
    }
    // SAFETY: the caller's format and the arguments it describes, read in
    // order from the va_list; the output is copied within `size` bytes.
    unsafe {
        let (out, overflow) = format(std::ffi::CStr::from_ptr(fmt).to_bytes(), &mut VaArgs(ap));
        if size > 0 && !buf.is_null() {
            let n = out.len().min(size - 1);
            std::ptr::copy_nonoverlapping(out.as_ptr(), buf as *mut u8, n);
            *buf.add(n) = 0;
        }
        if overflow || out.len() > c_int::MAX as usize {
            *libc::__errno_location() = libc::EOVERFLOW;
            return -1;
        }
        out.len() as c_int
    }
}

/// Reads variadic arguments from an x86-64 `va_list`, as `va_arg` does.
struct VaArgs(*mut VaListTag);

impl VaArgs {
    /// The next integer-class argument (any integer, a pointer), as its
    /// 8-byte slot.
    unsafe fn int(&mut self) -> u64 {
        // SAFETY: the caller passed an argument of integer class here; it
        // is in the register save area until 48 bytes are used, then on
        // the stack.
        unsafe {
            let ap = &mut *self.0;
            if ap.gp_offset < 48 {
                let v =
                    std::ptr::read((ap.reg_save_area as *const u8).add(ap.gp_offset as usize) as *const u64);
                ap.gp_offset += 8;
                v
            } else {
                let v = std::ptr::read(ap.overflow_arg_area as *const u64);
                ap.overflow_arg_area = (ap.overflow_arg_area as *mut u8).add(8) as *mut c_void;
                v
            }
        }
    }

    /// The next `double` argument.
    unsafe fn double(&mut self) -> f64 {
        // SAFETY: as for `int`, in the vector registers' part of the save
        // area (16 bytes each, up to 176), then on the stack.
        unsafe {
            let ap = &mut *self.0;
            if ap.fp_offset < 176 {
                let v =
                    std::ptr::read((ap.reg_save_area as *const u8).add(ap.fp_offset as usize) as *const f64);
                ap.fp_offset += 16;
                v
            } else {
                let v = std::ptr::read(ap.overflow_arg_area as *const f64);
                ap.overflow_arg_area = (ap.overflow_arg_area as *mut u8).add(8) as *mut c_void;
                v
            }
        }
    }
}

/// A value for one conversion of the C library's `snprintf`.
#[derive(Clone, Copy)]
enum Arg {
    Long(std::ffi::c_long),
    Str(*const c_char),
    Ptr(*const c_void),
    Double(f64),
}

/// One conversion through the C library's `snprintf`, with its width and
/// precision spelled out and the value of the type the spec says.
fn c_format(spec: &[u8], value: Arg) -> Vec<u8> {
    let spec = std::ffi::CString::new(spec).unwrap_or_default();
    let mut buf = vec![0u8; 512];
    loop {
        let (p, len) = (buf.as_mut_ptr() as *mut c_char, buf.len());
        // SAFETY: the buffer's length is passed; the spec has one
        // conversion, whose argument type the caller matched.
        let n = unsafe {
            match value {
                Arg::Long(v) => libc::snprintf(p, len, spec.as_ptr(), v),
                Arg::Str(v) => libc::snprintf(p, len, spec.as_ptr(), v),
                Arg::Ptr(v) => libc::snprintf(p, len, spec.as_ptr(), v),
                Arg::Double(v) => libc::snprintf(p, len, spec.as_ptr(), v),
            }
        };
        if n < 0 {
            return Vec::new();
        }
        if (n as usize) < buf.len() {
            buf.truncate(n as usize);
            return buf;
        }
        buf.resize(n as usize + 1, 0);
    }
}

/// One conversion's flags, field width, precision and length modifier,
/// as written (a `*` width or precision already read from the arguments).
struct ConvSpec {
    flags: Vec<u8>,
    width: Option<i64>,
    precision: Option<i64>,
    length: Vec<u8>,
}

impl ConvSpec {
    /// Reads the spec that starts at `fmt[*pos]` (just after a `%`),
    /// leaving `*pos` on the conversion character.
    ///
    /// # Safety
    /// As for [`format`]: a `*` reads an int argument from `args`.
    unsafe fn parse(fmt: &[u8], pos: &mut usize, args: &mut VaArgs) -> ConvSpec {
        let mut i = *pos;
        let mut flags = Vec::new();
        while let Some(&c @ (b'-' | b'+' | b' ' | b'#' | b'0' | b'\'')) = fmt.get(i) {
            flags.push(c);
            i += 1;
        }
        let mut width: Option<i64> = None;
        if fmt.get(i) == Some(&b'*') {
            // SAFETY: an int argument, per the format.
            let w = unsafe { args.int() } as u32 as i32;
            if w < 0 {
                flags.push(b'-');
            }
            width = Some(i64::from(w).abs());
            i += 1;
        } else {
            while let Some(d) = fmt.get(i).filter(|c| c.is_ascii_digit()) {
                width = Some(width.unwrap_or(0).saturating_mul(10).saturating_add(i64::from(d - b'0')));
                i += 1;
            }
        }
        let mut precision: Option<i64> = None;
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            if fmt.get(i) == Some(&b'*') {
                // SAFETY: an int argument, per the format.
                let p = unsafe { args.int() } as u32 as i32;
                precision = (p >= 0).then_some(i64::from(p));
                i += 1;
            } else {
                let mut p = 0i64;
                while let Some(d) = fmt.get(i).filter(|c| c.is_ascii_digit()) {
                    p = p.saturating_mul(10).saturating_add(i64::from(d - b'0'));
                    i += 1;
                }
                precision = Some(p);
            }
        }
        let mut length = Vec::new();
        while let Some(&c @ (b'h' | b'l' | b'L' | b'q' | b'j' | b'z' | b't')) = fmt.get(i) {
            length.push(c);
            i += 1;
        }
        *pos = i;
        ConvSpec { flags, width, precision, length }
    }

    /// The spec as a C format with conversion `conv`, for [`c_format`].
    fn c_spec(&self, conv: &[u8]) -> Vec<u8> {
        let mut s = vec![b'%'];
        s.extend_from_slice(&self.flags);
        if let Some(w) = self.width {
            s.extend_from_slice(w.to_string().as_bytes());
        }
        if let Some(p) = self.precision {
            s.push(b'.');
            s.extend_from_slice(p.to_string().as_bytes());
        }
        s.extend_from_slice(conv);
        s
    }
}

/// A floating-point conversion of `v`, as librrd's `rrd_vsnprintf` prints
/// it, appended to `out`; false when the integer part overflowed (the text
/// then stops there).
fn format_double(out: &mut Vec<u8>, spec: &ConvSpec, conv: u8, v: f64) -> bool {
    // librrd prints %a as %f.
    let conv = match conv {
        b'a' => 'f',
        b'A' => 'F',
        c => c as char,
    };
    // The `'` flag groups nothing in the C locale; several flags
    // are one flag for the digits (`#`, else the sign's) and
    // padding done here.
    let has = |f: u8| spec.flags.contains(&f);
    let sign = if has(b'+') {
        Some('+')
    } else if has(b' ') {
        Some(' ')
    } else {
        None
    };
    let digits_flag = match (has(b'#'), sign) {
        (true, None) => Some('#'),
        (false, s) => s,
        (true, Some(_)) => None,
    };
    if has(b'#') && sign.is_some() {
        // No flag of cformat::rrd_snprintf's says both.
        out.extend(c_format(&spec.c_spec(&[conv as u8]), Arg::Double(v)));
        return true;
    }
    let c = rrd_lang::cformat::Conversion {
        flag: digits_flag,
        width: 0,
        precision: spec.precision.map(|p| p as usize),
        conv,
    };
    let Some(body) = rrd_lang::cformat::rrd_snprintf(v, c) else { return false };
    let pad = (spec.width.unwrap_or(0) as usize).saturating_sub(body.len());
    if has(b'-') {
        out.extend_from_slice(body.as_bytes());
        out.resize(out.len() + pad, b' ');
    } else if has(b'0') && v.is_finite() {
        let signed = body.starts_with(['+', '-', ' ']);
        let (head, rest) = body.split_at(usize::from(signed));
        out.extend_from_slice(head.as_bytes());
        out.resize(out.len() + pad, b'0');
        out.extend_from_slice(rest.as_bytes());
    } else {
        out.resize(out.len() + pad, b' ');
        out.extend_from_slice(body.as_bytes());
    }
    true
}

/// librrd's `rrd_vsnprintf` over `fmt`: the text (whole, however long) and
/// whether a double's integer part overflowed (the text then stops there).
///
/// # Safety
/// `args` holds the arguments `fmt` describes, of the types it says.
unsafe fn format(fmt: &[u8], args: &mut VaArgs) -> (Vec<u8>, bool) {
    let mut out = Vec::with_capacity(fmt.len() + 32);
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            out.push(fmt[i]);
            i += 1;
            continue;
        }
        i += 1;
        // SAFETY: passed on: `args` holds what `fmt` describes.
        let spec = unsafe { ConvSpec::parse(fmt, &mut i, args) };
        let Some(&conv) = fmt.get(i) else { break };
        i += 1;
        match conv {
            b'%' => out.push(b'%'),
            b'd' | b'i' | b'o' | b'u' | b'x' | b'X' => {
                // SAFETY: an integer argument, per the format.
                let raw = unsafe { args.int() };
                let signed = matches!(conv, b'd' | b'i');
                // C's promotions and the length modifier decide the width.
                let value: i64 = match (spec.length.as_slice(), signed) {
                    (b"hh", true) => i64::from(raw as i8),
                    (b"hh", false) => i64::from(raw as u8),
                    (b"h", true) => i64::from(raw as i16),
                    (b"h", false) => i64::from(raw as u16),
                    ([], true) => i64::from(raw as i32),
                    ([], false) => i64::from(raw as u32),
                    _ => raw as i64,
                };
                out.extend(c_format(&spec.c_spec(&[b'l', conv]), Arg::Long(value as std::ffi::c_long)));
            }
            b'c' => {
                // SAFETY: an int argument, per the format; librrd writes
                // the character without padding.
                out.push(unsafe { args.int() } as u8);
            }
            b's' => {
                // SAFETY: a string pointer (or NULL), per the format.
                let p = unsafe { args.int() } as usize as *const c_char;
                let p = if p.is_null() { c"(null)".as_ptr() } else { p };
                out.extend(c_format(&spec.c_spec(b"s"), Arg::Str(p)));
            }
            b'p' => {
                // SAFETY: a pointer argument, per the format.
                let p = unsafe { args.int() } as usize as *const c_void;
                out.extend(c_format(&spec.c_spec(b"p"), Arg::Ptr(p)));
            }
            b'n' => {
                // SAFETY: a pointer to an integer of the modifier's size.
                unsafe {
                    let p = args.int() as usize;
                    let n = out.len();
                    match spec.length.as_slice() {
                        b"hh" => *(p as *mut i8) = n as i8,
                        b"h" => *(p as *mut i16) = n as i16,
                        [] => *(p as *mut i32) = n as i32,
                        _ => *(p as *mut i64) = n as i64,
                    }
                }
            }
            b'e' | b'E' | b'f' | b'F' | b'g' | b'G' | b'a' | b'A' => {
                if spec.length.as_slice() == b"L" {
                    // A long double is passed in memory, not read here: not
                    // supported (-1, as for an overflow).
                    return (out, true);
                }
                // SAFETY: a double argument, per the format.
                let v = unsafe { args.double() };
                if !format_double(&mut out, &spec, conv, v) {
                    return (out, true);
                }
            }
            // librrd skips a conversion it does not know.
            _ => {}
        }
    }
    (out, false)
}

/// Saves the argument registers, builds a `va_list` whose first variadic
/// argument follows `$fixed` integer ones, puts its address in `$ap` and
/// calls `$body` (whose other arguments are still in their registers).
macro_rules! variadic_trampoline {
    ($fixed_bytes:literal, $ap:literal, $body:path) => {
        core::arch::naked_asm!(
            "push rbp",
            "mov rbp, rsp",
            // 48 bytes of integer registers, 128 of vector registers, the
            // 24-byte va_list, 8 of padding: rsp stays 16-byte aligned.
            "sub rsp, 208",
            "mov [rsp], rdi",
            "mov [rsp + 8], rsi",
            "mov [rsp + 16], rdx",
            "mov [rsp + 24], rcx",
            "mov [rsp + 32], r8",
            "mov [rsp + 40], r9",
            "test al, al",
            "je 2f",
            "movaps [rsp + 48], xmm0",
            "movaps [rsp + 64], xmm1",
            "movaps [rsp + 80], xmm2",
            "movaps [rsp + 96], xmm3",
            "movaps [rsp + 112], xmm4",
            "movaps [rsp + 128], xmm5",
            "movaps [rsp + 144], xmm6",
            "movaps [rsp + 160], xmm7",
            "2:",
            concat!("mov dword ptr [rsp + 176], ", $fixed_bytes),
            "mov dword ptr [rsp + 180], 48",
            "lea rax, [rbp + 16]",
            "mov [rsp + 184], rax",
            "mov [rsp + 192], rsp",
            concat!("lea ", $ap, ", [rsp + 176]"),
            "call {body}",
            "leave",
            "ret",
            body = sym $body,
        )
    };
}

/// `void rrd_set_error(char *fmt, ...)`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn rrd_set_error() {
    variadic_trampoline!("8", "rsi", set_error_va)
}

/// `int rrd_snprintf(char *buf, size_t size, const char *fmt, ...)`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn rrd_snprintf() {
    variadic_trampoline!("24", "rcx", snprintf_va)
}

/// `rrd_set_error(fmt, ...)` where no trampoline exists: on aarch64 a
/// variadic caller passes the first integer and pointer arguments in the
/// same registers as a fixed-argument call, so this reads up to five of
/// them (`"%s"`, `"%d"`); a floating-point argument would not be seen.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn rrd_set_error(
    fmt: *const c_char,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
) {
    if fmt.is_null() {
        return;
    }
    // SAFETY: this thread's buffer; the caller's format and arguments.
    unsafe { libc::snprintf(crate::rrd_get_error(), ERROR_LEN, fmt, a1, a2, a3, a4, a5) };
}
