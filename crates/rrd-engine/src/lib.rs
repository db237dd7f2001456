//! RRDtool 1.7.2 semantics over the [`rrd_format`] layer.
//!
//! The engine owns the meaning of an RRD: how `create` lays out a new file,
//! how `update` turns readings into primary and consolidated data points, how
//! `fetch` picks an archive, how `dump` prints. It reads and writes through
//! [`store::Store`], so the I/O policy (pread/pwrite, mmap, a cache in a
//! daemon) belongs to the caller, not the math.

pub mod access;
pub mod commands;
pub mod error;
pub mod file;
pub mod math;

// The modules' paths before the layers were folders (`rrd_engine::batch`,
// `crate::update`, ...), kept so callers and the engine's own `use` lines
// did not change with the move.
pub use access::{batch, mapped, overlay, plan};
pub use commands::{create, dump, fetch, info, list, reduce, resize, restore, tune, xport};
#[cfg(any(test, feature = "fault-injection"))]
pub use file::fault;
pub use file::{cgroup, newfile, pagecache, root, rrd, store, tempclean};
pub use math::{consolidate, hw, prefill, update};

/// RRDtool's language lives in `rrd-lang`; re-exported under the engine's
/// old paths for the engine's own modules and its callers.
pub use rrd_lang::{attime, numparse, rpn};

pub use error::{Error, Result};
pub use rrd::Rrd;
pub use store::{MemStore, Store};
