//! Counters behind `STATS`: rrdcached's nine, in its order, then ours.
//!
//! Plain relaxed atomics: a counter may be read a moment stale, never torn.
//! `/metrics` (crate::metrics) renders the same counters, plus
//! [`Histogram`]s that STATS has no room for.

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
    /// 1 once the journal refuses appends (a failed fdatasync, ...).
    pub journal_poisoned: AtomicU64,
    /// Group commits whose append failed (poisoning or not).
    pub journal_append_errors: AtomicU64,
    /// Damaged journal ranges the startup replay skipped (the records
    /// after each were kept; torn tails are not counted).
    pub journal_damaged_regions: AtomicU64,
    /// Bytes in those ranges.
    pub journal_damaged_bytes: AtomicU64,
    /// Duration of each successful journal `fdatasync`.
    pub journal_sync_seconds: Histogram,
    /// Flush: headers read from files (no kept header, or a stale one).
    pub headers_read: AtomicU64,
    /// Flush: updates that used the kept header and read nothing.
    pub headers_kept: AtomicU64,
    /// Flush: pages asked for with WILLNEED before writing.
    pub pages_prefetched: AtomicU64,
    /// Flush: pages written (per file update).
    pub pages_written: AtomicU64,
    /// Flush: pages dropped from the page cache after syncing.
    pub pages_released: AtomicU64,
    /// `accept` failures for lack of descriptors or memory (each starts a
    /// 100 ms back-off).
    pub accept_errors: AtomicU64,
    /// Connections closed by the idle timeout (or a line that did not
    /// complete within it).
    pub connections_idle_closed: AtomicU64,
    /// Connections closed because their first line was an HTTP request.
    pub connections_http_closed: AtomicU64,
    /// Files opened ahead of their first UPDATE, header read at queue
    /// depth (crate::prefetch).
    pub headers_read_ahead: AtomicU64,
    /// Flushes of a file that dropped values (all of them: the file is
    /// gone or not an RRD; or those from a value the file refused on).
    pub flush_drops: AtomicU64,
    /// UPDATE values dropped by `--skip-past-updates` (their time was not
    /// later than the file's newest).
    pub updates_skipped: AtomicU64,
}

/// Upper bounds (seconds) of the sync-latency buckets: 50 µs to 2.5 s,
/// which spans a battery-backed cache to a saturated spinning disk.
pub const SYNC_BUCKETS_SECS: [f64; 14] =
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5];

/// The journal's sync latencies: buckets of [`SYNC_BUCKETS_SECS`].
#[derive(Debug)]
pub struct SyncBuckets;

impl rrd_metrics::Buckets for SyncBuckets {
    const BOUNDS_SECS: &'static [f64] = &SYNC_BUCKETS_SECS;
}

/// A Prometheus histogram of sync latencies (`rrd_metrics`'s, lock-free).
pub type Histogram = rrd_metrics::Histogram<SyncBuckets>;

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
    fn histogram_buckets_are_cumulative_with_an_overflow() {
        use std::time::Duration;
        let h = super::Histogram::default();
        h.observe(Duration::from_micros(20));
        h.observe(Duration::from_micros(700));
        h.observe(Duration::from_secs(9));
        let c = h.cumulative();
        assert_eq!(c.len(), super::SYNC_BUCKETS_SECS.len() + 1);
        assert_eq!((c[0], c[3], c[4], c[13], c[14]), (1, 1, 2, 2, 3));
        assert_eq!(h.count(), 3);
    }

    #[test]
    fn tree_depth_is_a_balanced_height() {
        assert_eq!(super::tree_depth(0), 0);
        assert_eq!(super::tree_depth(1), 1);
        assert_eq!(super::tree_depth(3), 2);
        assert_eq!(super::tree_depth(4), 3);
    }
}
