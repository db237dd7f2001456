//! A file and its definition → a picture, or the numbers drawn.
//!
//! [`View`] is everything a picture depends on, all of it in the URL
//! query (range, CF, percentile, size), so a link reproduces the view.
//! [`elements`] turns a [`super::defs::Def`] into DEF/CDEF/VDEF and
//! LINE/AREA elements over the file's token (see [`super::source`]);
//! [`png`] draws them and returns the plot area's geometry as rrdtool's
//! graphv names it (`graph_left`, `graph_top`, `graph_width`,
//! `graph_height`, `graph_start`, `graph_end`), which the page's
//! drag-to-zoom maps pixels to seconds with; [`export`] gives the same
//! lines' numbers (xport), for CSV and JSON.
//!
//! Thumbnails are drawn on demand and kept in a [`ThumbCache`] bounded
//! in bytes and in age.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rrd_engine::root::Root;
use rrd_engine::Rrd;

use super::defs::{Def, Subject, PALETTE};
use super::source::{token, TreeSource};
use super::TreeError;
use crate::field::untrusted_field;

/// Bytes of thumbnails kept (a 300×100 thumbnail is about 10 KB).
pub const THUMB_CACHE_BYTES: usize = 32 << 20;

/// How long a kept thumbnail is served (the files change every step).
pub const THUMB_MAX_AGE: Duration = Duration::from_secs(60);

/// The largest picture drawn.
pub const MAX_WIDTH: i64 = 2000;
pub const MAX_HEIGHT: i64 = 1000;

/// The longest range drawn (twenty years).
pub const MAX_RANGE_SECS: i64 = 20 * 366 * 86_400;

/// The range presets, as `range=` names them.
pub const PRESETS: [(&str, i64); 5] =
    [("hour", 3600), ("day", 86_400), ("week", 7 * 86_400), ("month", 31 * 86_400), ("year", 366 * 86_400)];

/// What one picture shows.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub start: i64,
    pub end: i64,
    /// AVERAGE, MIN, MAX or LAST.
    pub cf: String,
    /// The percentile line (`None`: none), over the known values
    /// (`PERCENTNAN`: a range with gaps still has one).
    pub pct: Option<f64>,
    pub width: i64,
    pub height: i64,
    /// A thumbnail: no legend, no percentile.
    pub thumb: bool,
}

impl View {
    /// The view a query asks for (`start`, `end` in epoch seconds, or
    /// `range=hour|day|week|month|year` ending at `end`; `cf`; `pct`
    /// (0 for none); `w`, `h`; `thumb=1`).
    pub fn parse(q: &HashMap<String, String>, now: i64) -> Result<View, TreeError> {
        let num = |k: &str| -> Result<Option<i64>, TreeError> {
            q.get(k)
                .filter(|v| !v.is_empty())
                .map(|v| {
                    v.trim()
                        .parse::<i64>()
                        .map_err(|_| TreeError::Param(format!("{k} must be a whole number")))
                })
                .transpose()
        };
        let thumb = q.get("thumb").is_some_and(|v| v == "1");
        let end = num("end")?.unwrap_or(now);
        let mut start = num("start")?.unwrap_or(end - 86_400);
        if let Some(r) = q.get("range").filter(|r| !r.is_empty()) {
            let secs = PRESETS.iter().find(|(n, _)| n == r).map(|p| p.1);
            start = end
                - secs.ok_or_else(|| {
                    TreeError::Param(format!("range must be one of hour, day, week, month, year, not '{r}'"))
                })?;
        }
        if end - start < 10 || end - start > MAX_RANGE_SECS || start < 0 {
            return Err(TreeError::Param("start must be before end, by 10 s to 20 years".into()));
        }
        let cf = q.get("cf").map_or("AVERAGE", String::as_str).to_ascii_uppercase();
        if !matches!(cf.as_str(), "AVERAGE" | "MIN" | "MAX" | "LAST") {
            return Err(TreeError::Param("cf must be AVERAGE, MIN, MAX or LAST".into()));
        }
        let pct = match q.get("pct").filter(|v| !v.is_empty()) {
            None => (!thumb).then_some(95.0),
            Some(v) => match v.parse::<f64>() {
                Ok(0.0) => None,
                Ok(p) if p > 0.0 && p <= 100.0 => Some(p),
                _ => return Err(TreeError::Param("pct must be a number from 0 (none) to 100".into())),
            },
        };
        let (dw, dh) = if thumb { (300, 100) } else { (800, 250) };
        let width = num("w")?.unwrap_or(dw);
        let height = num("h")?.unwrap_or(dh);
        if !(20..=MAX_WIDTH).contains(&width) || !(20..=MAX_HEIGHT).contains(&height) {
            return Err(TreeError::Param(format!("w must be 20 to {MAX_WIDTH} and h 20 to {MAX_HEIGHT}")));
        }
        Ok(View { start, end, cf, pct, width, height, thumb })
    }
}

/// What a file's header says, for the definition and the CF choice.
#[derive(Clone, Debug)]
pub struct FileInfo {
    pub ds: Vec<String>,
    /// The CFs of its archives, each once, in archive order.
    pub cfs: Vec<String>,
    pub step_secs: u64,
    pub last_update: i64,
}

/// Reads `path`'s header through `root` (read-only).
pub fn file_info(root: &Root, path: &Path) -> Result<FileInfo, TreeError> {
    let rrd = Rrd::open_in(root, path, false)?;
    let h = &rrd.header;
    let mut cfs: Vec<String> = Vec::new();
    for r in h.rra() {
        let name = r.cf.name().to_string();
        if matches!(name.as_str(), "AVERAGE" | "MIN" | "MAX" | "LAST") && !cfs.contains(&name) {
            cfs.push(name);
        }
    }
    Ok(FileInfo {
        ds: h.ds().iter().map(|d| d.name.as_str().to_string()).collect(),
        cfs,
        step_secs: h.pdp_step(),
        last_update: h.live().last_up,
    })
}

/// One file of a drawing: its names (for the templates) and header.
pub struct Member {
    /// The file name without `.rrd`.
    pub file: String,
    /// The parent directory's name.
    pub dir: String,
    pub info: FileInfo,
    /// What Munin's datafile says of the file, when it is Munin's.
    pub munin: Option<super::munin::Field>,
}

impl Member {
    fn subject(&self) -> Subject<'_> {
        Subject { file: &self.file, dir: &self.dir, ds: &self.info.ds }
    }
}

/// The elements drawing `def` over `members` (file `j` is token `fj`),
/// and the drawn variables with their legends (for xport). A group
/// draws the definition's lines once per member.
pub fn elements(def: &Def, members: &[Member], view: &View) -> (Vec<String>, Vec<(String, String)>) {
    let cfs = &members.first().map(|m| &m.info.cfs);
    let cf = if cfs.is_some_and(|c| c.contains(&view.cf)) { view.cf.as_str() } else { "AVERAGE" };
    let mut els = Vec::new();
    let mut drawn: Vec<(String, String)> = Vec::new();
    let mut colors = PALETTE.iter().cycle();
    for (j, m) in members.iter().enumerate() {
        let s = m.subject();
        for line in &def.lines {
            let names = m.info.ds.iter().filter(|d| line.ds == "*" || **d == line.ds);
            for ds in names {
                let i = drawn.len();
                let munin = m.munin.as_ref();
                let color = match munin.and_then(|f| f.colour.clone()).or_else(|| line.color.clone()) {
                    Some(c) => c,
                    None => colors.next().copied().unwrap_or("0000ff").into(),
                };
                let label = match munin.and_then(|f| f.label.clone()) {
                    Some(l) => l,
                    None => s.fill(&line.label, ds),
                };
                let label = if label.is_empty() { ds.clone() } else { label };
                let draw = munin.and_then(|f| f.draw.as_deref()).unwrap_or(&line.draw);
                els.push(format!("DEF:d{i}={}:{ds}:{cf}", token(j)));
                els.push(format!("CDEF:v{i}=d{i},{},*", line.scale));
                // STACK needs something under it: the first is an AREA.
                let (kind, stack) = match draw {
                    "STACK" if i > 0 => ("AREA", ":STACK"),
                    "STACK" => ("AREA", ""),
                    k => (k, ""),
                };
                let legend = if view.thumb { String::new() } else { untrusted_field(&label) };
                els.push(format!("{kind}:v{i}#{color}:{legend}{stack}"));
                if !view.thumb {
                    for (f, name) in [("LAST", "cur"), ("AVERAGE", "avg"), ("MAX", "max")] {
                        els.push(format!("GPRINT:v{i}:{f}:{name} %6.2lf%s"));
                    }
                    els.push("COMMENT:\\l".into());
                }
                if let Some(p) = view.pct.filter(|_| !view.thumb && line.scale > 0.0 && stack.is_empty()) {
                    els.push(format!("VDEF:p{i}=v{i},{p},PERCENTNAN"));
                    els.push(format!("HRULE:p{i}#{color}80:{p}th percentile\\l:dashes"));
                }
                drawn.push((format!("v{i}"), label));
            }
        }
    }
    (els, drawn)
}

/// The plot area of a drawn picture, as rrdtool's graphv names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Geometry {
    pub graph_left: i64,
    pub graph_top: i64,
    pub graph_width: i64,
    pub graph_height: i64,
    pub graph_start: i64,
    pub graph_end: i64,
}

/// A picture and where its plot area is.
#[derive(Debug)]
pub struct Png {
    pub bytes: Vec<u8>,
    pub geometry: Geometry,
}

/// What to draw: one file, or a group definition over files of one
/// directory; where they are and how to read them.
pub struct Target<'a> {
    pub root: &'a Root,
    pub paths: Vec<PathBuf>,
    /// The group definition's index ([`super::defs::Defs::group`]).
    pub group: Option<usize>,
    pub daemon: Option<&'a str>,
}

/// A file's name without `.rrd` and its parent directory's name.
fn names(path: &Path) -> (String, String) {
    let file = path.file_name().map(super::confine::shown).unwrap_or_default();
    let file = file.strip_suffix(".rrd").unwrap_or(&file).to_string();
    let dir = path.parent().and_then(Path::file_name).map(super::confine::shown).unwrap_or_default();
    (file, dir)
}

/// A target's definition, members, title and vertical label.
pub fn plan<'d>(
    defs: &'d super::defs::Defs,
    t: &Target,
) -> Result<(&'d Def, Vec<Member>, String, String), TreeError> {
    let mut members = Vec::with_capacity(t.paths.len());
    for p in &t.paths {
        let (file, dir) = names(p);
        members.push(Member { file, dir, info: file_info(t.root, p)?, munin: None });
    }
    let first = members.first().ok_or(TreeError::NotFound)?;
    let def = match t.group {
        Some(g) => defs.group(g).ok_or(TreeError::NotFound)?,
        None => defs.find(&first.subject()),
    };
    if super::defs::Defs::is_munin(def) {
        for (m, p) in members.iter_mut().zip(&t.paths) {
            m.munin = defs.munin.field_of(t.root, p, &m.file);
        }
    }
    let first = &members[0];
    let s = first.subject();
    let munin = first.munin.as_ref();
    let title = match (defs.mrtg_title(def, &first.file), munin.and_then(|f| f.title.as_deref())) {
        (Some(t), _) | (None, Some(t)) => t.to_string(),
        (None, None) => s.fill(&def.title, ""),
    };
    let title = if title.is_empty() { first.file.clone() } else { title };
    let vlabel = match munin.and_then(|f| f.vlabel.as_deref()) {
        Some(v) => v.to_string(),
        None => s.fill(&def.vlabel, ""),
    };
    Ok((def, members, title, vlabel))
}

/// Draws `t`.
pub fn png(defs: &super::defs::Defs, t: &Target, view: &View, now: i64) -> Result<Png, TreeError> {
    let (def, members, title, vertical_label) = plan(defs, t)?;
    let (els, _) = elements(def, &members, view);
    let o = rrd_graph::Options {
        start: view.start.to_string(),
        end: view.end.to_string(),
        width: view.width,
        height: view.height,
        title,
        vertical_label,
        no_legend: view.thumb,
        slope_mode: true,
        // Areas stand on zero, unless a line is drawn mirrored below it.
        lower_limit: if def.lines.iter().all(|l| l.scale > 0.0)
            && def.lines.iter().any(|l| l.draw != "LINE1" && l.draw != "LINE2" && l.draw != "LINE3")
        {
            0.0
        } else {
            f64::NAN
        },
        ..Default::default()
    };
    let mut source = TreeSource { root: t.root, files: &t.paths, daemon: t.daemon };
    let out = rrd_graph::render_with(&o, &els, now, &mut source)?;
    let mut g = Geometry::default();
    for (k, v) in &out.info {
        if let rrd_graph::InfoValue::Count(n) = v {
            match k.as_str() {
                "graph_left" => g.graph_left = *n,
                "graph_top" => g.graph_top = *n,
                "graph_width" => g.graph_width = *n,
                "graph_height" => g.graph_height = *n,
                "graph_start" => g.graph_start = *n,
                "graph_end" => g.graph_end = *n,
                _ => {}
            }
        }
    }
    let bytes =
        out.image.ok_or_else(|| TreeError::Param("the definition draws nothing for this file".into()))?;
    Ok(Png { bytes, geometry: g })
}

/// The numbers `png` would draw: one column per line, at about one row
/// per pixel (xport's `--maxrows` = the width).
pub fn export(
    defs: &super::defs::Defs,
    t: &Target,
    view: &View,
    now: i64,
) -> Result<rrd_engine::xport::XportResult, TreeError> {
    let (def, members, _, _) = plan(defs, t)?;
    let thumbless = View { thumb: true, pct: None, ..view.clone() };
    let (mut els, vars) = elements(def, &members, &thumbless);
    els.retain(|e| e.starts_with("DEF:") || e.starts_with("CDEF:"));
    for (v, label) in &vars {
        els.push(format!("XPORT:{v}:{}", untrusted_field(label)));
    }
    let range = rrd_engine::xport::XportRange {
        start: view.start,
        end: view.end,
        step_secs: 0,
        max_rows: view.width,
        now,
    };
    let mut source = TreeSource { root: t.root, files: &t.paths, daemon: t.daemon };
    Ok(rrd_engine::xport::xport_with(&range, &els, &mut source)?)
}

/// An export as CSV: `time` (epoch seconds) then one column per line;
/// unknown values are empty cells.
pub fn csv(r: &rrd_engine::xport::XportResult) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut out = String::from("time");
    for l in &r.legends {
        out.push(',');
        out.push_str(&quote(l));
    }
    out.push('\n');
    let cols = r.legends.len().max(1);
    for (i, row) in r.data.chunks(cols).enumerate() {
        out.push_str(&(r.start + (i as i64 + 1) * r.step_secs).to_string());
        for v in row {
            out.push(',');
            if v.is_finite() {
                out.push_str(&v.to_string());
            }
        }
        out.push('\n');
    }
    out
}

/// An export as JSON: `{"start", "end", "step", "columns": [...],
/// "rows": [[time, v...]]}` with unknown values `null`.
pub fn json(r: &rrd_engine::xport::XportResult) -> serde_json::Value {
    let cols = r.legends.len().max(1);
    let rows: Vec<serde_json::Value> = r
        .data
        .chunks(cols)
        .enumerate()
        .map(|(i, row)| {
            let mut v = vec![serde_json::json!(r.start + (i as i64 + 1) * r.step_secs)];
            v.extend(row.iter().map(|x| serde_json::json!(x)));
            serde_json::Value::Array(v)
        })
        .collect();
    serde_json::json!({"start": r.start, "end": r.end, "step": r.step_secs, "columns": r.legends, "rows": rows})
}

/// Kept thumbnails by URL (when drawn, the picture) and their bytes.
type Kept = (HashMap<String, (Instant, Arc<Png>)>, usize);

/// Thumbnails drawn lately, by URL, bounded in bytes and age.
pub struct ThumbCache {
    cap_bytes: usize,
    kept: Mutex<Kept>,
}

impl ThumbCache {
    pub fn new(cap_bytes: usize) -> ThumbCache {
        ThumbCache { cap_bytes, kept: Mutex::new((HashMap::new(), 0)) }
    }

    pub fn get(&self, key: &str) -> Option<Arc<Png>> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.0.get(key).filter(|(at, _)| at.elapsed() < THUMB_MAX_AGE).map(|(_, p)| p.clone())
    }

    pub fn put(&self, key: String, png: Arc<Png>) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let size = png.bytes.len() + key.len();
        if size > self.cap_bytes {
            return;
        }
        if kept.1 + size > self.cap_bytes {
            // Emptied when full: a refill costs one draw per thumbnail.
            kept.0.clear();
            kept.1 = 0;
        }
        if let Some((_, old)) = kept.0.insert(key.clone(), (Instant::now(), png)) {
            kept.1 -= old.bytes.len() + key.len();
        }
        kept.1 += size;
    }
}
