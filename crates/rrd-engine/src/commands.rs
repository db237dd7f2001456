//! The commands layer: rrdtool's commands over an open file, each as
//! RRDtool 1.7.2 behaves (its checks, its wording, its bytes).
//!
//! `create` (with [`crate::math::prefill`] for `--source`), `dump`,
//! `fetch` (and the two `%e` formattings rrdtool uses), `info`, `list`
//! (shared with the daemon's LIST), `resize`, `restore`, `tune`, `xport`
//! (DEF/CDEF/VDEF evaluation, shared with `graph`) and [`reduce`] (the
//! consolidation of fetched rows to a graph's step, which reads archives
//! the way `fetch` does, so it lives beside it).
//!
//! `update` is not here: its arithmetic and its file driver are
//! [`crate::math::update`], and the ways of running many updates are
//! [`crate::access`]. Option parsing and output files belong to the
//! callers (the CLI, the daemon, librrd).

pub mod create;
pub mod dump;
pub mod fetch;
pub mod info;
pub mod list;
pub mod reduce;
pub mod resize;
pub mod restore;
pub(crate) mod rra_def;
pub mod schemas;
pub mod tune;
pub mod xport;
