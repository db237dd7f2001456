//! The `daemon-*` benchmarks: ours and rrdcached side by side, driven as
//! their clients drive them.
//!
//! - [`process`]: starting, probing and stopping a daemon, and a minimal
//!   client of rrdcached's protocol (the one place a daemon is touched).
//! - [`common`]: what every daemon benchmark shares: the common options,
//!   the files' setup, sides' results and the report's columns.
//! - [`workload`]: the run of one benchmark over its sides ([`workload::DaemonWorkload`]).
//! - One module per benchmark: [`ingest`], [`flush`], [`restart`],
//!   [`read`], [`capacity`].
//!
//! Imports go one way: a benchmark uses `workload`, `common` and
//! `process`; `workload` uses `common` and `process`; `common` uses
//! `process`; `process` uses none of them.

pub mod capacity;
pub mod common;
pub mod flush;
pub mod ingest;
pub mod process;
pub mod read;
pub mod restart;
pub mod workload;

pub use process::{
    default_sync_policy, journal_bytes, parse_stats, require_rrdcached, wait_drained, Conn, DaemonKind,
    DaemonProc, DaemonSpec, Reply, RRDCACHED,
};
