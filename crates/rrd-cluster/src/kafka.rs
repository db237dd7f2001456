//! The Kafka side: client settings, the topics (created, or validated when
//! they exist), the producer.
//!
//! The durability settings are not tunable: the producer uses `acks=all`
//! with idempotence (a retried send is written once, in order per
//! partition), and the update topic must have replication factor 3 and
//! `min.insync.replicas=2`, so an acknowledged record is on at least two
//! brokers' logs, and a broker that is not in sync cannot become leader
//! (`unclean.leader.election.enable=false`). A node refuses to start on a
//! topic that says otherwise.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::metadata::Metadata;
use rdkafka::producer::FutureProducer;
use rdkafka::types::RDKafkaErrorCode;

use crate::ClusterError;

/// The replication the update topic must have.
pub const REPLICATION: i32 = 3;
pub const MIN_INSYNC: i32 = 2;
/// How long a send may take before its client gets an error.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a metadata or admin request may take.
pub const ADMIN_TIMEOUT: Duration = Duration::from_secs(20);

/// The names a cluster uses in Kafka.
#[derive(Clone, Debug)]
pub struct Names {
    pub updates: String,
    pub snapshots: String,
    pub members: String,
    pub group: String,
}

impl Names {
    pub fn new(cluster: &str) -> Names {
        Names {
            updates: format!("rrdscale.{cluster}.updates"),
            snapshots: format!("rrdscale.{cluster}.snapshots"),
            members: format!("rrdscale.{cluster}.members"),
            group: format!("rrdscale.{cluster}"),
        }
    }
}

pub fn base_config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("socket.keepalive.enable", "true")
        .set("reconnect.backoff.max.ms", "1000")
        // Leaders move when a broker dies: learn it within seconds even on
        // a client that has had no error to make it ask.
        .set("topic.metadata.refresh.interval.ms", "5000")
        .set("log_level", "4");
    c
}

/// The snapshot producer: whole files as messages (crate::snapshot).
pub fn snapshot_producer(bootstrap: &str) -> Result<FutureProducer, ClusterError> {
    base_config(bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("linger.ms", "5")
        .set("message.max.bytes", SNAPSHOT_MESSAGE_BYTES)
        .set("compression.type", "lz4")
        .set("message.timeout.ms", SEND_TIMEOUT.as_millis().to_string())
        .create()
        .map_err(|e| ClusterError::Kafka { what: "creating the snapshot producer".into(), source: e })
}

/// The snapshot topic's and producer's message size limit (above
/// crate::snapshot::SNAPSHOT_BYTES_MAX).
pub const SNAPSHOT_MESSAGE_BYTES: &str = "16777216";

pub fn producer(bootstrap: &str) -> Result<FutureProducer, ClusterError> {
    base_config(bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        // No lingering: a BATCH's records are produced together anyway
        // (crate::front), and records produced while earlier requests are
        // in flight go together in the next one; waiting 1 ms more cost a
        // lone UPDATE 1.2 ms of its round trip (docs/BENCHMARKS.md).
        .set("linger.ms", "0")
        .set("message.timeout.ms", SEND_TIMEOUT.as_millis().to_string())
        .create()
        .map_err(|e| ClusterError::Kafka { what: "creating the producer".into(), source: e })
}

/// A consumer that joins no group (it assigns partitions itself and never
/// commits): metadata, watermarks, the members topic. librdkafka wants a
/// group id for `assign` all the same; `group` is one nobody joins.
pub fn plain_consumer(bootstrap: &str, group: &str) -> Result<BaseConsumer, ClusterError> {
    base_config(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "50")
        .create()
        .map_err(|e| ClusterError::Kafka { what: "creating a consumer".into(), source: e })
}

/// A topic's metadata once it lists partitions (or the last answer after
/// [`ADMIN_TIMEOUT`]).
async fn settled_metadata(client: &Arc<BaseConsumer>, topic: &str) -> Result<Metadata, ClusterError> {
    let deadline = std::time::Instant::now() + ADMIN_TIMEOUT;
    loop {
        let (c, t) = (client.clone(), topic.to_string());
        let meta = tokio::task::spawn_blocking(move || c.fetch_metadata(Some(&t), ADMIN_TIMEOUT))
            .await
            .expect("metadata task")
            .map_err(|e| ClusterError::Kafka { what: format!("reading {topic}'s metadata"), source: e })?;
        let ready = meta.topics().first().is_some_and(|t| !t.partitions().is_empty() && t.error().is_none());
        if ready || std::time::Instant::now() >= deadline {
            return Ok(meta);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates the update and members topics if missing, then checks that the
/// update topic has the replication the durability argument needs, and
/// returns its partition count.
pub async fn ensure_topics(bootstrap: &str, names: &Names, partitions: i32) -> Result<i32, ClusterError> {
    let admin: AdminClient<DefaultClientContext> = base_config(bootstrap)
        .create()
        .map_err(|e| ClusterError::Kafka { what: "creating the admin client".into(), source: e })?;
    let updates = NewTopic::new(&names.updates, partitions, TopicReplication::Fixed(REPLICATION))
        .set("min.insync.replicas", "2")
        .set("unclean.leader.election.enable", "false")
        // No snapshots yet: a new owner rebuilds a file from the whole
        // partition, so nothing may expire (docs/cluster.md, "Costs").
        .set("retention.ms", "-1")
        .set("retention.bytes", "-1");
    let snapshots = NewTopic::new(&names.snapshots, partitions, TopicReplication::Fixed(REPLICATION))
        .set("cleanup.policy", "compact")
        .set("min.insync.replicas", "2")
        .set("unclean.leader.election.enable", "false")
        .set("max.message.bytes", SNAPSHOT_MESSAGE_BYTES);
    let members = NewTopic::new(&names.members, 1, TopicReplication::Fixed(REPLICATION))
        .set("cleanup.policy", "compact")
        .set("min.insync.replicas", "2");
    let opts =
        AdminOptions::new().operation_timeout(Some(ADMIN_TIMEOUT)).request_timeout(Some(ADMIN_TIMEOUT));
    let results = admin
        .create_topics([&updates, &snapshots, &members], &opts)
        .await
        .map_err(|e| ClusterError::Kafka { what: "creating the topics".into(), source: e })?;
    for r in results {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((topic, code)) => {
                return Err(ClusterError::Topic { topic, why: format!("cannot be created: {code}") })
            }
        }
    }
    // Validate what is there (ours or someone else's). A topic just
    // created may not be in every broker's metadata yet: asked again
    // until it has partitions (a node started with the brokers exited
    // here with "has no partitions").
    let meta_client = Arc::new(plain_consumer(bootstrap, &format!("{}.admin", names.group))?);
    let meta = settled_metadata(&meta_client, &names.updates).await?;
    let t = meta.topics().first().ok_or_else(|| ClusterError::Topic {
        topic: names.updates.clone(),
        why: "is missing from the metadata".into(),
    })?;
    if t.partitions().is_empty() {
        return Err(ClusterError::Topic { topic: names.updates.clone(), why: "has no partitions".into() });
    }
    for p in t.partitions() {
        if p.replicas().len() != REPLICATION as usize {
            return Err(ClusterError::Topic {
                topic: names.updates.clone(),
                why: format!(
                    "partition {} has {} replicas; cluster mode needs {REPLICATION}",
                    p.id(),
                    p.replicas().len()
                ),
            });
        }
    }
    // Asked again while the answering broker does not know the new topic
    // yet (a node started with the brokers exited with "None" here).
    let deadline = std::time::Instant::now() + ADMIN_TIMEOUT;
    let min_isr = loop {
        let found =
            admin.describe_configs([&ResourceSpecifier::Topic(&names.updates)], &opts).await.map_err(
                |e| ClusterError::Kafka { what: "reading the topic's configuration".into(), source: e },
            )?;
        let min_isr = found
            .first()
            .and_then(|r| r.as_ref().ok())
            .and_then(|c| c.get("min.insync.replicas").and_then(|e| e.value.clone()))
            .and_then(|v| v.parse::<i32>().ok());
        if min_isr.is_some() || std::time::Instant::now() >= deadline {
            break min_isr;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    if !matches!(min_isr, Some(m) if m >= MIN_INSYNC) {
        return Err(ClusterError::Topic {
            topic: names.updates.clone(),
            why: format!("has min.insync.replicas {min_isr:?}; cluster mode needs at least {MIN_INSYNC}"),
        });
    }
    let count = t.partitions().len();
    let snap = settled_metadata(&meta_client, &names.snapshots).await?;
    let snap_count = snap.topics().first().map_or(0, |t| t.partitions().len());
    if snap_count != count {
        return Err(ClusterError::Topic {
            topic: names.snapshots.clone(),
            why: format!("has {snap_count} partitions; it needs the update topic's {count}"),
        });
    }
    Ok(count as i32)
}
