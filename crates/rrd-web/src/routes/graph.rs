//! Pictures and numbers over time, for a graph, a complex, or GF's
//! ad-hoc list (`/graph/AREA:1:gauge:0:LINE1:2:subtract:1`, i.e. type,
//! graph id, gmode, stack, repeated):
//! - `GET /graph/...`, `/complex/graph/...`: PNG (`Cache-Control:
//!   max-age=60`, GF's 5-minute files change no faster than that);
//! - `GET /xport/...`, `/complex/xport/...`: GF's export JSON
//!   (`start_timestamp`, `end_timestamp`, `step`, `columns`,
//!   `column_names`, `rows`; unknowns are `null`);
//! - `GET /summary/...`, `/complex/summary/...`: `{"s/sec/g": [cur, avg,
//!   max, min], "total": [...]}` as PRINT's `%.8lf` text, like GF;
//! - `GET /json/series/...`, `/json/series/complex/...`: rows for
//!   Grafana's Infinity datasource (`[{"time": ISO-8601, "value": x}]`).
//!
//! Every one takes the parameters of [`crate::range`]; a bad one is a 400
//! with GF's message, an unknown graph or complex a 404, a list or
//! complex of more than [`crate::MAX_SERIES`] graphs a 400.
//!
//! At most [`crate::Config::max_renders`] of them are drawn at once (each
//! holds a core and the rows it reads): a request waits up to
//! [`crate::Config::render_wait`] for a slot, then gets 503 with
//! `Retry-After`. The slot is held by the drawing itself, so a client
//! that hangs up does not free it before the work ends.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use super::{parse_id, Names};
use crate::params::{check_names, params};
use crate::range::{self, DrawRequest};
use crate::reply::{bad_request, complex_not_found, error_response, graph_not_found, now_secs, run};
use crate::series::{self, complex_members, Member};
use crate::store::Store;
use crate::{App, WebError};

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/graph/{service}/{section}/{graph}", get(graph_png))
        .route("/xport/{service}/{section}/{graph}", get(graph_xport))
        .route("/summary/{service}/{section}/{graph}", get(graph_summary))
        .route("/json/series/{service}/{section}/{graph}", get(graph_series))
        .route("/complex/graph/{service}/{section}/{graph}", get(complex_png))
        .route("/complex/xport/{service}/{section}/{graph}", get(complex_xport))
        .route("/complex/summary/{service}/{section}/{graph}", get(complex_summary))
        .route("/json/series/complex/{service}/{section}/{graph}", get(complex_series))
        .route("/graph/{service}", get(adhoc_png))
        .route("/xport/{service}", get(adhoc_xport))
        .route("/summary/{service}", get(adhoc_summary))
}

#[derive(Clone, Copy)]
enum Output {
    Png,
    Xport,
    Summary,
    Series,
}

/// What to draw: found under the store's lock, drawn after it.
enum Target {
    Graph(String, String, String),
    Complex(String, String, String),
    /// GF's colon list.
    Adhoc(String),
}

/// A target's members, whether it is a single graph, and a complex's
/// own `sumup`.
type Found = (Vec<Member>, bool, Option<bool>);

/// The members of `target`; the inner `Err` is the answer to give instead
/// (404, or 400 for a malformed ad-hoc list).
fn members(store: &Store, target: &Target) -> Result<Result<Found, Response>, WebError> {
    Ok(match target {
        Target::Graph(s, sec, g) => match store.get(s, sec, g)? {
            Some(g) => Ok((vec![Member::single(g)], true, None)),
            None => Err(graph_not_found()),
        },
        Target::Complex(s, sec, g) => match store.get_complex(s, sec, g)? {
            Some(c) => Ok((complex_members(store, &c)?, false, Some(c.sumup))),
            None => Err(complex_not_found()),
        },
        Target::Adhoc(spec) => {
            let parts: Vec<&str> = spec.split(':').collect();
            if parts.len() > 4 * crate::MAX_SERIES {
                return Ok(Err(too_many_series()));
            }
            let mut out = Vec::new();
            for chunk in parts.chunks(4) {
                let [kind, id, gmode, stack] = chunk else { break };
                if !matches!(*kind, "AREA" | "LINE1" | "LINE2") || !matches!(*gmode, "gauge" | "subtract") {
                    return Ok(Err(bad_request(serde_json::json!({"complex": "invalid graph list"}))));
                }
                // GF skips ids it cannot find.
                let Some(graph) = parse_id(id).map(|i| store.get_by_id(i)).transpose()?.flatten() else {
                    continue;
                };
                out.push(Member {
                    graph,
                    kind: Some(kind.to_string()),
                    gmode: Some(gmode.to_string()),
                    stack: *stack == "1",
                });
            }
            if out.is_empty() {
                Err(graph_not_found())
            } else {
                Ok((out, false, None))
            }
        }
    })
}

/// The 400 for a list or complex of more than [`crate::MAX_SERIES`]
/// graphs.
fn too_many_series() -> Response {
    bad_request(serde_json::json!({"complex": format!(
        "at most {} graphs are drawn together; this list has more",
        crate::MAX_SERIES
    )}))
}

async fn respond(app: Arc<App>, target: Target, query: Option<String>, output: Output) -> Response {
    let names_ok = match &target {
        Target::Graph(s, sec, g) | Target::Complex(s, sec, g) => check_names(s, sec, g),
        Target::Adhoc(_) => Ok(()),
    };
    let now = now_secs();
    let mut req: DrawRequest = match names_ok.and_then(|()| range::parse(&params(query.as_deref(), &[]), now))
    {
        Ok(r) => r,
        Err(m) => return bad_request(m),
    };
    let slot = tokio::time::timeout(app.config.render_wait, app.renders.clone().acquire_owned()).await;
    let Ok(Ok(permit)) = slot else {
        app.metrics.refused("busy");
        let mut r = error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({"server": format!(
                "the server is drawing {} graphs at once, its limit (rrdscale web --max-renders); try again shortly",
                app.config.max_renders
            )}),
        );
        r.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("2"));
        return r;
    };
    run(move || {
        let _permit = permit;
        let found = members(&app.store(), &target)?;
        let (members, single, own_sumup) = match found {
            Ok(m) => m,
            Err(response) => return Ok(response),
        };
        // A complex draws its total when it was created with sumup, unless
        // the request says otherwise (GF's pages add `sumup=` from it).
        req.sumup = req.sumup.or(own_sumup);
        if members.is_empty() {
            // A complex whose graphs were all deleted.
            return Ok(graph_not_found());
        }
        if members.len() > crate::MAX_SERIES {
            // A complex stored before the bound existed.
            return Ok(too_many_series());
        }
        Ok(match output {
            Output::Png => {
                let began = Instant::now();
                let drawn = series::draw(&app, &members, &req, now)?;
                app.metrics.render(began.elapsed());
                ([(header::CONTENT_TYPE, "image/png"), (header::CACHE_CONTROL, "max-age=60")], drawn.png)
                    .into_response()
            }
            Output::Summary => {
                Json(Value::Object(series::draw(&app, &members, &req, now)?.summary)).into_response()
            }
            Output::Xport => {
                Json(series::xport_json(&series::export(&app, &members, &req, now)?)).into_response()
            }
            Output::Series => {
                Json(series::series_json(&series::export(&app, &members, &req, now)?, single)).into_response()
            }
        })
    })
    .await
}

macro_rules! by_names {
    ($name:ident, $target:ident, $output:expr) => {
        async fn $name(
            State(app): State<Arc<App>>,
            Path((s, sec, g)): Names,
            RawQuery(q): RawQuery,
        ) -> Response {
            respond(app, Target::$target(s, sec, g), q, $output).await
        }
    };
}

by_names!(graph_png, Graph, Output::Png);
by_names!(graph_xport, Graph, Output::Xport);
by_names!(graph_summary, Graph, Output::Summary);
by_names!(graph_series, Graph, Output::Series);
by_names!(complex_png, Complex, Output::Png);
by_names!(complex_xport, Complex, Output::Xport);
by_names!(complex_summary, Complex, Output::Summary);
by_names!(complex_series, Complex, Output::Series);

macro_rules! adhoc {
    ($name:ident, $output:expr) => {
        async fn $name(
            State(app): State<Arc<App>>,
            Path(spec): Path<String>,
            RawQuery(q): RawQuery,
        ) -> Response {
            respond(app, Target::Adhoc(spec), q, $output).await
        }
    };
}

adhoc!(adhoc_png, Output::Png);
adhoc!(adhoc_xport, Output::Xport);
adhoc!(adhoc_summary, Output::Summary);
