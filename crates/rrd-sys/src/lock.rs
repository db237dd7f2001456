//! Open-file-description (OFD) record locks on a whole file, as rrdtool
//! takes POSIX locks around every command: they conflict with rrdtool's
//! `F_SETLK` locks, but belong to the open file description rather than
//! the process, so a thread closing its own descriptor of a file does not
//! drop another thread's lock (which POSIX process locks would).
//!
//! rustix's `fcntl_lock` takes process locks (`F_SETLK`), hence this module.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// What to do with the whole-file lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// A read lock (`F_RDLCK`): others may read-lock too.
    Shared,
    /// A write lock (`F_WRLCK`): no other lock may be held.
    Exclusive,
    /// Release (`F_UNLCK`).
    Unlock,
}

/// Takes or releases an OFD lock on the whole of `fd`'s file (from byte 0
/// to any end, as the file grows). With `wait`, blocks until the lock is
/// granted (`F_OFD_SETLKW`); without, a conflicting lock fails at once with
/// `EAGAIN` or `EACCES` (both occur, depending on the kernel path). An
/// unlock never waits.
pub fn ofd_lock(fd: impl AsFd, kind: LockKind, wait: bool) -> io::Result<()> {
    set_lock(fd, kind, if wait { libc::F_OFD_SETLKW } else { libc::F_OFD_SETLK })
}

/// As [`ofd_lock`], but a POSIX process lock (`F_SETLK`), as librrd takes:
/// it belongs to the process, so threads of one process never conflict
/// with each other, and closing any descriptor of the file drops it.
pub fn process_lock(fd: impl AsFd, kind: LockKind, wait: bool) -> io::Result<()> {
    set_lock(fd, kind, if wait { libc::F_SETLKW } else { libc::F_SETLK })
}

fn set_lock(fd: impl AsFd, kind: LockKind, cmd: libc::c_int) -> io::Result<()> {
    // SAFETY: a zeroed flock is a valid value (all integer fields, l_pid
    // must be 0 for OFD locks); fcntl only reads it.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = match kind {
        LockKind::Unlock => libc::F_UNLCK,
        LockKind::Exclusive => libc::F_WRLCK,
        LockKind::Shared => libc::F_RDLCK,
    } as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // An unlock never waits.
    let cmd = match (kind, cmd) {
        (LockKind::Unlock, libc::F_OFD_SETLKW) => libc::F_OFD_SETLK,
        (LockKind::Unlock, libc::F_SETLKW) => libc::F_SETLK,
        (_, cmd) => cmd,
    };
    // SAFETY: the descriptor is valid while `fd` is borrowed; `fl` outlives
    // the call and is only read.
    let rc = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), cmd, &fl) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether `err` is what [`ofd_lock`] returns when another open file
/// description holds a conflicting lock.
pub fn is_conflict(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    /// Proves the lock belongs to the open file description: two opens of
    /// one file in one process conflict (process locks would not), and the
    /// unlock releases it.
    #[test]
    fn two_descriptions_conflict_until_unlocked() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        let a = OpenOptions::new().read(true).write(true).open(tmp.path()).unwrap();
        let b = OpenOptions::new().read(true).write(true).open(tmp.path()).unwrap();
        ofd_lock(&a, LockKind::Exclusive, false).unwrap();
        let err = ofd_lock(&b, LockKind::Shared, false).unwrap_err();
        assert!(is_conflict(&err), "{err}");
        ofd_lock(&a, LockKind::Unlock, false).unwrap();
        ofd_lock(&b, LockKind::Shared, false).unwrap();
        // Two read locks coexist; a write lock then conflicts.
        ofd_lock(&a, LockKind::Shared, false).unwrap();
        assert!(is_conflict(&ofd_lock(&b, LockKind::Exclusive, false).unwrap_err()));
        // Closing a description drops its lock.
        drop(a);
        ofd_lock(&b, LockKind::Exclusive, true).unwrap();
    }

    /// Process locks: two descriptors of one process never conflict, and
    /// an OFD lock (another "owner") does conflict with them.
    #[test]
    fn process_locks_do_not_conflict_within_the_process() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        let a = OpenOptions::new().read(true).write(true).open(tmp.path()).unwrap();
        let b = OpenOptions::new().read(true).write(true).open(tmp.path()).unwrap();
        let c = OpenOptions::new().read(true).write(true).open(tmp.path()).unwrap();
        process_lock(&a, LockKind::Exclusive, false).unwrap();
        // The same owner: granted (it replaces the process's lock).
        process_lock(&b, LockKind::Exclusive, false).unwrap();
        assert!(is_conflict(&ofd_lock(&c, LockKind::Shared, false).unwrap_err()));
        process_lock(&a, LockKind::Unlock, false).unwrap();
        ofd_lock(&c, LockKind::Exclusive, false).unwrap();
    }
}
