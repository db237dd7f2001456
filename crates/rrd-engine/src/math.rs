//! The math layer: RRDtool 1.7.2's update arithmetic, operation for
//! operation, on a header in memory.
//!
//! [`update`] turns readings into primary data points and hands each step
//! to [`consolidate`] (the one copy of `update_cdp`) or, for the
//! Holt-Winters family, to [`hw`]; rows come out through a `RowSink`, so
//! the arithmetic never touches a file. [`prefill`] (`create --source`)
//! computes a new file's rows and scratch areas from existing files with
//! the same consolidation.
//!
//! Mixed on purpose: `update` also holds the small file-backed drivers
//! (`update_file`, `update_rrd`: read the header, run the math, write the
//! rows once each, then the live header), and `prefill` opens its source
//! files; both go through [`crate::file`], never around it.
//!
//! Deliberately absent: I/O policy (that is [`crate::access`]) and option
//! parsing (that is [`crate::commands`]).

pub mod consolidate;
pub mod hw;
pub mod prefill;
pub mod update;
