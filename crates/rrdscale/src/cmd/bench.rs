//! `rrdscale bench`: the seeds' benchmarks side by side with rrdtool. All
//! of it lives in the `rrd-bench` crate (which alone carries the heavy and
//! comparison-only dependencies: clap, indicatif, libloading); this module
//! only hands it the arguments and the output.

use std::io::Write;

use anyhow::Result;

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    rrd_bench::run(args, out)?;
    Ok(())
}
