//! Option parsing of rrdtool's commands: rrdtool 1.7.2's optparse, whose
//! one copy is `rrd_lang::optparse` (the daemon parses with it too); here
//! its refusals become the commands' errors.

use anyhow::Result;

pub use rrd_lang::optparse::{flag, value, Parsed, Spec};

pub fn parse(args: &[String], specs: &[Spec]) -> Result<Parsed> {
    Ok(rrd_lang::optparse::parse(args, specs)?)
}
