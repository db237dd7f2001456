//! The request side of a node: rrdcached's protocol, unchanged for
//! clients, answered cluster-wide.
//!
//! - UPDATE and CREATE become records of the update topic, in the
//!   partition of their file ([`crate::hash`]), and are answered only when
//!   Kafka acknowledged them with `acks=all` (so on at least
//!   `min.insync.replicas` = 2 brokers). The commands of one read (what a
//!   BATCH or a pipelining client sent) are sent together, one group
//!   record per partition ([`crate::record`]), before any reply is
//!   awaited: a BATCH of 1,000 updates costs the brokers about one record
//!   per partition and one round trip, not 1,000 of each. What a single node
//!   checks from the file (the value later than the file's last update)
//!   is checked by the owner when it applies the record, where a value at
//!   or before the last update is skipped, as rrdtool would refuse it.
//! - FETCH, INFO, FIRST, LAST, FLUSH name a file: the owner of its
//!   partition answers. On the owner, the read first waits (at most
//!   [`CATCH_UP_MAX`]) until the node has applied its partition up to the
//!   log's end as it was when the read arrived, so a read sees every update
//!   acknowledged before it, pending values merged as on one node. On
//!   another node the line is forwarded to the owner's address (from the
//!   members topic) over the same protocol, preceded by `CLUSTER-FORWARDED`
//!   so that a forwarded read is never forwarded again (during a
//!   rebalance a node that does not own the file answers with an error).
//! - FORGET is refused: the log, not the cache, holds the values.
//! - Anything else (STATS with cluster lines added, PENDING, QUEUE,
//!   FLUSHALL, LIST, SUSPEND, ...) is this node's own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rrd_daemon::cache::unix_now;
use rrd_daemon::commands::{self, Args, Outcome};
use rrd_protocol::reply::BatchErrors;
use rrd_protocol::{gate, Command, Context, Fields, Frame, LineFramer, Permissions, Reply};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use crate::figures::Figures;
use crate::hash::partition_of;
use crate::members::Table;
use crate::node::Shared;
use crate::record::{group_len, push_to_group, Kind, Record, GROUP_BYTES_MAX};
use crate::snapshot::SNAPSHOT_BYTES_MAX;

/// How long a read on the owner waits for the node to apply what the log
/// held when the read arrived.
pub const CATCH_UP_MAX: Duration = Duration::from_secs(5);
/// How long a forwarded request may take.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);
/// The line a forwarding node sends first.
pub const FORWARDED: &str = "CLUSTER-FORWARDED";

pub struct Front {
    pub shared: Arc<Shared>,
    pub producer: FutureProducer,
    pub table: Arc<Table>,
}

enum Queued {
    Ready(Reply),
    Raw(Vec<u8>),
    /// A reply given once the record with this ticket is acknowledged.
    Sent(usize, Reply),
}

struct Batch {
    count: u64,
    errors: Vec<(u64, String)>,
    /// (line number, ticket)
    sends: Vec<(u64, usize)>,
}

/// A sent group record: its delivery, then its outcome.
enum Group {
    Waiting(DeliveryFuture),
    Done(Result<(), String>),
}

struct Session {
    front: Arc<Front>,
    permissions: Permissions,
    batch: Option<Batch>,
    queue: Vec<Queued>,
    forwarded: bool,
    /// Commands received but not sent yet, with their tickets.
    unsent: Vec<(usize, Record)>,
    unsent_bytes: usize,
    /// Per ticket: the group record that carries it (`usize::MAX`: not
    /// sent yet).
    tickets: Vec<usize>,
    groups: Vec<Group>,
}

fn kafka_error(why: impl std::fmt::Display) -> String {
    format!("Kafka did not take the update, not acknowledged: {why}")
}

async fn delivered(f: DeliveryFuture) -> Result<(), String> {
    match f.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err((e, _))) => Err(kafka_error(e)),
        Err(_) => Err(kafka_error("the producer stopped")),
    }
}

impl Front {
    /// Sends one record to its partition; the future resolves when Kafka
    /// acknowledged it (acks=all).
    fn send(&self, record: &Record) -> Result<DeliveryFuture, String> {
        let p = partition_of(&record.path, self.shared.partitions);
        let value = record.encode_value();
        let r = FutureRecord::to(&self.shared.names.updates).partition(p).key(&record.path).payload(&value);
        self.producer.send_result(r).map_err(|(e, _)| kafka_error(e))
    }

    /// Sends a group record ([`crate::record::push_to_group`]) to
    /// `partition`.
    fn send_group(&self, partition: i32, value: &[u8]) -> Result<DeliveryFuture, String> {
        let r = FutureRecord::<(), [u8]>::to(&self.shared.names.updates).partition(partition).payload(value);
        self.producer.send_result(r).map_err(|(e, _)| kafka_error(e))
    }

    /// The file's key and path relative to the base directory.
    fn locate(&self, file: &str) -> Result<(String, String), Reply> {
        let key = self
            .shared
            .daemon
            .paths()
            .resolve(file)
            .map_err(|d| Reply::error(format!("{}: Permission denied", d.shown)))?;
        let rel = self.shared.relative_of(&key).map(str::to_string).ok_or_else(|| {
            Reply::error(format!(
                "{file}: outside the base directory; cluster mode shards files by their path beneath it"
            ))
        })?;
        Ok((key, rel))
    }

    /// UPDATE: rrdcached's checks of the values' form (not of the file),
    /// then one record of the accepted prefix.
    fn update(&self, args: Vec<String>) -> Result<(Record, Reply), Reply> {
        let mut it = args.into_iter();
        let Some(file) = it.next() else { return Err(commands::syntax_error(Command::Update)) };
        let (_, rel) = self.locate(&file)?;
        let values: Vec<String> = it.collect();
        if values.is_empty() {
            return Err(Reply::error("No values updated."));
        }
        let now = unix_now();
        let mut error = None;
        let mut last = f64::NEG_INFINITY;
        let mut count = 0;
        for v in &values {
            match commands::check_value(v, last, now) {
                Ok(t) => {
                    last = t;
                    count += 1;
                }
                Err(refusal) => {
                    error = Some(refusal.to_string());
                    break;
                }
            }
        }
        let reply = match &error {
            Some(e) => Reply::error(e.clone()),
            None => Reply::ok_line(format!("errors, enqueued {count} value(s).")),
        };
        if count == 0 {
            return Err(reply);
        }
        let mut values = values;
        values.truncate(count);
        let record = Record { kind: Kind::Update, path: rel, args: values };
        rrd_daemon::stats::Stats::add(&self.shared.daemon.stats.updates_received, 1);
        Ok((record, reply))
    }

    /// CREATE: the start time made explicit (a replay on another node, or
    /// later, must create the same file), `-r`/`-t` refused (their files
    /// live on their own owners).
    fn create(&self, args: Vec<String>) -> Result<(Record, Reply), Reply> {
        let mut it = args.into_iter();
        let Some(file) = it.next() else { return Err(commands::syntax_error(Command::Create)) };
        let (_, rel) = self.locate(&file)?;
        let rest: Vec<String> = it.collect();
        if rest.iter().any(|t| t.starts_with("-r") || t.starts_with("-t")) {
            return Err(Reply::error(
                "CREATE with -r or -t is not available in cluster mode (the source file lives on its own owner)",
            ));
        }
        if !rest.iter().any(|t| t.starts_with("DS:")) || !rest.iter().any(|t| t.starts_with("RRA:")) {
            return Err(commands::syntax_error(Command::Create));
        }
        let bytes = check_create(&rest)?;
        if self.shared.snapshots.is_some() && bytes > SNAPSHOT_BYTES_MAX as u64 {
            // One snapshot is one Kafka message: a larger file would stop
            // its partition's commits for good (crate::snapshot).
            return Err(Reply::error(format!(
                "RRD Error: the file would take {bytes} bytes; cluster mode keeps files of at most \
                 {SNAPSHOT_BYTES_MAX} bytes (a snapshot is one Kafka message; docs/cluster.md)"
            )));
        }
        let mut fields = rest;
        if !fields.iter().any(|t| t.starts_with("-b")) {
            // rrdcached's default start: ten seconds ago.
            fields.insert(0, "-b".into());
            fields.insert(1, (unix_now() - 10).to_string());
        }
        let record = Record { kind: Kind::Create, path: rel, args: fields };
        Ok((record, Reply::ok_line("RRD created OK")))
    }

    /// Waits until this node applied `partition` up to the log end the
    /// broker reports now (bounded by [`CATCH_UP_MAX`]).
    async fn catch_up(&self, partition: i32) {
        let deadline = Instant::now() + CATCH_UP_MAX;
        // The log end now; retried while a broker is failing over.
        let high = loop {
            let shared = self.shared.clone();
            let asked =
                tokio::task::spawn_blocking(move || shared.log_end(partition, Duration::from_secs(1))).await;
            match asked {
                Ok(Ok(h)) => break h,
                Ok(Err(e)) if Instant::now() >= deadline => {
                    tracing::warn!(
                        "cluster: a read of partition {partition} did not wait for the log end: {e}"
                    );
                    return;
                }
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        while Instant::now() < deadline {
            let applied = self.shared.applied.lock().expect("applied lock").get(&partition).copied();
            match applied {
                Some(a) if a < high => tokio::time::sleep(Duration::from_millis(2)).await,
                _ => return,
            }
        }
        tracing::warn!(
            "cluster: a read of partition {partition} answered before the node applied the log up to {high}"
        );
    }

    /// Forwards `line` to `address` and returns the reply's bytes.
    async fn forward(&self, address: &str, line: &[u8]) -> Result<Vec<u8>, String> {
        let work = async {
            let stream = tokio::net::TcpStream::connect(address).await?;
            stream.set_nodelay(true)?;
            let (rd, mut wr) = stream.into_split();
            let mut request = Vec::with_capacity(line.len() + 32);
            request.extend_from_slice(FORWARDED.as_bytes());
            request.push(b'\n');
            request.extend_from_slice(line);
            request.extend_from_slice(b"\nQUIT\n");
            wr.write_all(&request).await?;
            let mut rd = BufReader::new(rd);
            let mut out = Vec::new();
            rd.read_until(b'\n', &mut out).await?;
            let status: i64 = std::str::from_utf8(&out)
                .ok()
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.trim().parse().ok())
                .ok_or_else(|| std::io::Error::other("the owner's reply has no status"))?;
            for _ in 0..status.max(0) {
                rd.read_until(b'\n', &mut out).await?;
            }
            Ok::<_, std::io::Error>(out)
        };
        match tokio::time::timeout(FORWARD_TIMEOUT, work).await {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("timed out".into()),
        }
    }

    /// STATS: the node's own counters, then the cluster's.
    async fn stats(&self, daemon_reply: Reply) -> Reply {
        let shared = self.shared.clone();
        let figures = tokio::task::spawn_blocking(move || Figures::fresh(&shared)).await.unwrap_or_default();
        let mut body = daemon_reply.body;
        for (name, value) in figures.stats_lines() {
            body.extend_from_slice(format!("{name}: {value}\n").as_bytes());
        }
        Reply::ok("Statistics follow", body)
    }
}

/// A CREATE's definitions checked as the owner will apply them (the
/// daemon's parsing of `-b`, `-s`, `-O`, DS and RRA, then the engine's
/// header built without writing), so that the client gets the error the
/// single node gives instead of an OK for a file that will never exist.
/// Returns the size the file will have (its data area and a bound on its
/// header).
pub fn check_create(fields: &[String]) -> Result<u64, Reply> {
    let mut opts = rrd_engine::create::CreateOptions::default();
    let mut defs = Vec::new();
    let mut it = fields.iter();
    while let Some(tok) = it.next() {
        if tok.starts_with("-b") || tok.starts_with("-s") {
            let Some(value) = it.next() else { return Err(commands::syntax_error(Command::Create)) };
            // rrdcached reads both with `atol`, as the single node does.
            let n = rrd_lang::numparse::atol(value);
            if tok.starts_with("-b") {
                if n < 3600 * 24 * 365 * 10 {
                    return Err(Reply::error("The first entry must be after 1980."));
                }
                opts.start = Some(n);
            } else if n > 0 {
                opts.step_secs = Some(n as u64);
            }
        } else if tok.starts_with("DS:") || tok.starts_with("RRA:") {
            defs.push(tok.clone());
        } else if !tok.starts_with("-O") {
            return Err(commands::syntax_error(Command::Create));
        }
    }
    let header = rrd_engine::create::build_header(&opts, &defs, unix_now())
        .map_err(|e| Reply::error(format!("RRD Error: {e}")))?;
    let ds = header.ds_count() as u64;
    let rows: u64 = header.rra().iter().map(|r| r.row_count).fold(0u64, u64::saturating_add);
    // The header: 512 bytes per DS and per RRA bound every version's.
    Ok(rows.saturating_mul(ds).saturating_mul(8).saturating_add(512 * (ds + header.rra().len() as u64 + 1)))
}

impl Session {
    fn reply(&mut self, r: Reply) {
        match &mut self.batch {
            Some(b) if r.is_error() => b.errors.push((b.count, r.message)),
            Some(_) => {}
            None => self.queue.push(Queued::Ready(r)),
        }
    }

    /// Queues `record` to be sent with the rest of this read; `reply` is
    /// given once Kafka acknowledged it.
    fn enqueue(&mut self, record: Record, reply: Reply) {
        let ticket = self.tickets.len();
        self.tickets.push(usize::MAX);
        self.unsent_bytes += group_len(&record);
        self.unsent.push((ticket, record));
        match &mut self.batch {
            Some(b) => {
                if reply.is_error() {
                    b.errors.push((b.count, reply.message));
                }
                b.sends.push((b.count, ticket));
            }
            None => self.queue.push(Queued::Sent(ticket, reply)),
        }
    }

    /// Sends what [`Session::enqueue`] gathered: per partition, in the
    /// order received, group records of at most `GROUP_BYTES_MAX` (a
    /// command alone goes as a plain record, readable by every node).
    fn send_unsent(&mut self) {
        if self.unsent.is_empty() {
            return;
        }
        let front = self.front.clone();
        let partitions = front.shared.partitions;
        let mut by_partition: std::collections::BTreeMap<i32, Vec<(usize, Record)>> = Default::default();
        for (ticket, r) in self.unsent.drain(..) {
            by_partition.entry(partition_of(&r.path, partitions)).or_default().push((ticket, r));
        }
        self.unsent_bytes = 0;
        for (p, list) in by_partition {
            let mut value = Vec::new();
            let mut carried = Vec::new();
            let mut it = list.into_iter().peekable();
            while let Some((ticket, r)) = it.next() {
                let single = value.is_empty()
                    && it.peek().is_none_or(|(_, n)| group_len(n) + group_len(&r) > GROUP_BYTES_MAX);
                if single {
                    let sent = front.send(&r);
                    self.record_sent(sent, &[ticket]);
                    continue;
                }
                push_to_group(&mut value, &r);
                carried.push(ticket);
                let full = it.peek().is_none_or(|(_, n)| value.len() + group_len(n) > GROUP_BYTES_MAX);
                if full {
                    let sent = front.send_group(p, &value);
                    self.record_sent(sent, &carried);
                    value.clear();
                    carried.clear();
                }
            }
        }
    }

    fn record_sent(&mut self, sent: Result<DeliveryFuture, String>, tickets: &[usize]) {
        let g = self.groups.len();
        self.groups.push(match sent {
            Ok(f) => Group::Waiting(f),
            Err(e) => Group::Done(Err(e)),
        });
        for &t in tickets {
            self.tickets[t] = g;
        }
    }

    /// The outcome of the record carrying `ticket` (awaited if need be).
    async fn outcome(&mut self, ticket: usize) -> Result<(), String> {
        let g = self.tickets[ticket];
        let Some(group) = self.groups.get_mut(g) else { return Err(kafka_error("never sent")) };
        match std::mem::replace(group, Group::Done(Ok(()))) {
            Group::Waiting(f) => {
                let r = delivered(f).await;
                *group = Group::Done(r.clone());
                r
            }
            Group::Done(r) => {
                *group = Group::Done(r.clone());
                r
            }
        }
    }

    /// Waits until every record sent so far was acknowledged or failed.
    async fn settle(&mut self) {
        for g in 0..self.groups.len() {
            if let Group::Waiting(_) = self.groups[g] {
                let Group::Waiting(f) = std::mem::replace(&mut self.groups[g], Group::Done(Ok(()))) else {
                    unreachable!("matched above")
                };
                self.groups[g] = Group::Done(delivered(f).await);
            }
        }
    }

    /// Returns false to close the connection.
    // One dispatch over what a client line can hold, with the ordering rules of each.
    #[allow(clippy::too_many_lines)]
    async fn line(&mut self, line: &[u8]) -> bool {
        let mut fields = Fields::new(line);
        let Some(Ok(name)) = fields.next_field() else {
            self.reply(Reply::error("Unable to parse command (a lone backslash ends the line)"));
            return true;
        };
        if name == FORWARDED.as_bytes() && self.batch.is_none() {
            self.forwarded = true;
            return true;
        }
        // Anything but an UPDATE or CREATE sees the ones before it sent
        // (a read waits for the log end, which then includes them).
        let gathers = Command::find(&name).is_some_and(|c| matches!(c, Command::Update | Command::Create));
        if !gathers || self.unsent_bytes >= GROUP_BYTES_MAX {
            self.send_unsent();
        }
        if let Some(b) = &mut self.batch {
            b.count += 1;
        }
        let context = if self.batch.is_some() { Context::Batch } else { Context::Client };
        let (command, args) = match gate::line(&name, fields, self.permissions, context) {
            Ok(gated) => gated,
            Err(refusal) => {
                self.reply(refusal);
                return true;
            }
        };
        let front = self.front.clone();
        match command {
            Command::Batch => {
                self.reply(Reply::ok_line("Go ahead.  End with dot '.' on its own line."));
                self.batch = Some(Batch { count: 0, errors: Vec::new(), sends: Vec::new() });
            }
            Command::BatchEnd => {
                let b = self.batch.take().expect("`.` is only allowed inside a BATCH");
                let mut errors = b.errors;
                for (n, ticket) in b.sends {
                    if let Err(why) = self.outcome(ticket).await {
                        errors.push((n, why));
                    }
                }
                errors.sort_by_key(|(n, _)| *n);
                let mut out = BatchErrors::default();
                for (n, m) in errors {
                    out.push(n, m);
                }
                self.queue.push(Queued::Ready(out.into_reply()));
            }
            Command::Update => match front.update(args) {
                Ok((record, r)) => self.enqueue(record, r),
                Err(r) => self.reply(r),
            },
            Command::Create => match front.create(args) {
                Ok((record, r)) => self.enqueue(record, r),
                Err(r) => self.reply(r),
            },
            Command::Forget => self.reply(Reply::error(
                "FORGET is not available in cluster mode: the replicated log, not the cache, holds the values",
            )),
            Command::FetchBin => self.reply(Reply::error("FETCHBIN is not available in cluster mode; use FETCH")),
            // A file's writes belong to its partition's owner; these are not routed.
            Command::Tune | Command::Dump => {
                self.reply(Reply::error(format!("{} is not available in cluster mode", command.name())))
            }
            Command::Fetch | Command::Info | Command::First | Command::Last | Command::Flush => {
                // Updates sent before it on this connection are in the
                // log end the owner waits for.
                self.settle().await;
                self.routed(command, args, line).await;
            }
            Command::Stats => {
                if let Outcome::Reply(r) = commands::execute(&front.shared.daemon, command, Args::new(args), false).await {
                    let r = front.stats(r).await;
                    self.reply(r);
                }
            }
            _ => match commands::execute(&front.shared.daemon, command, Args::new(args), self.batch.is_some()).await
            {
                Outcome::Reply(r) | Outcome::AfterCommit(_, r) => self.reply(r),
                Outcome::ReplyThenClose(r) => {
                    if self.batch.is_none() {
                        self.queue.push(Queued::Ready(r));
                    }
                    return false;
                }
                Outcome::Close => return false,
            },
        }
        true
    }

    /// A command about one file: answered here if this node owns it, else
    /// by the owner.
    async fn routed(&mut self, command: Command, args: Vec<String>, line: &[u8]) {
        let front = self.front.clone();
        let Some(file) = args.first() else {
            self.reply(commands::syntax_error(command));
            return;
        };
        let (_, rel) = match front.locate(file) {
            Ok(found) => found,
            Err(r) => return self.reply(r),
        };
        let p = partition_of(&rel, front.shared.partitions);
        if front.shared.owns(p) {
            front.catch_up(p).await;
            match commands::execute(&front.shared.daemon, command, Args::new(args), false).await {
                Outcome::Reply(r) | Outcome::AfterCommit(_, r) | Outcome::ReplyThenClose(r) => self.reply(r),
                Outcome::Close => {}
            }
            return;
        }
        if self.forwarded {
            self.reply(Reply::error(format!(
                "this node does not own partition {p} of {file} (ownership is moving; try again)"
            )));
            return;
        }
        match front.table.owner(p) {
            None => self.reply(Reply::error(format!("no node owns partition {p} of {file} yet; try again"))),
            Some((node, address)) => match front.forward(&address, line).await {
                Ok(bytes) if self.batch.is_none() => self.queue.push(Queued::Raw(bytes)),
                Ok(_) => {}
                Err(e) => self.reply(Reply::error(format!(
                    "cannot reach node {node} ({address}), the owner of {file}: {e}"
                ))),
            },
        }
    }

    async fn write_replies<W: AsyncWrite + Unpin>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.send_unsent();
        let mut out = Vec::new();
        let queue = std::mem::take(&mut self.queue);
        for q in queue {
            match q {
                Queued::Ready(r) => r.encode(&mut out),
                Queued::Raw(bytes) => out.extend_from_slice(&bytes),
                Queued::Sent(ticket, r) => match self.outcome(ticket).await {
                    Err(why) => Reply::error(why).encode(&mut out),
                    Ok(()) => r.encode(&mut out),
                },
            }
        }
        if self.batch.is_none() {
            // Every ticket was answered: start over.
            self.tickets.clear();
            self.groups.clear();
        }
        if !out.is_empty() {
            w.write_all(&out).await?;
            w.flush().await?;
        }
        Ok(())
    }
}

/// Serves one client connection until it leaves, QUIT, or shutdown.
pub async fn serve<S>(front: Arc<Front>, stream: S, permissions: Permissions)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let daemon = front.shared.daemon.clone();
    rrd_daemon::stats::Stats::add(&daemon.stats.connections, 1);
    let mut shutdown = daemon.shutdown.subscribe();
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut session = Session {
        front,
        permissions,
        batch: None,
        queue: Vec::new(),
        forwarded: false,
        unsent: Vec::new(),
        unsent_bytes: 0,
        tickets: Vec::new(),
        groups: Vec::new(),
    };
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut lines = LineFramer::new();
    loop {
        if *shutdown.borrow() {
            break;
        }
        buf.reserve(64 * 1024);
        tokio::select! {
            r = rd.read_buf(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            _ = shutdown.changed() => break,
        }
        let mut close = false;
        while let Some(frame) = lines.next(&buf) {
            match frame {
                Frame::Line(line) => {
                    if !session.line(line).await {
                        close = true;
                        break;
                    }
                }
                Frame::TooLong(reply) => session.reply(reply),
            }
        }
        if let Some(reply) = lines.compact(&mut buf).filter(|_| !close) {
            session.reply(reply);
        }
        if session.write_replies(&mut wr).await.is_err() || close {
            break;
        }
    }
    let _ = session.write_replies(&mut wr).await;
    let _ = wr.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_create_is_checked_and_sized_before_it_is_logged() {
        let small = check_create(&fields(&[
            "-b",
            "1700000000",
            "-s",
            "300",
            "DS:a:GAUGE:600:U:U",
            "RRA:AVERAGE:0.5:1:600",
        ]))
        .unwrap();
        assert!((600 * 8..600 * 8 + 4096).contains(&small), "{small}");
        // Two DS, two RRAs: rows x DS x 8 bytes.
        let two = check_create(&fields(&[
            "DS:a:GAUGE:600:U:U",
            "DS:b:COUNTER:600:U:U",
            "RRA:AVERAGE:0.5:1:1000",
            "RRA:MAX:0.5:6:500",
        ]))
        .unwrap();
        assert!((1500 * 2 * 8..1500 * 2 * 8 + 4096).contains(&two), "{two}");
        // Huge rows: sized, not built (the front refuses it above the
        // snapshot limit).
        let huge = check_create(&fields(&["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:100000000"])).unwrap();
        assert!(huge > SNAPSHOT_BYTES_MAX as u64, "{huge}");
        // The single node's refusals.
        let bad = check_create(&fields(&["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:2:1:10"])).unwrap_err();
        assert!(bad.message.starts_with("RRD Error:"), "{}", bad.message);
        assert!(check_create(&fields(&["-b", "5", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"])).is_err());
    }
}
