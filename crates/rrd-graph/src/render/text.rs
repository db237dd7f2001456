//! Text drawn by Pango through pangocairo, set up as RRDtool 1.7.2's
//! `rrd_graph_init` and `gfx_text` set it up: one layout per image on a
//! context of the process's pangocairo font map at 100 dpi, full hinting
//! with hinted metrics and grey antialiasing (`--font-render-mode light`:
//! slight hinting; `mono`: no antialiasing), the font description's size
//! replaced by the element's, tab stops in pixels, markup with
//! `--pango-markup`. The anchor is a point of the layout's logical pixel
//! box, halved with integer division as RRDtool's C does.
//!
//! The font map is made once per thread (fontconfig's scan of the fonts
//! is the slow part of a first graph); Pango objects are not `Send`.

use cairo::{Context, FontOptions, HintMetrics, HintStyle};
use pango::prelude::*;

use super::{HAlign, Smoothing, TextSpec, VAlign};
use crate::error::{GraphError, Result};

thread_local! {
    static FONT_MAP: pango::FontMap = pangocairo::FontMap::new();
}

/// Pango's resolution in RRDtool's graphs.
const DPI: f64 = 100.0;

/// The image's Pango layout and what was last set on it.
pub(super) struct TextLayout {
    layout: pango::Layout,
    /// (description, size in Pango units) last set.
    font: Option<(String, i32)>,
    tab_width: f64,
}

impl TextLayout {
    /// A layout for a context whose matrix is `cr`'s (before any zoom, as
    /// RRDtool's layout is made on an unscaled context).
    pub(super) fn new(cr: &Context, mode: Smoothing) -> Result<TextLayout> {
        let context = FONT_MAP.with(|m| m.create_context());
        pangocairo::functions::context_set_resolution(&context, DPI);
        pangocairo::functions::update_context(cr, &context);
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
