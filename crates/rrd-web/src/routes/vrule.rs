//! `POST /vrule/api[/:service[/:section[/:graph]]]` and
//! `GET /vrule/summary[/...]`: the routes of [`crate::vrule`].

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use crate::params::{params, valid_name};
use crate::reply::{bad_request, error_response, now_secs, run};
use crate::vrule::{self, graph_path, MAX_VRULES};
use crate::App;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/vrule/api", post(add0))
        .route("/vrule/api/{service}", post(add1))
        .route("/vrule/api/{service}/{section}", post(add2))
        .route("/vrule/api/{service}/{section}/{graph}", post(add3))
        .route("/vrule/summary", get(list0))
        .route("/vrule/summary/{service}", get(list1))
        .route("/vrule/summary/{service}/{section}", get(list2))
        .route("/vrule/summary/{service}/{section}/{graph}", get(list3))
}

/// The path's parts, each a valid name; `Err` is the 400's messages.
fn checked(parts: &[String]) -> Result<String, serde_json::Value> {
    let keys = ["service_name", "section_name", "graph_name"];
    for (key, v) in keys.iter().zip(parts) {
        if !valid_name(v) {
            return Err(json!({ *key: format!("{key} is not a valid name") }));
        }
    }
    Ok(graph_path(&parts.iter().map(String::as_str).collect::<Vec<_>>()))
}

async fn add(app: Arc<App>, parts: Vec<String>, query: Option<String>, body: Bytes) -> Response {
    let path = match checked(&parts) {
        Ok(p) => p,
        Err(m) => return bad_request(m),
    };
    let rule = match vrule::from_params(&params(query.as_deref(), &body), path, now_secs()) {
        Ok(v) => v,
        Err(m) => return bad_request(m),
    };
    run(move || {
        Ok(match app.store().add_vrule(&rule, MAX_VRULES)? {
            Some(saved) => Json(json!({"error": 0, "data": saved})).into_response(),
            None => error_response(
                StatusCode::FORBIDDEN,
                json!({"vrule": format!("this server holds its maximum of {MAX_VRULES} vrules")}),
            ),
        })
    })
    .await
}

/// The rules a graph at this path draws, in the span of `t` (default
/// `all`), `from`, `to`.
async fn list(app: Arc<App>, parts: Vec<String>, query: Option<String>) -> Response {
    if let Err(m) = checked(&parts) {
        return bad_request(m);
    }
    let p = params(query.as_deref(), &[]);
    let now = now_secs();
    let (from, to) = match p.get("t").map(String::as_str) {
        None | Some("") | Some("all") => (0, i64::from(u32::MAX)),
        Some(_) => match crate::range::parse(&p, now) {
            Ok(r) => (r.range.start, r.range.end),
            Err(m) => return bad_request(m),
        },
    };
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let paths: Vec<String> = (0..=parts.len()).map(|n| graph_path(&parts[..n])).collect();
    run(move || Ok(Json(app.store().vrules(&paths, from, to, MAX_VRULES as usize)?).into_response())).await
}

async fn add0(State(app): State<Arc<App>>, RawQuery(q): RawQuery, body: Bytes) -> Response {
    add(app, vec![], q, body).await
}
async fn add1(
    State(app): State<Arc<App>>,
    Path(s): Path<String>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    add(app, vec![s], q, body).await
}
async fn add2(
    State(app): State<Arc<App>>,
    Path((s, sec)): Path<(String, String)>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    add(app, vec![s, sec], q, body).await
}
async fn add3(
    State(app): State<Arc<App>>,
    Path((s, sec, g)): super::Names,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    add(app, vec![s, sec, g], q, body).await
}
async fn list0(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    list(app, vec![], q).await
}
async fn list1(State(app): State<Arc<App>>, Path(s): Path<String>, RawQuery(q): RawQuery) -> Response {
    list(app, vec![s], q).await
}
async fn list2(
    State(app): State<Arc<App>>,
    Path((s, sec)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> Response {
    list(app, vec![s, sec], q).await
}
async fn list3(
    State(app): State<Arc<App>>,
    Path((s, sec, g)): super::Names,
    RawQuery(q): RawQuery,
) -> Response {
    list(app, vec![s, sec, g], q).await
}
