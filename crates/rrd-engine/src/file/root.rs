//! Where files may be opened from: anywhere, or only beneath one directory.
//!
//! The daemon's `-B` promises that no file outside its base directory is
//! ever read or written. Checking a path (realpath) and then opening it is a
//! race: a symbolic link swapped in between escapes, and a cache entry made
//! after one check may be written much later. So here the check IS the
//! open: `openat2(base_fd, relative, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`
//! resolves every component, links included, beneath the base directory's
//! descriptor, and fails with `EXDEV` rather than leave it. Every open of a
//! confined caller goes through [`Root::open`] (first UPDATE, flush, reads),
//! so a link swapped at any moment is refused at the next open.
//!
//! Kernels without `openat2` (before 5.6, or a seccomp filter refusing it),
//! and paths through an absolute link (which `RESOLVE_BENEATH` refuses even
//! when it lands inside the base, as links made with `ln -s /srv/rrd/...`
//! do): the file is opened normally, then the name of what was actually
//! opened (`/proc/self/fd/N`) is checked against the base. That cannot be
//! raced either: it names the open file, not the path.
//!
//! Every open adds `O_NONBLOCK | O_NOCTTY` (confined or not), so a name
//! that turns out to be a FIFO or a terminal cannot make the opener hang
//! (a daemon thread per client, until none is left) or take a controlling
//! terminal; callers refuse non-regular files after their `fstat`. On a
//! regular file `O_NONBLOCK` changes nothing.
//!
//! Deliberately absent: creating files (CREATE writes a temporary file and
//! renames it, and checks its directory on its own).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// How paths are opened.
#[derive(Clone, Debug, Default)]
pub enum Root {
    /// Any path, as given (what rrdtool does).
    #[default]
    Anywhere,
    /// Only files that resolve beneath one directory.
    Beneath(Arc<Beneath>),
    /// Nothing (a confined caller whose directory could not be opened).
    Nowhere,
}

#[derive(Debug)]
pub struct Beneath {
    /// The directory as paths handed to [`Root::open`] spell it.
    prefix: PathBuf,
    /// The directory itself (`O_PATH`), resolved once at start.
    dir: OwnedFd,
    /// Its canonical name, for the fallback check.
    real: PathBuf,
}

/// Set once `openat2` turned out to be missing: use the fallback.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// The error for a path that leaves the root (`EXDEV`, as `openat2` says).
fn escape() -> io::Error {
    io::Error::from_raw_os_error(libc::EXDEV)
}

impl Root {
    /// Confines opens beneath `dir`, which paths given to [`Root::open`]
    /// start with (spelled as here).
    pub fn beneath(dir: &Path) -> io::Result<Root> {
        let fd = rustix::fs::open(dir, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        let real = std::fs::canonicalize(dir)?;
        Ok(Root::Beneath(Arc::new(Beneath { prefix: dir.to_path_buf(), dir: fd, real })))
    }

    pub fn is_confined(&self) -> bool {
        !matches!(self, Root::Anywhere)
    }

    /// Whether `e` says a path would have left the root.
    pub fn is_escape(e: &io::Error) -> bool {
        e.raw_os_error() == Some(libc::EXDEV)
    }

    /// Opens `path` for reading, or reading and writing.
    pub fn open(&self, path: &Path, write: bool) -> io::Result<File> {
        let b = match self {
            Root::Anywhere => {
                use std::os::unix::fs::OpenOptionsExt;
                return OpenOptions::new()
                    .read(true)
                    .write(write)
                    .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                    .open(path);
            }
            Root::Nowhere => return Err(escape()),
            Root::Beneath(b) => b,
        };
        let relative = path.strip_prefix(&b.prefix).map_err(|_| escape())?;
        if relative.as_os_str().is_empty() {
            return Err(escape());
        }
        let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
        let flags = access | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(&b.dir, relative, flags, Mode::empty(), resolve) {
                Ok(fd) => return Ok(File::from(fd)),
                Err(rustix::io::Errno::NOSYS) => NO_OPENAT2.store(true, Ordering::Relaxed),
                // An absolute link is refused by RESOLVE_BENEATH even when it
                // lands inside; the check below decides on what it opens.
                Err(rustix::io::Errno::XDEV) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let fd = rustix::fs::openat(&b.dir, relative, flags, Mode::empty())?;
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)))?;
        if !opened.starts_with(&b.real) || opened == b.real {
            return Err(escape());
        }
        Ok(File::from(fd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Beneath the root: plain files and links that stay inside open;
    /// `..`, absolute links and links to outside are refused with EXDEV,
    /// and so is a path that does not start with the root.
    #[test]
    fn only_files_beneath_the_root_open() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let b = base.path();
        std::fs::write(b.join("in.rrd"), b"in").unwrap();
        std::fs::create_dir(b.join("sub")).unwrap();
        std::fs::write(outside.path().join("out.rrd"), b"out").unwrap();
        symlink(b.join("in.rrd"), b.join("abs-inside.rrd")).unwrap();
        symlink("in.rrd", b.join("rel-inside.rrd")).unwrap();
        symlink(outside.path().join("out.rrd"), b.join("evil.rrd")).unwrap();
        symlink("../in.rrd", b.join("sub/up.rrd")).unwrap();
        symlink(outside.path(), b.join("evildir")).unwrap();
        let outside_name = outside.path().file_name().unwrap().to_str().unwrap();
        symlink(format!("../../{outside_name}/out.rrd"), b.join("sub/rel-out.rrd")).unwrap();
        let root = Root::beneath(b).unwrap();
        let read = |p: &Path| std::fs::read_to_string(p).ok();
        assert!(root.open(&b.join("in.rrd"), true).is_ok());
        assert!(root.open(&b.join("rel-inside.rrd"), false).is_ok());
        assert!(root.open(&b.join("sub/up.rrd"), false).is_ok(), "a relative link that stays inside");
        assert!(root.open(&b.join("abs-inside.rrd"), false).is_ok(), "an absolute link that stays inside");
        for bad in ["evil.rrd", "evildir/out.rrd", "sub/rel-out.rrd"] {
            let e = root.open(&b.join(bad), false).unwrap_err();
            assert!(Root::is_escape(&e), "{bad}: {e}");
        }
        let e = root.open(&outside.path().join("out.rrd"), false).unwrap_err();
        assert!(Root::is_escape(&e), "{e}");
        assert!(Root::is_escape(&root.open(b, false).unwrap_err()));
        assert_eq!(read(&outside.path().join("out.rrd")).as_deref(), Some("out"));
        let missing = root.open(&b.join("missing.rrd"), false).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    /// A file replaced by a link to outside after a first successful open
    /// is refused at the next open (the check is the open itself).
    #[test]
    fn a_link_swapped_in_later_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let f = base.path().join("f.rrd");
        std::fs::write(&f, b"in").unwrap();
        std::fs::write(outside.path().join("t.rrd"), b"out").unwrap();
        let root = Root::beneath(base.path()).unwrap();
        assert!(root.open(&f, true).is_ok());
        std::fs::remove_file(&f).unwrap();
        symlink(outside.path().join("t.rrd"), &f).unwrap();
        assert!(Root::is_escape(&root.open(&f, true).unwrap_err()));
    }

    /// Anywhere opens what it is given, links to anywhere included.
    #[test]
    fn anywhere_follows_links() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("t.rrd"), b"out").unwrap();
        symlink(outside.path().join("t.rrd"), base.path().join("l.rrd")).unwrap();
        assert!(Root::Anywhere.open(&base.path().join("l.rrd"), false).is_ok());
    }
}
