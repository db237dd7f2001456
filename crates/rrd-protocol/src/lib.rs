//! rrdcached 1.7.2's line protocol, as data: no sockets, no files.
//!
//! - [`fields`]: how a command line splits into fields (single spaces,
//!   backslash escapes), exactly as rrdcached's `buffer_get_field`.
//! - [`command`]: the command table (names, where each may be used, usage
//!   and help texts, the permission bit of each) in rrdcached's order.
//! - [`reply`]: status lines (`<n> message`, `n >= 0` lines follow, `n < 0`
//!   an error) and the BATCH error list.
//! - [`framing`]: where a command line ends in the received bytes, and
//!   the one error for a line longer than [`LINE_LEN_MAX`].
//! - [`gate`]: the checks a command line passes before it runs (name,
//!   `-P` permission, context, argument text), shared by every server.
//! - [`address`]: `-l` listen addresses (`unix:/path`, `/path`, `host`,
//!   `host:port`, `[v6]:port`, `:port`).
//!
//! Invariants: parsing never panics on any input; every function here is
//! pure, so the daemon, the client side and fuzzers share one definition.
//! Deliberately absent: executing commands (the daemon owns that) and
//! anything about files.
#![forbid(unsafe_code)]

pub mod address;
pub mod command;
pub mod fields;
pub mod framing;
pub mod gate;
pub mod reply;

pub use address::{ListenAddress, DEFAULT_ADDRESS, DEFAULT_PORT};
pub use command::{Command, Context, Permissions};
pub use fields::{split_fields, FieldError, Fields};
pub use framing::{Frame, LineFramer};
pub use reply::Reply;

/// The longest command line the daemon accepts, in bytes (rrdcached's read
/// buffer is 8 KiB; a longer line there closes the connection).
pub const LINE_LEN_MAX: usize = 64 * 1024;
