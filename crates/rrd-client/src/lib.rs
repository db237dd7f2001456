//! The client side of rrdcached's protocol, as rrdtool 1.7.2's librrd
//! speaks it: what `rrdtool update|fetch|info|last|first|lastupdate|
//! flushcached|create|list --daemon ADDR` (or `RRDCACHED_ADDRESS`) send,
//! and how they read the replies; and `tune` and `dump` as 1.9's librrd
//! sends them.
//!
//! - [`address`]: `--daemon`/`RRDCACHED_ADDRESS` and librrd's address forms.
//! - [`connection`]: one blocking connection; request lines (escaped,
//!   at most 4096 bytes) and replies.
//! - [`commands`]: each request, file names made absolute for a local
//!   daemon, and the FETCH/INFO reply readers.
//! - [`template`]: `update --template` mapped to DS order client-side.
//! - [`session`]: the one cached connection per process.
//! - [`ctext`]: the C conversions librrd reads replies with.
//!
//! Invariants: every error is worded as librrd words it (the CLI prints it
//! after `ERROR: `); nothing here panics on any reply a daemon sends.
//! Deliberately absent: what each rrdtool command does when the daemon is
//! absent or unreachable (fall back, fail, or both): that is the CLI's.

#![forbid(unsafe_code)]

pub mod address;
pub mod commands;
pub mod connection;
pub mod ctext;
pub mod error;
pub mod session;
pub mod template;

pub use address::{chosen, Endpoint, ENV_ADDRESS, ENV_STRIP_PATH};
pub use commands::{
    daemon_path, parse_fetch, parse_info, CreateRequest, DumpOutcome, FetchReply, InfoItem, InfoValue,
    TuneOutcome,
};
pub use connection::{request_line, Client, Response, Streamed, REQUEST_MAX};
pub use error::ClientError;
pub use session::{any_connected, daemon, disconnect, Daemon, Session};
pub use template::map_template;
