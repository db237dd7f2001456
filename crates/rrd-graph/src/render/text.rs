//! Text drawn by Pango through pangocairo, set up as RRDtool 1.7.2's
//! `rrd_graph_init` and `gfx_text` set it up: one layout per image on a
//! context of the process's pangocairo font map at 100 dpi, full hinting
//! with hinted metrics and grey antialiasing (`--font-render-mode light`:
//! slight hinting; `mono`: no antialiasing), the font description's size
//! replaced by the element's, tab stops in pixels, markup with
//! `--pango-markup`. The anchor is a point of the layout's logical pixel
//! box, halved with integer division as RRDtool's C does.
//!
//! The same layout measures the text for the graph's layout (image size,
//! legend places, graphv's `coords[i]`) and draws it, in the order RRDtool
//! does both: drawing updates the layout's context from the drawing
//! context (its `--zoom` scale), so what is measured after a text is drawn
//! is measured at the zoom, as in RRDtool. Share it with
//! [`SharedLayout`].
//!
//! The font map is made once per thread (fontconfig's scan of the fonts
//! is the slow part of a first graph); Pango objects are not `Send`.

use std::cell::RefCell;
use std::rc::Rc;

use cairo::{Context, FontOptions, Format, HintMetrics, HintStyle, ImageSurface};
use pango::prelude::*;

use super::{HAlign, Smoothing, TextSpec, VAlign};
use crate::error::{GraphError, Result};

thread_local! {
    static FONT_MAP: pango::FontMap = pangocairo::FontMap::new();
}

/// Pango's resolution in RRDtool's graphs.
const DPI: f64 = 100.0;

/// The image's layout, shared by the graph code (measuring) and the
/// canvas (drawing).
pub(crate) type SharedLayout = Rc<RefCell<TextLayout>>;

/// The logical size of a text in whole pixels, as Pango reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TextSize {
    pub width: i32,
    pub height: i32,
}

/// The image's Pango layout and what was last set on it.
pub(crate) struct TextLayout {
    layout: pango::Layout,
    /// (description, size in Pango units) last set.
    font: Option<(String, i32)>,
    tab_width: f64,
}

impl TextLayout {
    /// A layout made, as RRDtool makes it, on the context of a 10×10
    /// scratch image (so before the picture's surface: an SVG's surface
    /// is then Cairo's second, "surface2", as in RRDtool's).
    pub(crate) fn new(mode: Smoothing) -> Result<TextLayout> {
        let failed = |e: cairo::Error| GraphError::Encode(format!("cannot create the text layout: {e}"));
        let scratch =
            Context::new(ImageSurface::create(Format::ARgb32, 10, 10).map_err(failed)?).map_err(failed)?;
        let context = FONT_MAP.with(|m| m.create_context());
        pangocairo::functions::context_set_resolution(&context, DPI);
        pangocairo::functions::update_context(&scratch, &context);
        let mut options =
            FontOptions::new().map_err(|e| GraphError::Encode(format!("cannot make font options: {e}")))?;
        options.set_hint_style(if mode == Smoothing::Light { HintStyle::Slight } else { HintStyle::Full });
        options.set_hint_metrics(HintMetrics::On);
        options.set_antialias(if mode == Smoothing::Mono {
            cairo::Antialias::None
        } else {
            cairo::Antialias::Gray
        });
        pangocairo::functions::context_set_font_options(&context, Some(&options));
        let layout = pango::Layout::new(&context);
        layout.context_changed();
        Ok(TextLayout { layout, font: None, tab_width: -1.0 })
    }

    /// Sets font, tabs and text as RRDtool's `gfx_prep_text` does.
    fn prepare(&mut self, spec: &TextSpec) {
        if self.tab_width != spec.tab_width {
            self.tab_width = spec.tab_width;
            // One stop: Pango repeats its distance.
            let mut tabs = pango::TabArray::new(1, true);
            tabs.set_tab(0, pango::TabAlign::Left, spec.tab_width as i32);
            self.layout.set_tabs(Some(&tabs));
        }
        let size = (spec.size_pt * f64::from(pango::SCALE)) as i32;
        if self.font.as_ref().is_none_or(|(f, s)| f != spec.font || *s != size) {
            let mut desc = pango::FontDescription::from_string(spec.font);
            desc.set_size(size);
            self.layout.set_font_description(Some(&desc));
            self.font = Some((spec.font.to_string(), size));
        }
        if spec.markup {
            self.layout.set_markup(spec.text);
        } else {
            self.layout.set_text(spec.text);
        }
    }

    /// The logical pixel size of a text (RRDtool's `gfx_get_text_width`
    /// and `gfx_get_text_height`); position, colour and angle of `spec`
    /// do not matter.
    pub(crate) fn measure(&mut self, spec: &TextSpec) -> TextSize {
        self.prepare(spec);
        let (_, log) = self.layout.pixel_extents();
        TextSize { width: log.width(), height: log.height() }
    }

    /// Draws `spec` on `cr`.
    pub(super) fn show(&mut self, cr: &Context, spec: &TextSpec) -> std::result::Result<(), cairo::Error> {
        let c = spec.color;
        cr.save()?;
        cr.translate(spec.x, spec.y);
        self.prepare(spec);
        cr.new_path();
        cr.set_source_rgba(c.r, c.g, c.b, c.a);
        let (_, log) = self.layout.pixel_extents();
        cr.rotate(-spec.angle * std::f64::consts::PI / 180.0);
        let sx = log.x()
            - match spec.h {
                HAlign::Left => 0,
                HAlign::Center => log.width() / 2,
                HAlign::Right => log.width(),
            };
        let sy = log.y()
            - match spec.v {
                VAlign::Top => 0,
                VAlign::Center => log.height() / 2,
                VAlign::Bottom => log.height(),
            };
        pangocairo::functions::update_layout(cr, &self.layout);
        cr.move_to(f64::from(sx), f64::from(sy));
        pangocairo::functions::show_layout(cr, &self.layout);
        cr.restore()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Color;

    fn size(layout: &mut TextLayout, size_pt: f64, tab_width: f64, text: &str) -> (i32, i32) {
        let s = layout.measure(&TextSpec {
            x: 0.0,
            y: 0.0,
            color: Color::new(0.0, 0.0, 0.0, 1.0),
            size_pt,
            font: "DejaVu Sans Mono,Bitstream Vera Sans Mono,monospace,Courier",
            tab_width,
            angle: 0.0,
            h: HAlign::Left,
            v: VAlign::Top,
            text,
            markup: false,
        });
        (s.width, s.height)
    }

    /// The numbers are what rrdtool 1.7.2 reported (graphv's image_width
    /// and legend coords) for its default font; they need Debian's
    /// fonts-dejavu-core, which .ci/run installs.
    #[test]
    fn measures_as_rrdtool_does() {
        let mut layout = TextLayout::new(Smoothing::Normal).expect("layout");
        // "0" at the axis size: 6 px (a 481 px wide default image).
        assert_eq!(size(&mut layout, 7.0, 40.0, "0").0, 6);
        // Legends at 8 pt: 7 px a character, 14 px a line.
        assert_eq!(size(&mut layout, 8.0, 40.0, "  foo"), (35, 14));
        assert_eq!(size(&mut layout, 8.0, 40.0, " 89.99 ").0, 49);
        // Tab stops repeat their distance (rrdtool's default tabwidth + 16).
        assert_eq!(size(&mut layout, 8.0, 56.0, "a\tb").0, 63);
        assert_eq!(size(&mut layout, 8.0, 116.0, "a\t\tb").0, 239);
    }
}
