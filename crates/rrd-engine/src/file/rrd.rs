//! An open RRD: its validated header (which carries the file's layout) and
//! the store its bytes live in. Reading rows and writing rows and the live header go through
//! here, so every command shares one notion of where things are.

use std::fs::File;
use std::path::{Path, PathBuf};

use rrd_format::{Header, Layout, StatHead};

use crate::error::{Error, Result};
use crate::store::Store;

/// Bytes read first when opening: one page, which holds the whole header
/// of most files.
const FIRST_READ_LEN: u64 = 4096;

/// An open file. Any `Header` is valid by construction (decoded or built
/// through `Header::from_parts`), so an `Rrd` can be assembled from a kept
/// header and a store, as the daemon's merged reads and the batch do; a
/// store shorter than the layout says fails its reads, it is never indexed
/// past its end.
pub struct Rrd<S: Store = File> {
    pub path: PathBuf,
    pub store: S,
    pub header: Header,
}

impl Rrd<File> {
    /// Opens a file for reading (`write == false`) or reading and writing,
    /// and reads and validates its header. Reads the header only, with
    /// readahead off (`POSIX_FADV_RANDOM`, given before the first read):
    /// every command reads exactly the ranges it asks for, so readahead
    /// could only pull in pages nobody needs.
    pub fn open(path: &Path, write: bool) -> Result<Rrd<File>> {
        Rrd::open_in(&crate::root::Root::Anywhere, path, write)
    }

    /// [`Rrd::open`] through `root` (beneath a confined caller's directory).
    pub fn open_in(root: &crate::root::Root, path: &Path, write: bool) -> Result<Rrd<File>> {
        let file =
            root.open(path, write).map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
        let _ = crate::pagecache::advise(&file, crate::pagecache::Advice::Random, 0, 0);
        // Held until the file is closed (when the Rrd is dropped).
        lock_file(&file, path, write, false, Locking::from_env())?;
        Rrd::from_store(path, file)
    }
}

impl<S: Store> Rrd<S> {
    pub fn from_store(path: &Path, store: S) -> Result<Rrd<S>> {
        let io_err = |source| Error::Io { path: path.to_path_buf(), source };
        let fmt_err = |source| Error::Format { path: path.to_path_buf(), source };
        let file_len = store.len().map_err(io_err)?;
        // One read covers the whole header of most files (a page); a larger
        // header costs a second read of the rest.
        let first_len = FIRST_READ_LEN.min(file_len) as usize;
        let mut buf = vec![0u8; first_len];
        store.read_at(&mut buf, 0).map_err(io_err)?;
        let stat = StatHead::decode(&buf).map_err(fmt_err)?;
        let header_len = stat.header_len();
        if header_len > file_len {
            return Err(fmt_err(rrd_format::FormatError::Truncated {
                what: "header",
                need: header_len,
                have: file_len,
            }));
        }
        if header_len as usize > buf.len() {
            let have = buf.len();
            buf.resize(header_len as usize, 0);
            store.read_at(&mut buf[have..], have as u64).map_err(io_err)?;
        }
        let header = Header::decode(&buf, file_len).map_err(fmt_err)?;
        Ok(Rrd { path: path.to_path_buf(), store, header })
    }

    /// Where every section of the file lives.
    pub fn layout(&self) -> &Layout {
        self.header.layout()
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::Io { path: self.path.clone(), source }
    }

    /// Reads `count` consecutive rows of RRA `rra_index` starting at
    /// `row_index` (which must not wrap).
    pub fn read_rows(&self, rra_index: usize, row_index: u64, count: u64) -> Result<Vec<f64>> {
        assert!(row_index + count <= self.layout().row_counts[rra_index]);
        let mut buf = vec![0u8; (count * self.layout().row_len()) as usize];
        if count > 0 {
            let off = self.layout().row_off(rra_index, row_index);
            self.store.read_at(&mut buf, off).map_err(|e| self.io(e))?;
        }
        Ok(rrd_format::decode_values(&buf))
    }

    /// Reads a whole archive, rows in file order (not time order).
    pub fn read_rra(&self, rra_index: usize) -> Result<Vec<f64>> {
        self.read_rows(rra_index, 0, self.layout().row_counts[rra_index])
    }

    /// Writes one row (one value per DS).
    pub fn write_row(&self, rra_index: usize, row_index: u64, values: &[f64]) -> Result<()> {
        assert_eq!(values.len() as u64, self.layout().ds_count);
        let mut buf = Vec::with_capacity(values.len() * 8);
        rrd_format::encode_values(values, &mut buf);
        let off = self.layout().row_off(rra_index, row_index);
        self.store.write_at(&buf, off).map_err(|e| self.io(e))
    }

    /// Writes the live part of the header from `self.header`.
    /// Writes the live header and returns the bytes written.
    pub fn write_live(&self) -> Result<Vec<u8>> {
        let bytes = self.header.encode_live();
        self.store.write_at(&bytes, self.layout().live_head_off).map_err(|e| self.io(e))?;
        Ok(bytes)
    }
}

/// Opens `path` read-only and runs `read` on it, then drops from the page
/// cache every page the read brought in that was not cached before.
///
/// Why: a `dump` or `fetch` of a cold file would otherwise leave its pages
/// behind and evict the hot header and row pages of files being updated
/// (the LISA '07 MRTG paper: fetch and graph pollute the cache). Pages that were resident
/// before (hot pages the update path uses) stay.
pub fn read_leaving_no_residue<T>(path: &Path, read: impl FnOnce(&Rrd<&File>) -> Result<T>) -> Result<T> {
    let file = File::open(path).map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
    let _ = crate::pagecache::advise(&file, crate::pagecache::Advice::Random, 0, 0);
    lock_file(&file, path, false, false, Locking::from_env())?;
    let before = crate::pagecache::resident_pages(&file).ok();
    let result = Rrd::from_store(path, &file).and_then(|rrd| read(&rrd));
    if let Some(before) = before {
        let page = crate::pagecache::page_size();
        let mut run_start: Option<u64> = None;
        // The residency snapshot has one entry per page of the file.
        let len_pages = before.len() as u64;
        for p in 0..=len_pages {
            let was_cold = p < len_pages && !before.get(p as usize).copied().unwrap_or(false);
            match (was_cold, run_start) {
                (true, None) => run_start = Some(p),
                (false, Some(s)) => {
                    let _ = crate::pagecache::advise(
                        &file,
                        crate::pagecache::Advice::DontNeed,
                        s * page,
                        (p - s) * page,
                    );
                    run_start = None;
                }
                _ => {}
            }
        }
    }
    result
}

/// How commands lock files, as rrdtool 1.7's `RRD_LOCKING` says: `try`
/// (the default: fail at once with "could not lock RRD"), `block` (wait),
/// or `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locking {
    None,
    Try,
    Block,
}

impl Locking {
    /// From the `RRD_LOCKING` environment variable (default `try`).
    pub fn from_env() -> Locking {
        match std::env::var("RRD_LOCKING").as_deref() {
            Ok("none") => Locking::None,
            Ok("block") => Locking::Block,
            _ => Locking::Try,
        }
    }
}

static PROCESS_LOCKS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every lock [`lock_file`] takes from now on a POSIX process lock
/// (`F_SETLK`), as librrd's are, instead of an open-file-description lock.
/// For the drop-in librrd: programs loading it (rrdcached's flush and
/// request threads) rely on their threads never conflicting with each
/// other, which librrd's process locks guarantee.
pub fn use_process_locks() {
    PROCESS_LOCKS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Takes (`exclusive`: a write lock, else a read lock) or releases
/// (`unlock`) a POSIX record lock on the whole file, as rrdtool does around
/// every command, so that rrdtool and rrdscale never interleave the
/// read-modify-write of one file. The lock also ends when the file is closed.
pub fn lock_file(file: &File, path: &Path, exclusive: bool, unlock: bool, mode: Locking) -> Result<()> {
    use rrd_sys::lock::{is_conflict, ofd_lock, process_lock, LockKind};
    if mode == Locking::None {
        return Ok(());
    }
    let kind = if unlock {
        LockKind::Unlock
    } else if exclusive {
        LockKind::Exclusive
    } else {
        LockKind::Shared
    };
    // Open-file-description locks: they conflict with rrdtool's POSIX locks,
    // but are not shared by every descriptor of the process (a reader thread
    // closing its own descriptor must not drop a flusher's lock).
    let lock = if PROCESS_LOCKS.load(std::sync::atomic::Ordering::Relaxed) { process_lock } else { ofd_lock };
    match lock(file, kind, mode == Locking::Block) {
        Ok(()) => Ok(()),
        Err(e) if is_conflict(&e) => Err(Error::Locked),
        Err(e) => Err(Error::Io { path: path.to_path_buf(), source: e }),
    }
}
