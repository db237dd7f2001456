//! `rrdscale daemon`: a drop-in for rrdcached 1.7.2 whose acknowledgements
//! mean what they say.
//!
//! Architecture (listener → connection → frame parser → one module per
//! command → cache; a reader merges cache and disk):
//!
//! - [`server`]: startup in rrdcached's order, listeners, signals, shutdown.
//! - [`connection`]: lines in, commands run, replies out in order; BATCH.
//! - [`commands`]: one module per command; the protocol's texts.
//! - [`cache`]: per-file pending values, sharded; flush queue and timers.
//! - [`shard_map`]: one shard's files, keys and entries side by side in
//!   the order the files were first seen.
//! - [`key`]: the cache key, inline when short (one cache miss less per
//!   UPDATE).
//! - [`journaler`]: group commit into the journal (rrd-journal), written
//!   by the connections themselves (no thread hop), and the sync thread:
//!   `fdatasync` under `--sync always`, rotation, removal of segments no
//!   longer needed.
//! - [`flusher`]: due files → paced queue → workers that prefetch, write in
//!   path order, sync, then release their journal segments.
//! - [`syncgroup`]: one `syncfs` shared by every worker that finished
//!   writing while the previous one ran.
//! - [`reader`]: FETCH/INFO/FIRST/LAST see pending values without a flush.
//! - [`dirlock`]: one daemon per journal directory (`flock`).
//! - [`replay`]: restart from the journal, idempotently.
//! - [`rrdcached_journal`]: switching from rrdcached: its journal files'
//!   pending values copied into ours at startup.
//! - [`paths`]: names to keys; `-B` confinement.
//! - [`prefetch`]: first touches of many files read at queue depth.
//! - [`config`]: rrdcached's options plus ours.
//! - [`metrics`]: `--metrics ADDR`, Prometheus text over a tiny HTTP
//!   responder.
//! - [`log`](mod@log): syslog priorities, `-V`, the `-o` file (reopened on SIGHUP),
//!   journald's priority prefixes.
//! - [`systemd`]: socket activation's and sd_notify's variables; READY,
//!   STOPPING, STATUS and watchdog datagrams (docs/systemd.md).
//!
//! The one rule everything serves: an UPDATE is answered only after its
//! values are in the journal (synced, under `--sync always`), and a journal
//! segment is deleted only after every value in it is in its RRD file and
//! that file is synced. docs/journal.md argues why that survives kill -9
//! and power loss.
//!
//! Beyond 1.7.2: TUNE and DUMP as rrdcached 1.9 speaks them
//! (`commands::tune`, `commands::dump`, docs/protocol.md).
//!
//! Deliberately absent: pending values as binary numbers (rrdtool's
//! COUNTER arithmetic works on the value's digits, so the texts are kept,
//! with times parsed).

#![forbid(unsafe_code)]

pub mod cache;
pub mod commands;
pub mod config;
pub mod connection;
pub mod dirlock;
pub mod flusher;
pub mod journaler;
pub mod key;
pub mod log;
pub mod metrics;
pub mod paths;
pub mod prefetch;
pub mod reader;
pub mod replay;
pub mod rrdcached_journal;
pub mod server;
pub mod shard_map;
pub mod state;
pub mod stats;
pub mod syncgroup;
pub mod systemd;

pub use server::{run, RunError};
