//! rrd-web: a GrowthForecast-compatible HTTP API over rrd-engine files.
//!
//! Owns: the routes (`POST/GET /api/:service/:section/:graph`,
//! `/json/graph/...`, `/json/list/graph`, `/json/list/all`,
//! `/graph/...` PNG), request validation, GrowthForecast's JSON and error
//! shapes, and the RRD schema GrowthForecast creates (step 300, DS `num`
//! and `sub`, AVERAGE and MAX archives of 5 min/30 min/2 h/1 day).
//!
//! Invariants: names never reach the file system (files are `<id>.rrd`),
//! names with `/`, `..`, NUL or control characters are refused with 400;
//! untrusted input never panics. Writes go straight to the engine.
//!
//! Deliberately not here (yet): complex graphs, edit/delete, xport and
//! summary endpoints, the web UI, the daemon write path, `/metrics`.

pub mod store;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use store::{Graph, GraphName, Posted, Store};

/// What can go wrong serving a request, beyond bad input.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("the metadata store failed: {0}")]
    Store(#[from] rusqlite::Error),
    #[error("the RRD engine failed: {0}")]
    Engine(#[from] rrd_engine::Error),
    #[error("drawing the graph failed: {0}")]
    Graph(#[from] rrd_graph::GraphError),
    #[error("the data directory could not be used: {0}")]
    Io(#[from] std::io::Error),
    #[error("a worker task failed: {0}")]
    Join(String),
}

/// Shared server state: the metadata store and where the RRD files live.
pub struct App {
    store: Mutex<Store>,
    rrd_dir: PathBuf,
}

impl App {
    /// Opens (creating) `data_dir/gforecast.db` and `data_dir/data/`.
    pub fn open(data_dir: &Path) -> Result<Arc<App>, WebError> {
        let rrd_dir = data_dir.join("data");
        std::fs::create_dir_all(&rrd_dir)?;
        let store = Store::open(&data_dir.join("gforecast.db"))?;
        Ok(Arc::new(App { store: Mutex::new(store), rrd_dir }))
    }

    fn rrd_path(&self, id: i64) -> PathBuf {
        self.rrd_dir.join(format!("{id}.rrd"))
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        // A panic while holding the lock leaves SQLite consistent (each
        // change is a transaction), so a poisoned lock is still usable.
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The routes, over an opened [`App`].
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/api/{service}/{section}/{graph}", get(get_graph).post(post_graph))
        .route("/json/graph/{service}/{section}/{graph}", get(get_graph))
        .route("/json/list/graph", get(list_graph))
        .route("/json/list/all", get(list_all))
        .route("/graph/{service}/{section}/{graph}", get(graph_png))
        .with_state(app)
}

/// Serves until the listener fails.
pub async fn serve(listener: tokio::net::TcpListener, app: Arc<App>) -> std::io::Result<()> {
    axum::serve(listener, router(app)).await
}

/// Binds `addr` and serves `data_dir` on a new multi-threaded runtime.
pub fn run_blocking(addr: SocketAddr, data_dir: &Path) -> Result<(), WebError> {
    let app = App::open(data_dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        eprintln!("rrdscale web: listening on http://{}", listener.local_addr()?);
        serve(listener, app).await
    })?;
    Ok(())
}

fn error_response(status: StatusCode, messages: Value) -> Response {
    (status, Json(json!({"error": 1, "messages": messages}))).into_response()
}

fn internal(e: WebError) -> Response {
    error_response(StatusCode::INTERNAL_SERVER_ERROR, json!({"server": e.to_string()}))
}

fn not_found() -> Response {
    error_response(StatusCode::NOT_FOUND, json!({"graph": "graph not found"}))
}

/// Refuses names that could be a path or confuse a file system or a log.
fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s != "."
        && !s.contains("..")
        && !s.chars().any(|c| c == '/' || c == '\\' || c.is_control())
}

/// `Err` holds the `messages` object of a 400 answer.
fn check_names(service: &str, section: &str, graph: &str) -> Result<(), Value> {
    let mut bad = serde_json::Map::new();
    for (key, v) in [("service_name", service), ("section_name", section), ("graph_name", graph)] {
        if !valid_name(v) {
            bad.insert(key.into(), json!(format!("{key} is not a valid name")));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(Value::Object(bad))
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, WebError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| WebError::Join(e.to_string()))
}

fn params(query: Option<&str>, body: &[u8]) -> HashMap<String, String> {
    // GrowthForecast reads parameters from the query and the form body; the
    // body wins, as it is parsed last.
    let mut out = HashMap::new();
    let q: Vec<(String, String)> = query.and_then(|q| serde_urlencoded::from_str(q).ok()).unwrap_or_default();
    let b: Vec<(String, String)> = serde_urlencoded::from_bytes(body).unwrap_or_default();
    out.extend(q);
    out.extend(b);
    out
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// GrowthForecast's INT rule: optional sign, then digits.
fn parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DDTHH:MM:SS`, optionally with `Z`,
/// read as UTC.
fn parse_datetime(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches('Z');
    let (date, time) = s.split_once([' ', 'T']).unwrap_or((s, "00:00:00"));
    let d: Vec<&str> = date.split(['-', '/']).collect();
    let t: Vec<&str> = time.split(':').collect();
    if d.len() != 3 || !(2..=3).contains(&t.len()) {
        return None;
    }
    let num = |x: &str| parse_int(x).filter(|v| *v >= 0);
    let (y, mo, da) = (num(d[0])?, num(d[1])?, num(d[2])?);
    let (h, mi, se) = (num(t[0])?, num(t[1])?, t.get(2).map_or(Some(0), |x| num(x))?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || se > 60 || y > 9999 {
        return None;
    }
    Some(store::days_from_civil(y, mo as u32, da as u32) * 86_400 + h * 3600 + mi * 60 + se)
}

fn valid_color(s: &str) -> bool {
    s.len() == 7 && s.starts_with('#') && s[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// The fields of a valid POST.
struct PostRequest {
    number: i64,
    mode: String,
    color: Option<String>,
    description: Option<String>,
    time_secs: Option<i64>,
}

/// `Err` holds the `messages` object of a 400 answer.
fn validate_post(p: &HashMap<String, String>) -> Result<PostRequest, Value> {
    let mut bad = serde_json::Map::new();
    let number = match p.get("number").map(String::as_str) {
        None | Some("") => {
            bad.insert("number".into(), json!("number is null"));
            0
        }
        Some(n) => parse_int(n).unwrap_or_else(|| {
            bad.insert("number".into(), json!("number is not an integer"));
            0
        }),
    };
    let mode = p.get("mode").filter(|m| !m.is_empty()).cloned().unwrap_or_else(|| "gauge".into());
    if !matches!(mode.as_str(), "gauge" | "count" | "modified" | "derive") {
        bad.insert("mode".into(), json!("mode is one of gauge, count, modified or derive"));
    }
    let color = p.get("color").filter(|c| !c.is_empty()).cloned();
    if color.as_deref().is_some_and(|c| !valid_color(c)) {
        bad.insert("color".into(), json!("color is not in #RRGGBB form"));
    }
    let mut time_secs = None;
    if let Some(t) = p.get("timestamp").filter(|t| !t.is_empty()) {
        match parse_int(t).filter(|v| *v > 0) {
            Some(v) => time_secs = Some(v),
            None => {
                bad.insert("timestamp".into(), json!("timestamp is not epoch seconds"));
            }
        }
    } else if let Some(t) = p.get("datetime").filter(|t| !t.is_empty()) {
        match parse_datetime(t) {
            Some(v) => time_secs = Some(v),
            None => {
                bad.insert("datetime".into(), json!("datetime is not YYYY-MM-DD HH:MM:SS"));
            }
        }
    }
    if !bad.is_empty() {
        return Err(Value::Object(bad));
    }
    Ok(PostRequest { number, mode, color, description: p.get("description").cloned(), time_secs })
}

/// GrowthForecast's RRD: step 300, heartbeat 600, `num` and `sub`.
fn create_rrd(path: &Path, derive: bool, start: i64) -> Result<(), WebError> {
    let dst = if derive { "DERIVE:600:0:U" } else { "GAUGE:600:U:U" };
    let mut defs = vec![format!("DS:num:{dst}"), format!("DS:sub:{dst}")];
    for cf in ["AVERAGE", "MAX"] {
        for (steps, rows) in [(1, 1440), (6, 1008), (24, 1344), (288, 2500)] {
            defs.push(format!("RRA:{cf}:0.5:{steps}:{rows}"));
        }
    }
    let opts = rrd_engine::create::CreateOptions {
        start: Some(start - 1),
        step_secs: Some(300),
        no_overwrite: true,
        template: None,
        sources: Vec::new(),
    };
    rrd_engine::create::create(path, &opts, &defs, start)?;
    Ok(())
}

/// Writes `num:sub` at `time_secs`, unless the file already holds an
/// update at or after that second (two posts in one second: the second
/// one lives in the metadata only, as GrowthForecast's worker would write
/// only the latest number at its next tick).
fn update_rrd(path: &Path, time_secs: i64, number: i64, sub: Option<i64>) -> Result<(), WebError> {
    let last = rrd_engine::Rrd::open(path, false)?.header.live.last_up;
    if time_secs <= last {
        return Ok(());
    }
    let sub = sub.map_or_else(|| "U".to_string(), |s| s.to_string());
    let opts =
        rrd_engine::update::UpdateOptions { template: Some("num:sub".into()), skip_past_updates: false };
    let report =
        rrd_engine::update::update_file(path, &[format!("{time_secs}:{number}:{sub}")], &opts, false)?;
    if let Some(e) = report.error {
        return Err(e.into());
    }
    Ok(())
}

type Names = UrlPath<(String, String, String)>;

async fn post_graph(
    State(app): State<Arc<App>>,
    UrlPath((service, section, graph)): Names,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    if let Err(m) = check_names(&service, &section, &graph) {
        return error_response(StatusCode::BAD_REQUEST, m);
    }
    let req = match validate_post(&params(q.as_deref(), &body)) {
        Ok(r) => r,
        Err(m) => return error_response(StatusCode::BAD_REQUEST, m),
    };
    let result = blocking(move || -> Result<Graph, WebError> {
        let now = now_secs();
        let t = req.time_secs.unwrap_or(now);
        let posted = Posted {
            number: req.number,
            mode: &req.mode,
            color: req.color.as_deref(),
            description: req.description.as_deref(),
            now_secs: now,
        };
        let (row, previous) = app.store().post(&service, &section, &graph, &posted)?;
        let path = app.rrd_path(row.id);
        if !path.exists() {
            create_rrd(&path, req.mode == "derive", t)?;
        }
        let sub = previous.map(|p| row.number.saturating_sub(p));
        update_rrd(&path, t, row.number, sub)?;
        Ok(row)
    })
    .await;
    match result {
        Ok(Ok(row)) => Json(json!({"error": 0, "data": row})).into_response(),
        Ok(Err(e)) | Err(e) => internal(e),
    }
}

async fn get_graph(State(app): State<Arc<App>>, UrlPath((service, section, graph)): Names) -> Response {
    if let Err(m) = check_names(&service, &section, &graph) {
        return error_response(StatusCode::BAD_REQUEST, m);
    }
    match blocking(move || app.store().get(&service, &section, &graph)).await {
        Ok(Ok(Some(g))) => Json(g).into_response(),
        Ok(Ok(None)) => not_found(),
        Ok(Err(e)) => internal(e.into()),
        Err(e) => internal(e),
    }
}

async fn list_all(State(app): State<Arc<App>>) -> Response {
    match blocking(move || app.store().all()).await {
        Ok(Ok(all)) => Json(all).into_response(),
        Ok(Err(e)) => internal(e.into()),
        Err(e) => internal(e),
    }
}

async fn list_graph(State(app): State<Arc<App>>) -> Response {
    match blocking(move || app.store().all()).await {
        Ok(Ok(all)) => Json(
            all.into_iter()
                .map(|g| GraphName {
                    id: g.id,
                    service_name: g.service_name,
                    section_name: g.section_name,
                    graph_name: g.graph_name,
                })
                .collect::<Vec<_>>(),
        )
        .into_response(),
        Ok(Err(e)) => internal(e.into()),
        Err(e) => internal(e),
    }
}

/// GrowthForecast's spans: seconds back from now, and the title.
fn span(t: &str) -> Option<(i64, &'static str)> {
    Some(match t {
        "h" => (2 * 3600, "Hourly (5min avg)"),
        "4h" => (4 * 3600, "4 Hours (5min avg)"),
        "8h" => (8 * 3600, "8 Hours (5min avg)"),
        "n" => (14 * 3600, "Half Day (5min avg)"),
        "d" => (33 * 3600, "Daily (5min avg)"),
        "3d" => (3 * 86_400, "3 Days (5min avg)"),
        "w" => (8 * 86_400, "Weekly (30min avg)"),
        "m" => (35 * 86_400, "Monthly (2hour avg)"),
        "y" => (400 * 86_400, "Yearly (1day avg)"),
        _ => return None,
    })
}

async fn graph_png(
    State(app): State<Arc<App>>,
    UrlPath((service, section, graph)): Names,
    RawQuery(q): RawQuery,
) -> Response {
    if let Err(m) = check_names(&service, &section, &graph) {
        return error_response(StatusCode::BAD_REQUEST, m);
    }
    let p = params(q.as_deref(), &[]);
    let mut bad = serde_json::Map::new();
    let t = p.get("t").map_or("d", String::as_str);
    let span = span(t).unwrap_or_else(|| {
        bad.insert("t".into(), json!("invalid drawing term"));
        (0, "")
    });
    let mut dim = |key: &str, default: i64| match p.get(key) {
        None => default,
        Some(v) => parse_int(v).filter(|v| (10..=4000).contains(v)).unwrap_or_else(|| {
            bad.insert(key.into(), json!(format!("invalid {key}")));
            default
        }),
    };
    let width = dim("width", 390);
    let height = dim("height", 110);
    let graphonly = p.get("graphonly").is_some_and(|v| v == "1");
    if !bad.is_empty() {
        return error_response(StatusCode::BAD_REQUEST, Value::Object(bad));
    }
    let result = blocking(move || -> Result<Option<Vec<u8>>, WebError> {
        let Some(g) = app.store().get(&service, &section, &graph)? else {
            return Ok(None);
        };
        let path = app.rrd_path(g.id);
        let file = path.to_string_lossy().replace('\\', "\\\\").replace(':', "\\:");
        let now = now_secs();
        let opts = rrd_graph::Options {
            start: format!("{}", now - span.0),
            end: format!("{now}"),
            title: span.1.into(),
            width,
            height,
            lower_limit: 0.0,
            slope_mode: true,
            only_graph: graphonly,
            ..Default::default()
        };
        let kind = if g.kind == "AREA" { "AREA" } else { "LINE1" };
        let elements = vec![
            format!("DEF:num={file}:num:AVERAGE"),
            format!("{kind}:num{}:{}", g.color, g.graph_name.replace(':', "\\:")),
        ];
        let out = rrd_graph::render(&opts, &elements, now)?;
        Ok(out.image)
    })
    .await;
    match result {
        Ok(Ok(Some(png))) => {
            ([(header::CONTENT_TYPE, "image/png"), (header::CACHE_CONTROL, "max-age=60")], png)
                .into_response()
        }
        Ok(Ok(None)) => not_found(),
        Ok(Err(e)) | Err(e) => internal(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_be_paths_are_refused() {
        for bad in ["", ".", "..", "a/b", "..x", "a\0b", "a\\b", "x\n"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        assert!(valid_name("web-01.example"));
    }

    #[test]
    fn ints_and_datetimes_parse_strictly() {
        assert_eq!(parse_int("-12"), Some(-12));
        assert_eq!(parse_int("1.5"), None);
        assert_eq!(parse_int("+"), None);
        assert_eq!(parse_datetime("2023-11-14 22:13:20"), Some(1_700_000_000));
        assert_eq!(parse_datetime("2023-13-14 22:13:20"), None);
    }
}
