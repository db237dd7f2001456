//! The options of `rrdtool graph` that rrd-graph understands, set one at a
//! time by their long name (the command line parses getopt-style and calls
//! [`Options::apply`]; a web handler can call it directly).
//!
//! Invariants: `width`/`height` are at least 10 (RRDtool refuses less),
//! `base` is 1000 or 1024. Time specifications stay text until the graph
//! is drawn, so `now` is read once per graph.
//!
//! Every option of `rrdtool graph` 1.7.2 is accepted with rrdtool's
//! checks and error messages. Layout options (`--font` sizes, `--zoom`,
//! `--x-grid`, `--y-grid`, `--alt-y-grid`, `--right-axis*`,
//! `--left-axis-format*`, `--legend-position`, `--legend-direction`,
//! `--pango-markup`) change the graph as they do in rrdtool. Options that
//! only tune RRDtool's Cairo backend change the drawing alone:
//! `--graph-render-mode mono` and `--font-render-mode mono` turn
//! antialiasing off (`light` hinting is not ours to give), `--no-gridfit`
//! turns off pixel snapping; `--interlaced` and
//! `--font-smoothing-threshold` are ignored, as rrdtool ignores them, and
//! `--alt-y-mrtg` is a no-op as in rrdtool. `--font`'s font name picks a
//! font of the machine (see `text`).

use rrd_lang::cscan::Scan;

pub use crate::dataformat::DataFormat;
use rrd_lang::numparse;

use crate::error::{GraphError, Result};

/// A colour with straight (not premultiplied) alpha, components 0..=255.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgba {
    pub r: u8,
    pub g: u8,
    pub b: u8,
    pub a: u8,
}

impl Rgba {
    pub const fn new(r: u8, g: u8, b: u8, a: u8) -> Rgba {
        Rgba { r, g, b, a }
    }

    /// From RRDtool's 0xRRGGBBAA.
    pub const fn from_u32(v: u32) -> Rgba {
        Rgba::new((v >> 24) as u8, (v >> 16) as u8, (v >> 8) as u8, v as u8)
    }

    /// From RRDtool's default colour table (components 0.0..=1.0).
    const fn from_unit(r: f64, g: f64, b: f64, a: f64) -> Rgba {
        Rgba::new(
            (r * 255.0 + 0.5) as u8,
            (g * 255.0 + 0.5) as u8,
            (b * 255.0 + 0.5) as u8,
            (a * 255.0 + 0.5) as u8,
        )
    }

    pub fn with_alpha(self, a: u8) -> Rgba {
        Rgba { a, ..self }
    }
}

/// The colour slots of `--color NAME#RRGGBB[AA]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorTag {
    Canvas = 0,
    Back = 1,
    ShadeA = 2,
    ShadeB = 3,
    Grid = 4,
    MGrid = 5,
    Font = 6,
    Arrow = 7,
    Axis = 8,
    Frame = 9,
}

impl ColorTag {
    fn from_name(name: &str) -> Option<ColorTag> {
        Some(match name {
            "BACK" => ColorTag::Back,
            "CANVAS" => ColorTag::Canvas,
            "SHADEA" => ColorTag::ShadeA,
            "SHADEB" => ColorTag::ShadeB,
            "GRID" => ColorTag::Grid,
            "MGRID" => ColorTag::MGrid,
            "FONT" => ColorTag::Font,
            "ARROW" => ColorTag::Arrow,
            "AXIS" => ColorTag::Axis,
            "FRAME" => ColorTag::Frame,
            _ => return None,
        })
    }
}

/// RRDtool's default colours, indexed by [`ColorTag`].
pub const DEFAULT_COLORS: [Rgba; 10] = [
    Rgba::from_unit(1.00, 1.00, 1.00, 1.00),
    Rgba::from_unit(0.95, 0.95, 0.95, 1.00),
    Rgba::from_unit(0.81, 0.81, 0.81, 1.00),
    Rgba::from_unit(0.62, 0.62, 0.62, 1.00),
    Rgba::from_unit(0.56, 0.56, 0.56, 0.75),
    Rgba::from_unit(0.87, 0.31, 0.31, 0.60),
    Rgba::from_unit(0.00, 0.00, 0.00, 1.00),
    Rgba::from_unit(0.50, 0.12, 0.12, 1.00),
    Rgba::from_unit(0.12, 0.12, 0.12, 1.00),
    Rgba::from_unit(0.00, 0.00, 0.00, 1.00),
];

/// [`DEFAULT_COLORS`] as RRDtool 1.7.2 keeps them: channels from 0 to 1,
/// which is what its pictures are drawn with.
pub const DEFAULT_UNIT_COLORS: [[f64; 4]; 10] = [
    [1.00, 1.00, 1.00, 1.00],
    [0.95, 0.95, 0.95, 1.00],
    [0.81, 0.81, 0.81, 1.00],
    [0.62, 0.62, 0.62, 1.00],
    [0.56, 0.56, 0.56, 0.75],
    [0.87, 0.31, 0.31, 0.60],
    [0.00, 0.00, 0.00, 1.00],
    [0.50, 0.12, 0.12, 1.00],
    [0.12, 0.12, 0.12, 1.00],
    [0.00, 0.00, 0.00, 1.00],
];

/// Time units of `--x-grid` (RRDtool's `SECOND` .. `YEAR`), shortest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimeUnit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl TimeUnit {
    fn from_name(name: &str) -> Option<TimeUnit> {
        Some(match name {
            "SECOND" => TimeUnit::Second,
            "MINUTE" => TimeUnit::Minute,
            "HOUR" => TimeUnit::Hour,
            "DAY" => TimeUnit::Day,
            "WEEK" => TimeUnit::Week,
            "MONTH" => TimeUnit::Month,
            "YEAR" => TimeUnit::Year,
            _ => return None,
        })
    }
}

/// `--x-grid GTM:GST:MTM:MST:LTM:LST:LPR:LFM`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XGrid {
    pub grid: (TimeUnit, i64),
    pub major: (TimeUnit, i64),
    pub label: (TimeUnit, i64),
    /// Seconds the label is moved right of its grid line.
    pub precision: i64,
    /// strftime format of the labels.
    pub format: String,
}

/// How `--left-axis-formatter`/`--right-axis-formatter` print values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AxisFormatter {
    #[default]
    Numeric,
    Timestamp,
    Duration,
}

/// `--legend-position`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LegendPosition {
    North,
    #[default]
    South,
    West,
    East,
}

/// `--legend-direction`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LegendDirection {
    #[default]
    TopDown,
    BottomUp,
    BottomUp2,
}

/// RRDtool's text properties: `--font` tags, in RRDtool's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextProp {
    Default = 0,
    Title = 1,
    Axis = 2,
    Unit = 3,
    Legend = 4,
    Watermark = 5,
}

impl TextProp {
    fn from_name(name: &str) -> Option<TextProp> {
        Some(match name {
            "DEFAULT" => TextProp::Default,
            "TITLE" => TextProp::Title,
            "AXIS" => TextProp::Axis,
            "UNIT" => TextProp::Unit,
            "LEGEND" => TextProp::Legend,
            "WATERMARK" => TextProp::Watermark,
            _ => return None,
        })
    }
}

/// RRDtool's default font sizes (points), indexed by [`TextProp`].
pub const DEFAULT_FONT_SIZES: [f64; 6] = [8.0, 9.0, 7.0, 8.0, 8.0, 5.5];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ImageFormat {
    #[default]
    Png,
    Svg,
    Pdf,
    Eps,
    /// A data format: the graph's series exported, no picture.
    Data(DataFormat),
}

impl ImageFormat {
    /// The lower-case name RRDtool's messages use.
    pub fn name(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Svg => "svg",
            ImageFormat::Pdf => "pdf",
            ImageFormat::Eps => "eps",
            ImageFormat::Data(d) => d.name(),
        }
    }
}

/// Every option that changes the graph.
#[derive(Clone, Debug)]
pub struct Options {
    /// AT-style `--start` (default `end-24h`).
    pub start: String,
    /// AT-style `--end` (default `now`).
    pub end: String,
    /// `--step`: the smallest consolidation step wished for (0: automatic).
    pub step_secs: i64,
    pub title: String,
    pub vertical_label: String,
    /// Graph area (or, with `full_size_mode`, whole image) width in pixels.
    pub width: i64,
    pub height: i64,
    /// `--upper-limit` / `--lower-limit` (NaN when not given).
    pub upper_limit: f64,
    pub lower_limit: f64,
    pub rigid: bool,
    pub logarithmic: bool,
    pub base: i64,
    /// `--units-exponent` (RRDtool's 9999 means "not given").
    pub units_exponent: Option<i32>,
    /// `--units-length` (default 6) and whether it was given.
    pub units_length: i64,
    pub force_left_space: bool,
    /// `--units=si` (SI labels on a logarithmic axis).
    pub units_si: bool,
    pub colors: [Rgba; 10],
    /// Which of `colors` `--color` set (the others are RRDtool's
    /// [`DEFAULT_UNIT_COLORS`]).
    pub colors_given: [bool; 10],
    pub image_format: ImageFormat,
    pub only_graph: bool,
    pub full_size_mode: bool,
    pub no_legend: bool,
    pub slope_mode: bool,
    pub no_minor: bool,
    pub alt_autoscale: bool,
    pub alt_autoscale_min: bool,
    pub alt_autoscale_max: bool,
    pub draw_x_grid: bool,
    pub draw_y_grid: bool,
    pub no_rrdtool_tag: bool,
    pub force_rules_legend: bool,
    pub watermark: String,
    /// Width of the 3D border (`--border`, default 2).
    pub border: i64,
    /// Tab stops in legends, in pixels (`--tabwidth`, default 40).
    pub tab_width: f64,
    /// `-Y`/`--alt-y-grid`.
    pub alt_y_grid: bool,
    /// `--y-grid STEP:LABELFACTOR`.
    pub y_grid: Option<(f64, i64)>,
    /// `--x-grid` with values.
    pub x_grid: Option<XGrid>,
    /// `--right-axis SCALE:SHIFT` (none: no right axis).
    pub right_axis: Option<(f64, f64)>,
    pub right_axis_label: String,
    pub right_axis_format: String,
    pub right_axis_formatter: AxisFormatter,
    pub left_axis_format: String,
    pub left_axis_formatter: AxisFormatter,
    pub legend_position: LegendPosition,
    pub legend_direction: LegendDirection,
    /// `--week-fmt` (the label format of weekly grids).
    pub week_fmt: String,
    /// `--allow-shrink`: with `--rigid`, limits may shrink to the data.
    pub allow_shrink: bool,
    /// `-Z`: a DEF whose file cannot be read plots unknown values.
    pub missing_data_as_nan: bool,
    /// `-f`/`--imginfo` (checked to be `...%s...%lu...%lu...`).
    pub imginfo: Option<String>,
    /// `--zoom`: the image is scaled by this factor.
    pub zoom: f64,
    /// Font sizes (points) by [`TextProp`] (`--font TAG:SIZE[:FONT]`).
    pub font_sizes: [f64; 6],
    /// Font descriptions by [`TextProp`] (none: the bundled DejaVu Sans Mono).
    pub font_names: [Option<String>; 6],
    /// `--pango-markup`: legends, title and labels are Pango markup.
    pub pango_markup: bool,
    /// `--lazy`: keep an existing image that is recent enough.
    pub lazy: bool,
    /// `--dynamic-labels`: legend marks shaped like the element.
    pub dynamic_labels: bool,
    /// `--no-gridfit` clears it: lines and areas snap to whole pixels.
    pub gridfit: bool,
    /// `--grid-dash ON:OFF` (default 1:1).
    pub grid_dash: (f64, f64),
    /// `-G mono`: lines and areas without antialiasing.
    pub graph_mono: bool,
    /// `-R mono`: text without antialiasing.
    pub font_mono: bool,
    /// `--font-render-mode light`: slight hinting.
    pub font_light: bool,
    /// `--graph-type XY` (rrdtool 1.7.2 refuses to draw it).
    pub graph_type_xy: bool,
    /// `--daemon` was given (rrdtool refuses a second one).
    pub daemon_given: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            start: "end-24h".into(),
            end: "now".into(),
            step_secs: 0,
            title: String::new(),
            vertical_label: String::new(),
            width: 400,
            height: 100,
            upper_limit: f64::NAN,
            lower_limit: f64::NAN,
            rigid: false,
            logarithmic: false,
            base: 1000,
            units_exponent: None,
            units_length: 6,
            force_left_space: false,
            units_si: false,
            colors: DEFAULT_COLORS,
            colors_given: [false; 10],
            image_format: ImageFormat::Png,
            only_graph: false,
            full_size_mode: false,
            no_legend: false,
            slope_mode: false,
            no_minor: false,
            alt_autoscale: false,
            alt_autoscale_min: false,
            alt_autoscale_max: false,
            draw_x_grid: true,
            draw_y_grid: true,
            no_rrdtool_tag: false,
            force_rules_legend: false,
            watermark: String::new(),
            border: 2,
            tab_width: 40.0,
            alt_y_grid: false,
            y_grid: None,
            x_grid: None,
            right_axis: None,
            right_axis_label: String::new(),
            right_axis_format: String::new(),
            right_axis_formatter: AxisFormatter::Numeric,
            left_axis_format: String::new(),
            left_axis_formatter: AxisFormatter::Numeric,
            legend_position: LegendPosition::South,
            legend_direction: LegendDirection::TopDown,
            week_fmt: "Week %V".into(),
            allow_shrink: false,
            missing_data_as_nan: false,
            imginfo: None,
            zoom: 1.0,
            font_sizes: DEFAULT_FONT_SIZES,
            font_names: Default::default(),
            pango_markup: false,
            lazy: false,
            dynamic_labels: false,
            gridfit: true,
            grid_dash: (1.0, 1.0),
            graph_mono: false,
            font_mono: false,
            font_light: false,
            graph_type_xy: false,
            daemon_given: false,
        }
    }
}

/// An option the command line may pass: its long name, short letter and
/// whether it takes a value (the getopt table of `rrdtool graph`).
pub struct OptionSpec {
    pub long: &'static str,
    pub short: Option<char>,
    pub takes_value: bool,
}

const fn spec(long: &'static str, short: Option<char>, takes_value: bool) -> OptionSpec {
    OptionSpec { long, short, takes_value }
}

/// Every option `rrdtool graph` 1.7.2 knows that rrd-graph accepts.
pub const OPTION_SPECS: &[OptionSpec] = &[
    spec("alt-autoscale", Some('A'), false),
    spec("imgformat", Some('a'), true),
    spec("font-smoothing-threshold", Some('B'), true),
    spec("imginfo", Some('f'), true),
    spec("base", Some('b'), true),
    spec("color", Some('c'), true),
    spec("full-size-mode", Some('D'), false),
    spec("daemon", Some('d'), true),
    spec("slope-mode", Some('E'), false),
    spec("end", Some('e'), true),
    spec("force-rules-legend", Some('F'), false),
    spec("graph-render-mode", Some('G'), true),
    spec("no-legend", Some('g'), false),
    spec("height", Some('h'), true),
    spec("no-minor", Some('I'), false),
    spec("interlaced", Some('i'), false),
    spec("alt-autoscale-min", Some('J'), false),
    spec("only-graph", Some('j'), false),
    spec("units-length", Some('L'), true),
    spec("lower-limit", Some('l'), true),
    spec("alt-autoscale-max", Some('M'), false),
    spec("zoom", Some('m'), true),
    spec("no-gridfit", Some('N'), false),
    spec("font", Some('n'), true),
    spec("logarithmic", Some('o'), false),
    spec("pango-markup", Some('P'), false),
    spec("font-render-mode", Some('R'), true),
    spec("rigid", Some('r'), false),
    spec("step", Some('S'), true),
    spec("start", Some('s'), true),
    spec("tabwidth", Some('T'), true),
    spec("title", Some('t'), true),
    spec("upper-limit", Some('u'), true),
    spec("vertical-label", Some('v'), true),
    spec("watermark", Some('W'), true),
    spec("width", Some('w'), true),
    spec("units-exponent", Some('X'), true),
    spec("x-grid", Some('x'), true),
    spec("alt-y-grid", Some('Y'), false),
    spec("y-grid", Some('y'), true),
    spec("lazy", Some('z'), false),
    spec("use-nan-for-all-missing-data", Some('Z'), false),
    spec("units", None, true),
    spec("disable-rrdtool-tag", None, false),
    spec("border", None, true),
    spec("grid-dash", None, true),
    spec("dynamic-labels", None, false),
    spec("alt-y-mrtg", None, false),
    spec("right-axis", None, true),
    spec("right-axis-label", None, true),
    spec("right-axis-format", None, true),
    spec("legend-position", None, true),
    spec("legend-direction", None, true),
    spec("week-fmt", None, true),
    spec("left-axis-format", None, true),
    spec("left-axis-formatter", None, true),
    spec("right-axis-formatter", None, true),
    spec("allow-shrink", None, false),
    spec("graph-type", None, true),
];

/// C's `strtod`: RRDtool's number syntax plus `nan`, `inf` and
/// `infinity` in any case, with an optional sign. Returns the value and
/// the bytes used (0: no number).
pub(crate) fn c_strtod(s: &str) -> (f64, usize) {
    let (v, used) = numparse::rrd_strtod(s);
    if used > 0 {
        return (v, used);
    }
    let t = numparse::trim_c_space(s);
    let lead = s.len() - t.len();
    let (sign, body) = match t.as_bytes().first() {
        Some(b'-') => (-1.0, &t[1..]),
        Some(b'+') => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let lower = body.to_ascii_lowercase();
    let sign_len = t.len() - body.len();
    if lower.starts_with("infinity") {
        (sign * f64::INFINITY, lead + sign_len + 8)
    } else if lower.starts_with("inf") {
        (sign * f64::INFINITY, lead + sign_len + 3)
    } else if lower.starts_with("nan") {
        (if sign < 0.0 { -f64::NAN } else { f64::NAN }, lead + sign_len + 3)
    } else {
        (0.0, 0)
    }
}

/// A number as RRDtool 1.7.2 reads `--upper-limit` and friends: all of the
/// text must be a number.
fn parse_double(value: &str, option: &str) -> Result<f64> {
    let (v, used) = c_strtod(value);
    if used == 0 {
        return Err(GraphError::invalid(format!("option {option} - Cannot convert '{value}' to float")));
    }
    if used != value.len() {
        return Err(GraphError::invalid(format!(
            "option {option} - Converted '{value}' to {v:.6}, but cannot convert '{}'",
            &value[used..]
        )));
    }
    Ok(v)
}

/// The characters of `%40[0-9.e+-]`.
fn is_float_char(c: u8) -> bool {
    c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-')
}

/// `rrd_strtodbl(...) == 2`: all of the text is a number.
fn full_double(s: &str) -> Option<f64> {
    let (v, used) = c_strtod(s);
    (used > 0 && used == s.len()).then_some(v)
}

/// `%40[0-9.e+-]:%40[0-9.e+-]`, both numbers in full.
fn two_floats(v: &str) -> Option<(f64, f64)> {
    let mut sc = Scan::new(v);
    let a = sc.set(40, is_float_char)?;
    if !sc.lit(':') {
        return None;
    }
    let b = sc.set(40, is_float_char)?;
    Some((full_double(a)?, full_double(b)?))
}

fn formatter(v: &str) -> Option<AxisFormatter> {
    Some(match v {
        "numeric" => AxisFormatter::Numeric,
        "timestamp" => AxisFormatter::Timestamp,
        "duration" => AxisFormatter::Duration,
        _ => return None,
    })
}

/// `--x-grid GTM:GST:MTM:MST:LTM:LST:LPR:LFM`, as rrdtool's `sscanf`
/// reads it (the label format is the rest of the text).
fn parse_x_grid(v: &str) -> Result<XGrid> {
    let bad = || GraphError::invalid("invalid x-grid format");
    let mut sc = Scan::new(v);
    let mut units = Vec::new();
    let mut steps = Vec::new();
    for _ in 0..3 {
        units.push(sc.set(10, |c| c.is_ascii_uppercase()).ok_or_else(bad)?);
        if !sc.lit(':') {
            return Err(bad());
        }
        steps.push(sc.long().ok_or_else(bad)?);
        if !sc.lit(':') {
            return Err(bad());
        }
    }
    let precision = sc.long().ok_or_else(bad)?;
    if !sc.lit(':') {
        return Err(bad());
    }
    let format = v[sc.pos()..].to_string();
    let unit = |name: &str| {
        TimeUnit::from_name(name).ok_or_else(|| GraphError::invalid(format!("unknown keyword {name}")))
    };
    Ok(XGrid {
        grid: (unit(units[0])?, steps[0]),
        major: (unit(units[1])?, steps[1]),
        label: (unit(units[2])?, steps[2]),
        precision,
        format,
    })
}

/// `--color NAME#RRGGBB[AA]` (also `#RGB` and `#RGBA`, as RRDtool allows).
fn parse_color_option(value: &str) -> Result<(ColorTag, Rgba)> {
    let bad = || GraphError::invalid("invalid color def format");
    let (name, hex) = value.split_once('#').ok_or_else(bad)?;
    if name.is_empty() || name.len() > 10 || !name.bytes().all(|c| c.is_ascii_uppercase()) {
        return Err(bad());
    }
    let digits: String = hex.chars().take_while(char::is_ascii_hexdigit).take(8).collect();
    if digits.is_empty() {
        return Err(bad());
    }
    let v = u32::from_str_radix(&digits, 16).map_err(|_| bad())?;
    let color = match digits.len() {
        3 => ((v & 0xf00) * 0x11_0000) | ((v & 0x0f0) * 0x01_1000) | ((v & 0x00f) * 0x00_1100) | 0xff,
        4 => {
            ((v & 0xf000) * 0x1_1000)
                | ((v & 0x0f00) * 0x1100)
                | ((v & 0x00f0) * 0x110)
                | ((v & 0x000f) * 0x11)
        }
        6 => (v << 8) | 0xff,
        8 => v,
        _ => return Err(GraphError::invalid("the color format is #RRGGBB[AA]")),
    };
    let tag = ColorTag::from_name(name)
        .ok_or_else(|| GraphError::invalid(format!("invalid color name '{name}'")))?;
    Ok((tag, Rgba::from_u32(color)))
}

impl Options {
    /// Applies one option by its long name, as `rrdtool graph` would.
    // A flat match over graph's options.
    #[allow(clippy::too_many_lines)]
    pub fn apply(&mut self, long: &str, value: Option<&str>) -> Result<()> {
        let v = value.unwrap_or("");
        match long {
            "alt-autoscale" => self.alt_autoscale = true,
            "alt-autoscale-min" => self.alt_autoscale_min = true,
            "alt-autoscale-max" => self.alt_autoscale_max = true,
            "imgformat" => {
                self.image_format = match v {
                    "PNG" => ImageFormat::Png,
                    "SVG" => ImageFormat::Svg,
                    "PDF" => ImageFormat::Pdf,
                    "EPS" => ImageFormat::Eps,
                    _ => match DataFormat::parse(v) {
                        Some(d) => ImageFormat::Data(d),
                        None => {
                            return Err(GraphError::invalid(format!("unsupported graphics format '{v}'")))
                        }
                    },
                }
            }
            "base" => {
                self.base = numparse::atol(v);
                if self.base != 1000 && self.base != 1024 {
                    return Err(GraphError::invalid(
                        "the only sensible value for base apart from 1000 is 1024",
                    ));
                }
            }
            "color" => {
                let (tag, color) = parse_color_option(v)?;
                self.colors[tag as usize] = color;
                self.colors_given[tag as usize] = true;
            }
            "full-size-mode" => self.full_size_mode = true,
            "slope-mode" => self.slope_mode = true,
            "start" => self.start = v.to_string(),
            "end" => self.end = v.to_string(),
            "force-rules-legend" => self.force_rules_legend = true,
            "no-legend" => self.no_legend = true,
            "height" => {
                let h = numparse::atol(v);
                if h < 10 {
                    return Err(GraphError::invalid("height below 10 pixels"));
                }
                self.height = h;
            }
            "width" => {
                let w = numparse::atol(v);
                if w < 10 {
                    return Err(GraphError::invalid("width below 10 pixels"));
                }
                self.width = w;
            }
            "no-minor" => self.no_minor = true,
            "only-graph" => self.only_graph = true,
            "units-length" => {
                self.units_length = i64::from(numparse::atoi(v));
                self.force_left_space = true;
            }
            "lower-limit" => self.lower_limit = parse_double(v, "-l")?,
            "upper-limit" => self.upper_limit = parse_double(v, "-u")?,
            "logarithmic" => self.logarithmic = true,
            "rigid" => self.rigid = true,
            "step" => self.step_secs = i64::from(numparse::atoi(v)),
            "tabwidth" => self.tab_width = parse_double(v, "-T")?,
            "title" => self.title = v.to_string(),
            "vertical-label" => self.vertical_label = v.to_string(),
            "watermark" => self.watermark = v.to_string(),
            "units-exponent" => self.units_exponent = Some(numparse::atoi(v)),
            "x-grid" => {
                if v == "none" {
                    self.draw_x_grid = false;
                } else {
                    self.x_grid = Some(parse_x_grid(v)?);
                }
            }
            "y-grid" => {
                if v == "none" {
                    self.draw_y_grid = false;
                } else {
                    let mut sc = Scan::new(v);
                    let step = sc.set(40, is_float_char);
                    let fact = step.and_then(|s| sc.lit(':').then_some(s)).and_then(|_| sc.long());
                    let (Some(step), Some(fact)) = (step, fact) else {
                        return Err(GraphError::invalid("invalid y-grid format"));
                    };
                    let step = parse_double(step, "-y")?;
                    // %d: the int C keeps.
                    let fact = fact as i32 as i64;
                    if step <= 0.0 {
                        return Err(GraphError::invalid("grid step must be > 0"));
                    }
                    if fact < 1 {
                        return Err(GraphError::invalid("label factor must be > 0"));
                    }
                    self.y_grid = Some((step, fact));
                }
            }
            "alt-y-grid" => self.alt_y_grid = true,
            "alt-y-mrtg" => {}
            "right-axis" => {
                let bad = || GraphError::invalid("invalid right-axis format expected scale:shift");
                let (scale, shift) = two_floats(v).ok_or_else(bad)?;
                if scale == 0.0 {
                    return Err(GraphError::invalid("the second_axis_scale  must not be 0"));
                }
                self.right_axis = Some((scale, shift));
            }
            "right-axis-label" => self.right_axis_label = v.to_string(),
            "right-axis-format" => self.right_axis_format = v.to_string(),
            "left-axis-format" => self.left_axis_format = v.to_string(),
            "left-axis-formatter" => {
                self.left_axis_formatter =
                    formatter(v).ok_or_else(|| GraphError::invalid("Unknown left axis formatter"))?
            }
            "right-axis-formatter" => {
                self.right_axis_formatter =
                    formatter(v).ok_or_else(|| GraphError::invalid("Unknown right axis formatter"))?
            }
            "legend-position" => {
                self.legend_position = match v {
                    "north" => LegendPosition::North,
                    "south" => LegendPosition::South,
                    "west" => LegendPosition::West,
                    "east" => LegendPosition::East,
                    _ => return Err(GraphError::invalid(format!("unknown legend-position '{v}'"))),
                }
            }
            "legend-direction" => {
                self.legend_direction = match v {
                    "topdown" => LegendDirection::TopDown,
                    "bottomup" => LegendDirection::BottomUp,
                    "bottomup2" => LegendDirection::BottomUp2,
                    // rrdtool's message says position here too.
                    _ => return Err(GraphError::invalid(format!("unknown legend-position '{v}'"))),
                }
            }
            "week-fmt" => {
                // rrdtool keeps at most 127 bytes.
                let mut f = v.to_string();
                if f.len() > 127 {
                    let mut cut = 127;
                    while !f.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    f.truncate(cut);
                }
                self.week_fmt = f;
            }
            "allow-shrink" => self.allow_shrink = true,
            "use-nan-for-all-missing-data" => self.missing_data_as_nan = true,
            "imginfo" => self.imginfo = Some(v.to_string()),
            "zoom" => {
                let z = parse_double(v, "-m")?;
                if z <= 0.0 {
                    return Err(GraphError::invalid("zoom factor must be > 0"));
                }
                self.zoom = z;
            }
            "font" => self.apply_font(v)?,
            "pango-markup" => self.pango_markup = true,
            "lazy" => self.lazy = true,
            "dynamic-labels" => self.dynamic_labels = true,
            "no-gridfit" => self.gridfit = false,
            "grid-dash" => {
                let mut sc = Scan::new(v);
                let on = sc.set(40, is_float_char);
                let off = on.and_then(|_| sc.lit(':').then_some(())).and_then(|_| sc.set(40, is_float_char));
                let (Some(on), Some(off)) = (on, off) else {
                    return Err(GraphError::invalid("invalid grid-dash format"));
                };
                match (full_double(on), full_double(off)) {
                    (Some(on), Some(off)) => self.grid_dash = (on, off),
                    _ => return Err(GraphError::invalid("expected grid-dash format float:float")),
                }
            }
            "graph-render-mode" => {
                if v != "normal" && v != "mono" {
                    return Err(GraphError::invalid(format!("unknown graph-render-mode '{v}'")));
                }
                self.graph_mono = v == "mono";
            }
            "font-render-mode" => {
                if !matches!(v, "normal" | "light" | "mono") {
                    return Err(GraphError::invalid(format!("unknown font-render-mode '{v}'")));
                }
                self.font_mono = v == "mono";
                self.font_light = v == "light";
            }
            "units" => {
                if self.units_si {
                    return Err(GraphError::invalid("--units can only be used once!"));
                }
                if v != "si" {
                    return Err(GraphError::invalid(format!("invalid argument for --units: {v}")));
                }
                self.units_si = true;
            }
            "disable-rrdtool-tag" => self.no_rrdtool_tag = true,
            "border" => self.border = i64::from(numparse::atoi(v)),
            "daemon" => {
                if self.daemon_given {
                    return Err(GraphError::invalid("You cannot specify --daemon more than once."));
                }
                self.daemon_given = true;
            }
            "graph-type" => {
                self.graph_type_xy = match v {
                    "TIME" => false,
                    "XY" => true,
                    _ => return Err(GraphError::invalid(format!("unsupported graphics type '{v}'"))),
                }
            }
            "font-smoothing-threshold" | "interlaced" => {}
            other => return Err(GraphError::invalid(format!("unknown option '{other}'"))),
        }
        Ok(())
    }

    /// `--font TAG:SIZE[:FONT]`: DEFAULT sets every property.
    fn apply_font(&mut self, v: &str) -> Result<()> {
        let mut sc = Scan::new(v);
        let tag = sc.set(10, |c| c.is_ascii_uppercase());
        let size = tag.and_then(|_| sc.lit(':').then_some(())).and_then(|_| sc.set(40, is_float_char));
        let end = sc.pos();
        let (Some(tag), Some(size)) = (tag, size) else {
            return Err(GraphError::invalid("invalid text property format"));
        };
        let Some(size) = full_double(size) else {
            return Err(GraphError::invalid("invalid text property format"));
        };
        let Some(prop) = TextProp::from_name(tag) else {
            return Err(GraphError::invalid(format!("invalid fonttag '{tag}'")));
        };
        let props = if prop == TextProp::Default { 0..6 } else { prop as usize..prop as usize + 1 };
        for p in props {
            if size > 0.0 {
                self.font_sizes[p] = size;
            }
            // A font description follows ':'.
            if v.len() > end + 2 {
                if v.as_bytes()[end] != b':' {
                    return Err(GraphError::invalid(format!("expected : after font size in '{v}'")));
                }
                self.font_names[p] = Some(v[end + 1..].to_string());
            }
        }
        Ok(())
    }

    /// What RRDtool checks once every option is read.
    pub(crate) fn validate(&self) -> Result<()> {
        for (fmt, formatter) in [
            (&self.left_axis_format, self.left_axis_formatter),
            (&self.right_axis_format, self.right_axis_formatter),
        ] {
            if !fmt.is_empty()
                && formatter == AxisFormatter::Numeric
                && crate::labels::axis_format(fmt).is_none()
            {
                return Err(GraphError::invalid(format!(
                    "invalid format string '{fmt}' (should match '{}')",
                    crate::labels::AXIS_PATTERN
                )));
            }
        }
        // An unset lower limit (NaN) passes, as in RRDtool.
        if self.logarithmic && self.lower_limit <= 0.0 {
            return Err(GraphError::invalid("for a logarithmic yaxis you must specify a lower-limit > 0"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colors_parse_like_rrdtool() {
        assert_eq!(parse_color_option("BACK#ff0000").unwrap(), (ColorTag::Back, Rgba::new(255, 0, 0, 255)));
        assert_eq!(parse_color_option("FONT#12345678").unwrap().1, Rgba::new(0x12, 0x34, 0x56, 0x78));
        assert_eq!(parse_color_option("GRID#abc").unwrap().1, Rgba::new(0xaa, 0xbb, 0xcc, 0xff));
        assert_eq!(parse_color_option("GRID#abcd").unwrap().1, Rgba::new(0xaa, 0xbb, 0xcc, 0xdd));
        assert_eq!(parse_color_option("NOPE#ffffff").unwrap_err().to_string(), "invalid color name 'NOPE'");
        assert_eq!(
            parse_color_option("BACK#fffff").unwrap_err().to_string(),
            "the color format is #RRGGBB[AA]"
        );
        assert_eq!(parse_color_option("back#ffffff").unwrap_err().to_string(), "invalid color def format");
    }

    #[test]
    fn option_values_are_checked() {
        let mut o = Options::default();
        assert_eq!(o.apply("width", Some("9")).unwrap_err().to_string(), "width below 10 pixels");
        assert_eq!(o.apply("height", Some("x")).unwrap_err().to_string(), "height below 10 pixels");
        assert!(o.apply("base", Some("1000")).is_ok());
        assert!(o.apply("base", Some("10")).is_err());
        o.apply("upper-limit", Some("1e3")).unwrap();
        assert_eq!(o.upper_limit, 1000.0);
        assert_eq!(
            o.apply("lower-limit", Some("5x")).unwrap_err().to_string(),
            "option -l - Converted '5x' to 5.000000, but cannot convert 'x'"
        );
        assert_eq!(
            o.apply("upper-limit", Some("")).unwrap_err().to_string(),
            "option -u - Cannot convert '' to float"
        );
        // strtod's words: "nan" leaves the limit unset, as in rrdtool.
        o.apply("upper-limit", Some("nan")).unwrap();
        assert!(o.upper_limit.is_nan());
        o.apply("upper-limit", Some("-Infinity")).unwrap();
        assert_eq!(o.upper_limit, f64::NEG_INFINITY);
        assert!(o.apply("upper-limit", Some("infx")).is_err());
        o.apply("imgformat", Some("SVG")).unwrap();
        assert_eq!(o.image_format, ImageFormat::Svg);
        assert_eq!(
            o.apply("imgformat", Some("GIF")).unwrap_err().to_string(),
            "unsupported graphics format 'GIF'"
        );
        o.apply("logarithmic", None).unwrap();
        o.lower_limit = f64::NAN;
        assert!(o.validate().is_ok());
        o.apply("lower-limit", Some("0")).unwrap();
        assert!(o.validate().is_err());
    }

    #[test]
    fn layout_options_parse_like_rrdtool() {
        let mut o = Options::default();
        o.apply("x-grid", Some("MINUTE:10:HOUR:1:HOUR:4:0:%H:%M")).unwrap();
        let g = o.x_grid.clone().unwrap();
        assert_eq!(
            (g.grid, g.major, g.label),
            ((TimeUnit::Minute, 10), (TimeUnit::Hour, 1), (TimeUnit::Hour, 4))
        );
        assert_eq!((g.precision, g.format.as_str()), (0, "%H:%M"));
        assert_eq!(o.apply("x-grid", Some("HOUR:1:DAY")).unwrap_err().to_string(), "invalid x-grid format");
        assert_eq!(
            o.apply("x-grid", Some("HOUR:1:DAY:1:FOO:1:0:%a")).unwrap_err().to_string(),
            "unknown keyword FOO"
        );
        o.apply("y-grid", Some("2.5:4")).unwrap();
        assert_eq!(o.y_grid, Some((2.5, 4)));
        o.apply("right-axis", Some("1:2x")).unwrap();
        assert_eq!(o.right_axis, Some((1.0, 2.0)));
        // DEFAULT sets every property, a tag only its own.
        o.apply("font", Some("DEFAULT:10:DejaVu Sans")).unwrap();
        assert_eq!(o.font_sizes, [10.0; 6]);
        assert_eq!(o.font_names[TextProp::Watermark as usize].as_deref(), Some("DejaVu Sans"));
        o.apply("font", Some("AXIS:6")).unwrap();
        assert_eq!(o.font_sizes[TextProp::Axis as usize], 6.0);
        assert_eq!(o.font_sizes[TextProp::Legend as usize], 10.0);
        // Size 0 keeps the size.
        o.apply("font", Some("LEGEND:0:mono")).unwrap();
        assert_eq!(o.font_sizes[TextProp::Legend as usize], 10.0);
        assert_eq!(
            o.apply("font", Some("LEGEND:8 xyz")).unwrap_err().to_string(),
            "expected : after font size in 'LEGEND:8 xyz'"
        );
        o.apply("graph-render-mode", Some("mono")).unwrap();
        o.apply("font-render-mode", Some("light")).unwrap();
        assert!(o.graph_mono && !o.font_mono);
        o.apply("legend-position", Some("west")).unwrap();
        assert_eq!(o.legend_position, LegendPosition::West);
        assert!(o.apply("zoom", Some("-1")).is_err());
    }

    #[test]
    fn default_colors_are_rrdtools() {
        assert_eq!(DEFAULT_COLORS[ColorTag::Back as usize], Rgba::new(242, 242, 242, 255));
        assert_eq!(DEFAULT_COLORS[ColorTag::MGrid as usize], Rgba::new(222, 79, 79, 153));
    }
}
