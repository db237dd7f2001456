//! librrd (rrdtool 1.7.2's library) opened at run time with `dlopen`, for
//! the benchmark's `--vs rrdtool` side (rrd-bench): `rrd_create_r`, `rrd_update_r`,
//! `rrd_get_error`, `rrd_clear_error`, `rrd_strversion`.
//!
//! Why at run time: rrdscale must build and run where librrd is absent; only
//! a comparison needs it, and then its absence is a clear error naming the
//! Debian package (librrd8).
//!
//! Invariants: the function pointers are only called while the library
//! they came from is loaded (the [`Librrd`] owns it); every string passed
//! is NUL-terminated and outlives the call. Deliberately absent: the
//! non-reentrant `rrd_update`/`rrd_create` (they parse argv with getopt and
//! keep global state).

use std::ffi::{c_char, c_int, c_ulong, CStr, CString};
use std::path::Path;

/// Why librrd could not be loaded: a sentence naming the library and what
/// to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

type UpdateR = unsafe extern "C" fn(*const c_char, *const c_char, c_int, *const *const c_char) -> c_int;
type CreateR =
    unsafe extern "C" fn(*const c_char, c_ulong, libc::time_t, c_int, *const *const c_char) -> c_int;
type GetError = unsafe extern "C" fn() -> *mut c_char;
type ClearError = unsafe extern "C" fn();
type StrVersion = unsafe extern "C" fn() -> *mut c_char;

/// The soname librrd 1.7.x installs (Debian package librrd8).
pub const SONAME: &str = "librrd.so.8";

pub struct Librrd {
    update_r: UpdateR,
    create_r: CreateR,
    get_error: GetError,
    clear_error: ClearError,
    version: String,
    /// Kept so the handle lives as long as the pointers (the library is
    /// never unloaded, see [`Librrd::load`]).
    _lib: libloading::os::unix::Library,
}

fn cstring(what: &str, s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{what} '{s}' contains a NUL byte"))
}

impl Librrd {
    /// Loads rrdscale's drop-in librrd.so.8 by its path (the `--mode
    /// librrd` side): refused unless it is rrdscale's (it exports
    /// `rrdc_flushall`, which Debian's librrd8 does not).
    pub fn load_path(path: &Path) -> Result<Librrd, LoadError> {
        if !path.is_file() {
            return Err(LoadError(format!(
                "rrdscale's librrd.so.8 is not at {} (build it with scripts/build-librrd.sh, or give --librrd)",
                path.display()
            )));
        }
        let mut lib = Librrd::open(Some(path.as_os_str()))?;
        // SAFETY: only the symbol's presence is checked; it is not called.
        let ours = unsafe { lib._lib.get::<*const ()>(b"rrdc_flushall\0") }.is_ok();
        if !ours {
            return Err(LoadError(format!("{} is not rrdscale's librrd", path.display())));
        }
        lib.version = format!("{} (rrdscale's {})", lib.version, path.display());
        Ok(lib)
    }

    /// Loads librrd by its soname.
    pub fn load() -> Result<Librrd, LoadError> {
        Librrd::open(Some(std::ffi::OsStr::new(SONAME)))
    }

    fn open(name: Option<&std::ffi::OsStr>) -> Result<Librrd, LoadError> {
        // RTLD_NODELETE: librrd keeps its error context in thread-specific
        // data with a destructor inside the library; unloading it would
        // leave every thread that used it to call freed code on exit.
        // SAFETY: loading librrd runs its initialisers, which only set up
        // its own globals (and those of glib/cairo it links).
        let flags = libloading::os::unix::RTLD_NOW | libc::RTLD_NODELETE;
        let lib = unsafe { libloading::os::unix::Library::open(name, flags) }.map_err(|e| {
            LoadError(format!(
                "cannot load {} ({e}); install rrdtool 1.7's library (Debian: apt-get install librrd8)",
                name.unwrap_or_default().to_string_lossy()
            ))
        })?;
        // SAFETY: the types match librrd 1.7's rrd.h declarations of these
        // functions; the pointers are copied out and kept only alongside
        // `lib`, which stays loaded as long as they are reachable.
        unsafe {
            let sym = |name: &[u8]| -> Result<*const (), LoadError> {
                let s: libloading::os::unix::Symbol<*const ()> = lib.get(name).map_err(|e| {
                    LoadError(format!(
                        "{SONAME} has no {} ({e})",
                        String::from_utf8_lossy(&name[..name.len() - 1])
                    ))
                })?;
                Ok(*s)
            };
            let update_r: UpdateR = std::mem::transmute(sym(b"rrd_update_r\0")?);
            let create_r: CreateR = std::mem::transmute(sym(b"rrd_create_r\0")?);
            let get_error: GetError = std::mem::transmute(sym(b"rrd_get_error\0")?);
            let clear_error: ClearError = std::mem::transmute(sym(b"rrd_clear_error\0")?);
            let strversion: StrVersion = std::mem::transmute(sym(b"rrd_strversion\0")?);
            let v = strversion();
            let version = if v.is_null() {
                "unknown".to_string()
            } else {
                CStr::from_ptr(v).to_string_lossy().into_owned()
            };
            Ok(Librrd { update_r, create_r, get_error, clear_error, version, _lib: lib })
        }
    }

    /// librrd's version string (`1.7.2`).
    pub fn version(&self) -> &str {
        &self.version
    }

    fn take_error(&self) -> String {
        // SAFETY: rrd_get_error returns librrd's thread-local error buffer
        // (never freed by us); we copy it before clearing.
        unsafe {
            let p = (self.get_error)();
            let msg =
                if p.is_null() { String::new() } else { CStr::from_ptr(p).to_string_lossy().into_owned() };
            (self.clear_error)();
            if msg.is_empty() {
                "librrd failed without a message".to_string()
            } else {
                msg
            }
        }
    }

    /// `rrd_update_r(path, NULL, n, args)`: one update call.
    pub fn update(&self, path: &CStr, args: &[&CStr]) -> Result<(), String> {
        let argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        // SAFETY: every pointer is a NUL-terminated string borrowed for the
        // duration of the call; librrd does not keep them.
        let rc =
            unsafe { (self.update_r)(path.as_ptr(), std::ptr::null(), argv.len() as c_int, argv.as_ptr()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(self.take_error())
        }
    }

    /// `rrd_create_r(path, step, start, n, defs)`.
    pub fn create(&self, path: &Path, step_secs: u64, start: i64, defs: &[String]) -> Result<(), String> {
        let p = cstring("the path", &path.to_string_lossy())?;
        let defs: Vec<CString> =
            defs.iter().map(|d| cstring("the definition", d)).collect::<Result<_, _>>()?;
        let argv: Vec<*const c_char> = defs.iter().map(|a| a.as_ptr()).collect();
        // SAFETY: as in `update`; the strings outlive the call.
        let rc = unsafe {
            (self.create_r)(
                p.as_ptr(),
                step_secs as c_ulong,
                start as libc::time_t,
                argv.len() as c_int,
                argv.as_ptr(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(self.take_error())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// librrd is a dependency of the comparison, installed with rrdtool on
    /// the project's machines: missing, this fails loudly.
    #[test]
    fn creates_and_updates_like_rrdtool() {
        let lib = Librrd::load().expect("librrd.so.8 must be installed (apt-get install librrd8)");
        assert!(lib.version().starts_with("1.7"), "librrd version {}", lib.version());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.rrd");
        let defs = vec!["DS:a:GAUGE:600:U:U".to_string(), "RRA:AVERAGE:0.5:1:10".to_string()];
        lib.create(&f, 300, 1_000_000_000, &defs).unwrap();
        let path = CString::new(f.to_str().unwrap()).unwrap();
        let arg = CString::new("1000000300:5").unwrap();
        lib.update(&path, &[&arg]).unwrap();
        let err = lib.update(&path, &[&arg]).unwrap_err();
        assert!(err.contains("illegal attempt to update using time"), "{err}");
        // The error was cleared: the next good update succeeds.
        let next = CString::new("1000000600:6").unwrap();
        lib.update(&path, &[&next]).unwrap();
        let bad = lib.create(&dir.path().join("b.rrd"), 300, 1_000_000_000, &["DS:bad".to_string()]);
        assert!(bad.is_err());
    }
}
