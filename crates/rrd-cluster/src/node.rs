//! The owner side: this node's share of the update topic, applied to its
//! own files through the single-node daemon's cache and paced flusher.
//!
//! One thread polls a group consumer. Each record goes into the cache the
//! way the journal replay puts values there (`rrd_daemon::replay`): a
//! value not later than the file's newest is skipped, which makes applying
//! a partition twice harmless; a CREATE of a file that exists is skipped
//! too (so replay never overwrites a file with its older self).
//!
//! Offsets are committed only for values that are in synced files. The
//! cache already tracks that for the journal: each file's entry names the
//! oldest journal "segment" its pending (or in-flight) values came from,
//! and `Cache::oldest_needed_seq` is the oldest still needed. Here a
//! "segment" is one poll round (an epoch): the thread notes, per epoch, the
//! next offset of each partition it applied; every epoch below the oldest
//! needed one is fully synced, so the highest offsets noted for those
//! epochs are committed. The flusher, its pacing and its page-level writes
//! are the single node's, unchanged.
//!
//! With snapshots (crate::snapshot), a commit also waits until every file
//! touched by the records before it has a published snapshot including
//! them.
//!
//! Where a partition starts (the rebalance callback, [`Ctx::rebalance`]):
//! at the committed offset if this very node (same node id and the same
//! state directory incarnation, so the disk is the one that synced those
//! values) committed it; at the committed offset after restoring the
//! snapshots if another node committed it under the snapshot rule;
//! otherwise at the partition's beginning (after restoring snapshots, when
//! on), replaying everything idempotently. Revocation (cooperative: only
//! the partitions that move) first writes and syncs the revoked
//! partitions' pending values, publishes the snapshots and commits their
//! applied offsets, then drops the revoked files' entries; the partitions
//! kept are applied on meanwhile. docs/cluster.md argues each case.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::error::KafkaResult;
use rdkafka::message::Message;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::ClientContext;
use rrd_daemon::cache::{unix_now, Key};
use rrd_daemon::commands::{self, Args};
use rrd_daemon::state::Daemon;
use rrd_protocol::Command;

use crate::hash::partition_of;
use crate::kafka::{base_config, Names};
use crate::record::{Kind, Record};
use crate::snapshot::{self, Dirty};
use crate::ClusterError;

/// What the applier shares with the request side and the metrics.
pub struct Shared {
    pub names: Names,
    pub partitions: i32,
    pub node_id: String,
    /// `node_id/incarnation`: the metadata of our commits.
    pub tag: String,
    pub daemon: Arc<Daemon>,
    pub owned: RwLock<HashSet<i32>>,
    /// Next offset applied to the cache, per owned partition.
    pub applied: Mutex<HashMap<i32, i64>>,
    /// Last committed offset per partition (ours).
    pub committed: Mutex<HashMap<i32, i64>>,
    /// Bumped when the owned set changes (members republished).
    pub ownership_changes: AtomicU64,
    pub records_applied: AtomicU64,
    pub values_skipped: AtomicU64,
    pub records_unreadable: AtomicU64,
    pub rebalances: AtomicU64,
    pub stopping: AtomicBool,
    pub runtime: tokio::runtime::Handle,
    /// The group consumer, while it runs: reads ask it for a partition's
    /// log end (it follows the partition leaders, so it knows where to
    /// ask after a broker failed over; an idle client may not).
    pub group: Mutex<Option<Arc<BaseConsumer<Ctx>>>>,
    /// The snapshot producer (None: `--cluster-snapshots off`).
    pub snapshots: Option<rdkafka::producer::FutureProducer>,
    pub bootstrap: String,
    pub snapshots_published: AtomicU64,
    pub snapshot_bytes: AtomicU64,
    pub files_restored: AtomicU64,
    /// Seconds since the oldest record not yet covered by a snapshot.
    pub snapshot_lag_secs: AtomicU64,
}

impl Shared {
    /// The base directory's absolute path joined with `relative`.
    pub fn key_of(&self, relative: &str) -> String {
        crate::keys::key_in(&self.daemon, relative)
    }

    /// `key` relative to the base directory (`None`: outside it).
    pub fn relative_of<'a>(&self, key: &'a str) -> Option<&'a str> {
        crate::keys::relative_in(&self.daemon, key)
    }

    /// What the snapshots need of the node.
    fn snapshot_side(&self) -> snapshot::Side<'_> {
        snapshot::Side { daemon: &self.daemon, names: &self.names, runtime: &self.runtime }
    }

    /// The log end of `partition` (`None`: not known within `timeout`).
    pub fn log_end(&self, partition: i32, timeout: Duration) -> Result<i64, String> {
        let consumer = self.group.lock().expect("group lock").clone().ok_or("the applier is not running")?;
        consumer
            .fetch_watermarks(&self.names.updates, partition, timeout)
            .map(|(_, h)| h)
            .map_err(|e| e.to_string())
    }

    /// The log end of `partition` as the group consumer last heard it
    /// (no broker request; `None`: not heard yet). rdkafka wraps only the
    /// broker request (`fetch_watermarks`), hence the one unsafe call.
    #[allow(unsafe_code)]
    pub fn cached_log_end(&self, partition: i32) -> Option<i64> {
        let consumer = self.group.lock().expect("group lock").clone()?;
        let topic = std::ffi::CString::new(self.names.updates.as_str()).ok()?;
        let (mut low, mut high) = (-1i64, -1i64);
        // SAFETY: the consumer (kept alive by the Arc above) owns a valid
        // handle; the topic is a NUL-terminated string that outlives the
        // call; librdkafka only writes the two offsets.
        let err = unsafe {
            rdkafka::bindings::rd_kafka_get_watermark_offsets(
                consumer.client().native_ptr(),
                topic.as_ptr(),
                partition,
                &mut low,
                &mut high,
            )
        };
        (err == rdkafka::bindings::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0)
            .then_some(high)
    }

    /// A part of the node cannot go on (the applier, the members reader):
    /// the whole node stops, as after SIGTERM, rather than accept updates
    /// it would never apply.
    pub fn fatal(&self, why: &str) {
        tracing::error!("cluster: {why}; stopping the node");
        self.stopping.store(true, Ordering::SeqCst);
        let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TERM);
    }

    pub fn owns(&self, partition: i32) -> bool {
        self.owned.read().expect("owned lock").contains(&partition)
    }
}

/// The state directory's incarnation: a random number made when the
/// directory is first used, so a node whose disk was wiped never resumes
/// from offsets its former self committed.
pub fn incarnation(state_dir: &Path) -> Result<String, ClusterError> {
    let path = state_dir.join("incarnation");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let t = text.trim().to_string();
        if !t.is_empty() {
            return Ok(t);
        }
    }
    std::fs::create_dir_all(state_dir)
        .map_err(|e| ClusterError::Io { what: format!("creating {}", state_dir.display()), source: e })?;
    let mut bytes = [0u8; 8];
    let f = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes).map(|_| f));
    f.map_err(|e| ClusterError::Io { what: "reading /dev/urandom".into(), source: e })?;
    let t = format!("{:016x}", u64::from_le_bytes(bytes));
    let tmp = state_dir.join("incarnation.tmp");
    std::fs::write(&tmp, format!("{t}\n"))
        .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
        .and_then(|_| std::fs::rename(&tmp, &path))
        .and_then(|_| std::fs::File::open(state_dir)?.sync_all())
        .map_err(|e| ClusterError::Io { what: format!("writing {}", path.display()), source: e })?;
    Ok(t)
}

/// The consumer's context: the rebalance callbacks.
pub struct Ctx {
    pub shared: Arc<Shared>,
    /// Epoch bookkeeping (see the module doc), shared with the poll loop.
    pub book: Arc<Mutex<Book>>,
}

#[derive(Default)]
pub struct Book {
    /// The epoch the next applied values are tagged with (from 1).
    pub epoch: u64,
    /// Per epoch: the next offset of each partition applied in it.
    pub offsets: BTreeMap<u64, HashMap<i32, i64>>,
    /// Files not yet covered by a published snapshot.
    pub dirty: Dirty,
    /// Per partition: the next offset whose predecessors are all in synced
    /// files (what the commit may say, snapshots permitting).
    pub synced: HashMap<i32, i64>,
}

impl ClientContext for Ctx {}

impl ConsumerContext for Ctx {
    fn rebalance(&self, consumer: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        self.shared.rebalances.fetch_add(1, Ordering::Relaxed);
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => self.assign(consumer, tpl),
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                let revoked: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
                self.revoke(consumer, &revoked);
                // Cooperative: only these partitions stop; the others go on.
                let done = if cooperative(consumer) {
                    consumer.incremental_unassign(tpl)
                } else {
                    consumer.unassign()
                };
                if let Err(e) = done {
                    tracing::error!("cluster: unassign failed: {e}");
                }
            }
            other => {
                tracing::error!("cluster: rebalance error {other:?}; giving up the assignment");
                let owned: Vec<i32> = self.shared.owned.read().expect("owned lock").iter().copied().collect();
                self.revoke(consumer, &owned);
                let _ = consumer.unassign();
            }
        }
    }

    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        match result {
            Ok(()) => {
                let mut c = self.shared.committed.lock().expect("committed lock");
                for e in offsets.elements() {
                    if let Offset::Offset(o) = e.offset() {
                        c.insert(e.partition(), o);
                    }
                }
            }
            Err(e) => tracing::warn!("cluster: offset commit failed: {e} (retried at the next round)"),
        }
    }
}

impl Ctx {
    fn assign(&self, consumer: &BaseConsumer<Self>, tpl: &mut TopicPartitionList) {
        let shared = &self.shared;
        let committed = consumer.committed_offsets(tpl.clone(), Duration::from_secs(20));
        let mut plan = Vec::new();
        for e in tpl.elements() {
            let p = e.partition();
            let found = committed.as_ref().ok().and_then(|c| {
                c.find_partition(&shared.names.updates, p).and_then(|c| match c.offset() {
                    Offset::Offset(o) => Some((o, c.metadata().to_string())),
                    _ => None,
                })
            });
            let start = match found {
                // Our own disk synced everything before it.
                Some((o, m)) if m == shared.tag => Start::Ours(o),
                // Committed under the snapshot rule: snapshots cover it.
                Some((o, m)) if shared.snapshots.is_some() && m.ends_with(SNAPSHOT_TAG) => {
                    Start::Snapshots(o)
                }
                _ => Start::Beginning,
            };
            plan.push((p, start));
        }
        if let Err(e) = &committed {
            tracing::warn!("cluster: cannot read committed offsets ({e}); replaying assigned partitions from their beginning");
        }
        for (p, start) in &plan {
            let restored = match start {
                Start::Ours(_) => None,
                _ if shared.snapshots.is_none() => None,
                _ => Some(restore_partition(shared, *p)),
            };
            let offset = match start {
                Start::Ours(o) | Start::Snapshots(o) => Offset::Offset(*o),
                Start::Beginning => Offset::Beginning,
            };
            if let Err(e) = tpl.set_partition_offset(&shared.names.updates, *p, offset) {
                tracing::error!("cluster: cannot set partition {p}'s start: {e}");
            }
            let from = match start {
                Start::Ours(o) | Start::Snapshots(o) => *o,
                Start::Beginning => 0,
            };
            shared.applied.lock().expect("applied lock").insert(*p, from);
            tracing::info!(
                "cluster: partition {p} assigned; {}{}",
                match start {
                    Start::Ours(o) => format!("resuming at our committed offset {o}"),
                    Start::Snapshots(o) => format!("resuming at the committed offset {o}"),
                    Start::Beginning => "replaying from its beginning".into(),
                },
                match &restored {
                    Some(Ok((files, bytes))) =>
                        format!(", {files} files restored from snapshots ({bytes} bytes read)"),
                    Some(Err(e)) => format!(", snapshots not restored: {e}"),
                    None => String::new(),
                }
            );
            if let (Some(Err(_)), Start::Snapshots(_)) = (&restored, start) {
                // Without the snapshots the committed offset is no
                // start: replay everything instead.
                tracing::warn!("cluster: partition {p}: replaying from its beginning instead (no snapshots)");
                let _ = tpl.set_partition_offset(&shared.names.updates, *p, Offset::Beginning);
                shared.applied.lock().expect("applied lock").insert(*p, 0);
            }
        }
        let done =
            if cooperative(consumer) { consumer.incremental_assign(tpl) } else { consumer.assign(tpl) };
        if let Err(e) = done {
            tracing::error!("cluster: assign failed: {e}");
            return;
        }
        shared.owned.write().expect("owned lock").extend(plan.iter().map(|(p, _)| *p));
        shared.ownership_changes.fetch_add(1, Ordering::SeqCst);
    }

    /// Writes and syncs the revoked partitions' pending values, commits
    /// them, and forgets their files. The partitions this node keeps are
    /// not waited for: with the cooperative protocol the node goes on
    /// applying them as soon as this returns.
    fn revoke(&self, consumer: &BaseConsumer<Self>, revoked: &[i32]) {
        let shared = &self.shared;
        tracing::info!("cluster: partitions {revoked:?} revoked; writing their pending values first");
        let cache = &shared.daemon.cache;
        let gone: HashSet<i32> = revoked.iter().copied().collect();
        let moving = |key: &str| !stays(shared.relative_of(key), shared.partitions, &gone);
        let mut files = Vec::new();
        cache.for_each(|k, e| {
            if e.is_flushable() && moving(k) {
                files.push(k.clone());
            }
        });
        for key in files {
            let mut shard = cache.shard(&key);
            if let Some(e) = shard.get_mut(&key) {
                cache.queue_flush(&key, e, rrd_daemon::cache::Side::Tail);
            }
        }
        // No value is applied meanwhile (this is the applier's thread), so
        // once no moving entry has pending or in-flight values, every
        // record applied from the revoked partitions is in synced files.
        let deadline = Instant::now() + Duration::from_secs(60);
        let all_synced = loop {
            let mut busy = false;
            cache.for_each(|k, e| {
                if !busy && e.has_unsynced() && moving(k) {
                    busy = true;
                }
            });
            if !busy {
                break true;
            }
            if Instant::now() > deadline {
                tracing::warn!(
                    "cluster: partitions {revoked:?}: values still pending after 60 s; not committed"
                );
                break false;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        publish_snapshots(shared, &self.book);
        {
            let applied = shared.applied.lock().expect("applied lock");
            let mut book = self.book.lock().expect("book lock");
            // Their offsets leave the per-round bookkeeping (a round's
            // other partitions still wait for their own values).
            for round in book.offsets.values_mut() {
                for p in revoked {
                    round.remove(p);
                }
            }
            if all_synced {
                for p in revoked {
                    if let Some(&a) = applied.get(p) {
                        let slot = book.synced.entry(*p).or_insert(a);
                        *slot = (*slot).max(a);
                    }
                }
            }
        }
        commit_synced(shared, &self.book, consumer, CommitMode::Sync);
        {
            let mut book = self.book.lock().expect("book lock");
            book.dirty.forget_partitions(revoked);
            for p in revoked {
                book.synced.remove(p);
            }
        }
        // Their pending values leave the cache's sums with them.
        cache.retain(|key, _| stays(shared.relative_of(key), shared.partitions, &gone));
        let mut owned = shared.owned.write().expect("owned lock");
        for p in revoked {
            owned.remove(p);
            shared.applied.lock().expect("applied lock").remove(p);
        }
        drop(owned);
        shared.ownership_changes.fetch_add(1, Ordering::SeqCst);
    }
}

/// Whether a cache entry stays after `gone` were revoked: entries outside
/// the base directory (none in cluster mode) and those of other partitions.
fn stays(relative: Option<&str>, partitions: i32, gone: &HashSet<i32>) -> bool {
    match relative {
        None => true,
        Some(rel) => !gone.contains(&partition_of(rel, partitions)),
    }
}

/// Whether the group runs the cooperative protocol (incremental assign
/// and revoke: a rebalance stops only the partitions that move).
fn cooperative<C: ConsumerContext>(consumer: &BaseConsumer<C>) -> bool {
    matches!(consumer.rebalance_protocol(), rdkafka::consumer::RebalanceProtocol::Cooperative)
}

/// The most record bytes one poll round applies.
const ROUND_BYTES_MAX: usize = 16 << 20;

/// The tag's suffix on commits made under the snapshot rule.
pub const SNAPSHOT_TAG: &str = "/snap";

/// Where a newly assigned partition starts.
enum Start {
    Ours(i64),
    Snapshots(i64),
    Beginning,
}

/// Restores partition `p`'s files from their snapshots.
fn restore_partition(shared: &Shared, p: i32) -> Result<(u64, u64), String> {
    let consumer = crate::kafka::plain_consumer(
        &shared.bootstrap,
        &format!("{}.restore.{}", shared.names.group, shared.node_id),
    )
    .map_err(|e| e.to_string())?;
    let (files, bytes) = snapshot::restore(&shared.snapshot_side(), &consumer, p)?;
    shared.files_restored.fetch_add(files, Ordering::Relaxed);
    Ok((files, bytes))
}

/// Publishes the snapshots that are ready (see crate::snapshot).
fn publish_snapshots(shared: &Shared, book: &Mutex<Book>) {
    let Some(producer) = &shared.snapshots else { return };
    let mut dirty = std::mem::take(&mut book.lock().expect("book lock").dirty);
    let before = dirty.files.len();
    let bytes = snapshot::publish_ready(&shared.snapshot_side(), producer, &mut dirty);
    let published = before.saturating_sub(dirty.files.len());
    shared.snapshots_published.fetch_add(published as u64, Ordering::Relaxed);
    shared.snapshot_bytes.fetch_add(bytes, Ordering::Relaxed);
    shared.snapshot_lag_secs.store(dirty.lag_secs(unix_now()) as u64, Ordering::Relaxed);
    let mut b = book.lock().expect("book lock");
    // Files touched while publishing (none: the applier thread publishes).
    let newer = std::mem::take(&mut b.dirty);
    for (rel, (p, first, last)) in newer.files {
        dirty.touch(&rel, p, first);
        dirty.touch(&rel, p, last);
    }
    b.dirty = dirty;
}

/// Commits, per partition, the highest offset of the epochs whose values
/// are all in synced files.
pub fn commit_synced<C: ConsumerContext>(
    shared: &Shared,
    book: &Mutex<Book>,
    consumer: &BaseConsumer<C>,
    mode: CommitMode,
) {
    let mut book = book.lock().expect("book lock");
    let upper = book.epoch;
    // Read the upper bound before the cache (as the journal's removal rule).
    let needed = shared.daemon.cache.oldest_needed_seq(upper);
    let synced: Vec<u64> = book.offsets.range(..needed).map(|(e, _)| *e).collect();
    for e in synced {
        for (p, o) in book.offsets.remove(&e).expect("listed") {
            let slot = book.synced.entry(p).or_insert(o);
            *slot = (*slot).max(o);
        }
    }
    let mut done: HashMap<i32, i64> = book.synced.clone();
    if shared.snapshots.is_some() {
        // Only offsets whose records' files have published snapshots.
        for (p, o) in done.iter_mut() {
            if let Some(u) = book.dirty.oldest_uncovered(*p) {
                *o = (*o).min(u);
            }
        }
    }
    drop(book);
    let owned = shared.owned.read().expect("owned lock");
    let mut tpl = TopicPartitionList::new();
    for (p, o) in done {
        if !owned.contains(&p) {
            continue;
        }
        if let Ok(mut e) = tpl
            .add_partition_offset(&shared.names.updates, p, Offset::Offset(o))
            .map(|_| tpl.find_partition(&shared.names.updates, p).expect("just added"))
        {
            e.set_metadata(shared.tag.clone());
        }
    }
    drop(owned);
    if tpl.count() > 0 {
        if let Err(e) = consumer.commit(&tpl, mode) {
            tracing::warn!("cluster: offset commit failed: {e} (retried at the next round)");
        }
    }
}

/// Applies one record to the cache (module doc). `epoch` tags its values.
/// Returns whether the record reached a file (to be covered by a snapshot).
fn apply(shared: &Shared, record: &Record, epoch: u64) -> bool {
    let daemon = &shared.daemon;
    let key = shared.key_of(&record.path);
    match record.kind {
        Kind::Create => {
            if Path::new(&key).exists() {
                tracing::debug!("cluster: CREATE of existing {key} skipped (replayed)");
                return false;
            }
            let mut args = vec![key.clone()];
            args.extend(record.args.iter().cloned());
            let d = daemon.clone();
            let outcome = shared.runtime.block_on(async move {
                commands::execute(&d, Command::Create, Args::new(args), false).await
            });
            if let commands::Outcome::Reply(r) = outcome {
                if r.is_error() {
                    tracing::warn!("cluster: CREATE {key} failed on apply: {}", r.message);
                }
            }
        }
        Kind::Update => {
            let cache = &daemon.cache;
            let now = unix_now();
            let k: Key = key.as_str().into();
            // The file is opened (outside the shard lock) when it has no
            // entry; the entry may also vanish meanwhile (idle entries are
            // dropped), hence the loop.
            let mut fresh = None;
            let mut shard = loop {
                let shard = cache.shard(&key);
                if shard.contains_key(&k) || fresh.is_some() {
                    break shard;
                }
                drop(shard);
                match commands::open_entry(daemon, &key, None) {
                    Ok(found) => fresh = Some(found),
                    Err(r) => {
                        shared.records_unreadable.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!("cluster: update of {key} skipped: {}", r.message);
                        return false;
                    }
                }
            };
            let made = || fresh.take().map(|(last_up, kept)| cache.new_entry(last_up, kept, now));
            let (_, entry) = shard.get_or_insert_with(&k, made).expect("opened when there was no entry");
            // The front end checked each value (rrd_daemon's check_value,
            // against its clock); here only what the file's state decides:
            // a value not later than the newest (a replay, or a record
            // older than the file) is skipped.
            let mark = entry.mark();
            for value in &record.args {
                match commands::update_value_time(value) {
                    Some(t) if t > entry.last_stamp() => entry.take_value(t, value),
                    _ => {
                        shared.values_skipped.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            if let Some(due) = entry.settle_pending(cache, mark, now, epoch) {
                cache.add_timer(due, k.clone());
            }
        }
    }
    shared.records_applied.fetch_add(1, Ordering::Relaxed);
    true
}

/// The applier thread: subscribe, poll, apply, commit synced offsets once
/// a second; at `stopping`, write everything, commit, leave the group.
pub fn run(shared: Arc<Shared>, bootstrap: String) -> Result<(), ClusterError> {
    let book = Arc::new(Mutex::new(Book { epoch: 1, ..Book::default() }));
    let ctx = Ctx { shared: shared.clone(), book: book.clone() };
    let consumer: Arc<BaseConsumer<Ctx>> = base_config(&bootstrap)
        .set("group.id", &shared.names.group)
        .set("client.id", format!("rrdscale-{}", shared.node_id))
        .set("group.instance.id", "")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "1000")
        .set("fetch.wait.max.ms", "20")
        // Cooperative: a node joining or leaving moves only the partitions
        // that change owner; the others are never revoked, so their owners
        // keep applying (and answering reads) through the rebalance.
        .set("partition.assignment.strategy", "cooperative-sticky")
        .create_with_context(ctx)
        .map(Arc::new)
        .map_err(|e| ClusterError::Kafka { what: "creating the group consumer".into(), source: e })?;
    *shared.group.lock().expect("group lock") = Some(consumer.clone());
    consumer
        .subscribe(&[&shared.names.updates])
        .map_err(|e| ClusterError::Kafka { what: "subscribing".into(), source: e })?;
    let mut last_commit = Instant::now();
    let budget = shared.daemon.config.max_pending_bytes;
    while !shared.stopping.load(Ordering::SeqCst) {
        // Backpressure: the pending budget of one node holds; the log keeps
        // the rest.
        while shared.daemon.cache.pending_bytes.load(Ordering::Relaxed) >= budget
            && !shared.stopping.load(Ordering::SeqCst)
        {
            rrd_daemon::flusher::enqueue_all(&shared.daemon.cache);
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut round: HashMap<i32, i64> = HashMap::new();
        let mut touched: Vec<(String, i32, i64)> = Vec::new();
        let epoch = book.lock().expect("book lock").epoch;
        let (mut polled, mut polled_bytes) = (0, 0usize);
        let mut timeout = Duration::from_millis(100);
        // A round is bounded in records and in bytes (a group record holds
        // up to 512 KiB of values): the pending budget is checked between
        // rounds.
        while polled < 4096 && polled_bytes < ROUND_BYTES_MAX {
            let Some(m) = consumer.poll(timeout) else { break };
            timeout = Duration::ZERO;
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!("cluster: consumer: {e}");
                    break;
                }
            };
            polled += 1;
            polled_bytes += m.payload_len();
            let p = m.partition();
            match Record::decode_all(m.key(), m.payload()) {
                Ok(records) => {
                    for r in records {
                        if partition_of(&r.path, shared.partitions) != p {
                            tracing::error!(
                                "cluster: record for {} found in partition {p}, not {}: skipped (a producer with another hash?)",
                                r.path,
                                partition_of(&r.path, shared.partitions)
                            );
                        } else if apply(&shared, &r, epoch) {
                            touched.push((r.path, p, m.offset()));
                        }
                    }
                }
                Err(e) => tracing::error!("cluster: partition {p} offset {}: {e}; skipped", m.offset()),
            }
            round.insert(p, m.offset() + 1);
            shared.applied.lock().expect("applied lock").insert(p, m.offset() + 1);
        }
        if !round.is_empty() {
            let mut b = book.lock().expect("book lock");
            b.offsets.insert(epoch, round);
            b.epoch += 1;
            if shared.snapshots.is_some() {
                for (rel, p, o) in touched {
                    b.dirty.touch(&rel, p, o);
                }
            }
        }
        if last_commit.elapsed() >= Duration::from_secs(1) {
            publish_snapshots(&shared, &book);
            commit_synced(&shared, &book, &consumer, CommitMode::Async);
            last_commit = Instant::now();
        }
    }
    // Stopping: everything to disk, committed, then leave the group.
    let owned: Vec<i32> = shared.owned.read().expect("owned lock").iter().copied().collect();
    consumer.context().revoke(&consumer, &owned);
    consumer.unsubscribe();
    // The last reference: dropping it closes the consumer (leaves the group).
    shared.group.lock().expect("group lock").take();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Arc::strong_count(&consumer) > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(consumer);
    Ok(())
}
