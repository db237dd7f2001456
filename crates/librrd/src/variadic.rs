//! librrd's two variadic entry points, `rrd_set_error(fmt, ...)` and
//! `rrd_snprintf(buf, size, fmt, ...)`, formatted by the C library's
//! `vsnprintf`.
//!
//! Why assembly: stable Rust cannot define a C variadic function (nor read
//! a `va_list`). On x86-64 a variadic callee must save the argument
//! registers it may read (six integer, and eight vector ones when `%al` says
//! any were used) and describe them, with the stack arguments, in a
//! `va_list`; the naked functions here do exactly that, then pass the
//! `va_list` to a Rust function that calls `vsnprintf`. Every argument kind
//! (integers, strings, doubles, more than fit in registers) is then read as
//! C reads it. Other architectures keep the older `rrd_set_error` that reads
//! five integer arguments and have no `rrd_snprintf`.
//!
//! `rrd_snprintf` differs from librrd's own formatter (C99-snprintf) in two
//! places, both glibc's behaviour: a tie is rounded to even on the exact
//! binary value (`%.0f` of 0.5 is `0`; librrd's rounds half up: `1`), and
//! negative zero keeps its sign (`-0`; librrd's prints `0`). No program
//! Debian ships calls it; rrdscale's own output (dump, xport, graph) uses
//! the engine's copy of librrd's formatter.

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
    // SAFETY: the caller's buffer of `size` bytes (or NULL with 0), format
    // and arguments.
    unsafe { vsnprintf(buf, size, fmt, ap) }
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
