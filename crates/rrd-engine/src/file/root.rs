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
//! A root may hold several directories ([`Root::beneath_any`]): a path is
//! then opened beneath the longest of them it starts with (component-wise),
//! and refused when none contains it.
//!
//! Every open adds `O_NONBLOCK | O_NOCTTY` (confined or not), so a name
//! that turns out to be a FIFO or a terminal cannot make the opener hang
//! (a daemon thread per client, until none is left) or take a controlling
//! terminal; callers refuse non-regular files after their `fstat`. On a
//! regular file `O_NONBLOCK` changes nothing.
//!
//! New files (CREATE, TUNE's rewrite) are written to a temporary file and
//! renamed over their target by `newfile`, relative to the descriptor of
//! their directory, which [`Root::open_dir`] opens the same way: a
//! directory swapped for a link out of the root after any check is
//! refused, and nothing is created or renamed outside.

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
    /// Only files that resolve beneath one of some directories.
    Beneath(Arc<[Beneath]>),
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
        Root::beneath_any(&[dir])
    }

    /// Confines opens beneath the directories `dirs` (spelled as paths
    /// given to [`Root::open`] start with): each path beneath the longest
    /// of them that is a prefix of it, component-wise.
    pub fn beneath_any<P: AsRef<Path>>(dirs: &[P]) -> io::Result<Root> {
        let mut all = Vec::with_capacity(dirs.len());
        for dir in dirs {
            let dir = dir.as_ref();
            let fd =
                rustix::fs::open(dir, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
            let real = std::fs::canonicalize(dir)?;
            all.push(Beneath { prefix: dir.to_path_buf(), dir: fd, real });
        }
        // Longest first: the first that contains a path is the one.
        all.sort_by_key(|b| std::cmp::Reverse(b.prefix.components().count()));
        Ok(Root::Beneath(all.into()))
    }

    /// The directory `path` is opened beneath and its name relative to it
    /// (`Ok(None)`: anywhere, `path` as given); an escape when no
    /// directory of the root contains it.
    pub fn locate<'a>(&'a self, path: &'a Path) -> io::Result<Option<(&'a Beneath, &'a Path)>> {
        match self.containing(path)? {
            Some((_, relative)) if relative.as_os_str().is_empty() => Err(escape()),
            found => Ok(found),
        }
    }

    /// The root's directory that contains `path` (the longest; `path` may
    /// be that directory itself: then the name is empty) and the name
    /// relative to it; `Ok(None)`: anywhere.
    fn containing<'a>(&'a self, path: &'a Path) -> io::Result<Option<(&'a Beneath, &'a Path)>> {
        match self {
            Root::Anywhere => Ok(None),
            Root::Nowhere => Err(escape()),
            Root::Beneath(all) => all
                .iter()
                .find_map(|b| path.strip_prefix(&b.prefix).ok().map(|r| (b, r)))
                .map(Some)
                .ok_or_else(escape),
        }
    }

    pub fn is_confined(&self) -> bool {
        !matches!(self, Root::Anywhere)
    }

    /// Whether `e` says a path would have left the root.
    pub fn is_escape(e: &io::Error) -> bool {
        e.raw_os_error() == Some(libc::EXDEV)
    }

    /// Opens the directory `dir` (for `*at` calls: creating, renaming and
    /// syncing the files in it) beneath the root's directory that contains
    /// it, which may be that directory itself; `Ok(None)` for
    /// [`Root::Anywhere`], whose callers use names.
    pub fn open_dir(&self, dir: &Path) -> io::Result<Option<OwnedFd>> {
        let Some((b, relative)) = self.containing(dir)? else { return Ok(None) };
        let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        b.open(relative, flags, true).map(Some)
    }

    /// `mkdir -p dir`, beneath the root: each missing directory is made
    /// with `mkdirat` in its parent opened beneath the root
    /// ([`Root::open_dir`]), so a directory on the way that is a link out
    /// of the root is refused before anything is made through it.
    /// [`Root::Anywhere`]: `std::fs::create_dir_all`.
    pub fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let Some((b, relative)) = self.containing(dir)? else { return std::fs::create_dir_all(dir) };
        let mut parent = b.prefix.clone();
        for part in relative.components() {
            let std::path::Component::Normal(name) = part else { return Err(escape()) };
            let fd = self.open_dir(&parent)?.ok_or_else(escape)?;
            match rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            parent.push(name);
        }
        self.open_dir(dir).map(drop)
    }

    /// Opens `path` for reading, or reading and writing.
    pub fn open(&self, path: &Path, write: bool) -> io::Result<File> {
        let Some((b, relative)) = self.locate(path)? else {
            use std::os::unix::fs::OpenOptionsExt;
            return OpenOptions::new()
                .read(true)
                .write(write)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(path);
        };
        let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
        let flags = access | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        b.open(relative, flags, false).map(File::from)
    }
}

impl Beneath {
    /// Opens `relative` beneath this directory: `openat2(RESOLVE_BENEATH)`,
    /// or, without it, `openat` and a check of what was opened
    /// (`/proc/self/fd`). `itself`: the directory itself may be what is
    /// opened (a directory's descriptor), not only something beneath it.
    fn open(&self, relative: &Path, flags: OFlags, itself: bool) -> io::Result<OwnedFd> {
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(&self.dir, relative, flags, Mode::empty(), resolve) {
                Ok(fd) => return Ok(fd),
                Err(rustix::io::Errno::NOSYS) => NO_OPENAT2.store(true, Ordering::Relaxed),
                // An absolute link is refused by RESOLVE_BENEATH even when it
                // lands inside; the check below decides on what it opens.
                Err(rustix::io::Errno::XDEV) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let fd = rustix::fs::openat(&self.dir, relative, flags, Mode::empty())?;
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)))?;
        if !opened.starts_with(&self.real) || (!itself && opened == self.real) {
            return Err(escape());
        }
        Ok(fd)
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

    /// Several directories: a path opens beneath the longest that contains
    /// it, so a link in the inner one that leads into the outer one is
    /// refused; a path in none of them is refused.
    #[test]
    fn the_longest_containing_directory_is_the_root() {
        let outer = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let o = outer.path();
        let inner = o.join("inner");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(o.join("a.rrd"), b"a").unwrap();
        std::fs::write(inner.join("b.rrd"), b"b").unwrap();
        std::fs::write(other.path().join("c.rrd"), b"c").unwrap();
        symlink(o.join("a.rrd"), inner.join("up.rrd")).unwrap();
        symlink(inner.join("b.rrd"), o.join("down.rrd")).unwrap();
        let root = Root::beneath_any(&[o, inner.as_path(), other.path()]).unwrap();
        assert!(root.open(&o.join("a.rrd"), false).is_ok());
        assert!(root.open(&inner.join("b.rrd"), false).is_ok());
        assert!(root.open(&other.path().join("c.rrd"), false).is_ok());
        assert!(root.open(&o.join("down.rrd"), false).is_ok(), "inner is beneath outer");
        let e = root.open(&inner.join("up.rrd"), false).unwrap_err();
        assert!(Root::is_escape(&e), "opened beneath inner, the longest: {e}");
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("d.rrd"), b"d").unwrap();
        assert!(Root::is_escape(&root.open(&elsewhere.path().join("d.rrd"), false).unwrap_err()));
        let b_rrd = inner.join("b.rrd");
        let (b, rel) = root.locate(&b_rrd).unwrap().unwrap();
        assert_eq!((b.prefix.as_path(), rel), (inner.as_path(), Path::new("b.rrd")));
    }

    /// Directories open beneath the root (the root itself included); one
    /// reached through a link out of it, or outside it, is refused.
    #[test]
    fn directories_open_beneath_the_root() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let b = base.path();
        std::fs::create_dir(b.join("sub")).unwrap();
        symlink(outside.path(), b.join("evildir")).unwrap();
        symlink("sub", b.join("rel-sub")).unwrap();
        let root = Root::beneath(b).unwrap();
        assert!(root.open_dir(b).unwrap().is_some());
        assert!(root.open_dir(&b.join("sub")).unwrap().is_some());
        assert!(root.open_dir(&b.join("rel-sub")).unwrap().is_some());
        assert!(Root::is_escape(&root.open_dir(&b.join("evildir")).unwrap_err()));
        assert!(Root::is_escape(&root.open_dir(outside.path()).unwrap_err()));
        assert!(Root::Anywhere.open_dir(outside.path()).unwrap().is_none());
        root.create_dir_all(&b.join("sub/x/y")).unwrap();
        assert!(b.join("sub/x/y").is_dir());
        root.create_dir_all(&b.join("rel-sub/z")).unwrap();
        assert!(b.join("sub/z").is_dir());
        assert!(Root::is_escape(&root.create_dir_all(&b.join("evildir/x/y")).unwrap_err()));
        assert!(Root::is_escape(&root.create_dir_all(&outside.path().join("x")).unwrap_err()));
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing made outside");
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
