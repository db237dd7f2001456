//! GrowthForecast's JSON API over the metadata: read a graph or complex
//! (by path or id), list them, create a complex, edit either, delete
//! either (and `POST /delete/:s/:sec/:g`, GF's form delete, and
//! `POST /delete/:s/:sec`, every graph, with its files, and every complex
//! of a section, answered with GF's `location` of the service's list).
//!
//! Shapes: a graph is the store's [`crate::store::Graph`] (`complex:
//! false`); a complex is [`crate::store::Complex`] (`complex: true`,
//! `data: [{graph_id, type, gmode, stack}]`, `sumup` as a boolean).
//! Writes answer `{"error":0, ...}`; create and delete add GF's
//! `location`; create and edit add the new object as `data`. Errors are
//! `{"error":1,"messages":{...}}`: 400 for a bad body, 404 for an unknown
//! id or path, 409 when a create or rename targets a path in use.
//! (GF answers create-complex's 400/409 as plain text; the JSON shape
//! carries the same status and the same words.)

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::{parse_id, Names};
use crate::edit::{self, escape_segment};
use crate::params::check_names;
use crate::reply::{
    bad_request, complex_not_found, error_response, graph_not_found, location, now_secs, path_conflict, run,
};
use crate::store::{Graph, GraphName};
use crate::{rrdfile, App, WebError};

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/json/graph/{service}/{section}/{graph}", get(graph_by_names))
        .route("/json/graph/{service}", get(graph_by_id))
        .route("/json/complex/{service}/{section}/{graph}", get(complex_by_names))
        .route("/json/complex/{service}", get(complex_by_id))
        .route("/json/list/graph", get(list_graph))
        .route("/json/list/complex", get(list_complex))
        .route("/json/list/all", get(list_all))
        .route("/json/create/complex", post(create_complex))
        .route("/json/edit/graph/{service}", post(edit_graph))
        .route("/json/edit/complex/{service}", post(edit_complex))
        .route("/json/delete/graph/{service}", post(delete_graph_by_id))
        .route("/json/delete/graph/{service}/{section}/{graph}", post(delete_graph_by_names))
        .route("/delete/{service}/{section}/{graph}", post(delete_graph_by_names))
        .route("/delete/{service}/{section}", post(delete_section))
        .route("/json/delete/complex/{service}", post(delete_complex_by_id))
        .route("/json/delete/complex/{service}/{section}/{graph}", post(delete_complex_by_names))
}

async fn graph_by_names(State(app): State<Arc<App>>, Path((s, sec, g)): Names) -> Response {
    super::api::get_graph_by_names(app, s, sec, g).await
}

async fn graph_by_id(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let Some(id) = parse_id(&id) else { return graph_not_found() };
    run(move || {
        Ok(match app.store().get_by_id(id)? {
            Some(g) => Json(g).into_response(),
            None => graph_not_found(),
        })
    })
    .await
}

async fn complex_by_names(State(app): State<Arc<App>>, Path((s, sec, g)): Names) -> Response {
    if let Err(m) = check_names(&s, &sec, &g) {
        return bad_request(m);
    }
    run(move || {
        Ok(match app.store().get_complex(&s, &sec, &g)? {
            Some(c) => Json(c).into_response(),
            None => complex_not_found(),
        })
    })
    .await
}

async fn complex_by_id(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let Some(id) = parse_id(&id) else { return complex_not_found() };
    run(move || {
        Ok(match app.store().get_complex_by_id(id)? {
            Some(c) => Json(c).into_response(),
            None => complex_not_found(),
        })
    })
    .await
}

fn short(id: i64, s: &str, sec: &str, g: &str) -> GraphName {
    GraphName { id, service_name: s.into(), section_name: sec.into(), graph_name: g.into() }
}

async fn list_graph(State(app): State<Arc<App>>) -> Response {
    run(move || {
        let list: Vec<GraphName> = app
            .store()
            .all()?
            .iter()
            .map(|g| short(g.id, &g.service_name, &g.section_name, &g.graph_name))
            .collect();
        Ok(Json(list).into_response())
    })
    .await
}

async fn list_complex(State(app): State<Arc<App>>) -> Response {
    run(move || {
        let list: Vec<GraphName> = app
            .store()
            .all_complexes()?
            .iter()
            .map(|c| short(c.id, &c.service_name, &c.section_name, &c.graph_name))
            .collect();
        Ok(Json(list).into_response())
    })
    .await
}

/// Every graph, then every complex (GF's order).
async fn list_all(State(app): State<Arc<App>>) -> Response {
    run(move || {
        let store = app.store();
        let mut all: Vec<Value> = store.all()?.into_iter().map(|g| json!(g)).collect();
        all.extend(store.all_complexes()?.into_iter().map(|c| json!(c)));
        Ok(Json(all).into_response())
    })
    .await
}

fn list_location(headers: &HeaderMap, service: &str, section: &str) -> String {
    location(headers, &format!("/list/{}/{}", escape_segment(service), escape_segment(section)))
}

async fn create_complex(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    let body = match edit::body_object(&body) {
        Ok(b) => b,
        Err(m) => return bad_request(m),
    };
    run(move || {
        let store = app.store();
        let exists = |id: i64| store.get_by_id(id).ok().flatten().is_some();
        let spec = match edit::create_complex(&body, &exists) {
            Ok(s) => s,
            Err(m) => return Ok(bad_request(m)),
        };
        if store.path_taken(&spec.service_name, &spec.section_name, &spec.graph_name, None)? {
            return Ok(path_conflict(&spec.service_name, &spec.section_name, &spec.graph_name));
        }
        // Complexes are rows only, but unbounded rows are unbounded work
        // for every listing: the graph cap bounds them too.
        if u64::try_from(store.count_graphs()?.1).unwrap_or(0) >= app.config.max_graphs {
            app.metrics.refused("graph_cap");
            return Ok(error_response(
                StatusCode::FORBIDDEN,
                json!({"complex": format!(
                    "this server holds its maximum of {} complex graphs (rrdscale web --max-graphs)",
                    app.config.max_graphs
                )}),
            ));
        }
        let c = store.create_complex(&spec, now_secs())?;
        let loc = list_location(&headers, &c.service_name, &c.section_name);
        Ok(Json(json!({"error": 0, "location": loc, "data": c})).into_response())
    })
    .await
}

async fn edit_graph(State(app): State<Arc<App>>, Path(id): Path<String>, body: Bytes) -> Response {
    let Some(id) = parse_id(&id) else { return graph_not_found() };
    let body = match edit::body_object(&body) {
        Ok(b) => b,
        Err(m) => return bad_request(m),
    };
    run(move || {
        let store = app.store();
        let Some(old) = store.get_by_id(id)? else { return Ok(graph_not_found()) };
        let new = match edit::edit_graph(&old, &body) {
            Ok(g) => g,
            Err(m) => return Ok(bad_request(m)),
        };
        if store.path_taken(&new.service_name, &new.section_name, &new.graph_name, Some((false, id)))? {
            return Ok(path_conflict(&new.service_name, &new.section_name, &new.graph_name));
        }
        store.update_graph(&new)?;
        let saved = store.get_by_id(id)?;
        Ok(Json(json!({"error": 0, "data": saved})).into_response())
    })
    .await
}

async fn edit_complex(State(app): State<Arc<App>>, Path(id): Path<String>, body: Bytes) -> Response {
    let Some(id) = parse_id(&id) else { return complex_not_found() };
    let body = match edit::body_object(&body) {
        Ok(b) => b,
        Err(m) => return bad_request(m),
    };
    run(move || {
        let store = app.store();
        let Some(old) = store.get_complex_by_id(id)? else { return Ok(complex_not_found()) };
        let exists = |gid: i64| store.get_by_id(gid).ok().flatten().is_some();
        let spec = match edit::edit_complex(&old, &body, &exists) {
            Ok(s) => s,
            Err(m) => return Ok(bad_request(m)),
        };
        if store.path_taken(&spec.service_name, &spec.section_name, &spec.graph_name, Some((true, id)))? {
            return Ok(path_conflict(&spec.service_name, &spec.section_name, &spec.graph_name));
        }
        store.update_complex(id, &spec, now_secs())?;
        let saved = store.get_complex_by_id(id)?;
        Ok(Json(json!({"error": 0, "data": saved})).into_response())
    })
    .await
}

/// Removes the metadata and both RRD files (flushed first when a daemon
/// holds values for them, so it does not write them back).
fn delete_graph(app: &App, g: &Graph, headers: &HeaderMap) -> Result<Response, WebError> {
    remove_graph(app, g)?;
    let loc = list_location(headers, &g.service_name, &g.section_name);
    Ok(Json(json!({"error": 0, "location": loc})).into_response())
}

/// GF's section delete: every graph (and its files) and every complex in
/// it; a section with nothing in it is GF's success too.
async fn delete_section(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path((s, sec)): Path<(String, String)>,
) -> Response {
    if let Err(m) = check_names(&s, &sec, "-") {
        return bad_request(m);
    }
    run(move || {
        let (graphs, complexes) = app.store().section(&s, &sec)?;
        for c in &complexes {
            app.store().delete_complex(c.id)?;
        }
        for g in &graphs {
            remove_graph(&app, g)?;
        }
        let loc = location(&headers, &format!("/list/{}", escape_segment(&s)));
        Ok(Json(json!({"error": 0, "location": loc, "deleted": {"graphs": graphs.len(), "complexes": complexes.len()}}))
            .into_response())
    })
    .await
}

fn remove_graph(app: &App, g: &Graph) -> Result<(), WebError> {
    for r in [rrdfile::Resolution::FiveMinute, rrdfile::Resolution::OneMinute] {
        let path = rrdfile::path(&app.rrd_dir, g.id, r);
        if path.exists() {
            app.writer.flush(&path)?;
        }
    }
    app.store().delete_graph(g.id)?;
    let _files = app.write_files();
    rrdfile::remove(&app.rrd_dir, g.id)?;
    Ok(())
}

async fn delete_graph_by_id(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let Some(id) = parse_id(&id) else { return graph_not_found() };
    run(move || {
        let found = app.store().get_by_id(id)?;
        match found {
            Some(g) => delete_graph(&app, &g, &headers),
            None => Ok(graph_not_found()),
        }
    })
    .await
}

async fn delete_graph_by_names(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path((s, sec, g)): Names,
) -> Response {
    if let Err(m) = check_names(&s, &sec, &g) {
        return bad_request(m);
    }
    run(move || {
        let found = app.store().get(&s, &sec, &g)?;
        match found {
            Some(g) => delete_graph(&app, &g, &headers),
            None => Ok(graph_not_found()),
        }
    })
    .await
}

fn delete_complex(app: &App, id: i64, headers: &HeaderMap) -> Result<Response, WebError> {
    let store = app.store();
    let Some(c) = store.get_complex_by_id(id)? else { return Ok(complex_not_found()) };
    store.delete_complex(id)?;
    let loc = list_location(headers, &c.service_name, &c.section_name);
    Ok(Json(json!({"error": 0, "location": loc})).into_response())
}

async fn delete_complex_by_id(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let Some(id) = parse_id(&id) else { return complex_not_found() };
    run(move || delete_complex(&app, id, &headers)).await
}

async fn delete_complex_by_names(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path((s, sec, g)): Names,
) -> Response {
    if let Err(m) = check_names(&s, &sec, &g) {
        return bad_request(m);
    }
    run(move || {
        let found = app.store().get_complex(&s, &sec, &g)?;
        match found {
            Some(c) => delete_complex(&app, c.id, &headers),
            None => Ok(complex_not_found()),
        }
    })
    .await
}
