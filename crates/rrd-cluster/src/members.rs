//! Who owns which partition, and where to reach it: the members topic.
//!
//! Each node publishes, after every change of its assignment (and every
//! few seconds), one record keyed by its node id: its client address
//! (`--advertise`), the partitions it owns, and the time. The topic is
//! compacted, so it holds the latest record of each node. Every node reads
//! it from the beginning and keeps the table; the owner of a partition is
//! the node with the newest record claiming it (a dead node's last record
//! keeps its claims until the new owners publish theirs, which are newer).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

use crate::node::Shared;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub address: String,
    pub partitions: Vec<i32>,
    pub at_ms: i64,
}

impl Member {
    pub fn encode(&self) -> String {
        let parts: Vec<String> = self.partitions.iter().map(i32::to_string).collect();
        format!("{}\n{}\n{}\n", self.address, parts.join(","), self.at_ms)
    }

    pub fn decode(text: &str) -> Option<Member> {
        let mut lines = text.lines();
        let address = lines.next()?.to_string();
        let parts = lines.next()?;
        let partitions = if parts.is_empty() {
            Vec::new()
        } else {
            parts.split(',').map(|p| p.parse().ok()).collect::<Option<_>>()?
        };
        let at_ms = lines.next()?.parse().ok()?;
        Some(Member { address, partitions, at_ms })
    }
}

#[derive(Default)]
pub struct Table {
    pub members: RwLock<HashMap<String, Member>>,
}

impl Table {
    /// The node id and address of `partition`'s owner, as last published.
    pub fn owner(&self, partition: i32) -> Option<(String, String)> {
        let m = self.members.read().expect("members lock");
        m.iter()
            .filter(|(_, v)| v.partitions.contains(&partition))
            .max_by_key(|(_, v)| v.at_ms)
            .map(|(k, v)| (k.clone(), v.address.clone()))
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Publishes this node's record now (`partitions` empty when leaving).
pub async fn publish(producer: &FutureProducer, shared: &Shared, address: &str, partitions: Vec<i32>) {
    let mut partitions = partitions;
    partitions.sort_unstable();
    let m = Member { address: address.to_string(), partitions, at_ms: now_ms() };
    let value = m.encode();
    let record = FutureRecord::to(&shared.names.members).key(&shared.node_id).payload(&value);
    if let Err((e, _)) = producer.send(record, Duration::from_secs(10)).await {
        tracing::warn!("cluster: publishing membership failed: {e}");
    }
}

/// Republishes whenever the owned set changes, and every 5 s.
pub async fn publisher(producer: FutureProducer, shared: Arc<Shared>, address: String) {
    let mut seen = u64::MAX;
    let mut last = std::time::Instant::now();
    while !shared.stopping.load(Ordering::SeqCst) {
        let now = shared.ownership_changes.load(Ordering::SeqCst);
        if now != seen || last.elapsed() > Duration::from_secs(5) {
            seen = now;
            last = std::time::Instant::now();
            let owned: Vec<i32> = shared.owned.read().expect("owned lock").iter().copied().collect();
            publish(&producer, &shared, &address, owned).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    publish(&producer, &shared, &address, Vec::new()).await;
}

/// Reads the members topic from its beginning into `table`, until stopping.
pub fn reader(consumer: BaseConsumer, shared: Arc<Shared>, table: Arc<Table>) {
    let mut tpl = TopicPartitionList::new();
    let assigned = tpl
        .add_partition_offset(&shared.names.members, 0, Offset::Beginning)
        .and_then(|_| consumer.assign(&tpl));
    if let Err(e) = assigned {
        shared.fatal(&format!("cannot read the members topic: {e}"));
        return;
    }
    while !shared.stopping.load(Ordering::SeqCst) {
        let Some(Ok(m)) = consumer.poll(Duration::from_millis(200)) else { continue };
        let Some(key) = m.key().and_then(|k| std::str::from_utf8(k).ok()) else { continue };
        match m.payload().and_then(|p| std::str::from_utf8(p).ok()).and_then(Member::decode) {
            Some(member) => {
                table.members.write().expect("members lock").insert(key.to_string(), member);
            }
            None => {
                table.members.write().expect("members lock").remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_round_trip_and_the_newest_claim_wins() {
        let a = Member { address: "127.0.0.1:1".into(), partitions: vec![0, 3], at_ms: 10 };
        assert_eq!(Member::decode(&a.encode()), Some(a.clone()));
        let none = Member { address: "h:2".into(), partitions: vec![], at_ms: 5 };
        assert_eq!(Member::decode(&none.encode()), Some(none));
        assert_eq!(Member::decode("h:1\nx\n3\n"), None);
        let t = Table::default();
        t.members.write().unwrap().insert("a".into(), a);
        t.members
            .write()
            .unwrap()
            .insert("b".into(), Member { address: "127.0.0.1:2".into(), partitions: vec![3], at_ms: 20 });
        assert_eq!(t.owner(3), Some(("b".into(), "127.0.0.1:2".into())));
        assert_eq!(t.owner(0), Some(("a".into(), "127.0.0.1:1".into())));
        assert_eq!(t.owner(1), None);
    }
}
