//! Cluster mode of `rrdscale daemon`: nodes that share a replicated log on
//! Apache Kafka, so that files are spread over several hosts and a dead
//! host loses nothing acknowledged.
//!
//! `rrdscale daemon --cluster BOOTSTRAP --node-id ID [--cluster-name NAME]
//! [--cluster-partitions N] [--advertise HOST:PORT] -b DIR [rrdcached
//! options]`. docs/cluster.md has the design and its durability argument.
//!
//! - [`hash`]: which partition a file is in (FNV-1a 64 of its path under
//!   `-b`); fixed across nodes and releases.
//! - [`record`]: the update topic's record format.
//! - [`kafka`]: client settings, topics created or validated (replication
//!   3, `min.insync.replicas` 2), the producer (`acks=all`, idempotent).
//! - [`keys`]: a file named relative to the base directory (records,
//!   snapshots) and as the cache keys it.
//! - [`figures`]: the node's cluster figures, for STATS and `/metrics`.
//! - [`front`]: the rrdcached protocol for clients: updates acknowledged
//!   once Kafka has them; reads answered by the file's owner.
//! - [`node`]: the group consumer that applies this node's partitions
//!   through the single-node daemon's cache and flusher and commits offsets
//!   only for values in synced files.
//! - [`members`]: who owns which partition, and at which address.
//! - [`snapshot`]: synced files published to a compacted topic, so a new
//!   owner restores them instead of replaying a partition's whole history.
//!
//! Why a separate crate: the single-node daemon (rrd-daemon) stays as it
//! is, with no Kafka client linked into its code paths; this crate uses its
//! cache, flusher and commands as a library. The Kafka client is rdkafka
//! over librdkafka (the reference C client, used by Confluent's clients for
//! every language other than Java), built from its vendored source and
//! linked statically.

// One unsafe call: librdkafka's cached watermarks, which rdkafka does not
// wrap (node.rs `cached_log_end`).
#![deny(unsafe_code)]

pub mod figures;
pub mod front;
pub mod hash;
pub mod kafka;
pub mod keys;
pub mod members;
pub mod node;
pub mod record;
pub mod snapshot;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rrd_daemon::config::{self, Parsed};
use rrd_daemon::journaler::Journaler;
use rrd_daemon::server::BoundKind;
use rrd_daemon::state::Daemon;
use rrd_protocol::ListenAddress;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ClusterError {
    #[error("{0}")]
    Usage(String),
    #[error("Kafka: {what}: {source}")]
    Kafka { what: String, source: rdkafka::error::KafkaError },
    #[error("topic {topic} {why}")]
    Topic { topic: String, why: String },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{0}")]
    Daemon(String),
}

impl ClusterError {
    /// The process exit status.
    pub fn status(&self) -> i32 {
        match self {
            ClusterError::Usage(_) => 1,
            _ => 7,
        }
    }
}

/// The cluster options, taken out of the daemon's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOptions {
    pub bootstrap: String,
    pub name: String,
    pub node_id: String,
    pub partitions: i32,
    pub advertise: Option<String>,
    /// `--cluster-snapshots on|off` (default on).
    pub snapshots: bool,
}

/// Whether a daemon command line asks for cluster mode.
pub fn wanted(args: &[String]) -> bool {
    args.iter().any(|a| a == "--cluster" || a.starts_with("--cluster="))
}

/// Splits `args` into the cluster options and the rest (rrdcached's).
pub fn split_args(args: &[String]) -> Result<(ClusterOptions, Vec<String>), ClusterError> {
    let mut rest = Vec::new();
    let mut found: HashMap<&str, String> = HashMap::new();
    let names = [
        "--cluster",
        "--cluster-name",
        "--node-id",
        "--cluster-partitions",
        "--advertise",
        "--cluster-snapshots",
    ];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let matched = names.iter().find(|n| a == *n || a.starts_with(&format!("{n}=")));
        match matched {
            Some(n) => {
                let value = match a.split_once('=') {
                    Some((_, v)) => v.to_string(),
                    None => {
                        i += 1;
                        args.get(i)
                            .cloned()
                            .ok_or_else(|| ClusterError::Usage(format!("{n} needs a value")))?
                    }
                };
                found.insert(n, value);
            }
            None => rest.push(a.clone()),
        }
        i += 1;
    }
    let bootstrap = found.remove("--cluster").unwrap_or_default();
    if bootstrap.is_empty() {
        return Err(ClusterError::Usage(
            "--cluster needs the Kafka bootstrap servers (HOST:PORT,...)".into(),
        ));
    }
    let node_id = found
        .remove("--node-id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ClusterError::Usage("cluster mode needs --node-id ID (unique per node)".into()))?;
    if node_id.contains(['\n', ' ', '/']) {
        return Err(ClusterError::Usage("--node-id may not contain spaces, slashes or newlines".into()));
    }
    let name = found.remove("--cluster-name").unwrap_or_else(|| "rrdscale".into());
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)) {
        return Err(ClusterError::Usage("--cluster-name takes letters, digits, '-' and '_'".into()));
    }
    let partitions = match found.remove("--cluster-partitions") {
        None => 12,
        Some(p) => p
            .parse::<i32>()
            .ok()
            .filter(|p| (1..=10_000).contains(p))
            .ok_or_else(|| ClusterError::Usage(format!("--cluster-partitions {p}: 1 to 10000")))?,
    };
    let advertise = found.remove("--advertise");
    let snapshots = match found.remove("--cluster-snapshots").as_deref() {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => return Err(ClusterError::Usage(format!("--cluster-snapshots {other}: on or off"))),
    };
    Ok((ClusterOptions { bootstrap, name, node_id, partitions, advertise, snapshots }, rest))
}

/// `rrdscale daemon --cluster ...`: runs a node until SIGTERM/SIGINT.
// A node's life in order (start, serve, stop); the steps share the node's handles.
#[allow(clippy::too_many_lines)]
pub fn run(args: &[String]) -> Result<(), ClusterError> {
    let (opts, rest) = split_args(args)?;
    let mut config = match config::parse_args(&rest).map_err(|e| ClusterError::Usage(e.message))? {
        Parsed::Help => return Err(ClusterError::Usage(config::USAGE.into())),
        Parsed::Run(c, warnings) => {
            for w in warnings {
                eprintln!("{w}");
            }
            *c
        }
    };
    if config.base_dir.is_none() {
        return Err(ClusterError::Usage(
            "cluster mode needs -b DIR: files are sharded by their path beneath it".into(),
        ));
    }
    if config.journal_dir.is_some() {
        return Err(ClusterError::Usage(
            "cluster mode takes no -j: the replicated log replaces the journal (docs/cluster.md)".into(),
        ));
    }
    // Replayed CREATEs make their directories, as the first one did.
    config.allow_recursive_mkdir = true;
    config.foreground = true;
    config.prepare().map_err(|e| ClusterError::Usage(e.message))?;
    let listeners =
        rrd_daemon::server::bind_all(&config.listen).map_err(|e| ClusterError::Daemon(e.message))?;
    // `--metrics`: the node's own counters (the single node's endpoint)
    // followed by the cluster's (crate::figures).
    let metrics_listener =
        config.metrics.as_deref().map(rrd_daemon::metrics::bind).transpose().map_err(ClusterError::Daemon)?;
    let advertise = match &opts.advertise {
        Some(a) => a.clone(),
        None => config
            .listen
            .iter()
            .find_map(|l| match &l.address {
                ListenAddress::Tcp { host, port } => {
                    let h =
                        if host.is_empty() || host == "0.0.0.0" || host == "::" { "127.0.0.1" } else { host };
                    Some(format!("{h}:{port}"))
                }
                ListenAddress::Unix(_) => None,
            })
            .ok_or_else(|| {
                ClusterError::Usage("cluster mode needs a TCP listener (-l HOST:PORT) or --advertise".into())
            })?,
    };
    let _ = tracing_init(&config);
    let state_dir: PathBuf = config.base_dir.clone().expect("checked").join(".rrdscale-cluster");
    let incarnation = node::incarnation(&state_dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("rrdscale-cluster")
        .build()
        .map_err(|e| ClusterError::Io { what: "starting the runtime".into(), source: e })?;
    let names = kafka::Names::new(&opts.name);
    let partitions = runtime.block_on(kafka::ensure_topics(&opts.bootstrap, &names, opts.partitions))?;
    tracing::info!(
        "cluster {}: node {} ({advertise}), topic {} with {partitions} partitions",
        opts.name,
        opts.node_id,
        names.updates
    );
    let stats = Arc::new(rrd_daemon::stats::Stats::default());
    let daemon = Arc::new(Daemon::with_stats(config, Journaler::disabled(), stats));
    let shared = Arc::new(node::Shared {
        names,
        partitions,
        node_id: opts.node_id.clone(),
        tag: format!(
            "{}/{incarnation}{}",
            opts.node_id,
            if opts.snapshots { node::SNAPSHOT_TAG } else { "" }
        ),
        daemon: daemon.clone(),
        owned: RwLock::new(HashSet::new()),
        applied: Mutex::new(HashMap::new()),
        committed: Mutex::new(HashMap::new()),
        ownership_changes: AtomicU64::new(0),
        records_applied: AtomicU64::new(0),
        values_skipped: AtomicU64::new(0),
        records_unreadable: AtomicU64::new(0),
        rebalances: AtomicU64::new(0),
        stopping: AtomicBool::new(false),
        runtime: runtime.handle().clone(),
        group: Mutex::new(None),
        snapshots: if opts.snapshots { Some(kafka::snapshot_producer(&opts.bootstrap)?) } else { None },
        bootstrap: opts.bootstrap.clone(),
        snapshots_published: AtomicU64::new(0),
        snapshot_bytes: AtomicU64::new(0),
        files_restored: AtomicU64::new(0),
        snapshot_lag_secs: AtomicU64::new(0),
    });
    let flush_threads = rrd_daemon::server::spawn_flush_threads(&daemon);
    if let Some(l) = metrics_listener {
        let s = shared.clone();
        let extra: rrd_daemon::metrics::Extra = Arc::new(move || figures::Figures::cached(&s).exposition());
        rrd_daemon::metrics::spawn_with(l, daemon.clone(), Some(extra))
            .map_err(|e| ClusterError::Io { what: "starting the metrics thread".into(), source: e })?;
    }
    let applier = {
        let (s, b) = (shared.clone(), opts.bootstrap.clone());
        std::thread::Builder::new()
            .name("cluster-apply".into())
            .spawn(move || {
                if let Err(e) = node::run(s.clone(), b) {
                    s.fatal(&format!("the applier stopped: {e}"));
                }
            })
            .map_err(|e| ClusterError::Io { what: "starting the applier".into(), source: e })?
    };
    let table = Arc::new(members::Table::default());
    let members_reader = {
        let c = kafka::plain_consumer(
            &opts.bootstrap,
            &format!("{}.members.{}", shared.names.group, opts.node_id),
        )?;
        let (s, t) = (shared.clone(), table.clone());
        std::thread::Builder::new()
            .name("cluster-members".into())
            .spawn(move || members::reader(c, s, t))
            .map_err(|e| ClusterError::Io { what: "starting the members reader".into(), source: e })?
    };
    let front =
        Arc::new(front::Front { shared: shared.clone(), producer: kafka::producer(&opts.bootstrap)?, table });
    let publisher =
        runtime.spawn(members::publisher(kafka::producer(&opts.bootstrap)?, shared.clone(), advertise));
    runtime.block_on(serve(front.clone(), listeners));
    // Stopping: clients first, then the applier writes, syncs and commits
    // everything and leaves the group.
    shared.stopping.store(true, Ordering::SeqCst);
    let _ = applier.join();
    let _ = runtime.block_on(publisher);
    let _ = members_reader.join();
    daemon.cache.stopping.store(true, Ordering::SeqCst);
    daemon.cache.wake_all();
    for t in flush_threads {
        let _ = t.join();
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    tracing::info!("cluster node {} stopped", opts.node_id);
    Ok(())
}

fn tracing_init(config: &config::Config) -> Result<(), ()> {
    let level = match config.log_level {
        config::LogLevel::Error => tracing::Level::ERROR,
        config::LogLevel::Warning => tracing::Level::WARN,
        config::LogLevel::Info => tracing::Level::INFO,
        config::LogLevel::Debug => tracing::Level::DEBUG,
    };
    let b = tracing_subscriber::fmt().with_max_level(level).with_ansi(false).with_target(false);
    match &config.log_file {
        Some(f) => {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(f).map_err(|_| ())?;
            b.with_writer(Mutex::new(file)).try_init().map_err(|_| ())
        }
        None => b.with_writer(std::io::stderr).try_init().map_err(|_| ()),
    }
}

/// Accepts on every listener until SIGTERM or SIGINT.
async fn serve(front: Arc<front::Front>, listeners: Vec<rrd_daemon::server::Bound>) {
    use tokio::signal::unix::{signal, SignalKind};
    // Caught before the first connection is accepted (a client answered
    // once may stop the node at once; that must be a clean stop).
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    let mut tasks = Vec::new();
    for b in listeners {
        let (f, perms) = (front.clone(), b.permissions);
        match b.kind {
            BoundKind::Tcp(l) => {
                let Ok(l) = tokio::net::TcpListener::from_std(l) else { continue };
                tasks.push(tokio::spawn(async move {
                    while let Ok((s, _)) = l.accept().await {
                        let _ = s.set_nodelay(true);
                        tokio::spawn(front::serve(f.clone(), s, perms));
                    }
                }));
            }
            BoundKind::Unix(l, _) => {
                let Ok(l) = tokio::net::UnixListener::from_std(l) else { continue };
                tasks.push(tokio::spawn(async move {
                    while let Ok((s, _)) = l.accept().await {
                        tokio::spawn(front::serve(f.clone(), s, perms));
                    }
                }));
            }
        }
    }
    tracing::info!("listening for connections");
    tokio::select! {
        _ = term.recv() => tracing::info!("caught SIGTERM"),
        _ = int.recv() => tracing::info!("caught SIGINT"),
    }
    for t in tasks {
        t.abort();
    }
    front.shared.daemon.shutdown.send_replace(true);
    tokio::time::sleep(Duration::from_millis(200)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn cluster_options_are_split_from_rrdcached_options() {
        let (o, rest) = split_args(&s(&[
            "-g",
            "--cluster",
            "h:1,h:2",
            "--node-id=n1",
            "-b",
            "/d",
            "--cluster-partitions",
            "6",
            "-l",
            "127.0.0.1:5",
        ]))
        .unwrap();
        assert_eq!(o.bootstrap, "h:1,h:2");
        assert_eq!(o.node_id, "n1");
        assert_eq!(o.partitions, 6);
        assert_eq!(o.name, "rrdscale");
        assert!(o.snapshots);
        assert_eq!(rest, s(&["-g", "-b", "/d", "-l", "127.0.0.1:5"]));
        assert!(wanted(&s(&["--cluster=x"])));
        assert!(!wanted(&s(&["-g"])));
        assert!(matches!(split_args(&s(&["--cluster", "h:1"])), Err(ClusterError::Usage(_))));
        assert!(matches!(
            split_args(&s(&["--cluster", "h:1", "--node-id", "a b"])),
            Err(ClusterError::Usage(_))
        ));
        assert!(matches!(
            split_args(&s(&["--cluster", "h:1", "--node-id", "a", "--cluster-partitions", "0"])),
            Err(ClusterError::Usage(_))
        ));
    }
}
