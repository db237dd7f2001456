//! Grafana's view of the trees: grafana-rrd-server's API under
//! `/grafana/` (Grafana's SimpleJSON/JSON data sources), and a plain JSON
//! endpoint for the Infinity data source.
//!
//! The shapes are grafana-rrd-server's, so existing dashboards keep
//! working:
//! - `GET /grafana/`: 200 `{"message":"hello"}` (the "test" button);
//! - `POST /grafana/search` `{"target": "sub"}`: every `path:ds` whose
//!   text contains `sub` (an empty target: `[]`); `path` is the file's
//!   path relative to the tree, `/` written `:`, `.rrd` dropped. With
//!   several trees each name starts with the tree's name and a `:`;
//! - `POST /grafana/query` (`range.from`/`range.to` in RFC 3339,
//!   `targets[].target` where a file component may hold a glob: `*`, `?`,
//!   `[...]`, and `maxDataPoints`): `[{"target", "datapoints": [[value,
//!   ms], ...]}]`, one entry per file matched, unknown values left out;
//!   a target that matches nothing gives no entry;
//! - `POST /grafana/annotations` (`range.from`/`range.to`): the rows of
//!   `--tree-annotations FILE` in that range, `[{"annotation", "time",
//!   "title", "tags", "text"}]` (module `annotations`); `[]` without
//!   the option.
//!
//! Numbers: without `maxDataPoints` a target's rows are exactly `rrdtool
//! fetch FILE CF -s from -e to`'s (archive chosen the same way, every row
//! kept: grafana-rrd-server drops the last one, and stamps rows one step
//! early, which this server does not copy). With `maxDataPoints` the
//! archive is chosen and its rows consolidated as `rrdtool graph`/`xport`
//! do for that many pixels (`--maxrows`). The CF is AVERAGE unless the
//! target object, or the request, has `"cf": "MAX"` (or MIN, LAST): a
//! JSON field rather than a target suffix, since a DS may be named `MAX`.
//!
//! Infinity: `GET /api/tree/{tree}/{path}.json?start=&end=&cf=&maxDataPoints=`
//! gives `[{"time": ISO-8601, "<ds>": value or null, ...}]`, one row per
//! row of the file (every DS).

use std::path::{Path as FsPath, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use rrd_engine::xport::{FetchRequest, FetchSource, XportRange};
use rrd_format::Cf;

use super::defs::glob;
use super::draw::file_info;
use super::source::{token, TreeSource};
use super::{Tree, TreeError, Trees};
use crate::App;

/// Files a search lists at most (each a header read, kept for
/// [`SEARCH_MAX_AGE`]).
pub const MAX_SEARCH_FILES: usize = 200_000;

/// How long a search list is reused before the trees are read again.
pub const SEARCH_MAX_AGE: Duration = Duration::from_secs(60);

/// Files one query target may match.
pub const MAX_TARGET_FILES: usize = 1000;

/// The most rows one series returns (a longer range is consolidated).
pub const MAX_POINTS: i64 = 100_000;

/// The last search list and when it was made.
#[derive(Default)]
pub struct SearchCache {
    kept: Mutex<Option<(Instant, Arc<Vec<String>>)>>,
}

fn cors(body: Value) -> Response {
    let mut r = Json(body).into_response();
    r.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, header::HeaderValue::from_static("*"));
    r
}

pub async fn hello() -> Response {
    cors(json!({"message": "hello"}))
}

#[derive(Deserialize)]
struct AnnotationRequest {
    range: Range,
}

/// Grafana's annotations between the request's times (see the module
/// doc); a file that cannot be read or parsed is a 500 naming why.
pub async fn annotations(State(app): State<Arc<App>>, body: axum::body::Bytes) -> Response {
    let Some(path) = app.trees.annotations.clone() else { return cors(json!([])) };
    let req: AnnotationRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad(format!("the annotation query is not grafana's JSON: {e}")),
    };
    let (Some(from), Some(to)) = (parse_rfc3339(&req.range.from), parse_rfc3339(&req.range.to)) else {
        return bad("range.from and range.to must be RFC 3339 times".into());
    };
    let read = tokio::task::spawn_blocking(move || {
        super::annotations::between(&path, from.saturating_mul(1000), to.saturating_mul(1000))
    })
    .await;
    match read {
        Ok(Ok(rows)) => cors(Value::Array(rows)),
        Ok(Err(e)) => {
            let mut r = cors(json!({"message": e.to_string()}));
            *r.status_mut() = axum::http::StatusCode::INTERNAL_SERVER_ERROR;
            r
        }
        Err(_) => (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "reading the annotations failed\n")
            .into_response(),
    }
}

#[derive(Deserialize)]
pub struct SearchRequest {
    #[serde(default)]
    target: String,
}

pub async fn search(State(app): State<Arc<App>>, body: axum::body::Bytes) -> Response {
    let req: SearchRequest = serde_json::from_slice(&body).unwrap_or(SearchRequest { target: String::new() });
    if req.target.is_empty() {
        return cors(json!([]));
    }
    crate::reply::run(move || {
        let all = search_list(&app.trees);
        let hits: Vec<&String> = all.iter().filter(|n| n.contains(&req.target)).collect();
        Ok(cors(json!(hits)))
    })
    .await
}

/// Every `path:ds` of every tree (kept for [`SEARCH_MAX_AGE`]).
fn search_list(trees: &Trees) -> Arc<Vec<String>> {
    let mut kept = trees.search.kept.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((at, list)) = kept.as_ref() {
        if at.elapsed() < SEARCH_MAX_AGE {
            return list.clone();
        }
    }
    let mut out = Vec::new();
    let mut files = 0;
    for t in &trees.trees {
        let prefix = if trees.trees.len() > 1 { format!("{}:", t.name) } else { String::new() };
        walk(trees, t, PathBuf::new(), &mut |rel| {
            files += 1;
            if files > MAX_SEARCH_FILES {
                return false;
            }
            let Some(name) = target_name(rel) else { return true };
            if let Ok(info) = file_info(&t.root, &t.dir.join(rel)) {
                out.extend(info.ds.iter().map(|ds| format!("{prefix}{name}:{ds}")));
            }
            true
        });
    }
    let list = Arc::new(out);
    *kept = Some((Instant::now(), list.clone()));
    list
}

/// Calls `f` with every RRD file's relative path beneath `rel`, through
/// the directory index, until it returns false. Links to directories are
/// not followed (a loop could be endless).
fn walk(trees: &Trees, t: &Tree, rel: PathBuf, f: &mut dyn FnMut(&FsPath) -> bool) -> bool {
    let dir = t.dir.join(&rel);
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return true;
    }
    let Ok(listing) = trees.index.list(&dir) else { return true };
    for name in &listing.files {
        if !f(&rel.join(name)) {
            return false;
        }
    }
    for name in &listing.dirs {
        if !walk(trees, t, rel.join(name), f) {
            return false;
        }
    }
    true
}

/// A file's name as grafana-rrd-server writes it: `/` as `:`, `.rrd`
/// dropped (`None` for a path that is not UTF-8).
fn target_name(rel: &FsPath) -> Option<String> {
    let s = rel.to_str()?;
    Some(s.strip_suffix(".rrd").unwrap_or(s).replace('/', ":"))
}

#[derive(Deserialize)]
struct Range {
    from: String,
    to: String,
}

#[derive(Deserialize)]
struct QueryTarget {
    target: String,
    cf: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryRequest {
    range: Range,
    #[serde(default)]
    targets: Vec<QueryTarget>,
    #[serde(default)]
    max_data_points: i64,
    cf: Option<String>,
}

fn bad(m: String) -> Response {
    (axum::http::StatusCode::BAD_REQUEST, Json(json!({"message": m}))).into_response()
}

pub async fn query(State(app): State<Arc<App>>, body: axum::body::Bytes) -> Response {
    let req: QueryRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad(format!("the query is not grafana's JSON: {e}")),
    };
    let (Some(from), Some(to)) = (parse_rfc3339(&req.range.from), parse_rfc3339(&req.range.to)) else {
        return bad("range.from and range.to must be RFC 3339 times".into());
    };
    if to <= from {
        return bad("range.to must be after range.from".into());
    }
    let slot = tokio::time::timeout(app.config.render_wait, app.renders.clone().acquire_owned()).await;
    let Ok(Ok(permit)) = slot else {
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "busy\n").into_response();
    };
    crate::reply::run(move || {
        let _permit = permit;
        let mut out = Vec::new();
        for t in &req.targets {
            let cf = t.cf.as_deref().or(req.cf.as_deref()).unwrap_or("AVERAGE");
            let Some(cf) = Cf::parse(&cf.to_ascii_uppercase()) else {
                return Ok(bad(format!("cf '{cf}' is not AVERAGE, MIN, MAX or LAST")));
            };
            match series_of(&app.trees, &t.target, cf, from, to, req.max_data_points) {
                Ok(mut v) => out.append(&mut v),
                Err(e) => return Ok(bad(e.to_string())),
            }
        }
        Ok(cors(Value::Array(out)))
    })
    .await
}

/// The files a target names: `[tree:]a:b:file:ds`, each file component a
/// glob; with the tree and DS.
fn resolve<'a>(trees: &'a Trees, target: &str) -> Vec<(&'a Tree, PathBuf, String)> {
    let Some((spec, ds)) = target.rsplit_once(':') else { return Vec::new() };
    let (tree, spec) = if trees.trees.len() > 1 {
        let Some((name, rest)) = spec.split_once(':') else { return Vec::new() };
        let Ok(t) = trees.get(name) else { return Vec::new() };
        (t, rest)
    } else {
        let Some(t) = trees.trees.first() else { return Vec::new() };
        (t, spec)
    };
    let parts: Vec<&str> = spec.split(':').collect();
    if parts.iter().any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains('\0')) {
        return Vec::new();
    }
    let mut found = vec![PathBuf::new()];
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let mut next = Vec::new();
        for rel in &found {
            let Ok(dir) = super::confine::dir_path(tree, rel) else { continue };
            let Ok(listing) = trees.index.list(&dir) else { continue };
            let names = if last { &listing.files } else { &listing.dirs };
            let want = if last { format!("{part}.rrd") } else { part.to_string() };
            for n in names
                .iter()
                .filter(|n| glob(want.as_bytes(), std::os::unix::ffi::OsStrExt::as_bytes(n.as_os_str())))
            {
                if next.len() < MAX_TARGET_FILES {
                    next.push(rel.join(n));
                }
            }
        }
        found = next;
    }
    found.into_iter().map(|rel| (tree, rel, ds.to_string())).collect()
}

/// One `{"target", "datapoints"}` per file `target` matches.
fn series_of(
    trees: &Trees,
    target: &str,
    cf: Cf,
    from: i64,
    to: i64,
    max_points: i64,
) -> Result<Vec<Value>, TreeError> {
    let mut out = Vec::new();
    for (tree, rel, ds) in resolve(trees, target) {
        let path = tree.dir.join(&rel);
        // A file that cannot be read (a link leaving the tree, not an RRD
        // file) is left out, as grafana-rrd-server skips it.
        let table = match rows(trees, tree, &path, cf, from, to, max_points) {
            Ok(t) => t,
            Err(TreeError::Engine(_) | TreeError::Io(_)) => continue,
            Err(e) => return Err(e),
        };
        let Some(col) = table.names.iter().position(|n| *n == ds) else { continue };
        let mut points = Vec::new();
        for (stamp, row) in table.rows() {
            let v = row[col];
            if !v.is_nan() {
                points.push(json!([v, stamp * 1000]));
            }
        }
        let prefix = if trees.trees.len() > 1 { format!("{}:", tree.name) } else { String::new() };
        let name = target_name(&rel).unwrap_or_default();
        out.push(json!({"target": format!("{prefix}{name}:{ds}"), "datapoints": points}));
    }
    Ok(out)
}

/// Rows of every DS of a file.
pub struct Table {
    pub names: Vec<String>,
    /// The first row is stamped `start + step`.
    pub start: i64,
    pub step: i64,
    pub data: Vec<f64>,
}

impl Table {
    /// Each row's stamp and values.
    pub fn rows(&self) -> impl Iterator<Item = (i64, &[f64])> {
        let cols = self.names.len().max(1);
        self.data.chunks(cols).enumerate().map(move |(i, r)| (self.start + (i as i64 + 1) * self.step, r))
    }
}

/// A file's rows from `from` to `to`: `rrdtool fetch`'s, or with
/// `max_points > 0` consolidated to at most about that many as graph does.
/// A range of more than [`MAX_POINTS`] of the file's base steps is
/// consolidated to [`MAX_POINTS`] rows even without `max_points`, so that
/// what a request makes the server hold stays bounded (a fetch holds
/// every row of the range, known or not).
fn rows(
    trees: &Trees,
    t: &Tree,
    path: &FsPath,
    cf: Cf,
    from: i64,
    to: i64,
    max_points: i64,
) -> Result<Table, TreeError> {
    let files = [path.to_path_buf()];
    let mut source = TreeSource { root: &t.root, files: &files, daemon: trees.daemon.as_deref() };
    let info = file_info(&t.root, path)?;
    let base_rows = (to - from) / (info.step_secs.max(1) as i64);
    let max_points = if max_points <= 0 && base_rows > MAX_POINTS { MAX_POINTS } else { max_points };
    if max_points <= 0 {
        let req =
            FetchRequest { file: &token(0), cf, start: from, end: to, resolution_secs: 1, daemon: None };
        let r = source.fetch(&req)?;
        return Ok(Table { names: r.ds_names, start: r.start, step: r.step_secs as i64, data: r.data });
    }
    let mut els = Vec::new();
    for (i, ds) in info.ds.iter().enumerate() {
        els.push(format!("DEF:v{i}={}:{ds}:{}", token(0), cf.name()));
        els.push(format!("XPORT:v{i}:{ds}"));
    }
    let range =
        XportRange { start: from, end: to, step_secs: 0, max_rows: max_points.min(MAX_POINTS), now: to };
    let r = rrd_engine::xport::xport_with(&range, &els, &mut source)?;
    Ok(Table { names: r.legends, start: r.start, step: r.step_secs, data: r.data })
}

/// `2026-11-28T10:00:00.123Z` or with `+01:00`: epoch seconds (the
/// fraction dropped).
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.trim().as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let n = |r: std::ops::Range<usize>| std::str::from_utf8(&b[r]).ok()?.parse::<i64>().ok();
    let (y, mo, d, h, mi, sec) = (n(0..4)?, n(5..7)?, n(8..10)?, n(11..13)?, n(14..16)?, n(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    let offset = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let hh = i64::from((*h1 as char).to_digit(10)? * 10 + (*h2 as char).to_digit(10)?);
            let mm = i64::from((*m1 as char).to_digit(10)? * 10 + (*m2 as char).to_digit(10)?);
            let o = hh * 3600 + mm * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let days = crate::store::days_from_civil(y, mo as u32, d as u32);
    Some(days * 86_400 + h * 3600 + mi * 60 + sec - offset)
}

/// `GET /api/tree/{tree}/{path}.json`: a file's rows for Infinity.
pub async fn infinity(
    State(app): State<Arc<App>>,
    Path((name, path)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Response {
    let permit = match tokio::time::timeout(app.config.render_wait, app.renders.clone().acquire_owned()).await
    {
        Ok(Ok(p)) => p,
        _ => return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "busy\n").into_response(),
    };
    crate::reply::run(move || {
        let _permit = permit;
        Ok(infinity_rows(&app.trees, &name, &path, raw.as_deref())
            .unwrap_or_else(|e| super::routes::refusal(&e)))
    })
    .await
}

fn infinity_rows(trees: &Trees, name: &str, path: &str, raw: Option<&str>) -> Result<Response, TreeError> {
    let t = trees.get(name)?;
    let q = super::routes::Query::parse(raw);
    let bytes = super::confine::pct_decode(path);
    let stem = bytes.strip_suffix(b".json").ok_or(TreeError::NotFound)?;
    let mut file = stem.to_vec();
    if !file.ends_with(b".rrd") {
        file.extend_from_slice(b".rrd");
    }
    let rel = super::confine::relative(&file)?;
    let path = super::confine::file_path(t, &rel)?;
    let now = crate::reply::now_secs();
    let num = |k: &str, d: i64| q.text.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(d);
    let end = num("end", now);
    let start = num("start", end - 86_400);
    if end <= start {
        return Err(TreeError::Param("start must be before end".into()));
    }
    let cf = q.text.get("cf").map_or("AVERAGE", String::as_str).to_ascii_uppercase();
    let cf = Cf::parse(&cf).ok_or_else(|| TreeError::Param("cf must be AVERAGE, MIN, MAX or LAST".into()))?;
    let table = rows(trees, t, &path, cf, start, end, num("maxDataPoints", 0))?;
    let out: Vec<Value> = table
        .rows()
        .map(|(stamp, row)| {
            let mut o = serde_json::Map::new();
            o.insert("time".into(), json!(crate::store::iso_time(stamp)));
            for (n, v) in table.names.iter().zip(row) {
                o.insert(n.clone(), json!(v));
            }
            Value::Object(o)
        })
        .collect();
    Ok(cors(Value::Array(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times() {
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20.999Z"), Some(1_700_000_000));
        assert_eq!(parse_rfc3339("2023-11-14T23:13:20+01:00"), Some(1_700_000_000));
        assert_eq!(parse_rfc3339("2023-11-14 22:13:20"), None);
        assert_eq!(parse_rfc3339("now-6h"), None);
    }

    #[test]
    fn target_names_are_grafana_rrd_servers() {
        assert_eq!(
            target_name(FsPath::new("host/cpu-0/cpu-user.rrd")).as_deref(),
            Some("host:cpu-0:cpu-user")
        );
    }
}
