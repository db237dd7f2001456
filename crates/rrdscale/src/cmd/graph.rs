//! `rrdscale graph|graphv FILE [options] ELEMENTS...`: draws a graph as
//! `rrdtool graph` 1.7.2 does and prints what it prints.
//!
//! `graph` prints `WIDTHxHEIGHT` and the PRINT results (nothing when the
//! first argument is `-`, which sends the image to standard output, as
//! rrdtool does); `graphv` prints graphv's `key = value` lines, with the
//! image as `image = BLOB_SIZE:n` followed by its bytes when the file is
//! `-`. With no LINE, AREA, rule or GPRINT nothing is drawn and no file is
//! written (`0x0`). Options are parsed here getopt-style; their meaning,
//! the elements and the drawing belong to `rrd_graph`.

use std::io::Write;

use anyhow::{bail, Result};
use rrd_graph::{render_with, InfoValue, Options, OPTION_SPECS};

use super::client::DaemonFetch;
use super::{fmt_info_value, now_secs};
use crate::opts;

pub fn run(args: &[String], out: &mut dyn Write, verbose: bool) -> Result<()> {
    let (graph, options, file, source) = draw(args)?;
    source.finish(
        save_image(&graph, &options, &file).and_then(|()| print_graph(&graph, &file, args, out, verbose)),
    )
}

/// Draws the graph (librrd's `rrd_graph` and `rrd_graph_v`): the output,
/// the options, the file name and the data source, whose `finish` reports
/// an unreachable daemon after the caller has saved or printed the image.
pub fn draw(args: &[String]) -> Result<(rrd_graph::GraphOutput, Options, String, DaemonFetch)> {
    if args.is_empty() {
        bail!("missing filename");
    }
    let specs: Vec<opts::Spec> = OPTION_SPECS
        .iter()
        .map(|s| if s.takes_value { opts::value(s.short, s.long) } else { opts::flag(s.short, s.long) })
        .collect();
    let parsed = opts::parse(args, &specs)?;
    let mut options = Options::default();
    for (name, value) in &parsed.opts {
        options.apply(name, value.as_deref())?;
    }
    let Some((file, elements)) = parsed.operands.split_first() else {
        bail!("missing filename");
    };
    // DEFs read through the daemon when one is named (`--daemon`,
    // `RRDCACHED_ADDRESS` or a DEF's `:daemon=`), as rrdtool's graph does.
    let mut source = DaemonFetch::new(parsed.value("daemon"));
    let drawn = render_with(&options, elements, now_secs(), &mut source);
    let graph = match drawn {
        Ok(g) => g,
        Err(e) => return source.finish(Err(e.into())),
    };
    Ok((graph, options, file.clone(), source))
}

/// Writes the image to `file` (not `-`), as rrdtool names a failure.
pub fn save_image(graph: &rrd_graph::GraphOutput, options: &Options, file: &str) -> Result<()> {
    if let (Some(image), false) = (&graph.image, file == "-") {
        if let Err(e) = std::fs::write(file, image) {
            let kind = match options.image_format {
                rrd_graph::ImageFormat::Png => "png",
                rrd_graph::ImageFormat::Svg => "svg",
            };
            bail!("Could not save {kind} to '{file}' ({e})");
        }
    }
    Ok(())
}

fn print_graph(
    graph: &rrd_graph::GraphOutput,
    file: &str,
    args: &[String],
    out: &mut dyn Write,
    verbose: bool,
) -> Result<()> {
    let to_stdout = file == "-";
    if let (Some(image), true, false) = (&graph.image, to_stdout, verbose) {
        out.write_all(image)?;
    }
    if verbose {
        for (key, value) in &graph.info {
            match value {
                InfoValue::Count(n) => writeln!(out, "{key} = {n}")?,
                InfoValue::Value(v) => writeln!(out, "{key} = {}", fmt_info_value(*v))?,
                InfoValue::Text(s) => writeln!(out, "{key} = \"{s}\"")?,
            }
        }
        if let (true, Some(image)) = (to_stdout, &graph.image) {
            writeln!(out, "image = BLOB_SIZE:{}", image.len())?;
            out.write_all(image)?;
        }
    } else if args[0] != "-" {
        // rrdtool compares its first argument, not the file name, with "-".
        writeln!(out, "{}x{}", graph.image_width, graph.image_height)?;
        for line in &graph.prints {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}
