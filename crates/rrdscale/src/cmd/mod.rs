//! rrdscale's own commands (rrdtool's are in the `rrd-cli` crate): one
//! module each, and the table that adds them to rrdtool's.

use rrd_cli::cmd::Command;

pub mod bench;
pub mod daemon;
pub mod fadvise;
pub mod fincore;
pub mod pagesim;
pub mod web;

/// The commands rrdscale has besides rrdtool's, in the order the usage
/// text lists them. Each answers `--help` itself.
pub const OWN_COMMANDS: &[Command] = &[
    own("daemon", "the caching daemon (rrdcached's options and protocol)", daemon::run),
    own("web", "the GrowthForecast-compatible HTTP API", web::run),
    own("bench", "benchmarks, side by side with rrdtool", bench::run),
    own("pagesim", "the page cache simulation and model", pagesim::run),
    own("fincore", "how much of each file is in the page cache", fincore::run),
    own("fadvise", "posix_fadvise over whole files", fadvise::run),
];

const fn own(name: &'static str, summary: &'static str, run: rrd_cli::cmd::Run) -> Command {
    Command { name, summary, help: None, run }
}
