//! RRDtool's language: the text its commands read, parsed as RRDtool 1.7.2
//! parses it, in one place so that every command, the daemon and the client
//! agree byte for byte.
//!
//! - [`numparse`]: the C library's conversions as rrdtool calls them
//!   (`isspace`, `strtol`, `strtoul`, `atoi`, `atol`, with glibc's overflow
//!   behaviour), rrdtool's own decimal parser (`rrd_strtod`), its counter
//!   difference and its scaled durations (`5m`, `1d`).
//! - [`cscan`]: C's `sscanf` conversions as rrdtool's option parsing
//!   calls them (prefixes, `%N[set]`, saturating `%ld`, wrapping `%u`).
//! - [`cformat`]: one double printed as glibc's `printf` and as rrdtool's
//!   own `rrd_snprintf` print it (they differ near ties).
//! - [`attime`]: AT-style times (`-1d`, `noon yesterday`, `end-2h`).
//! - [`ctext`]: the C library's sentences for errors (`strerror`), as
//!   rrdtool prints them.
//! - [`rpn`]: RPN expressions (COMPUTE data sources, CDEFs) as a stack
//!   machine; what an expression needs from a time series comes through
//!   [`rpn::Context`], so this crate has no engine behind it.
//!
//! Deliberately absent: files and I/O. The only dependency on the file
//! format is the 80-byte `par` array a COMPUTE expression is stored in
//! ([`rpn::Program::to_par`]).

#![forbid(unsafe_code)]

pub mod attime;
pub mod cformat;
pub mod cscan;
pub mod ctext;
/// The C library's time functions (they need `unsafe`, so they live in
/// rrd-sys).
pub use rrd_sys::ctime;
pub mod numparse;
pub mod optparse;
pub mod rpn;
