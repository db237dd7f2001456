//! The graph pipeline of RRDtool 1.7.2's `rrd_graph_v`, step by step:
//! evaluate DEF/CDEF/VDEF ([`rrd_engine::xport::evaluate`]), compute
//! PRINT/GPRINT (`print_calc`), lay out the image (`graph_size_location`,
//! `leg_place`), sample the data per pixel and find the y range
//! (`data_proc`, `si_unit`, `expand_range`), choose the y grid
//! (`calc_horizontal_grid`), then draw.
//!
//! What must equal RRDtool's output is computed the way RRDtool computes
//! it: the PRINT and GPRINT text, graphv's numbers (image and graph
//! geometry, start, end, value_min, value_max, legend coordinates) and the
//! plotted series. The drawing makes the same Cairo calls in the same
//! order (grid fitting, area outlines, text through one Pango layout that
//! also measures it), so pictures are RRDtool's pixels (`render`).
//!
//! Cost: linear in the number of elements (names are looked up in maps, a
//! plot's variable once, not per pixel) and, per DEF, memory in the
//! image's width whatever the time range: DEFs are consolidated to the
//! pixel step while their files are read (`rrd_engine::reduce`).
//!
//! With a data format (`-a XML|XMLENUM|JSON|JSONTIME|CSV|TSV|SSV`) the
//! graph is not drawn: its LINE/AREA/STACK series are exported as
//! RRDtool's `rrd_graph_xport` does (`render_data`, writers in
//! `dataformat`). TICKs are drawn as marks, gradient AREAs as RRDtool's
//! rectangles; SHIFT is evaluated by the engine with the DEFs.
//!
//! The layout options follow rrdtool too: legends north, south, west or
//! east and their direction, the right axis and its labels, custom and
//! `--alt-y-grid` grids, `--font` sizes, `--zoom` (the image is scaled;
//! graphv's numbers stay unscaled, legend widths are measured on the
//! scaled surface as rrdtool's are), `--pango-markup`; `--lazy` and
//! `--imginfo` are [`lazy_keeps`] and [`image_info`], for the caller that
//! knows the file.
//!
//! Deliberately not here: the `--x-grid` label format in the data
//! formats' times; RRDtool's vertical tag text (rrdscale writes its own
//! name there).
//!
//! The steps live in modules named for them: `print`, `layout`, `data`,
//! `ygrid`, `paint`, `grids` and `export`; here the image's state and the
//! order of the steps.

use std::cell::RefCell;
use std::rc::Rc;

use rrd_engine::xport::{
    evaluate_with, Evaluation, FetchRequest, FetchSource, LocalFiles, SeriesData, Variable, XportRange,
};
use rrd_format::Cf;
use rrd_lang::attime;

use crate::dataformat::{self, DataFormat, MetaEntry, Table};
use crate::elements::{self, Align, Element, Kind, PrintStyle, ValueRef};
use crate::error::{GraphError, Result};
use crate::options::{
    AxisFormatter, ColorTag, ImageFormat, LegendDirection, LegendPosition, Options, Rgba, TextProp,
};
use crate::printf::{auto_scale, c_int, PrintFormat};
use crate::render::text::TextSize;
use crate::render::{
    CairoCanvas, Canvas, Color, HAlign, SharedLayout, Smoothing, Surface, TextLayout, TextSpec, VAlign,
};
use crate::timeaxis;
use crate::timefmt;

mod data;
mod export;
mod grids;
mod layout;
mod paint;
mod print;
#[cfg(test)]
mod tests;
mod ygrid;

use export::{data_format, render_data};
use layout::{tab_period, title_lines};
use print::PrintPass;

/// Widths of grid lines.
const GRID_WIDTH: f64 = 0.4;
const MGRID_WIDTH: f64 = 0.6;

/// The largest image side Cairo (and so RRDtool) can draw.
const MAX_SIDE: i64 = 32767;

/// Most bytes RRDtool keeps of a GPRINT result.
const GPRINT_MAX: usize = 197;

/// A value of graphv's output.
#[derive(Clone, Debug, PartialEq)]
pub enum InfoValue {
    /// Printed as an integer.
    Count(i64),
    /// Printed as `%0.10e`.
    Value(f64),
    /// Printed in double quotes.
    Text(String),
}

/// Everything a graph produced.
#[derive(Clone, Debug)]
pub struct GraphOutput {
    /// graphv's entries in RRDtool's order (`print[i]`, the geometry,
    /// `value_min`/`value_max`, `legend[i]`/`coords[i]`), without the image.
    pub info: Vec<(String, InfoValue)>,
    /// PRINT results in order.
    pub prints: Vec<String>,
    /// The encoded image; `None` when there is nothing to draw (no LINE,
    /// AREA, rule or GPRINT), in which case RRDtool writes no file.
    pub image: Option<Vec<u8>>,
    /// What RRDtool writes to a named file when that differs from `image`
    /// (the in-memory output): JSON whose only meta list is the PRINTs
    /// keeps a trailing comma there, which the in-memory output drops.
    pub file_image: Option<Vec<u8>>,
    pub image_width: i64,
    pub image_height: i64,
    /// The evaluated DEF/CDEF/VDEF data, for callers that want the numbers
    /// behind the picture.
    pub data: Evaluation,
}

impl GraphOutput {
    /// The series a LINE or AREA of `vname` plots.
    pub fn series(&self, vname: &str) -> Option<&SeriesData> {
        match self.data.get(vname)? {
            Variable::Series(s) => Some(s),
            Variable::Value(_) => None,
        }
    }
}

/// An element with what the pipeline learns about it.
struct Item {
    el: Element,
    legend: String,
    leg_x: f64,
    leg_y: f64,
    /// HRULE value, or the constant of a LINE/AREA on a number.
    yrule: f64,
    /// VRULE time.
    xrule: i64,
    /// Per-pixel values of a LINE/AREA (stacked).
    p_data: Vec<f64>,
}

/// Where a LINE/AREA's values come from.
enum PlotSource<'d> {
    Constant(f64),
    Series(&'d SeriesData),
}

/// The image being made (RRDtool's `image_desc_t`, the parts we use).
struct Image<'a> {
    o: &'a Options,
    start: i64,
    end: i64,
    xsize: i64,
    ysize: i64,
    ximg: i64,
    yimg: i64,
    xorigin: i64,
    yorigin: i64,
    minval: f64,
    maxval: f64,
    magfact: f64,
    viewfactor: f64,
    symbol: char,
    gridstep: f64,
    labfact: i64,
    /// `--alt-y-grid`'s label format: width and decimals.
    alt_label: Option<(usize, usize)>,
    legendwidth: f64,
    legendheight: i64,
    x_origin_legend: i64,
    y_origin_legend: i64,
    x_origin_legend_y: i64,
    y_origin_legend_y: i64,
    x_origin_legend_y2: i64,
    y_origin_legend_y2: i64,
    gridfit: bool,
    /// The Pango layout that measures text here and draws it on the
    /// canvas (one per image, as RRDtool's).
    text: SharedLayout,
    /// `--grid-dash` (on, off).
    grid_dash: [f64; 2],
    /// The font description of text whose `--font` names none:
    /// `$RRD_DEFAULT_FONT`, else RRDtool's family list.
    default_font: String,
    items: Vec<Item>,
}

/// RRDtool 1.7.2's font families when neither `--font` nor
/// `$RRD_DEFAULT_FONT` names one.
const DEFAULT_FONT: &str = "DejaVu Sans Mono,Bitstream Vera Sans Mono,monospace,Courier";

/// How a line is dashed.
#[derive(Clone, Copy)]
enum Dash<'a> {
    /// An element's `dashes=` (or the legend box of a dashed element).
    Element(&'a [f64]),
    /// `--grid-dash`.
    Grid,
}

/// RRDtool's `AlmostEqual2sComplement` on the values as floats.
fn almost_equal(a: f64, b: f64, max_ulps: i64) -> bool {
    let ord = |v: f32| {
        let i = v.to_bits() as i32 as i64;
        if i < 0 {
            0x8000_0000_i64 - i
        } else {
            i
        }
    };
    (ord(a as f32) - ord(b as f32)).abs() <= max_ulps
}

/// `--imginfo`'s line for an image saved as `file` (`-`: in memory), or
/// `None` without the option; an error when the format is not one
/// rrdtool accepts. The size is the zoomed image's.
pub fn image_info(options: &Options, file: &str, graph: &GraphOutput) -> Result<Option<String>> {
    let Some(fmt) = options.imginfo.as_deref().filter(|f| !f.is_empty()) else { return Ok(None) };
    let name = if file == "-" {
        "memory"
    } else {
        // basename(3): the last component, trailing slashes ignored.
        let t = file.trim_end_matches('/');
        if t.is_empty() {
            "/"
        } else {
            t.rsplit('/').next().unwrap_or(t)
        }
    };
    let zoomed = |v: i64| (options.zoom * v as f64) as i64;
    crate::labels::imginfo(fmt, name, zoomed(graph.image_width), zoomed(graph.image_height))
        .map(Some)
        .ok_or_else(|| {
            GraphError::invalid(format!(
                "invalid format string '{fmt}' (should match '{}')",
                crate::labels::IMGINFO_PATTERN
            ))
        })
}

/// `--lazy`: whether the image already in `file` may stay (rrdtool's
/// `lazy_check`: it was written less than one pixel's worth of seconds
/// ago and, for PNG, is a readable PNG). Then graphv reports only the
/// geometry and no file is written.
pub fn lazy_keeps(options: &Options, file: &str, graph: &GraphOutput, now: i64) -> bool {
    if !options.lazy || file == "-" || graph.image.is_none() {
        return false;
    }
    let Ok(meta) = std::fs::metadata(file) else { return false };
    let Some(mtime) = meta.modified().ok().and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok()) else {
        return false;
    };
    let number = |key: &str| {
        graph.info.iter().find(|(k, _)| k == key).and_then(|(_, v)| match v {
            InfoValue::Count(n) => Some(*n),
            _ => None,
        })
    };
    let (Some(start), Some(end), Some(width)) =
        (number("graph_start"), number("graph_end"), number("graph_width"))
    else {
        return false;
    };
    if now - mtime.as_secs() as i64 > (end - start) / width.max(1) {
        return false;
    }
    match options.image_format {
        ImageFormat::Png => {
            let mut head = [0u8; 24];
            let ok = std::fs::File::open(file)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
                .is_ok();
            ok && head.starts_with(b"\x89PNG\r\n\x1a\n") && &head[12..16] == b"IHDR"
        }
        // rrdtool reads back only a PNG's header; any other kind of file
        // that exists and is fresh enough is kept.
        _ => true,
    }
}

impl GraphOutput {
    /// What `--lazy` leaves when the old image stays: PRINT results and
    /// the geometry, no value range, legends or image.
    pub fn keep_lazily(&mut self) {
        if let Some(at) = self.info.iter().position(|(k, _)| k == "value_min") {
            self.info.truncate(at);
        }
        self.image = None;
    }
}

/// Makes a graph. `now` is the clock for AT-style times and NOW.
pub fn render(options: &Options, elements: &[String], now: i64) -> Result<GraphOutput> {
    render_with(options, elements, now, &mut LocalFiles)
}

/// [`render`], with the DEFs' rows from `source` (a daemon, for `--daemon`).
pub fn render_with(
    options: &Options,
    elements: &[String],
    now: i64,
    source: &mut dyn FetchSource,
) -> Result<GraphOutput> {
    options.validate()?;
    let (start, end, parsed, data) = parse_and_evaluate(options, elements, now, source)?;
    let mut im = new_image(options, start, end, parsed)?;
    if let Some(format) = data_format(options.image_format) {
        return render_data(im, data, format, now);
    }
    let mut info: Vec<(String, InfoValue)> = Vec::new();
    let mut prints = Vec::new();
    let drawn = im.print_calc(&data, &mut prints, now, PrintPass::Graph)?;
    for (i, p) in prints.iter().enumerate() {
        info.push((format!("print[{i}]"), InfoValue::Text(p.clone())));
    }
    if !drawn {
        return Ok(GraphOutput {
            info,
            prints,
            image: None,
            file_image: None,
            image_width: 0,
            image_height: 0,
            data,
        });
    }
    if options.graph_type_xy {
        return Err(GraphError::invalid("XY diagram not implemented"));
    }
    im.size_location()?;
    // Cairo, which RRDtool draws with, refuses images over 32767 pixels a
    // side; the limit also keeps a hostile --width (or --zoom) from
    // exhausting memory.
    let zoomed = |v: i64| (v as f64 * options.zoom) as i64;
    if !(1..=MAX_SIDE).contains(&im.ximg)
        || !(1..=MAX_SIDE).contains(&im.yimg)
        || !(1..=MAX_SIDE).contains(&zoomed(im.ximg))
        || !(1..=MAX_SIDE).contains(&zoomed(im.yimg))
    {
        return Err(GraphError::invalid(format!(
            "an image of {}x{} pixels cannot be drawn (at most {MAX_SIDE} a side)",
            im.ximg, im.yimg
        )));
    }
    for (k, v) in [
        ("graph_left", im.xorigin),
        ("graph_top", im.yorigin - im.ysize),
        ("graph_width", im.xsize),
        ("graph_height", im.ysize),
        ("image_width", im.ximg),
        ("image_height", im.yimg),
        ("graph_start", im.start),
        ("graph_end", im.end),
    ] {
        info.push((k.to_string(), InfoValue::Count(v)));
    }
    im.data_proc(&data);
    if !options.logarithmic {
        im.si_unit();
    }
    if (!options.rigid || options.allow_shrink) && !options.logarithmic {
        im.expand_range();
    }
    info.push(("value_min".into(), InfoValue::Value(im.minval)));
    info.push(("value_max".into(), InfoValue::Value(im.maxval)));
    let has_grid = im.calc_horizontal_grid();

    let surface = match options.image_format {
        ImageFormat::Png => Surface::Png,
        ImageFormat::Pdf => Surface::Pdf,
        ImageFormat::Eps => Surface::Eps,
        _ => Surface::Svg,
    };
    let smoothing = |mono: bool| if mono { Smoothing::Mono } else { Smoothing::Normal };
    let mut canvas: Box<dyn Canvas> = Box::new(CairoCanvas::new(
        surface,
        im.ximg as u32,
        im.yimg as u32,
        options.zoom,
        smoothing(options.graph_mono),
        Rc::clone(&im.text),
    )?);
    im.paint(canvas.as_mut(), has_grid, &mut info);
    let image = canvas.finish()?;
    Ok(GraphOutput {
        info,
        prints,
        image: Some(image),
        file_image: None,
        image_width: im.ximg,
        image_height: im.yimg,
        data,
    })
}

/// The graph's time range (checked as RRDtool checks it), its elements,
/// and what their DEFs, CDEFs and VDEFs evaluate to.
fn parse_and_evaluate(
    options: &Options,
    elements: &[String],
    now: i64,
    source: &mut dyn FetchSource,
) -> Result<(i64, i64, Vec<Element>, Evaluation)> {
    let (start, end) = attime::parse_start_end(&options.start, &options.end, now)
        .map_err(|e| GraphError::invalid(e.to_string()))?;
    if start < 3600 * 24 * 365 * 10 {
        return Err(GraphError::invalid(format!("the first entry to fetch should be after 1980 ({start})")));
    }
    if end < start {
        return Err(GraphError::invalid(format!("start ({start}) should be less than end ({end})")));
    }
    let parsed = elements::parse(elements)?;
    let data_texts: Vec<String> = parsed
        .iter()
        .filter(|e| matches!(e.kind, Kind::Data { .. } | Kind::Shift))
        .map(|e| e.text.clone())
        .collect();
    let range = XportRange { start, end, step_secs: options.step_secs, max_rows: options.width, now };
    let data = if options.missing_data_as_nan {
        let mut empty = EmptyOnFailure { inner: source, ds_names: def_ds_names(&data_texts) };
        evaluate_with(&range, &data_texts, &mut empty)?
    } else {
        evaluate_with(&range, &data_texts, source)?
    };
    Ok((start, end, parsed, data))
}

/// The image's state before layout: the options' sizes and limits, the
/// text layout with its font smoothing, and one item per element.
fn new_image(options: &Options, start: i64, end: i64, parsed: Vec<Element>) -> Result<Image<'_>> {
    let font_smoothing = match (options.font_light, options.font_mono) {
        (true, _) => Smoothing::Light,
        (_, true) => Smoothing::Mono,
        _ => Smoothing::Normal,
    };
    Ok(Image {
        text: Rc::new(RefCell::new(TextLayout::new(font_smoothing)?)),
        o: options,
        start,
        end,
        xsize: options.width,
        ysize: options.height,
        ximg: 0,
        yimg: 0,
        xorigin: 0,
        yorigin: 0,
        minval: options.lower_limit,
        maxval: options.upper_limit,
        magfact: 1.0,
        viewfactor: 1.0,
        symbol: ' ',
        gridstep: f64::NAN,
        labfact: 2,
        alt_label: None,
        legendwidth: 0.0,
        legendheight: 0,
        x_origin_legend: 0,
        y_origin_legend: 0,
        x_origin_legend_y: 0,
        y_origin_legend_y: 0,
        x_origin_legend_y2: 0,
        y_origin_legend_y2: 0,
        gridfit: options.image_format == ImageFormat::Png && options.gridfit,
        grid_dash: [options.grid_dash.0, options.grid_dash.1],
        default_font: std::env::var("RRD_DEFAULT_FONT").unwrap_or_else(|_| DEFAULT_FONT.to_string()),
        items: parsed
            .into_iter()
            .map(|el| Item {
                legend: el.legend.clone(),
                el,
                leg_x: 0.0,
                leg_y: 0.0,
                yrule: f64::NAN,
                xrule: 0,
                p_data: Vec::new(),
            })
            .collect(),
    })
}

/// `-Z`: a DEF whose file cannot be fetched gets unknown rows (rrdtool's
/// `rrd_fetch_empty`), named after every DS the graph's DEFs ask for.
struct EmptyOnFailure<'a> {
    inner: &'a mut dyn FetchSource,
    ds_names: Vec<String>,
}

impl FetchSource for EmptyOnFailure<'_> {
    fn fetch(&mut self, req: &FetchRequest) -> rrd_engine::Result<rrd_engine::fetch::FetchResult> {
        match self.inner.fetch(req) {
            Ok(r) => Ok(r),
            Err(_) => {
                let step = if req.resolution_secs == 0 {
                    ((req.end - req.start) / 100).max(1)
                } else {
                    req.resolution_secs as i64
                };
                let start = req.start - req.start.rem_euclid(step);
                let end = req.end + (step - req.end.rem_euclid(step));
                let rows = ((end - start) / step).max(0) as usize;
                let ds_names = self.ds_names.clone();
                let data = vec![f64::NAN; rows.saturating_mul(ds_names.len()).min(1 << 26)];
                Ok(rrd_engine::fetch::FetchResult {
                    start,
                    end,
                    step_secs: step as u64,
                    rra_index: 0,
                    ds_names,
                    data,
                    past_end: None,
                })
            }
        }
    }
}

/// The DS names the DEFs among `texts` read (`DEF:v=file:ds:CF...`).
fn def_ds_names(texts: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for t in texts {
        let Some(body) = t.strip_prefix("DEF:") else { continue };
        let Some((_, rest)) = body.split_once('=') else { continue };
        // Fields split at ':' not escaped by '\'.
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&':') => {
                    cur.push(':');
                    chars.next();
                }
                ':' => fields.push(std::mem::take(&mut cur)),
                c => cur.push(c),
            }
        }
        fields.push(cur);
        if let Some(ds) = fields.get(1) {
            if !names.contains(ds) {
                names.push(ds.clone());
            }
        }
    }
    names
}
