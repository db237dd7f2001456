//! A node's cluster figures: one reading for STATS (`Cluster*` lines) and
//! for `--metrics` (`rrdscale_cluster_*` families, appended to the single
//! node's exposition text).
//!
//! STATS asks the brokers for each owned partition's log end (fresh, one
//! request per partition); a scrape uses the log ends the group consumer
//! last heard in its fetch responses (no request: a scrape must not wait on
//! a broker that is failing over), so its lag is as of the consumer's last
//! fetch, at most `fetch.wait.max.ms` old while the node is consuming.

use rrd_metrics::{Exposition, Kind};
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::node::Shared;

/// What a node reports about its share of the cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub node: String,
    pub cluster: String,
    pub partitions_total: i32,
    /// Owned partitions, ascending, each with its consumer lag (log end
    /// minus the next offset applied; `None`: log end unknown).
    pub owned: Vec<(i32, Option<i64>)>,
    /// Records past the last commit, summed over owned partitions.
    pub uncommitted: i64,
    pub records_applied: u64,
    pub values_skipped: u64,
    pub records_unreadable: u64,
    pub rebalances: u64,
    pub snapshots_published: u64,
    pub snapshot_bytes: u64,
    pub snapshot_lag_secs: u64,
    pub files_restored: u64,
}

impl Figures {
    /// Reads `shared`; `log_end` gives a partition's log end.
    pub fn read(shared: &Shared, log_end: impl Fn(i32) -> Option<i64>) -> Figures {
        let mut owned: Vec<i32> = shared.owned.read().expect("owned lock").iter().copied().collect();
        owned.sort_unstable();
        let highs: Vec<(i32, Option<i64>)> = owned.iter().map(|&p| (p, log_end(p))).collect();
        let applied = shared.applied.lock().expect("applied lock").clone();
        let committed = shared.committed.lock().expect("committed lock").clone();
        let mut uncommitted = 0;
        let owned = highs
            .into_iter()
            .map(|(p, h)| {
                if let Some(h) = h {
                    uncommitted += (h - committed.get(&p).copied().unwrap_or(0)).max(0);
                }
                (p, h.map(|h| (h - applied.get(&p).copied().unwrap_or(0)).max(0)))
            })
            .collect();
        let c = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        Figures {
            node: shared.node_id.clone(),
            cluster: shared.names.group.trim_start_matches("rrdscale.").to_string(),
            partitions_total: shared.partitions,
            owned,
            uncommitted,
            records_applied: c(&shared.records_applied),
            values_skipped: c(&shared.values_skipped),
            records_unreadable: c(&shared.records_unreadable),
            rebalances: c(&shared.rebalances),
            snapshots_published: c(&shared.snapshots_published),
            snapshot_bytes: c(&shared.snapshot_bytes),
            snapshot_lag_secs: c(&shared.snapshot_lag_secs),
            files_restored: c(&shared.files_restored),
        }
    }

    /// With fresh log ends from the brokers (STATS).
    pub fn fresh(shared: &Shared) -> Figures {
        Figures::read(shared, |p| shared.log_end(p, Duration::from_secs(2)).ok())
    }

    /// With the log ends the group consumer last heard (a scrape).
    pub fn cached(shared: &Shared) -> Figures {
        Figures::read(shared, |p| shared.cached_log_end(p))
    }

    pub fn lag(&self) -> i64 {
        self.owned.iter().filter_map(|(_, l)| *l).sum()
    }

    /// STATS' `Cluster*` lines.
    pub fn stats_lines(&self) -> Vec<(&'static str, String)> {
        let list: Vec<String> = self.owned.iter().map(|(p, _)| p.to_string()).collect();
        vec![
            ("ClusterNode", self.node.clone()),
            ("ClusterPartitionsTotal", self.partitions_total.to_string()),
            ("ClusterPartitionsOwned", self.owned.len().to_string()),
            ("ClusterPartitions", list.join(",")),
            ("ClusterConsumerLag", self.lag().to_string()),
            ("ClusterUncommitted", self.uncommitted.to_string()),
            ("ClusterRecordsApplied", self.records_applied.to_string()),
            ("ClusterValuesSkipped", self.values_skipped.to_string()),
            ("ClusterRecordsUnreadable", self.records_unreadable.to_string()),
            ("ClusterRebalances", self.rebalances.to_string()),
            ("ClusterSnapshotsPublished", self.snapshots_published.to_string()),
            ("ClusterSnapshotBytes", self.snapshot_bytes.to_string()),
            ("ClusterSnapshotLagSecs", self.snapshot_lag_secs.to_string()),
            ("ClusterFilesRestored", self.files_restored.to_string()),
        ]
    }

    /// The `rrdscale_cluster_*` families (Prometheus text format 0.0.4),
    /// written with the daemon's and web server's writer.
    pub fn exposition(&self) -> String {
        let mut o = Exposition::new();
        let info = "rrdscale_cluster_node_info";
        o.family(info, Kind::Gauge, "This node's id and cluster name (value 1).").sample(
            info,
            &[("node", &self.node), ("cluster", &self.cluster)],
            1,
        );
        o.gauge("rrdscale_cluster_partitions", "Partitions of the update topic.", self.partitions_total);
        o.gauge(
            "rrdscale_cluster_partitions_owned",
            "Partitions the consumer group gave this node.",
            self.owned.len(),
        );
        o.gauge(
            "rrdscale_cluster_consumer_lag_records",
            "Records of owned partitions not yet applied (log end as of the consumer's last fetch), summed.",
            self.lag(),
        );
        let per = "rrdscale_cluster_partition_lag_records";
        o.family(
            per,
            Kind::Gauge,
            "Per owned partition: records not yet applied (partitions whose log end is not known yet are absent).",
        );
        for (p, lag) in &self.owned {
            if let Some(lag) = lag {
                o.sample(per, &[("partition", &p.to_string())], lag);
            }
        }
        o.gauge(
            "rrdscale_cluster_uncommitted_records",
            "Records of owned partitions past the last committed offset (applied but not yet in synced files and snapshots).",
            self.uncommitted,
        );
        o.gauge(
            "rrdscale_cluster_snapshot_age_seconds",
            "Age of the oldest applied record whose file has no published snapshot including it (0: all covered).",
            self.snapshot_lag_secs,
        );
        for (name, help, v) in [
            (
                "rrdscale_cluster_records_applied_total",
                "Commands applied from the update topic.",
                self.records_applied,
            ),
            (
                "rrdscale_cluster_values_skipped_total",
                "Values skipped on apply as not later than the file's last update (replays, client retries).",
                self.values_skipped,
            ),
            (
                "rrdscale_cluster_records_unreadable_total",
                "Updates skipped because their file could not be opened.",
                self.records_unreadable,
            ),
            ("rrdscale_cluster_rebalances_total", "Consumer group rebalance callbacks.", self.rebalances),
            (
                "rrdscale_cluster_snapshots_published_total",
                "File snapshots published.",
                self.snapshots_published,
            ),
            (
                "rrdscale_cluster_snapshot_bytes_total",
                "Bytes of file snapshots published.",
                self.snapshot_bytes,
            ),
            ("rrdscale_cluster_files_restored_total", "Files restored from snapshots.", self.files_restored),
        ] {
            o.counter(name, help, v);
        }
        o.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rrd_daemon::metrics::parse_text;

    #[test]
    fn the_exposition_is_valid_and_carries_the_figures() {
        let f = Figures {
            node: "n\"1".into(),
            cluster: "c".into(),
            partitions_total: 12,
            owned: vec![(2, Some(5)), (7, None), (9, Some(0))],
            uncommitted: 40,
            records_applied: 1000,
            snapshot_lag_secs: 3,
            ..Figures::default()
        };
        let text = f.exposition();
        let samples = parse_text(&text);
        let get = |n: &str| samples.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!(get("rrdscale_cluster_partitions_owned"), Some(3.0));
        assert_eq!(get("rrdscale_cluster_partitions"), Some(12.0));
        assert_eq!(get("rrdscale_cluster_consumer_lag_records"), Some(5.0));
        assert_eq!(get("rrdscale_cluster_partition_lag_records{partition=\"2\"}"), Some(5.0));
        assert_eq!(get("rrdscale_cluster_partition_lag_records{partition=\"9\"}"), Some(0.0));
        assert_eq!(get("rrdscale_cluster_partition_lag_records{partition=\"7\"}"), None);
        assert_eq!(get("rrdscale_cluster_uncommitted_records"), Some(40.0));
        assert_eq!(get("rrdscale_cluster_snapshot_age_seconds"), Some(3.0));
        assert_eq!(get("rrdscale_cluster_records_applied_total"), Some(1000.0));
        assert_eq!(get("rrdscale_cluster_node_info{node=\"n\\\"1\",cluster=\"c\"}"), Some(1.0));
        for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let mut w = line.split_whitespace().skip(2);
            let (name, kind) = (w.next().unwrap(), w.next().unwrap());
            assert!(text.contains(&format!("# HELP {name} ")), "{name} has no HELP");
            assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
        }
        assert_eq!(samples.len(), text.lines().filter(|l| !l.starts_with('#')).count());
        // STATS says the same.
        let lines = f.stats_lines();
        let stat = |n: &str| lines.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(stat("ClusterPartitions"), "2,7,9");
        assert_eq!(stat("ClusterConsumerLag"), "5");
        assert_eq!(stat("ClusterPartitionsOwned"), "3");
    }
}
