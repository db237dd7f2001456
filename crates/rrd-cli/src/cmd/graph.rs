//! `rrdscale graph|graphv FILE [options] ELEMENTS...`: draws a graph as
//! `rrdtool graph` 1.7.2 does and prints what it prints.
//!
//! `graph` prints `WIDTHxHEIGHT` and the PRINT results (nothing when the
//! first argument is `-`, which sends the image to standard output, as
//! rrdtool does); `graphv` prints graphv's `key = value` lines, with the
//! image as `image = BLOB_SIZE:n` followed by its bytes when the file is
//! `-`. With no LINE, AREA, rule or GPRINT nothing is drawn and no file is
//! written (`0x0`, or nothing at all when there is no PRINT either, as
//! rrdtool). `-f`/`--imginfo` adds `image_info` (graphv) or a first line
//! (graph); `--lazy` keeps a fresh image. The data formats (`-a CSV`, ...)
//! write text instead of an image. Options are parsed here getopt-style;
//! their meaning, the elements and the drawing belong to `rrd_graph`.

use std::io::Write;

use anyhow::{bail, Result};
use rrd_graph::{image_info, lazy_keeps, render_with, InfoValue, Options, OPTION_SPECS};

use super::client::DaemonFetch;
use super::{fmt_info_value, now_secs};
use crate::opts;

pub fn run(args: &[String], out: &mut dyn Write, verbose: bool) -> Result<()> {
    let (graph, options, file, source) = draw(args)?;
    // Saved by print_graph, which prints what rrdtool prints first.
    source.finish(print_graph(&graph, &options, &file, args, out, verbose))
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
    let mut graph = match drawn {
        Ok(g) => g,
        Err(e) => return source.finish(Err(e.into())),
    };
    if lazy_keeps(&options, file, &graph, now_secs()) {
        graph.keep_lazily();
    }
    Ok((graph, options, file.clone(), source))
}

/// librrd's `rrd_graph` and `rrd_graph_v`: draws, saves the image to its
/// file (not `-`), then reports an unreachable daemon; the output and the
/// file name.
pub fn draw_and_save(args: &[String]) -> Result<(rrd_graph::GraphOutput, String)> {
    let (graph, options, file, source) = draw(args)?;
    let saved = save_image(&graph, &options, &file);
    source.finish(saved).map(|()| (graph, file))
}

/// Writes the image to `file` (not `-`) for librrd's `rrd_graph` and
/// `rrd_graph_v`, as rrdtool names a failure. (The command line saves in
/// `print_graph`, which also prints what rrdtool prints when saving fails.)
fn save_image(graph: &rrd_graph::GraphOutput, options: &Options, file: &str) -> Result<()> {
    if let (Some(image), false) = (&graph.image, file == "-") {
        if let Err(e) = std::fs::write(file, graph.file_image.as_ref().unwrap_or(image)) {
            bail!("Could not save {} to '{file}' ({e})", options.image_format.name());
        }
    }
    Ok(())
}

fn print_graph(
    graph: &rrd_graph::GraphOutput,
    options: &Options,
    file: &str,
    args: &[String],
    out: &mut dyn Write,
    verbose: bool,
) -> Result<()> {
    use rrd_graph::ImageFormat as F;
    let mut to_stdout = file == "-";
    // A picture that could not be saved: rrdtool still prints what it
    // prints, then fails (PNG) or complains and succeeds (Cairo's streams).
    let mut save_failed = false;
    if let Some(image) = &graph.image {
        if !to_stdout {
            if std::fs::write(file, graph.file_image.as_ref().unwrap_or(image)).is_err() {
                let data_format = matches!(options.image_format, F::Data(_));
                if data_format {
                    // A data format whose file cannot be opened stays in
                    // memory, and rrdtool then prints it as for `-`.
                    to_stdout = true;
                    if !verbose {
                        out.write_all(image)?;
                    }
                } else {
                    save_failed = true;
                }
            }
        } else if !verbose {
            out.write_all(image)?;
        }
    }
    // Checked after the image is saved, as rrdtool does.
    let info_line = image_info(options, file, graph)?;
    if verbose {
        for (key, value) in &graph.info {
            match value {
                InfoValue::Count(n) => writeln!(out, "{key} = {n}")?,
                InfoValue::Value(v) => writeln!(out, "{key} = {}", fmt_info_value(*v))?,
                InfoValue::Text(s) => writeln!(out, "{key} = \"{s}\"")?,
            }
        }
        if let Some(line) = &info_line {
            writeln!(out, "image_info = \"{line}\"")?;
        }
        if let (true, Some(image)) = (to_stdout, &graph.image) {
            writeln!(out, "image = BLOB_SIZE:{}", image.len())?;
            out.write_all(image)?;
        }
    } else if args[0] != "-" {
        // rrdtool prints nothing when the graph produced no information
        // at all (no PRINT, nothing drawn), and no size when -f/--imginfo
        // is among the arguments (spelled exactly so).
        if graph.info.is_empty() && info_line.is_none() {
            return Ok(());
        }
        // rrdtool compares its first argument, not the file name, with "-".
        if !args.iter().any(|a| a == "--imginfo" || a == "-f") {
            writeln!(out, "{}x{}", graph.image_width, graph.image_height)?;
        }
        if let Some(line) = &info_line {
            writeln!(out, "{line}")?;
        }
        for line in &graph.prints {
            writeln!(out, "{line}")?;
        }
    }
    if save_failed {
        if options.image_format == F::Png {
            bail!("Could not save png to '{file}'");
        }
        out.flush()?;
        eprintln!("OOPS: Cairo has issues it can't even die: error while writing to output stream");
    }
    Ok(())
}
