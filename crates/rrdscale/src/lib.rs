//! rrdscale's commands as a library: the `rrdscale` binary and the drop-in
//! `librrd.so.8` (`crates/librrd`) parse rrdtool's arguments with the same
//! code, so a C caller's `rrd_update(argc, argv)` means exactly what
//! `rrdscale update ...` means.
//!
//! Each command lives in its own module under [`cmd`] and writes to the
//! output it is given; the commands whose C entry points return data
//! (info, fetch, xport, graph, first, last, update -v) also expose that data
//! before it is printed.

#![forbid(unsafe_code)]

pub mod cmd;
pub mod opts;
