//! Simulated power loss: a [`PowerLog`] records the file I/O of the code
//! under test (writes with their offset and bytes, `fdatasync`, directory
//! syncs, creates, unlinks) as the adapters of [`crate::fault`]'s users see
//! it (rrd-journal's `RecordingIo`, rrd-engine's `batch::FaultHook`), and
//! [`images`] builds the durable images a kernel could leave if the power
//! failed after any prefix of that log.
//!
//! The model (the one ALICE and CrashMonkey use, at sector granularity):
//!
//! - A file's bytes as of its last `fdatasync` are durable. Every write
//!   issued since is cut at 512-byte sector boundaries, and each piece is
//!   independently kept or lost (so a write can be kept whole, lost whole,
//!   or torn), applied in issue order. Writes to different files, and to
//!   different sectors of one file, reach the disk in any order.
//! - A file's length as of its last sync is durable; pieces kept past it
//!   extend it (the gap reads as zeros).
//! - A name (a create or an unlink) is durable only after an `fsync` of its
//!   directory; until then each is independently done or not done.
//!   (Data synced into a file whose name was never made durable is gone
//!   with the name.)
//! - [`Op::Mark`] records an event of the test (an acknowledgement, a tick
//!   of model time): no I/O, it only numbers the crash points.
//!
//! The log is linear: an adapter records an operation while it holds the
//! log's lock, and runs the real system call inside that same lock
//! ([`PowerLog::run`]), so the recorded order is the order the kernel saw.
//!
//! Deliberately absent: reordering across an `fdatasync` of the same file
//! (the model trusts it, as the code does), metadata other than names and
//! lengths (mtime, permissions), and renames (no recorded code renames).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::Rng;

/// The sector size writes tear at.
pub const SECTOR: u64 = 512;

/// One recorded operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A new, empty file (its name is durable after [`Op::SyncDir`] of its parent).
    Create(PathBuf),
    /// `pwrite` (or an append at the file's end).
    Write { path: PathBuf, offset: u64, bytes: Vec<u8> },
    /// `ftruncate`.
    SetLen { path: PathBuf, len: u64 },
    /// `fdatasync`/`fsync` of a file (or a `syncfs` that covers it).
    Sync(PathBuf),
    /// `fsync` of a directory: its creates and unlinks are durable.
    SyncDir(PathBuf),
    /// `unlink`.
    Remove(PathBuf),
    /// An event of the test (no I/O).
    Mark(u64),
}

/// The log an adapter records into.
#[derive(Debug, Default)]
pub struct PowerLog {
    ops: Mutex<Vec<Op>>,
}

impl PowerLog {
    /// Records `op` and runs `io` (the real system call) under the log's
    /// lock, so that the recorded order is the kernel's. The op is recorded
    /// only when `io` succeeds; for a write, `io` returns how many bytes it
    /// wrote and only those are recorded.
    pub fn run<T>(&self, op: Op, io: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
        let mut ops = self.ops.lock().expect("power log lock");
        let out = io()?;
        ops.push(op);
        Ok(out)
    }

    /// A write of `bytes` at `offset` that `io` performs, reporting how many
    /// bytes reached the file (a short write records its prefix).
    pub fn write(
        &self,
        path: &Path,
        offset: u64,
        bytes: &[u8],
        io: impl FnOnce() -> std::io::Result<usize>,
    ) -> std::io::Result<usize> {
        let mut ops = self.ops.lock().expect("power log lock");
        let n = io()?;
        ops.push(Op::Write { path: path.to_path_buf(), offset, bytes: bytes[..n.min(bytes.len())].to_vec() });
        Ok(n)
    }

    /// Records an operation that already happened (under the caller's own ordering).
    pub fn push(&self, op: Op) {
        self.ops.lock().expect("power log lock").push(op);
    }

    /// Records a mark.
    pub fn mark(&self, tag: u64) {
        self.push(Op::Mark(tag));
    }

    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().expect("power log lock").clone()
    }

    pub fn len(&self) -> usize {
        self.ops.lock().expect("power log lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The files of a directory tree: path -> bytes.
pub type Files = BTreeMap<PathBuf, Vec<u8>>;

/// One piece of an unsynced operation whose fate is chosen.
#[derive(Clone, Debug)]
enum Unit {
    /// Sector piece `[from, to)` of the write at log index `op`.
    Piece { op: usize, from: u64, to: u64 },
    /// The name operation (create, unlink) at log index `op`.
    Name { op: usize },
    /// The truncate at log index `op`.
    Len { op: usize },
}

/// The undecided state of a crash after `ops[..cut]`: what is durable for
/// certain, and the units whose fate is open.
#[derive(Debug)]
pub struct CrashPoint {
    cut: usize,
    units: Vec<Unit>,
}

impl CrashPoint {
    /// How many independent choices this crash point has.
    pub fn choices(&self) -> usize {
        self.units.len()
    }

    /// The log length this crash point cuts at.
    pub fn cut(&self) -> usize {
        self.cut
    }
}

/// The crash point after `ops[..cut]`.
pub fn crash_point(ops: &[Op], cut: usize) -> CrashPoint {
    let ops = &ops[..cut];
    let mut unsynced: BTreeMap<&Path, Vec<usize>> = BTreeMap::new();
    let mut names: BTreeMap<&Path, Vec<usize>> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Write { path, .. } | Op::SetLen { path, .. } => unsynced.entry(path).or_default().push(i),
            Op::Sync(path) => {
                unsynced.remove(path.as_path());
            }
            Op::Create(path) | Op::Remove(path) => {
                if matches!(op, Op::Create(_)) {
                    unsynced.remove(path.as_path());
                }
                names.entry(parent(path)).or_default().push(i)
            }
            Op::SyncDir(dir) => {
                names.remove(dir.as_path());
            }
            Op::Mark(_) => {}
        }
    }
    let mut units = Vec::new();
    for list in unsynced.values() {
        for &i in list {
            match &ops[i] {
                Op::Write { offset, bytes, .. } => {
                    let end = offset + bytes.len() as u64;
                    let mut from = *offset;
                    while from < end {
                        let to = ((from / SECTOR + 1) * SECTOR).min(end);
                        units.push(Unit::Piece { op: i, from, to });
                        from = to;
                    }
                }
                _ => units.push(Unit::Len { op: i }),
            }
        }
    }
    for list in names.values() {
        units.extend(list.iter().map(|&op| Unit::Name { op }));
    }
    CrashPoint { cut, units }
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// The durable image of `initial` (durable files before the log began)
/// after a crash at `point`, with unit `k` kept when `keep(k)` is true.
pub fn image(initial: &Files, ops: &[Op], point: &CrashPoint, keep: impl Fn(usize) -> bool) -> Files {
    let ops = &ops[..point.cut];
    let kept_ops: std::collections::HashSet<usize> = point
        .units
        .iter()
        .enumerate()
        .filter(|(_, u)| !matches!(u, Unit::Piece { .. }))
        .filter(|(k, _)| keep(*k))
        .map(|(_, u)| match u {
            Unit::Name { op } | Unit::Len { op } => *op,
            Unit::Piece { .. } => unreachable!(),
        })
        .collect();
    let mut pieces: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
    for (k, u) in point.units.iter().enumerate() {
        if let Unit::Piece { op, from, to } = u {
            if keep(k) {
                pieces.entry(*op).or_default().push((*from, *to));
            }
        }
    }
    let undecided: std::collections::HashSet<usize> = point
        .units
        .iter()
        .map(|u| match u {
            Unit::Piece { op, .. } | Unit::Name { op } | Unit::Len { op } => *op,
        })
        .collect();
    // Names: the durable directory entries. A file's data: durable bytes
    // plus the kept pieces. Both replayed in log order.
    let mut present: BTreeMap<PathBuf, bool> = initial.keys().map(|p| (p.clone(), true)).collect();
    let mut state: BTreeMap<PathBuf, Vec<u8>> = initial.clone();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Create(path) => {
                if !undecided.contains(&i) || kept_ops.contains(&i) {
                    present.insert(path.clone(), true);
                }
                // A new inode: whatever the old name held is not this file's.
                state.insert(path.clone(), Vec::new());
            }
            Op::Remove(path) => {
                if !undecided.contains(&i) || kept_ops.contains(&i) {
                    present.insert(path.clone(), false);
                }
            }
            Op::Write { path, offset, bytes } => {
                let st = state.entry(path.clone()).or_default();
                if !undecided.contains(&i) {
                    put(st, *offset, bytes);
                } else {
                    for &(from, to) in pieces.get(&i).into_iter().flatten() {
                        let a = (from - offset) as usize;
                        let b = (to - offset) as usize;
                        put(st, from, &bytes[a..b]);
                    }
                }
            }
            Op::SetLen { path, len } => {
                if !undecided.contains(&i) || kept_ops.contains(&i) {
                    state.entry(path.clone()).or_default().resize(*len as usize, 0);
                }
            }
            Op::Sync(_) | Op::SyncDir(_) | Op::Mark(_) => {}
        }
    }
    let mut out = Files::new();
    for (path, here) in present {
        if here {
            out.insert(path.clone(), state.remove(&path).unwrap_or_default());
        }
    }
    out
}

fn put(data: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let end = offset as usize + bytes.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[offset as usize..end].copy_from_slice(bytes);
}

/// How the images of one crash point are chosen.
#[derive(Clone, Copy, Debug)]
pub enum Choose {
    /// Every subset of the units when there are at most `max_units` of
    /// them (2^units images), else `samples` random ones.
    Exhaustive { max_units: usize, samples: usize },
    /// `samples` random subsets (each unit kept with probability 1/2),
    /// plus "everything lost" and "everything kept".
    Random { samples: usize },
}

/// The images of a crash point: calls `each(image)` for every choice.
/// Returns the number of images.
pub fn images(
    initial: &Files,
    ops: &[Op],
    point: &CrashPoint,
    choose: Choose,
    rng: &mut Rng,
    mut each: impl FnMut(Files),
) -> usize {
    let n = point.units.len();
    match choose {
        Choose::Exhaustive { max_units, .. } if n <= max_units => {
            for mask in 0u64..(1u64 << n) {
                each(image(initial, ops, point, |k| mask >> k & 1 == 1));
            }
            1 << n
        }
        Choose::Exhaustive { samples, .. } | Choose::Random { samples } => {
            each(image(initial, ops, point, |_| false));
            each(image(initial, ops, point, |_| true));
            for _ in 0..samples {
                let bits: Vec<bool> = (0..n).map(|_| rng.next_u64() & 1 == 1).collect();
                each(image(initial, ops, point, |k| bits[k]));
            }
            samples + 2
        }
    }
}

/// Reads every regular file under `dir` (recursively).
pub fn read_tree(dir: &Path) -> std::io::Result<Files> {
    let mut out = Files::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let path = entry.path();
            let ty = entry.file_type()?;
            if ty.is_dir() {
                stack.push(path);
            } else if ty.is_file() {
                out.insert(path.clone(), std::fs::read(&path)?);
            }
        }
    }
    Ok(out)
}

/// Makes the files under `dir` exactly `image` (files not in it removed;
/// directories kept).
pub fn write_tree(dir: &Path, image: &Files) -> std::io::Result<()> {
    for path in read_tree(dir)?.keys() {
        if !image.contains_key(path) {
            std::fs::remove_file(path)?;
        }
    }
    for (path, data) in image {
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p)?;
        }
        std::fs::write(path, data)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    /// A synced write is durable; an unsynced one is cut at sectors and
    /// each piece kept or lost; an unsynced create or unlink is open.
    #[test]
    fn images_keep_synced_bytes_and_choose_the_rest() {
        let mut initial = Files::new();
        initial.insert(p("/d/a"), vec![1u8; 1024]);
        let ops = vec![
            Op::Write { path: p("/d/a"), offset: 0, bytes: vec![2u8; 10] },
            Op::Sync(p("/d/a")),
            Op::Write { path: p("/d/a"), offset: 500, bytes: vec![3u8; 20] },
            Op::Create(p("/d/b")),
            Op::Write { path: p("/d/b"), offset: 0, bytes: vec![4u8; 4] },
            Op::Sync(p("/d/b")),
        ];
        let point = crash_point(&ops, ops.len());
        // Two pieces of the torn write, and b's name.
        assert_eq!(point.choices(), 3);
        let mut seen = Vec::new();
        let n = images(
            &initial,
            &ops,
            &point,
            Choose::Exhaustive { max_units: 8, samples: 0 },
            &mut Rng::new(1),
            |img| {
                let a = &img[&p("/d/a")];
                assert_eq!(&a[..10], &[2u8; 10], "synced");
                seen.push((a[500], a[519], img.get(&p("/d/b")).cloned()));
            },
        );
        assert_eq!(n, 8);
        assert!(seen.contains(&(3, 1, None)), "torn: first sector only");
        assert!(seen.contains(&(1, 3, Some(vec![4u8; 4]))), "torn: second sector only, name kept");
        assert!(seen.contains(&(1, 1, None)));
        // Once the directory is synced, b is always there.
        let mut ops2 = ops.clone();
        ops2.push(Op::SyncDir(p("/d")));
        let point = crash_point(&ops2, ops2.len());
        assert_eq!(point.choices(), 2);
        let img = image(&initial, &ops2, &point, |_| false);
        assert_eq!(img[&p("/d/b")], vec![4u8; 4]);
    }
}
