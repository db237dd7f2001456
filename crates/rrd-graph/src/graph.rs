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

    let font_smoothing = match (options.font_light, options.font_mono) {
        (true, _) => Smoothing::Light,
        (_, true) => Smoothing::Mono,
        _ => Smoothing::Normal,
    };
    let mut im = Image {
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
    };
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

/// Which of RRDtool's PRINT passes `print_calc` is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PrintPass {
    /// `print_calc` of a picture.
    Graph,
    /// `rrd_xport_format_addprints`: the XML/JSON meta lists.
    XportMeta,
    /// `print_calc` after the meta lists, whose `%S` became `%s`.
    AfterXport,
}

fn data_format(f: ImageFormat) -> Option<DataFormat> {
    Some(match f {
        ImageFormat::Png | ImageFormat::Svg | ImageFormat::Pdf | ImageFormat::Eps => return None,
        ImageFormat::Xml => DataFormat::Xml,
        ImageFormat::XmlEnum => DataFormat::XmlEnum,
        ImageFormat::Json => DataFormat::Json,
        ImageFormat::JsonTime => DataFormat::JsonTime,
        ImageFormat::Csv => DataFormat::Csv,
        ImageFormat::Tsv => DataFormat::Tsv,
        ImageFormat::Ssv => DataFormat::Ssv,
    })
}

/// RRDtool's `rrd_graph_xport`: the series of every LINE, AREA and STACK
/// exported at the greatest common divisor of their steps over the graph's
/// range (aligned to it), with graphv's `graph_start`, `graph_end`,
/// `graph_step` and `print[i]`.
fn render_data(mut im: Image<'_>, data: Evaluation, format: DataFormat, now: i64) -> Result<GraphOutput> {
    struct Column<'s> {
        start: i64,
        step: i64,
        values: std::borrow::Cow<'s, [f64]>,
    }
    let mut columns: Vec<Column<'_>> = Vec::new();
    let mut legends = Vec::new();
    for item in &im.items {
        let value = match &item.el.kind {
            Kind::Plot(p) if p.tick.is_none() => &p.value,
            Kind::Xport { vname } => &ValueRef::Var(vname.clone()),
            _ => continue,
        };
        let column = match value {
            ValueRef::Var(name) => match data.get(name) {
                Some(Variable::Series(s)) => Column {
                    start: s.start,
                    step: s.step_secs,
                    values: std::borrow::Cow::Borrowed(&s.values),
                },
                _ => return Err(GraphError::invalid(format!("{name} is not a DEF or CDEF"))),
            },
            // RRDtool reads outside its element list here; rrdscale
            // exports the constant at the graph's step.
            ValueRef::Number(n) => {
                let step = data.global_step_secs.max(1);
                let start = im.start - im.start.rem_euclid(step);
                let rows = ((im.end - start) / step + 1).max(0) as usize;
                Column { start, step, values: std::borrow::Cow::Owned(vec![*n; rows]) }
            }
        };
        columns.push(column);
        legends.push(item.el.legend.clone());
    }
    if columns.is_empty() {
        return Err(GraphError::invalid("no XPORT found, nothing to do"));
    }
    let step = columns.iter().fold(0i64, |g, c| gcd(g, c.step));
    if step <= 0 {
        return Err(GraphError::invalid("xport step is zero"));
    }
    let start = im.start - im.start % step;
    let mut end = im.end - im.end % step;
    if im.end > end {
        end += step;
    }
    let rows = ((end - start) / step).max(0);
    if rows as u128 * columns.len() as u128 > rrd_engine::fetch::MAX_FETCH_VALUES as u128 {
        return Err(GraphError::invalid(format!("xport needs {rows} rows, more than rrdscale exports")));
    }
    let mut table_data = Vec::with_capacity(rows as usize * columns.len());
    for row in 0..rows {
        let t = start + row * step;
        for c in &columns {
            let index = ((t - c.start) as f64 / c.step as f64).floor();
            let v = if index >= 0.0 { c.values.get(index as usize).copied() } else { None };
            table_data.push(v.unwrap_or(f64::NAN));
        }
    }
    drop(columns);
    // RRDtool prints times through the `--x-grid` label format when one is
    // given; rrdscale's options have no custom x grid yet.
    let timefmt: Option<String> = None;
    let table = Table { start, end, step, legends, data: table_data, timefmt: timefmt.clone() };

    let mut meta = Vec::new();
    let with_meta = !matches!(format, DataFormat::Csv | DataFormat::Tsv | DataFormat::Ssv);
    if with_meta {
        let mut prints = Vec::new();
        im.print_calc(&data, &mut prints, now, PrintPass::XportMeta)?;
        let mut prints = prints.into_iter();
        let json = matches!(format, DataFormat::Json | DataFormat::JsonTime);
        // RRDtool formats PRINT/GPRINT/COMMENT texts (and rule values) in
        // one buffer that keeps its last text: a strftime of a VDEF without
        // a time writes its dashes elsewhere and prints that last text, and
        // in JSON the buffer is escaped in place.
        let mut last = String::new();
        fn keep(last: &mut String, text: String, escape: bool) -> String {
            *last = if escape { dataformat::escape_json(&text) } else { text };
            last.clone()
        }
        for item in &im.items {
            meta.push(match &item.el.kind {
                Kind::Print { vname, format: style, graph, .. } => {
                    let computed =
                        if *graph { item.legend.clone() } else { prints.next().unwrap_or_default() };
                    let never = matches!(style, PrintStyle::Strftime(_))
                        && matches!(data.get(vname), Some(Variable::Value(v)) if v.when.is_none());
                    let text = if never {
                        let stale = last.clone();
                        keep(&mut last, stale, json)
                    } else {
                        keep(&mut last, computed, json)
                    };
                    if *graph {
                        MetaEntry::Gprint(text)
                    } else {
                        MetaEntry::Print(text)
                    }
                }
                Kind::Comment if json => MetaEntry::Comment(keep(&mut last, item.el.legend.clone(), true)),
                Kind::Comment => MetaEntry::Comment(item.el.legend.clone()),
                Kind::Plot(p) if p.tick.is_some() => continue,
                Kind::Plot(p) if p.is_area => MetaEntry::Area(item.el.legend.clone()),
                Kind::Plot(_) => MetaEntry::Line(item.el.legend.clone()),
                Kind::TextAlign(a) => MetaEntry::Align(match a {
                    Align::Left => "left",
                    Align::Right => "right",
                    Align::Center => "center",
                    Align::Justified => "justified",
                }),
                Kind::HRule { .. } => {
                    keep(&mut last, rrd_lang::cformat::rrd_snprintf_e(0.0, 10), false);
                    MetaEntry::Hrule
                }
                Kind::VRule { value, .. } => {
                    // The time as parsed (a VDEF's is not known yet here).
                    let xrule = match value {
                        ValueRef::Number(n) => *n as i64,
                        ValueRef::Var(_) => 0,
                    };
                    let text = match &timefmt {
                        Some(f) => timefmt::strftime_local_in(f, xrule, 254),
                        None => "0".to_string(),
                    };
                    MetaEntry::Vrule(keep(&mut last, text, false))
                }
                Kind::Data { .. } | Kind::Shift | Kind::Xport { .. } => continue,
            });
        }
    }
    let (image, file_image) = dataformat::write(format, &table, &meta);
    let mut info: Vec<(String, InfoValue)> = vec![
        ("graph_start".into(), InfoValue::Count(start)),
        ("graph_end".into(), InfoValue::Count(end)),
        ("graph_step".into(), InfoValue::Count(step)),
    ];
    let mut prints = Vec::new();
    let pass = if with_meta { PrintPass::AfterXport } else { PrintPass::Graph };
    im.print_calc(&data, &mut prints, now, pass)?;
    for (i, p) in prints.iter().enumerate() {
        info.push((format!("print[{i}]"), InfoValue::Text(p.clone())));
    }
    Ok(GraphOutput { info, prints, image: Some(image), file_image, image_width: 0, image_height: 0, data })
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Image<'_> {
    fn color(&self, tag: ColorTag) -> Color {
        let i = tag as usize;
        if self.o.colors_given[i] {
            return self.o.colors[i].into();
        }
        let [r, g, b, a] = crate::options::DEFAULT_UNIT_COLORS[i];
        Color::new(r, g, b, a)
    }

    /// PRINT/GPRINT values and texts, rule positions. Returns whether
    /// anything is drawn.
    fn print_calc(
        &mut self,
        data: &Evaluation,
        prints: &mut Vec<String>,
        now: i64,
        pass: PrintPass,
    ) -> Result<bool> {
        let base = self.o.base as f64;
        let mut magfact = -1.0;
        let mut symbol: &'static str = "";
        let mut drawn = false;
        let mut tm_time = now;
        for item in &mut self.items {
            match &item.el.kind {
                Kind::Print { vname, cf, format: style, graph } => {
                    // The time `:strftime` shows: the VDEF's (none: dashes);
                    // over a DEF, the last VDEF's printed so far (0 when it
                    // had none), or now, as RRDtool's `tmvdef` carries over.
                    let (mut value, when) = match (data.get(vname), cf) {
                        (Some(Variable::Value(v)), _) => {
                            tm_time = v.when.unwrap_or(0);
                            (v.value, v.when)
                        }
                        (Some(Variable::Series(s)), Some(cf)) => (legacy_print_value(s, *cf), Some(tm_time)),
                        _ => return Err(GraphError::invalid(format!("{vname} is not a vname nor a number"))),
                    };
                    let numeric;
                    let format = match style {
                        PrintStyle::Number(f) => f,
                        // The xport meta lists know only strftime: other
                        // formatters print their format as a number.
                        PrintStyle::ValueTime(f) | PrintStyle::Duration(f)
                            if pass == PrintPass::XportMeta =>
                        {
                            numeric = PrintFormat::parse(f).map_err(|_| {
                                GraphError::invalid(format!("bad format for PRINT in \"{f}'"))
                            })?;
                            &numeric
                        }
                        other => {
                            let text = match other {
                                PrintStyle::Strftime(f) => timefmt::strftime_local(f, when),
                                PrintStyle::ValueTime(f) => {
                                    timefmt::val_strftime(f, value).ok_or_else(|| GraphError::invalid(""))?
                                }
                                PrintStyle::Duration(f) => timefmt::val_strfduration(f, value)?,
                                PrintStyle::Number(_) => unreachable!("matched above"),
                            };
                            if *graph {
                                item.legend = text;
                                drawn = true;
                            } else {
                                prints.push(text);
                            }
                            continue;
                        }
                    };
                    // After an export, RRDtool has turned each %S into %s.
                    if format.shared_scale && pass != PrintPass::AfterXport {
                        // One prefix for every %S of the graph, set by the
                        // first non-zero value (and reset by any %s).
                        if magfact < 0.0 {
                            let (v, s, m) = auto_scale(value, base);
                            value = v;
                            symbol = s;
                            magfact = m;
                            if value == 0.0 {
                                magfact = -1.0;
                            }
                        } else {
                            value /= magfact;
                        }
                    } else if format.has_symbol {
                        let (v, s, m) = auto_scale(value, base);
                        value = v;
                        symbol = s;
                        magfact = m;
                    }
                    // The meta lists are written with RRDtool's own printf.
                    let text = if pass == PrintPass::XportMeta {
                        format.format_rrd(value, symbol)
                    } else {
                        format.format(value, symbol)
                    };
                    if *graph {
                        let mut t = text;
                        // The meta lists format in a larger buffer.
                        if t.len() > GPRINT_MAX && pass != PrintPass::XportMeta {
                            let mut cut = GPRINT_MAX;
                            while !t.is_char_boundary(cut) {
                                cut -= 1;
                            }
                            t.truncate(cut);
                        }
                        item.legend = t;
                        drawn = true;
                    } else {
                        prints.push(text);
                    }
                }
                Kind::Plot(p) => {
                    if let ValueRef::Number(n) = p.value {
                        item.yrule = n;
                    }
                    drawn = true;
                }
                Kind::HRule { value, .. } => {
                    item.yrule = match value {
                        ValueRef::Number(n) => *n,
                        ValueRef::Var(v) => match data.get(v) {
                            Some(Variable::Value(v)) => v.value,
                            _ => f64::NAN,
                        },
                    };
                    drawn = true;
                }
                Kind::VRule { value, .. } => {
                    item.xrule = match value {
                        ValueRef::Number(n) => *n as i64,
                        ValueRef::Var(v) => match data.get(v) {
                            Some(Variable::Value(v)) => v.when.unwrap_or(0),
                            _ => 0,
                        },
                    };
                    drawn = true;
                }
                _ => {}
            }
        }
        Ok(drawn)
    }

    fn pt(&self, p: TextProp) -> f64 {
        self.o.font_sizes[p as usize]
    }

    /// The Pango font description of a text property.
    fn font_desc(&self, p: TextProp) -> &str {
        self.o.font_names[p as usize].as_deref().unwrap_or(&self.default_font)
    }

    /// The logical pixel size of `s` in a text property's font, as
    /// RRDtool's `gfx_get_text_width`/`gfx_get_text_height` report it
    /// (markup measured as drawn, with `--pango-markup`).
    fn measure_size(&self, prop: TextProp, s: &str) -> TextSize {
        measure_text(&self.text, self.o, &self.default_font, prop, s)
    }

    /// The width of [`Image::measure_size`].
    fn measure(&self, prop: TextProp, s: &str) -> f64 {
        f64::from(self.measure_size(prop, s).width)
    }

    /// RRDtool's `graph_size_location`: image size, graph origin and the
    /// origins of title, legend and axis labels for every legend position.
    fn size_location(&mut self) -> Result<()> {
        let o = self.o;
        if o.only_graph {
            self.xorigin = 0;
            self.ximg = self.xsize;
            self.yimg = self.ysize;
            self.yorigin = self.ysize;
            return Ok(());
        }
        let (x_spacing, y_spacing) = (15_i64, 15_i64);
        let y_watermark =
            if o.watermark.is_empty() { 4 } else { (self.pt(TextProp::Watermark) * 2.0) as i32 as i64 };
        let unit2 = (self.pt(TextProp::Unit) * 2.0) as i32 as i64;
        let x_vertical = if o.vertical_label.is_empty() { 0 } else { unit2 };
        let x_vertical2 = if o.right_axis_label.is_empty() { x_spacing } else { unit2 };
        let y_title = if o.title.is_empty() {
            y_spacing
        } else {
            (self.pt(TextProp::Title) * (title_lines(&o.title).len() as f64 + 1.0) * 1.6) as i32 as i64
        };
        let y_xlabel = if o.draw_x_grid { (self.pt(TextProp::Axis) * 2.5) as i32 as i64 } else { 0 };
        let mut x_ylabel = 0;
        if o.draw_y_grid || o.force_left_space {
            x_ylabel = (self.measure(TextProp::Axis, "0") * o.units_length as f64) as i32 as i64;
        }
        x_ylabel += x_spacing;
        let legend = !o.no_legend;
        let pos = o.legend_position;
        let side = legend && matches!(pos, LegendPosition::West | LegendPosition::East);
        let vertical = legend && matches!(pos, LegendPosition::North | LegendPosition::South);
        let right_axis = o.right_axis.is_some();
        self.legendheight = 0;
        self.legendwidth = 0.0;
        if side {
            self.leg_place(true)?;
        }
        let (x_main, y_main);
        if o.full_size_mode {
            self.ximg = self.xsize;
            self.yimg = self.ysize;
            let mut xm = self.ximg - x_ylabel;
            if side {
                xm = (xm as f64 - self.legendwidth) as i32 as i64;
            }
            if right_axis {
                xm -= x_ylabel;
            }
            if !o.no_rrdtool_tag {
                xm -= x_spacing;
            }
            xm -= x_vertical + x_vertical2;
            xm = xm.max(1);
            self.xsize = xm;
            x_main = xm;
            if vertical {
                self.legendwidth = self.ximg as f64;
                self.leg_place(false)?;
            }
            let mut ym = self.yimg as f64;
            ym -= (y_xlabel + if vertical { self.legendheight } else { 0 }) as f64;
            ym -= y_title as f64;
            if o.no_legend {
                ym -= 0.5 * y_spacing as f64;
            }
            if !o.watermark.is_empty() {
                ym -= y_watermark as f64;
            }
            let ym = (ym as i32 as i64).max(1);
            self.ysize = ym;
            y_main = ym;
        } else {
            x_main = self.xsize;
            y_main = self.ysize;
            self.ximg = self.xsize + x_ylabel;
            if !o.no_rrdtool_tag {
                self.ximg += x_spacing;
            }
            if side {
                self.ximg = (self.ximg as f64 + self.legendwidth) as i32 as i64;
            }
            if right_axis {
                self.ximg += x_ylabel;
            }
            self.ximg += x_vertical + x_vertical2;
            if vertical {
                self.legendwidth = self.ximg as f64;
                self.leg_place(false)?;
            }
            let mut yimg = (y_main + y_xlabel) as f64;
            if vertical {
                yimg += self.legendheight as f64;
            }
            yimg += y_title as f64;
            if o.no_legend {
                yimg += 0.5 * y_spacing as f64;
            }
            if !o.watermark.is_empty() {
                yimg += y_watermark as f64;
            }
            self.yimg = yimg as i32 as i64;
        }
        if side {
            self.leg_place(false)?;
        }
        let lw = self.legendwidth;
        let lh = self.legendheight;
        let right2 = if right_axis { x_ylabel } else { 0 };
        self.x_origin_legend_y2 = x_vertical + x_ylabel + x_main + right2;
        self.y_origin_legend_y2 = y_title + y_main / 2;
        // As in rrdtool, the position counts even without a legend.
        match pos {
            LegendPosition::North => {
                self.x_origin_legend = 0;
                self.y_origin_legend = y_title;
                self.x_origin_legend_y = 0;
                self.y_origin_legend_y = y_title + lh + y_main / 2 + y_xlabel;
                self.xorigin = x_vertical + x_ylabel;
                self.yorigin = y_title + lh + y_main;
                self.y_origin_legend_y2 = y_title + lh + y_main / 2 + y_xlabel;
            }
            LegendPosition::West => {
                self.x_origin_legend = 0;
                self.y_origin_legend = y_title;
                self.x_origin_legend_y = lw as i32 as i64;
                self.y_origin_legend_y = y_title + y_main / 2;
                self.xorigin = (lw + (x_vertical + x_ylabel) as f64) as i32 as i64;
                self.yorigin = y_title + y_main;
                self.x_origin_legend_y2 =
                    (lw + (x_vertical + x_ylabel + x_main + right2) as f64) as i32 as i64;
            }
            LegendPosition::South => {
                self.x_origin_legend = 0;
                self.y_origin_legend = y_title + y_main + y_xlabel;
                self.x_origin_legend_y = 0;
                self.y_origin_legend_y = y_title + y_main / 2;
                self.xorigin = x_vertical + x_ylabel;
                self.yorigin = y_title + y_main;
            }
            LegendPosition::East => {
                self.x_origin_legend = x_vertical + x_ylabel + x_main + x_vertical2 + right2;
                self.y_origin_legend = y_title;
                self.x_origin_legend_y = 0;
                self.y_origin_legend_y = y_title + y_main / 2;
                self.xorigin = x_vertical + x_ylabel;
                self.yorigin = y_title + y_main;
                if !o.no_rrdtool_tag {
                    self.x_origin_legend += x_spacing;
                    self.x_origin_legend_y += x_spacing;
                    self.xorigin += x_spacing;
                    self.x_origin_legend_y2 += x_spacing;
                }
            }
        }
        Ok(())
    }

    /// RRDtool's `leg_place` (south legend): splits legends into lines,
    /// honours `\l \r \c \j \s \g \u \n \.` and TEXTALIGN, and sets each
    /// legend's position and the legend height.
    fn leg_place(&mut self, calc_width: bool) -> Result<()> {
        let o = self.o;
        if o.no_legend || o.only_graph {
            return Ok(());
        }
        let legend_pt = self.pt(TextProp::Legend);
        let interleg = (legend_pt * 2.0) as i32 as i64;
        let border = (legend_pt * 2.0) as i32 as i64;
        let mut legendwidth = if calc_width { 0.0 } else { self.legendwidth - 2.0 * border as f64 };
        // Measuring only (a legend beside the graph): the legends are
        // put back as they were.
        let saved: Vec<String> =
            if calc_width { self.items.iter().map(|i| i.legend.clone()).collect() } else { Vec::new() };
        let mut fill: i64 = 0;
        let mut leg_c = 0;
        let mut leg_y: i64 = 0;
        let mut mark = 0;
        let mut default_align = 'j';
        let n = self.items.len();
        let mut legspace = vec![0i64; n];
        let mut i: usize = 0;
        while i < n {
            let fill_last = fill;
            if let Kind::TextAlign(a) = self.items[i].el.kind {
                default_align = match a {
                    Align::Left => 'l',
                    Align::Right => 'r',
                    Align::Justified => 'j',
                    Align::Center => 'c',
                };
            }
            if !o.force_rules_legend {
                let item = &self.items[i];
                let hide = match item.el.kind {
                    Kind::HRule { .. } => item.yrule < self.minval || item.yrule > self.maxval,
                    Kind::VRule { .. } => item.xrule < self.start || item.xrule > self.end,
                    _ => false,
                };
                if hide {
                    self.items[i].legend.clear();
                }
            }
            let legend = &mut self.items[i].legend;
            if legend.contains("\\t") {
                *legend = legend.replace("\\t", "\t");
            }
            let mut prt = '\0';
            let bytes = legend.as_bytes();
            if bytes.len() >= 2 && bytes[bytes.len() - 2] == b'\\' && bytes[bytes.len() - 1].is_ascii() {
                prt = bytes[bytes.len() - 1] as char;
                legend.truncate(legend.len() - 2);
            }
            if !matches!(prt, 'l' | 'n' | 'r' | 'j' | 'c' | 'u' | '.' | 's' | '\0' | 'g') {
                return Err(GraphError::invalid(format!(
                    "Unknown control code at the end of '{legend}\\{prt}'"
                )));
            }
            if prt == 'n' {
                prt = 'l';
            }
            if prt == '.' {
                prt = '\0';
            }
            if prt == 'g' {
                while legend.ends_with(' ') {
                    legend.pop();
                }
            }
            if !legend.is_empty() {
                legspace[i] = if prt == 'g' { 0 } else { interleg };
                if fill > 0 {
                    fill += legspace[i];
                }
                let w =
                    measure_text(&self.text, o, &self.default_font, TextProp::Legend, legend).width as i64;
                fill += w;
                leg_c += 1;
            } else {
                legspace[i] = 0;
            }
            if prt == 'g' {
                prt = '\0';
            }
            if prt == '\0' {
                if calc_width && fill as f64 > legendwidth {
                    legendwidth = fill as f64;
                }
                if i == n - 1 || fill as f64 > legendwidth {
                    prt = default_align;
                }
                if fill as f64 > legendwidth && leg_c > 1 {
                    // Too wide: this legend starts the next line.
                    i -= 1;
                    fill = fill_last;
                    leg_c -= 1;
                }
                if leg_c == 1 && prt == 'j' {
                    prt = 'l';
                }
            }
            if prt != '\0' {
                let mut leg_x = border as f64;
                let glue = if leg_c >= 2 && prt == 'j' {
                    (legendwidth - fill as f64) / (leg_c - 1) as f64
                } else {
                    0.0
                };
                if prt == 'c' {
                    leg_x = border as f64 + (legendwidth - fill as f64) / 2.0;
                }
                if prt == 'r' {
                    leg_x = legendwidth - fill as f64 + border as f64;
                }
                for (item, space) in self.items[mark..=i].iter_mut().zip(&legspace[mark..=i]) {
                    if item.legend.is_empty() {
                        continue;
                    }
                    item.leg_x = leg_x;
                    item.leg_y = (leg_y + border) as f64;
                    leg_x += f64::from(
                        measure_text(&self.text, o, &self.default_font, TextProp::Legend, &item.legend).width,
                    ) + *space as f64
                        + glue;
                }
                // C's int arithmetic: the double result is truncated.
                if leg_x > border as f64 || prt == 's' {
                    leg_y = (leg_y as f64 + legend_pt * 1.8) as i64;
                }
                if prt == 's' {
                    leg_y = (leg_y as f64 - legend_pt) as i64;
                }
                if prt == 'u' {
                    leg_y = (leg_y as f64 - legend_pt * 1.8) as i64;
                }
                if calc_width && fill as f64 > legendwidth {
                    legendwidth = fill as f64;
                }
                fill = 0;
                leg_c = 0;
                mark = i + 1;
            }
            i += 1;
        }
        if calc_width {
            self.legendwidth = legendwidth + 2.0 * border as f64;
            for (item, legend) in self.items.iter_mut().zip(saved) {
                item.legend = legend;
            }
        } else {
            self.legendheight = (leg_y as f64 + border as f64 * 0.6) as i64;
        }
        Ok(())
    }

    /// What a LINE/AREA plots, its variable looked up once (not once per
    /// pixel: a graph may have thousands of them).
    fn plot_source<'d>(data: &'d Evaluation, value: &ValueRef, yrule: f64) -> PlotSource<'d> {
        if !yrule.is_nan() {
            return PlotSource::Constant(yrule);
        }
        let ValueRef::Var(name) = value else { return PlotSource::Constant(f64::NAN) };
        match data.get(name) {
            Some(Variable::Value(v)) => PlotSource::Constant(v.value),
            Some(Variable::Series(s)) => PlotSource::Series(s),
            None => PlotSource::Constant(f64::NAN),
        }
    }

    /// The value of a LINE/AREA at graph time `t`.
    fn plot_value(source: &PlotSource, t: i64) -> f64 {
        match *source {
            PlotSource::Constant(v) => v,
            PlotSource::Series(s) => {
                if t >= s.start && t < s.end && s.step_secs > 0 {
                    let row = ((t - s.start) as f64 / s.step_secs as f64).floor() as usize;
                    s.values.get(row).copied().unwrap_or(f64::NAN)
                } else {
                    f64::NAN
                }
            }
        }
    }

    /// RRDtool's `data_proc`: one (stacked) value per pixel for every LINE
    /// and AREA, and the y range from them and the limits.
    fn data_proc(&mut self, data: &Evaluation) {
        let o = self.o;
        let pixstep = (self.end - self.start) as f64 / self.xsize as f64;
        let xsize = self.xsize.max(0) as usize;
        let (mut minval, mut maxval) = (f64::NAN, f64::NAN);
        let mut sources = Vec::with_capacity(self.items.len());
        for item in &mut self.items {
            if let Kind::Plot(p) = &item.el.kind {
                item.p_data = vec![f64::NAN; xsize + 1];
                sources.push(Self::plot_source(data, &p.value, item.yrule));
            } else {
                sources.push(PlotSource::Constant(f64::NAN));
            }
        }
        for i in 0..xsize {
            let gr_time = (self.start as f64 + pixstep * i as f64) as u64 as i64;
            let mut paintval = 0.0;
            for (item, source) in self.items.iter_mut().zip(&sources) {
                let Kind::Plot(p) = &item.el.kind else { continue };
                if !p.stack {
                    paintval = 0.0;
                }
                let value = Self::plot_value(source, gr_time);
                if !value.is_nan() {
                    paintval += value;
                    item.p_data[i] = paintval;
                    if paintval.is_finite() && !p.skip_scale {
                        if (minval.is_nan() || paintval < minval) && !(o.logarithmic && paintval <= 0.0) {
                            minval = paintval;
                        }
                        if maxval.is_nan() || paintval > maxval {
                            maxval = paintval;
                        }
                    }
                } else {
                    item.p_data[i] = f64::NAN;
                }
            }
        }
        if o.logarithmic {
            if minval.is_nan() || maxval.is_nan() || maxval <= 0.0 {
                minval = 0.0;
                maxval = 5.1;
            }
            if minval <= 0.0 {
                minval = maxval / 10e8;
            }
        } else if minval.is_nan() || maxval.is_nan() {
            minval = 0.0;
            maxval = 1.0;
        }
        if self.minval.is_nan() || (!o.rigid && self.minval > minval) {
            self.minval = if o.logarithmic { minval / 2.0 } else { minval };
        }
        if self.maxval.is_nan() || (!o.rigid && self.maxval < maxval) {
            self.maxval = if o.logarithmic { maxval * 2.0 } else { maxval };
        }
        // --allow-shrink: rigid limits may close in on the data.
        if !self.minval.is_nan() && o.rigid && o.allow_shrink && self.minval < minval {
            self.minval = if o.logarithmic { minval / 2.0 } else { minval };
        }
        if !self.maxval.is_nan() && o.rigid && o.allow_shrink && self.maxval > maxval {
            self.maxval = if o.logarithmic { maxval * 2.0 } else { maxval };
        }
        if self.minval > self.maxval {
            self.minval = if self.minval > 0.0 { 0.99 * self.maxval } else { 1.01 * self.maxval };
        }
        if almost_equal(self.minval, self.maxval, 4) {
            if self.maxval > 0.0 {
                self.maxval *= 1.01;
            } else {
                self.maxval *= 0.99;
            }
            if almost_equal(self.maxval, 0.0, 4) {
                self.maxval = 1.0;
            }
        }
    }

    /// RRDtool's `si_unit`: the magnitude of the axis and its SI prefix.
    fn si_unit(&mut self) {
        const SYMBOLS: [char; 17] =
            ['y', 'z', 'a', 'f', 'p', 'n', 'u', 'm', ' ', 'k', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y'];
        let base = self.o.base as f64;
        let digits = (self.minval.abs().max(self.maxval.abs()).ln() / base.ln()).floor();
        let viewdigits = match self.o.units_exponent {
            Some(e) => f64::from(e / 3),
            None => digits,
        };
        self.magfact = base.powf(digits);
        self.viewfactor = self.magfact / base.powf(viewdigits);
        let idx = viewdigits + 8.0;
        self.symbol = if (0.0..17.0).contains(&idx) { SYMBOLS[idx as usize] } else { '?' };
    }

    /// RRDtool's `expand_range`: limits moved to sensible round values.
    fn expand_range(&mut self) {
        const SENSIBLE: [f64; 48] = [
            1000.0, 900.0, 800.0, 750.0, 700.0, 600.0, 500.0, 400.0, 300.0, 250.0, 200.0, 125.0, 100.0, 90.0,
            80.0, 75.0, 70.0, 60.0, 50.0, 40.0, 30.0, 25.0, 20.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.5,
            3.0, 2.5, 2.0, 1.8, 1.5, 1.2, 1.0, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, -1.0,
        ];
        let o = self.o;
        if let Some((step, fact)) = o.y_grid {
            // Limits on whole label intervals of the --y-grid.
            let unit = fact as f64 * step;
            self.minval = unit * (self.minval / unit).floor();
            self.maxval = unit * (self.maxval / unit).ceil();
        } else if o.alt_autoscale {
            let delt = self.maxval - self.minval;
            let mut adj = delt * 0.1;
            let fact = 2.0
                * 10f64.powf((self.minval.abs().max(self.maxval.abs()) / self.magfact).log10().floor() - 2.0);
            if delt < fact {
                adj = (fact - delt) * 0.55;
            }
            self.minval -= adj;
            self.maxval += adj;
        } else if o.alt_autoscale_min {
            self.minval -= (self.maxval - self.minval) * 0.1;
        } else if o.alt_autoscale_max {
            self.maxval += (self.maxval - self.minval) * 0.1;
        } else {
            let scaled_min = self.minval / self.magfact;
            let scaled_max = self.maxval / self.magfact;
            let mut i = 1;
            while SENSIBLE[i] > 0.0 {
                let (hi, lo) = (SENSIBLE[i - 1], SENSIBLE[i]);
                if hi >= scaled_min && lo <= scaled_min {
                    self.minval = lo * self.magfact;
                }
                if -hi <= scaled_min && -lo >= scaled_min {
                    self.minval = -hi * self.magfact;
                }
                if hi >= scaled_max && lo <= scaled_max {
                    self.maxval = hi * self.magfact;
                }
                if -hi <= scaled_max && -lo >= scaled_max {
                    self.maxval = -lo * self.magfact;
                }
                i += 1;
            }
        }
    }

    /// RRDtool's `calc_horizontal_grid` (classic grid): grid step and
    /// label factor. False when the range cannot carry a grid.
    fn calc_horizontal_grid(&mut self) -> bool {
        const YLAB: [(f64, [i64; 4]); 12] = [
            (0.1, [1, 2, 5, 10]),
            (0.2, [1, 5, 10, 20]),
            (0.5, [1, 2, 4, 10]),
            (1.0, [1, 2, 5, 10]),
            (2.0, [1, 5, 10, 20]),
            (5.0, [1, 2, 4, 10]),
            (10.0, [1, 2, 5, 10]),
            (20.0, [1, 5, 10, 20]),
            (50.0, [1, 2, 4, 10]),
            (100.0, [1, 2, 5, 10]),
            (200.0, [1, 5, 10, 20]),
            (500.0, [1, 2, 4, 10]),
        ];
        self.labfact = 2;
        let range = self.maxval - self.minval;
        let scaledrange = range / self.magfact;
        if scaledrange.is_nan() {
            return false;
        }
        if let Some((step, fact)) = self.o.y_grid {
            self.gridstep = step;
            self.labfact = fact;
            return true;
        }
        if self.o.alt_y_grid {
            self.alt_y_grid(range);
            return true;
        }
        let mut pixel = 1_i64;
        let mut gridind = 0;
        for (i, (grid, _)) in YLAB.iter().enumerate() {
            pixel = c_int(self.ysize as f64 / (scaledrange / grid)) as i64;
            gridind = i;
            if pixel >= 5 {
                break;
            }
        }
        for f in YLAB[gridind].1 {
            if (pixel * f) as f64 >= 1.8 * self.pt(TextProp::Axis) {
                self.labfact = f;
                break;
            }
        }
        self.gridstep = YLAB[gridind].0 * self.magfact;
        true
    }

    /// `--alt-y-grid`: a decimal grid step with 5 to 15 lines and a label
    /// format with as many decimals as the step needs.
    fn alt_y_grid(&mut self, range: f64) {
        let (vf, mf) = (self.viewfactor, self.magfact);
        let mut decimals = c_int((self.maxval.abs().max(self.minval.abs()) * vf / mf).log10().ceil());
        if decimals <= 0 {
            decimals = 1;
        }
        let mut step = 10f64.powf((range * vf / mf).log10().floor()) / vf * mf;
        if step == 0.0 {
            step = 0.1;
        }
        if range / step < 5.0 && step >= 30.0 {
            step /= 10.0;
        }
        if range / step > 15.0 {
            step *= 10.0;
        }
        if range / step > 5.0 {
            self.labfact = 1;
            if range / step > 8.0 || step < 1.8 * self.pt(TextProp::Axis) {
                self.labfact = 2;
            }
        } else {
            step /= 5.0;
            self.labfact = 5;
        }
        self.gridstep = step;
        let fractionals = c_int((step * self.labfact as f64 * vf / mf).log10().floor());
        let (width, precision) = if fractionals < 0 {
            (i64::from(decimals) - i64::from(fractionals) + 1, (-i64::from(fractionals)) as usize)
        } else {
            (i64::from(decimals) + 1, 0)
        };
        self.alt_label = Some((width.clamp(0, 4096) as usize, precision.min(4096)));
    }

    /// The left axis label of grid line `i` (value `v` as scaled for the axis).
    fn y_label(&self, i: i64, v: f64, max_y: f64) -> String {
        let o = self.o;
        match o.left_axis_formatter {
            AxisFormatter::Timestamp => {
                return crate::labels::timestamp_label(self.gridstep * i as f64, &o.left_axis_format)
            }
            AxisFormatter::Duration => {
                return crate::labels::duration_label(self.gridstep * i as f64, &o.left_axis_format)
            }
            AxisFormatter::Numeric => {}
        }
        let sisym = if i == 0 { ' ' } else { self.symbol };
        if !o.left_axis_format.is_empty() {
            // Checked when the options were read; the symbol is not printed.
            return crate::labels::axis_format(&o.left_axis_format)
                .map(|f| f.format(v, ""))
                .unwrap_or_default();
        }
        let mut label = if let Some((width, precision)) = self.alt_label {
            rrd_lang::cformat::printf(
                v,
                rrd_lang::cformat::Conversion { flag: None, width, precision: Some(precision), conv: 'f' },
            )
        } else {
            let decimals =
                max_y < 10.0 || self.gridstep / self.magfact * self.viewfactor * (self.labfact as f64) < 1.0;
            if decimals {
                format!("{v:4.1}")
            } else {
                format!("{v:4.0}")
            }
        };
        if self.symbol != ' ' {
            label.push(' ');
            label.push(sisym);
        }
        label
    }

    /// The right axis label of grid line `i` (`--right-axis`).
    fn y_label_right(
        &self,
        i: i64,
        sgrid: i64,
        egrid: i64,
        max_y: f64,
        magfact: &mut Option<(f64, &'static str)>,
    ) -> String {
        let o = self.o;
        let Some((scale, shift)) = o.right_axis else { return String::new() };
        let sval = self.gridstep * i as f64 * scale + shift;
        match o.right_axis_formatter {
            AxisFormatter::Timestamp => crate::labels::timestamp_label(sval, &o.right_axis_format),
            AxisFormatter::Duration => crate::labels::duration_label(sval, &o.right_axis_format),
            AxisFormatter::Numeric => {
                if !o.right_axis_format.is_empty() {
                    return crate::labels::axis_format(&o.right_axis_format)
                        .map(|f| f.format(sval, ""))
                        .unwrap_or_default();
                }
                let (mag, symb) = *magfact.get_or_insert_with(|| {
                    let mid = self.gridstep * (sgrid + egrid) as f64 / 2.0 * scale + shift;
                    let (_, symb, mag) = auto_scale(mid, self.o.base as f64);
                    (mag, symb)
                });
                let v = sval / mag;
                if max_y < 10.0 {
                    format!("{v:5.1} {symb}")
                } else {
                    format!("{v:5.0} {symb}")
                }
            }
        }
    }

    fn xtr(&self, t: i64) -> f64 {
        let pixie = self.xsize as f64 / (self.end - self.start).max(1) as f64;
        c_int(self.xorigin as f64 + pixie * (t - self.start) as f64) as f64
    }

    fn ytr(&self, value: f64) -> f64 {
        let yorigin = self.yorigin as f64;
        if value.is_nan() {
            return yorigin;
        }
        if !self.o.logarithmic {
            let pixie = self.ysize as f64 / (self.maxval - self.minval);
            yorigin - pixie * (value - self.minval)
        } else {
            let pixie = self.ysize as f64 / (self.maxval.log10() - self.minval.log10());
            if value < self.minval {
                yorigin
            } else {
                yorigin - pixie * (value.log10() - self.minval.log10())
            }
        }
    }

    /// RRDtool's `gfx_line_fit`, in device pixels (`--zoom` scales them):
    /// a line of odd width is centred on a pixel, one of even width on the
    /// edge between two, moved left and down (so a 2-pixel line covers the
    /// pixel column before `x` and the row below `y`).
    fn line_fit(&self, x: f64, y: f64, width: f64) -> (f64, f64) {
        if !self.gridfit {
            return (x, y);
        }
        let zoom = self.o.zoom;
        let w = width * zoom;
        let off = w / 2.0 - (w / 2.0).ceil();
        (((x * zoom - 0.5).floor() - off) / zoom, ((y * zoom + 0.5).ceil() + off) / zoom)
    }

    /// RRDtool's `gfx_area_fit`: area corners on whole device pixels, left
    /// and down.
    fn area_fit(&self, x: f64, y: f64) -> (f64, f64) {
        if !self.gridfit {
            return (x, y);
        }
        let zoom = self.o.zoom;
        ((x * zoom).floor() / zoom, (y * zoom).ceil() / zoom)
    }

    /// Dashes and their offset: an element's start at 0; the grid's at
    /// the fitted origin, as RRDtool's `gfx_dashed_line` starts them.
    fn dash_pattern<'d>(&'d self, dash: Option<Dash<'d>>, width: f64) -> Option<(&'d [f64], f64)> {
        match dash? {
            Dash::Element(d) => Some((d, 0.0)),
            Dash::Grid => Some((&self.grid_dash, self.line_fit(0.0, 0.0, width).0)),
        }
    }

    fn line(
        &self,
        c: &mut dyn Canvas,
        p0: (f64, f64),
        p1: (f64, f64),
        width: f64,
        color: impl Into<Color>,
        dash: Option<Dash<'_>>,
    ) {
        let a = self.line_fit(p0.0, p0.1, width);
        let b = self.line_fit(p1.0, p1.1, width);
        c.stroke(&[vec![a, b]], width, color.into(), self.dash_pattern(dash, width), false);
    }

    fn area(&self, c: &mut dyn Canvas, points: &[(f64, f64)], color: impl Into<Color>) {
        let pts: Vec<(f64, f64)> = points.iter().map(|p| self.area_fit(p.0, p.1)).collect();
        c.fill(&simplify(&pts), color.into());
    }

    #[allow(clippy::too_many_arguments)]
    fn text(
        &self,
        c: &mut dyn Canvas,
        x: f64,
        y: f64,
        color: impl Into<Color>,
        prop: TextProp,
        angle: f64,
        h: HAlign,
        v: VAlign,
        s: &str,
    ) {
        c.text(&TextSpec {
            x,
            y,
            color: color.into(),
            size_pt: self.pt(prop),
            font: self.font_desc(prop),
            tab_width: tab_period(self.o),
            angle,
            h,
            v,
            text: s,
            markup: self.o.pango_markup,
        });
    }

    fn paint(&mut self, c: &mut dyn Canvas, has_grid: bool, info: &mut Vec<(String, InfoValue)>) {
        let (ximg, yimg) = (self.ximg as f64, self.yimg as f64);
        let (xo, yo, xs, ys) =
            (self.xorigin as f64, self.yorigin as f64, self.xsize as f64, self.ysize as f64);
        self.area(c, &[(0.0, 0.0), (0.0, yimg), (ximg, yimg), (ximg, 0.0)], self.color(ColorTag::Back));
        self.area(
            c,
            &[(xo, yo), (xo + xs, yo), (xo + xs, yo - ys), (xo, yo - ys)],
            self.color(ColorTag::Canvas),
        );
        c.clip(Some((xo, yo - ys - 1.0, xs, ys + 2.0)));
        self.paint_plots(c);
        c.clip(None);
        if !self.o.only_graph {
            self.grid_paint(c, has_grid, info);
            self.axis_paint(c);
        }
        for item in &self.items {
            match &item.el.kind {
                Kind::HRule { color: Some(col), dashes, .. }
                    if item.yrule >= self.minval && item.yrule <= self.maxval =>
                {
                    let y = self.ytr(item.yrule);
                    self.line(c, (xo, y), (xo + xs, y), 1.0, *col, dashes.as_deref().map(Dash::Element));
                }
                Kind::VRule { color: Some(col), dashes, .. }
                    if item.xrule >= self.start && item.xrule <= self.end =>
                {
                    let x = self.xtr(item.xrule);
                    self.line(c, (x, yo), (x, yo - ys), 1.0, *col, dashes.as_deref().map(Dash::Element));
                }
                _ => {}
            }
        }
    }

    /// LINEs and AREAs, in order, each stacking on the one before.
    fn paint_plots(&mut self, c: &mut dyn Canvas) {
        let areazero = if self.minval > 0.0 {
            self.minval
        } else if self.maxval < 0.0 {
            self.maxval
        } else {
            0.0
        };
        let xsize = self.xsize.max(0) as usize;
        let xo = self.xorigin as f64;
        let diff = self.maxval - self.minval;
        let (maxlimit, minlimit) = (self.maxval + 9.0 * diff, self.minval - 9.0 * diff);
        let mut last: Option<usize> = None;
        for idx in 0..self.items.len() {
            let Kind::Plot(p) = self.items[idx].el.kind.clone() else { continue };
            let mut data = std::mem::take(&mut self.items[idx].p_data);
            for v in data.iter_mut().take(xsize) {
                if v.is_infinite() {
                    *v = if *v > 0.0 { self.maxval } else { self.minval };
                }
                if *v > maxlimit {
                    *v = maxlimit;
                }
                if *v < minlimit {
                    *v = minlimit;
                }
            }
            if let Some(fraction) = p.tick {
                // A mark per pixel where the value is known and not zero,
                // up from the bottom (or down from the top when negative).
                if let Some(color) = p.color.filter(|c| c.a != 0) {
                    let (yo, ys) = (self.yorigin as f64, self.ysize as f64);
                    for (ii, v) in data.iter().enumerate().take(xsize) {
                        if v.is_nan() || *v == 0.0 {
                            continue;
                        }
                        let x = xo + ii as f64;
                        if fraction > 0.0 {
                            self.line(c, (x, yo + 1.0), (x, yo - fraction * ys), 1.0, color, None);
                        } else if fraction < 0.0 {
                            self.line(c, (x, yo - ys - 1.0), (x, yo - ys - fraction * ys), 1.0, color, None);
                        }
                    }
                }
                self.items[idx].p_data = data;
                continue;
            }
            if let Some(color) = p.color.filter(|c| c.a != 0) {
                if !p.is_area {
                    self.paint_line(c, &data, p.width, color.into(), p.dashes.as_deref());
                } else {
                    let base_data = if p.stack { last.map(|l| self.items[l].p_data.clone()) } else { None };
                    // (x, back, fore) corners: RRDtool's backX/backY and
                    // foreX/foreY, the area widened by 0.2 pixel up and down.
                    let mut run: Vec<(f64, f64, f64)> = Vec::new();
                    for ii in 0..=xsize {
                        let v = data.get(ii).copied().unwrap_or(f64::NAN);
                        if ii == xsize || v.is_nan() {
                            self.area_run(c, &run, color.into(), p.gradient.map(|(c2, h)| (c2.into(), h)));
                            run.clear();
                            continue;
                        }
                        if !self.o.slope_mode && ii == 0 {
                            continue;
                        }
                        let mut top = self.ytr(v);
                        let mut base = match &base_data {
                            Some(b) => self.ytr(b[ii]),
                            None => self.ytr(areazero),
                        };
                        if top == base {
                            self.area_run(c, &run, color.into(), p.gradient.map(|(c2, h)| (c2.into(), h)));
                            run.clear();
                            continue;
                        }
                        if base > top {
                            std::mem::swap(&mut top, &mut base);
                        }
                        let x = ii as f64 + xo;
                        if !self.o.slope_mode {
                            run.push((x - 1.0, base - 0.2, top + 0.2));
                        }
                        run.push((x, base - 0.2, top + 0.2));
                    }
                }
            }
            // Unknown pixels stack on what is below them.
            for (ii, v) in data.iter_mut().enumerate().take(xsize) {
                if v.is_nan() {
                    *v = match (p.stack, last) {
                        (true, Some(l)) => self.items[l].p_data[ii],
                        _ => areazero,
                    };
                }
            }
            self.items[idx].p_data = data;
            last = Some(idx);
        }
    }

    /// One run of an AREA between unknown or empty pixels, drawn as
    /// RRDtool's `data_proc` draws it: the outline along the fore edge then
    /// back along the back edge, a point kept only where the edge bends (as
    /// `AlmostEqual2sComplement` sees it); a gradient AREA as rectangles,
    /// each from the run's first fore point to the next kept point.
    fn area_run(
        &self,
        c: &mut dyn Canvas,
        run: &[(f64, f64, f64)],
        color: Color,
        gradient: Option<(Color, f64)>,
    ) {
        if run.len() < 2 {
            return;
        }
        let last = run.len() - 1;
        let flat = |a: f64, b: f64| almost_equal(a, b, 4);
        // Indices of the kept fore points, then of the kept back points.
        let mut fore = Vec::new();
        let mut i = 0;
        while i < last {
            let from = i;
            i += 1;
            while i < last && flat(run[from].2, run[i].2) && flat(run[from].2, run[i + 1].2) {
                i += 1;
            }
            fore.push(i);
        }
        let mut back = vec![last];
        let mut i = last;
        while i > 1 {
            let from = i;
            i -= 1;
            while i > 1 && flat(run[from].1, run[i].1) && flat(run[from].1, run[i - 1].1) {
                i -= 1;
            }
            back.push(i);
        }
        let Some((color2, height)) = gradient else {
            let mut poly = vec![(run[0].0, run[0].1), (run[0].0, run[0].2)];
            poly.extend(fore.iter().map(|&i| (run[i].0, run[i].2)));
            poly.extend(back.iter().map(|&i| (run[i].0, run[i].1)));
            self.area(c, &poly, color);
            return;
        };
        let y1 = run[0].2;
        let mut prev = (run[fore[0]].0, run[fore[0]].2);
        let points =
            fore[1..].iter().map(|&i| (run[i].0, run[i].2)).chain(back.iter().map(|&i| (run[i].0, run[i].1)));
        for to in points {
            self.rect_fade(c, (prev.0, y1), to, prev.1, (color, color2), height);
            prev = to;
        }
    }

    /// RRDtool's `gfx_add_rect_fadey`: the rectangle between two corners
    /// filled with a linear gradient from `colors.1` to `colors.0`, whose
    /// ends depend on `height` (`gradheight=`) and the previous point's
    /// y (`py`).
    fn rect_fade(
        &self,
        c: &mut dyn Canvas,
        a: (f64, f64),
        b: (f64, f64),
        py: f64,
        colors: (Color, Color),
        height: f64,
    ) {
        let (x1, y1) = self.area_fit(a.0, a.1);
        let (x2, y2) = self.area_fit(b.0, b.1);
        let mid = (y2 + py) / 2.0;
        let (from, to) = if height < 0.0 {
            ((x1, y1), (x2, y1 + height))
        } else if height > 0.0 {
            ((x1, mid + height), (x2, mid))
        } else {
            ((x1, y1), (x2, mid))
        };
        let rect = [(x1, y1), (x1, y2), (x2, y2), (x2, y1)];
        c.fill_gradient(&rect, (from, colors.1), (to, colors.0));
    }

    /// A LINE as RRDtool draws it: steps from pixel to pixel (or slopes
    /// with `--slope-mode`), broken where the value is unknown.
    fn paint_line(&self, c: &mut dyn Canvas, data: &[f64], width: f64, color: Color, dashes: Option<&[f64]>) {
        let xo = self.xorigin as f64;
        let xsize = self.xsize.max(0) as usize;
        // Every stretch of known values is a subpath of one stroke.
        let mut lines: Vec<Vec<(f64, f64)>> = Vec::new();
        let mut path: Vec<(f64, f64)> = Vec::new();
        let mut last_y = 0.0;
        let fit = |x: f64, y: f64| self.line_fit(x, y, width);
        for ii in 1..xsize {
            if data[ii].is_nan() || (self.o.slope_mode && data[ii - 1].is_nan()) {
                if !path.is_empty() {
                    lines.push(std::mem::take(&mut path));
                }
                continue;
            }
            let x = ii as f64 + xo;
            if path.is_empty() {
                last_y = self.ytr(data[ii]);
                if !self.o.slope_mode {
                    path.push(fit(x - 1.0, last_y));
                } else {
                    path.push(fit(x - 1.0, self.ytr(data[ii - 1])));
                }
                path.push(fit(x, last_y));
            } else {
                let y1 = self.ytr(data[ii]);
                if !self.o.slope_mode && !almost_equal(y1, last_y, 4) {
                    path.push(fit(x - 1.0, y1));
                }
                last_y = y1;
                path.push(fit(x, y1));
            }
        }
        if !path.is_empty() {
            lines.push(path);
        }
        c.stroke(&lines, width, color, dashes.map(|d| (d, 0.0)), true);
    }

    fn grid_paint(&mut self, c: &mut dyn Canvas, has_grid: bool, info: &mut Vec<(String, InfoValue)>) {
        let o = self.o;
        let (ximg, yimg) = (self.ximg as f64, self.yimg as f64);
        if o.border > 0 {
            let b = o.border as f64;
            self.area(
                c,
                &[(0.0, yimg), (b, yimg - b), (b, b), (ximg - b, b), (ximg, 0.0), (0.0, 0.0)],
                self.color(ColorTag::ShadeA),
            );
            self.area(
                c,
                &[(b, yimg - b), (ximg - b, yimg - b), (ximg - b, b), (ximg, 0.0), (ximg, yimg), (0.0, yimg)],
                self.color(ColorTag::ShadeB),
            );
        }
        if o.draw_x_grid {
            self.vertical_grid(c);
        }
        if o.draw_y_grid {
            let drew = if o.logarithmic {
                self.log_grid(c);
                true
            } else {
                has_grid && self.horizontal_grid(c)
            };
            if !drew {
                self.text(
                    c,
                    (self.ximg / 2) as f64,
                    ((2 * self.yorigin - self.ysize) / 2) as f64,
                    self.color(ColorTag::Font),
                    TextProp::Axis,
                    0.0,
                    HAlign::Center,
                    VAlign::Center,
                    "No Data found",
                );
            }
        }
        let font_color = self.color(ColorTag::Font);
        if !o.vertical_label.is_empty() {
            self.text(
                c,
                (self.x_origin_legend_y + 10) as f64,
                self.y_origin_legend_y as f64,
                font_color,
                TextProp::Unit,
                90.0,
                HAlign::Center,
                VAlign::Center,
                &o.vertical_label,
            );
        }
        if !o.right_axis_label.is_empty() {
            self.text(
                c,
                (self.x_origin_legend_y2 + 10) as f64,
                self.y_origin_legend_y2 as f64,
                font_color,
                TextProp::Unit,
                90.0,
                HAlign::Center,
                VAlign::Center,
                &o.right_axis_label,
            );
        }
        let title_pt = self.pt(TextProp::Title);
        for (j, line) in title_lines(&o.title).iter().enumerate() {
            self.text(
                c,
                (self.ximg / 2) as f64,
                title_pt * 1.3 + title_pt * 1.6 * j as f64,
                font_color,
                TextProp::Title,
                0.0,
                HAlign::Center,
                VAlign::Top,
                line,
            );
        }
        let faint = font_color.with_alpha(0.3);
        if !o.no_rrdtool_tag {
            // Where RRDtool puts its own name, ours.
            let x = if o.legend_position == LegendPosition::East {
                self.x_origin_legend_y as f64
            } else {
                ximg - 4.0
            };
            self.text(c, x, 5.0, faint, TextProp::Watermark, -90.0, HAlign::Left, VAlign::Top, "RRDSCALE");
        }
        if !o.watermark.is_empty() {
            // Integer halving, as RRDtool's C does with its `long` width.
            self.text(
                c,
                (self.ximg / 2) as f64,
                yimg - 6.0,
                faint,
                TextProp::Watermark,
                0.0,
                HAlign::Center,
                VAlign::Bottom,
                &o.watermark,
            );
        }
        if o.no_legend || o.only_graph {
            return;
        }
        // --legend-direction: the first and last legend lines (of
        // graph elements only, for bottomup2).
        let shown = || self.items.iter().enumerate().filter(|(_, it)| !it.legend.is_empty());
        let bottomup2 = o.legend_direction == LegendDirection::BottomUp2;
        let (min, first_nc) = legend_end(shown(), bottomup2);
        let (max, last_nc) = legend_end(shown().rev(), bottomup2);
        let (min, max) = (min.unwrap_or(0.0), max.unwrap_or(0.0));
        let (first_nc, last_nc) = (first_nc.unwrap_or(self.items.len()), last_nc.unwrap_or(0));
        let mut count = 0;
        for (i, item) in self.items.iter().enumerate() {
            if item.legend.is_empty() {
                continue;
            }
            let reverse = match o.legend_direction {
                LegendDirection::TopDown => false,
                LegendDirection::BottomUp => true,
                LegendDirection::BottomUp2 => i >= first_nc && i <= last_nc,
            };
            let x0 = self.x_origin_legend as f64 + item.leg_x;
            let y0 = if reverse {
                self.y_origin_legend as f64 + max + min - item.leg_y
            } else {
                self.y_origin_legend as f64 + item.leg_y
            };
            self.text(
                c,
                x0,
                y0,
                font_color,
                TextProp::Legend,
                0.0,
                HAlign::Left,
                VAlign::Bottom,
                &item.legend,
            );
            // Measured after drawing: on the zoomed surface, as rrdtool does.
            let w = self.measure(TextProp::Legend, &item.legend);
            let h = self.measure_size(TextProp::Legend, &item.legend).height as f64;
            info.push((format!("legend[{count}]"), InfoValue::Text(item.legend.clone())));
            info.push((
                format!("coords[{count}]"),
                InfoValue::Text(format!("{:.0},{:.0},{:.0},{:.0}", x0, y0 - h, x0 + w, y0)),
            ));
            count += 1;
            let color = match &item.el.kind {
                Kind::Plot(p) => p.color,
                Kind::HRule { color, .. } | Kind::VRule { color, .. } => *color,
                _ => continue,
            };
            let box_h = self.measure(TextProp::Legend, "o") * 1.2;
            let box_v = box_h;
            let y0 = y0 - box_v * 0.4;
            let dashed = match &item.el.kind {
                Kind::Plot(p) => p.dashes.is_some(),
                Kind::HRule { dashes, .. } | Kind::VRule { dashes, .. } => dashes.is_some(),
                _ => false,
            };
            let dash = dashed.then_some(Dash::Element(&[3.0, 3.0]));
            if o.dynamic_labels {
                let col = color.unwrap_or(Rgba::new(0, 0, 0, 0));
                match &item.el.kind {
                    Kind::HRule { .. } => {
                        self.line(c, (x0, y0 - box_v / 2.0), (x0 + box_h, y0 - box_v / 2.0), 1.0, col, dash);
                        continue;
                    }
                    Kind::VRule { .. } => {
                        self.line(c, (x0 + box_h / 2.0, y0), (x0 + box_h / 2.0, y0 - box_v), 1.0, col, dash);
                        continue;
                    }
                    Kind::Plot(p) if !p.is_area => {
                        self.line(c, (x0, y0), (x0 + box_h, y0 - box_v), p.width, col, dash);
                        continue;
                    }
                    _ => {}
                }
            }
            let square = [(x0, y0 - box_v), (x0, y0), (x0 + box_h, y0), (x0 + box_h, y0 - box_v)];
            self.area(c, &square, self.color(ColorTag::Back));
            if let Some(col) = color {
                self.area(c, &square, col);
            }
            let (a, b) = (self.line_fit(x0, y0, 1.0), self.line_fit(x0 + box_h, y0 - box_v, 1.0));
            c.stroke(
                &[vec![(a.0, a.1), (b.0, a.1), (b.0, b.1), (a.0, b.1), (a.0, a.1)]],
                1.0,
                self.color(ColorTag::Frame),
                self.dash_pattern(dash, 1.0),
                false,
            );
        }
    }

    /// Horizontal grid lines and their labels (RRDtool's classic grid).
    fn horizontal_grid(&self, c: &mut dyn Canvas) -> bool {
        let (x0, x1) = (self.xorigin as f64, (self.xorigin + self.xsize) as f64);
        let sgrid = c_int(self.minval / self.gridstep - 1.0) as i64;
        let egrid = c_int(self.maxval / self.gridstep + 1.0) as i64;
        // A degenerate range (infinite limits) must not become a long loop.
        if egrid - sgrid > 100_000 {
            return false;
        }
        let scaledstep = self.gridstep / self.magfact * self.viewfactor;
        let max_y = scaledstep * egrid as f64;
        let top = (self.yorigin - self.ysize) as f64;
        let bottom = self.yorigin as f64;
        let mut nlabels = 0;
        let mut right_mag = None;
        for i in sgrid..=egrid {
            let y0 = self.ytr(self.gridstep * i as f64);
            let yn = self.ytr(self.gridstep * (i + 1) as f64);
            if (y0 + 0.5).floor() < top || (y0 + 0.5).floor() > bottom {
                continue;
            }
            if i % self.labfact == 0 || (nlabels == 1 && (yn < top || yn > bottom)) {
                let label = self.y_label(i, scaledstep * i as f64, max_y);
                nlabels += 1;
                let axis_pt = self.pt(TextProp::Axis);
                if self.o.right_axis.is_some() {
                    let right = self.y_label_right(i, sgrid, egrid, max_y, &mut right_mag);
                    self.text(
                        c,
                        x1 + 7.0,
                        y0,
                        self.color(ColorTag::Font),
                        TextProp::Axis,
                        0.0,
                        HAlign::Left,
                        VAlign::Center,
                        &right,
                    );
                }
                self.text(
                    c,
                    x0 - axis_pt,
                    y0,
                    self.color(ColorTag::Font),
                    TextProp::Axis,
                    0.0,
                    HAlign::Right,
                    VAlign::Center,
                    &label,
                );
                let mg = self.color(ColorTag::MGrid);
                self.line(c, (x0 - 2.0, y0), (x0, y0), MGRID_WIDTH, mg, None);
                self.line(c, (x1, y0), (x1 + 2.0, y0), MGRID_WIDTH, mg, None);
                self.line(c, (x0 - 2.0, y0), (x1 + 2.0, y0), MGRID_WIDTH, mg, Some(Dash::Grid));
            } else if !self.o.no_minor {
                let g = self.color(ColorTag::Grid);
                self.line(c, (x0 - 2.0, y0), (x0, y0), GRID_WIDTH, g, None);
                self.line(c, (x1, y0), (x1 + 2.0, y0), GRID_WIDTH, g, None);
                self.line(c, (x0 - 1.0, y0), (x1 + 1.0, y0), GRID_WIDTH, g, Some(Dash::Grid));
            }
        }
        true
    }

    /// RRDtool's `horizontal_log_grid`: decades, with minor lines between.
    fn log_grid(&self, c: &mut dyn Canvas) {
        const YLOGLAB: [[f64; 10]; 5] = [
            [1.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 5.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 2.0, 5.0, 7.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
        ];
        let nex = (self.maxval / self.minval).log10();
        if nex.is_nan() || nex <= 0.0 || !nex.is_finite() {
            return;
        }
        let logscale = self.ysize as f64 / nex;
        let mut exfrac = 1_i64;
        let legend_pt = self.pt(TextProp::Legend);
        let axis_pt = self.pt(TextProp::Axis);
        while logscale * (exfrac as f64) < 3.0 * legend_pt && exfrac < 1000 {
            exfrac = if exfrac == 1 { 3 } else { exfrac + 3 };
        }
        let mut mid: usize = 0;
        loop {
            let last = YLOGLAB[mid].iter().position(|v| *v >= 10.0).unwrap_or(1) - 1;
            let mspac = logscale * (10.0 / YLOGLAB[mid][last]).log10();
            if mspac <= 2.0 * legend_pt || mid + 1 >= YLOGLAB.len() {
                break;
            }
            mid += 1;
        }
        mid = mid.saturating_sub(1);
        let (mnt, exp) = frexp10(self.minval);
        let mut flab = 0;
        while YLOGLAB[mid][flab] < 10.0 && mnt > YLOGLAB[mid][flab] {
            flab += 1;
        }
        let mut val_exp = exp as i64;
        if YLOGLAB[mid][flab] == 10.0 {
            val_exp += 1;
            flab = 0;
        }
        if val_exp % exfrac != 0 {
            val_exp += (-val_exp % exfrac).abs();
        }
        let (x0, x1) = (self.xorigin as f64, (self.xorigin + self.xsize) as f64);
        let top = (self.yorigin - self.ysize) as f64;
        let minor = |c: &mut dyn Canvas, value: f64| -> bool {
            if value < self.minval {
                return true;
            }
            let y0 = self.ytr(value);
            if (y0 + 0.5).floor() <= top {
                return false;
            }
            let g = self.color(ColorTag::Grid);
            self.line(c, (x0 - 2.0, y0), (x0, y0), GRID_WIDTH, g, None);
            self.line(c, (x1, y0), (x1 + 2.0, y0), GRID_WIDTH, g, None);
            self.line(c, (x0 - 1.0, y0), (x1 + 1.0, y0), GRID_WIDTH, g, Some(Dash::Grid));
            true
        };
        let minors_below = |c: &mut dyn Canvas, flab: usize, val_exp: i64| {
            if mid < 4 && exfrac == 1 {
                let (min_exp, from, to) = if flab == 0 {
                    let last = YLOGLAB[mid].iter().position(|v| *v >= 10.0).unwrap_or(1);
                    (val_exp - 1, YLOGLAB[mid][last - 1] as i64 + 1, 10)
                } else {
                    (val_exp, YLOGLAB[mid][flab - 1] as i64 + 1, YLOGLAB[mid][flab] as i64)
                };
                for k in from..to {
                    if !minor(c, k as f64 * 10f64.powi(min_exp as i32)) {
                        break;
                    }
                }
            } else if exfrac > 1 {
                let mut k = val_exp - exfrac / 3 * 2;
                while k < val_exp {
                    if !minor(c, 10f64.powi(k as i32)) {
                        break;
                    }
                    k += exfrac / 3;
                }
            }
        };
        let mut pre_value = f64::NAN;
        for _ in 0..1000 {
            let value = YLOGLAB[mid][flab] * 10f64.powi(val_exp as i32);
            if almost_equal(value, pre_value, 4) {
                break;
            }
            pre_value = value;
            let y0 = self.ytr(value);
            if (y0 + 0.5).floor() <= top {
                break;
            }
            let mg = self.color(ColorTag::MGrid);
            self.line(c, (x0 - 2.0, y0), (x0, y0), MGRID_WIDTH, mg, None);
            self.line(c, (x1, y0), (x1 + 2.0, y0), MGRID_WIDTH, mg, None);
            self.line(c, (x0 - 2.0, y0), (x1 + 2.0, y0), MGRID_WIDTH, mg, Some(Dash::Grid));
            let label = if self.o.units_si {
                const SI: [char; 17] =
                    ['y', 'z', 'a', 'f', 'p', 'n', 'u', 'm', ' ', 'k', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y'];
                let scale = (val_exp as f64 / 3.0).floor() as i64;
                let pvalue = if value >= 1.0 {
                    10f64.powi((val_exp % 3) as i32)
                } else {
                    10f64.powi(((val_exp + 1) % 3 + 2) as i32)
                } * YLOGLAB[mid][flab];
                let sym = usize::try_from(scale + 8).ok().and_then(|i| SI.get(i)).copied().unwrap_or('?');
                format!("{pvalue:3.0} {sym}")
            } else {
                rrd_lang::cformat::printf(
                    value,
                    rrd_lang::cformat::Conversion { flag: None, width: 3, precision: Some(0), conv: 'e' },
                )
            };
            if let Some((scale, shift)) = self.o.right_axis {
                let sval = value * scale + shift;
                let right = if !self.o.right_axis_format.is_empty() {
                    crate::labels::axis_format(&self.o.right_axis_format)
                        .map(|f| f.format(sval, ""))
                        .unwrap_or_default()
                } else if self.o.units_si {
                    let (v, symb, _) = auto_scale(sval, self.o.base as f64);
                    format!("{v:4.0} {symb}")
                } else {
                    rrd_lang::cformat::printf(
                        sval,
                        rrd_lang::cformat::Conversion { flag: None, width: 3, precision: Some(0), conv: 'e' },
                    )
                };
                let font = self.color(ColorTag::Font);
                self.text(c, x1 + 7.0, y0, font, TextProp::Axis, 0.0, HAlign::Left, VAlign::Center, &right);
            }
            self.text(
                c,
                x0 - axis_pt,
                y0,
                self.color(ColorTag::Font),
                TextProp::Axis,
                0.0,
                HAlign::Right,
                VAlign::Center,
                &label,
            );
            minors_below(c, flab, val_exp);
            flab += 1;
            if YLOGLAB[mid][flab] == 10.0 {
                flab = 0;
                val_exp += exfrac;
            }
        }
        minors_below(c, flab, val_exp);
    }

    /// RRDtool's `vertical_grid`: minor and major time lines and labels.
    fn vertical_grid(&self, c: &mut dyn Canvas) {
        let (xl, format) = match &self.o.x_grid {
            Some(g) => (timeaxis::XLabel::user(g.grid, g.major, g.label, g.precision), g.format.as_str()),
            None => {
                let xl = timeaxis::choose(self.end - self.start, self.xsize);
                (xl, if xl.is_weekly() { self.o.week_fmt.as_str() } else { xl.format })
            }
        };
        let (y0, y1) = (self.yorigin as f64, (self.yorigin - self.ysize) as f64);
        // Bounded loops: a pathological clock must not hang the graph.
        const MAX_LINES: usize = 10_000;
        if !self.o.no_minor {
            let mut ti = timeaxis::first_time(self.start, xl.grid);
            let mut timajor = timeaxis::first_time(self.start, xl.major);
            let mut n = 0;
            while ti < self.end && ti != -1 && n < MAX_LINES {
                n += 1;
                if ti >= self.start && ti <= self.end {
                    let mut m = 0;
                    while timajor < ti && timajor != -1 && m < MAX_LINES {
                        timajor = timeaxis::next_time(timajor, xl.major);
                        m += 1;
                    }
                    if timajor == -1 {
                        break;
                    }
                    if ti != timajor {
                        let x0 = self.xtr(ti);
                        let g = self.color(ColorTag::Grid);
                        self.line(c, (x0, y1 - 2.0), (x0, y1), GRID_WIDTH, g, None);
                        self.line(c, (x0, y0), (x0, y0 + 2.0), GRID_WIDTH, g, None);
                        self.line(c, (x0, y0 + 1.0), (x0, y1 - 1.0), GRID_WIDTH, g, Some(Dash::Grid));
                    }
                }
                ti = timeaxis::next_time(ti, xl.grid);
            }
        }
        let mut ti = timeaxis::first_time(self.start, xl.major);
        let mut n = 0;
        while ti < self.end && ti != -1 && n < MAX_LINES {
            n += 1;
            if ti >= self.start && ti <= self.end {
                let x0 = self.xtr(ti);
                let mg = self.color(ColorTag::MGrid);
                self.line(c, (x0, y1 - 2.0), (x0, y1), MGRID_WIDTH, mg, None);
                self.line(c, (x0, y0), (x0, y0 + 3.0), MGRID_WIDTH, mg, None);
                self.line(c, (x0, y0 + 3.0), (x0, y1 - 2.0), MGRID_WIDTH, mg, Some(Dash::Grid));
            }
            ti = timeaxis::next_time(ti, xl.major);
        }
        let mut ti = timeaxis::first_time(self.start - xl.precision / 2, xl.label);
        let mut n = 0;
        while ti <= self.end - xl.precision / 2 && ti != -1 && n < MAX_LINES {
            n += 1;
            let tilab = ti + xl.precision / 2;
            if tilab >= self.start && tilab <= self.end {
                let label = timeaxis::format_time(tilab, format);
                self.text(
                    c,
                    self.xtr(tilab),
                    y0 + 3.0,
                    self.color(ColorTag::Font),
                    TextProp::Axis,
                    0.0,
                    HAlign::Center,
                    VAlign::Top,
                    &label,
                );
            }
            ti = timeaxis::next_time(ti, xl.label);
        }
    }

    /// The x and y axis with their arrows.
    fn axis_paint(&self, c: &mut dyn Canvas) {
        let (xo, yo, xs, ys) =
            (self.xorigin as f64, self.yorigin as f64, self.xsize as f64, self.ysize as f64);
        let axis = self.color(ColorTag::Axis);
        self.line(c, (xo - 4.0, yo), (xo + xs + 4.0, yo), MGRID_WIDTH, axis, None);
        self.line(c, (xo, yo + 4.0), (xo, yo - ys - 4.0), MGRID_WIDTH, axis, None);
        let arrow = self.color(ColorTag::Arrow);
        self.area(c, &[(xo + xs + 2.0, yo - 3.0), (xo + xs + 2.0, yo + 3.0), (xo + xs + 7.0, yo)], arrow);
        self.area(c, &[(xo - 3.0, yo - ys - 2.0), (xo + 3.0, yo - ys - 2.0), (xo, yo - ys - 7.0)], arrow);
        if self.o.right_axis.is_some() {
            let xr = xo + xs;
            self.line(c, (xr, yo + 4.0), (xr, yo - ys - 4.0), MGRID_WIDTH, axis, None);
            self.area(c, &[(xr - 2.0, yo - ys - 2.0), (xr + 3.0, yo - ys - 2.0), (xr, yo - ys - 7.0)], arrow);
        }
    }
}

/// Drops repeated points and the middle of straight horizontal or
/// vertical runs (RRDtool's step paths repeat both a lot); the shape is
/// unchanged, the SVG much smaller.
/// One end of the legend for --legend-direction, scanning the items that
/// have a legend from that end: the legend line there (with bottomup2, the
/// line of the first graph element, not comment, met) and the index of the
/// first graph element met. `None` where the scan met no such item.
fn legend_end<'a>(
    shown: impl Iterator<Item = (usize, &'a Item)>,
    bottomup2: bool,
) -> (Option<f64>, Option<usize>) {
    let mut end = None;
    for (i, it) in shown {
        let first = *end.get_or_insert(it.leg_y);
        if !matches!(it.el.kind, Kind::Comment) {
            return (Some(if bottomup2 { it.leg_y } else { first }), Some(i));
        }
    }
    (end, None)
}

fn simplify(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for &p in points {
        if out.last() == Some(&p) {
            continue;
        }
        if out.len() >= 2 {
            let (a, b) = (out[out.len() - 2], out[out.len() - 1]);
            let same_row = a.1 == b.1 && b.1 == p.1 && (a.0 - b.0) * (b.0 - p.0) > 0.0;
            let same_col = a.0 == b.0 && b.0 == p.0 && (a.1 - b.1) * (b.1 - p.1) > 0.0;
            if same_row || same_col {
                out.pop();
            }
        }
        out.push(p);
    }
    out
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

/// The distance between tab stops. rrdtool sets Pango's tab stops once,
/// from the first text it measures, at `tabwidth × i − shift + border`
/// (border: twice the legend size, shift: that text's x modulo the tab
/// width) for as many stops as that text has bytes, and Pango repeats the
/// last distance. The first text is the y axis label "0" at x 0 (stops
/// every tabwidth + border), or, without y labels, the first legend at x
/// = border (stops every tabwidth).
fn tab_period(o: &Options) -> f64 {
    let tw = if o.tab_width > 0.0 { o.tab_width } else { 40.0 };
    let border = f64::from((o.font_sizes[TextProp::Legend as usize] * 2.0) as i32);
    if (o.draw_y_grid || o.force_left_space) && !o.only_graph {
        tw + border
    } else if border < tw {
        tw
    } else {
        tw + border - border % tw
    }
}

/// [`Image::measure_size`] from the parts of an image, for code that
/// holds its items mutably.
fn measure_text(text: &SharedLayout, o: &Options, default_font: &str, prop: TextProp, s: &str) -> TextSize {
    text.borrow_mut().measure(&TextSpec {
        x: 0.0,
        y: 0.0,
        color: Color::new(0.0, 0.0, 0.0, 0.0),
        size_pt: o.font_sizes[prop as usize],
        font: o.font_names[prop as usize].as_deref().unwrap_or(default_font),
        tab_width: tab_period(o),
        angle: 0.0,
        h: HAlign::Left,
        v: VAlign::Top,
        text: s,
        markup: o.pango_markup,
    })
}

/// The lines of a title, split as rrdtool's `graph_title_split` splits
/// it: at a newline, a literal `\\n`, `<br>` or `<br/>`; empty lines from
/// a leading or doubled delimiter dropped, at most three lines (the rest
/// of the text after the third is dropped).
fn title_lines(title: &str) -> Vec<&str> {
    const DELIMS: [&str; 4] = ["\n", "\\n", "<br>", "<br/>"];
    const MAX_LINES: usize = 3;
    if title.is_empty() {
        return Vec::new();
    }
    let mut lines = Vec::new();
    let mut rest = title;
    loop {
        let found = DELIMS.iter().filter_map(|d| rest.find(d).map(|at| (at, d.len()))).fold(
            None,
            |best: Option<(usize, usize)>, (at, len)| match best {
                Some((b, _)) if b <= at => best,
                _ => Some((at, len)),
            },
        );
        match found {
            Some((at, len)) => {
                if at != 0 {
                    lines.push(&rest[..at]);
                }
                rest = &rest[at + len..];
                if lines.len() >= MAX_LINES {
                    break;
                }
            }
            None => {
                lines.push(rest);
                break;
            }
        }
    }
    lines
}

/// RRDtool's `frexp10`: mantissa in [1, 10) and decimal exponent.
fn frexp10(x: f64) -> (f64, f64) {
    let mut iexp = (x.abs().ln() / 10f64.ln()).floor();
    let mut mnt = x / 10f64.powf(iexp);
    if mnt >= 10.0 {
        iexp += 1.0;
        mnt = x / 10f64.powf(iexp);
    }
    (mnt, iexp)
}

/// The deprecated `PRINT:vname:CF:format`: the CF over every known row.
fn legacy_print_value(s: &SeriesData, cf: Cf) -> f64 {
    let mut value = f64::NAN;
    let mut valid = 0u64;
    for &v in &s.values {
        if !v.is_finite() {
            continue;
        }
        if value.is_nan() {
            value = v;
            valid += 1;
            continue;
        }
        match cf {
            Cf::Minimum => value = value.min(v),
            Cf::Maximum | Cf::Failures => value = value.max(v),
            Cf::Last => value = v,
            _ => {
                valid += 1;
                value += v;
            }
        }
    }
    if !matches!(cf, Cf::Minimum | Cf::Maximum | Cf::Last | Cf::Failures) && valid > 1 {
        value /= valid as f64;
    }
    if value.is_nan() {
        // RRDtool's unknown (printed as "-nan").
        -f64::NAN
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn almost_equal_is_rrdtools_float_ulps() {
        assert!(almost_equal(50.0, 50.0, 4));
        assert!(almost_equal(1.0, 1.0 + 1e-9, 4));
        assert!(!almost_equal(1.0, 1.001, 4));
        assert!(!almost_equal(f64::NAN, 1.0, 4));
    }

    #[test]
    fn legacy_print_averages_known_rows() {
        let s =
            SeriesData { start: 0, end: 40, step_secs: 10, values: vec![1.0, f64::NAN, 3.0, f64::INFINITY] };
        assert_eq!(legacy_print_value(&s, Cf::Average), 2.0);
        assert_eq!(legacy_print_value(&s, Cf::Maximum), 3.0);
        assert_eq!(legacy_print_value(&s, Cf::Last), 3.0);
        let none = SeriesData { start: 0, end: 10, step_secs: 10, values: vec![f64::NAN] };
        assert!(legacy_print_value(&none, Cf::Average).is_sign_negative());
    }

    #[test]
    fn simplify_keeps_the_shape() {
        let steps = [(0.0, 1.0), (1.0, 1.0), (1.0, 1.0), (2.0, 1.0), (2.0, 3.0), (2.0, 5.0), (3.0, 5.0)];
        assert_eq!(simplify(&steps), vec![(0.0, 1.0), (2.0, 1.0), (2.0, 5.0), (3.0, 5.0)]);
        // A run that turns back is kept (it is not a straight line).
        let back = [(0.0, 0.0), (2.0, 0.0), (1.0, 0.0)];
        assert_eq!(simplify(&back), back.to_vec());
    }

    #[test]
    fn titles_split_like_rrdtool() {
        assert_eq!(title_lines("a\\nb<br>c"), ["a", "b", "c"]);
        assert_eq!(title_lines("\\nx"), ["x"]);
        assert_eq!(title_lines("a\n\nb"), ["a", "b"]);
        assert_eq!(title_lines("a\n"), ["a", ""]);
        assert_eq!(title_lines("a<br/>b\nc\nd\ne"), ["a", "b", "c"]);
        assert_eq!(title_lines("plain"), ["plain"]);
        assert!(title_lines("").is_empty());
    }

    #[test]
    fn frexp10_splits_decimal_exponents() {
        assert_eq!(frexp10(2500.0), (2.5, 3.0));
        let (m, e) = frexp10(0.05);
        assert!((m - 5.0).abs() < 1e-12 && e == -2.0);
    }
}
