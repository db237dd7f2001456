//! `STATS`: rrdcached's nine counters in its order, then rrdscale's.

use std::sync::atomic::Ordering;

use rrd_protocol::Reply;

use crate::state::Daemon;
use crate::stats::{tree_depth, Stats};

pub fn run(daemon: &Daemon) -> Reply {
    let s = &daemon.stats;
    let nodes = daemon.cache.len();
    let fields: Vec<(&str, u64)> = vec![
        ("QueueLength", daemon.cache.queue_len()),
        ("UpdatesReceived", Stats::get(&s.updates_received)),
        ("FlushesReceived", Stats::get(&s.flushes_received)),
        ("UpdatesWritten", Stats::get(&s.updates_written)),
        ("DataSetsWritten", Stats::get(&s.data_sets_written)),
        ("TreeNodesNumber", nodes),
        ("TreeDepth", tree_depth(nodes)),
        ("JournalBytes", Stats::get(&s.journal_bytes)),
        ("JournalRotate", Stats::get(&s.journal_rotate)),
        // rrdscale's own, after rrdcached's.
        ("PendingValues", daemon.cache.pending_values.load(Ordering::SeqCst)),
        ("PendingBytes", daemon.cache.pending_bytes.load(Ordering::SeqCst)),
        ("JournalCommits", Stats::get(&s.journal_commits)),
        ("JournalSyncs", Stats::get(&s.journal_syncs)),
        ("JournalSyncMicros", Stats::get(&s.journal_sync_ns) / 1000),
        ("JournalSegmentsRemoved", Stats::get(&s.journal_segments_removed)),
        ("FilesSynced", Stats::get(&s.files_synced)),
        ("FlushErrors", Stats::get(&s.flush_errors)),
        ("UpdatesRefused", Stats::get(&s.updates_refused)),
        ("Connections", Stats::get(&s.connections)),
        ("HeadersRead", Stats::get(&s.headers_read)),
        ("HeadersKept", Stats::get(&s.headers_kept)),
        ("PagesPrefetched", Stats::get(&s.pages_prefetched)),
        ("PagesWritten", Stats::get(&s.pages_written)),
        ("PagesReleased", Stats::get(&s.pages_released)),
        ("KeptHeaderBytes", daemon.cache.kept_bytes.load(Ordering::SeqCst)),
        ("JournalPoisoned", Stats::get(&s.journal_poisoned)),
        ("JournalAppendErrors", Stats::get(&s.journal_append_errors)),
        ("JournalDamagedRegions", Stats::get(&s.journal_damaged_regions)),
        ("JournalDamagedBytes", Stats::get(&s.journal_damaged_bytes)),
        ("AcceptErrors", Stats::get(&s.accept_errors)),
        ("ConnectionsIdleClosed", Stats::get(&s.connections_idle_closed)),
        ("HeadersReadAhead", Stats::get(&s.headers_read_ahead)),
        ("FlushDrops", Stats::get(&s.flush_drops)),
        ("ConnectionsHttpClosed", Stats::get(&s.connections_http_closed)),
        ("UpdatesSkipped", Stats::get(&s.updates_skipped)),
    ];
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(format!("{name}: {value}\n").as_bytes());
    }
    Reply::ok("Statistics follow", body)
}
