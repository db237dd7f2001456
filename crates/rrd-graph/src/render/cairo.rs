//! [`CairoCanvas`]: the [`Canvas`] drawn by Cairo, on the surface RRDtool
//! 1.7.2 uses for each format (`graph_cairo_setup`): an ARGB32 image
//! written by Cairo's PNG writer, or an SVG 1.1, PDF or PostScript surface of the
//! image's size in points.
//!
//! The drawing state is set as RRDtool sets it: the graph antialiasing
//! (`--graph-render-mode`) on the context, the zoom as the context's
//! scale, lines with butt caps and mitre joins unless they are a LINE's
//! (round), areas filled with the non-zero rule, colours as straight-alpha
//! sources over what is there. Text goes through [`super::text`].
//!
//! Cairo reports a failed drawing call by a status kept on the context;
//! the first one is kept here and returned by [`Canvas::finish`], so a
//! graph never claims success over a broken picture.

use cairo::{Antialias, Context, Format, ImageSurface, LineCap, LineJoin, LinearGradient};

use super::text::SharedLayout;
use super::{Canvas, Color, Smoothing, TextSpec};
use crate::error::{GraphError, Result};

/// The output format of a canvas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Surface {
    Png,
    Svg,
    Pdf,
    Eps,
}

/// The surface and where a vector surface writes its document.
enum Target {
    Image(ImageSurface),
    Vector(cairo::Surface),
}

/// A Cairo context over one of RRDtool's surfaces.
pub(crate) struct CairoCanvas {
    cr: Context,
    target: Target,
    text: SharedLayout,
    /// The first failed drawing call, returned by `finish`.
    error: Option<String>,
}

fn cairo_error(what: &str, e: impl std::fmt::Display) -> GraphError {
    GraphError::Encode(format!("{what}: {e}"))
}

impl CairoCanvas {
    /// A surface of `width`×`height` image pixels scaled by `zoom` (the
    /// device size truncated to whole pixels or points, as RRDtool's int
    /// arguments are); `graph` is the graph render mode, `text` the
    /// image's layout (made before the canvas, as in RRDtool).
    pub(crate) fn new(
        kind: Surface,
        width: u32,
        height: u32,
        zoom: f64,
        graph: Smoothing,
        text: SharedLayout,
    ) -> Result<CairoCanvas> {
        let (w, h) = ((f64::from(width) * zoom) as i32, (f64::from(height) * zoom) as i32);
        let surface_error = |e: cairo::Error| cairo_error("cannot create the drawing surface", e);
        let target = match kind {
            Surface::Png => Target::Image(
                ImageSurface::create(Format::ARgb32, w.max(1), h.max(1)).map_err(surface_error)?,
            ),
            Surface::Svg => {
                let s = cairo::SvgSurface::for_stream(f64::from(w), f64::from(h), Vec::<u8>::new())
                    .map_err(|e| cairo_error("cannot create the SVG surface", e))?;
                s.restrict(cairo::SvgVersion::_1_1);
                Target::Vector((*s).clone())
            }
            Surface::Pdf => {
                let s = cairo::PdfSurface::for_stream(f64::from(w), f64::from(h), Vec::<u8>::new())
                    .map_err(|e| cairo_error("cannot create the PDF surface", e))?;
                Target::Vector((*s).clone())
            }
            Surface::Eps => {
                let s = cairo::PsSurface::for_stream(f64::from(w), f64::from(h), Vec::<u8>::new())
                    .map_err(|e| cairo_error("cannot create the PostScript surface", e))?;
                Target::Vector((*s).clone())
            }
        };
        let surface: &cairo::Surface = match &target {
            Target::Image(s) => s,
            Target::Vector(s) => s,
        };
        let cr = Context::new(surface).map_err(surface_error)?;
        cr.set_antialias(if graph == Smoothing::Mono { Antialias::None } else { Antialias::Gray });
        cr.scale(zoom, zoom);
        Ok(CairoCanvas { cr, target, text, error: None })
    }

    fn set_source(&self, c: Color) {
        self.cr.set_source_rgba(c.r, c.g, c.b, c.a);
    }

    fn path(&self, points: &[(f64, f64)]) {
        let mut it = points.iter();
        if let Some((x, y)) = it.next() {
            self.cr.move_to(*x, *y);
        }
        for (x, y) in it {
            self.cr.line_to(*x, *y);
        }
    }

    /// Keeps the first error of a drawing call.
    fn check(&mut self, what: &str, r: std::result::Result<(), cairo::Error>) {
        if let (Err(e), None) = (r, &self.error) {
            self.error = Some(format!("{what}: {e}"));
        }
    }
}

impl Canvas for CairoCanvas {
    fn fill(&mut self, points: &[(f64, f64)], color: Color) {
        if points.len() < 2 {
            return;
        }
        self.cr.new_path();
        self.path(points);
        self.cr.close_path();
        self.set_source(color);
        let r = self.cr.fill();
        self.check("fill", r);
    }

    fn fill_gradient(&mut self, points: &[(f64, f64)], from: ((f64, f64), Color), to: ((f64, f64), Color)) {
        if points.len() < 2 {
            return;
        }
        self.cr.new_path();
        self.path(points);
        self.cr.close_path();
        let g = LinearGradient::new(from.0 .0, from.0 .1, to.0 .0, to.0 .1);
        for (offset, c) in [(0.0, from.1), (1.0, to.1)] {
            g.add_color_stop_rgba(offset, c.r, c.g, c.b, c.a);
        }
        let r = self.cr.set_source(&g).and_then(|()| self.cr.fill());
        self.check("gradient fill", r);
    }

    fn stroke(
        &mut self,
        lines: &[Vec<(f64, f64)>],
        width: f64,
        color: Color,
        dash: Option<(&[f64], f64)>,
        round: bool,
    ) {
        let lines: Vec<&Vec<(f64, f64)>> = lines.iter().filter(|l| l.len() >= 2).collect();
        if lines.is_empty() {
            return;
        }
        self.cr.save().ok();
        self.cr.new_path();
        self.cr.set_line_width(width);
        if round {
            self.cr.set_line_cap(LineCap::Round);
            self.cr.set_line_join(LineJoin::Round);
        }
        if let Some((d, offset)) = dash {
            self.cr.set_dash(d, offset);
        }
        for line in lines {
            // A polyline back at its start is a closed rectangle (the
            // legend box): closed, so its first corner is joined too.
            if line.len() > 2 && line.first() == line.last() {
                self.path(&line[..line.len() - 1]);
                self.cr.close_path();
            } else {
                self.path(line);
            }
        }
        self.set_source(color);
        let r = self.cr.stroke();
        self.cr.restore().ok();
        self.check("stroke", r);
    }

    fn text(&mut self, spec: &TextSpec) {
        let r = self.text.borrow_mut().show(&self.cr, spec);
        self.check("text", r);
    }

    fn clip(&mut self, rect: Option<(f64, f64, f64, f64)>) {
        self.cr.reset_clip();
        if let Some((x, y, w, h)) = rect {
            self.cr.new_path();
            self.cr.rectangle(x, y, w, h);
            self.cr.clip();
        }
    }

    fn finish(self: Box<Self>) -> Result<Vec<u8>> {
        let this = *self;
        if let Some(e) = this.error {
            return Err(GraphError::Encode(e));
        }
        drop(this.text);
        drop(this.cr);
        match this.target {
            Target::Image(s) => {
                let mut out = Vec::new();
                s.write_to_png(&mut out).map_err(|e| cairo_error("cannot write the PNG", e))?;
                Ok(out)
            }
            Target::Vector(s) => {
                let stream = s
                    .finish_output_stream()
                    .map_err(|e| cairo_error("cannot write the document", e.error))?;
                stream
                    .downcast::<Vec<u8>>()
                    .map(|b| *b)
                    .map_err(|_| GraphError::Encode("the document stream is not a byte buffer".into()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{HAlign, TextLayout, VAlign};

    const WHITE: Color = Color::new(1.0, 1.0, 1.0, 1.0);
    const RED: Color = Color::new(1.0, 0.0, 0.0, 1.0);

    fn layout() -> SharedLayout {
        std::rc::Rc::new(std::cell::RefCell::new(TextLayout::new(Smoothing::Normal).expect("layout")))
    }

    fn canvas(kind: Surface) -> Box<dyn Canvas> {
        Box::new(CairoCanvas::new(kind, 40, 20, 1.0, Smoothing::Normal, layout()).expect("canvas"))
    }

    /// Decoded RGBA rows of a PNG written by `finish`.
    fn pixels(c: Box<dyn Canvas>) -> (u32, Vec<u8>) {
        let png = c.finish().expect("png");
        let surface = ImageSurface::create_from_png(&mut png.as_slice()).expect("a PNG Cairo reads back");
        let (w, stride) = (surface.width() as u32, surface.stride() as usize);
        let data = surface.take_data().expect("pixels").to_vec();
        let rows = data.chunks(stride).flat_map(|r| r[..w as usize * 4].to_vec()).collect();
        (w, rows)
    }

    #[test]
    fn a_fitted_line_covers_exactly_its_pixel_row() {
        let mut c = canvas(Surface::Png);
        c.fill(&[(0.0, 0.0), (40.0, 0.0), (40.0, 20.0), (0.0, 20.0)], WHITE);
        c.stroke(&[vec![(0.0, 10.5), (40.0, 10.5)]], 1.0, RED, None, false);
        let (w, px) = pixels(c);
        // ARGB32 little-endian: B, G, R, A.
        let at = |x: u32, y: u32| &px[((y * w + x) * 4) as usize..((y * w + x) * 4 + 4) as usize];
        assert_eq!(at(5, 10), &[0, 0, 255, 255]);
        assert_eq!(at(5, 9), &[255, 255, 255, 255]);
        assert_eq!(at(5, 11), &[255, 255, 255, 255]);
    }

    #[test]
    fn text_is_drawn_on_the_side_of_its_anchor() {
        let mut c = canvas(Surface::Png);
        c.fill(&[(0.0, 0.0), (40.0, 0.0), (40.0, 20.0), (0.0, 20.0)], WHITE);
        c.text(&TextSpec {
            x: 20.0,
            y: 10.0,
            color: Color::new(0.0, 0.0, 0.0, 1.0),
            size_pt: 8.0,
            font: "DejaVu Sans Mono",
            tab_width: 40.0,
            angle: 0.0,
            h: HAlign::Right,
            v: VAlign::Center,
            text: "MM",
            markup: false,
        });
        let (w, px) = pixels(c);
        let inked = |x: u32| (0..20).any(|y| px[((y * w + x) * 4) as usize] < 128);
        assert!((0..20).any(inked), "text left of a right-aligned anchor");
        assert!(!(21..40).any(inked), "nothing right of it");
    }

    #[test]
    fn vector_surfaces_write_their_documents() {
        for (kind, head) in [
            (Surface::Svg, &b"<?xml"[..]),
            (Surface::Pdf, &b"%PDF-"[..]),
            (Surface::Eps, &b"%!PS-Adobe-3.0"[..]),
        ] {
            let mut c = canvas(kind);
            c.fill(&[(0.0, 0.0), (10.0, 0.0), (10.0, 10.0)], RED);
            let doc = c.finish().expect("document");
            assert!(doc.starts_with(head), "{kind:?}");
        }
    }

    #[test]
    fn an_impossible_surface_is_an_error() {
        let r = CairoCanvas::new(Surface::Png, 40_000, 40_000, 1.0, Smoothing::Normal, layout());
        assert!(matches!(r, Err(GraphError::Encode(_))));
    }
}
