//! A drop-in `librrd.so.8`: RRDtool 1.7.2's public C API (`rrd.h`,
//! `rrd_client.h`) on rrdscale's engine.
//!
//! The argv-style entry points (`rrd_create(argc, argv)`, ...) hand
//! `argv[1..]` to the same command code as the `rrdscale` binary
//! (`rrd_cli::cmd`), so they parse exactly as the command line does; the
//! `_r` entry points call the engine directly. Errors follow librrd: the
//! message (without the command line's `ERROR: `) in a per-thread buffer
//! read with `rrd_get_error`, and the function returns -1 (or NULL).
//! Memory handed to the caller is `malloc`ed as librrd's is.
//!
//! `unsafe` lives only here and in `ffi`, at the boundary: reading the
//! caller's pointers and writing its out-parameters.

#![allow(clippy::missing_safety_doc)]

/// Run by the dynamic loader when the library is loaded: librrd locks
/// files with POSIX process locks, and its callers rely on their threads
/// never conflicting with each other (rrdcached fetches a file while its
/// flush thread updates it), so the engine takes process locks here.
extern "C" fn on_load() {
    rrd_engine::rrd::use_process_locks();
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

mod ahead;
mod client;
mod ffi;
mod fileapi;
mod util;
mod variadic;
mod writer;

use std::ffi::{c_char, c_int, c_ulong, c_void};
use std::io::Write;
use std::path::Path;
use std::ptr;

use ffi::{guard, put, report, InfoList, RrdContext, RrdInfo, RrdInfoVal, Value};
use rrd_cli::cmd;

type TimeT = libc::time_t;

/// Output the argv-style commands print (dump without a file, tune's
/// listing, lastupdate...) goes to the process's standard output, after
/// whatever C stdio has buffered.
struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stdout().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

/// Runs an argv-style command whose result is a status: 0, or -1 with the
/// error text set.
fn status(args: &[String], run: impl FnOnce(&[String], &mut dyn Write) -> anyhow::Result<()>) -> c_int {
    guard(-1, || {
        // SAFETY: flushing every C stream has no preconditions; it keeps
        // the caller's buffered output before ours.
        unsafe { libc::fflush(ptr::null_mut()) };
        let mut out = Stdout;
        let result = run(args, &mut out);
        let _ = out.flush();
        match result {
            Ok(()) => 0,
            Err(e) => {
                report(&e);
                // librrd returns the client's status when the daemon was
                // the problem (an errno when it cannot be reached).
                match e.downcast_ref::<rrd_client::ClientError>() {
                    Some(c) => client::librrd_status(c),
                    None => -1,
                }
            }
        }
    })
}

/// librrd's option parser reports a bare call (`argc` 1) through the
/// command's own checks; the command line prints a synopsis instead. These
/// are librrd's texts for a call with no arguments.
fn bare_call_error(command: &str) -> &'static str {
    match command {
        "create" => "need name of an rrd file to create",
        "update" | "updatev" => "Not enough arguments",
        "dump" => "usage rrdtool dump [--header|-h {none,xsd,dtd}]\n[--no-header|-n]\n[--daemon|-d address]\nfile.rrd [file.xml]",
        "restore" => "usage rrdtool restore [--range-check|-r] [--force-overwrite|-f] file.xml file.rrd",
        "tune" => "missing file name",
        "resize" => "wrong number of parameters",
        "graph" | "graphv" => "missing filename",
        _ => "Not enough arguments",
    }
}

/// The prologue every argv-style entry point shares: `argv[1..]` read as
/// Rust strings; a call without arguments answered, for a `command` that
/// has librrd's check, with that command's error text and `fallback`; and
/// `run` kept from unwinding into C ([`guard`]).
///
/// # Safety
/// librrd's contract for argv: `argv` is NULL or points to `argc`
/// pointers, each NULL or a NUL-terminated string.
unsafe fn argv_entry<T: Copy>(
    argc: c_int,
    argv: *const *const c_char,
    command: Option<&str>,
    fallback: T,
    run: impl FnOnce(&[String]) -> T,
) -> T {
    // SAFETY: the caller's contract, passed on.
    let args = unsafe { ffi::command_args(argc, argv) };
    guard(fallback, || {
        if let (Some(name), true) = (command, args.is_empty()) {
            ffi::set_error(bare_call_error(name));
            return fallback;
        }
        run(&args)
    })
}

// ------------------------------------------------------------ error context

#[no_mangle]
pub extern "C" fn rrd_get_error() -> *mut c_char {
    // SAFETY: the context is this thread's and lives as long as the thread.
    unsafe { (*ffi::context()).rrd_error.as_mut_ptr() }
}

#[no_mangle]
pub extern "C" fn rrd_clear_error() {
    ffi::clear_error();
}

#[no_mangle]
pub extern "C" fn rrd_test_error() -> c_int {
    c_int::from(ffi::has_error())
}

#[no_mangle]
pub extern "C" fn rrd_get_context() -> *mut RrdContext {
    ffi::context()
}

#[no_mangle]
pub extern "C" fn rrd_new_context() -> *mut RrdContext {
    let p = ffi::alloc(std::mem::size_of::<RrdContext>()) as *mut RrdContext;
    if !p.is_null() {
        // SAFETY: a fresh allocation of the right size; all-zero bytes are
        // a valid context (two empty strings).
        unsafe { ptr::write_bytes(p, 0, 1) };
    }
    p
}

#[no_mangle]
pub unsafe extern "C" fn rrd_free_context(ctx: *mut RrdContext) {
    // SAFETY: NULL or a context from rrd_new_context, as the API requires.
    unsafe { libc::free(ctx as *mut c_void) };
}

#[no_mangle]
pub extern "C" fn rrd_strerror(err: c_int) -> *const c_char {
    // SAFETY: the context is this thread's; strerror_r writes at most the
    // buffer's length.
    unsafe {
        let ctx = ffi::context();
        let text = rrd_client::ctext::strerror(err);
        ffi::copy_into(&mut (*ctx).lib_errstr, text.as_bytes());
        (*ctx).lib_errstr.as_ptr()
    }
}

// ------------------------------------------------------------------ memory

#[no_mangle]
pub unsafe extern "C" fn rrd_freemem(mem: *mut c_void) {
    // SAFETY: NULL or memory this library (or the caller) malloced.
    unsafe { libc::free(mem) };
}

#[no_mangle]
pub unsafe extern "C" fn rrd_info_free(data: *mut RrdInfo) {
    // SAFETY: NULL or a list from this library or rrd_info_push.
    unsafe { ffi::free_list(data) };
}

#[no_mangle]
pub unsafe extern "C" fn rrd_info_push(
    info: *mut RrdInfo,
    key: *mut c_char,
    kind: c_int,
    value: RrdInfoVal,
) -> *mut RrdInfo {
    // SAFETY: librrd's contract: a live node or NULL, a malloced key; a
    // string value is copied here, as librrd copies it.
    unsafe {
        let value = match kind {
            ffi::RD_I_STR => RrdInfoVal { u_str: ffi::c_string(ffi::text(value.u_str).as_bytes()) },
            ffi::RD_I_BLO => {
                let b = value.u_blo;
                let p = ffi::alloc(b.size as usize) as *mut u8;
                if !p.is_null() && !b.ptr.is_null() {
                    ptr::copy_nonoverlapping(b.ptr, p, b.size as usize);
                }
                RrdInfoVal { u_blo: ffi::RrdBlob { size: b.size, ptr: p } }
            }
            _ => value,
        };
        ffi::push_after(info, key, kind, value)
    }
}

/// Prints a list as `rrdtool info` prints it.
#[no_mangle]
pub unsafe extern "C" fn rrd_info_print(data: *mut RrdInfo) {
    let mut text = Vec::new();
    let mut node = data;
    while !node.is_null() {
        // SAFETY: a live list, as the API requires.
        unsafe {
            let key = ffi::text((*node).key);
            let v = (*node).value;
            let line = match (*node).kind {
                ffi::RD_I_VAL => format!("{key} = {}\n", cmd::fmt_info_value(v.u_val)),
                ffi::RD_I_CNT => format!("{key} = {}\n", v.u_cnt),
                ffi::RD_I_INT => format!("{key} = {}\n", v.u_int),
                ffi::RD_I_STR => format!("{key} = \"{}\"\n", ffi::text(v.u_str)),
                _ => format!("{key} = BLOB_SIZE:{}\n", v.u_blo.size),
            };
            text.extend_from_slice(line.as_bytes());
            if (*node).kind == ffi::RD_I_BLO && !v.u_blo.ptr.is_null() {
                text.extend_from_slice(std::slice::from_raw_parts(v.u_blo.ptr, v.u_blo.size as usize));
            }
            node = (*node).next;
        }
    }
    // SAFETY: as in `status`.
    unsafe { libc::fflush(ptr::null_mut()) };
    let _ = Stdout.write_all(&text);
    let _ = Stdout.flush();
}

#[no_mangle]
pub extern "C" fn rrd_set_to_DNAN() -> f64 {
    f64::NAN
}

#[no_mangle]
pub extern "C" fn rrd_set_to_DINF() -> f64 {
    f64::INFINITY
}

// ----------------------------------------------------------------- version

/// librrd's numeric version for 1.7.2.
const NUMVERS: f64 = 1.7002;

#[no_mangle]
pub extern "C" fn rrd_version() -> f64 {
    NUMVERS
}

#[no_mangle]
pub extern "C" fn rrd_strversion() -> *const c_char {
    c"1.7.2".as_ptr()
}

// ------------------------------------------------------------------ create

#[no_mangle]
pub unsafe extern "C" fn rrd_create(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, Some("create"), -1, |args| status(args, cmd::create::run)) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_create_r(
    filename: *const c_char,
    pdp_step: c_ulong,
    last_up: TimeT,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: passed through under the same contract.
    unsafe { rrd_create_r2(filename, pdp_step, last_up, 0, ptr::null(), ptr::null(), argc, argv) }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rrd_create_r2(
    filename: *const c_char,
    pdp_step: c_ulong,
    last_up: TimeT,
    no_overwrite: c_int,
    sources: *const *const c_char,
    template: *const c_char,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: librrd's contract: strings, a NULL-terminated source list,
    // argc definitions.
    let req = unsafe {
        ffi::create_request(filename, pdp_step, last_up, no_overwrite, sources, template, argc, argv)
    };
    guard(-1, || {
        let options = rrd_engine::create::CreateOptions {
            start: req.start,
            step_secs: (req.step_secs > 0).then_some(req.step_secs),
            no_overwrite: req.no_overwrite,
            template: req.template.map(Into::into),
            sources: req.sources.into_iter().map(Into::into).collect(),
            source_root: Default::default(),
            target_root: Default::default(),
        };
        match rrd_engine::create::create(Path::new(&req.file), &options, &req.definitions, cmd::now_secs()) {
            Ok(()) => 0,
            Err(e) => {
                ffi::set_error(&e.to_string());
                -1
            }
        }
    })
}

// ------------------------------------------------------------------ update

#[no_mangle]
pub unsafe extern "C" fn rrd_update(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, Some("update"), -1, |args| status(args, update_run)) }
}

/// `rrd_update`'s command: without a daemon, through the kept headers
/// (`writer`); with one, as the command line sends it.
fn update_run(a: &[String], o: &mut dyn Write) -> anyhow::Result<()> {
    match cmd::update::parse(a, false)? {
        Some((req, daemon)) if rrd_client::chosen(daemon.as_deref()).is_none() => {
            match writer::update(&req.path, req.args, &req.opts)?.error {
                Some(e) => Err(e.into()),
                None => Ok(()),
            }
        }
        _ => cmd::update::run(a, o, false),
    }
}

/// `rrd_update_v`: NULL when the arguments are wrong; otherwise a list
/// starting with `return_value` (0, or -1 with the error text set) and the
/// rows written.
#[no_mangle]
pub unsafe extern "C" fn rrd_update_v(argc: c_int, argv: *const *const c_char) -> *mut RrdInfo {
    let run = |args: &[String]| {
        let req = match cmd::update::parse(args, true) {
            Ok(Some((req, _))) => req,
            Ok(None) => {
                ffi::set_error(bare_call_error("updatev"));
                return ptr::null_mut();
            }
            Err(e) => {
                report(&e);
                return ptr::null_mut();
            }
        };
        if std::env::var_os(rrd_client::ENV_ADDRESS).is_some_and(|v| v.is_empty()) {
            // librrd's check (of an empty variable, as its strcmp tests).
            ffi::set_error(&format!(
                "The \"{}\" environment variable is defined, but \"{}\" cannot work with rrdcached. Either unset the environment variable or use \"update\" instead.",
                rrd_client::ENV_ADDRESS,
                // SAFETY: argc >= 1 here (args is not empty).
                unsafe { ffi::text(*argv) }
            ));
            return ptr::null_mut();
        }
        let mut list = InfoList::default();
        let rc = update_into(&req.path, &req.args, &req.opts, &mut |k, v| list.push(k, v));
        // The return value is the first entry; build it in front.
        let mut head = InfoList::default();
        head.push("return_value", Value::Int(rc));
        let head_ptr = head.into_raw();
        // SAFETY: head_ptr is a fresh one-node list; link the rest after it.
        unsafe { (*head_ptr).next = list.into_raw() };
        head_ptr
    };
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, Some("updatev"), ptr::null_mut(), run) }
}

/// Runs a verbose update, passing each row written to `push` as librrd's
/// summary entries; 0, or -1 with the error set.
fn update_into(
    path: &Path,
    values: &[String],
    opts: &rrd_engine::update::UpdateOptions,
    push: &mut dyn FnMut(&str, Value<'_>),
) -> c_int {
    let report = match rrd_engine::update::update_file(path, values, opts, true) {
        Ok(r) => r,
        Err(e) => {
            ffi::set_error(&e.to_string());
            return -1;
        }
    };
    let summary = report.summary.unwrap_or_default();
    if !summary.is_empty() {
        match rrd_engine::Rrd::open(path, false) {
            Ok(rrd) => {
                for (time, rra_index, row) in &summary {
                    let rra = &rrd.header.rra()[*rra_index];
                    for (d, v) in row.iter().enumerate() {
                        let key = format!(
                            "[{time}]RRA[{}][{}]DS[{}]",
                            rra.cf_name.as_str(),
                            rra.pdp_count,
                            rrd.header.ds()[d].name.as_str()
                        );
                        push(&key, Value::Val(*v));
                    }
                }
            }
            Err(e) => {
                ffi::set_error(&e.to_string());
                return -1;
            }
        }
    }
    match report.error {
        Some(e) => {
            ffi::set_error(&e.to_string());
            -1
        }
        None => 0,
    }
}

/// The update options of the `_r` entry points.
unsafe fn update_options(template: *const c_char, extra_flags: c_int) -> rrd_engine::update::UpdateOptions {
    rrd_engine::update::UpdateOptions {
        // SAFETY: NULL or a string, per librrd's contract.
        template: (!template.is_null()).then(|| unsafe { ffi::text(template) }),
        skip_past_updates: extra_flags & 1 != 0,
    }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_update_r(
    filename: *const c_char,
    template: *const c_char,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: passed through under the same contract.
    unsafe { rrd_updatex_r(filename, template, 0, argc, argv) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_updatex_r(
    filename: *const c_char,
    template: *const c_char,
    extra_flags: c_int,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: librrd's contract: strings and argc values.
    let (file, opts, values) =
        unsafe { (ffi::path(filename), update_options(template, extra_flags), ffi::strings(argc, argv)) };
    guard(-1, || match writer::update(&file, values, &opts) {
        Ok(r) => match r.error {
            Some(e) => {
                ffi::set_error(&e.to_string());
                -1
            }
            None => 0,
        },
        Err(e) => {
            ffi::set_error(&e.to_string());
            -1
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn rrd_update_v_r(
    filename: *const c_char,
    template: *const c_char,
    argc: c_int,
    argv: *const *const c_char,
    pcdp_summary: *mut RrdInfo,
) -> c_int {
    // SAFETY: passed through under the same contract.
    unsafe { rrd_updatex_v_r(filename, template, 0, argc, argv, pcdp_summary) }
}

/// The rows written are appended after `pcdp_summary`'s last node, as
/// librrd pushes them.
#[no_mangle]
pub unsafe extern "C" fn rrd_updatex_v_r(
    filename: *const c_char,
    template: *const c_char,
    extra_flags: c_int,
    argc: c_int,
    argv: *const *const c_char,
    pcdp_summary: *mut RrdInfo,
) -> c_int {
    // SAFETY: librrd's contract: strings and argc values.
    let (file, opts, values) =
        unsafe { (ffi::text(filename), update_options(template, extra_flags), ffi::strings(argc, argv)) };
    guard(-1, || {
        let mut tail = pcdp_summary;
        // SAFETY: NULL or a live list, per the contract; walk to its end.
        unsafe {
            while !tail.is_null() && !(*tail).next.is_null() {
                tail = (*tail).next;
            }
        }
        let mut push = |key: &str, v: Value<'_>| {
            if tail.is_null() {
                return;
            }
            let mut one = InfoList::default();
            one.push(key, v);
            let node = one.into_raw();
            // SAFETY: tail is the list's live last node.
            unsafe { (*tail).next = node };
            tail = node;
        };
        update_into(Path::new(&file), &values, &opts, &mut push)
    })
}

// ------------------------------------------------------------------- fetch

/// Writes a fetch result to librrd's out-parameters.
unsafe fn put_rows(
    r: &rrd_engine::fetch::FetchResult,
    start: *mut TimeT,
    end: *mut TimeT,
    step: *mut c_ulong,
    ds_cnt: *mut c_ulong,
    ds_namv: *mut *mut *mut c_char,
    data: *mut *mut f64,
) {
    // SAFETY: out-parameters per librrd's contract (NULL skipped).
    unsafe {
        put(start, r.start as TimeT);
        put(end, r.end as TimeT);
        put(step, r.step_secs as c_ulong);
        put(ds_cnt, r.ds_names.len() as c_ulong);
        put(ds_namv, ffi::c_string_array(&r.ds_names, false));
        put(data, ffi::c_doubles(&r.data));
    }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rrd_fetch(
    argc: c_int,
    argv: *const *const c_char,
    start: *mut TimeT,
    end: *mut TimeT,
    step: *mut c_ulong,
    ds_cnt: *mut c_ulong,
    ds_namv: *mut *mut *mut c_char,
    data: *mut *mut f64,
) -> c_int {
    // SAFETY: out-parameters per the contract; the arrays read as NULL
    // after a failure, as librrd leaves them (callers free them either way).
    unsafe {
        put(ds_namv, ptr::null_mut());
        put(data, ptr::null_mut());
    }
    let run = |args: &[String]| match cmd::fetch::rows_and_error(args) {
        // An unreachable daemon: the file's rows, and the error text set,
        // as librrd returns them.
        Ok((Some(r), error)) => {
            if let Some(e) = error {
                report(&e);
            }
            // SAFETY: the caller's out-parameters.
            unsafe { put_rows(&r, start, end, step, ds_cnt, ds_namv, data) };
            0
        }
        Ok((None, _)) => -1,
        Err(e) => {
            report(&e);
            -1
        }
    };
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, None, -1, run) }
}

/// `rrd_fetch_r`: `start`, `end` and `step` are in and out, as in librrd.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rrd_fetch_r(
    filename: *const c_char,
    cf: *const c_char,
    start: *mut TimeT,
    end: *mut TimeT,
    step: *mut c_ulong,
    ds_cnt: *mut c_ulong,
    ds_namv: *mut *mut *mut c_char,
    data: *mut *mut f64,
) -> c_int {
    if start.is_null() || end.is_null() || step.is_null() {
        ffi::set_error("rrd_fetch_r: start, end and step are required");
        return -1;
    }
    // SAFETY: librrd's contract: strings and readable in-out values; the
    // arrays read as NULL after a failure.
    let (file, cf_name, s, e, st) = unsafe {
        put(ds_namv, ptr::null_mut());
        put(data, ptr::null_mut());
        (ffi::text(filename), ffi::text(cf), *start, *end, *step)
    };
    guard(-1, || {
        let Some(cf) = rrd_format::Cf::parse(&cf_name) else {
            ffi::set_error(&format!("unknown consolidation function '{cf_name}'"));
            return -1;
        };
        let result = rrd_engine::Rrd::open(Path::new(&file), false)
            .and_then(|rrd| rrd_engine::fetch::fetch(&rrd, cf, s, e, st.max(1)));
        match result {
            Ok(r) => {
                // SAFETY: the caller's out-parameters.
                unsafe { put_rows(&r, start, end, step, ds_cnt, ds_namv, data) };
                0
            }
            Err(e) => {
                ffi::set_error(&e.to_string());
                -1
            }
        }
    })
}

/// Fetch callbacks (`DEF:...=cb//...`) are not supported by the engine; the
/// registration is kept so that callers that register one at start-up
/// (python-rrdtool's `register_fetch_cb`) work.
#[no_mangle]
pub extern "C" fn rrd_fetch_cb_register(_cb: *const c_void) -> c_int {
    0
}

// ---------------------------------------------------------------- first/last

#[no_mangle]
pub unsafe extern "C" fn rrd_first(argc: c_int, argv: *const *const c_char) -> TimeT {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, None, -1, |args| value_or_error(cmd::first::first(args))) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_last(argc: c_int, argv: *const *const c_char) -> TimeT {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, None, -1, |args| value_or_error(cmd::last::last(args))) }
}

fn value_or_error((value, error): (i64, Option<anyhow::Error>)) -> TimeT {
    if let Some(e) = error {
        report(&e);
    }
    value as TimeT
}

#[no_mangle]
pub unsafe extern "C" fn rrd_first_r(filename: *const c_char, rraindex: c_int) -> TimeT {
    // SAFETY: a string, per the contract.
    let file = unsafe { ffi::text(filename) };
    let index = rraindex.to_string();
    guard(-1, || value_or_error(cmd::first::first(&["--rraindex".into(), index, file])))
}

#[no_mangle]
pub unsafe extern "C" fn rrd_last_r(filename: *const c_char) -> TimeT {
    // SAFETY: a string, per the contract.
    let file = unsafe { ffi::text(filename) };
    guard(-1, || match rrd_engine::Rrd::open(Path::new(&file), false) {
        Ok(rrd) => rrd.header.live().last_up as TimeT,
        Err(e) => {
            ffi::set_error(&e.to_string());
            -1
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn rrd_lastupdate(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, None, -1, |args| status(args, cmd::lastupdate::run)) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_lastupdate_r(
    filename: *const c_char,
    ret_last_update: *mut TimeT,
    ret_ds_count: *mut c_ulong,
    ret_ds_names: *mut *mut *mut c_char,
    ret_last_ds: *mut *mut *mut c_char,
) -> c_int {
    // SAFETY: a string, per the contract; the arrays read as NULL after a
    // failure.
    let file = unsafe {
        put(ret_ds_names, ptr::null_mut());
        put(ret_last_ds, ptr::null_mut());
        ffi::text(filename)
    };
    guard(-1, || match rrd_engine::Rrd::open(Path::new(&file), false) {
        Ok(rrd) => {
            let h = &rrd.header;
            let names: Vec<String> = h.ds().iter().map(|d| d.name.as_str().to_string()).collect();
            let last: Vec<String> = h
                .pdp()
                .iter()
                .map(|p| {
                    let end = p.last_ds.iter().position(|&b| b == 0).unwrap_or(p.last_ds.len());
                    String::from_utf8_lossy(&p.last_ds[..end]).into_owned()
                })
                .collect();
            // SAFETY: the caller's out-parameters.
            unsafe {
                put(ret_last_update, h.live().last_up as TimeT);
                put(ret_ds_count, names.len() as c_ulong);
                put(ret_ds_names, ffi::c_string_array(&names, false));
                put(ret_last_ds, ffi::c_string_array(&last, false));
            }
            0
        }
        Err(e) => {
            ffi::set_error(&e.to_string());
            -1
        }
    })
}

// -------------------------------------------------------------------- info

fn info_list(entries: &[rrd_engine::info::InfoEntry]) -> *mut RrdInfo {
    use rrd_engine::info::InfoValue as V;
    let mut list = InfoList::default();
    for e in entries {
        match &e.value {
            V::Value(v) => list.push(&e.key, Value::Val(*v)),
            V::Count(c) => list.push(&e.key, Value::Cnt(*c)),
            V::Int(i) => list.push(&e.key, Value::Int(*i)),
            V::Str(s) => list.push(&e.key, Value::Str(s)),
            V::Blob(b) => list.push(&e.key, Value::Blob(b)),
        }
    }
    list.into_raw()
}

#[no_mangle]
pub unsafe extern "C" fn rrd_info(argc: c_int, argv: *const *const c_char) -> *mut RrdInfo {
    let run = |args: &[String]| match cmd::info::entries_and_error(args) {
        // An unreachable daemon: the file's entries, and the error text
        // set, as librrd returns them.
        Ok((entries, error)) => {
            if let Some(e) = error {
                report(&e);
            }
            info_list(&entries)
        }
        Err(e) => {
            report(&e);
            ptr::null_mut()
        }
    };
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, None, ptr::null_mut(), run) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_info_r(filename: *const c_char) -> *mut RrdInfo {
    // SAFETY: a string, per the contract.
    let file = unsafe { ffi::text(filename) };
    guard(ptr::null_mut(), || {
        let entries = rrd_engine::Rrd::open(Path::new(&file), false)
            .and_then(|rrd| rrd_engine::info::info(&rrd, &file));
        match entries {
            Ok(entries) => info_list(&entries),
            Err(e) => {
                ffi::set_error(&e.to_string());
                ptr::null_mut()
            }
        }
    })
}

// ------------------------------------------------------------------- graph

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rrd_graph(
    argc: c_int,
    argv: *const *const c_char,
    prdata: *mut *mut *mut c_char,
    xsize: *mut c_int,
    ysize: *mut c_int,
    stream: *mut libc::FILE,
    ymin: *mut f64,
    ymax: *mut f64,
) -> c_int {
    // SAFETY: out-parameters per the contract.
    unsafe { put(prdata, ptr::null_mut()) };
    let run = |args: &[String]| {
        let drawn = cmd::graph::draw_and_save(args);
        let (graph, file) = match drawn {
            Ok(d) => d,
            Err(e) => {
                report(&e);
                return -1;
            }
        };
        if let (Some(image), "-") = (&graph.image, file.as_str()) {
            // SAFETY: the caller's stream, or stdout when NULL (librrd's
            // default); fwrite reads image.len() bytes from the slice.
            unsafe {
                if stream.is_null() {
                    libc::fflush(ptr::null_mut());
                    let _ = Stdout.write_all(image);
                    let _ = Stdout.flush();
                } else {
                    libc::fwrite(image.as_ptr() as *const c_void, 1, image.len(), stream);
                }
            }
        }
        let value = |key: &str| {
            graph.info.iter().find(|(k, _)| k == key).and_then(|(_, v)| match v {
                rrd_graph::InfoValue::Value(x) => Some(*x),
                rrd_graph::InfoValue::Count(c) => Some(*c as f64),
                rrd_graph::InfoValue::Text(_) => None,
            })
        };
        // SAFETY: out-parameters per the contract.
        unsafe {
            put(xsize, graph.image_width as c_int);
            put(ysize, graph.image_height as c_int);
            if let Some(v) = value("value_min") {
                put(ymin, v);
            }
            if let Some(v) = value("value_max") {
                put(ymax, v);
            }
            if !graph.prints.is_empty() {
                put(prdata, ffi::c_string_array(&graph.prints, true));
            }
        }
        0
    };
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, Some("graph"), -1, run) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_graph_v(argc: c_int, argv: *const *const c_char) -> *mut RrdInfo {
    let run = |args: &[String]| {
        let drawn = cmd::graph::draw_and_save(args);
        let (graph, file) = match drawn {
            Ok(d) => d,
            Err(e) => {
                report(&e);
                return ptr::null_mut();
            }
        };
        let mut list = InfoList::default();
        for (key, value) in &graph.info {
            match value {
                rrd_graph::InfoValue::Count(n) => list.push(key, Value::Cnt(*n as u64)),
                rrd_graph::InfoValue::Value(v) => list.push(key, Value::Val(*v)),
                rrd_graph::InfoValue::Text(s) => list.push(key, Value::Str(s)),
            }
        }
        if let (Some(image), "-") = (&graph.image, file.as_str()) {
            list.push("image", Value::Blob(image));
        }
        list.into_raw()
    };
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, Some("graphv"), ptr::null_mut(), run) }
}

// ------------------------------------------------------------------- xport

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rrd_xport(
    argc: c_int,
    argv: *const *const c_char,
    xsize: *mut c_int,
    start: *mut TimeT,
    end: *mut TimeT,
    step: *mut c_ulong,
    col_cnt: *mut c_ulong,
    legend_v: *mut *mut *mut c_char,
    data: *mut *mut f64,
) -> c_int {
    // SAFETY: out-parameters per the contract; the arrays read as NULL
    // after a failure, as librrd leaves them (callers free them either way).
    unsafe {
        put(legend_v, ptr::null_mut());
        put(data, ptr::null_mut());
    }
    let run = |args: &[String]| match cmd::xport::compute(args) {
        Ok((r, format, json)) => {
            if xsize.is_null() {
                // librrd prints the export itself when `xsize` is NULL
                // (rrdtool's own `xport` command relies on it).
                // SAFETY: as in `status`.
                unsafe { libc::fflush(ptr::null_mut()) };
                let mut out = Stdout;
                let printed = if json {
                    rrd_engine::xport::write_json(&r, format, &mut out)
                } else {
                    rrd_engine::xport::write_xml(&r, format, &mut out)
                };
                let _ = out.flush();
                if let Err(e) = printed {
                    ffi::set_error(&e.to_string());
                    return -1;
                }
            }
            // SAFETY: out-parameters per the contract.
            unsafe {
                put(xsize, 0);
                put(start, r.start as TimeT);
                put(end, r.end as TimeT);
                put(step, r.step_secs as c_ulong);
                put(col_cnt, r.legends.len() as c_ulong);
                put(legend_v, ffi::c_string_array(&r.legends, false));
                put(data, ffi::c_doubles(&r.data));
            }
            0
        }
        Err(e) => {
            report(&e);
            -1
        }
    };
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, None, -1, run) }
}

// ------------------------------------------- dump, restore, tune, resize ...

#[no_mangle]
pub unsafe extern "C" fn rrd_dump(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, Some("dump"), -1, |args| status(args, cmd::dump::run)) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_dump_opt_r(
    filename: *const c_char,
    outname: *mut c_char,
    opt_noheader: c_int,
) -> c_int {
    // SAFETY: strings (outname may be NULL), per the contract.
    let (file, out) = unsafe { (ffi::text(filename), (!outname.is_null()).then(|| ffi::text(outname))) };
    // Despite its name, librrd passes `opt_noheader` on as the header kind:
    // 1 the DTD, 2 the XML schema, anything else none (so `rrd_dump_r`,
    // which passes 0, writes no XML header).
    let header = match opt_noheader {
        1 => rrd_engine::dump::DumpHeader::Dtd,
        2 => rrd_engine::dump::DumpHeader::Xsd,
        _ => rrd_engine::dump::DumpHeader::None,
    };
    let options = rrd_engine::dump::DumpOptions { header };
    // The `_r` variants never ask a daemon.
    status(&[], |_, o| cmd::dump::write_dump(&file, out.as_deref(), &options, o))
}

#[no_mangle]
pub unsafe extern "C" fn rrd_dump_r(filename: *const c_char, outname: *mut c_char) -> c_int {
    // SAFETY: passed through under the same contract.
    unsafe { rrd_dump_opt_r(filename, outname, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_restore(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, Some("restore"), -1, |args| status(args, cmd::restore::run)) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_tune(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, Some("tune"), -1, |args| status(args, cmd::tune::run)) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_resize(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, Some("resize"), -1, |args| status(args, cmd::resize::run)) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_flushcached(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, None, -1, |args| status(args, cmd::flushcached::run)) }
}

/// `rrd_list`: the names, one per line, in a `malloc`ed string.
#[no_mangle]
pub unsafe extern "C" fn rrd_list(argc: c_int, argv: *const *const c_char) -> *mut c_char {
    // SAFETY: librrd's contract for argv.
    unsafe { argv_entry(argc, argv, None, ptr::null_mut(), list) }
}

#[no_mangle]
pub unsafe extern "C" fn rrd_list_r(recursive: c_int, dirname: *mut c_char) -> *mut c_char {
    // SAFETY: a string, per the contract.
    let dir = unsafe { ffi::text(dirname) };
    guard(ptr::null_mut(), || match cmd::list::list(recursive != 0, dir.as_bytes()) {
        Ok(text) => ffi::c_string(&text),
        Err(e) => {
            ffi::set_error(e.0.trim_end());
            ptr::null_mut()
        }
    })
}

fn list(args: &[String]) -> *mut c_char {
    guard(ptr::null_mut(), || {
        let mut text = Vec::new();
        match cmd::list::run(args, &mut text) {
            // librrd returns NULL, with no error text, for an empty listing
            // and for a directory it cannot read (it says why on stderr).
            Ok(()) if text.is_empty() => ptr::null_mut(),
            Ok(()) => ffi::c_string(&text),
            Err(e) => {
                report(&e);
                ptr::null_mut()
            }
        }
    })
}

// -------------------------------------------------------------- rrd_client

pub use client::*;
pub use fileapi::*;
pub use variadic::*;

// ------------------------------------------------------------- time specs

/// `rrd_time_value_t`.
#[repr(C)]
pub struct RrdTimeValue {
    pub kind: c_int,
    pub offset: std::ffi::c_long,
    pub tm: libc::tm,
}

/// Specs parsed by `rrd_parsetime`, by the address of the value they were
/// parsed into. The engine keeps a spec as the edits rrdtool makes, which
/// `rrd_time_value_t` cannot hold, so `rrd_proc_start_end` finds them here;
/// callers (Perl's `RRDs::times`) pass the same values to both calls.
static PARSED_TIMES: std::sync::Mutex<Vec<(usize, rrd_lang::attime::AtTime)>> =
    std::sync::Mutex::new(Vec::new());

/// Parses an AT-style time spec: NULL, or the error text (in this thread's
/// context, not to be freed), as librrd.
#[no_mangle]
pub unsafe extern "C" fn rrd_parsetime(spec: *const c_char, ptv: *mut RrdTimeValue) -> *mut c_char {
    // SAFETY: a string, per the contract.
    let spec = unsafe { ffi::text(spec) };
    guard(ptr::null_mut(), || {
        let ctx = ffi::context();
        match rrd_lang::attime::parse(&spec) {
            Ok(at) => {
                use rrd_lang::attime::AtTimeKind as K;
                let kind = match at.kind() {
                    K::Absolute => 0,
                    K::RelativeToStart => 1,
                    K::RelativeToEnd => 2,
                    K::RelativeToEpoch => 3,
                };
                if !ptv.is_null() {
                    // SAFETY: a writable value, per the contract; an
                    // all-zero `struct tm` is valid.
                    unsafe {
                        ptr::write_bytes(ptv, 0, 1);
                        (*ptv).kind = kind;
                    }
                    let mut parsed = PARSED_TIMES.lock().unwrap_or_else(|p| p.into_inner());
                    parsed.retain(|(addr, _)| *addr != ptv as usize);
                    // Bounded: a long-running caller parsing into fresh
                    // addresses forgets the oldest.
                    if parsed.len() >= 1024 {
                        parsed.remove(0);
                    }
                    parsed.push((ptv as usize, at));
                }
                ptr::null_mut()
            }
            Err(e) => {
                // SAFETY: this thread's context.
                unsafe {
                    ffi::copy_into(&mut (*ctx).lib_errstr, e.to_string().as_bytes());
                    (*ctx).lib_errstr.as_mut_ptr()
                }
            }
        }
    })
}

/// Resolves two specs from `rrd_parsetime` against each other and now.
#[no_mangle]
pub unsafe extern "C" fn rrd_proc_start_end(
    start_tv: *mut RrdTimeValue,
    end_tv: *mut RrdTimeValue,
    start: *mut TimeT,
    end: *mut TimeT,
) -> c_int {
    guard(-1, || {
        let parsed = PARSED_TIMES.lock().unwrap_or_else(|p| p.into_inner());
        let find =
            |p: *mut RrdTimeValue| parsed.iter().find(|(a, _)| *a == p as usize).map(|(_, t)| t.clone());
        let (Some(s), Some(e)) = (find(start_tv), find(end_tv)) else {
            drop(parsed);
            ffi::set_error("rrd_proc_start_end: times not parsed by rrd_parsetime");
            return -1;
        };
        drop(parsed);
        match rrd_lang::attime::resolve_start_end(&s, &e, cmd::now_secs()) {
            Ok((a, b)) => {
                // SAFETY: out-parameters per the contract.
                unsafe {
                    put(start, a);
                    put(end, b);
                }
                0
            }
            Err(err) => {
                ffi::set_error(&err.to_string());
                -1
            }
        }
    })
}
