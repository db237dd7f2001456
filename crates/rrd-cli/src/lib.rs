//! rrdtool's command line as a library: each of rrdtool's commands (create,
//! update, graph, dump, ... and pipe mode, `-`), its argument parsing, its
//! output and its help, in one table ([`cmd::RRDTOOL_COMMANDS`]).
//!
//! Two programs use it: the `rrdscale` binary (which adds its own commands,
//! the daemon, the web server, the benchmarks, and answers to rrdtool's
//! program names) and the drop-in `librrd.so.8` (`crates/librrd`), so a C
//! caller's `rrd_update(argc, argv)` means exactly what `rrdtool update ...`
//! means. Each command writes to the output it is given; the commands whose
//! C entry points return data (info, fetch, xport, graph, first, last,
//! update -v) also expose that data before it is printed.
//!
//! What it deliberately does not hold: anything the library does not need
//! (the daemon, the web server, the benchmarks, the cluster), so that
//! building `librrd.so.8` builds none of them.

#![forbid(unsafe_code)]

pub mod cmd;
mod help_text;
pub mod opts;
pub mod programs;
