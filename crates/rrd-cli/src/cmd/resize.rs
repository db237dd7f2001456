//! `rrdscale resize file rra-num GROW|SHRINK rows`: rrdtool 1.7.2's resize,
//! writing `resize.rrd` in the current directory.
//!
//! The checks come in rrdtool's order and with its messages: the reserved
//! output name, the argument count, GROW/SHRINK, the row count (numbers are
//! read with `strtol(…, 0)`, so `0x10` and `010` are hex and octal, and
//! junk after the digits is ignored), then the file and the archive.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Result};
use rrd_engine::resize::{resize, RESIZE_OUTPUT};
use rrd_lang::numparse::strtol;

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let Some(file) = args.first() else {
        return super::command_help(out, "resize");
    };
    if file == RESIZE_OUTPUT {
        bail!("{RESIZE_OUTPUT} is a reserved name");
    }
    let [_, rra, how, rows] = args else {
        bail!("wrong number of parameters");
    };
    // strtol's value, converted to unsigned long as rrdtool stores it.
    let rra_index = strtol(rra, 0).value as u64;
    let shrink = match how.as_str() {
        "GROW" => false,
        "SHRINK" => true,
        _ => bail!("I can only GROW or SHRINK"),
    };
    let rows = strtol(rows, 0).value;
    if rows < 1 {
        bail!("Please grow or shrink with at least 1 row");
    }
    resize(Path::new(file), rra_index, if shrink { -rows } else { rows }, Path::new(RESIZE_OUTPUT))?;
    Ok(())
}
