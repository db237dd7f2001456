//! RRDtool 1.7.2 semantics over the [`rrd_format`] layer.
//!
//! The engine owns the meaning of an RRD: how `create` lays out a new file,
//! how `update` turns readings into primary and consolidated data points, how
//! `fetch` picks an archive, how `dump` prints. It reads and writes through
//! [`store::Store`], so the I/O policy (pread/pwrite, mmap, a cache in a
//! daemon) belongs to the caller, not the math.
//!
//! # Layers
//!
//! The source is in four folders, each depending only on the ones above it
//! in this list (tests aside):
//!
//! | folder | owns | modules |
//! | --- | --- | --- |
//! | `file/` | bytes, descriptors, the kernel: stores, an open RRD, confinement, durable new files, page cache, memory limit | [`store`], [`rrd`], [`root`], [`newfile`], [`pagecache`], [`cgroup`], `tempclean`, `fault` |
//! | `math/` | rrdtool's update arithmetic on a header in memory: PDPs, the one `update_cdp`, Holt-Winters, `--source` prefill | [`update`], `consolidate`, `hw`, `prefill` |
//! | `access/` | I/O policies for many updates and for reads with pending values: plans, kept open files, kept mappings, an overlay store | [`plan`], [`batch`], [`mapped`], [`overlay`] |
//! | `commands/` | the other rrdtool commands, as 1.7.2 behaves | [`create`], [`dump`], [`fetch`], [`info`], [`list`], [`reduce`], [`resize`], [`restore`], [`tune`], [`xport`] |
//!
//! `error` is shared by all four. `update` is in `math/` with its small
//! file drivers (`update_file`, `update_rrd`), since an update is the math;
//! `reduce` is in `commands/` beside `fetch`, whose archive reading it
//! shares.
//!
//! # The facade
//!
//! The folders are private; the public API is the modules re-exported
//! below by their own names (`rrd_engine::update`, `rrd_engine::batch`,
//! ...), and [`Error`], [`Result`], [`Rrd`], [`Store`] and [`MemStore`] at
//! the root. `consolidate`, `hw`, `prefill` and `tempclean` are internal:
//! callers reach them through `update`, `create` and `newfile`. RRDtool's
//! language (numbers, AT-style times, RPN) is the `rrd-lang` crate; use it
//! directly.
//!
//! No `unsafe` here: the calls into the kernel that need it (OFD locks,
//! mappings, `mincore`, `sync_file_range`, `glob`, the signal handler of
//! `tempclean`) are safe functions of the `rrd-sys` crate.

#![forbid(unsafe_code)]

mod access;
mod commands;
pub mod error;
mod file;
mod math;
#[cfg(test)]
mod testfile;

pub use access::{batch, mapped, overlay, plan};
pub use commands::{create, dump, fetch, info, list, reduce, resize, restore, schemas, tune, xport};
#[cfg(any(test, feature = "fault-injection"))]
pub use file::fault;
pub use file::{cgroup, newfile, pagecache, root, rrd, store};
pub use math::update;

pub(crate) use file::tempclean;
pub(crate) use math::{consolidate, hw, prefill};

/// RRDtool's language, under the short paths the engine's modules use.
pub(crate) use rrd_lang::{attime, numparse, rpn};

pub use error::{Error, Result};
pub use rrd::Rrd;
pub use store::{MemStore, Store};
