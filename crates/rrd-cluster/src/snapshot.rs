//! Snapshots: what lets a new owner take over a partition without
//! replaying its whole history, and without the old owner's disk.
//!
//! Topic `rrdscale.NAME.snapshots`: compacted, the update topic's partition
//! count, a file's snapshot in the same partition number as its updates.
//! Key: the relative path. Value: `RRDSNAP1\n`, the offset (in the update
//! topic's partition) of the newest record the bytes include, `\n`, then
//! the whole file.
//!
//! The owner publishes a file's snapshot once the values it applied are in
//! the synced file (its cache entry has nothing pending or in flight). The
//! commit rule gains one condition: an offset is committed only when every
//! file touched by the records before it has a published snapshot that
//! includes them (besides being synced locally). So, by induction over the
//! successive owners, at a committed offset C of partition P every file of
//! P that any record before C touched has, in the snapshot topic, a
//! snapshot including every record before C that touched it. A new owner
//! restores, for each file of P, the latest snapshot when it is newer than
//! its own copy, then reads P from C: it has each file as it was at C or
//! later, and the records from C on are applied idempotently (values not
//! later than the file's last update are skipped).
//!
//! Limits: a snapshot is one Kafka message, so a file larger than
//! [`SNAPSHOT_BYTES_MAX`] cannot be snapshotted; its partition's commits
//! stop advancing (a new owner then replays from the last commit, which is
//! still correct, only slower) and the node logs it.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaErrorCode;
use rrd_engine::batch::KeptHeader;

use rrd_daemon::state::Daemon;

use crate::kafka::Names;

/// What snapshots need of the node: its daemon (cache and base
/// directory), the topic names and the runtime to wait on Kafka with.
pub struct Side<'a> {
    pub daemon: &'a Daemon,
    pub names: &'a Names,
    pub runtime: &'a tokio::runtime::Handle,
}

impl Side<'_> {
    /// The cache key of a file named relative to the base directory.
    fn key_of(&self, relative: &str) -> String {
        crate::keys::key_in(self.daemon, relative)
    }
}

pub const MAGIC: &[u8] = b"RRDSNAP1\n";
/// The largest file a snapshot carries (the topic's and the producer's
/// message size limit is set above it).
pub const SNAPSHOT_BYTES_MAX: usize = 15 << 20;

pub fn encode(offset: i64, file: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(MAGIC.len() + 24 + file.len());
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(offset.to_string().as_bytes());
    v.push(b'\n');
    v.extend_from_slice(file);
    v
}

/// `(offset, file bytes)`, or `None` for anything that is not a snapshot.
pub fn decode(value: &[u8]) -> Option<(i64, &[u8])> {
    let rest = value.strip_prefix(MAGIC)?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let offset = std::str::from_utf8(&rest[..nl]).ok()?.parse().ok()?;
    Some((offset, &rest[nl + 1..]))
}

/// Files whose applied records are not yet covered by a published snapshot.
#[derive(Default)]
pub struct Dirty {
    /// relative path → (partition, oldest uncovered offset, newest applied offset)
    pub files: HashMap<String, (i32, i64, i64)>,
    /// Unix seconds when each file became dirty (for the snapshot lag).
    pub since: HashMap<String, i64>,
}

impl Dirty {
    pub fn touch(&mut self, rel: &str, partition: i32, offset: i64) {
        match self.files.get_mut(rel) {
            Some(e) => e.2 = e.2.max(offset),
            None => {
                self.files.insert(rel.to_string(), (partition, offset, offset));
                self.since.insert(rel.to_string(), rrd_daemon::cache::unix_now());
            }
        }
    }

    /// The oldest offset of `partition` not covered by a snapshot.
    pub fn oldest_uncovered(&self, partition: i32) -> Option<i64> {
        self.files.values().filter(|e| e.0 == partition).map(|e| e.1).min()
    }

    pub fn forget_partitions(&mut self, gone: &[i32]) {
        self.files.retain(|_, e| !gone.contains(&e.0));
        let files = &self.files;
        self.since.retain(|k, _| files.contains_key(k));
    }

    fn clean(&mut self, rel: &str) {
        self.files.remove(rel);
        self.since.remove(rel);
    }

    /// Seconds since the oldest uncovered record was applied (0: none).
    pub fn lag_secs(&self, now: i64) -> i64 {
        self.since.values().min().map_or(0, |t| (now - t).max(0))
    }
}

/// Publishes the snapshots of dirty files whose values are all in synced
/// files, and waits for Kafka's acknowledgements; those files become
/// clean. Returns the bytes published.
pub fn publish_ready(shared: &Side<'_>, producer: &FutureProducer, dirty: &mut Dirty) -> u64 {
    let cache = &shared.daemon.cache;
    let mut sent: Vec<(String, i64, DeliveryFuture)> = Vec::new();
    let mut bytes = 0u64;
    let candidates: Vec<(String, (i32, i64, i64))> =
        dirty.files.iter().map(|(k, v)| (k.clone(), *v)).collect();
    for (rel, (p, _, last)) in candidates {
        let key = shared.key_of(&rel);
        let busy = cache.shard(&key).get(key.as_str()).is_some_and(|e| e.has_unsynced() || e.is_flushing());
        if busy {
            continue;
        }
        let file = match std::fs::read(&key) {
            Ok(f) => f,
            Err(e) => {
                // Never created (a failed CREATE, updates of a missing
                // file): nothing to cover.
                if e.kind() == std::io::ErrorKind::NotFound {
                    dirty.clean(&rel);
                } else {
                    tracing::warn!("cluster: snapshot of {key}: {e}");
                }
                continue;
            }
        };
        if file.len() > SNAPSHOT_BYTES_MAX {
            tracing::error!(
                "cluster: {key} is {} bytes, more than a snapshot carries ({SNAPSHOT_BYTES_MAX}); partition {p}'s commits wait",
                file.len()
            );
            continue;
        }
        let value = encode(last, &file);
        bytes += value.len() as u64;
        let record = FutureRecord::to(&shared.names.snapshots).partition(p).key(&rel).payload(&value);
        match producer.send_result(record) {
            Ok(f) => sent.push((rel, last, f)),
            Err((e, _)) => tracing::warn!("cluster: snapshot of {key} not sent: {e}"),
        }
    }
    let results = shared.runtime.block_on(async move {
        let mut out = Vec::new();
        for (rel, last, f) in sent {
            out.push((rel, last, matches!(f.await, Ok(Ok(_)))));
        }
        out
    });
    for (rel, last, ok) in results {
        if ok {
            // Covered up to `last`; a record applied since keeps it dirty.
            if dirty.files.get(&rel).is_some_and(|e| e.2 == last) {
                dirty.clean(&rel);
            }
        }
    }
    bytes
}

/// Restores partition `p`'s files from the snapshot topic: for each file,
/// the latest snapshot, when its last update is later than the local
/// copy's (or there is none). Returns (files restored, bytes read).
pub fn restore(shared: &Side<'_>, consumer: &BaseConsumer, p: i32) -> Result<(u64, u64), String> {
    let topic = &shared.names.snapshots;
    let (low, high) =
        consumer.fetch_watermarks(topic, p, Duration::from_secs(20)).map_err(|e| e.to_string())?;
    if high <= low {
        return Ok((0, 0));
    }
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, p, Offset::Beginning).map_err(|e| e.to_string())?;
    consumer.assign(&tpl).map_err(|e| e.to_string())?;
    let mut latest: HashMap<String, (i64, Vec<u8>)> = HashMap::new();
    let mut read = 0u64;
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    loop {
        if std::time::Instant::now() > deadline {
            return Err("reading the snapshots took more than 300 s".into());
        }
        let Some(m) = consumer.poll(Duration::from_millis(500)) else { continue };
        let m = match m {
            Ok(m) => m,
            // A broker that is down is reported as a consumption error
            // while the partition's leader is elsewhere: not fatal (the
            // deadline above bounds a partition that cannot be read).
            Err(KafkaError::MessageConsumption(
                RDKafkaErrorCode::BrokerTransportFailure | RDKafkaErrorCode::AllBrokersDown,
            )) => continue,
            Err(e) => return Err(e.to_string()),
        };
        let at = m.offset();
        if let (Some(k), Some(v)) = (m.key(), m.payload()) {
            read += v.len() as u64;
            if let (Ok(rel), Some((offset, file))) = (std::str::from_utf8(k), decode(v)) {
                let newer = match latest.get(rel) {
                    None => true,
                    Some((o, _)) => *o < offset,
                };
                if newer {
                    latest.insert(rel.to_string(), (offset, file.to_vec()));
                }
            }
        }
        if at + 1 >= high {
            break;
        }
    }
    let _ = consumer.unassign();
    let mut restored = 0;
    for (rel, (_, bytes)) in latest {
        let key = shared.key_of(&rel);
        if install(Path::new(&key), &bytes)? {
            restored += 1;
        }
    }
    Ok((restored, read))
}

/// Puts `bytes` at `path` if they are a later state of the file than the
/// one there (by last update), durably: temporary file, fsync, rename,
/// directory fsync. Returns whether it did.
fn install(path: &Path, bytes: &[u8]) -> Result<bool, String> {
    let dir = path.parent().ok_or("a file without a directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.snapshot-tmp",
        path.file_name().map_or("file".into(), |n| n.to_string_lossy().into_owned())
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    };
    write().map_err(|e| format!("{}: {e}", tmp.display()))?;
    let theirs = KeptHeader::read(&tmp).map_err(|e| format!("snapshot of {}: {e}", path.display()))?;
    let newer = match KeptHeader::read(path) {
        Ok(ours) => theirs.header.live().last_up > ours.header.live().last_up,
        Err(_) => true,
    };
    if !newer {
        let _ = std::fs::remove_file(&tmp);
        return Ok(false);
    }
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_round_trip_and_dirty_files_hold_back_their_partition() {
        let v = encode(42, b"\0RRD bytes\n");
        assert_eq!(decode(&v), Some((42, &b"\0RRD bytes\n"[..])));
        assert_eq!(decode(b"RRDSNAP1\nx\n"), None);
        assert_eq!(decode(b"other"), None);
        let mut d = Dirty::default();
        d.touch("a", 1, 10);
        d.touch("b", 1, 7);
        d.touch("a", 1, 12);
        d.touch("c", 2, 3);
        assert_eq!(d.oldest_uncovered(1), Some(7));
        assert_eq!(d.files["a"], (1, 10, 12));
        assert_eq!(d.oldest_uncovered(3), None);
        d.forget_partitions(&[1]);
        assert_eq!(d.oldest_uncovered(1), None);
        assert_eq!(d.oldest_uncovered(2), Some(3));
    }
}
