//! `POST /api/:service/:section/:graph` (GF's number API) and
//! `GET /api/...`.
//!
//! A POST takes `number` (INT), `mode` (gauge, count, modified, derive;
//! default gauge), `color` (#RRGGBB), `description`, and `timestamp`
//! (epoch seconds) or `datetime`, from the query or a form body. It
//! updates the metadata, creates the graph's two RRD files on first use,
//! and writes `time:number:sub` to both (`sub` is the difference from the
//! previous number, unknown on the first POST), through the configured
//! [`crate::Writer`].
//!
//! A `timestamp`/`datetime` more than [`MAX_CLOCK_SKEW_SECS`] after the
//! server's clock is refused with 400: a file that took one far-future
//! second would refuse every real one until then.
//!
//! Invariants: the metadata update and the file writes of one POST happen
//! under the store's lock, so two POSTs reach the files in the order
//! they changed the metadata (a later second never loses to an earlier).
//! Only success answers `{"error":0}`: a second the files already hold is
//! dropped as GF does (the metadata still takes the number), an earlier
//! second than a file's last update is refused before anything is
//! written (409, the metadata unchanged, counted as a write error), and
//! a failed write rolls the metadata back (500). A new graph name is
//! refused with 403 once the server holds `max_graphs` graphs.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::Names;
use crate::params::{check_names, params, parse_datetime, parse_int, valid_color};
use crate::reply::{bad_request, error_response, graph_not_found, now_secs, run};
use crate::rrdfile::{self, Resolution, Update};
use crate::store::{Graph, Posted};
use crate::{App, WebError};

pub fn routes() -> Router<Arc<App>> {
    Router::new().route("/api/{service}/{section}/{graph}", get(get_graph).post(post_graph))
}

/// The fields of a valid POST.
#[derive(Debug)]
pub struct PostRequest {
    pub number: i64,
    pub mode: String,
    pub color: Option<String>,
    pub description: Option<String>,
    pub time_secs: Option<i64>,
    /// The parameter that gave the time (`timestamp`, `datetime`, or
    /// `timestamp` for the server's clock), for naming it in a refusal.
    pub time_field: &'static str,
}

/// GF refuses timestamps before this (rrdcreate's 1980 floor plus 10 s).
const MIN_TIMESTAMP: i64 = 315_360_010;

/// How far after the server's clock a posted `timestamp`/`datetime` may
/// be: five minutes, one step of the 5-minute file, for clients whose
/// clocks run a little ahead. RRD files refuse any second before their
/// last update, so a later one is refused here instead: one far-future
/// POST would otherwise stop the graph until that time. (After a POST
/// within the skew, POSTs without a timestamp take its second until the
/// clock passes it: GF's rule for two POSTs in one second keeps the
/// file's value, and they are answered `{"error":0}`.)
pub const MAX_CLOCK_SKEW_SECS: i64 = 300;

/// `Err` holds the `messages` object of a 400 answer; `now` is the
/// server's clock, for [`MAX_CLOCK_SKEW_SECS`]. Public for the fuzz target
/// of the web API's bodies (crates/rrd-fuzz).
pub fn validate_post(p: &HashMap<String, String>, now: i64) -> Result<PostRequest, Value> {
    let mut bad = serde_json::Map::new();
    let number = match p.get("number").map(String::as_str) {
        None | Some("") => {
            bad.insert("number".into(), json!("number is missing"));
            0
        }
        Some(n) => parse_int(n).unwrap_or_else(|| {
            bad.insert("number".into(), json!("a INT number is required for \"number\""));
            0
        }),
    };
    let mode = p.get("mode").filter(|m| !m.is_empty()).cloned().unwrap_or_else(|| "gauge".into());
    if !matches!(mode.as_str(), "gauge" | "count" | "modified" | "derive") {
        bad.insert("mode".into(), json!("count or gauge or modified or derive"));
    }
    let color = p.get("color").filter(|c| !c.is_empty()).cloned();
    if color.as_deref().is_some_and(|c| !valid_color(c)) {
        bad.insert("color".into(), json!("invalid color format"));
    }
    let mut time_secs = None;
    if let Some(t) = p.get("timestamp").filter(|t| !t.is_empty()) {
        match parse_int(t).filter(|v| *v > MIN_TIMESTAMP) {
            Some(v) => time_secs = Some(v),
            None => {
                bad.insert(
                    "timestamp".into(),
                    json!("\"timestamp\" must be a INT number and greater than 315360010"),
                );
            }
        }
    } else if let Some(t) = p.get("datetime").filter(|t| !t.is_empty()) {
        match parse_datetime(t).filter(|v| *v > MIN_TIMESTAMP) {
            Some(v) => time_secs = Some(v),
            None => {
                bad.insert(
                    "datetime".into(),
                    json!("invalid datetime format or not later than '1979-12-30 00:00:10 UTC'"),
                );
            }
        }
    }
    if let Some(d) = p.get("description") {
        if d.len() > 1024 || d.chars().any(char::is_control) {
            bad.insert("description".into(), json!("description must be text of at most 1024 bytes"));
        }
    }
    if let Some(t) = time_secs.filter(|t| *t > now.saturating_add(MAX_CLOCK_SKEW_SECS)) {
        let key = if p.get("timestamp").is_some_and(|t| !t.is_empty()) { "timestamp" } else { "datetime" };
        bad.insert(
            key.into(),
            json!(format!(
                "\"{key}\" is {} seconds after the server's time {now}; at most {MAX_CLOCK_SKEW_SECS} are allowed",
                t - now
            )),
        );
    }
    if !bad.is_empty() {
        return Err(Value::Object(bad));
    }
    let time_field = if p.get("datetime").is_some_and(|t| !t.is_empty())
        && p.get("timestamp").is_none_or(|t| t.is_empty())
    {
        "datetime"
    } else {
        "timestamp"
    };
    Ok(PostRequest { number, mode, color, description: p.get("description").cloned(), time_secs, time_field })
}

async fn post_graph(
    State(app): State<Arc<App>>,
    axum::extract::Path((service, section, graph)): Names,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let now = now_secs();
    let checked = check_names(&service, &section, &graph)
        .and_then(|()| validate_post(&params(q.as_deref(), &body), now));
    let req = match checked {
        Ok(r) => r,
        Err(m) => {
            app.metrics.post(false);
            return bad_request(m);
        }
    };
    let a = app.clone();
    let res = run(move || {
        let mut store = a.store();
        let _files = a.write_files();
        // The server's clock is read under the locks the write holds, so
        // POSTs without a time reach the files in the order of their
        // seconds.
        let now = now_secs();
        let time = match req.time_secs {
            Some(t) => PostTime::Given(t),
            None => PostTime::Server(now),
        };
        let posted = Posted {
            number: req.number,
            mode: &req.mode,
            color: req.color.as_deref(),
            description: req.description.as_deref(),
            now_secs: now,
        };
        let saved =
            store.post_with(&service, &section, &graph, &posted, a.config.max_graphs, |row, previous| {
                write_both(&a, row, previous, time, req.mode == "derive")
            });
        match saved {
            Ok(Some((row, _))) => Ok(Json(json!({"error": 0, "data": row})).into_response()),
            Ok(None) => Ok({
                a.metrics.refused("graph_cap");
                error_response(
                    StatusCode::FORBIDDEN,
                    json!({"graph_name": format!(
                        "this server holds its maximum of {} graphs (rrdscale web --max-graphs); \
                         new graph names are refused, existing graphs keep updating",
                        a.config.max_graphs
                    )}),
                )
            }),
            Err(e @ WebError::TooEarly { .. }) => {
                a.metrics.write_error();
                Ok(error_response(StatusCode::CONFLICT, json!({ req.time_field: e.to_string() })))
            }
            Err(e) => {
                // The metadata store failing is not an RRD write error.
                if !matches!(e, WebError::Store(_)) {
                    a.metrics.write_error();
                }
                Err(e)
            }
        }
    })
    .await;
    app.metrics.post(res.status().is_success());
    res
}

/// The second a POST's value is written at.
#[derive(Clone, Copy, Debug)]
enum PostTime {
    /// The client's `timestamp`/`datetime`: a second before a file's last
    /// update is refused (409).
    Given(i64),
    /// The server's clock: never earlier than the files' last update (a
    /// file a POST stamped a little ahead holds a later second), so it
    /// never conflicts; at worst it is that same second, dropped as GF
    /// drops a second POST in one second.
    Server(i64),
}

/// Writes one POST's value into both files: each file's last update is
/// checked first, so a refused second writes neither file (the same
/// second already held is dropped, as GF does).
fn write_both(
    app: &App,
    row: &Graph,
    previous: Option<i64>,
    time: PostTime,
    derive: bool,
) -> Result<(), WebError> {
    let sub = previous.map(|p| row.number.saturating_sub(p));
    let files =
        [Resolution::FiveMinute, Resolution::OneMinute].map(|r| (r, rrdfile::path(&app.rrd_dir, row.id, r)));
    let mut lasts = Vec::with_capacity(2);
    for (_, path) in &files {
        if path.exists() {
            if let Some(last) = app.writer.last_update(path)? {
                lasts.push(last);
            }
        }
    }
    let t = match time {
        PostTime::Given(t) => t,
        PostTime::Server(now) => lasts.iter().copied().fold(now, i64::max),
    };
    for last in lasts {
        rrdfile::judge(t, last)?;
    }
    let u = Update { time: t, number: row.number, sub };
    for (r, path) in &files {
        rrdfile::ensure(path, *r, derive, t)?;
        app.writer.update(path, &u)?;
    }
    app.set_last_sub(row.id, sub);
    Ok(())
}

async fn get_graph(
    State(app): State<Arc<App>>,
    axum::extract::Path((service, section, graph)): Names,
) -> Response {
    get_graph_by_names(app, service, section, graph).await
}

/// GF's `GET /api/...` and its alias `/json/graph/...`.
pub async fn get_graph_by_names(app: Arc<App>, service: String, section: String, graph: String) -> Response {
    if let Err(m) = check_names(&service, &section, &graph) {
        return bad_request(m);
    }
    run(move || {
        Ok(match app.store().get(&service, &section, &graph)? {
            Some(g) => Json(g).into_response(),
            None => graph_not_found(),
        })
    })
    .await
}
