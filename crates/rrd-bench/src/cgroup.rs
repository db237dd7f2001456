//! A memory cgroup for one benchmark side, so that its page cache is charged
//! to a budget: the process's own memory cgroup gets a child
//! `rrdscale-bench-<pid>-<n>` with the limit, the worker moves itself in,
//! and the parent removes the child when the worker is gone.
//!
//! cgroup v1 (a `memory` hierarchy, `memory.limit_in_bytes`) is used when
//! mounted (as on the machines docs/BENCHMARKS.md measured); otherwise cgroup v2
//! (`memory.max`), which needs the memory controller enabled for children
//! of the process's cgroup.
//!
//! Invariants: a cgroup this module created is removed on drop (after
//! reclaiming its charges with `memory.force_empty` on v1), also when the
//! run fails. Deliberately absent: swap limits (the machines here have no
//! swap) and any other controller.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::BenchError;

pub use rrd_engine::cgroup::CgroupVersion as Version;

/// A child memory cgroup with a limit, removed on drop.
#[derive(Debug)]
pub struct MemoryCgroup {
    pub path: PathBuf,
    pub version: Version,
    pub limit_bytes: u64,
}

/// Peak usage and limit hits of a cgroup, read before it is removed.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub max_usage_bytes: Option<u64>,
    pub failcnt: Option<u64>,
}

/// Where the memory cgroup of this process lives in the file system
/// (the engine's resolver, which its memory budgets use too).
pub fn own_memory_cgroup() -> Result<(PathBuf, Version), BenchError> {
    rrd_engine::cgroup::own_memory_cgroup()
        .map(|c| (c.path, c.version))
        .map_err(|e| BenchError::Cgroup(e.to_string()))
}

fn write(path: &Path, value: &str) -> Result<(), BenchError> {
    fs::write(path, value)
        .map_err(|e| BenchError::Cgroup(format!("cannot write '{value}' to {}: {e}", path.display())))
}

impl MemoryCgroup {
    /// Creates `<own cgroup>/<name>` with a memory limit of `limit_bytes`.
    pub fn create(name: &str, limit_bytes: u64) -> Result<MemoryCgroup, BenchError> {
        let (own, version) = own_memory_cgroup()?;
        let path = own.join(name);
        fs::create_dir(&path).map_err(|e| {
            BenchError::Cgroup(format!(
                "cannot create the cgroup {} ({e}); a memory budget needs root and a writable cgroup hierarchy",
                path.display()
            ))
        })?;
        let cg = MemoryCgroup { path, version, limit_bytes };
        let file = version.limit_file();
        if !cg.path.join(file).exists() {
            return Err(BenchError::Cgroup(format!(
                "{} has no {file}: the memory controller is not enabled for children of {}",
                cg.path.display(),
                own.display()
            )));
        }
        write(&cg.path.join(file), &limit_bytes.to_string())?;
        Ok(cg)
    }

    /// Moves process `pid` (all its threads) into the cgroup at `path`.
    pub fn enter(path: &Path, pid: u32) -> Result<(), BenchError> {
        write(&path.join("cgroup.procs"), &pid.to_string())
    }

    /// Peak usage and how often the limit was hit.
    pub fn usage(&self) -> Usage {
        let read = |f: &str| fs::read_to_string(self.path.join(f)).ok().and_then(|s| s.trim().parse().ok());
        match self.version {
            Version::V1 => {
                Usage { max_usage_bytes: read("memory.max_usage_in_bytes"), failcnt: read("memory.failcnt") }
            }
            Version::V2 => Usage { max_usage_bytes: read("memory.peak"), failcnt: None },
        }
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // Charges would otherwise move to the parent cgroup; dropping them
        // also keeps one side's cache from helping the next.
        if self.version == Version::V1 {
            let _ = fs::write(self.path.join("memory.force_empty"), "0");
        }
        // A just-reaped process can keep the cgroup busy for a moment.
        for _ in 0..50 {
            if fs::remove_dir(&self.path).is_ok() || !self.path.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("warning: could not remove the cgroup {}", self.path.display());
    }
}
