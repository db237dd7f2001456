//! `rrd_client.h`: the process's daemon connection (`rrd_client`'s kept
//! session), as collectd's and other long-running callers use it.
//!
//! Status conventions follow librrd: 0 on success; otherwise non-zero with
//! the error text set (a daemon's refusal keeps the daemon's text).

use std::ffi::{c_char, c_int};

use rrd_client::{ClientError, Daemon};

use crate::ffi::{self, guard};

type TimeT = libc::time_t;

/// The status librrd returns for a client failure: the errno of a failed
/// connect (rrd-client keeps only its text, so the errno is found again
/// from it; a resolver failure has none and is -1), an errno failure's
/// code, else -1.
pub fn librrd_status(e: &ClientError) -> c_int {
    if let ClientError::Connect(text) = e {
        if let Some(code) = (1..256).find(|&n| rrd_client::ctext::strerror(n) == *text) {
            return code;
        }
    }
    match e.status() {
        0 => -1,
        s => s,
    }
}

/// Sets the error text of a client failure and returns librrd's status.
fn fail(e: &ClientError) -> c_int {
    ffi::set_error(&e.to_string());
    librrd_status(e)
}

/// Runs `f` with the process's connection; not connected is the fallback
/// (-1 or NULL) with no error text, as librrd.
fn with_session<T>(fallback: T, f: impl FnOnce(&mut rrd_client::Session) -> Result<T, ClientError>) -> T {
    let Some(mut session) = rrd_client::any_connected() else {
        return fallback;
    };
    match f(&mut session) {
        Ok(v) => v,
        Err(e) => {
            fail(&e);
            fallback
        }
    }
}

/// Connects to `addr` (NULL or empty: `RRDCACHED_ADDRESS`; neither: no
/// daemon, which is success), keeping the connection for later calls.
#[no_mangle]
pub unsafe extern "C" fn rrdc_connect(addr: *const c_char) -> c_int {
    // SAFETY: NULL or a string, per the contract.
    let addr = (!addr.is_null()).then(|| unsafe { ffi::text(addr) });
    guard(-1, || match rrd_client::daemon(addr.as_deref()) {
        Daemon::Absent => 0,
        Daemon::Connected(_session) => 0,
        Daemon::Unreachable(e) => fail(&e),
    })
}

#[no_mangle]
pub unsafe extern "C" fn rrdc_is_connected(daemon_addr: *const c_char) -> c_int {
    // SAFETY: NULL or a string, per the contract.
    let addr = (!daemon_addr.is_null()).then(|| unsafe { ffi::text(daemon_addr) });
    guard(0, || {
        let Some(wanted) = rrd_client::chosen(addr.as_deref()) else { return 0 };
        match rrd_client::any_connected() {
            Some(s) => c_int::from(s.address() == wanted),
            None => 0,
        }
    })
}

#[no_mangle]
pub extern "C" fn rrdc_is_any_connected() -> c_int {
    guard(0, || c_int::from(rrd_client::any_connected().is_some()))
}

#[no_mangle]
pub extern "C" fn rrdc_disconnect() -> c_int {
    guard(0, || {
        rrd_client::disconnect();
        0
    })
}

#[no_mangle]
pub unsafe extern "C" fn rrdc_update(
    filename: *const c_char,
    values_num: c_int,
    values: *const *const c_char,
) -> c_int {
    // SAFETY: a string and values_num strings, per the contract.
    let (file, values) = unsafe { (ffi::text(filename), ffi::strings(values_num, values)) };
    guard(-1, || with_session(-1, |s| s.update(&file, &values).map(|()| 0)))
}

#[no_mangle]
pub unsafe extern "C" fn rrdc_flush(filename: *const c_char) -> c_int {
    // SAFETY: a string, per the contract.
    let file = unsafe { ffi::text(filename) };
    guard(-1, || with_session(-1, |s| s.flush(&file).map(|()| 0)))
}

#[no_mangle]
pub unsafe extern "C" fn rrdc_forget(filename: *const c_char) -> c_int {
    // SAFETY: a string, per the contract.
    let file = unsafe { ffi::text(filename) };
    guard(-1, || with_session(-1, |s| s.forget(&file).map(|()| 0)))
}

#[no_mangle]
pub extern "C" fn rrdc_flushall() -> c_int {
    guard(-1, || with_session(-1, |s| s.flush_all().map(|()| 0)))
}

/// Flushes `filename` on the daemon `opt_daemon` names (or
/// `RRDCACHED_ADDRESS`); no daemon named is success.
#[no_mangle]
pub unsafe extern "C" fn rrdc_flush_if_daemon(opt_daemon: *const c_char, filename: *const c_char) -> c_int {
    // SAFETY: NULL or strings, per the contract.
    let (addr, file) =
        unsafe { ((!opt_daemon.is_null()).then(|| ffi::text(opt_daemon)), ffi::text(filename)) };
    guard(-1, || match rrd_client::daemon(addr.as_deref()) {
        Daemon::Absent => 0,
        Daemon::Unreachable(e) => fail(&e),
        Daemon::Connected(mut s) => match s.flush(&file) {
            Ok(()) => 0,
            Err(e) => fail(&e),
        },
    })
}

#[no_mangle]
pub unsafe extern "C" fn rrdc_flushall_if_daemon(opt_daemon: *const c_char) -> c_int {
    // SAFETY: NULL or a string, per the contract.
    let addr = (!opt_daemon.is_null()).then(|| unsafe { ffi::text(opt_daemon) });
    guard(-1, || match rrd_client::daemon(addr.as_deref()) {
        Daemon::Absent => 0,
        Daemon::Unreachable(e) => fail(&e),
        Daemon::Connected(mut s) => match s.flush_all() {
            Ok(()) => 0,
            Err(e) => fail(&e),
        },
    })
}

#[no_mangle]
pub unsafe extern "C" fn rrdc_last(filename: *const c_char) -> TimeT {
    // SAFETY: a string, per the contract.
    let file = unsafe { ffi::text(filename) };
    guard(-1, || with_session(-1, |s| s.last(&file).map(|t| t as TimeT)))
}

#[no_mangle]
pub unsafe extern "C" fn rrdc_first(filename: *const c_char, rraindex: c_int) -> TimeT {
    // SAFETY: a string, per the contract.
    let file = unsafe { ffi::text(filename) };
    guard(-1, || with_session(-1, |s| s.first(&file, rraindex).map(|t| t as TimeT)))
}

/// The daemon's INFO as a list (values read back as librrd reads them).
#[no_mangle]
pub unsafe extern "C" fn rrdc_info(filename: *const c_char) -> *mut crate::ffi::RrdInfo {
    // SAFETY: a string, per the contract.
    let file = unsafe { ffi::text(filename) };
    guard(std::ptr::null_mut(), || {
        with_session(std::ptr::null_mut(), |s| {
            let items = s.info(&file)?;
            let mut list = ffi::InfoList::default();
            for item in &items {
                match &item.value {
                    rrd_client::InfoValue::Value(v) => list.push(&item.key, ffi::Value::Val(*v)),
                    rrd_client::InfoValue::Count(c) => list.push(&item.key, ffi::Value::Cnt(*c)),
                    rrd_client::InfoValue::Int(i) => list.push(&item.key, ffi::Value::Int(*i)),
                    rrd_client::InfoValue::Str(t) => list.push(&item.key, ffi::Value::Str(t)),
                }
            }
            Ok(list.into_raw())
        })
    })
}

/// The daemon's LIST: the names, one per line, in a `malloc`ed string.
#[no_mangle]
pub unsafe extern "C" fn rrdc_list(recursive: c_int, dirname: *const c_char) -> *mut c_char {
    // SAFETY: a string, per the contract.
    let dir = unsafe { ffi::text(dirname) };
    guard(std::ptr::null_mut(), || {
        with_session(std::ptr::null_mut(), |s| {
            let names = s.list(recursive != 0, &dir)?;
            let mut text = String::new();
            for n in names {
                text.push_str(&n);
                text.push('\n');
            }
            Ok(ffi::c_string(text.as_bytes()))
        })
    })
}

/// The daemon's FETCH; `ret_start`/`ret_end` are in and out, as in librrd.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rrdc_fetch(
    filename: *const c_char,
    cf: *const c_char,
    ret_start: *mut TimeT,
    ret_end: *mut TimeT,
    ret_step: *mut std::ffi::c_ulong,
    ret_ds_num: *mut std::ffi::c_ulong,
    ret_ds_names: *mut *mut *mut c_char,
    ret_data: *mut *mut f64,
) -> c_int {
    if ret_start.is_null() || ret_end.is_null() {
        ffi::set_error("rrdc_fetch: start and end are required");
        return -1;
    }
    // SAFETY: strings and readable in-out times, per the contract; the
    // arrays read as NULL after a failure.
    let (file, cf, start, end) = unsafe {
        ffi::put(ret_ds_names, std::ptr::null_mut());
        ffi::put(ret_data, std::ptr::null_mut());
        (ffi::text(filename), ffi::text(cf), *ret_start, *ret_end)
    };
    guard(-1, || {
        with_session(-1, |s| {
            let r = s.fetch(&file, &cf, start, end)?;
            // SAFETY: the caller's out-parameters.
            unsafe {
                ffi::put(ret_start, r.start as TimeT);
                ffi::put(ret_end, r.end as TimeT);
                ffi::put(ret_step, r.step_secs as std::ffi::c_ulong);
                ffi::put(ret_ds_num, r.ds_names.len() as std::ffi::c_ulong);
                ffi::put(ret_ds_names, ffi::c_string_array(&r.ds_names, false));
                ffi::put(ret_data, ffi::c_doubles(&r.data));
            }
            Ok(0)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn rrdc_create(
    filename: *const c_char,
    pdp_step: std::ffi::c_ulong,
    last_up: TimeT,
    no_overwrite: c_int,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: passed through under the same contract.
    unsafe {
        rrdc_create_r2(
            filename,
            pdp_step,
            last_up,
            no_overwrite,
            std::ptr::null(),
            std::ptr::null(),
            argc,
            argv,
        )
    }
}

/// The daemon's CREATE (`last_up` sent when positive, as librrd does).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rrdc_create_r2(
    filename: *const c_char,
    pdp_step: std::ffi::c_ulong,
    last_up: TimeT,
    no_overwrite: c_int,
    sources: *const *const c_char,
    template: *const c_char,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: strings, a NULL-terminated list, argc definitions.
    let req = unsafe {
        ffi::create_request(filename, pdp_step, last_up, no_overwrite, sources, template, argc, argv)
    };
    guard(-1, || with_session(-1, |s| s.create(&req).map(|()| 0)))
}

/// `rrdc_stats_t`: one line of the daemon's `STATS` reply, as librrd keeps
/// it (a list linked by `next`, freed with [`rrdc_stats_free`]).
#[repr(C)]
pub struct RrdcStats {
    name: *mut c_char,
    kind: u16,
    flags: u16,
    /// A union in C: `uint64_t counter` or `double gauge` (its bits).
    value: u64,
    next: *mut RrdcStats,
}

const RRDC_STATS_TYPE_GAUGE: u16 = 1;
const RRDC_STATS_TYPE_COUNTER: u16 = 2;

/// One `Name: value` line as librrd reads it: the names librrd knows as
/// gauges (rrdtool's number parser) or counters (`strtoll`, base 0), the
/// whole value converted; anything else is left out.
fn stats_line(line: &str) -> Option<(&str, u16, u64)> {
    let (key, value) = line.split_once(':')?;
    let value = value.trim_start_matches([' ', '\t']);
    match key {
        "QueueLength" | "TreeDepth" | "TreeNodesNumber" => {
            let (v, used) = rrd_lang::numparse::rrd_strtod(value);
            (used > 0 && used == value.len()).then_some((key, RRDC_STATS_TYPE_GAUGE, v.to_bits()))
        }
        "DataSetsWritten" | "FlushesReceived" | "JournalBytes" | "JournalRotate" | "UpdatesReceived"
        | "UpdatesWritten" => {
            let c = rrd_lang::numparse::strtol(value, 0);
            (c.consumed > 0 && c.consumed == value.len()).then_some((
                key,
                RRDC_STATS_TYPE_COUNTER,
                c.value as u64,
            ))
        }
        _ => None,
    }
}

/// The daemon's statistics as a `malloc`ed list: 0, or `ENOTCONN` when not
/// connected (no error text), `EIO` for a refused `STATS`, `EPROTO` when no
/// line is one librrd knows, a connection failure's status with its text.
#[no_mangle]
pub unsafe extern "C" fn rrdc_stats_get(ret_stats: *mut *mut RrdcStats) -> c_int {
    guard(-1, || {
        let Some(mut session) = rrd_client::any_connected() else { return libc::ENOTCONN };
        let response = match session.request(&["STATS"]) {
            Ok(r) if r.status > 0 => r,
            Ok(_) | Err(ClientError::Daemon { .. }) => return libc::EIO,
            Err(e) => return fail(&e),
        };
        let mut head: *mut RrdcStats = std::ptr::null_mut();
        let mut tail: *mut RrdcStats = std::ptr::null_mut();
        for (name, kind, value) in response.lines.iter().filter_map(|l| stats_line(l)) {
            let node = ffi::alloc(std::mem::size_of::<RrdcStats>()) as *mut RrdcStats;
            if node.is_null() {
                continue;
            }
            let stats = RrdcStats {
                name: ffi::c_string(name.as_bytes()),
                kind,
                flags: 0,
                value,
                next: std::ptr::null_mut(),
            };
            // SAFETY: node is a fresh allocation of the struct's size and
            // alignment (malloc's); tail is the last node written.
            unsafe {
                node.write(stats);
                if tail.is_null() {
                    head = node;
                } else {
                    (*tail).next = node;
                }
            }
            tail = node;
        }
        if head.is_null() {
            return libc::EPROTO;
        }
        if !ret_stats.is_null() {
            // SAFETY: a pointer to the caller's list pointer, per the contract.
            unsafe { *ret_stats = head };
        }
        0
    })
}

/// Frees a list from [`rrdc_stats_get`] (NULL is nothing).
#[no_mangle]
pub unsafe extern "C" fn rrdc_stats_free(ret_stats: *mut RrdcStats) {
    let mut node = ret_stats;
    while !node.is_null() {
        // SAFETY: a node of rrdc_stats_get's list: malloc'ed, name malloc'ed.
        unsafe {
            let next = (*node).next;
            libc::free((*node).name as *mut libc::c_void);
            libc::free(node as *mut libc::c_void);
            node = next;
        }
    }
}
