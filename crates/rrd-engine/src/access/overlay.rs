//! A [`Store`] that captures writes in memory over another store: reads see
//! the base store with the captured writes laid on top, and the base is
//! never written.
//!
//! Why: a caching daemon answers FETCH/INFO with the file as it will be
//! after its pending values are written, without writing them. Applying the
//! pending values with the real update code to an [`OverlayStore`] over the
//! file captures just the rows and live header those values produce; the
//! fetch then reads only the rows it needs, from the file or from memory.
//! The previous method (copy the whole file into a `MemStore`) read every
//! byte of the file for every read command.
//!
//! Invariants:
//! - Captured writes that overlap agree on the bytes they share: a new write
//!   is first copied into every older write it overlaps, so the order in
//!   which overlapping writes are laid on a read does not matter.
//! - The length is the base's, or the end of the furthest write if longer.
//!
//! Deliberately absent: flushing the captured writes to the base (that is
//! the flusher's job, with locking and syncing), and any caching of reads.

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

use crate::store::Store;

#[derive(Debug, Default)]
struct Writes {
    /// Offset -> bytes written there.
    at: BTreeMap<u64, Vec<u8>>,
    /// Length of the longest write (how far back a read must look).
    max_len: u64,
    /// End of the furthest write.
    end: u64,
}

/// Writes kept in memory over a read-only `base`.
#[derive(Debug)]
pub struct OverlayStore<S> {
    base: S,
    writes: Mutex<Writes>,
}

impl<S> OverlayStore<S> {
    pub fn new(base: S) -> OverlayStore<S> {
        OverlayStore { base, writes: Mutex::new(Writes::default()) }
    }

    pub fn base(&self) -> &S {
        &self.base
    }

    /// Bytes captured (counting overlaps once per write).
    pub fn captured_bytes(&self) -> u64 {
        self.writes.lock().expect("overlay lock").at.values().map(|v| v.len() as u64).sum()
    }

    /// The captured writes, by offset.
    pub fn writes(&self) -> Vec<(u64, Vec<u8>)> {
        self.writes.lock().expect("overlay lock").at.iter().map(|(o, b)| (*o, b.clone())).collect()
    }
}

/// Copies the part of `src` (at `src_off`) that overlaps `dst` (at `dst_off`) into `dst`.
fn lay(dst: &mut [u8], dst_off: u64, src: &[u8], src_off: u64) {
    let start = dst_off.max(src_off);
    let end = (dst_off + dst.len() as u64).min(src_off + src.len() as u64);
    if start < end {
        let d = (start - dst_off) as usize;
        let s = (start - src_off) as usize;
        let n = (end - start) as usize;
        dst[d..d + n].copy_from_slice(&src[s..s + n]);
    }
}

impl<S: Store> Store for OverlayStore<S> {
    fn len(&self) -> io::Result<u64> {
        let end = self.writes.lock().expect("overlay lock").end;
        Ok(self.base.len()?.max(end))
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let w = self.writes.lock().expect("overlay lock");
        let read_end = offset.checked_add(buf.len() as u64).ok_or(io::ErrorKind::UnexpectedEof)?;
        let first = offset.saturating_sub(w.max_len);
        let overlapping: Vec<(&u64, &Vec<u8>)> =
            w.at.range(first..read_end).filter(|(o, b)| **o + b.len() as u64 > offset).collect();
        // Covered entirely by one write: no need to touch the base.
        let covered = overlapping.iter().any(|(o, b)| **o <= offset && **o + b.len() as u64 >= read_end);
        if !covered {
            self.base.read_at(buf, offset)?;
        }
        for (o, b) in overlapping {
            lay(buf, offset, b, *o);
        }
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut w = self.writes.lock().expect("overlay lock");
        let end = offset.checked_add(buf.len() as u64).ok_or(io::ErrorKind::InvalidInput)?;
        let first = offset.saturating_sub(w.max_len);
        for (o, b) in w.at.range_mut(first..end) {
            lay(b, *o, buf, offset);
        }
        let keep_longer = w.at.get(&offset).is_some_and(|old| old.len() > buf.len());
        if !keep_longer {
            w.at.insert(offset, buf.to_vec());
        }
        w.max_len = w.max_len.max(buf.len() as u64);
        w.end = w.end.max(end);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemStore;

    /// Reads through the overlay equal reads of a copy the same writes were
    /// applied to, for writes that overlap every which way.
    #[test]
    fn overlay_reads_equal_a_written_copy() {
        let base: Vec<u8> = (0..200u8).collect();
        let copy = MemStore::new(base.clone());
        let overlay = OverlayStore::new(MemStore::new(base.clone()));
        let writes: [(u64, usize, u8); 7] =
            [(10, 8, 1), (14, 8, 2), (10, 4, 3), (0, 30, 4), (50, 1, 5), (49, 3, 6), (12, 2, 7)];
        for (off, len, fill) in writes {
            let buf = vec![fill; len];
            overlay.write_at(&buf, off).unwrap();
            copy.write_at(&buf, off).unwrap();
            for start in 0..60u64 {
                for n in [1usize, 3, 9, 40] {
                    let (mut a, mut b) = (vec![0; n], vec![0; n]);
                    overlay.read_at(&mut a, start).unwrap();
                    copy.read_at(&mut b, start).unwrap();
                    assert_eq!(a, b, "after write at {off}, read {n} at {start}");
                }
            }
        }
        assert_eq!(overlay.base().bytes_now(), base, "the base is never written");
    }

    trait BytesNow {
        fn bytes_now(&self) -> Vec<u8>;
    }

    impl BytesNow for MemStore {
        fn bytes_now(&self) -> Vec<u8> {
            self.0.lock().unwrap().clone()
        }
    }
}
