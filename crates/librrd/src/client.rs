//! `rrd_client.h`: the process's daemon connection (`rrd_client`'s kept
//! session), as collectd's and other long-running callers use it.
//!
//! Status conventions follow librrd: 0 on success; otherwise non-zero with
//! the error text set (a daemon's refusal keeps the daemon's text).

use std::ffi::{c_char, c_int};

use rrd_client::{ClientError, Daemon};

use crate::ffi::{self, guard};

type TimeT = libc::time_t;

/// Sets the error text of a client failure and returns librrd's status.
fn fail(e: &ClientError) -> c_int {
    ffi::set_error(&e.to_string());
    match e.status() {
        0 => -1,
        s => s,
    }
}

/// Runs `f` with the process's connection; not connected is ENOTCONN's
/// text and -1, as librrd.
fn with_session<T>(fallback: T, f: impl FnOnce(&mut rrd_client::Session) -> Result<T, ClientError>) -> T {
    let Some(mut session) = rrd_client::any_connected() else {
        ffi::set_error("rrdc: not connected to a daemon");
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
