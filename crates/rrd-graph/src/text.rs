//! Text metrics and glyph outlines from the bundled DejaVu Sans Mono, the
//! font RRDtool 1.7.2 asks for first.
//!
//! RRDtool measures text with Pango at 100 dpi with hinted metrics, so a
//! glyph advances a whole number of pixels and a line is as tall as its
//! rounded-up ascent plus rounded-up descent. [`Font`] reproduces those
//! numbers (the legend layout and the image size depend on them); the
//! text itself is drawn by Pango (`render::text`). Tabs advance to the
//! next multiple of the tab width.
//!
//! The font file is compiled in (`fonts/DejaVuSansMono.ttf`, Bitstream
//! Vera licence, see `fonts/LICENSE-DejaVu.txt`), so a graph looks the same
//! on every machine. `--font TAG:SIZE:FONT` names other fonts as a Pango
//! description (a comma-separated family list, then `Bold`, `Italic`,
//! `Oblique`, `Condensed`; a size there is ignored, as rrdtool sets its
//! own): [`font_named`] finds the first family among the TrueType and
//! OpenType files of the machine's font directories (`monospace`, `sans`,
//! `serif`, Courier, Helvetica, Arial, Times are DejaVu's, as fontconfig's
//! aliases make them), and falls back to DejaVu Sans, as fontconfig does
//! on Debian, then to the bundled font.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use ab_glyph::{Font as _, FontRef};

static FONT_BYTES: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");

/// The resolution RRDtool gives Pango.
const DPI: f64 = 100.0;

pub(crate) struct Font {
    font: FontRef<'static>,
}

/// The bundled font, parsed once.
pub(crate) fn font() -> &'static Font {
    static FONT: OnceLock<Font> = OnceLock::new();
    FONT.get_or_init(|| Font { font: FontRef::try_from_slice(FONT_BYTES).expect("the bundled font parses") })
}

/// Where fonts are looked for.
const FONT_DIRS: &[&str] = &["/usr/share/fonts", "/usr/local/share/fonts"];

/// A family name as compared: lower case, no spaces, dashes or underscores.
fn normalize(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, ' ' | '-' | '_')).flat_map(char::to_lowercase).collect()
}

/// Every font file found: (normalized family, lower-case style, path).
/// A regular face is also listed under its full name ("DejaVuSans").
fn font_index() -> &'static Vec<(String, String, PathBuf)> {
    static INDEX: OnceLock<Vec<(String, String, PathBuf)>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut out = Vec::new();
        let mut dirs: Vec<PathBuf> = FONT_DIRS.iter().map(PathBuf::from).collect();
        let mut seen = 0;
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for e in entries.flatten() {
                let path = e.path();
                // Bounded: a huge font tree must not stall a graph.
                seen += 1;
                if seen > 20_000 {
                    return out;
                }
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("").to_ascii_lowercase();
                if ext != "ttf" && ext != "otf" {
                    continue;
                }
                let Ok(bytes) = std::fs::read(&path) else { continue };
                let Ok(face) = ttf_parser::Face::parse(&bytes, 0) else { continue };
                let name = |id: u16| {
                    face.names()
                        .into_iter()
                        .find(|n| n.name_id == id && n.is_unicode())
                        .and_then(|n| n.to_string())
                };
                let family = name(16).or_else(|| name(1)).unwrap_or_default();
                let style = name(17).or_else(|| name(2)).unwrap_or_default().to_ascii_lowercase();
                if is_regular(&style) {
                    if let Some(full) = name(4) {
                        out.push((normalize(&full), style.clone(), path.clone()));
                    }
                }
                out.push((normalize(&family), style, path));
            }
        }
        out
    })
}

fn is_regular(style: &str) -> bool {
    matches!(style, "book" | "regular" | "roman" | "normal" | "")
}

/// The file of the first family of a Pango font description found here,
/// in the weight and slant it asks for (`Bold`, `Italic`, `Oblique`).
fn find_font_file(desc: &str) -> Option<PathBuf> {
    let index = font_index();
    let mut families: Vec<String> = desc.split(',').map(str::to_string).collect();
    let (mut bold, mut italic, mut condensed) = (false, false, false);
    // Style words and a size may follow the last family.
    if let Some(last) = families.last_mut() {
        let mut words: Vec<&str> = last.split_whitespace().collect();
        while words.len() > 1 {
            let w = words[words.len() - 1].to_ascii_lowercase();
            match w.as_str() {
                "bold" | "heavy" | "semi-bold" | "ultra-bold" => bold = true,
                "italic" | "oblique" => italic = true,
                "condensed" => condensed = true,
                "book" | "regular" | "normal" | "light" | "medium" => {}
                _ if w.trim_end_matches("px").parse::<f64>().is_ok() => {}
                _ => break,
            }
            words.pop();
        }
        *last = words.join(" ");
    }
    // fontconfig's aliases on Debian.
    let generic = |n: &str| match n {
        "monospace" | "mono" | "courier" | "couriernew" | "fixed" => "dejavusansmono".to_string(),
        "sans" | "sansserif" | "helvetica" | "arial" | "verdana" => "dejavusans".to_string(),
        "serif" | "times" | "timesnewroman" | "georgia" => "dejavuserif".to_string(),
        other => other.to_string(),
    };
    let lookup = |want: &str| {
        index
            .iter()
            .filter(|(name, _, _)| name == want)
            .min_by_key(|(_, style, _)| {
                let b = style.contains("bold");
                let i = style.contains("italic") || style.contains("oblique");
                // Widths and other weights (Condensed, ExtraLight) only
                // when nothing else has the family.
                let c = style.contains("condensed");
                let other = style.split_whitespace().any(|w| {
                    !matches!(
                        w,
                        "bold" | "italic" | "oblique" | "book" | "regular" | "roman" | "normal" | "condensed"
                    )
                });
                (b != bold) as u8 + (i != italic) as u8 + 2 * (other as u8 + (c != condensed) as u8)
            })
            .map(|(_, _, p)| p.clone())
    };
    families
        .iter()
        .map(|f| generic(&normalize(f.trim())))
        .filter(|f| !f.is_empty())
        .find_map(|f| lookup(&f))
        .or_else(|| lookup("dejavusans"))
}

/// The font a `--font` description names (see the module docs); the
/// bundled font when `desc` is `None` or nothing is found.
pub(crate) fn font_named(desc: Option<&str>) -> &'static Font {
    let Some(desc) = desc else { return font() };
    static LOADED: OnceLock<Mutex<HashMap<String, &'static Font>>> = OnceLock::new();
    let loaded = LOADED.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = loaded.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = map.get(desc) {
        return f;
    }
    let found = find_font_file(desc).and_then(|path| load(&path));
    let f = found.unwrap_or_else(font);
    // Bounded: each distinct description is looked up once per process.
    if map.len() < 64 {
        map.insert(desc.to_string(), f);
    }
    f
}

/// A font file, kept for the life of the process (few distinct files).
fn load(path: &Path) -> Option<&'static Font> {
    static FILES: OnceLock<Mutex<HashMap<PathBuf, &'static Font>>> = OnceLock::new();
    let files = FILES.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = files.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = map.get(path) {
        return Some(f);
    }
    if map.len() >= 16 {
        return None;
    }
    let bytes: &'static [u8] = Box::leak(std::fs::read(path).ok()?.into_boxed_slice());
    let font = FontRef::try_from_slice(bytes).ok()?;
    let f: &'static Font = Box::leak(Box::new(Font { font }));
    map.insert(path.to_path_buf(), f);
    Some(f)
}

impl Font {
    /// Font units to pixels at `size_pt`.
    fn scale(&self, size_pt: f64) -> f64 {
        size_pt * DPI / 72.0 / f64::from(self.font.units_per_em().unwrap_or(2048.0))
    }

    fn glyph(&self, c: char) -> ab_glyph::GlyphId {
        let id = self.font.glyph_id(c);
        if id.0 == 0 {
            self.font.glyph_id('?')
        } else {
            id
        }
    }

    /// The hinted advance of `c` in whole pixels.
    fn advance(&self, c: char, size_pt: f64) -> f64 {
        (f64::from(self.font.h_advance_unscaled(self.glyph(c))) * self.scale(size_pt)).round()
    }

    /// Walks `text`, calling `f(char, pen_x)` for each drawn character;
    /// returns the total width.
    fn layout(&self, text: &str, size_pt: f64, tab_width: f64, mut f: impl FnMut(char, f64)) -> f64 {
        let mut x = 0.0;
        let mut prev: Option<char> = None;
        for c in text.chars() {
            if c == '\t' {
                prev = None;
                // `tab_width` is the distance between tab stops (see
                // `graph::tab_period` for rrdtool's).
                let tab = if tab_width > 0.0 { tab_width } else { 56.0 };
                x = ((x / tab).floor() + 1.0) * tab;
                continue;
            }
            if c.is_control() {
                continue;
            }
            if let Some(p) = prev {
                x += self.kern(p, c, size_pt);
            }
            prev = Some(c);
            f(c, x);
            x += self.advance(c, size_pt);
        }
        x
    }

    /// The pair kerning between `a` and `b` (the font's `kern` table), in
    /// whole pixels as hinted layout places glyphs.
    fn kern(&self, a: char, b: char, size_pt: f64) -> f64 {
        let k = f64::from(self.font.kern_unscaled(self.glyph(a), self.glyph(b)));
        if k == 0.0 {
            0.0
        } else {
            (k * self.scale(size_pt)).round()
        }
    }

    /// Width of `text` as RRDtool's `gfx_get_text_width` reports it.
    pub(crate) fn text_width(&self, text: &str, size_pt: f64, tab_width: f64) -> f64 {
        self.layout(text, size_pt, tab_width, |_, _| {})
    }

    /// Width of `text` measured on a surface scaled by `zoom` (rrdtool's
    /// `--zoom`, after the first text is drawn): glyphs advance whole
    /// device pixels, and the width in image pixels is rounded up.
    pub(crate) fn text_width_zoomed(&self, text: &str, size_pt: f64, tab_width: f64, zoom: f64) -> f64 {
        if zoom == 1.0 {
            return self.text_width(text, size_pt, tab_width);
        }
        (self.advance_zoomed(text, size_pt, tab_width, zoom) - 1e-9).ceil().max(0.0)
    }

    /// [`Font::text_width_zoomed`] before the rounding up.
    pub(crate) fn advance_zoomed(&self, text: &str, size_pt: f64, tab_width: f64, zoom: f64) -> f64 {
        if zoom == 1.0 {
            return self.text_width(text, size_pt, tab_width);
        }
        let mut x = 0.0;
        for c in text.chars() {
            if c == '\t' {
                let tab = if tab_width > 0.0 { tab_width } else { 56.0 };
                x = ((x / tab).floor() + 1.0) * tab;
                continue;
            }
            if c.is_control() {
                continue;
            }
            x += self.advance(c, size_pt * zoom) / zoom;
        }
        x
    }

    /// Pixels from the top of a line to its baseline.
    pub(crate) fn ascent(&self, size_pt: f64) -> f64 {
        (f64::from(self.font.ascent_unscaled()) * self.scale(size_pt)).ceil()
    }

    /// Pixels from the baseline to the bottom of a line.
    pub(crate) fn descent(&self, size_pt: f64) -> f64 {
        (-f64::from(self.font.descent_unscaled()) * self.scale(size_pt)).ceil()
    }

    /// Line height as RRDtool's `gfx_get_text_height` reports it (the same
    /// at any `--zoom`, as rrdtool's is).
    pub(crate) fn text_height(&self, size_pt: f64) -> f64 {
        self.ascent(size_pt) + self.descent(size_pt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers below are what rrdtool 1.7.2 reported (graphv's
    /// image_width and legend coords) with this font.
    #[test]
    fn metrics_match_rrdtools_pango() {
        let f = font();
        // "0" at the axis size: 6 px (a 481 px wide default image).
        assert_eq!(f.text_width("0", 7.0, 40.0), 6.0);
        // Legends at 8 pt: 7 px a character, 14 px a line.
        assert_eq!(f.text_width("  foo", 8.0, 40.0), 35.0);
        assert_eq!(f.text_width(" 89.99 ", 8.0, 40.0), 49.0);
        assert_eq!(f.text_height(8.0), 14.0);
        // Tab stops every 56 px (rrdtool's default tabwidth + 16).
        assert_eq!(f.text_width("a\tb", 8.0, 56.0), 63.0);
        assert_eq!(f.text_width("a\t\tb", 8.0, 116.0), 239.0);
    }

    #[test]
    fn font_descriptions_find_the_machines_fonts() {
        // Needs Debian's fonts-dejavu-core (rrdtool's default fonts), which
        // .ci/run installs: a missing package fails the test, never skips it.
        assert!(
            Path::new("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf").exists(),
            "fonts-dejavu-core is not installed: run .ci/run or apt-get install fonts-dejavu-core"
        );
        let file =
            |d: &str| find_font_file(d).and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        assert_eq!(file("DejaVu Sans Bold").as_deref(), Some("DejaVuSans-Bold.ttf"));
        assert_eq!(file("DejaVuSans,DejaVu Sans").as_deref(), Some("DejaVuSans.ttf"));
        assert_eq!(file("Courier").as_deref(), Some("DejaVuSansMono.ttf"));
        assert_eq!(file("DejaVu Serif 12").as_deref(), Some("DejaVuSerif.ttf"));
        assert_eq!(file("DejaVu Sans Condensed").as_deref(), Some("DejaVuSansCondensed.ttf"));
        // Unknown families are DejaVu Sans, as fontconfig picks.
        assert_eq!(file("No Such Font").as_deref(), Some("DejaVuSans.ttf"));
        assert_eq!(file("DejaVuSans-Bold").as_deref(), Some("DejaVuSans.ttf"));
    }
}
