//! The daemon's process calls that neither std nor rustix wraps safely,
//! each behind a safe function with its reason:
//!
//! - `fork` (rustix has none: a fork is sound only while one thread runs,
//!   which [`daemonize`] checks, and the daemon's `server` ensures by
//!   calling it before the runtime starts);
//! - process-wide `setgid`/`setuid` (rustix's change one thread only);
//! - `getgrnam`/`getpwnam` (NSS lookups, as rrdcached does);
//! - `openlog`/`syslog`.

use std::ffi::CString;
use std::os::fd::{AsRawFd, IntoRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Forks into the background: the parent exits 0; the child leads a new
/// session with its standard streams on /dev/null. Refused (before any
/// fork) unless the process has one thread.
pub fn daemonize() -> Result<(), &'static str> {
    if thread_count() != Some(1) {
        return Err("daemonize: the process must have one thread to fork.");
    }
    // SAFETY: the process has exactly one thread (checked above; only this
    // thread could start another, and it does not before the fork), so the
    // child is a consistent copy.
    match unsafe { libc::fork() } {
        -1 => return Err("daemonize: fork(2) failed."),
        0 => {}
        _ => std::process::exit(0),
    }
    let _ = rustix::process::setsid();
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
        if null.as_raw_fd() <= 2 {
            // It is one of the three now: keep it open.
            let _ = null.into_raw_fd();
        }
    }
    Ok(())
}

/// Threads of this process (`/proc/self/task` entries); `None` if unknown.
fn thread_count() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/task").ok()?.count())
}

/// Sets the process's group id (all threads, as glibc's `setgid` does).
pub fn setgid(gid: u32) -> bool {
    // SAFETY: setgid takes a number and has no memory effects.
    unsafe { libc::setgid(gid) == 0 }
}

/// Sets the process's user id (all threads).
pub fn setuid(uid: u32) -> bool {
    // SAFETY: as setgid.
    unsafe { libc::setuid(uid) == 0 }
}

/// A group's id by name (`getgrnam`).
pub fn group_id(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: getgrnam reads a NUL-terminated name; its result (static
    // storage) is read at once, before any other call could reuse it, and
    // a non-null result points to a valid group.
    unsafe {
        let grp = libc::getgrnam(c.as_ptr());
        (!grp.is_null()).then(|| (*grp).gr_gid)
    }
}

/// A user's id by name (`getpwnam`).
pub fn user_id(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: as in group_id, for getpwnam.
    unsafe {
        let pw = libc::getpwnam(c.as_ptr());
        (!pw.is_null()).then(|| (*pw).pw_uid)
    }
}

/// `openlog("rrdcached", LOG_PID, LOG_DAEMON)`.
pub fn openlog() {
    // SAFETY: the identifier is a static NUL-terminated string, which
    // openlog keeps a pointer to.
    unsafe { libc::openlog(c"rrdcached".as_ptr(), libc::LOG_PID, libc::LOG_DAEMON) };
}

/// One `syslog(priority, "%s", line)`, `priority` a syslog level
/// (`LOG_EMERG` 0 .. `LOG_DEBUG` 7) with the facility given to [`openlog`]
/// (a line with a NUL byte is dropped).
pub fn syslog(priority: u8, line: &str) {
    if let Ok(c) = CString::new(line) {
        // SAFETY: the format is a literal "%s" and the argument a
        // NUL-terminated string.
        unsafe { libc::syslog(libc::c_int::from(priority & 7), c"%s".as_ptr(), c.as_ptr()) };
    }
}

/// Makes `cmd`'s child enter the cgroup at `cgroup_dir` (its pid written to
/// `cgroup.procs`) between fork and exec, so that everything the program
/// does is charged there from its first instruction. Fails (setting
/// nothing) when the path holds a NUL byte; a failure to enter the cgroup
/// makes the spawn fail.
pub fn enter_cgroup_at_exec(cmd: &mut Command, cgroup_dir: &Path) -> std::io::Result<()> {
    let procs = CString::new(cgroup_dir.join("cgroup.procs").as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: `enter_cgroup_raw` makes raw
    // system calls (getpid, open, write, close) on a stack buffer and the
    // path built above, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || enter_cgroup_raw(&procs));
    }
    Ok(())
}

/// Writes this process's pid into `procs` (`<cgroup>/cgroup.procs`) with
/// raw system calls only, nothing allocated: this runs between fork and
/// exec ([`enter_cgroup_at_exec`]).
fn enter_cgroup_raw(procs: &CString) -> std::io::Result<()> {
    let mut n = rustix::process::getpid().as_raw_nonzero().get() as u32;
    let mut buf = [0u8; 16];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let fd = rustix::fs::open(procs.as_c_str(), rustix::fs::OFlags::WRONLY, rustix::fs::Mode::empty())?;
    rustix::io::write(&fd, &buf[i..])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_root_and_refuses_unknown_names() {
        assert_eq!(user_id("root"), Some(0));
        assert_eq!(group_id("root"), Some(0));
        assert_eq!(user_id("no-such-user-rrdscale"), None);
        assert_eq!(group_id("no\0nul"), None);
    }

    /// Proves the child writes its own pid to `cgroup.procs` before exec
    /// (a plain file stands in for the cgroup), and that a missing cgroup
    /// fails the spawn.
    #[test]
    fn child_enters_the_cgroup_before_exec() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cgroup.procs"), b"").unwrap();
        let mut cmd = Command::new("true");
        enter_cgroup_at_exec(&mut cmd, dir.path()).unwrap();
        let mut child = cmd.spawn().unwrap();
        let pid = child.id();
        assert!(child.wait().unwrap().success());
        assert_eq!(std::fs::read_to_string(dir.path().join("cgroup.procs")).unwrap(), pid.to_string());
        let mut cmd = Command::new("true");
        enter_cgroup_at_exec(&mut cmd, &dir.path().join("absent")).unwrap();
        assert!(cmd.spawn().is_err());
        assert!(enter_cgroup_at_exec(&mut Command::new("true"), Path::new("a\0b")).is_err());
    }

    #[test]
    fn daemonize_refuses_a_threaded_process() {
        // The test harness runs tests on their own threads.
        let _t = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(200)));
        assert!(thread_count().unwrap() > 1);
        assert!(daemonize().is_err());
    }
}
