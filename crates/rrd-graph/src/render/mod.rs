//! The drawing seam: the graph code draws through [`Canvas`], a handful of
//! calls in image pixels, and never names the library that rasterises.
//!
//! There is one implementation, [`cairo::CairoCanvas`], because RRDtool
//! 1.7.2 draws with Cairo and lays text out with Pango, and a picture can
//! only be pixel-equal to RRDtool's when the same libraries draw it (see
//! `docs/graph-rendering.md` for the measurement behind that decision).
//! PNG, SVG, PDF and EPS are Cairo's image, SVG, PDF and PostScript
//! surfaces, so the vector formats stay vector, as RRDtool's are.
//!
//! Coordinates are image pixels, origin at the top left, y downwards
//! (`--zoom` scales the surface, not the coordinates). Colours have
//! straight alpha. Grid fitting (`gfx_line_fit`, `gfx_area_fit`) is the
//! caller's: it knows which points are line ends and which area corners.
//! Text is placed as RRDtool's `gfx_text` places it: the anchor is a
//! corner, edge midpoint or centre of the Pango layout's logical box, and
//! the angle turns the text counter-clockwise around the anchor.

pub(crate) mod cairo;
pub(crate) mod text;

use crate::error::Result;
use crate::options::Rgba;

/// A colour as Cairo takes it: straight-alpha channels from 0 to 1.
/// RRDtool's default colours are such doubles (0.95 grey is not a whole
/// byte), so they reach Cairo unrounded, as in RRDtool.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Color {
    pub r: f64,
    pub g: f64,
    pub b: f64,
    pub a: f64,
}

impl Color {
    pub(crate) const fn new(r: f64, g: f64, b: f64, a: f64) -> Color {
        Color { r, g, b, a }
    }

    pub(crate) const fn with_alpha(self, a: f64) -> Color {
        Color { a, ..self }
    }
}

impl From<Rgba> for Color {
    /// As RRDtool's `gfx_hex_to_col` converts `#rrggbbaa`.
    fn from(c: Rgba) -> Color {
        let unit = |v: u8| 1.0 / 255.0 * f64::from(v);
        Color::new(unit(c.r), unit(c.g), unit(c.b), unit(c.a))
    }
}

pub(crate) use self::cairo::{CairoCanvas, Surface};
pub(crate) use self::text::{SharedLayout, TextLayout};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HAlign {
    Left,
    Center,
    Right,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VAlign {
    Top,
    Center,
    Bottom,
}

/// A piece of text to draw.
pub(crate) struct TextSpec<'a> {
    pub x: f64,
    pub y: f64,
    pub color: Color,
    pub size_pt: f64,
    /// A Pango font description (family list and style); its size, if
    /// any, is replaced by `size_pt`, as RRDtool does.
    pub font: &'a str,
    /// The distance between tab stops, in pixels.
    pub tab_width: f64,
    /// Degrees, counter-clockwise.
    pub angle: f64,
    pub h: HAlign,
    pub v: VAlign,
    pub text: &'a str,
    /// `--pango-markup`: `text` is Pango markup.
    pub markup: bool,
}

/// How edges are smoothed (`--graph-render-mode`, `--font-render-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Smoothing {
    /// Grey antialiasing (and full hinting, for text): RRDtool's default.
    Normal,
    /// Grey antialiasing with slight hinting (`--font-render-mode light`).
    Light,
    /// No antialiasing (`mono`).
    Mono,
}

/// What the graph code draws on.
pub(crate) trait Canvas {
    /// Fills a closed polygon.
    fn fill(&mut self, points: &[(f64, f64)], color: Color);
    /// Fills a closed polygon with a linear gradient from `from`'s point
    /// and colour to `to`'s, padded beyond.
    fn fill_gradient(&mut self, points: &[(f64, f64)], from: ((f64, f64), Color), to: ((f64, f64), Color));
    /// Strokes polylines as one path (each a subpath, so alpha does not
    /// add up where they meet); `dash` is on/off lengths with its offset;
    /// `round` gives round caps and joins (RRDtool's LINE), else butt caps
    /// and mitre joins.
    fn stroke(
        &mut self,
        lines: &[Vec<(f64, f64)>],
        width: f64,
        color: Color,
        dash: Option<(&[f64], f64)>,
        round: bool,
    );
    fn text(&mut self, spec: &TextSpec);
    /// Restricts drawing to a rectangle (x, y, w, h), or lifts the limit.
    fn clip(&mut self, rect: Option<(f64, f64, f64, f64)>);
    /// The encoded image.
    fn finish(self: Box<Self>) -> Result<Vec<u8>>;
}
