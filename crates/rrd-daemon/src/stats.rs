//! Counters behind `STATS`: rrdcached's nine, in its order, then ours.
//!
//! Plain relaxed atomics: a counter may be read a moment stale, never torn.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Default, Debug)]
pub struct Stats {
    pub updates_received: AtomicU64,
    pub flushes_received: AtomicU64,
    /// Successful `update` calls on RRD files (one per file per flush).
    pub updates_written: AtomicU64,
    /// Values written (rrdcached's "data sets").
    pub data_sets_written: AtomicU64,
    pub journal_bytes: AtomicU64,
    pub journal_rotate: AtomicU64,
    // Ours.
    pub journal_syncs: AtomicU64,
    pub journal_sync_ns: AtomicU64,
    pub journal_commits: AtomicU64,
    pub journal_segments_removed: AtomicU64,
    pub flush_errors: AtomicU64,
    pub files_synced: AtomicU64,
    pub updates_refused: AtomicU64,
    pub connections: AtomicU64,
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Relaxed)
    }
}

/// The height of a balanced binary tree holding `nodes` nodes, which is what
/// rrdcached reports as `TreeDepth` (we keep no tree; a hash map has no depth).
pub fn tree_depth(nodes: u64) -> u64 {
    64 - u64::from(nodes.leading_zeros())
}

#[cfg(test)]
mod tests {
    #[test]
    fn tree_depth_is_a_balanced_height() {
        assert_eq!(super::tree_depth(0), 0);
        assert_eq!(super::tree_depth(1), 1);
        assert_eq!(super::tree_depth(3), 2);
        assert_eq!(super::tree_depth(4), 3);
    }
}
