//! A small built-in disk probe: random 4 KiB reads and writes with
//! `O_DIRECT` at queue depth 1 and 64 (64 threads each keeping one request
//! in flight), like `fio --direct=1 --bs=4k --rw=randread|randwrite
//! --iodepth=N` with the psync engine. The daemon flush benchmark divides
//! these IOPS by the pages a flush reads and writes per file to state the
//! disk's bound on files/s.
//!
//! Invariants: the probe file is fully written (no holes or unwritten
//! extents, which would be read without touching the disk) and removed
//! afterwards; the buffer is page-aligned, as `O_DIRECT` needs.
//!
//! Deliberately absent: sync of writes (`O_DSYNC`): fio's default does not
//! either, and the flushes measured do not sync each page.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::BenchError;

const PAGE: usize = 4096;

/// Measured random 4 KiB IOPS.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct DiskProbe {
    pub read_iops_qd1: f64,
    pub read_iops_qd64: f64,
    pub write_iops_qd1: f64,
    pub write_iops_qd64: f64,
    pub file_bytes: u64,
    pub secs_each: f64,
}

/// A page-aligned 4 KiB buffer (O_DIRECT needs one): the page-aligned
/// window of a two-page vector, which never grows, so never moves.
struct Aligned {
    bytes: Vec<u8>,
    at: usize,
}

impl Aligned {
    fn new(fill: u8) -> Aligned {
        let bytes = vec![fill; 2 * PAGE];
        let at = bytes.as_ptr().align_offset(PAGE);
        assert!(at < PAGE, "a page boundary lies within any two pages");
        Aligned { bytes, at }
    }

    fn slice(&mut self) -> &mut [u8] {
        &mut self.bytes[self.at..self.at + PAGE]
    }
}

fn run(file: &Arc<File>, pages: u64, depth: usize, write: bool, secs: f64) -> Result<f64, BenchError> {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let started = Instant::now();
    let mut handles = Vec::new();
    for t in 0..depth {
        let file = file.clone();
        handles.push(std::thread::spawn(move || -> std::io::Result<u64> {
            let mut buf = Aligned::new(0x5a ^ t as u8);
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let mut n = 0u64;
            while Instant::now() < deadline {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let off = (x % pages) * PAGE as u64;
                if write {
                    file.write_all_at(buf.slice(), off)?;
                } else {
                    file.read_exact_at(buf.slice(), off)?;
                }
                n += 1;
            }
            Ok(n)
        }));
    }
    let mut total = 0u64;
    for h in handles {
        total += h
            .join()
            .map_err(|_| BenchError::Worker("a disk probe thread panicked".into()))?
            .map_err(|e| BenchError::io("random I/O of the disk probe", e))?;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

/// Writes a `file_bytes` file in `dir`, then measures each pattern for
/// `secs` seconds.
pub fn probe(dir: &Path, file_bytes: u64, secs: f64) -> Result<DiskProbe, BenchError> {
    let path = dir.join("disk-probe.dat");
    let pages = (file_bytes / PAGE as u64).max(1024);
    {
        let mut f =
            File::create(&path).map_err(|e| BenchError::io(format!("creating {}", path.display()), e))?;
        let mut chunk = vec![0u8; 1 << 20];
        for (i, b) in chunk.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31).wrapping_add(7);
        }
        let mut left = pages * PAGE as u64;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n]).map_err(|e| BenchError::io(format!("writing {}", path.display()), e))?;
            left -= n as u64;
        }
        f.sync_all().map_err(|e| BenchError::io(format!("syncing {}", path.display()), e))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(|e| BenchError::io(format!("opening {} with O_DIRECT", path.display()), e))?;
    let file = Arc::new(file);
    let result = (|| {
        Ok(DiskProbe {
            read_iops_qd1: run(&file, pages, 1, false, secs)?,
            read_iops_qd64: run(&file, pages, 64, false, secs)?,
            write_iops_qd1: run(&file, pages, 1, true, secs)?,
            write_iops_qd64: run(&file, pages, 64, true, secs)?,
            file_bytes: pages * PAGE as u64,
            secs_each: secs,
        })
    })();
    let _ = std::fs::remove_file(&path);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny probe runs and gives positive rates (tmpfs refuses O_DIRECT,
    /// so it runs under /var/tmp).
    #[test]
    fn probe_measures_something() {
        let dir = tempfile::tempdir_in("/var/tmp").or_else(|_| tempfile::tempdir()).unwrap();
        match probe(dir.path(), 8 << 20, 0.05) {
            Ok(p) => {
                assert!(p.read_iops_qd1 > 0.0 && p.read_iops_qd64 > 0.0);
                assert!(p.write_iops_qd1 > 0.0 && p.write_iops_qd64 > 0.0);
            }
            Err(BenchError::Io { source, .. }) if source.raw_os_error() == Some(libc::EINVAL) => {
                eprintln!("O_DIRECT unsupported here; probe skipped");
            }
            Err(e) => panic!("{e}"),
        }
    }
}
