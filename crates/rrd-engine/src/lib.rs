//! RRDtool 1.7.2 semantics over the [`rrd_format`] layer.
//!
//! The engine owns the meaning of an RRD: how `create` lays out a new file,
//! how `update` turns readings into primary and consolidated data points, how
//! `fetch` picks an archive, how `dump` prints. It reads and writes through
//! [`store::Store`], so the I/O policy (pread/pwrite, mmap, a cache in a
//! daemon) belongs to the caller, not the math.

pub mod batch;
pub mod cgroup;
pub mod consolidate;
pub mod create;
pub mod dump;
pub mod error;
#[cfg(any(test, feature = "fault-injection"))]
pub mod fault;
pub mod fetch;
pub mod hw;
pub mod info;
pub mod list;
pub mod mapped;
pub mod newfile;
pub mod overlay;
pub mod pagecache;
pub mod plan;
pub mod prefill;
pub mod reduce;
pub mod resize;
pub mod restore;
pub mod root;
pub mod rrd;
pub mod store;
pub mod tempclean;
pub mod tune;
pub mod update;
pub mod xport;

/// RRDtool's language lives in `rrd-lang`; re-exported under the engine's
/// old paths for the engine's own modules and its callers.
pub use rrd_lang::{attime, numparse, rpn};

pub use error::{Error, Result};
pub use rrd::Rrd;
pub use store::{MemStore, Store};
