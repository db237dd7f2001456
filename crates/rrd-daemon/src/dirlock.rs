//! One daemon per journal directory: an exclusive `flock` on
//! `DIR/rrdscale.lock`, taken before anything in the directory is read,
//! replayed, migrated or deleted, and held until the process exits.
//!
//! Why `flock` and not `fcntl` locks: an `fcntl` lock belongs to the
//! process and is not inherited by a `fork`, so the daemon would lose it
//! when it goes to the background. A `flock` lock belongs to the open file
//! description: the forked child shares it, and the parent's exit (which
//! closes only the parent's descriptor) does not release it. The lock
//! goes away when the last descriptor is closed, which is when the daemon
//! exits, kill -9 included, so a stale lock cannot outlive its holder.
//!
//! The lock file is never deleted: deleting it at a clean stop would let a
//! starter that opened the old file lock an unlinked inode while another
//! creates and locks a new one, and both would run. It holds the holder's
//! pid (rewritten after the fork), for the message a refused starter
//! prints; the lock, not the pid, is what counts.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};
use thiserror::Error;

/// The lock file's name inside the journal directory (not a segment name,
/// and not one of rrdcached's `rrd.journal.*`).
pub const LOCK_FILE: &str = "rrdscale.lock";

#[derive(Debug, Error)]
pub enum LockError {
    #[error("cannot open the journal directory's lock file '{}': {source}", path.display())]
    Open { path: PathBuf, source: std::io::Error },
    #[error(
        "the journal directory '{}' is in use by another daemon{}: its lock file '{}' is locked; \
         each daemon needs a -j of its own",
        dir.display(),
        holder.map(|p| format!(" (pid {p})")).unwrap_or_default(),
        dir.join(LOCK_FILE).display()
    )]
    Held { dir: PathBuf, holder: Option<u32> },
    #[error("cannot lock '{}': {source}", path.display())]
    Lock { path: PathBuf, source: std::io::Error },
}

/// The held lock; dropping it (or exiting) releases it.
#[derive(Debug)]
pub struct JournalLock {
    file: File,
}

impl JournalLock {
    /// Locks `dir` for this process, or says who holds it.
    pub fn acquire(dir: &Path) -> Result<JournalLock, LockError> {
        let path = dir.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(&path)
            .map_err(|source| LockError::Open { path: path.clone(), source })?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                return Err(LockError::Held { dir: dir.to_path_buf(), holder: read_pid(&mut file) });
            }
            Err(e) => return Err(LockError::Lock { path, source: e.into() }),
        }
        let lock = JournalLock { file };
        lock.record_pid();
        Ok(lock)
    }

    /// Writes this process's pid into the lock file (call again after a
    /// fork). Best effort: the pid only serves the refusal's message.
    pub fn record_pid(&self) {
        let mut f = &self.file;
        let text = format!("{}\n", std::process::id());
        let _ = f.set_len(0);
        let _ = f.seek(SeekFrom::Start(0));
        let _ = f.write_all(text.as_bytes());
    }
}

/// The pid a holder wrote, if it reads as one.
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok().filter(|&p| p > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_directory_is_refused_with_the_holders_pid() {
        let dir = tempfile::tempdir().unwrap();
        let first = JournalLock::acquire(dir.path()).unwrap();
        match JournalLock::acquire(dir.path()) {
            Err(LockError::Held { holder, .. }) => assert_eq!(holder, Some(std::process::id())),
            other => panic!("expected Held, got {other:?}"),
        }
        drop(first);
        JournalLock::acquire(dir.path()).expect("free again once released");
    }

    #[test]
    fn the_message_names_the_directory_and_the_pid() {
        let e = LockError::Held { dir: PathBuf::from("/j"), holder: Some(42) };
        let text = e.to_string();
        assert!(text.contains("'/j'") && text.contains("pid 42"), "{text}");
    }
}
