//! A memory cgroup for one benchmark side, so that its page cache is charged
//! to a budget: the process's own memory cgroup gets a child
//! `rrdscale-bench-<pid>-<n>` with the limit, the worker moves itself in,
//! and the parent removes the child when the worker is gone.
//!
//! cgroup v1 (a `memory` hierarchy, `memory.limit_in_bytes`) is used when
//! mounted, as in PRODUCT.md's measurements; otherwise cgroup v2
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

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

/// Where the memory cgroup of this process lives in the file system.
pub fn own_memory_cgroup() -> Result<(PathBuf, Version), BenchError> {
    let cgroups = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| BenchError::Cgroup(format!("cannot read /proc/self/cgroup: {e}")))?;
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| BenchError::Cgroup(format!("cannot read /proc/self/mountinfo: {e}")))?;
    resolve(&cgroups, &mountinfo)
}

fn resolve(cgroups: &str, mountinfo: &str) -> Result<(PathBuf, Version), BenchError> {
    // v1: "4:memory:/a/b"; v2: "0::/a/b".
    let v1 = cgroups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "memory").then(|| path.to_string())
    });
    let v2 = cgroups.lines().find_map(|l| l.strip_prefix("0::").map(str::to_string));
    // mountinfo: id parent dev ROOT MOUNTPOINT opts... - FSTYPE SOURCE SUPEROPTS
    let mounts: Vec<(String, String, String, String)> = mountinfo
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let pre: Vec<&str> = pre.split(' ').collect();
            let post: Vec<&str> = post.split(' ').collect();
            Some((
                pre.get(3)?.to_string(),
                pre.get(4)?.to_string(),
                post.first()?.to_string(),
                post.get(2).unwrap_or(&"").to_string(),
            ))
        })
        .collect();
    let place = |root: &str, mount: &str, path: &str| -> PathBuf {
        let rel = path.strip_prefix(root).unwrap_or(path).trim_start_matches('/');
        Path::new(mount).join(rel)
    };
    if let Some(path) = v1 {
        if let Some((root, mount, _, _)) =
            mounts.iter().find(|(_, _, fs, opts)| fs == "cgroup" && opts.split(',').any(|o| o == "memory"))
        {
            return Ok((place(root, mount, &path), Version::V1));
        }
    }
    if let Some(path) = v2 {
        if let Some((root, mount, _, _)) = mounts.iter().find(|(_, _, fs, _)| fs == "cgroup2") {
            return Ok((place(root, mount, &path), Version::V2));
        }
    }
    Err(BenchError::Cgroup(
        "no memory cgroup is mounted for this process (neither a cgroup v1 'memory' hierarchy nor cgroup v2)"
            .into(),
    ))
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
        let file = match version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn finds_v1_memory_cgroup() {
        let cg = "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n";
        let (p, v) = resolve(cg, MOUNTINFO).unwrap();
        assert_eq!(p, PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"));
        assert_eq!(v, Version::V1);
    }

    #[test]
    fn falls_back_to_v2_and_strips_mount_root() {
        let mi = "41 31 0:38 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let (p, v) = resolve("0::/user.slice/session-1.scope\n", mi).unwrap();
        assert_eq!(p, PathBuf::from("/sys/fs/cgroup/session-1.scope"));
        assert_eq!(v, Version::V2);
        assert!(resolve("1:cpu:/\n", "").is_err());
    }
}
