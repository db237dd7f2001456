//! Recovery: reading every record back, telling a torn tail from damage.
//!
//! A segment is read frame by frame from its header on. The first frame
//! that fails (too few bytes for a header, a length above
//! [`RECORD_LEN_MAX`] or past the end of the file, a checksum mismatch, a
//! payload that does not decode) is classified:
//!
//! - **Unused tail**: in the newest segment, every byte from the bad
//!   offset to the end is zero. That is the space a mapped segment
//!   reserved past its last record (`io::MappedIo`), or what a power loss
//!   leaves in a file whose length reached the disk before its data. It
//!   holds nothing; it is truncated away and reported apart from a torn
//!   tail.
//! - **Torn tail**: only in the newest segment, only when no valid frame
//!   starts anywhere after the bad offset, and only when the bad frame is
//!   *incomplete*: fewer than 8 bytes remain, or its declared length
//!   (at most [`RECORD_LEN_MAX`]) runs past the end of the file, or past
//!   its last non-zero byte (a store into a mapped segment cut short: its
//!   prefix, then the reserved zeros). That is what a crash in the middle
//!   of an append leaves, and such bytes were never acknowledged under
//!   `--sync always` (the answer waits for the append and its sync). They
//!   are truncated away, so the segment ends cleanly.
//! - **Damage**: everything else. A flipped byte in the middle of a segment
//!   is not a torn write: the bytes after it were written (and, under
//!   `--sync always`, acknowledged) before the damage happened. Recovery
//!   resynchronises on the framing: it looks, byte by byte from the bad
//!   offset + 1, for the next offset where a valid frame starts (length at
//!   most [`RECORD_LEN_MAX`] and inside the file, checksum right, payload
//!   decodes), reports the skipped range as a [`Damage`], and goes on from
//!   there, keeping every valid record after it. Nothing is truncated: a
//!   damaged segment stays as it is on disk (the daemon always appends to a
//!   new segment, and deletes this one once its values are in the RRD
//!   files), so the damage is reported again by every replay until then.
//!
//! A frame whose checksum matches but whose payload does not decode has an
//! authentic length (the checksum covers it), so recovery skips exactly
//! that frame instead of scanning through it.
//!
//! The resynchronisation scan is cheap on real damage: at most one `u32`
//! read per byte; a candidate must have a length that is in range and fits
//! in the file (about one random offset in 4096), then a payload whose
//! length fields add up exactly (walked without copying, almost never true
//! of random bytes), and only then is its checksum computed. The total work
//! of all scans in one segment is bounded by [`RESYNC_WORK_PER_BYTE`] times
//! the segment's length (plus a constant); crafted bytes that exhaust it end
//! the scan, and the rest of the segment is reported as damaged
//! ([`Damage::resync_gave_up`]).

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::Path;

use crate::{
    segment_name, segments, JournalError, Record, Result, FRAME_HEADER_LEN, RECORD_LEN_MAX,
    SEGMENT_HEADER_LEN, SEGMENT_MAGIC,
};

/// Work units the resynchronisation scans of one segment may spend per
/// byte of the segment (one unit per checksummed byte, `SHAPE_STEP_WORK`
/// per length field walked), on top of [`RESYNC_WORK_BASE`].
pub const RESYNC_WORK_PER_BYTE: u64 = 64;
/// Work every segment may spend whatever its length: two whole records.
pub const RESYNC_WORK_BASE: u64 = 2 * (RECORD_LEN_MAX as u64 + FRAME_HEADER_LEN as u64);
const SHAPE_STEP_WORK: u64 = 8;

/// Why the frame at a damaged offset failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defect {
    /// Fewer bytes than a frame header remain.
    TruncatedHeader,
    /// The length field is above [`RECORD_LEN_MAX`]: no writer made it.
    LengthOutOfRange,
    /// The length field is in range but runs past the end of the file.
    LengthPastEnd,
    /// The checksum does not match the length and payload.
    ChecksumMismatch,
    /// The checksum matches but the payload does not decode (a writer bug
    /// or deliberate damage; never a torn write).
    MalformedPayload,
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Defect::TruncatedHeader => "incomplete frame header",
            Defect::LengthOutOfRange => "frame length out of range",
            Defect::LengthPastEnd => "frame length runs past the end of the segment",
            Defect::ChecksumMismatch => "checksum mismatch",
            Defect::MalformedPayload => "malformed record with a valid checksum",
        })
    }
}

/// A damaged range that recovery skipped (never a torn tail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Segment sequence number.
    pub seq: u64,
    /// File offset of the first bad frame.
    pub offset: u64,
    /// Bytes skipped from `offset` to the next valid frame (or the end of
    /// the segment when none follows).
    pub skipped_bytes: u64,
    /// What was wrong with the frame at `offset`.
    pub what: Defect,
    /// Intact records kept after this range, up to the next damage or the
    /// end of the segment.
    pub records_after: u64,
    /// The scan stopped on its work bound ([`RESYNC_WORK_PER_BYTE`]) before
    /// the end of the segment: the rest of the segment was not searched.
    pub resync_gave_up: bool,
}

/// One segment's records and findings ([`scan_segment`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SegmentScan {
    /// Intact records, in file order.
    pub records: Vec<Record>,
    /// Damaged ranges, in file order.
    pub damage: Vec<Damage>,
    /// `(offset, bytes)` of a torn tail (newest segment only).
    pub torn_tail: Option<(u64, u64)>,
    /// `(offset, bytes)` of an unused tail: zeros from the end of the last
    /// record to the end of the file (newest segment only).
    pub unused_tail: Option<(u64, u64)>,
}

/// What recovery found.
#[derive(Debug, Default)]
pub struct ReplayReport {
    /// Every intact record, oldest first.
    pub records: Vec<Record>,
    /// `(segment seq, offset, bytes dropped)` of a torn tail in the newest
    /// segment (an incomplete last record, never acknowledged under
    /// `--sync always`); it was truncated away.
    pub torn_tail: Option<(u64, u64, u64)>,
    /// `(segment seq, offset, bytes)` of the newest segment's unused tail
    /// (zeros after its last record: space reserved by a mapped segment);
    /// it was truncated away.
    pub unused_tail: Option<(u64, u64, u64)>,
    /// Damaged ranges in any segment, oldest first; the records after each
    /// were kept and nothing was truncated.
    pub corrupt: Vec<Damage>,
    /// Segments read.
    pub segments: Vec<u64>,
}

impl ReplayReport {
    /// Bytes skipped in damaged ranges (torn tails excluded).
    pub fn damaged_bytes(&self) -> u64 {
        self.corrupt.iter().map(|d| d.skipped_bytes).sum()
    }
}

/// Reads every record of every segment in `dir` (oldest first). A torn
/// tail of the newest segment is truncated away so that appends and later
/// replays see a clean end; damage anywhere is skipped by
/// resynchronisation, reported, and left on disk (see the module doc).
pub fn replay(dir: &Path) -> Result<ReplayReport> {
    let mut report = ReplayReport { segments: segments(dir)?, ..Default::default() };
    let newest = report.segments.last().copied();
    for &seq in &report.segments.clone() {
        let path = dir.join(segment_name(seq));
        let io_err = |source| JournalError::Io { path: path.clone(), source };
        let mut bytes = Vec::new();
        File::open(&path).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(io_err)?;
        let is_newest = Some(seq) == newest;
        if bytes.len() < SEGMENT_HEADER_LEN as usize || &bytes[..8] != SEGMENT_MAGIC {
            if bytes.len() < SEGMENT_HEADER_LEN as usize && is_newest {
                // Crashed while creating the segment: nothing in it was acknowledged.
                report.torn_tail = Some((seq, 0, bytes.len() as u64));
                fs::remove_file(&path).map_err(io_err)?;
                continue;
            }
            return Err(JournalError::BadSegment { path });
        }
        let mut scan = scan_segment(seq, &bytes, is_newest);
        report.records.append(&mut scan.records);
        report.corrupt.append(&mut scan.damage);
        if let Some((off, len)) = scan.unused_tail {
            report.unused_tail = Some((seq, off, len));
        }
        if let Some((off, len)) = scan.torn_tail {
            report.torn_tail = Some((seq, off, len));
        }
        if let Some((off, _)) = scan.torn_tail.or(scan.unused_tail) {
            let f = OpenOptions::new().write(true).open(&path).map_err(io_err)?;
            f.set_len(off).map_err(io_err)?;
            f.sync_all().map_err(io_err)?;
        }
    }
    Ok(report)
}

/// Reads the records of one segment's bytes (`bytes` is the whole file; its
/// 16-byte header is assumed checked and is skipped; offsets are file
/// offsets). `newest` says whether an incomplete last record may be a torn
/// tail. No I/O: [`replay`] truncates a torn tail this reports.
pub fn scan_segment(seq: u64, bytes: &[u8], newest: bool) -> SegmentScan {
    let budget = RESYNC_WORK_BASE + RESYNC_WORK_PER_BYTE * bytes.len() as u64;
    scan_segment_with_budget(seq, bytes, newest, budget).0
}

/// [`scan_segment`] with an explicit work bound; also returns the work spent.
fn scan_segment_with_budget(seq: u64, bytes: &[u8], newest: bool, budget: u64) -> (SegmentScan, u64) {
    let mut out = SegmentScan::default();
    let mut work_left = budget;
    let mut off = (SEGMENT_HEADER_LEN as usize).min(bytes.len());
    while off < bytes.len() {
        let (what, frame_end, skip_to) = match check_frame(bytes, off) {
            Ok((record, end)) => {
                out.records.push(record);
                if let Some(d) = out.damage.last_mut() {
                    d.records_after += 1;
                }
                off = end;
                continue;
            }
            // The checksum authenticated the length: skip exactly this frame.
            Err((Defect::MalformedPayload, end)) => (Defect::MalformedPayload, end, Some(end)),
            Err((what, end)) => match next_valid_frame(bytes, off + 1, &mut work_left) {
                Ok(found) => (what, end, found),
                Err(GaveUp) => {
                    out.damage.push(damage(seq, off, bytes.len(), what, true));
                    break;
                }
            },
        };
        match skip_to {
            Some(next) => {
                out.damage.push(damage(seq, off, next, what, false));
                off = next;
            }
            None => {
                // Trailing zeros are not data: reserved space, or a length
                // that reached the disk before the bytes.
                let data_end = off + bytes[off..].iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                // A checksum mismatch's end is where the frame says it ends.
                let incomplete = matches!(what, Defect::TruncatedHeader | Defect::LengthPastEnd)
                    || (what == Defect::ChecksumMismatch && frame_end > data_end);
                let tail = Some((off as u64, (bytes.len() - off) as u64));
                if newest && data_end == off {
                    out.unused_tail = tail;
                } else if newest && incomplete {
                    out.torn_tail = tail;
                } else {
                    out.damage.push(damage(seq, off, bytes.len(), what, false));
                }
                break;
            }
        }
    }
    (out, budget - work_left)
}

fn damage(seq: u64, from: usize, to: usize, what: Defect, resync_gave_up: bool) -> Damage {
    Damage {
        seq,
        offset: from as u64,
        skipped_bytes: (to - from) as u64,
        what,
        records_after: 0,
        resync_gave_up,
    }
}

/// The frame at `off`: its record and end, or what is wrong with it and
/// the end its length field gives (the end of `bytes` when that is not
/// known or not inside them).
fn check_frame(bytes: &[u8], off: usize) -> std::result::Result<(Record, usize), (Defect, usize)> {
    let Some(head) = bytes.get(off..off + FRAME_HEADER_LEN) else {
        return Err((Defect::TruncatedHeader, bytes.len()));
    };
    let len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
    if len > RECORD_LEN_MAX {
        return Err((Defect::LengthOutOfRange, bytes.len()));
    }
    let end = off + FRAME_HEADER_LEN + len as usize;
    let Some(payload) = bytes.get(off + FRAME_HEADER_LEN..end) else {
        return Err((Defect::LengthPastEnd, bytes.len()));
    };
    if !checksum_ok(head, payload) {
        return Err((Defect::ChecksumMismatch, end));
    }
    match Record::decode_payload(payload) {
        Some(r) => Ok((r, end)),
        None => Err((Defect::MalformedPayload, end)),
    }
}

fn checksum_ok(head: &[u8], payload: &[u8]) -> bool {
    let mut h = crc32fast::Hasher::new();
    h.update(&head[0..4]);
    h.update(payload);
    h.finalize().to_le_bytes() == head[4..8]
}

/// The scan ran out of its work bound.
struct GaveUp;

/// The first offset at or after `from` where a valid frame starts, `None`
/// if there is none before the end of `bytes`.
fn next_valid_frame(
    bytes: &[u8],
    from: usize,
    work_left: &mut u64,
) -> std::result::Result<Option<usize>, GaveUp> {
    let n = bytes.len();
    let mut p = from;
    while p + FRAME_HEADER_LEN <= n {
        let len = u32::from_le_bytes(bytes[p..p + 4].try_into().expect("4 bytes"));
        // Most offsets stop here: a random u32 is above RECORD_LEN_MAX
        // 4095 times in 4096, and zeros (len 0) cannot hold a payload.
        if (4..=RECORD_LEN_MAX).contains(&len) && p + FRAME_HEADER_LEN + len as usize <= n {
            let payload = &bytes[p + FRAME_HEADER_LEN..p + FRAME_HEADER_LEN + len as usize];
            let (shape_ok, steps) = payload_shape(payload);
            let cost = steps * SHAPE_STEP_WORK + if shape_ok { len as u64 } else { 0 };
            *work_left = work_left.checked_sub(cost).ok_or(GaveUp)?;
            if shape_ok
                && checksum_ok(&bytes[p..p + FRAME_HEADER_LEN], payload)
                && Record::decode_payload(payload).is_some()
            {
                return Ok(Some(p));
            }
        }
        p += 1;
    }
    Ok(None)
}

/// Whether the payload's length fields add up to exactly its length, and
/// how many fields were read to find out. No copy, no UTF-8 check: a cheap
/// filter before the checksum.
fn payload_shape(p: &[u8]) -> (bool, u64) {
    let u16_at = |pos: usize| p.get(pos..pos + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let mut steps = 1;
    let Some(path_len) = u16_at(0) else { return (false, steps) };
    let mut pos = 2 + path_len;
    steps += 1;
    let Some(count) = u16_at(pos) else { return (false, steps) };
    pos += 2;
    for _ in 0..count {
        steps += 1;
        let Some(len) = u16_at(pos) else { return (false, steps) };
        pos += 2 + len;
    }
    (pos == p.len(), steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Record `i`: unique, of varied size; every seventh is a FORGET (no
    /// arguments, so its payload ends in zero bytes).
    fn rec(i: usize) -> Record {
        let args = if i % 7 == 3 {
            Vec::new()
        } else {
            (0..1 + i % 4)
                .map(|k| format!("{}:{}:{}", 1_000_000_000 + i * 10 + k, i * k, "7".repeat(i % 23)))
                .collect()
        };
        Record { path: format!("/var/lib/rrd/host{}/if{i}.rrd", i % 5), args }
    }

    fn framed(r: &Record) -> Vec<u8> {
        let mut out = Vec::new();
        r.encode_frame(&mut out).unwrap();
        out
    }

    fn header(seq: u64) -> Vec<u8> {
        let mut h = SEGMENT_MAGIC.to_vec();
        h.extend_from_slice(&seq.to_le_bytes());
        h
    }

    /// Where record `index` lives: segment position, file offset, frame length.
    #[derive(Clone, Copy, Debug)]
    struct Place {
        seg: usize,
        off: usize,
        len: usize,
    }

    /// `n` records split into segments of `per_seg` records (sequence
    /// numbers 1, 2, ...): the files' bytes and each record's place.
    fn build(n: usize, per_seg: usize) -> (Vec<Record>, Vec<Vec<u8>>, Vec<Place>) {
        let records: Vec<Record> = (0..n).map(rec).collect();
        let mut files: Vec<Vec<u8>> = Vec::new();
        let mut places = Vec::new();
        for (i, r) in records.iter().enumerate() {
            if i % per_seg == 0 {
                files.push(header(files.len() as u64 + 1));
            }
            let seg = files.len() - 1;
            let f = framed(r);
            places.push(Place { seg, off: files[seg].len(), len: f.len() });
            files[seg].extend_from_slice(&f);
        }
        (records, files, places)
    }

    fn write_dir(dir: &Path, files: &[Vec<u8>]) {
        for (i, bytes) in files.iter().enumerate() {
            fs::write(dir.join(segment_name(i as u64 + 1)), bytes).unwrap();
        }
    }

    fn file_len(dir: &Path, seg: usize) -> usize {
        fs::metadata(dir.join(segment_name(seg as u64 + 1))).unwrap().len() as usize
    }

    /// One kind of damage, at a position picked from two numbers so that
    /// shrinking works on any layout.
    #[derive(Clone, Debug)]
    enum Hit {
        Flip { seg: usize, pos: usize, mask: u8 },
        Random { seg: usize, pos: usize, bytes: Vec<u8> },
        Zeros { seg: usize, pos: usize, len: usize },
        HugeLength { record: usize, value: u32 },
    }

    fn hit() -> impl Strategy<Value = Hit> {
        prop_oneof![
            (any::<usize>(), any::<usize>(), 1u8..=255).prop_map(|(seg, pos, mask)| Hit::Flip {
                seg,
                pos,
                mask
            }),
            (any::<usize>(), any::<usize>(), proptest::collection::vec(any::<u8>(), 1..48))
                .prop_map(|(seg, pos, bytes)| Hit::Random { seg, pos, bytes }),
            (any::<usize>(), any::<usize>(), 1usize..96).prop_map(|(seg, pos, len)| Hit::Zeros {
                seg,
                pos,
                len
            }),
            (any::<usize>(), RECORD_LEN_MAX + 1..=u32::MAX)
                .prop_map(|(record, value)| Hit::HugeLength { record, value }),
        ]
    }

    /// Applies `h` to the files, never to a segment header (a bad header is
    /// refused as a whole: `JournalError::BadSegment`) and never changing a
    /// file's length.
    fn apply(h: &Hit, files: &mut [Vec<u8>], places: &[Place]) {
        let at = |files: &[Vec<u8>], seg: usize, pos: usize| {
            let s = seg % files.len();
            let body = files[s].len() - SEGMENT_HEADER_LEN as usize;
            (s, SEGMENT_HEADER_LEN as usize + pos % body)
        };
        match h {
            Hit::Flip { seg, pos, mask } => {
                let (s, p) = at(files, *seg, *pos);
                files[s][p] ^= mask;
            }
            Hit::Random { seg, pos, bytes } => {
                let (s, p) = at(files, *seg, *pos);
                let end = (p + bytes.len()).min(files[s].len());
                files[s][p..end].copy_from_slice(&bytes[..end - p]);
            }
            Hit::Zeros { seg, pos, len } => {
                let (s, p) = at(files, *seg, *pos);
                let end = (p + len).min(files[s].len());
                files[s][p..end].fill(0);
            }
            Hit::HugeLength { record, value } => {
                let pl = places[record % places.len()];
                files[pl.seg][pl.off..pl.off + 4].copy_from_slice(&value.to_le_bytes());
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Arbitrary damage (flipped bytes, random or zeroed ranges, huge
        /// length fields) anywhere in any segment: replay returns exactly
        /// the records whose frame bytes were not touched, in order (so
        /// nothing is invented and nothing intact is lost, even after
        /// damage at the very start of a segment or in its last record);
        /// every byte is accounted for as the header, a returned frame, a
        /// reported damaged range or the torn tail; only the newest
        /// segment is ever shortened, and only by a torn tail with nothing
        /// intact after it.
        #[test]
        fn damage_loses_only_the_records_it_touched(
            n in 12usize..70,
            per_seg in 5usize..25,
            hits in proptest::collection::vec(hit(), 1..6),
        ) {
            let (records, clean, places) = build(n, per_seg);
            let mut files = clean.clone();
            for h in &hits {
                apply(h, &mut files, &places);
            }
            let intact = |i: usize| {
                let p = places[i];
                files[p.seg][p.off..p.off + p.len] == clean[p.seg][p.off..p.off + p.len]
            };
            let want: Vec<Record> = (0..n).filter(|&i| intact(i)).map(|i| records[i].clone()).collect();
            let dir = tempfile::tempdir().unwrap();
            write_dir(dir.path(), &files);
            let r = replay(dir.path()).unwrap();
            prop_assert_eq!(&r.records, &want, "hits {:?}", hits);
            let newest = files.len() - 1;
            if want.len() == n {
                prop_assert!(r.corrupt.is_empty() && r.torn_tail.is_none(), "{:?}", r);
            }
            for (seg, bytes) in files.iter().enumerate() {
                let seq = seg as u64 + 1;
                let returned: usize =
                    (0..n).filter(|&i| places[i].seg == seg && intact(i)).map(|i| places[i].len).sum();
                let damaged: u64 = r.corrupt.iter().filter(|d| d.seq == seq).map(|d| d.skipped_bytes).sum();
                let torn = match r.torn_tail {
                    Some((s, off, len)) if s == seq => {
                        prop_assert_eq!(seg, newest, "a torn tail outside the newest segment");
                        prop_assert_eq!(off + len, bytes.len() as u64);
                        let last_intact = (0..n).filter(|&i| places[i].seg == seg && intact(i)).map(|i| places[i].off + places[i].len).max();
                        prop_assert!(off as usize >= last_intact.unwrap_or(0), "torn tail over an intact record");
                        prop_assert_eq!(file_len(dir.path(), seg), off as usize, "torn tail not truncated");
                        len
                    }
                    _ => {
                        prop_assert_eq!(file_len(dir.path(), seg), bytes.len(), "segment {} shortened", seq);
                        0
                    }
                };
                prop_assert_eq!(
                    SEGMENT_HEADER_LEN + returned as u64 + damaged + torn,
                    bytes.len() as u64,
                    "segment {} bytes not accounted for: {:?}", seq, r
                );
                for d in r.corrupt.iter().filter(|d| d.seq == seq) {
                    prop_assert!(d.offset >= SEGMENT_HEADER_LEN && d.offset + d.skipped_bytes <= bytes.len() as u64);
                    prop_assert!(!d.resync_gave_up, "honest damage exhausted the work bound");
                }
            }
            prop_assert_eq!(r.damaged_bytes(), r.corrupt.iter().map(|d| d.skipped_bytes).sum::<u64>());
        }
    }

    /// Every truncation point inside the last record of the newest segment
    /// (a crash during the append) replays exactly the records before it,
    /// is reported as a torn tail (not damage), is truncated away, and a
    /// second replay finds a clean end. The same record cut at any byte
    /// and followed by zeros to the end of the file (a store into a mapped
    /// segment cut short) is a torn tail too. Zeros alone after the last
    /// complete record (space a mapped segment reserved, or a file length
    /// that reached the disk before its data) are an unused tail, not a
    /// torn one; both are truncated away.
    #[test]
    fn every_truncation_of_the_last_record_is_a_torn_tail() {
        let (records, clean, places) = build(20, 8);
        let last = *places.last().unwrap();
        let newest = clean.len() - 1;
        let seq = newest as u64 + 1;
        for cut in last.off..last.off + last.len {
            let mut files = clean.clone();
            files[newest].truncate(cut);
            let dir = tempfile::tempdir().unwrap();
            write_dir(dir.path(), &files);
            let r = replay(dir.path()).unwrap();
            assert_eq!(r.records, &records[..19], "cut at {cut}");
            if cut == last.off {
                assert!(r.torn_tail.is_none(), "a clean end is not torn");
            } else {
                assert_eq!(
                    r.torn_tail,
                    Some((seq, last.off as u64, (cut - last.off) as u64)),
                    "cut at {cut}"
                );
            }
            assert!(r.corrupt.is_empty(), "cut at {cut}: {:?}", r.corrupt);
            assert_eq!(file_len(dir.path(), newest), last.off);
            let again = replay(dir.path()).unwrap();
            assert_eq!((again.records.len(), again.torn_tail, again.corrupt.len()), (19, None, 0));
        }
        let reserved = clean[newest].len() + 4096;
        for cut in last.off + 1..last.off + last.len {
            let mut files = clean.clone();
            files[newest][cut..].fill(0);
            files[newest].resize(reserved, 0);
            let dir = tempfile::tempdir().unwrap();
            write_dir(dir.path(), &files);
            let r = replay(dir.path()).unwrap();
            assert_eq!(r.records, &records[..19], "stored up to {cut}");
            if files[newest][last.off..cut].iter().all(|&b| b == 0) {
                assert_eq!(r.unused_tail, Some((seq, last.off as u64, (reserved - last.off) as u64)));
            } else {
                assert_eq!(r.torn_tail, Some((seq, last.off as u64, (reserved - last.off) as u64)), "{cut}");
            }
            assert!(r.corrupt.is_empty(), "stored up to {cut}: {:?}", r.corrupt);
            assert_eq!(file_len(dir.path(), newest), last.off);
        }
        for zeros in [1usize, 7, 8, 100, 5000] {
            let mut files = clean.clone();
            let grown = files[newest].len() + zeros;
            files[newest].resize(grown, 0);
            let dir = tempfile::tempdir().unwrap();
            write_dir(dir.path(), &files);
            let r = replay(dir.path()).unwrap();
            assert_eq!(r.records, records);
            assert_eq!(r.unused_tail, Some((seq, clean[newest].len() as u64, zeros as u64)));
            assert!(r.torn_tail.is_none() && r.corrupt.is_empty());
            assert_eq!(file_len(dir.path(), newest), clean[newest].len());
            let again = replay(dir.path()).unwrap();
            assert_eq!((again.records.len(), again.unused_tail), (20, None));
        }
    }

    /// A length field set to a huge value, to a value in range that runs
    /// past the end, or to a wrong value that fits, in the middle of a
    /// segment (newest or older): only that record is lost, the damage is
    /// reported at its offset with exactly its frame skipped, and nothing
    /// is truncated.
    #[test]
    fn a_bad_length_mid_segment_loses_only_that_record() {
        let (records, clean, places) = build(30, 10);
        for k in [4usize, 25] {
            let pl = places[k];
            let real = (pl.len - FRAME_HEADER_LEN) as u32;
            for (value, what) in [
                (u32::MAX, Defect::LengthOutOfRange),
                (RECORD_LEN_MAX + 1, Defect::LengthOutOfRange),
                (RECORD_LEN_MAX, Defect::LengthPastEnd),
                (real + 1, Defect::ChecksumMismatch),
                (real - 1, Defect::ChecksumMismatch),
            ] {
                let mut files = clean.clone();
                files[pl.seg][pl.off..pl.off + 4].copy_from_slice(&value.to_le_bytes());
                let dir = tempfile::tempdir().unwrap();
                write_dir(dir.path(), &files);
                let r = replay(dir.path()).unwrap();
                let mut want = records.clone();
                want.remove(k);
                assert_eq!(r.records, want, "record {k}, length {value}");
                assert!(r.torn_tail.is_none());
                assert_eq!(
                    r.corrupt,
                    vec![Damage {
                        seq: pl.seg as u64 + 1,
                        offset: pl.off as u64,
                        skipped_bytes: pl.len as u64,
                        what,
                        records_after: places[k + 1..].iter().filter(|p| p.seg == pl.seg).count() as u64,
                        resync_gave_up: false,
                    }]
                );
                for (seg, f) in files.iter().enumerate() {
                    assert_eq!(file_len(dir.path(), seg), f.len());
                }
            }
        }
    }

    /// A last frame of the newest segment that is complete (its length fits
    /// in the file) but bad is damage, not a torn tail, and its bytes are
    /// left on disk: a flipped byte in the last record (its last byte, or
    /// one in its middle with reserved zeros after the record), and an
    /// over-long length in the last record (no writer makes one).
    #[test]
    fn a_complete_bad_last_frame_is_damage_not_a_torn_tail() {
        let (records, clean, places) = build(12, 12);
        let last = *places.last().unwrap();
        for (name, what) in [
            ("flipped byte", Defect::ChecksumMismatch),
            ("flipped byte, zeros after", Defect::ChecksumMismatch),
            ("huge length", Defect::LengthOutOfRange),
        ] {
            let mut files = clean.clone();
            let f = &mut files[0];
            match name {
                "flipped byte" => f[last.off + last.len - 1] ^= 1,
                "flipped byte, zeros after" => {
                    f[last.off + last.len / 2] ^= 1;
                    f.resize(last.off + last.len + 100, 0);
                }
                _ => f[last.off..last.off + 4].copy_from_slice(&u32::MAX.to_le_bytes()),
            }
            let dir = tempfile::tempdir().unwrap();
            write_dir(dir.path(), &files);
            let r = replay(dir.path()).unwrap();
            assert_eq!(r.records, &records[..11], "{name}");
            assert!(r.torn_tail.is_none(), "{name}: reported as torn");
            assert_eq!(r.corrupt.len(), 1, "{name}");
            let d = &r.corrupt[0];
            assert_eq!(
                (d.offset, d.skipped_bytes, d.what, d.records_after),
                (last.off as u64, (files[0].len() - last.off) as u64, what, 0)
            );
            assert_eq!(file_len(dir.path(), 0), files[0].len(), "{name}: truncated");
        }
    }

    /// An incomplete last record of an OLDER segment is damage (only the
    /// newest segment can end in a torn append), and is not truncated.
    #[test]
    fn an_incomplete_record_ending_an_older_segment_is_damage() {
        let (records, clean, places) = build(20, 10);
        let last0 = places[9];
        let mut files = clean.clone();
        files[0].truncate(last0.off + 5);
        let dir = tempfile::tempdir().unwrap();
        write_dir(dir.path(), &files);
        let r = replay(dir.path()).unwrap();
        let mut want = records.clone();
        want.remove(9);
        assert_eq!(r.records, want);
        assert!(r.torn_tail.is_none());
        assert_eq!(r.corrupt.len(), 1);
        assert_eq!(
            (r.corrupt[0].seq, r.corrupt[0].offset, r.corrupt[0].skipped_bytes),
            (1, last0.off as u64, 5)
        );
        assert_eq!(r.corrupt[0].what, Defect::TruncatedHeader);
        assert_eq!(file_len(dir.path(), 0), last0.off + 5);
    }

    /// A frame whose checksum matches but whose payload does not decode is
    /// skipped exactly (its checksum vouches for its length), in the middle
    /// of a segment and at its end (where it is damage, never torn).
    #[test]
    fn a_malformed_payload_with_a_valid_checksum_skips_exactly_its_frame() {
        let bad = {
            // Claims a 200-byte path in a 6-byte payload.
            let payload = [200u8, 0, b'a', b'b', 0, 0];
            let mut h = crc32fast::Hasher::new();
            h.update(&(payload.len() as u32).to_le_bytes());
            h.update(&payload);
            let mut f = (payload.len() as u32).to_le_bytes().to_vec();
            f.extend_from_slice(&h.finalize().to_le_bytes());
            f.extend_from_slice(&payload);
            f
        };
        for at_end in [false, true] {
            let mut bytes = header(1);
            let mut want = Vec::new();
            for i in 0..4 {
                if i == 2 && !at_end {
                    bytes.extend_from_slice(&bad);
                }
                bytes.extend_from_slice(&framed(&rec(i)));
                want.push(rec(i));
            }
            let bad_off = if at_end {
                bytes.len()
            } else {
                bytes.len() - framed(&rec(3)).len() - framed(&rec(2)).len() - bad.len()
            };
            if at_end {
                bytes.extend_from_slice(&bad);
            }
            let s = scan_segment(1, &bytes, true);
            assert_eq!(s.records, want, "at end: {at_end}");
            assert_eq!(s.torn_tail, None);
            assert_eq!(s.damage.len(), 1);
            let d = &s.damage[0];
            assert_eq!(
                (d.offset, d.skipped_bytes, d.what),
                (bad_off as u64, bad.len() as u64, Defect::MalformedPayload)
            );
            assert_eq!(d.records_after, if at_end { 0 } else { 2 });
        }
    }

    /// The resynchronisation scan is cheap on honest damage: a megabyte of
    /// random bytes before one valid record costs well under one work unit
    /// per byte (almost no offset gets as far as a checksum), and the
    /// record after it is found.
    #[test]
    fn resync_over_random_bytes_is_cheap() {
        let mut bytes = header(1);
        bytes.extend_from_slice(&rrd_testkit::Rng::new(0x9e37_79b9_7f4a_7c15).bytes(1 << 20));
        let garbage_end = bytes.len();
        bytes.extend_from_slice(&framed(&rec(1)));
        let (s, work) = scan_segment_with_budget(1, &bytes, true, u64::MAX);
        assert_eq!(s.records, vec![rec(1)]);
        assert_eq!(s.damage.len(), 1);
        assert_eq!(s.damage[0].offset + s.damage[0].skipped_bytes, garbage_end as u64);
        assert!(work < bytes.len() as u64, "{work} work units for {} bytes", bytes.len());
    }

    /// The work bound holds against crafted bytes: frames whose length
    /// fields add up (so each needs a checksum) but whose checksums are
    /// wrong, back to back. With a bound below their total size the scan
    /// stops, reports the rest of the segment as damaged with
    /// `resync_gave_up`, and never calls it a torn tail.
    #[test]
    fn resync_stops_at_its_work_bound() {
        let mut bytes = header(1);
        let payload = {
            let mut p = Vec::new();
            rec(1).encode_payload(&mut p).unwrap();
            p
        };
        for _ in 0..200 {
            bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&[1, 2, 3, 4]);
            bytes.extend_from_slice(&payload);
        }
        bytes.extend_from_slice(&framed(&rec(2)));
        let (full, work) = scan_segment_with_budget(1, &bytes, true, u64::MAX);
        assert_eq!(full.records, vec![rec(2)], "unbounded, the scan reaches the valid record");
        let (cut, spent) = scan_segment_with_budget(1, &bytes, true, work / 2);
        assert!(spent <= work / 2);
        assert!(cut.records.is_empty() && cut.torn_tail.is_none());
        assert_eq!(cut.damage.len(), 1);
        assert!(cut.damage[0].resync_gave_up);
        assert_eq!(cut.damage[0].offset + cut.damage[0].skipped_bytes, bytes.len() as u64);
        // The default bound is far above what this needs.
        assert!(work < RESYNC_WORK_PER_BYTE * bytes.len() as u64);
        assert_eq!(scan_segment(1, &bytes, true).records, vec![rec(2)]);
    }
}
