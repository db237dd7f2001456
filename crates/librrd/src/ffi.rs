//! The C side of the boundary: librrd's error context, memory the caller
//! frees with `free`, `rrd_info_t` lists, and reading C arguments.
//!
//! Every pointer handed out here comes from `malloc`, as librrd's do, so a
//! caller may release it with `free`, `rrd_freemem` or `rrd_info_free`
//! exactly as it would librrd's.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_uchar, c_ulong, c_void, CStr};
use std::ptr;

/// librrd's `rrd_context_t`: per-thread error texts.
#[repr(C)]
pub struct RrdContext {
    pub lib_errstr: [c_char; 256],
    pub rrd_error: [c_char; 4096],
}

thread_local! {
    /// This thread's context. Its address stays valid for the thread's
    /// lifetime, as librrd's thread-specific context does.
    static CONTEXT: UnsafeCell<RrdContext> =
        const { UnsafeCell::new(RrdContext { lib_errstr: [0; 256], rrd_error: [0; 4096] }) };
}

/// This thread's context (`rrd_get_context`).
pub fn context() -> *mut RrdContext {
    CONTEXT.with(|c| c.get())
}

/// Copies `text` into a C buffer, cut at the buffer's size minus the NUL
/// (at a byte, as librrd's `vsnprintf` cuts).
pub fn copy_into(buf: &mut [c_char], text: &[u8]) {
    let n = text.len().min(buf.len() - 1);
    for (d, s) in buf.iter_mut().zip(&text[..n]) {
        *d = *s as c_char;
    }
    buf[n] = 0;
}

/// Sets this thread's error text (`rrd_set_error("%s", text)`).
pub fn set_error(text: &str) {
    // SAFETY: the context belongs to this thread and no reference to it is
    // held across this call.
    let ctx = unsafe { &mut *context() };
    copy_into(&mut ctx.rrd_error, text.as_bytes());
}

/// Clears this thread's error text.
pub fn clear_error() {
    // SAFETY: as in `set_error`.
    unsafe { (*context()).rrd_error[0] = 0 };
}

/// Whether an error text is set.
pub fn has_error() -> bool {
    // SAFETY: as in `set_error`.
    unsafe { (*context()).rrd_error[0] != 0 }
}

/// Reports an error of a command as librrd stores it (the message alone,
/// without the `ERROR: ` the command line adds).
pub fn report(e: &anyhow::Error) {
    set_error(&rrd_cli::cmd::error_message(e));
}

/// Runs `f`, turning a panic into an error text and `fallback`, so that no
/// unwind crosses into C.
pub fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            set_error(&format!("internal error: {what}"));
            fallback
        }
    }
}

/// A C string as Rust text (invalid UTF-8 replaced). NULL reads as "".
///
/// # Safety
/// `s` is NULL or a NUL-terminated string valid for reads.
pub unsafe fn text(s: *const c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// A file name as the C string's bytes (not necessarily UTF-8).
///
/// # Safety
/// `s` is NULL (an empty path) or a NUL-terminated string.
pub unsafe fn path(s: *const c_char) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    if s.is_null() {
        return std::path::PathBuf::new();
    }
    // SAFETY: the caller promises a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(s) }.to_bytes();
    std::ffi::OsStr::from_bytes(bytes).into()
}

/// `argv[0..argc]` as Rust strings.
///
/// # Safety
/// `argv` is NULL (then `argc` is ignored) or points to `argc` pointers,
/// each NULL or a NUL-terminated string.
pub unsafe fn strings(argc: c_int, argv: *const *const c_char) -> Vec<String> {
    if argv.is_null() || argc <= 0 {
        return Vec::new();
    }
    // SAFETY: the caller promises `argc` readable pointers.
    let ptrs = unsafe { std::slice::from_raw_parts(argv, argc as usize) };
    // SAFETY: each is NULL or NUL-terminated, as promised.
    ptrs.iter().map(|&p| unsafe { text(p) }).collect()
}

/// A command's arguments from a C `argv`: without `argv[0]` (the command
/// name, which librrd's option parser skips too).
///
/// # Safety
/// As for [`strings`].
pub unsafe fn command_args(argc: c_int, argv: *const *const c_char) -> Vec<String> {
    // SAFETY: passed through.
    let mut all = unsafe { strings(argc, argv) };
    if !all.is_empty() {
        all.remove(0);
    }
    all
}

/// A NULL-terminated array of strings as Rust strings.
///
/// # Safety
/// `list` is NULL or a NULL-terminated array of NUL-terminated strings.
pub unsafe fn null_terminated(list: *const *const c_char) -> Vec<String> {
    let mut out = Vec::new();
    if list.is_null() {
        return out;
    }
    let mut i = 0;
    loop {
        // SAFETY: the array is NULL-terminated, so every index up to the
        // terminator is readable.
        let p = unsafe { *list.add(i) };
        if p.is_null() {
            return out;
        }
        // SAFETY: a NUL-terminated string, as promised.
        out.push(unsafe { text(p) });
        i += 1;
    }
}

/// The arguments of `rrd_create_r2` and of `rrdc_create_r2` (one C
/// signature for a local and a daemon CREATE), read once: a `last_up` of 0
/// or less is no start, a NULL template none, `argv` the DS and RRA
/// definitions; `pdp_step` as given (0: not given).
///
/// # Safety
/// `filename` and `template` as for [`text`], `sources` as for
/// [`null_terminated`], `argc`/`argv` as for [`strings`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn create_request(
    filename: *const c_char,
    pdp_step: c_ulong,
    last_up: libc::time_t,
    no_overwrite: c_int,
    sources: *const *const c_char,
    template: *const c_char,
    argc: c_int,
    argv: *const *const c_char,
) -> rrd_client::CreateRequest {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        rrd_client::CreateRequest {
            file: text(filename),
            step_secs: pdp_step,
            start: (last_up > 0).then_some(last_up),
            no_overwrite: no_overwrite != 0,
            sources: null_terminated(sources),
            template: (!template.is_null()).then(|| text(template)),
            definitions: strings(argc, argv),
        }
    }
}

/// `malloc(size)` that never returns NULL for a zero size (1 byte then);
/// NULL only when memory runs out.
pub fn alloc(size: usize) -> *mut c_void {
    // SAFETY: malloc has no preconditions.
    unsafe { libc::malloc(size.max(1)) }
}

/// A `malloc`ed NUL-terminated copy of `bytes` (cut at an inner NUL, as C
/// would read it).
pub fn c_string(bytes: &[u8]) -> *mut c_char {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let p = alloc(end + 1) as *mut u8;
    if p.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: p has end + 1 bytes; the source has at least end.
    unsafe {
        ptr::copy_nonoverlapping(bytes.as_ptr(), p, end);
        *p.add(end) = 0;
    }
    p as *mut c_char
}

/// A `malloc`ed array of `malloc`ed strings, NULL-terminated when
/// `terminate` (graph's PRINT results) and plain otherwise (DS names).
pub fn c_string_array(items: &[String], terminate: bool) -> *mut *mut c_char {
    let n = items.len() + usize::from(terminate);
    let arr = alloc(n * std::mem::size_of::<*mut c_char>()) as *mut *mut c_char;
    if arr.is_null() {
        return arr;
    }
    for (i, s) in items.iter().enumerate() {
        // SAFETY: arr has n slots and i < items.len() <= n.
        unsafe { *arr.add(i) = c_string(s.as_bytes()) };
    }
    if terminate {
        // SAFETY: the last of the n slots.
        unsafe { *arr.add(items.len()) = ptr::null_mut() };
    }
    arr
}

/// A `malloc`ed copy of doubles.
pub fn c_doubles(values: &[f64]) -> *mut f64 {
    let p = alloc(std::mem::size_of_val(values)) as *mut f64;
    if !p.is_null() {
        // SAFETY: p holds values.len() doubles.
        unsafe { ptr::copy_nonoverlapping(values.as_ptr(), p, values.len()) };
    }
    p
}

/// Writes `value` through `p` unless it is NULL.
///
/// # Safety
/// `p` is NULL or valid for a write of `T`.
pub unsafe fn put<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: non-NULL and writable, as promised.
        unsafe { p.write(value) };
    }
}

// ---------------------------------------------------------------- rrd_info_t

pub const RD_I_VAL: c_int = 0;
pub const RD_I_CNT: c_int = 1;
pub const RD_I_STR: c_int = 2;
pub const RD_I_INT: c_int = 3;
pub const RD_I_BLO: c_int = 4;

/// `rrd_blob_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RrdBlob {
    pub size: c_ulong,
    pub ptr: *mut c_uchar,
}

/// `rrd_infoval_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union RrdInfoVal {
    pub u_cnt: c_ulong,
    pub u_val: f64,
    pub u_str: *mut c_char,
    pub u_int: c_int,
    pub u_blo: RrdBlob,
}

/// `rrd_info_t`: one entry of a singly linked list.
#[repr(C)]
pub struct RrdInfo {
    pub key: *mut c_char,
    pub kind: c_int,
    pub value: RrdInfoVal,
    pub next: *mut RrdInfo,
}

/// A value to put in a list (owned on the Rust side until pushed).
pub enum Value<'a> {
    Val(f64),
    Cnt(u64),
    Str(&'a str),
    Int(i32),
    Blob(&'a [u8]),
}

/// Builds a `malloc`ed list in order (`rrd_info_push` semantics).
#[derive(Default)]
pub struct InfoList {
    head: *mut RrdInfo,
    tail: *mut RrdInfo,
}

impl InfoList {
    pub fn push(&mut self, key: &str, value: Value<'_>) {
        let (kind, v) = match value {
            Value::Val(x) => (RD_I_VAL, RrdInfoVal { u_val: x }),
            Value::Cnt(x) => (RD_I_CNT, RrdInfoVal { u_cnt: x as c_ulong }),
            Value::Int(x) => (RD_I_INT, RrdInfoVal { u_int: x }),
            Value::Str(s) => (RD_I_STR, RrdInfoVal { u_str: c_string(s.as_bytes()) }),
            Value::Blob(b) => {
                let p = alloc(b.len()) as *mut c_uchar;
                if !p.is_null() {
                    // SAFETY: p holds b.len() bytes.
                    unsafe { ptr::copy_nonoverlapping(b.as_ptr(), p, b.len()) };
                }
                (RD_I_BLO, RrdInfoVal { u_blo: RrdBlob { size: b.len() as c_ulong, ptr: p } })
            }
        };
        // SAFETY: the tail is NULL or a node this list allocated.
        self.tail = unsafe { push_after(self.tail, c_string(key.as_bytes()), kind, v) };
        if self.head.is_null() {
            self.head = self.tail;
        }
    }

    /// The list's first node, for the caller to free with `rrd_info_free`.
    pub fn into_raw(self) -> *mut RrdInfo {
        self.head
    }
}

/// librrd's `rrd_info_push`: a new node holding `key` (taken over) and a
/// copy of `value` (strings and blobs copied), linked after `after` (when
/// not NULL). Returns the new node, NULL when memory runs out.
///
/// # Safety
/// `after` is NULL or a live node; `key` is a `malloc`ed string; a string
/// or blob value points to readable memory of its size.
pub unsafe fn push_after(
    after: *mut RrdInfo,
    key: *mut c_char,
    kind: c_int,
    value: RrdInfoVal,
) -> *mut RrdInfo {
    let node = alloc(std::mem::size_of::<RrdInfo>()) as *mut RrdInfo;
    if node.is_null() {
        return node;
    }
    // SAFETY: node is a fresh allocation of the right size; `after` is NULL
    // or a live node.
    unsafe {
        node.write(RrdInfo { key, kind, value, next: ptr::null_mut() });
        if !after.is_null() {
            (*after).next = node;
        }
    }
    node
}

/// Frees a list built here or by `rrd_info_push`.
///
/// # Safety
/// `list` is NULL or the head of a list whose nodes, keys, strings and
/// blobs were `malloc`ed, not yet freed.
pub unsafe fn free_list(mut list: *mut RrdInfo) {
    while !list.is_null() {
        // SAFETY: a live node, as promised; everything it owns was malloced.
        unsafe {
            let next = (*list).next;
            libc::free((*list).key as *mut c_void);
            match (*list).kind {
                RD_I_STR => libc::free((*list).value.u_str as *mut c_void),
                RD_I_BLO => libc::free((*list).value.u_blo.ptr as *mut c_void),
                _ => {}
            }
            libc::free(list as *mut c_void);
            list = next;
        }
    }
}
