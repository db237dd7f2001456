//! The update journal: every update the daemon acknowledges is first here.
//!
//! A journal is a directory of segment files `journal.<seq>` (seq in 16
//! hex digits, increasing). A segment starts with an 16-byte header
//! (`RRDSJNL1` + the sequence number) followed by records:
//!
//! ```text
//! u32 LE  payload length (≤ RECORD_LEN_MAX)
//! u32 LE  CRC-32 of the length bytes followed by the payload
//! ...     payload: u16 path length, path, u16 argument count,
//!         then per argument u16 length + bytes ("time:v1:v2...")
//! ```
//!
//! Writes only ever append. [`Journal::append`] writes a whole batch of
//! records with one `write` and, under [`SyncPolicy::Always`], one
//! `fdatasync` before returning: that is group commit, the caller gathers
//! the records of many clients and acknowledges them all after one sync.
//!
//! Recovery ([`replay`]) reads segments in order and checks every frame.
//! Only an incomplete last record of the newest segment (nothing valid
//! after it) is a torn tail, a crash during an append: truncated away and
//! reported, never acknowledged under `Always`. Any other bad frame is
//! damage: recovery resynchronises on the framing, keeps every valid record
//! after it, reports the skipped range, and truncates nothing (see
//! `recover.rs`).
//!
//! Failures (docs/journal.md has the whole argument): an append whose
//! `write` fails is taken back (the segment is truncated to its length
//! before the append), so the segment holds exactly the records of
//! successful appends. When `write(2)` refused for lack of space (ENOSPC,
//! EDQUOT, EFBIG) and the take-back worked, the journal stays usable: the
//! failed records are not acknowledged, and later appends succeed once
//! there is space again. Any other write failure, a failed take-back, and
//! ANY failed `fdatasync` poison the journal: Linux may have dropped dirty
//! pages and marked them clean, so a retry could report success for data
//! that is gone. Every later append fails; the daemon stops acknowledging.
//!
//! File I/O goes through [`io::JournalIo`], so tests inject faults with
//! `fault::FaultyIo` (compiled only for tests: the `fault-injection`
//! feature).
#![forbid(unsafe_code)]

#[cfg(any(test, feature = "fault-injection"))]
pub mod fault;
pub mod io;
mod recover;

pub use recover::{
    replay, scan_segment, Damage, Defect, ReplayReport, SegmentScan, RESYNC_WORK_BASE, RESYNC_WORK_PER_BYTE,
};

use std::fs;
use std::io::Error as IoError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::io::{JournalIo, MappedIo, OsIo, SegmentFile};

use thiserror::Error;

/// Largest payload accepted (a path plus thousands of values fits easily).
pub const RECORD_LEN_MAX: u32 = 1 << 20;
const SEGMENT_MAGIC: &[u8; 8] = b"RRDSJNL1";
const SEGMENT_HEADER_LEN: u64 = 16;
const FRAME_HEADER_LEN: usize = 8;

#[derive(Debug, Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io { path: PathBuf, source: IoError },
    #[error("journal is poisoned after an I/O failure ({0}); no further updates are acknowledged")]
    Poisoned(String),
    #[error("journal record too large: {len} bytes (limit {RECORD_LEN_MAX})")]
    RecordTooLarge { len: usize },
    #[error("journal {path} is not a journal segment (bad header)")]
    BadSegment { path: PathBuf },
}

pub type Result<T, E = JournalError> = std::result::Result<T, E>;

/// One journaled update: a file and the arguments of its `update`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub path: String,
    pub args: Vec<String>,
}

/// When appended records are made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// `fdatasync` before [`Journal::append`] returns.
    Always,
    /// `fdatasync` at most this often (appends return before it).
    Every(Duration),
    /// Never sync (rrdcached's behaviour): a crash can lose acknowledged updates.
    None,
}

/// The path prefix of a flush's undo record ([`Record::undo`]). A NUL
/// never starts a file's key (an absolute path), so an older reader takes
/// the record for one of a file it cannot read and skips it.
pub const UNDO_PREFIX: &str = "\0undo:";
/// The path prefix of a flush's completion record ([`Record::done`]): to an
/// older reader, a FORGET of a file nobody has.
pub const DONE_PREFIX: &str = "\0done:";

/// What a record means (see docs/journal.md, "Flushes and power loss").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordKind<'a> {
    /// Values of an update of `path`.
    Update { path: &'a str, args: &'a [String] },
    /// Forget `path`'s values before this record.
    Forget { path: &'a str },
    /// Before a flush wrote `path`: its live header (`bytes` at `offset`)
    /// as it was, while the file had inode `ino` and length `len`.
    Undo { path: &'a str, offset: u64, len: u64, ino: u64, bytes: Vec<u8> },
    /// The flush of `path` is durable: its earlier undo records are void.
    Done { path: &'a str },
    /// A control record that does not decode (skipped).
    Malformed,
}

impl Record {
    /// The undo record of a flush about to write `path` (see [`RecordKind::Undo`]).
    pub fn undo(path: &str, offset: u64, len: u64, ino: u64, bytes: &[u8]) -> Record {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(bytes.len() * 2);
        for &b in bytes {
            hex.push(DIGITS[usize::from(b >> 4)] as char);
            hex.push(DIGITS[usize::from(b & 15)] as char);
        }
        Record {
            path: format!("{UNDO_PREFIX}{path}"),
            args: vec![offset.to_string(), len.to_string(), ino.to_string(), hex],
        }
    }

    /// The record that voids `path`'s earlier undo records.
    pub fn done(path: &str) -> Record {
        Record { path: format!("{DONE_PREFIX}{path}"), args: Vec::new() }
    }

    /// What this record means.
    pub fn kind(&self) -> RecordKind<'_> {
        if let Some(path) = self.path.strip_prefix(UNDO_PREFIX) {
            let num = |i: usize| self.args.get(i).and_then(|a| a.parse::<u64>().ok());
            let bytes = self.args.get(3).and_then(|h| {
                (h.len() % 2 == 0)
                    .then(|| {
                        (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok()).collect()
                    })
                    .flatten()
            });
            return match (num(0), num(1), num(2), bytes, self.args.len()) {
                (Some(offset), Some(len), Some(ino), Some(bytes), 4) => {
                    RecordKind::Undo { path, offset, len, ino, bytes }
                }
                _ => RecordKind::Malformed,
            };
        }
        if let Some(path) = self.path.strip_prefix(DONE_PREFIX) {
            return RecordKind::Done { path };
        }
        if self.args.is_empty() {
            RecordKind::Forget { path: &self.path }
        } else {
            RecordKind::Update { path: &self.path, args: &self.args }
        }
    }

    /// Encodes the payload (without the frame).
    pub fn encode_payload(&self, out: &mut Vec<u8>) -> Result<()> {
        encode_payload(out, &self.path, self.args.iter().map(String::as_str))
    }

    /// Appends this record framed, as [`Journal::append_encoded`] takes it.
    pub fn encode_frame(&self, out: &mut Vec<u8>) -> Result<()> {
        encode_frame(out, &self.path, self.args.iter().map(String::as_str))
    }

    /// Decodes a payload; `None` if it is malformed.
    pub fn decode_payload(p: &[u8]) -> Option<Record> {
        let mut pos = 0usize;
        let mut take = |n: usize| -> Option<&[u8]> {
            let s = p.get(pos..pos.checked_add(n)?)?;
            pos += n;
            Some(s)
        };
        let u16_at = |b: &[u8]| u16::from_le_bytes([b[0], b[1]]) as usize;
        let path_len = u16_at(take(2)?);
        let path = std::str::from_utf8(take(path_len)?).ok()?.to_string();
        let count = u16_at(take(2)?);
        let mut args = Vec::with_capacity(count.min(4096));
        for _ in 0..count {
            let len = u16_at(take(2)?);
            args.push(std::str::from_utf8(take(len)?).ok()?.to_string());
        }
        if pos != p.len() {
            return None;
        }
        Some(Record { path, args })
    }
}

fn encode_payload<'a, I>(out: &mut Vec<u8>, path: &str, args: I) -> Result<()>
where
    I: IntoIterator<Item = &'a str>,
    I::IntoIter: Clone,
{
    let too_large = |len| JournalError::RecordTooLarge { len };
    let args = args.into_iter();
    let path_len = u16::try_from(path.len()).map_err(|_| too_large(path.len()))?;
    let count = args.clone().count();
    let count = u16::try_from(count).map_err(|_| too_large(count))?;
    out.extend_from_slice(&path_len.to_le_bytes());
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    for a in args {
        let len = u16::try_from(a.len()).map_err(|_| too_large(a.len()))?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(a.as_bytes());
    }
    Ok(())
}

/// Appends one framed record (length, checksum, payload) for `path` and
/// `args` to `out`, without building a [`Record`]: the daemon encodes each
/// update straight from the client's line into the bytes the journal
/// writes. On error `out` is left as it was.
pub fn encode_frame<'a, I>(out: &mut Vec<u8>, path: &str, args: I) -> Result<()>
where
    I: IntoIterator<Item = &'a str>,
    I::IntoIter: Clone,
{
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_LEN]);
    let payload_len = match encode_payload(out, path, args) {
        Ok(()) => out.len() - start - FRAME_HEADER_LEN,
        Err(e) => {
            out.truncate(start);
            return Err(e);
        }
    };
    if payload_len > RECORD_LEN_MAX as usize {
        out.truncate(start);
        return Err(JournalError::RecordTooLarge { len: payload_len });
    }
    let len = (payload_len as u32).to_le_bytes();
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(&out[start + FRAME_HEADER_LEN..]);
    out[start..start + 4].copy_from_slice(&len);
    out[start + 4..start + 8].copy_from_slice(&h.finalize().to_le_bytes());
    Ok(())
}

#[cfg(test)]
fn frame(payload: &[u8], out: &mut Vec<u8>) {
    let len = (payload.len() as u32).to_le_bytes();
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(payload);
    out.extend_from_slice(&len);
    out.extend_from_slice(&h.finalize().to_le_bytes());
    out.extend_from_slice(payload);
}

/// The file name of segment `seq` in a journal directory.
pub fn segment_name(seq: u64) -> String {
    format!("journal.{seq:016x}")
}

fn parse_segment_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("journal.")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// Segment sequence numbers present in `dir`, ascending.
pub fn segments(dir: &Path) -> Result<Vec<u64>> {
    let io_err = |source| JournalError::Io { path: dir.to_path_buf(), source };
    let mut seqs = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        if let Some(seq) = entry.file_name().to_str().and_then(parse_segment_name) {
            seqs.push(seq);
        }
    }
    seqs.sort_unstable();
    Ok(seqs)
}

/// Deletes the segments of `dir` up to and including `seq`, then syncs the
/// directory. For a caller that must not hold the journal meanwhile (the
/// directory sync takes milliseconds): `seq` must be below the current
/// segment's, which only grows.
pub fn remove_segments_through(dir: &Path, seq: u64) -> Result<()> {
    remove_segments_through_with(&OsIo, dir, seq)
}

/// [`remove_segments_through`] with the unlinks and the directory sync
/// through `io`.
pub fn remove_segments_through_with(io: &dyn JournalIo, dir: &Path, seq: u64) -> Result<()> {
    for s in segments(dir)? {
        if s <= seq {
            let path = dir.join(segment_name(s));
            io.remove_segment(&path).map_err(|source| JournalError::Io { path, source })?;
        }
    }
    io.sync_dir(dir).map_err(|source| JournalError::Io { path: dir.to_path_buf(), source })
}

/// The segment being appended to.
pub struct Journal {
    dir: PathBuf,
    io: Arc<dyn JournalIo>,
    file: Arc<dyn SegmentFile>,
    seq: u64,
    len_bytes: u64,
    /// Length of the segment at the last successful sync (or creation).
    synced_len: u64,
    policy: SyncPolicy,
    last_sync: Instant,
    poisoned: Option<String>,
    syncs: u64,
    last_sync_duration: Duration,
    buf: Vec<u8>,
}

/// An `fdatasync` of the current segment taken from the journal by
/// [`Journal::begin_sync`], to run without holding the journal.
pub struct PendingSync {
    file: Arc<dyn SegmentFile>,
    seq: u64,
    /// The segment's length when the sync was taken: what it covers.
    len_bytes: u64,
    took: Duration,
}

impl PendingSync {
    /// Runs the `fdatasync`.
    pub fn run(&mut self) -> std::io::Result<()> {
        let started = Instant::now();
        let r = self.file.sync_data();
        self.took = started.elapsed();
        r
    }
}

/// Whether a failed `write(2)` only said "no room": nothing already in the
/// page cache was touched, so once the partial append is taken back the
/// journal is as sound as before.
fn is_space_error(e: &IoError) -> bool {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    const EFBIG: i32 = 27;
    matches!(e.raw_os_error(), Some(ENOSPC | EDQUOT | EFBIG))
        || matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::FileTooLarge)
}

impl Journal {
    /// Opens a journal in `dir` (created if missing) and starts a new
    /// segment after any existing ones. Call [`replay`] first to recover
    /// what the existing segments hold.
    pub fn open(dir: &Path, policy: SyncPolicy) -> Result<Journal> {
        Journal::open_with(dir, policy, Arc::new(MappedIo::default()))
    }

    /// [`Journal::open`] with segment I/O through `io` (fault injection).
    pub fn open_with(dir: &Path, policy: SyncPolicy, io: Arc<dyn JournalIo>) -> Result<Journal> {
        let io_err = |source| JournalError::Io { path: dir.to_path_buf(), source };
        fs::create_dir_all(dir).map_err(io_err)?;
        let seq = segments(dir)?.last().map_or(1, |s| s + 1);
        let (file, len_bytes) = Self::create_segment(&*io, dir, seq)?;
        Ok(Journal {
            dir: dir.to_path_buf(),
            io,
            file,
            seq,
            len_bytes,
            synced_len: len_bytes,
            policy,
            last_sync: Instant::now(),
            poisoned: None,
            syncs: 0,
            last_sync_duration: Duration::ZERO,
            buf: Vec::new(),
        })
    }

    fn create_segment(io: &dyn JournalIo, dir: &Path, seq: u64) -> Result<(Arc<dyn SegmentFile>, u64)> {
        let path = dir.join(segment_name(seq));
        let mut header = Vec::with_capacity(SEGMENT_HEADER_LEN as usize);
        header.extend_from_slice(SEGMENT_MAGIC);
        header.extend_from_slice(&seq.to_le_bytes());
        let file = io.create_segment(&path, &header).map_err(|source| JournalError::Io { path, source })?;
        Ok((file, SEGMENT_HEADER_LEN))
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    pub fn policy(&self) -> SyncPolicy {
        self.policy
    }

    /// Why the journal refuses appends, if it does.
    pub fn poisoned(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    /// `fdatasync` calls that succeeded so far.
    pub fn sync_count(&self) -> u64 {
        self.syncs
    }

    /// How long the latest successful `fdatasync` took.
    pub fn last_sync_duration(&self) -> Duration {
        self.last_sync_duration
    }

    fn path(&self) -> PathBuf {
        self.dir.join(segment_name(self.seq))
    }

    fn poison(&mut self, why: &IoError) {
        if self.poisoned.is_none() {
            self.poisoned = Some(why.to_string());
        }
    }

    /// Appends `records` with one write. Under [`SyncPolicy::Always`] they
    /// are durable when this returns `Ok`; under `Every`, a sync happens if
    /// the interval has passed.
    ///
    /// On `Err` none of `records` may be acknowledged. A failed write is
    /// taken back (truncated away); under `Always` so is an append whose
    /// sync failed; under `Every` a failed sync leaves the records in place
    /// (earlier acknowledged ones are there too). Whether later appends can
    /// succeed is [`Journal::poisoned`] (see the module doc).
    pub fn append(&mut self, records: &[Record]) -> Result<()> {
        let mut frames = std::mem::take(&mut self.buf);
        frames.clear();
        let encoded = records.iter().try_for_each(|r| r.encode_frame(&mut frames));
        let result = encoded.and_then(|()| self.append_encoded(&frames));
        self.buf = frames;
        result
    }

    /// [`Journal::append`] for records already framed by [`encode_frame`]
    /// (any number, back to back). Same guarantees.
    pub fn append_encoded(&mut self, frames: &[u8]) -> Result<()> {
        self.write_encoded(frames)?;
        match self.policy {
            SyncPolicy::Always => self.sync(),
            SyncPolicy::Every(interval) if self.last_sync.elapsed() >= interval => self.sync(),
            _ => Ok(()),
        }
    }

    /// Writes framed records without syncing, whatever the policy: the
    /// caller decides when to [`Journal::sync`] (a committer that syncs only
    /// when someone waits for an acknowledgement). A failed write is taken
    /// back as in [`Journal::append`]; records written here are durable
    /// only after a successful sync, and a failed sync under
    /// [`SyncPolicy::Always`] takes back everything written since the last
    /// good one.
    pub fn write_encoded(&mut self, frames: &[u8]) -> Result<()> {
        self.write_encoded_parts(&[frames])
    }

    /// [`Journal::write_encoded`] for framed records held in several
    /// buffers, written in order with `writev(2)` (one call when the system
    /// takes them all): a committer that collects records in several
    /// staging buffers appends them without first copying them into one.
    /// Every part must end at a record boundary. Same guarantees.
    pub fn write_encoded_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        if let Some(why) = &self.poisoned {
            return Err(JournalError::Poisoned(why.clone()));
        }
        let total: usize = parts.iter().map(|p| p.len()).sum();
        // On the stack for the usual few parts (no allocation per append).
        const ON_STACK: usize = 64;
        let mut stack = [std::io::IoSlice::new(&[]); ON_STACK];
        let mut heap = Vec::new();
        let non_empty = parts.iter().filter(|p| !p.is_empty());
        let slices: &mut [std::io::IoSlice<'_>] = if parts.len() <= ON_STACK {
            let mut n = 0;
            for p in non_empty {
                stack[n] = std::io::IoSlice::new(p);
                n += 1;
            }
            &mut stack[..n]
        } else {
            heap.extend(non_empty.map(|p| std::io::IoSlice::new(p)));
            &mut heap
        };
        let mut remaining = slices;
        let mut written = 0;
        while written < total {
            let failure = match self.file.write_vectored(remaining) {
                Ok(0) => IoError::new(std::io::ErrorKind::WriteZero, "write(2) wrote nothing"),
                Ok(n) => {
                    written += n;
                    std::io::IoSlice::advance_slices(&mut remaining, n);
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => e,
            };
            // Take the partial append back so the segment ends with the last
            // complete record of a successful append.
            let taken_back = written == 0 || self.file.truncate(self.len_bytes).is_ok();
            if !(taken_back && is_space_error(&failure)) {
                self.poison(&failure);
            }
            return Err(JournalError::Io { path: self.path(), source: failure });
        }
        self.len_bytes += total as u64;
        Ok(())
    }

    /// Time since the last successful sync (or the segment's creation).
    pub fn last_sync_age(&self) -> Duration {
        self.last_sync.elapsed()
    }

    /// Whether everything written is synced.
    pub fn is_synced(&self) -> bool {
        self.len_bytes <= self.synced_len
    }

    /// Makes everything appended so far durable.
    pub fn sync(&mut self) -> Result<()> {
        match self.begin_sync()? {
            None => Ok(()),
            Some(mut pending) => {
                let result = pending.run();
                self.finish_sync(pending, result)
            }
        }
    }

    /// The first half of [`Journal::sync`], for a caller that appends from
    /// several threads under one lock and must not hold that lock for the
    /// length of an `fdatasync`: take this under the lock, [`PendingSync::run`]
    /// it without, then hand it back to [`Journal::finish_sync`] under the
    /// lock. It covers the bytes written before it was taken; appends made
    /// meanwhile stay unsynced. `None` when nothing needs syncing.
    pub fn begin_sync(&self) -> Result<Option<PendingSync>> {
        if let Some(why) = &self.poisoned {
            return Err(JournalError::Poisoned(why.clone()));
        }
        if self.is_synced() {
            return Ok(None);
        }
        Ok(Some(PendingSync {
            file: self.file.clone(),
            seq: self.seq,
            len_bytes: self.len_bytes,
            took: Duration::ZERO,
        }))
    }

    /// Records the outcome of a [`PendingSync`]. A failure poisons (see the
    /// module doc) and, under [`SyncPolicy::Always`], takes back everything
    /// after the last good sync: none of it was acknowledged.
    pub fn finish_sync(&mut self, pending: PendingSync, result: std::io::Result<()>) -> Result<()> {
        let same_segment = pending.seq == self.seq;
        if let Err(source) = result {
            self.poison(&source);
            if self.policy == SyncPolicy::Always && same_segment {
                // Best effort; replay copes either way.
                if self.file.truncate(self.synced_len).is_ok() {
                    self.len_bytes = self.synced_len;
                }
            }
            let path = self.dir.join(segment_name(pending.seq));
            return Err(JournalError::Io { path, source });
        }
        self.syncs += 1;
        self.last_sync_duration = pending.took;
        if same_segment {
            self.synced_len = self.synced_len.max(pending.len_bytes);
        }
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Syncs, then starts a new segment. Returns the sequence number of the
    /// segment just closed: once everything in it (and before it) is in the
    /// RRD files and those are synced, [`Journal::remove_through`] may
    /// delete it.
    ///
    /// A failed creation of the new segment does not poison: appends go on
    /// into the current one (which was just synced), and the next rotation
    /// tries again.
    pub fn rotate(&mut self) -> Result<u64> {
        self.sync()?;
        // The space reserved past the last record goes back, durably,
        // before anything depends on the next segment. A failure here is a
        // failed sync.
        if let Err(source) = self.file.seal() {
            self.poison(&source);
            return Err(JournalError::Io { path: self.path(), source });
        }
        let old = self.seq;
        let (file, len) = Self::create_segment(&*self.io, &self.dir, old + 1)?;
        self.file = file;
        self.seq = old + 1;
        self.len_bytes = len;
        self.synced_len = len;
        Ok(old)
    }

    /// Deletes the segments up to and including `seq` (never the current one).
    pub fn remove_through(&self, seq: u64) -> Result<()> {
        assert!(seq < self.seq, "the current segment is never removed");
        remove_segments_through_with(&*self.io, &self.dir, seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::{Action, FaultPlan, FaultyIo, Op, EIO, ENOSPC};
    use proptest::prelude::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    fn faulty(dir: &Path, policy: SyncPolicy) -> (Journal, Arc<FaultPlan>) {
        let plan = FaultPlan::new();
        let io = Arc::new(FaultyIo::new(Arc::new(OsIo), plan.clone()));
        (Journal::open_with(dir, policy, io).unwrap(), plan)
    }

    fn seg_len(j: &Journal) -> u64 {
        fs::metadata(j.path()).unwrap().len()
    }

    /// (a) Under Always, `append` returns Ok only after an fdatasync that
    /// covered its bytes; when that sync fails the append is an error.
    /// Under every:MS it returns before any sync.
    #[test]
    fn an_append_is_ok_only_after_its_sync() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, plan) = faulty(dir.path(), SyncPolicy::Always);
        for i in 1..=3u64 {
            j.append(&[rec(i as usize)]).unwrap();
            assert_eq!(plan.count(Op::Sync), i, "append {i} returned before its sync");
            assert_eq!(j.sync_count(), i);
        }
        plan.inject(Op::Sync, 4, Action::Fail(EIO));
        assert!(j.append(&[rec(4)]).is_err(), "a failed sync must fail the append");
        let dir = tempfile::tempdir().unwrap();
        let (mut j, plan) = faulty(dir.path(), SyncPolicy::Every(Duration::from_secs(3600)));
        j.append(&[rec(1)]).unwrap();
        assert_eq!(plan.count(Op::Sync), 0);
        j.sync().unwrap();
        assert_eq!(plan.count(Op::Sync), 1);
    }

    /// (b) A write that stops part-way, for every cut point: the append
    /// fails, the segment is back to its length before the append, and
    /// recovery returns exactly the acknowledged records. ENOSPC leaves the
    /// journal usable; EIO poisons it.
    #[test]
    fn a_failed_write_is_taken_back_at_every_cut() {
        let group: Vec<Record> = (10..13).map(rec).collect();
        let mut framed = Vec::new();
        for r in &group {
            let mut p = Vec::new();
            r.encode_payload(&mut p).unwrap();
            frame(&p, &mut framed);
        }
        for cut in 1..framed.len() {
            for errno in [ENOSPC, EIO] {
                let dir = tempfile::tempdir().unwrap();
                let (mut j, plan) = faulty(dir.path(), SyncPolicy::Always);
                j.append(&[rec(1), rec(2)]).unwrap();
                let good = seg_len(&j);
                plan.inject(Op::Write, 2, Action::Short(cut));
                plan.inject(Op::Write, 3, Action::Fail(errno));
                let err = j.append(&group).unwrap_err();
                assert!(matches!(err, JournalError::Io { .. }), "{err}");
                assert_eq!(seg_len(&j), good, "cut {cut}: partial append not taken back");
                assert_eq!(j.len_bytes(), good);
                assert_eq!(j.poisoned().is_some(), errno == EIO, "cut {cut} errno {errno}");
                let r = replay(dir.path()).unwrap();
                assert_eq!(r.records, vec![rec(1), rec(2)], "cut {cut}");
                assert!(r.torn_tail.is_none() && r.corrupt.is_empty());
                if errno == ENOSPC {
                    // Space came back: appends work again and follow the good ones.
                    j.append(&[rec(3)]).unwrap();
                    assert_eq!(replay(dir.path()).unwrap().records, vec![rec(1), rec(2), rec(3)]);
                } else {
                    assert!(matches!(j.append(&[rec(3)]), Err(JournalError::Poisoned(_))));
                }
            }
        }
    }

    /// Records framed in several buffers are appended in the buffers'
    /// order: by one `writev(2)` on the real file system, and, through a
    /// file that writes one buffer per call, by several writes; a failure
    /// in a later buffer takes back the earlier ones too.
    #[test]
    fn records_in_several_buffers_are_appended_in_order_or_taken_back_whole() {
        let framed = |records: &[Record]| {
            let mut out = Vec::new();
            for r in records {
                let mut p = Vec::new();
                r.encode_payload(&mut p).unwrap();
                frame(&p, &mut out);
            }
            out
        };
        let parts = [framed(&[rec(10), rec(11)]), Vec::new(), framed(&[rec(12)]), framed(&[rec(13)])];
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), SyncPolicy::Always).unwrap();
        j.write_encoded_parts(&parts).unwrap();
        j.sync().unwrap();
        assert_eq!(replay(dir.path()).unwrap().records, (10..14).map(rec).collect::<Vec<_>>());

        // Write 1 is `rec(1)`'s; then one write per non-empty buffer.
        for (nth, short) in [(2, true), (3, false), (3, true), (4, false)] {
            let dir = tempfile::tempdir().unwrap();
            let (mut j, plan) = faulty(dir.path(), SyncPolicy::Always);
            j.append(&[rec(1)]).unwrap();
            let good = seg_len(&j);
            if short {
                plan.inject(Op::Write, nth, Action::Short(5));
                plan.inject(Op::Write, nth + 1, Action::Fail(ENOSPC));
            } else {
                plan.inject(Op::Write, nth, Action::Fail(ENOSPC));
            }
            assert!(j.write_encoded_parts(&parts).is_err(), "write {nth}");
            assert_eq!(seg_len(&j), good, "write {nth}: the earlier buffers were not taken back");
            j.append(&[rec(2)]).unwrap();
            assert_eq!(replay(dir.path()).unwrap().records, vec![rec(1), rec(2)], "write {nth}");
        }
    }

    /// (b) If even the take-back fails, the journal is poisoned and the
    /// torn tail stays on disk; recovery drops it and never returns
    /// garbage: what comes back is the acknowledged records followed by at
    /// most a prefix of the failed append (documented in docs/journal.md).
    #[test]
    fn a_torn_append_that_cannot_be_taken_back_is_dropped_by_recovery() {
        let group: Vec<Record> = (10..13).map(rec).collect();
        for cut in [1usize, 7, 8, 30, 60, 90] {
            let dir = tempfile::tempdir().unwrap();
            let (mut j, plan) = faulty(dir.path(), SyncPolicy::Always);
            j.append(&[rec(1)]).unwrap();
            plan.inject(Op::Write, 2, Action::Short(cut));
            plan.inject(Op::Write, 3, Action::Fail(ENOSPC));
            plan.inject(Op::Truncate, 1, Action::Fail(EIO));
            assert!(j.append(&group).is_err());
            assert!(j.poisoned().is_some(), "a failed take-back must poison");
            drop(j);
            let r = replay(dir.path()).unwrap();
            assert_eq!(r.records[0], rec(1));
            assert_eq!(&r.records[1..], &group[..r.records.len() - 1], "cut {cut}");
            assert!(r.corrupt.is_empty());
        }
    }

    /// (c) A failed fdatasync poisons for good, even if the device recovers;
    /// under Always the unacknowledged append is removed from the segment.
    #[test]
    fn a_failed_sync_poisons_and_keeps_only_acknowledged_records() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, plan) = faulty(dir.path(), SyncPolicy::Always);
        j.append(&[rec(1)]).unwrap();
        plan.inject(Op::Sync, 2, Action::Fail(EIO));
        assert!(j.append(&[rec(2)]).is_err());
        assert!(j.poisoned().unwrap().contains("Input/output error"), "{:?}", j.poisoned());
        assert!(matches!(j.append(&[rec(3)]), Err(JournalError::Poisoned(_))));
        assert!(matches!(j.sync(), Ok(()) | Err(JournalError::Poisoned(_))));
        assert!(j.rotate().is_err(), "a poisoned journal does not rotate");
        drop(j);
        assert_eq!(replay(dir.path()).unwrap().records, vec![rec(1)]);

        // Under every:MS a failed background sync poisons as well.
        let dir = tempfile::tempdir().unwrap();
        let (mut j, plan) = faulty(dir.path(), SyncPolicy::Every(Duration::from_secs(3600)));
        j.append(&[rec(1)]).unwrap();
        plan.inject(Op::Sync, 1, Action::Fail(ENOSPC));
        assert!(j.sync().is_err());
        assert!(matches!(j.append(&[rec(2)]), Err(JournalError::Poisoned(_))));
    }

    /// (d) A rotation that cannot create its segment (no space) leaves no
    /// half-made file and does not poison: appends continue in the current
    /// segment, and the next rotation works.
    #[test]
    fn a_failed_rotation_keeps_the_current_segment() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, plan) = faulty(dir.path(), SyncPolicy::Always);
        j.append(&[rec(1)]).unwrap();
        let seq = j.seq();
        plan.inject(Op::Create, 2, Action::Fail(ENOSPC));
        assert!(j.rotate().is_err());
        assert!(j.poisoned().is_none());
        assert_eq!(j.seq(), seq);
        assert_eq!(segments(dir.path()).unwrap(), vec![seq]);
        j.append(&[rec(2)]).unwrap();
        j.rotate().unwrap();
        j.append(&[rec(3)]).unwrap();
        assert_eq!(replay(dir.path()).unwrap().records, vec![rec(1), rec(2), rec(3)]);
    }

    /// (d) ENOSPC that lasts: every append fails with an error (none
    /// acknowledged, nothing left in the file), none poisons, and the first
    /// append after space returns succeeds.
    #[test]
    fn lasting_enospc_refuses_then_recovers() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, plan) = faulty(dir.path(), SyncPolicy::Always);
        j.append(&[rec(1)]).unwrap();
        let good = seg_len(&j);
        plan.inject_from(Op::Write, 2, Action::Fail(ENOSPC));
        for i in 2..6 {
            let e = j.append(&[rec(i)]).unwrap_err();
            assert!(e.to_string().contains("No space left on device"), "{e}");
            assert!(j.poisoned().is_none());
            assert_eq!(seg_len(&j), good);
        }
        plan.clear();
        j.append(&[rec(6)]).unwrap();
        assert_eq!(replay(dir.path()).unwrap().records, vec![rec(1), rec(6)]);
    }

    fn rec(i: usize) -> Record {
        Record { path: format!("dir/f{i}.rrd"), args: vec![format!("{}:{i}:U", 1_000_000_000 + i)] }
    }

    fn frames(records: &[Record]) -> Vec<u8> {
        let mut out = Vec::new();
        records.iter().for_each(|r| r.encode_frame(&mut out).unwrap());
        out
    }

    /// The segments' bytes, oldest first.
    fn segment_bytes(dir: &Path) -> Vec<Vec<u8>> {
        segments(dir).unwrap().iter().map(|&s| fs::read(dir.join(segment_name(s))).unwrap()).collect()
    }

    /// A segment written through one-page windows holds the bytes a
    /// segment written with `write(2)` holds, for groups that cross window
    /// boundaries in every way (a single record across two, a group across
    /// several, one ending exactly at a boundary, writes past
    /// `io::COPY_MAX` that go with pwritev): while open its file reads as
    /// those bytes followed by the reserved zeros; rotated
    /// (sealed) and dropped, it ends at its last record.
    #[test]
    fn a_mapped_segment_holds_what_a_written_one_does() {
        let page = rustix::param::page_size() as u64;
        let groups: Vec<Vec<Record>> =
            (0..150).map(|g| (0..g % 7 + 1).map(|i| rec(g * 10 + i)).collect()).collect();
        // Past io::COPY_MAX: written with pwritev, in one buffer and in many.
        let big = Record { path: "big".into(), args: vec!["9".repeat(io::COPY_MAX + 1)] };
        let many: Vec<Vec<u8>> = (0..12)
            .map(|i| frames(&[Record { path: format!("p{i}"), args: vec!["7".repeat(2000)] }]))
            .collect();
        let many: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        assert!(many.iter().map(|p| p.len()).sum::<usize>() > io::COPY_MAX);
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let ios: [Arc<dyn JournalIo>; 2] = [Arc::new(OsIo), Arc::new(MappedIo::with_window(page))];
        let mut journals: Vec<Journal> = dirs
            .iter()
            .zip(ios)
            .map(|(d, io)| Journal::open_with(d.path(), SyncPolicy::None, io).unwrap())
            .collect();
        let mut crossed = 0;
        for (i, g) in groups.iter().enumerate() {
            let before = journals[1].len_bytes();
            for j in &mut journals {
                j.append(g).unwrap();
                if i == 50 {
                    j.append(std::slice::from_ref(&big)).unwrap();
                }
                if i == 70 {
                    j.write_encoded_parts(&many).unwrap();
                }
                if i == 100 {
                    j.rotate().unwrap();
                }
            }
            let (written, mapped) = (segment_bytes(dirs[0].path()), segment_bytes(dirs[1].path()));
            let (w, m) = (written.last().unwrap(), mapped.last().unwrap());
            if w.len() as u64 > SEGMENT_HEADER_LEN {
                // Reserved to a window's end, or exactly the records after a
                // pwritev that went past the window.
                let whole = (m.len() as u64).is_multiple_of(page);
                assert!(
                    whole || m.len() == w.len(),
                    "group {i}: {} bytes for {} of records",
                    m.len(),
                    w.len()
                );
            }
            assert_eq!(&m[..w.len()], &w[..], "group {i}");
            assert!(m[w.len()..].iter().all(|&b| b == 0), "group {i}");
            assert_eq!(written[..written.len() - 1], mapped[..mapped.len() - 1], "sealed segments");
            crossed += usize::from(before / page != journals[1].len_bytes() / page);
        }
        assert!(crossed > 5, "the groups crossed {crossed} window boundaries");
        drop(journals);
        assert_eq!(segment_bytes(dirs[0].path()), segment_bytes(dirs[1].path()));
        let r = replay(dirs[1].path()).unwrap();
        assert!(r.torn_tail.is_none() && r.unused_tail.is_none() && r.corrupt.is_empty());
        assert_eq!(r.records.len(), groups.iter().map(Vec::len).sum::<usize>() + 1 + many.len());
    }

    /// A failed append into a mapped segment (cut at every byte of a group
    /// that crosses a window boundary, then failed with ENOSPC or EIO) is
    /// taken back as a failed `write(2)` is: the segment ends with the
    /// acknowledged records, ENOSPC leaves the journal usable and the next
    /// append lands right after them, EIO poisons.
    #[test]
    fn a_failed_store_into_a_mapped_segment_is_taken_back() {
        let page = rustix::param::page_size() as u64;
        let group: Vec<Record> = (10..13).map(rec).collect();
        let mut filler = Vec::new();
        let mut len = SEGMENT_HEADER_LEN as usize;
        while len < page as usize - 80 {
            filler.push(rec(100 + filler.len()));
            len += frames(std::slice::from_ref(filler.last().unwrap())).len();
        }
        for cut in (1..120).step_by(7) {
            for errno in [ENOSPC, EIO] {
                let dir = tempfile::tempdir().unwrap();
                let plan = FaultPlan::new();
                let io = Arc::new(FaultyIo::new(Arc::new(MappedIo::with_window(page)), plan.clone()));
                let mut j = Journal::open_with(dir.path(), SyncPolicy::Always, io).unwrap();
                j.append(&filler).unwrap();
                let good = j.len_bytes();
                assert!(good < page && good + 120 > page, "the group crosses the window: {good}");
                plan.inject(Op::Write, 2, Action::Short(cut));
                plan.inject(Op::Write, 3, Action::Fail(errno));
                assert!(j.append(&group).is_err(), "cut {cut}");
                assert_eq!(j.len_bytes(), good);
                assert_eq!(j.poisoned().is_some(), errno == EIO, "cut {cut} errno {errno}");
                if errno == ENOSPC {
                    j.append(&[rec(3)]).unwrap();
                }
                drop(j);
                let r = replay(dir.path()).unwrap();
                let mut want = filler.clone();
                if errno == ENOSPC {
                    want.push(rec(3));
                }
                assert_eq!(r.records, want, "cut {cut} errno {errno}");
                assert!(r.torn_tail.is_none() && r.unused_tail.is_none() && r.corrupt.is_empty(), "{r:?}");
            }
        }
    }

    #[test]
    fn appended_records_replay_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), SyncPolicy::Always).unwrap();
        j.append(&[rec(1), rec(2)]).unwrap();
        j.append(&[rec(3)]).unwrap();
        let old = j.rotate().unwrap();
        j.append(&[rec(4)]).unwrap();
        drop(j);
        let r = replay(dir.path()).unwrap();
        assert_eq!(r.records, vec![rec(1), rec(2), rec(3), rec(4)]);
        assert!(r.torn_tail.is_none() && r.corrupt.is_empty());
        assert_eq!(r.segments, vec![old, old + 1]);
    }

    /// An incomplete record after the committed ones (a torn write: too
    /// short for a header, or a length running past the end) is dropped,
    /// truncated away and reported as a torn tail, not as damage; zeros
    /// there are an unused tail, dropped too; exactly the committed records
    /// come back, and a journal reopened afterwards appends after them.
    #[test]
    fn torn_tail_is_dropped_and_reported() {
        for garbage in [vec![0xffu8; 3], vec![0u8; 20], vec![5, 0, 0, 0, 1, 2, 3, 4, 9]] {
            let dir = tempfile::tempdir().unwrap();
            let mut j = Journal::open(dir.path(), SyncPolicy::Always).unwrap();
            j.append(&[rec(1), rec(2)]).unwrap();
            let good_len = j.len_bytes();
            let path = j.path();
            drop(j);
            let mut f = OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(&garbage).unwrap();
            drop(f);
            let r = replay(dir.path()).unwrap();
            assert_eq!(r.records, vec![rec(1), rec(2)]);
            assert!(r.corrupt.is_empty(), "a torn tail is not damage: {:?}", r.corrupt);
            let tail = if garbage.iter().all(|&b| b == 0) { r.unused_tail } else { r.torn_tail };
            let (_, off, dropped) = tail.expect("tail reported");
            assert_eq!((off, dropped), (good_len, garbage.len() as u64));
            assert_eq!(fs::metadata(&path).unwrap().len(), good_len, "tail truncated");
            let mut j = Journal::open(dir.path(), SyncPolicy::Always).unwrap();
            j.append(&[rec(3)]).unwrap();
            assert_eq!(replay(dir.path()).unwrap().records, vec![rec(1), rec(2), rec(3)]);
        }
    }

    /// Damage in a segment that is not the last is corruption, not a torn
    /// tail, even in that segment's last record, and is reported as such;
    /// damage in the middle of a segment (old or newest) costs only the
    /// damaged record: the records after it come back, and no segment is
    /// truncated.
    #[test]
    fn damage_before_the_last_segment_is_corruption() {
        // (which segment, which record in it) to damage.
        for (seg, which) in [(0, 1), (0, 0), (1, 0)] {
            let dir = tempfile::tempdir().unwrap();
            let mut j = Journal::open(dir.path(), SyncPolicy::Always).unwrap();
            j.append(&[rec(1), rec(2)]).unwrap();
            let first = j.path();
            j.rotate().unwrap();
            j.append(&[rec(3), rec(4), rec(5)]).unwrap();
            let second = j.path();
            drop(j);
            let path = if seg == 0 { &first } else { &second };
            let mut bytes = fs::read(path).unwrap();
            let len = bytes.len();
            let at = if seg == 0 && which == 1 {
                len - 1 // the last byte of the old segment's last record
            } else {
                SEGMENT_HEADER_LEN as usize + 12 // inside the first record's payload
            };
            bytes[at] ^= 0x55;
            fs::write(path, &bytes).unwrap();
            let r = replay(dir.path()).unwrap();
            let want: Vec<Record> = match (seg, which) {
                (0, 1) => vec![rec(1), rec(3), rec(4), rec(5)],
                (0, _) => vec![rec(2), rec(3), rec(4), rec(5)],
                _ => vec![rec(1), rec(2), rec(4), rec(5)],
            };
            assert_eq!(r.records, want, "segment {seg} record {which}");
            assert_eq!(r.corrupt.len(), 1, "{r:?}");
            let d = &r.corrupt[0];
            assert_eq!((d.seq, d.what), (r.segments[seg], Defect::ChecksumMismatch));
            assert!(r.torn_tail.is_none());
            assert_eq!(fs::metadata(path).unwrap().len(), len as u64, "a damaged segment is never truncated");
        }
    }

    #[test]
    fn undo_and_done_records_round_trip() {
        let undo = Record::undo("/d/a.rrd", 728, 4096, 77, &[0, 1, 0xfe, 0xff]);
        let mut p = Vec::new();
        undo.encode_payload(&mut p).unwrap();
        let back = Record::decode_payload(&p).unwrap();
        assert_eq!(
            back.kind(),
            RecordKind::Undo {
                path: "/d/a.rrd",
                offset: 728,
                len: 4096,
                ino: 77,
                bytes: vec![0, 1, 0xfe, 0xff]
            }
        );
        assert_eq!(Record::done("/d/a.rrd").kind(), RecordKind::Done { path: "/d/a.rrd" });
        assert_eq!(rec(1).kind(), RecordKind::Update { path: &rec(1).path, args: &rec(1).args });
        let bad = Record { path: format!("{UNDO_PREFIX}/x"), args: vec!["1".into(), "zz".into()] };
        assert_eq!(bad.kind(), RecordKind::Malformed);
    }

    #[test]
    fn removed_segments_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), SyncPolicy::None).unwrap();
        j.append(&[rec(1)]).unwrap();
        let old = j.rotate().unwrap();
        j.append(&[rec(2)]).unwrap();
        j.sync().unwrap();
        j.remove_through(old).unwrap();
        assert_eq!(replay(dir.path()).unwrap().records, vec![rec(2)]);
    }

    #[test]
    fn frames_encoded_in_place_replay_as_records() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), SyncPolicy::Always).unwrap();
        let mut frames = Vec::new();
        encode_frame(&mut frames, "/a.rrd", ["1:1", "2:2"]).unwrap();
        rec(7).encode_frame(&mut frames).unwrap();
        let before = frames.clone();
        let huge = "9".repeat(70_000);
        assert!(matches!(
            encode_frame(&mut frames, "/b.rrd", [huge.as_str()]),
            Err(JournalError::RecordTooLarge { .. })
        ));
        let many = vec!["1:1"; 400_000];
        assert!(encode_frame(&mut frames, "/b.rrd", many.iter().copied()).is_err());
        assert_eq!(frames, before, "a refused record leaves the buffer as it was");
        j.append_encoded(&frames).unwrap();
        let r = replay(dir.path()).unwrap();
        let first = Record { path: "/a.rrd".into(), args: vec!["1:1".into(), "2:2".into()] };
        assert_eq!(r.records, vec![first, rec(7)]);
    }

    proptest! {
        #[test]
        fn payload_round_trips(path in "[a-z/._0-9]{0,40}", args in proptest::collection::vec("[0-9:.U-]{0,30}", 0..10)) {
            let r = Record { path, args };
            let mut p = Vec::new();
            r.encode_payload(&mut p).unwrap();
            prop_assert_eq!(Record::decode_payload(&p), Some(r));
        }

        #[test]
        fn any_truncation_replays_a_prefix(cut in 0usize..400) {
            let dir = tempfile::tempdir().unwrap();
            let mut j = Journal::open(dir.path(), SyncPolicy::Always).unwrap();
            let all: Vec<Record> = (0..10).map(rec).collect();
            j.append(&all).unwrap();
            let path = j.path();
            drop(j);
            let len = fs::metadata(&path).unwrap().len();
            let keep = (len as usize).saturating_sub(cut).max(SEGMENT_HEADER_LEN as usize);
            OpenOptions::new().write(true).open(&path).unwrap().set_len(keep as u64).unwrap();
            let r = replay(dir.path()).unwrap();
            prop_assert!(r.records.len() <= all.len());
            prop_assert_eq!(&r.records[..], &all[..r.records.len()]);
            prop_assert!(r.corrupt.is_empty());
        }
    }
}
