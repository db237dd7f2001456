//! The access layer: ways of driving many updates and reads through the
//! math and the file layers, each with its own I/O policy.
//!
//! - [`plan`]: the exact byte ranges and pages an update will touch, by
//!   running the real arithmetic on a copy of the header; the prefetch
//!   window the two modes below share.
//! - [`batch`]: many updates over kept open files and kept headers, with
//!   `fadvise` prefetch of the planned pages (pipe mode, daemon flushes,
//!   librrd).
//! - [`mapped`]: the warm mode for a single owner of its files: kept
//!   `MAP_SHARED` mappings, `madvise` prefetch, no locks.
//! - [`overlay`]: a store that keeps writes in memory over a file, so a
//!   daemon answers reads with its pending values applied without writing
//!   them.
//!
//! Invariant: every mode updates a file with the same arithmetic
//! ([`crate::math::update`]) and writes the same bytes as
//! `update_file`; the tests compare them.

pub mod batch;
pub mod mapped;
pub mod overlay;
pub mod plan;
