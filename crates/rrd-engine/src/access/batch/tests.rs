//! The batch updater against `update_file` and rrdtool's bytes.

use super::*;
use crate::root::Root;
use crate::testfile::{create_file, create_with_copies, perftest_arg, PERFTEST_LIKE};
use crate::update;

/// The cache stays bounded, and every lookup returns the file of the
/// path asked for, across evictions and explicit closes.
#[test]
fn open_files_map_paths_to_their_files() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..10).map(|i| dir.path().join(format!("f{i}"))).collect();
    for p in &paths {
        std::fs::write(p, b"x").unwrap();
    }
    let mut files = OpenFiles::new(3);
    for round in 0..5 {
        for (i, p) in paths.iter().enumerate() {
            let ino = files.get(p).unwrap().metadata().unwrap().ino();
            assert_eq!(ino, std::fs::metadata(p).unwrap().ino(), "round {round} file {i}");
            assert!(files.len() <= 3);
            if (i + round) % 4 == 0 {
                files.close(p);
            }
        }
    }
    for p in &paths {
        let ino = files.get(p).unwrap().metadata().unwrap().ino();
        assert_eq!(ino, std::fs::metadata(p).unwrap().ino());
    }
}

/// A batch gives the same files as updating one call at a time.
#[test]
fn batch_equals_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut reqs = Vec::new();
    for i in 0..20 {
        let p = create_file(
            dir.path(),
            &format!("f{i}.rrd"),
            &["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10", "RRA:MAX:0.5:3:10"],
        );
        let q = dir.path().join(format!("g{i}.rrd"));
        std::fs::copy(&p, &q).unwrap();
        let args: Vec<String> = (1..=5).map(|k| format!("{}:{}", 1_000_000_000 + 300 * k, i * k)).collect();
        update::update_file(&q, &args, &UpdateOptions::default(), false).unwrap();
        reqs.push(UpdateRequest { path: p, args, opts: UpdateOptions::default() });
    }
    let mut b = BatchUpdater::new(4);
    for r in b.update_all(&reqs) {
        assert!(r.unwrap().error.is_none());
    }
    assert!(b.files.len() <= 4);
    for i in 0..20 {
        let a = std::fs::read(dir.path().join(format!("f{i}.rrd"))).unwrap();
        let g = std::fs::read(dir.path().join(format!("g{i}.rrd"))).unwrap();
        assert_eq!(a, g, "file {i}");
    }
}

fn perftest_like(dir: &Path, name: &str) -> PathBuf {
    create_file(dir, name, &PERFTEST_LIKE)
}

/// A perftest-like `a.rrd` and its copy `b.rrd`, the reference that
/// only direct updates write.
fn twins(dir: &Path) -> (PathBuf, PathBuf) {
    let (a, [b]) = create_with_copies(dir, &PERFTEST_LIKE, ["b.rrd"]);
    (a, b)
}

fn req(path: &Path, k: u64) -> UpdateRequest {
    UpdateRequest { path: path.to_path_buf(), args: vec![perftest_arg(k)], opts: UpdateOptions::default() }
}

/// Update `k`: of `a` by `u` if `ours`, else directly (another
/// writer), and of the reference `b` directly; the two files must then
/// be equal. Waits out the racy window after.
fn step_both(u: &mut BatchUpdater, a: &Path, b: &Path, k: u64, ours: bool) {
    let r = req(a, k);
    if ours {
        u.update(&r, false).unwrap();
    } else {
        update::update_file(a, &r.args, &r.opts, false).unwrap();
    }
    update::update_file(b, &r.args, &r.opts, false).unwrap();
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "step {k}");
    past_racy_window();
}

fn past_racy_window() {
    std::thread::sleep(std::time::Duration::from_nanos(RACY_WINDOW_NS as u64 + 10_000_000));
}

/// The second update of an unchanged file reads no header; the bytes
/// equal one-at-a-time updates all along.
#[test]
fn kept_header_is_used_and_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = twins(dir.path());
    let mut u = BatchUpdater::new(4);
    for k in 1..=8 {
        step_both(&mut u, &a, &b, k, true);
    }
    assert_eq!(u.counters.headers_read, 1, "{:?}", u.counters);
    assert_eq!(u.counters.headers_kept, 7, "{:?}", u.counters);
}

/// A write by someone else (here a direct update) is noticed: the
/// header is read again and nothing is clobbered.
#[test]
fn foreign_writes_invalidate_the_kept_header() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = twins(dir.path());
    let mut u = BatchUpdater::new(4);
    for k in 1..=6 {
        step_both(&mut u, &a, &b, k, k % 2 != 0);
    }
    assert_eq!(u.counters.headers_kept, 0, "{:?}", u.counters);
    assert_eq!(u.counters.headers_read, 3);
    // Without the racy-window wait, a kept header is not trusted either.
    let r = req(&a, 7);
    u.update(&r, false).unwrap();
    u.update(&req(&a, 8), false).unwrap();
    assert_eq!(u.counters.headers_kept, 0, "{:?}", u.counters);
}

/// Kept headers stamped by the clock (`stamp_by_clock`, librrd's
/// writer: no `fstat` after the write) are used once the racy window
/// has passed, and every foreign change invalidates them as the `fstat`
/// stamp does: another process's update, the file's bytes rewritten
/// in place at the same length, a truncation. The bytes equal plain
/// updates' throughout.
#[test]
fn clock_stamps_detect_foreign_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = twins(dir.path());
    let mut u = BatchUpdater::new(4);
    u.stamp_by_clock = true;
    let step = |u: &mut BatchUpdater, k: u64, ours: bool| step_both(u, &a, &b, k, ours);
    for k in 1..=3 {
        step(&mut u, k, true);
    }
    assert_eq!((u.counters.headers_read, u.counters.headers_kept), (1, 2), "{:?}", u.counters);
    // Another process's update.
    step(&mut u, 4, false);
    step(&mut u, 5, true);
    assert_eq!((u.counters.headers_read, u.counters.headers_kept), (2, 2), "{:?}", u.counters);
    // The same bytes written over the file in place (same inode, same
    // length): ctime moved.
    step(&mut u, 6, true);
    std::fs::write(&a, std::fs::read(&b).unwrap()).unwrap();
    past_racy_window();
    step(&mut u, 7, true);
    assert_eq!((u.counters.headers_read, u.counters.headers_kept), (3, 3), "{:?}", u.counters);
    // Truncated: the length differs, the header is read again and found short.
    step(&mut u, 8, true);
    let len = std::fs::metadata(&a).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&a).unwrap().set_len(len - 8).unwrap();
    past_racy_window();
    assert!(u.update(&req(&a, 9), false).is_err(), "a truncated file is refused");
    assert_eq!(u.counters.headers_kept, 4, "{:?}", u.counters);
}

/// A file renamed over the path (what `create` and `restore` do) is
/// reopened: the update lands in the new file, not the unlinked one.
#[test]
fn a_file_renamed_over_the_path_is_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let (a, [fresh, reference]) = create_with_copies(dir.path(), &PERFTEST_LIKE, ["fresh.rrd", "ref.rrd"]);
    let mut u = BatchUpdater::new(4);
    u.update(&req(&a, 1), false).unwrap();
    past_racy_window();
    std::fs::rename(&fresh, &a).unwrap();
    let r = req(&a, 2);
    u.update(&r, false).unwrap();
    update::update_file(&reference, &r.args, &r.opts, false).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&reference).unwrap());
}

/// The same when no header was kept after the first update (headers
/// off, or kept only from the second update, as pipe mode does): the
/// descriptor's identity is checked before its second update, so the
/// update does not land in the unlinked file.
#[test]
fn a_file_renamed_over_the_path_is_reopened_without_kept_headers() {
    for (keep_headers, from_second) in [(false, false), (true, true)] {
        let dir = tempfile::tempdir().unwrap();
        let (a, [fresh, reference]) =
            create_with_copies(dir.path(), &PERFTEST_LIKE, ["fresh.rrd", "ref.rrd"]);
        let mut u = BatchUpdater::new(4);
        u.keep_headers = keep_headers;
        u.keep_from_second_update = from_second;
        u.update(&req(&a, 1), false).unwrap();
        std::fs::rename(&fresh, &a).unwrap();
        let r = req(&a, 2);
        u.update(&r, false).unwrap();
        update::update_file(&reference, &r.args, &r.opts, false).unwrap();
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&reference).unwrap(),
            "keep_headers {keep_headers}, from second update {from_second}: the update missed the new file"
        );
        assert_eq!(u.counters.headers_kept, 0, "{:?}", u.counters);
    }
}

/// Kept only from the second update: the first update of a file takes
/// no stamp and keeps nothing; the third uses the header the second kept.
#[test]
fn headers_are_kept_from_the_second_update() {
    let dir = tempfile::tempdir().unwrap();
    let a = perftest_like(dir.path(), "a.rrd");
    let mut u = BatchUpdater::new(4);
    u.keep_from_second_update = true;
    u.update(&req(&a, 1), false).unwrap();
    assert!(u.files.entry(&a).unwrap().kept.is_none(), "kept after the first update");
    u.update(&req(&a, 2), false).unwrap();
    past_racy_window();
    u.update(&req(&a, 3), false).unwrap();
    assert_eq!((u.counters.headers_read, u.counters.headers_kept), (2, 1), "{:?}", u.counters);
}

/// A descriptor handed over with its length gives the same bytes as an
/// update that opens the file itself, leaves nothing open (so its lock
/// is gone), and honours a lock held elsewhere; a file the updater has
/// open already goes through that descriptor.
#[test]
fn an_opened_file_is_updated_once_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = twins(dir.path());
    let mut u = BatchUpdater::new(4);
    for k in 1..=4 {
        let file = open_for_update(&Root::Anywhere, true, &a).unwrap();
        let len = file.metadata().unwrap().len();
        assert!(u.update_opened(&req(&a, k), false, file, len).unwrap().error.is_none());
        assert!(!u.files.contains(&a), "left open after update {k}");
        update::update_file(&b, &req(&b, k).args, &UpdateOptions::default(), false).unwrap();
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(u.counters.headers_read, 4);

    // The lock is released: another descriptor can take it now.
    let other = std::fs::OpenOptions::new().read(true).write(true).open(&a).unwrap();
    lock_file(&other, &a, true, false, Locking::Try).unwrap();
    // ...and while it is held there, the update is refused untouched.
    let file = open_for_update(&Root::Anywhere, true, &a).unwrap();
    let len = file.metadata().unwrap().len();
    let before = std::fs::read(&a).unwrap();
    assert!(matches!(u.update_opened(&req(&a, 5), false, file, len), Err(Error::Locked)));
    assert_eq!(std::fs::read(&a).unwrap(), before);
    drop(other);

    // A path open here already: its own descriptor is used (and kept).
    u.update(&req(&a, 5), false).unwrap();
    let file = open_for_update(&Root::Anywhere, true, &a).unwrap();
    assert!(u.update_opened(&req(&a, 6), false, file, 0).unwrap().error.is_none());
    assert!(u.files.contains(&a));
    for k in 5..=6 {
        update::update_file(&b, &req(&b, k).args, &UpdateOptions::default(), false).unwrap();
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// A bounded prefetch window covers a prefix of the requests and says
/// how many; prefetching again where it ended covers the rest, and the
/// files come out as with an unbounded window.
/// A batch over several filesystems names each once (so the daemon's
/// `syncfs` covers every file it wrote, not only the first one's).
#[test]
fn filesystems_names_each_device_once() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir_in("/dev/shm").ok();
    let mut paths: Vec<PathBuf> = (0..3).map(|i| perftest_like(dir.path(), &format!("f{i}.rrd"))).collect();
    if let Some(shm) = &shm {
        paths.push(perftest_like(shm.path(), "s.rrd"));
    }
    let mut u = BatchUpdater::new(16);
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let found = u.filesystems(&refs).unwrap();
    let mut expected: Vec<u64> = paths.iter().map(|p| std::fs::metadata(p).unwrap().dev()).collect();
    expected.dedup();
    assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), expected);
    assert_eq!(found[0].1, paths[0]);
    u.sync_filesystem(&refs).unwrap();
}

#[test]
fn prefetch_window_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..10).map(|i| perftest_like(dir.path(), &format!("f{i}.rrd"))).collect();
    let copies: Vec<PathBuf> = (0..10).map(|i| dir.path().join(format!("g{i}.rrd"))).collect();
    for (p, q) in paths.iter().zip(&copies) {
        std::fs::copy(p, q).unwrap();
    }
    let reqs: Vec<UpdateRequest> = paths.iter().map(|p| req(p, 1)).collect();
    let refs: Vec<&UpdateRequest> = reqs.iter().collect();
    let mut u = BatchUpdater::new(16);
    u.max_prefetch_pages = 9;
    // Three requests of (header + 2 guessed row pages) fit in 9 pages.
    assert_eq!(u.prefetch(&refs), 3);
    assert!(u.counters.pages_prefetched <= 9, "{:?}", u.counters);
    let mut covered = 0;
    for (i, r) in reqs.iter().enumerate() {
        if i == covered {
            let n = u.prefetch(&refs[i..]);
            assert!((1..=3).contains(&n), "{n}");
            covered += n;
        }
        u.update(r, false).unwrap();
    }
    assert_eq!(u.prefetch(&[]), 0);
    let mut unbounded = BatchUpdater::new(16);
    assert_eq!(unbounded.prefetch(&refs), 10);
    // The bytes are those of direct updates.
    for (i, (p, q)) in paths.iter().zip(&copies).enumerate() {
        update::update_file(q, &reqs[i].args, &reqs[i].opts, false).unwrap();
        assert_eq!(std::fs::read(p).unwrap(), std::fs::read(q).unwrap());
    }
    // The memory bound is positive and at least 64 pages.
    let mut m = BatchUpdater::new(1);
    m.bound_prefetch_by_memory();
    assert!(m.max_prefetch_pages >= 64);
    assert!(crate::pagecache::memory_limit() > 0);
}

struct FailWrites(std::sync::atomic::AtomicBool);

impl FaultHook for FailWrites {
    fn write(&self, _: &Path, _: u64, len: usize) -> io::Result<usize> {
        if self.0.load(std::sync::atomic::Ordering::SeqCst) {
            Err(io::Error::from_raw_os_error(libc::EIO))
        } else {
            Ok(len)
        }
    }
    fn sync(&self, _: &Path) -> io::Result<()> {
        Ok(())
    }
}

/// An I/O error is an `Err` (not an argument error), keeps the header
/// from before the update, and a retry after the fault applies the same
/// values.
#[test]
fn write_errors_drop_the_kept_header_and_retry_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = twins(dir.path());
    let hook = Arc::new(FailWrites(std::sync::atomic::AtomicBool::new(false)));
    let mut u = BatchUpdater::new(4);
    u.faults = Some(hook.clone());
    u.keep_state_on_write_error = true;
    let mut kept = None;
    let r1 = req(&a, 1);
    u.update_kept(&r1, false, &mut kept).unwrap();
    assert!(kept.is_some());
    hook.0.store(true, std::sync::atomic::Ordering::SeqCst);
    let r2 = req(&a, 2);
    let err = u.update_kept(&r2, false, &mut kept).err().expect("an injected EIO fails the update");
    assert!(matches!(err, Error::Io { .. }), "{err}");
    // The header from before the failed update is kept, for the retry.
    assert_eq!(kept.as_ref().unwrap().header.live().last_up, 1_000_000_300);
    hook.0.store(false, std::sync::atomic::Ordering::SeqCst);
    past_racy_window();
    u.update_kept(&r2, false, &mut kept).unwrap();
    for r in [r1, r2] {
        update::update_file(&b, &r.args, &r.opts, false).unwrap();
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // The pages written since the last release are released once.
    let released = u.sync(&a, kept.as_mut(), true).unwrap();
    assert!(released >= 1);
    assert_eq!(u.sync(&a, kept.as_mut(), true).unwrap(), 0);
    assert_eq!(u.counters.pages_released, released);
}
