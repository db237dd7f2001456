//! Where the bytes of one RRD file live. The engine reads and writes through
//! [`Store`] at explicit offsets, so the caller chooses the I/O policy: a
//! plain file with pread/pwrite, a memory buffer (tests, fuzzing, restore),
//! or later a page-aware store that prefetches what an update will touch.
//!
//! Deliberately absent: any buffering or readahead. A store does exactly the
//! reads and writes it is asked for.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

// `len` is the file length, an I/O query; an `is_empty` would mean nothing here.
#[allow(clippy::len_without_is_empty)]
pub trait Store {
    /// Length of the file in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Fills `buf` from `offset`; a short file is an `UnexpectedEof` error.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at `offset`.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
}

impl Store for File {
    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, buf, offset)
    }
}

/// A file held in memory. Writes past the end grow it.
#[derive(Debug, Default)]
pub struct MemStore(pub Mutex<Vec<u8>>);

impl MemStore {
    pub fn new(bytes: Vec<u8>) -> MemStore {
        MemStore(Mutex::new(bytes))
    }
    pub fn into_inner(self) -> Vec<u8> {
        self.0.into_inner().expect("mem store lock")
    }
}

impl Store for MemStore {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.lock().expect("mem store lock").len() as u64)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let data = self.0.lock().expect("mem store lock");
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let end = start.checked_add(buf.len()).ok_or(io::ErrorKind::UnexpectedEof)?;
        if end > data.len() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.copy_from_slice(&data[start..end]);
        Ok(())
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut data = self.0.lock().expect("mem store lock");
        let start = offset as usize;
        let end = start + buf.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[start..end].copy_from_slice(buf);
        Ok(())
    }
}
