//! Temporary files removed when a signal ends the process: while at least
//! one path is registered, SIGINT, SIGTERM and SIGHUP (those whose
//! disposition was the default, termination) run a handler that unlinks
//! every registered path, restores the default action and raises the
//! signal again, so the process still ends by that signal (its parent sees
//! the same status as before). When the last path is unregistered, the
//! previous dispositions come back, so a pipe session waiting for input is
//! interrupted exactly as before.
//!
//! The handler only calls `unlink`, `signal` and `raise`
//! (async-signal-safe) and reads the registered paths from a fixed table
//! of atomic pointers. Paths are added and removed with these signals
//! blocked in the calling thread, so a handler running on that thread never
//! sees a path being freed; this is meant for single-threaded command-line
//! use (`rrdscale create`, `rrdscale -`), not for a multi-threaded daemon,
//! which has its own shutdown.
//!
//! Deliberately absent: cleanup on SIGKILL or a crash (impossible); a
//! `*.tmp<PID>` left then is never under a target's name.

use std::ffi::{c_char, c_int, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Paths registered at once (beyond it, a path is simply not registered).
const SLOTS: usize = 512;
const SIGNALS: [c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

static PATHS: [AtomicPtr<c_char>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
static REGISTERED: AtomicUsize = AtomicUsize::new(0);
/// Signals whose handler we installed (to restore SIG_DFL when done).
static INSTALLED: Mutex<Vec<c_int>> = Mutex::new(Vec::new());

extern "C" fn on_signal(sig: c_int) {
    for slot in &PATHS {
        let p = slot.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: a registered path is a live NUL-terminated string
            // until unregistered, which happens with this signal blocked.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: async-signal-safe calls; the default action ends the process
    // once the handler returns and the signal is unblocked.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Blocks SIGNALS in this thread until dropped.
struct Blocked(libc::sigset_t);

impl Blocked {
    fn new() -> Blocked {
        // SAFETY: sigset manipulation on sets we own.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in SIGNALS {
                libc::sigaddset(&mut set, s);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Blocked(old)
        }
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `new`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

/// A registered temporary path; unregistered (not removed) on drop.
#[derive(Debug)]
pub struct TempRegistration {
    slot: usize,
}

/// Registers `path` to be unlinked if SIGINT, SIGTERM or SIGHUP ends the
/// process. `None` when the table is full or the path has a NUL byte.
pub fn register(path: &Path) -> Option<TempRegistration> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    let _blocked = Blocked::new();
    let ptr = c.into_raw();
    for (i, slot) in PATHS.iter().enumerate() {
        if slot.compare_exchange(std::ptr::null_mut(), ptr, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            if REGISTERED.fetch_add(1, Ordering::AcqRel) == 0 {
                install();
            }
            return Some(TempRegistration { slot: i });
        }
    }
    // SAFETY: `ptr` came from into_raw above and was stored nowhere.
    drop(unsafe { CString::from_raw(ptr) });
    None
}

impl Drop for TempRegistration {
    fn drop(&mut self) {
        let ptr = {
            let _blocked = Blocked::new();
            let ptr = PATHS[self.slot].swap(std::ptr::null_mut(), Ordering::AcqRel);
            if REGISTERED.fetch_sub(1, Ordering::AcqRel) == 1 {
                uninstall();
            }
            ptr
        };
        if !ptr.is_null() {
            // SAFETY: from CString::into_raw in `register`, no longer
            // reachable by the handler.
            drop(unsafe { CString::from_raw(ptr) });
        }
    }
}

fn install() {
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    for sig in SIGNALS {
        // SAFETY: sigaction with structs we own; only a default
        // disposition is replaced (an ignored or handled signal is left).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 || old.sa_sigaction != libc::SIG_DFL {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as extern "C" fn(c_int) as usize;
            libc::sigemptyset(&mut act.sa_mask);
            for s in SIGNALS {
                libc::sigaddset(&mut act.sa_mask, s);
            }
            if libc::sigaction(sig, &act, std::ptr::null_mut()) == 0 {
                installed.push(sig);
            }
        }
    }
}

fn uninstall() {
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    for sig in installed.drain(..) {
        // SAFETY: back to the default disposition we found.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}
