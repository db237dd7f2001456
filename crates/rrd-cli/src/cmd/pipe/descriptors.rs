//! How pipe mode shares the process's descriptors between the files its
//! workers keep open and the files its reader opens and hands over.
//!
//! Why a budget: each worker keeps files open up to its own bound, and a
//! worker that runs out of descriptors can only give back its own. Bounds
//! that add up to more than the limit (as under `ulimit -n 48`, where the
//! old bound of at least 512 kept files applied) let one worker's opens
//! take the descriptors another gave back, until one with nothing left to
//! give fails an update that rrdtool, which keeps no file open, would have
//! made. So the bounds are cut from what the limit leaves, and the
//! engine's give-back on `EMFILE` is only for descriptors the budget did
//! not see (a parent's leaked ones).

/// Kept open files (each with its decoded header, a few KiB) for all the
/// workers together: half the descriptor limit, within these bounds, and
/// never more than the limit leaves (see [`Budget::new`]).
const KEPT_FILES: (usize, usize) = (512, 8192);

/// Files the reader may have opened and handed over at once, not yet
/// taken by their workers: a quarter of what the limit leaves, at most
/// this many (a worker looks at most `LOOKAHEAD_MAX` lines ahead; each
/// open file is kernel memory, which a memory cgroup counts). Past it,
/// lines are routed by `stat` and their workers open the files.
const HANDED_MAX: usize = 1024;

/// Descriptors left for what is neither kept nor handed over: the
/// reader's other opens (`ls`, a new file, the `stat`-routed path), a
/// worker's file opened for one update while its table is full, libc's.
const SPARE: usize = 16;

/// The shares of the descriptor limit, fixed for the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Budget {
    /// Update workers sharing it (at least one).
    pub workers: usize,
    /// Open files each worker keeps (at least one).
    pub kept_per_worker: usize,
    /// Files the reader may hold opened for workers (may be 0: then every
    /// line is routed by `stat`).
    pub handed_max: usize,
}

impl Budget {
    /// The budget for `workers` workers under this process's soft limit,
    /// counting the descriptors it has open already (standard streams and
    /// whatever its parent left open).
    pub fn of_this_process(workers: usize) -> Budget {
        Budget::new(limit(), in_use(), workers)
    }

    /// The budget for `workers` workers under a limit of `limit`
    /// descriptors, `in_use` of them taken before the session.
    pub fn new(limit: usize, in_use: usize, workers: usize) -> Budget {
        let workers = workers.max(1);
        let free = limit.saturating_sub(in_use + SPARE + workers);
        let handed_max = (free / 4).min(HANDED_MAX);
        let kept = (limit / 2).clamp(KEPT_FILES.0, KEPT_FILES.1).min(free - handed_max);
        Budget { workers, kept_per_worker: (kept / workers).max(1), handed_max }
    }

    /// Descriptors the session may hold at once, the spare excluded.
    pub fn total(&self) -> usize {
        self.kept_per_worker * self.workers + self.handed_max
    }
}

/// The process's soft descriptor limit (`usize::MAX` when unlimited).
fn limit() -> usize {
    // None is RLIM_INFINITY.
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .map_or(usize::MAX, |cur| usize::try_from(cur).unwrap_or(usize::MAX))
}

/// Descriptors open in this process now (the standard three where
/// `/proc` cannot tell).
fn in_use() -> usize {
    match std::fs::read_dir("/proc/self/fd") {
        // Less the directory's own descriptor.
        Ok(dir) => dir.count().saturating_sub(1),
        Err(_) => 3,
    }
}

/// Grows the process's descriptor table to hold `files` more descriptors
/// while the process has one thread.
///
/// Why: the kernel grows the table by doubling as descriptors are opened,
/// and in a process with more than one thread each growth waits for an RCU
/// grace period (`expand_fdtable` → `synchronize_rcu`), milliseconds on a
/// virtual machine during which the opening worker sleeps. A poller's
/// session opens thousands of files, so a table grown once, here, took a
/// quarter of a 5,000-file cycle's time off. Best effort: a descriptor
/// limit below that only means the growths happen later.
pub(super) fn reserve(files: usize) {
    let Ok(probe) = std::fs::File::open("/dev/null") else { return };
    let Ok(target) = i32::try_from(files) else { return };
    // The duplicate, at the lowest free number >= target, is closed at once.
    drop(rustix::io::fcntl_dupfd_cloexec(&probe, target));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_common_limit_keeps_the_usual_bounds() {
        // Debian's default soft limit, and systemd's for services.
        assert_eq!(Budget::new(1024, 3, 2), Budget { workers: 2, kept_per_worker: 256, handed_max: 250 });
        assert_eq!(
            Budget::new(524_288, 3, 8),
            Budget { workers: 8, kept_per_worker: 1024, handed_max: 1024 }
        );
    }

    #[test]
    fn a_low_limit_is_shared_within_itself() {
        for (limit, in_use, workers) in [(48, 3, 2), (48, 20, 4), (64, 3, 8), (200, 150, 2), (100, 3, 1)] {
            let b = Budget::new(limit, in_use, workers);
            assert!(
                b.total() + in_use + SPARE + workers <= limit,
                "{b:?} over the limit {limit} with {in_use} in use and {workers} workers"
            );
            assert!(b.kept_per_worker >= 1);
        }
        assert_eq!(Budget::new(48, 3, 2), Budget { workers: 2, kept_per_worker: 10, handed_max: 6 });
    }

    #[test]
    fn no_room_leaves_one_kept_file_and_nothing_handed() {
        // The engine's give-back on EMFILE is what remains.
        assert_eq!(Budget::new(16, 10, 4), Budget { workers: 4, kept_per_worker: 1, handed_max: 0 });
        assert_eq!(Budget::new(0, 3, 1), Budget { workers: 1, kept_per_worker: 1, handed_max: 0 });
    }
}
