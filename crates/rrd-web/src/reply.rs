//! The answers every route shares: GrowthForecast's error object
//! (`{"error":1,"messages":{...}}`) with its status, not-found answers,
//! and running blocking work (SQLite, RRD files, drawing) off the async
//! threads.
//!
//! Invariant: an internal failure is answered 500 with the same shape,
//! its message under `server`; a panic in a worker becomes a 500 too; a
//! parameter refused deep in the drawing ([`WebError::Param`]) is a 400.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::WebError;

pub fn error_response(status: StatusCode, messages: Value) -> Response {
    (status, Json(json!({"error": 1, "messages": messages}))).into_response()
}

pub fn bad_request(messages: Value) -> Response {
    error_response(StatusCode::BAD_REQUEST, messages)
}

/// The answer for an error a route did not handle itself: a refused
/// parameter is the client's (400 under its key), the rest are 500.
pub fn internal(e: WebError) -> Response {
    match e {
        WebError::Param { key, message } => bad_request(json!({ key: message })),
        e => error_response(StatusCode::INTERNAL_SERVER_ERROR, json!({"server": e.to_string()})),
    }
}

pub fn graph_not_found() -> Response {
    error_response(StatusCode::NOT_FOUND, json!({"graph": "graph not found"}))
}

pub fn complex_not_found() -> Response {
    error_response(StatusCode::NOT_FOUND, json!({"complex": "complex graph not found"}))
}

/// 409: GF's answer when a create or rename targets a path in use.
pub fn path_conflict(service: &str, section: &str, graph: &str) -> Response {
    error_response(
        StatusCode::CONFLICT,
        json!({"graph_name": format!("Invalid target: graph path already exists: {service}/{section}/{graph}")}),
    )
}

/// Runs `f` on the blocking pool; its error (or a panic) becomes a 500.
pub async fn run(f: impl FnOnce() -> Result<Response, WebError> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => internal(e),
        Err(e) => internal(WebError::Join(e.to_string())),
    }
}

/// GF's `location`: `http://<Host>/list/<service>/<section>` (a path
/// alone when the request named no host).
pub fn location(headers: &HeaderMap, path: &str) -> String {
    match headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok()) {
        Some(host) if !host.is_empty() && !host.contains(['/', ' ']) => format!("http://{host}{path}"),
        _ => path.to_string(),
    }
}

pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
