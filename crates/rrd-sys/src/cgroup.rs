//! Where this process's memory cgroup lives, and the memory it may use.
//!
//! Why one module: every memory budget (the batch updater's prefetch window,
//! the daemon's pending values and kept headers, the benchmark's cgroups)
//! derives from the same answer, and two resolvers had drifted apart: the
//! engine's assumed the hierarchy is mounted at `/sys/fs/cgroup` with its
//! root at `/`, which is not so in a container (the container's own cgroup
//! is the mount's root, so `/proc/self/cgroup`'s path must be taken
//! relative to the root `mountinfo` names), and it read only the process's
//! own limit where a parent's limit binds just as much.
//!
//! Deliberately absent: swap limits and any controller but memory.

use std::io;
use std::path::{Path, PathBuf};

/// The cgroup hierarchy that holds the memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    /// A v1 `memory` hierarchy (`memory.limit_in_bytes`).
    V1,
    /// The unified v2 hierarchy (`memory.max`).
    V2,
}

impl CgroupVersion {
    /// The file that holds a cgroup's memory limit.
    pub fn limit_file(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "memory.limit_in_bytes",
            CgroupVersion::V2 => "memory.max",
        }
    }
}

/// A process's memory cgroup: its directory and the mount point of its
/// hierarchy (the topmost directory this process can see).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryCgroup {
    pub path: PathBuf,
    pub mount: PathBuf,
    pub version: CgroupVersion,
}

/// This process's memory cgroup, from `/proc/self/cgroup` and
/// `/proc/self/mountinfo`.
pub fn own_memory_cgroup() -> io::Result<MemoryCgroup> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup")?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    resolve(&cgroups, &mountinfo).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "no memory cgroup is mounted for this process (neither a cgroup v1 'memory' hierarchy nor cgroup v2)",
        )
    })
}

/// The memory cgroup that `cgroups` (the text of `/proc/self/cgroup`) and
/// `mountinfo` (of `/proc/self/mountinfo`) describe: v1's `memory`
/// hierarchy when mounted, else v2's.
pub fn resolve(cgroups: &str, mountinfo: &str) -> Option<MemoryCgroup> {
    // v1: "4:memory:/a/b"; v2: "0::/a/b".
    let v1 = cgroups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "memory").then_some(path)
    });
    let v2 = cgroups.lines().find_map(|l| l.strip_prefix("0::"));
    // mountinfo: ID PARENT DEV ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPEROPTIONS
    let mounts: Vec<(&str, &str, &str, &str)> = mountinfo
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let mut pre = pre.split(' ').skip(3);
            let mut post = post.split(' ');
            let (root, mount) = (pre.next()?, pre.next()?);
            let fstype = post.next()?;
            let superopts = post.nth(1).unwrap_or("");
            Some((root, mount, fstype, superopts))
        })
        .collect();
    let place = |root: &str, mount: &str, path: &str, version| {
        let rel = path.strip_prefix(root).unwrap_or(path).trim_start_matches('/');
        Some(MemoryCgroup { path: Path::new(mount).join(rel), mount: PathBuf::from(mount), version })
    };
    if let Some(path) = v1 {
        let found =
            mounts.iter().find(|(_, _, fs, opts)| *fs == "cgroup" && opts.split(',').any(|o| o == "memory"));
        if let Some((root, mount, _, _)) = found {
            return place(root, mount, path, CgroupVersion::V1);
        }
    }
    let path = v2?;
    let (root, mount, _, _) = mounts.iter().find(|(_, _, fs, _)| *fs == "cgroup2")?;
    place(root, mount, path, CgroupVersion::V2)
}

/// The tightest memory limit on `cgroup`: its own and every ancestor's up
/// to the mount point (a parent's limit binds the children too). `None`
/// when none is set (v2 says `max`; v1's "unlimited" is a huge number and
/// counts as one).
pub fn limit_of(cgroup: &MemoryCgroup) -> Option<u64> {
    let file = cgroup.version.limit_file();
    let mut limit: Option<u64> = None;
    let mut dir = Some(cgroup.path.as_path());
    while let Some(d) = dir {
        let here = std::fs::read_to_string(d.join(file)).ok().and_then(|t| t.trim().parse::<u64>().ok());
        if let Some(n) = here {
            limit = Some(limit.map_or(n, |l| l.min(n)));
        }
        if d == cgroup.mount {
            break;
        }
        dir = d.parent().filter(|p| p.starts_with(&cgroup.mount));
    }
    limit
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
    fn finds_the_v1_memory_hierarchy_first() {
        let cg = "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n";
        let c = resolve(cg, MOUNTINFO).unwrap();
        assert_eq!(c.path, PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"));
        assert_eq!(c.mount, PathBuf::from("/sys/fs/cgroup/memory"));
        assert_eq!(c.version, CgroupVersion::V1);
    }

    #[test]
    fn falls_back_to_v2_and_strips_the_mount_root() {
        let mi = "41 31 0:38 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let c = resolve("0::/user.slice/session-1.scope\n", mi).unwrap();
        assert_eq!(c.path, PathBuf::from("/sys/fs/cgroup/session-1.scope"));
        assert_eq!(c.version, CgroupVersion::V2);
        assert!(resolve("1:cpu:/\n", "").is_none());
    }

    #[test]
    fn a_container_sees_its_own_cgroup_as_the_mount_root() {
        // Docker without a cgroup namespace: the path names the container's
        // cgroup, which is also the root of what is mounted.
        let mi = "35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n";
        let c = resolve("4:memory:/docker/abc\n", mi).unwrap();
        assert_eq!(c.path, PathBuf::from("/sys/fs/cgroup/memory"));
    }

    #[test]
    fn the_tightest_limit_of_the_cgroup_and_its_ancestors_wins() {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().to_path_buf();
        let own = mount.join("a/b/c");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(mount.join("memory.max"), "max\n").unwrap();
        std::fs::write(mount.join("a/memory.max"), "1048576\n").unwrap();
        std::fs::write(mount.join("a/b/memory.max"), "max\n").unwrap();
        std::fs::write(own.join("memory.max"), "4194304\n").unwrap();
        let cg = MemoryCgroup { path: own.clone(), mount: mount.clone(), version: CgroupVersion::V2 };
        assert_eq!(limit_of(&cg), Some(1 << 20));
        std::fs::write(mount.join("a/memory.max"), "max\n").unwrap();
        assert_eq!(limit_of(&cg), Some(4 << 20));
        std::fs::write(own.join("memory.max"), "max\n").unwrap();
        assert_eq!(limit_of(&cg), None);
        // v1 reads its own file name; nothing above the mount is read.
        std::fs::write(dir.path().join("a/memory.limit_in_bytes"), "2097152\n").unwrap();
        let v1 = MemoryCgroup { path: own, mount: mount.join("a/b"), version: CgroupVersion::V1 };
        assert_eq!(limit_of(&v1), None);
    }
}
