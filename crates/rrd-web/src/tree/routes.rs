//! The HTTP routes of the tree browser, the Infinity JSON endpoint and
//! the Grafana API ([`super::grafana`]):
//! - `GET /tree`: the trees; `GET /tree/{tree}?dir=&filter=&page=&...`:
//!   a directory page; `GET /tree/{tree}/view?file=&...`: one graph;
//! - `GET /tree/{tree}/png?file=&...`: a picture, with the plot area in
//!   `X-Graph-Left`, `-Top`, `-Width`, `-Height`, `-Start`, `-End`;
//! - `GET /tree/{tree}/export?file=&format=csv|json&...`: the numbers
//!   drawn;
//! - `GET /tree-assets/{tree.js,tree.css}`: the page's script and style.
//!
//! Errors: an unknown tree or file 404, a refused path (`..`, absolute,
//! leaving the tree) 403, a bad parameter 400; as plain text. Pictures
//! and exports take a render slot ([`crate::Config::max_renders`]) as
//! the GrowthForecast pictures do (503 when none frees in time).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use super::confine::{self, relative};
use super::draw::{self, Target, View};
use super::{Tree, TreeError};
use crate::reply::now_secs;
use crate::App;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/tree", get(trees_page))
        .route("/tree/", get(trees_page))
        .route("/tree/{tree}", get(dir_page))
        .route("/tree/{tree}/view", get(view_page))
        .route("/tree/{tree}/png", get(png))
        .route("/tree/{tree}/export", get(export))
        .route("/tree-assets/tree.js", get(|| async { asset("text/javascript; charset=utf-8", TREE_JS) }))
        .route("/tree-assets/tree.css", get(|| async { asset("text/css; charset=utf-8", TREE_CSS) }))
        .route("/api/tree/{tree}/{*path}", get(super::grafana::infinity))
        .route("/grafana", get(super::grafana::hello))
        .route("/grafana/", get(super::grafana::hello))
        .route("/grafana/search", post(super::grafana::search))
        .route("/grafana/query", post(super::grafana::query))
        .route("/grafana/annotations", post(super::grafana::annotations))
}

const TREE_JS: &str = include_str!("tree.js");
const TREE_CSS: &str = include_str!("tree.css");

fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "max-age=300")], body).into_response()
}

/// A query's parameters: decoded text, and the raw bytes of each value
/// (file and directory names need not be UTF-8). `+` is a space, as
/// forms send it.
pub struct Query {
    pub text: HashMap<String, String>,
    pub raw: HashMap<String, Vec<u8>>,
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Query {
        let mut q = Query { text: HashMap::new(), raw: HashMap::new() };
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = String::from_utf8_lossy(&confine::pct_decode(&k.replace('+', " "))).into_owned();
            let v = confine::pct_decode(&v.replace('+', " "));
            q.text.insert(k.clone(), String::from_utf8_lossy(&v).into_owned());
            q.raw.insert(k, v);
        }
        q
    }

    /// A page without `start` or `range` shows the last day, as a preset,
    /// so its thumbnails' URLs (and the thumbnail cache) stay the same
    /// from one load to the next.
    fn live_by_default(mut self) -> Query {
        if !self.text.contains_key("start") && self.text.get("range").is_none_or(|r| r.is_empty()) {
            self.text.insert("range".into(), "day".into());
        }
        self
    }

    fn path(&self, key: &str) -> Result<PathBuf, TreeError> {
        relative(self.raw.get(key).map_or(&[][..], Vec::as_slice))
    }
}

/// The answer for a tree error.
pub fn refusal(e: &TreeError) -> Response {
    let status = match e {
        TreeError::UnknownTree(_) | TreeError::NotFound => StatusCode::NOT_FOUND,
        TreeError::Refused(_) | TreeError::Escape => StatusCode::FORBIDDEN,
        TreeError::Param(_) | TreeError::Graph(_) => StatusCode::BAD_REQUEST,
        TreeError::Engine(rrd_engine::Error::Open { source, .. }) | TreeError::Io(source) => {
            if rrd_engine::root::Root::is_escape(source) {
                StatusCode::FORBIDDEN
            } else if source.kind() == std::io::ErrorKind::NotFound {
                StatusCode::NOT_FOUND
            } else if source.kind() == std::io::ErrorKind::PermissionDenied {
                StatusCode::FORBIDDEN
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
        TreeError::Engine(_) => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    // The server's own paths stay out of answers.
    let text = match e {
        TreeError::Engine(rrd_engine::Error::Open { source, .. }) => {
            format!("the file cannot be opened: {source}")
        }
        e => e.to_string(),
    };
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{text}\n")).into_response()
}

fn html(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], body)
        .into_response()
}

async fn trees_page(State(app): State<Arc<App>>) -> Response {
    let names: Vec<&str> = app.trees.trees.iter().map(|t| t.name.as_str()).collect();
    html(super::page::trees(&names))
}

/// Runs `f` on a blocking thread, with a render slot when `draws`.
async fn blocking(
    app: Arc<App>,
    draws: bool,
    f: impl FnOnce(&App) -> Result<Response, TreeError> + Send + 'static,
) -> Response {
    let permit = if draws {
        let slot = tokio::time::timeout(app.config.render_wait, app.renders.clone().acquire_owned()).await;
        match slot {
            Ok(Ok(p)) => Some(p),
            _ => {
                app.metrics.refused("busy");
                let mut r =
                    (StatusCode::SERVICE_UNAVAILABLE, "the server is drawing its limit of graphs; retry\n")
                        .into_response();
                r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
                return r;
            }
        }
    } else {
        None
    };
    crate::reply::run(move || {
        let _permit = permit;
        Ok(f(&app).unwrap_or_else(|e| refusal(&e)))
    })
    .await
}

fn tree<'a>(app: &'a App, name: &str) -> Result<&'a Tree, TreeError> {
    app.trees.get(name)
}

async fn dir_page(State(app): State<Arc<App>>, Path(name): Path<String>, RawQuery(q): RawQuery) -> Response {
    blocking(app, false, move |app| {
        let q = Query::parse(q.as_deref()).live_by_default();
        let t = tree(app, &name)?;
        let rel = q.path("dir")?;
        let dir = confine::dir_path(t, &rel)?;
        let listing = app.trees.index.list(&dir)?;
        let view = View::parse(&q.text, now_secs())?;
        let page = q.text.get("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(0).min(1 << 20);
        let filter = q.text.get("filter").map_or("", String::as_str);
        let range = q.text.get("range").map(String::as_str).filter(|r| !r.is_empty());
        let dir_name = rel.file_name().map(confine::shown).unwrap_or_default();
        let groups: Vec<(usize, String)> = app
            .trees
            .defs
            .groups(&dir_name, &listing.files)
            .into_iter()
            .map(|(i, n, _)| (i, n.to_string()))
            .collect();
        Ok(html(super::page::directory(&super::page::DirPage {
            tree: &t.name,
            rel: &rel,
            listing: &listing,
            filter,
            page,
            view: &view,
            range,
            groups: &groups,
        })))
    })
    .await
}

/// What a query names: `file=` (one file) or `dir=` and `group=` (a
/// group definition over that directory's files); paths beneath the tree.
fn target<'a>(app: &'a App, t: &'a Tree, q: &Query) -> Result<Target<'a>, TreeError> {
    let daemon = app.trees.daemon.as_deref();
    let Some(group) = q.text.get("group") else {
        let rel = q.path("file")?;
        return Ok(Target { root: &t.root, paths: vec![confine::file_path(t, &rel)?], group: None, daemon });
    };
    let group: usize = group.parse().map_err(|_| TreeError::Param("group must be a number".into()))?;
    let rel = q.path("dir")?;
    let listing = app.trees.index.list(&confine::dir_path(t, &rel)?)?;
    let dir_name = rel.file_name().map(confine::shown).unwrap_or_default();
    let groups = app.trees.defs.groups(&dir_name, &listing.files);
    let (_, _, files) = groups.into_iter().find(|(i, _, _)| *i == group).ok_or(TreeError::NotFound)?;
    let paths = files
        .into_iter()
        .take(crate::MAX_SERIES)
        .map(|f| confine::file_path(t, &rel.join(f)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Target { root: &t.root, paths, group: Some(group), daemon })
}

async fn view_page(State(app): State<Arc<App>>, Path(name): Path<String>, RawQuery(q): RawQuery) -> Response {
    blocking(app, false, move |app| {
        let q = Query::parse(q.as_deref()).live_by_default();
        let t = tree(app, &name)?;
        let target = target(app, t, &q)?;
        let (_, members, title, _) = draw::plan(&app.trees.defs, &target)?;
        let info = &members.first().ok_or(TreeError::NotFound)?.info;
        let view = View::parse(&q.text, now_secs())?;
        let range = q.text.get("range").map(String::as_str).filter(|r| !r.is_empty());
        let (rel, query, group) = match target.group {
            Some(g) => {
                let rel = q.path("dir")?;
                let query = format!("dir={}&group={g}", confine::pct_path(&rel));
                (rel, query, app.trees.defs.group(g).map(|d| d.name.as_str()))
            }
            None => {
                let rel = q.path("file")?;
                (rel.clone(), format!("file={}", confine::pct_path(&rel)), None)
            }
        };
        let dir =
            if group.is_some() { rel.as_path() } else { rel.parent().unwrap_or(std::path::Path::new("")) };
        let shown = super::page::Shown { query, dir, crumbs: &rel, group, title };
        Ok(html(super::page::graph(&t.name, &shown, info, &view, range)))
    })
    .await
}

async fn png(State(app): State<Arc<App>>, Path(name): Path<String>, RawQuery(raw): RawQuery) -> Response {
    let key = format!("{name}?{}", raw.as_deref().unwrap_or(""));
    if let Some(p) = app.trees.thumbs.get(&key) {
        return png_response(&p);
    }
    blocking(app, true, move |app| {
        let q = Query::parse(raw.as_deref());
        let t = tree(app, &name)?;
        let target = target(app, t, &q)?;
        let now = now_secs();
        let view = View::parse(&q.text, now)?;
        let began = std::time::Instant::now();
        let p = Arc::new(draw::png(&app.trees.defs, &target, &view, now)?);
        app.metrics.render(began.elapsed());
        if view.thumb {
            app.trees.thumbs.put(key, p.clone());
        }
        Ok(png_response(&p))
    })
    .await
}

fn png_response(p: &draw::Png) -> Response {
    let g = &p.geometry;
    let mut r =
        ([(header::CONTENT_TYPE, "image/png"), (header::CACHE_CONTROL, "max-age=60")], p.bytes.clone())
            .into_response();
    for (k, v) in [
        ("x-graph-left", g.graph_left),
        ("x-graph-top", g.graph_top),
        ("x-graph-width", g.graph_width),
        ("x-graph-height", g.graph_height),
        ("x-graph-start", g.graph_start),
        ("x-graph-end", g.graph_end),
    ] {
        r.headers_mut().insert(k, HeaderValue::from(v));
    }
    r
}

async fn export(State(app): State<Arc<App>>, Path(name): Path<String>, RawQuery(raw): RawQuery) -> Response {
    blocking(app, true, move |app| {
        let q = Query::parse(raw.as_deref());
        let t = tree(app, &name)?;
        let target = target(app, t, &q)?;
        let now = now_secs();
        let view = View::parse(&q.text, now)?;
        let r = draw::export(&app.trees.defs, &target, &view, now)?;
        Ok(match q.text.get("format").map(String::as_str) {
            Some("csv") => {
                ([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], draw::csv(&r)).into_response()
            }
            Some("json") | None => axum::Json(draw::json(&r)).into_response(),
            Some(_) => return Err(TreeError::Param("format must be csv or json".into())),
        })
    })
    .await
}
