//! Drawing surfaces: a raster one (tiny-skia, encoded as PNG) and an SVG
//! one written by hand. Both take the same calls in the same pixel
//! coordinates, so the graph code draws once for either format.
//!
//! Coordinates are pixels, origin at the top left, y downwards. Colours
//! have straight alpha. Text is placed the way RRDtool's `gfx_text` places
//! it: the anchor is a corner, edge midpoint or centre of the text's
//! logical box, and the angle turns the text counter-clockwise around the
//! anchor. The SVG surface writes text as `<text>` in DejaVu Sans Mono
//! (the viewer's copy draws it); the raster surface fills the bundled
//! font's outlines.

use std::fmt::Write as _;

use tiny_skia::{
    FillRule, LineCap, LineJoin, Mask, Paint, PathBuilder, Pixmap, Stroke, StrokeDash, Transform,
};

use crate::error::{GraphError, Result};
use crate::labels::{markup_spans, Span};
use crate::options::Rgba;
use crate::text::{Font, PathOp};

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
    pub color: Rgba,
    pub size_pt: f64,
    pub font: &'static Font,
    /// The face of `<b>` runs.
    pub bold_font: &'static Font,
    pub tab_width: f64,
    /// Degrees, counter-clockwise.
    pub angle: f64,
    pub h: HAlign,
    pub v: VAlign,
    pub text: &'a str,
    /// `--pango-markup`: `text` is markup (the subset of
    /// [`crate::labels::markup_spans`]).
    pub markup: bool,
}

impl TextSpec<'_> {
    fn run_font(&self, run: &Span) -> &'static Font {
        if run.bold {
            self.bold_font
        } else {
            self.font
        }
    }

    /// The styled runs of the text (one plain run without markup).
    fn runs(&self) -> Vec<Span> {
        if self.markup {
            markup_spans(self.text)
        } else {
            vec![Span {
                text: self.text.to_string(),
                bold: false,
                italic: false,
                color: None,
                scale: 1.0,
                rise_em: 0.0,
            }]
        }
    }

    /// Where the text's baseline starts, before rotation, relative to the
    /// anchor.
    fn offset(&self) -> (f64, f64) {
        let f = self.font;
        let w = self
            .runs()
            .iter()
            .map(|r| self.run_font(r).text_width(&r.text, self.size_pt * r.scale, self.tab_width))
            .sum::<f64>();
        let h = f.text_height(self.size_pt);
        let dx = match self.h {
            HAlign::Left => 0.0,
            HAlign::Center => -w / 2.0,
            HAlign::Right => -w,
        };
        let top = match self.v {
            VAlign::Top => 0.0,
            VAlign::Center => -h / 2.0,
            VAlign::Bottom => -h,
        };
        (dx, top + f.ascent(self.size_pt))
    }
}

/// What the graph code draws on.
pub(crate) trait Canvas {
    /// Fills a closed polygon.
    fn fill(&mut self, points: &[(f64, f64)], color: Rgba);
    /// Fills a closed polygon with a vertical linear gradient: `from`'s
    /// colour at its y, `to`'s at its y, padded beyond.
    fn fill_gradient(&mut self, points: &[(f64, f64)], from: (f64, Rgba), to: (f64, Rgba));
    /// Strokes a polyline; `dash` is on/off lengths; `round` gives round
    /// caps and joins (RRDtool's LINE), else butt caps.
    fn stroke(&mut self, points: &[(f64, f64)], width: f64, color: Rgba, dash: Option<&[f64]>, round: bool);
    fn text(&mut self, spec: &TextSpec);
    /// Restricts drawing to a rectangle (x, y, w, h), or lifts the limit.
    fn clip(&mut self, rect: Option<(f64, f64, f64, f64)>);
    /// The encoded image.
    fn finish(self: Box<Self>) -> Result<Vec<u8>>;
}

fn paint(color: Rgba, anti_alias: bool) -> Paint<'static> {
    let mut p = Paint::default();
    p.set_color_rgba8(color.r, color.g, color.b, color.a);
    p.anti_alias = anti_alias;
    p
}

fn polygon(points: &[(f64, f64)], close: bool) -> Option<tiny_skia::Path> {
    let mut pb = PathBuilder::new();
    let (first, rest) = points.split_first()?;
    pb.move_to(first.0 as f32, first.1 as f32);
    for p in rest {
        pb.line_to(p.0 as f32, p.1 as f32);
    }
    if close {
        pb.close();
    }
    pb.finish()
}

/// The raster surface.
pub(crate) struct PngCanvas {
    pixmap: Pixmap,
    mask: Option<Mask>,
    /// `--zoom`: image pixels to surface pixels.
    zoom: Transform,
    /// Antialiasing of lines and areas (`--graph-render-mode mono`: off)
    /// and of text (`--font-render-mode mono`: off).
    graph_aa: bool,
    text_aa: bool,
}

impl PngCanvas {
    /// A surface of `width`×`height` image pixels, each `zoom` surface
    /// pixels wide (the surface size is truncated, as Cairo's int is).
    pub(crate) fn new(width: u32, height: u32, zoom: f64) -> Result<PngCanvas> {
        let (w, h) = ((f64::from(width) * zoom) as u32, (f64::from(height) * zoom) as u32);
        let pixmap = Pixmap::new(w.max(1), h.max(1))
            .ok_or_else(|| GraphError::Encode(format!("an image of {w}x{h} pixels is too large")))?;
        Ok(PngCanvas {
            pixmap,
            mask: None,
            zoom: Transform::from_scale(zoom as f32, zoom as f32),
            graph_aa: true,
            text_aa: true,
        })
    }

    /// `--graph-render-mode mono` / `--font-render-mode mono`.
    pub(crate) fn set_antialias(&mut self, graph: bool, text: bool) {
        self.graph_aa = graph;
        self.text_aa = text;
    }
}

impl Canvas for PngCanvas {
    fn fill_gradient(&mut self, points: &[(f64, f64)], from: (f64, Rgba), to: (f64, Rgba)) {
        let Some(path) = polygon(points, true) else { return };
        let stop = |pos: f32, c: Rgba| {
            tiny_skia::GradientStop::new(pos, tiny_skia::Color::from_rgba8(c.r, c.g, c.b, c.a))
        };
        let x = points[0].0 as f32;
        let shader = if (to.0 - from.0).abs() < 1e-9 {
            Some(tiny_skia::Shader::SolidColor(tiny_skia::Color::from_rgba8(
                from.1.r, from.1.g, from.1.b, from.1.a,
            )))
        } else {
            tiny_skia::LinearGradient::new(
                tiny_skia::Point::from_xy(x, from.0 as f32),
                tiny_skia::Point::from_xy(x, to.0 as f32),
                vec![stop(0.0, from.1), stop(1.0, to.1)],
                tiny_skia::SpreadMode::Pad,
                Transform::identity(),
            )
        };
        let Some(shader) = shader else { return };
        let mut p = Paint { shader, ..Paint::default() };
        p.anti_alias = true;
        self.pixmap.fill_path(&path, &p, FillRule::Winding, Transform::identity(), self.mask.as_ref());
    }

    fn fill(&mut self, points: &[(f64, f64)], color: Rgba) {
        if let Some(path) = polygon(points, true) {
            self.pixmap.fill_path(
                &path,
                &paint(color, self.graph_aa),
                FillRule::Winding,
                self.zoom,
                self.mask.as_ref(),
            );
        }
    }

    fn stroke(&mut self, points: &[(f64, f64)], width: f64, color: Rgba, dash: Option<&[f64]>, round: bool) {
        let Some(path) = polygon(points, false) else { return };
        let mut stroke = Stroke {
            width: width as f32,
            line_cap: if round { LineCap::Round } else { LineCap::Butt },
            line_join: if round { LineJoin::Round } else { LineJoin::Miter },
            ..Stroke::default()
        };
        if let Some(d) = dash {
            let mut v: Vec<f32> = d.iter().map(|x| *x as f32).collect();
            if v.len() % 2 == 1 {
                v.extend(v.clone());
            }
            stroke.dash = StrokeDash::new(v, 0.0);
        }
        self.pixmap.stroke_path(&path, &paint(color, self.graph_aa), &stroke, self.zoom, self.mask.as_ref());
    }

    fn text(&mut self, spec: &TextSpec) {
        let (dx, dy) = spec.offset();
        let base = self
            .zoom
            .pre_translate(spec.x as f32, spec.y as f32)
            .pre_rotate(-spec.angle as f32)
            .pre_translate(dx as f32, dy as f32);
        let mut pen = 0.0;
        for run in spec.runs() {
            let size = spec.size_pt * run.scale;
            let face = spec.run_font(&run);
            let ops = face.outline(&run.text, size, spec.tab_width);
            let advance = face.text_width(&run.text, size, spec.tab_width);
            let mut pb = PathBuilder::new();
            for op in ops {
                match op {
                    PathOp::Move(x, y) => pb.move_to(x as f32, y as f32),
                    PathOp::Line(x, y) => pb.line_to(x as f32, y as f32),
                    PathOp::Quad(x1, y1, x, y) => pb.quad_to(x1 as f32, y1 as f32, x as f32, y as f32),
                    PathOp::Cubic(x1, y1, x2, y2, x, y) => {
                        pb.cubic_to(x1 as f32, y1 as f32, x2 as f32, y2 as f32, x as f32, y as f32)
                    }
                    PathOp::Close => pb.close(),
                }
            }
            let rise_px = run.rise_em * spec.size_pt * 100.0 / 72.0;
            let mut t = base.pre_translate(pen as f32, -rise_px as f32);
            pen += advance;
            // Only the regular face is bundled: italic is slanted, bold
            // is drawn with an outline stroke.
            if run.italic {
                t = t.pre_concat(Transform::from_row(1.0, 0.0, -0.2, 1.0, 0.0, 0.0));
            }
            let Some(path) = pb.finish() else { continue };
            let color = run.color.unwrap_or(spec.color);
            self.pixmap.fill_path(
                &path,
                &paint(color, self.text_aa),
                FillRule::Winding,
                t,
                self.mask.as_ref(),
            );
            // A bold run in a font without its own bold face.
            if run.bold && std::ptr::eq(spec.bold_font, spec.font) {
                let stroke = Stroke { width: (size * 100.0 / 72.0 * 0.06) as f32, ..Stroke::default() };
                self.pixmap.stroke_path(&path, &paint(color, self.text_aa), &stroke, t, self.mask.as_ref());
            }
        }
    }

    fn clip(&mut self, rect: Option<(f64, f64, f64, f64)>) {
        self.mask = rect.and_then(|(x, y, w, h)| {
            let mut mask = Mask::new(self.pixmap.width(), self.pixmap.height())?;
            let r = tiny_skia::Rect::from_xywh(x as f32, y as f32, w as f32, h as f32)?;
            mask.fill_path(&PathBuilder::from_rect(r), FillRule::Winding, false, self.zoom);
            Some(mask)
        });
    }

    /// PNG of the straight-alpha pixels: RGB when every pixel is opaque
    /// (the usual case; a third smaller), else RGBA.
    fn finish(self: Box<Self>) -> Result<Vec<u8>> {
        let pixels: Vec<tiny_skia::ColorU8> = self.pixmap.pixels().iter().map(|p| p.demultiply()).collect();
        let opaque = pixels.iter().all(|p| p.alpha() == 255);
        let data: Vec<u8> = if opaque {
            pixels.iter().flat_map(|p| [p.red(), p.green(), p.blue()]).collect()
        } else {
            pixels.iter().flat_map(|p| [p.red(), p.green(), p.blue(), p.alpha()]).collect()
        };
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.pixmap.width(), self.pixmap.height());
        encoder.set_color(if opaque { png::ColorType::Rgb } else { png::ColorType::Rgba });
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Best);
        encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        let encode = |e: png::EncodingError| GraphError::Encode(e.to_string());
        let mut writer = encoder.write_header().map_err(encode)?;
        writer.write_image_data(&data).map_err(encode)?;
        writer.finish().map_err(encode)?;
        Ok(out)
    }
}

/// The SVG surface.
pub(crate) struct SvgCanvas {
    body: String,
    width: u32,
    height: u32,
    zoom: f64,
    clips: usize,
    in_clip: bool,
    /// Gradients defined so far (their ids).
    gradients: usize,
}

impl SvgCanvas {
    /// `zoom` scales the document's size, not its coordinates.
    pub(crate) fn new(width: u32, height: u32, zoom: f64) -> SvgCanvas {
        SvgCanvas { body: String::new(), width, height, zoom, clips: 0, in_clip: false, gradients: 0 }
    }
}

/// `#rrggbb` plus an opacity attribute when not opaque.
fn svg_color(kind: &str, c: Rgba) -> String {
    let mut s = format!("{kind}=\"#{:02x}{:02x}{:02x}\"", c.r, c.g, c.b);
    if c.a != 255 {
        let _ = write!(s, " {kind}-opacity=\"{:.3}\"", f64::from(c.a) / 255.0);
    }
    s
}

fn svg_points(points: &[(f64, f64)], close: bool) -> String {
    let mut d = String::new();
    for (i, (x, y)) in points.iter().enumerate() {
        let _ = write!(d, "{}{:.2},{:.2}", if i == 0 { "M" } else { " L" }, x, y);
    }
    if close {
        d.push_str(" Z");
    }
    d
}

/// Text as XML character data.
fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push(' '),
            // XML 1.0 has no other control characters.
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

impl Canvas for SvgCanvas {
    fn fill_gradient(&mut self, points: &[(f64, f64)], from: (f64, Rgba), to: (f64, Rgba)) {
        if points.len() < 2 {
            return;
        }
        self.gradients += 1;
        let id = self.gradients;
        let stop = |offset: u8, c: Rgba| {
            format!(
                "<stop offset=\"{offset}\" stop-color=\"#{:02x}{:02x}{:02x}\" stop-opacity=\"{:.3}\"/>",
                c.r,
                c.g,
                c.b,
                f64::from(c.a) / 255.0
            )
        };
        let _ = writeln!(
            self.body,
            "<linearGradient id=\"g{id}\" gradientUnits=\"userSpaceOnUse\" x1=\"0\" y1=\"{:.2}\" x2=\"0\" \
             y2=\"{:.2}\">{}{}</linearGradient>\n<path d=\"{}\" fill=\"url(#g{id})\"/>",
            from.0,
            to.0,
            stop(0, from.1),
            stop(1, to.1),
            svg_points(points, true)
        );
    }

    fn fill(&mut self, points: &[(f64, f64)], color: Rgba) {
        if points.len() < 2 {
            return;
        }
        let _ =
            writeln!(self.body, "<path d=\"{}\" {}/>", svg_points(points, true), svg_color("fill", color));
    }

    fn stroke(&mut self, points: &[(f64, f64)], width: f64, color: Rgba, dash: Option<&[f64]>, round: bool) {
        if points.len() < 2 {
            return;
        }
        let _ = write!(
            self.body,
            "<path d=\"{}\" fill=\"none\" {} stroke-width=\"{width}\"",
            svg_points(points, false),
            svg_color("stroke", color)
        );
        if round {
            self.body.push_str(" stroke-linecap=\"round\" stroke-linejoin=\"round\"");
        }
        if let Some(d) = dash {
            let list: Vec<String> = d.iter().map(|v| v.to_string()).collect();
            let _ = write!(self.body, " stroke-dasharray=\"{}\"", list.join(","));
        }
        self.body.push_str("/>\n");
    }

    fn text(&mut self, spec: &TextSpec) {
        let (dx, dy) = spec.offset();
        let px = spec.size_pt * 100.0 / 72.0;
        let mut body = String::new();
        for run in spec.runs() {
            if !spec.markup {
                body.push_str(&xml_escape(&run.text));
                continue;
            }
            let _ = write!(body, "<tspan font-size=\"{:.2}px\"", px * run.scale);
            if run.rise_em != 0.0 {
                let _ = write!(body, " baseline-shift=\"{:.2}\"", run.rise_em * px);
            }
            if run.bold {
                body.push_str(" font-weight=\"bold\"");
            }
            if run.italic {
                body.push_str(" font-style=\"italic\"");
            }
            if let Some(c) = run.color {
                let _ = write!(body, " {}", svg_color("fill", c));
            }
            let _ = write!(body, ">{}</tspan>", xml_escape(&run.text));
        }
        let _ = writeln!(
            self.body,
            "<text transform=\"translate({:.2},{:.2}) rotate({:.1})\" x=\"{dx:.2}\" y=\"{dy:.2}\" \
             font-family=\"{}DejaVu Sans Mono,Bitstream Vera Sans Mono,monospace\" font-size=\"{px:.2}px\" \
             xml:space=\"preserve\" {}>{}</text>",
            spec.x,
            spec.y,
            -spec.angle,
            if spec.font.family().is_empty() {
                String::new()
            } else {
                format!("{},", xml_escape(spec.font.family()))
            },
            svg_color("fill", spec.color),
            body
        );
    }

    fn clip(&mut self, rect: Option<(f64, f64, f64, f64)>) {
        if self.in_clip {
            self.body.push_str("</g>\n");
            self.in_clip = false;
        }
        if let Some((x, y, w, h)) = rect {
            self.clips += 1;
            let _ = writeln!(
                self.body,
                "<clipPath id=\"clip{}\"><rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\"/></clipPath>\n\
                 <g clip-path=\"url(#clip{})\">",
                self.clips, self.clips
            );
            self.in_clip = true;
        }
    }

    fn finish(mut self: Box<Self>) -> Result<Vec<u8>> {
        self.clip(None);
        let mut out = String::with_capacity(self.body.len() + 256);
        let _ = writeln!(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{zw}pt\" height=\"{zh}pt\" viewBox=\"0 0 {w} {h}\" version=\"1.1\">",
            w = self.width,
            h = self.height,
            zw = (f64::from(self.width) * self.zoom) as u32,
            zh = (f64::from(self.height) * self.zoom) as u32,
        );
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        Ok(out.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_escapes_text_and_closes_groups() {
        let mut c: Box<dyn Canvas> = Box::new(SvgCanvas::new(20, 10, 1.0));
        c.clip(Some((0.0, 0.0, 5.0, 5.0)));
        c.fill(&[(0.0, 0.0), (5.0, 0.0), (5.0, 5.0)], Rgba::new(255, 0, 0, 128));
        c.text(&TextSpec {
            x: 1.0,
            y: 2.0,
            color: Rgba::new(0, 0, 0, 255),
            size_pt: 8.0,
            font: crate::text::font_named(None),
            bold_font: crate::text::font_named(None),
            tab_width: 40.0,
            angle: 90.0,
            h: HAlign::Center,
            v: VAlign::Center,
            text: "a<b&\"c\"",
            markup: false,
        });
        let svg = String::from_utf8(c.finish().unwrap()).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let text = doc.descendants().find(|n| n.has_tag_name("text")).and_then(|n| n.text());
        assert_eq!(text, Some("a<b&\"c\""));
        assert!(svg.contains("a&lt;b&amp;&quot;c&quot;"));
        assert!(svg.contains("fill-opacity=\"0.502\""));
        assert_eq!(svg.matches("<g ").count(), svg.matches("</g>").count());
    }

    #[test]
    fn png_draws_pixels() {
        let mut c: Box<dyn Canvas> = Box::new(PngCanvas::new(20, 20, 1.0).unwrap());
        c.fill(&[(0.0, 0.0), (20.0, 0.0), (20.0, 20.0), (0.0, 20.0)], Rgba::new(255, 255, 255, 255));
        c.stroke(&[(0.0, 10.5), (20.0, 10.5)], 1.0, Rgba::new(255, 0, 0, 255), None, false);
        let png = c.finish().unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
}

/// PDF or EPS: the raster drawn as for PNG (without grid fitting, as
/// RRDtool draws these), embedded as one full-page RGB image of the
/// image's size in points (1 pixel = 1 point, as Cairo's surfaces are).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Document {
    Pdf,
    Eps,
}

pub(crate) struct DocumentCanvas {
    raster: PngCanvas,
    kind: Document,
}

impl DocumentCanvas {
    pub(crate) fn new(width: u32, height: u32, zoom: f64, kind: Document) -> Result<DocumentCanvas> {
        Ok(DocumentCanvas { raster: PngCanvas::new(width, height, zoom)?, kind })
    }

    /// The pixels as RGB, composited over white.
    fn rgb(&self) -> Vec<u8> {
        let over_white = |c: u8, a: u8| (u16::from(c) + (255 - u16::from(a))).min(255) as u8;
        // Premultiplied: colour + (1 - alpha) * white.
        self.raster
            .pixmap
            .pixels()
            .iter()
            .flat_map(|p| {
                [
                    over_white(p.red(), p.alpha()),
                    over_white(p.green(), p.alpha()),
                    over_white(p.blue(), p.alpha()),
                ]
            })
            .collect()
    }
}

/// The zlib stream of an RGB PNG of the pixels (its IDAT data): what a PDF
/// image with `/FlateDecode` and PNG predictors (`/Predictor 15`) reads.
fn png_idat(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>> {
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Best);
    let encode = |e: png::EncodingError| GraphError::Encode(e.to_string());
    let mut writer = encoder.write_header().map_err(encode)?;
    writer.write_image_data(rgb).map_err(encode)?;
    writer.finish().map_err(encode)?;
    let mut idat = Vec::new();
    let mut at = 8; // the signature
    while at + 8 <= png_bytes.len() {
        let len = u32::from_be_bytes(png_bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        let kind = &png_bytes[at + 4..at + 8];
        let data = png_bytes
            .get(at + 8..at + 8 + len)
            .ok_or_else(|| GraphError::Encode("short PNG chunk".into()))?;
        if kind == b"IDAT" {
            idat.extend_from_slice(data);
        }
        at += 12 + len;
    }
    Ok(idat)
}

fn pdf(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>> {
    let image = png_idat(rgb, width, height)?;
    let mut out: Vec<u8> = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    let mut object = |out: &mut Vec<u8>, body: &[u8]| {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", offsets.len()).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    };
    object(&mut out, b"<< /Type /Catalog /Pages 2 0 R >>");
    object(&mut out, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>");
    object(
        &mut out,
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] \
             /Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>"
        )
        .as_bytes(),
    );
    let mut img = format!(
        "<< /Type /XObject /Subtype /Image /Width {width} /Height {height} /ColorSpace /DeviceRGB \
         /BitsPerComponent 8 /Filter /FlateDecode \
         /DecodeParms << /Predictor 15 /Colors 3 /BitsPerComponent 8 /Columns {width} >> \
         /Length {} >>\nstream\n",
        image.len()
    )
    .into_bytes();
    img.extend_from_slice(&image);
    img.extend_from_slice(b"\nendstream");
    object(&mut out, &img);
    let content = format!("q {width} 0 0 {height} 0 0 cm /Im0 Do Q");
    object(&mut out, format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()).as_bytes());
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", offsets.len() + 1).as_bytes());
    for o in &offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", offsets.len() + 1)
            .as_bytes(),
    );
    Ok(out)
}

fn eps(rgb: &[u8], width: u32, height: u32) -> Vec<u8> {
    let mut s = String::with_capacity(rgb.len() * 2 + rgb.len() / 32 + 512);
    let _ = write!(
        s,
        "%!PS-Adobe-3.0 EPSF-3.0\n%%Creator: rrdscale\n%%BoundingBox: 0 0 {width} {height}\n\
         %%HiResBoundingBox: 0 0 {width} {height}\n%%LanguageLevel: 2\n%%Pages: 1\n%%EndComments\n\
         %%Page: 1 1\ngsave\n{width} {height} scale\n\
         {width} {height} 8 [{width} 0 0 -{height} 0 {height}] currentfile /ASCIIHexDecode filter false 3 colorimage\n"
    );
    for line in rgb.chunks(36) {
        for b in line {
            let _ = write!(s, "{b:02x}");
        }
        s.push('\n');
    }
    s.push_str(">\ngrestore\nshowpage\n%%EOF\n");
    s.into_bytes()
}

impl Canvas for DocumentCanvas {
    fn fill(&mut self, points: &[(f64, f64)], color: Rgba) {
        self.raster.fill(points, color);
    }

    fn fill_gradient(&mut self, points: &[(f64, f64)], from: (f64, Rgba), to: (f64, Rgba)) {
        self.raster.fill_gradient(points, from, to);
    }

    fn stroke(&mut self, points: &[(f64, f64)], width: f64, color: Rgba, dash: Option<&[f64]>, round: bool) {
        self.raster.stroke(points, width, color, dash, round);
    }

    fn text(&mut self, spec: &TextSpec) {
        self.raster.text(spec);
    }

    fn clip(&mut self, rect: Option<(f64, f64, f64, f64)>) {
        self.raster.clip(rect);
    }

    fn finish(self: Box<Self>) -> Result<Vec<u8>> {
        let rgb = self.rgb();
        let (w, h) = (self.raster.pixmap.width(), self.raster.pixmap.height());
        match self.kind {
            Document::Pdf => pdf(&rgb, w, h),
            Document::Eps => Ok(eps(&rgb, w, h)),
        }
    }
}
