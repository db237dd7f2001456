//! GrowthForecast's JSON API beyond posting: complexes, edit, delete,
//! xport/summary/series, time ranges, gmode/cf, `/metrics`, and the error
//! shapes, through a real socket. xport numbers are checked against
//! `rrd_engine::xport` and the real `rrdtool xport` on the same file.

mod api_support;

use std::path::Path;

use api_support::*;
use serde_json::{json, Value};

/// Posts a gauge series one step apart, ending 10 steps before now.
/// Returns (graph id, time of the first post).
async fn gauge_series(addr: std::net::SocketAddr, path: &str, values: &[i64]) -> (i64, i64) {
    let n = values.len() as i64;
    let t0 = (now() / 300 - 10 - n) * 300;
    let mut id = 0;
    for (k, v) in values.iter().enumerate() {
        let d = post_number(addr, path, &format!("number={v}&timestamp={}", t0 + k as i64 * 300)).await;
        id = d["id"].as_i64().unwrap();
    }
    (id, t0)
}

fn rrd(dir: &Path, id: i64) -> String {
    dir.join("data").join(format!("{id}.rrd")).canonicalize().unwrap().to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xport_equals_the_engine_and_rrdtool() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let (id, t0) = gauge_series(addr, "/api/svc/sec/load", &[10, 20, 40, 70, 110, 160]).await;
    let (from, to) = (t0 - 600, t0 + 6 * 300 + 600);
    let q = format!("t=c&from={from}&to={to}");
    let (st, x) = json(addr, "GET", &format!("/xport/svc/sec/load?{q}"), "").await;
    assert_eq!(st, 200, "{x}");
    assert_eq!(x["columns"], 1);
    assert_eq!(x["column_names"], json!(["load"]));
    assert_eq!(x["step"], 300);

    // The same definitions, straight through the engine.
    let file = rrd(dir.path(), id);
    let elements = vec![
        format!("DEF:num0t={file}:num:AVERAGE"),
        "CDEF:num0=num0t,-1000000000,1000000000000000,LIMIT,1,*".to_string(),
        "XPORT:num0:load".to_string(),
    ];
    let range =
        rrd_engine::xport::XportRange { start: from, end: to, step_secs: 0, max_rows: 390, now: now() };
    let e = rrd_engine::xport::xport(&range, &elements).unwrap();
    assert_eq!(
        (x["start_timestamp"].as_i64(), x["end_timestamp"].as_i64()),
        (Some(e.start + e.step_secs), Some(e.end))
    );
    let rows = x["rows"].as_array().unwrap();
    assert_eq!(rows.len(), e.row_count());
    for (row, v) in rows.iter().zip(&e.data) {
        match row[0].as_f64() {
            Some(got) => assert_eq!(got, *v),
            None => assert!(v.is_nan(), "null for {v}"),
        }
    }
    let known: Vec<f64> = rows.iter().filter_map(|r| r[0].as_f64()).collect();
    assert!(known.contains(&160.0) && known.contains(&40.0), "{known:?}");

    // And through the real rrdtool.
    let mut args: Vec<String> =
        ["xport", "--json", "-m", "390", "-s", &from.to_string(), "-e", &to.to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
    args.extend(elements);
    let r: Value = serde_json::from_str(&rrdtool(&args)).unwrap();
    assert_eq!(r["meta"]["start"], x["start_timestamp"]);
    assert_eq!(r["meta"]["end"], x["end_timestamp"]);
    assert_eq!(r["meta"]["step"], x["step"]);
    let theirs = r["data"].as_array().unwrap();
    assert_eq!(theirs.len(), rows.len());
    for (a, b) in rows.iter().zip(theirs) {
        match (a[0].as_f64(), b[0].as_f64()) {
            (Some(x), Some(y)) => assert!((x - y).abs() <= 1e-9 * y.abs().max(1.0), "{x} vs {y}"),
            (None, None) => {}
            other => panic!("rrdscale and rrdtool disagree on a row: {other:?}"),
        }
    }

    // gmode=subtract exports `sub` (the difference from the previous
    // number), cf=MAX the MAX archive.
    let (_, s) = json(addr, "GET", &format!("/xport/svc/sec/load?{q}&gmode=subtract"), "").await;
    let subs: Vec<f64> = s["rows"].as_array().unwrap().iter().filter_map(|r| r[0].as_f64()).collect();
    assert_eq!(subs, [10.0, 20.0, 30.0, 40.0, 50.0]);
    let (st, m) = json(addr, "GET", &format!("/xport/svc/sec/load?{q}&cf=MAX"), "").await;
    assert_eq!(st, 200);
    assert_eq!(m["rows"].as_array().unwrap().iter().filter_map(|r| r[0].as_f64()).fold(0.0, f64::max), 160.0);

    // The Grafana series: one object per row, ISO time, null unknowns.
    let (st, series) = json(addr, "GET", &format!("/json/series/svc/sec/load?{q}"), "").await;
    assert_eq!(st, 200);
    let series = series.as_array().unwrap();
    assert_eq!(series.len(), rows.len());
    let first = series[0]["time"].as_str().unwrap();
    assert!(first.len() == 20 && first.ends_with('Z') && first.as_bytes()[10] == b'T', "{first}");
    for (o, r) in series.iter().zip(rows) {
        assert_eq!(o["value"], r[0]);
        assert_eq!(o.as_object().unwrap().len(), 2);
    }
    assert!(series.iter().any(|o| o["value"].is_null()));
    // Row stamps as `rrdtool xport --showtime` prints them.
    let stamp = x["start_timestamp"].as_i64().unwrap();
    assert_eq!(first, rrd_web::store::iso_time(stamp));
    assert!(series.iter().any(|o| o["value"] == 160.0));

    // summary: GF's PRINT strings (cur, avg, max, min).
    let (st, sum) = json(addr, "GET", &format!("/summary/svc/sec/load?{q}"), "").await;
    assert_eq!(st, 200, "{sum}");
    let four = sum["svc/sec/load"].as_array().unwrap();
    assert_eq!(four.len(), 4);
    assert_eq!(four[2], "160.00000000");
    // The first number lands in a PDP the file mostly did not cover yet,
    // so it is unknown there (as with rrdtool and GF).
    assert_eq!(four[3], "20.00000000");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// One scenario: each step builds on the one before.
#[allow(clippy::too_many_lines)]
async fn complex_create_read_draw_export() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let (a, t0) = gauge_series(addr, "/api/web/hits/a", &[1, 2, 3, 4]).await;
    let (b, _) = gauge_series(addr, "/api/web/hits/b", &[10, 20, 30, 40]).await;
    let spec = json!({
        "service_name": "web", "section_name": "hits", "graph_name": "both",
        "description": "a and b", "sumup": true,
        "data": [{"graph_id": a, "type": "AREA", "gmode": "gauge", "stack": false},
                 {"graph_id": b, "type": "LINE2", "gmode": "gauge", "stack": true}]
    });
    let (st, v) = post_json(addr, "/json/create/complex", &spec).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["error"], 0);
    assert_eq!(v["location"], "http://gf.test/list/web/hits");
    let cid = v["data"]["id"].as_i64().unwrap();

    for path in [format!("/json/complex/{cid}"), "/json/complex/web/hits/both".to_string()] {
        let (st, c) = json(addr, "GET", &path, "").await;
        assert_eq!(st, 200, "{path}");
        assert_eq!(c["complex"], true);
        assert_eq!(c["sumup"], true);
        assert_eq!(c["sort"], 19);
        assert_eq!((c["service_name"].as_str(), c["graph_name"].as_str()), (Some("web"), Some("both")));
        assert_eq!(c["description"], "a and b");
        assert_eq!(
            c["data"],
            json!([{"graph_id": a, "type": "AREA", "gmode": "gauge", "stack": false},
                   {"graph_id": b, "type": "LINE2", "gmode": "gauge", "stack": true}])
        );
        for key in ["id", "created_at", "updated_at"] {
            assert!(c.get(key).is_some(), "{key}");
        }
    }
    let (_, list) = json(addr, "GET", "/json/list/complex", "").await;
    assert_eq!(
        list,
        json!([{"id": cid, "service_name": "web", "section_name": "hits", "graph_name": "both"}])
    );
    let (_, all) = json(addr, "GET", "/json/list/all", "").await;
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!((all[0]["complex"].as_bool(), all[2]["complex"].as_bool()), (Some(false), Some(true)));
    assert_eq!(all[2]["id"], cid);

    // Drawn: a PNG of exactly the requested size with graphonly.
    let (st, png) =
        http(addr, "GET", "/complex/graph/web/hits/both?t=d&width=320&height=140&graphonly=1", "").await;
    assert_eq!(st, 200);
    assert_eq!(png_size(&png), (320, 140));
    let (st, png) = http(addr, "GET", "/complex/graph/web/hits/both?t=w&width=300&height=100", "").await;
    assert_eq!(st, 200);
    let (w, h) = png_size(&png);
    assert!(w > 300 && h > 100, "{w}x{h}");
    // GF's ad-hoc list draws too.
    let (st, png) =
        http(addr, "GET", &format!("/graph/AREA:{a}:gauge:0:AREA:{b}:gauge:1?graphonly=1"), "").await;
    assert_eq!(st, 200);
    assert_eq!(png_size(&png), (390, 110));

    // Exported: one column per graph plus the total.
    let q = format!("t=c&from={}&to={}", t0 - 300, t0 + 5 * 300);
    let (st, x) = json(addr, "GET", &format!("/complex/xport/web/hits/both?{q}"), "").await;
    assert_eq!(st, 200, "{x}");
    assert_eq!(x["column_names"], json!(["a", "b", "total"]));
    let mut saw = 0;
    for r in x["rows"].as_array().unwrap() {
        if let (Some(p), Some(q), Some(t)) = (r[0].as_f64(), r[1].as_f64(), r[2].as_f64()) {
            assert_eq!(p * 10.0, q);
            assert_eq!(p + q, t);
            saw += 1;
        }
    }
    assert_eq!(saw, 3, "the first post's PDP is unknown, the other three are complete");
    let (_, s) = json(addr, "GET", &format!("/json/series/complex/web/hits/both?{q}"), "").await;
    assert!(
        s.as_array().unwrap().iter().any(|o| o["a"] == 4.0 && o["b"] == 40.0 && o["total"] == 44.0),
        "{s}"
    );
    let (st, sum) = json(addr, "GET", &format!("/complex/summary/web/hits/both?{q}&sumup=1"), "").await;
    assert_eq!(st, 200, "{sum}");
    assert_eq!(sum["web/hits/b"][2], "40.00000000");
    assert_eq!(sum["total"][2], "44.00000000");

    // Refusals: the same path again, too few graphs, unknown graph, names
    // that could be paths, a body that is not JSON.
    let (st, v) = post_json(addr, "/json/create/complex", &spec).await;
    assert_eq!((st, v["error"].as_i64()), (409, Some(1)), "{v}");
    let mut graph_path = spec.clone();
    graph_path["graph_name"] = json!("a");
    let (st, _) = post_json(addr, "/json/create/complex", &graph_path).await;
    assert_eq!(st, 409, "a complex cannot take a graph's path");
    let mut one = spec.clone();
    one["graph_name"] = json!("one");
    one["data"] = json!([{"graph_id": a}]);
    let (st, v) = post_json(addr, "/json/create/complex", &one).await;
    assert_eq!((st, v["messages"]["data"].is_string()), (400, true), "{v}");
    let mut unknown = spec.clone();
    unknown["graph_name"] = json!("unknown");
    unknown["data"] = json!([{"graph_id": a}, {"graph_id": 999}]);
    let (st, v) = post_json(addr, "/json/create/complex", &unknown).await;
    assert_eq!((st, v["messages"]["data[1]"].is_string()), (400, true), "{v}");
    let mut traversal = spec.clone();
    traversal["service_name"] = json!("../../etc");
    let (st, v) = post_json(addr, "/json/create/complex", &traversal).await;
    assert_eq!((st, v["messages"]["service_name"].is_string()), (400, true), "{v}");
    let (st, v) = post_raw(addr, "/json/create/complex", "{not json").await;
    assert_eq!((st, v["error"].as_i64(), v["messages"]["body"].is_string()), (400, Some(1), true));
    let (st, _) = http(addr, "GET", "/complex/graph/web/hits/nope", "").await;
    assert_eq!(st, 404);
    let (st, _) = json(addr, "GET", "/json/complex/12345", "").await;
    assert_eq!(st, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_then_read_back_and_delete_then_404() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let (a, _) = gauge_series(addr, "/api/s/sec/a", &[1, 2]).await;
    let (b, _) = gauge_series(addr, "/api/s/sec/b", &[3, 4]).await;

    let edit = json!({"color": "#112233", "description": "edited", "sort": 7, "ulimit": 500, "llimit": "-5",
                      "sulimit": 50, "sllimit": -50, "type": "LINE2", "stype": "LINE1", "adjust": "/",
                      "adjustval": "8", "unit": "req/s", "graph_name": "a2", "number": 999, "id": 12345});
    let (st, v) = post_json(addr, &format!("/json/edit/graph/{a}"), &edit).await;
    assert_eq!((st, v["error"].as_i64()), (200, Some(0)), "{v}");
    let (st, g) = json(addr, "GET", &format!("/json/graph/{a}"), "").await;
    assert_eq!(st, 200);
    assert_eq!(
        (
            g["color"].as_str(),
            g["description"].as_str(),
            g["sort"].as_i64(),
            g["ulimit"].as_i64(),
            g["llimit"].as_i64()
        ),
        (Some("#112233"), Some("edited"), Some(7), Some(500), Some(-5))
    );
    assert_eq!((g["sulimit"].as_i64(), g["sllimit"].as_i64()), (Some(50), Some(-50)));
    assert_eq!((g["type"].as_str(), g["stype"].as_str()), (Some("LINE2"), Some("LINE1")));
    assert_eq!(
        (g["adjust"].as_str(), g["adjustval"].as_str(), g["unit"].as_str()),
        (Some("/"), Some("8"), Some("req/s"))
    );
    assert_eq!(
        (g["graph_name"].as_str(), g["number"].as_i64(), g["id"].as_i64()),
        (Some("a2"), Some(2), Some(a))
    );
    assert_eq!(g["complex"], false);
    let (st, _) = json(addr, "GET", "/api/s/sec/a", "").await;
    assert_eq!(st, 404, "the old name is gone");
    let (st, _) = json(addr, "GET", "/json/graph/s/sec/a2", "").await;
    assert_eq!(st, 200);
    // The edit shows in the data: adjust "/" 8 divides, the unit is drawn.
    let (_, x) = json(addr, "GET", "/xport/s/sec/a2?t=h", "").await;
    assert!(x["rows"].as_array().unwrap().iter().any(|r| r[0] == 0.25), "{x}");
    let (st, png) = http(addr, "GET", "/graph/s/sec/a2?t=h", "").await;
    assert_eq!(st, 200);
    png_size(&png);

    // Refused edits: bad values, a rename onto another graph, unknown id.
    let (st, v) =
        post_json(addr, &format!("/json/edit/graph/{a}"), &json!({"color": "blue", "sort": 99})).await;
    assert_eq!(st, 400);
    assert!(v["messages"]["color"].is_string() && v["messages"]["sort"].is_string(), "{v}");
    let (st, v) = post_json(addr, &format!("/json/edit/graph/{a}"), &json!({"graph_name": "b"})).await;
    assert_eq!((st, v["error"].as_i64()), (409, Some(1)));
    let (st, _) = post_json(addr, "/json/edit/graph/9999", &json!({"sort": 1})).await;
    assert_eq!(st, 404);
    let (st, _) = post_raw(addr, &format!("/json/edit/graph/{a}"), "[1,2]").await;
    assert_eq!(st, 400);

    // Complex edit.
    let spec = json!({"service_name": "s", "section_name": "sec", "graph_name": "c",
                      "data": [{"graph_id": a}, {"graph_id": b}]});
    let (_, v) = post_json(addr, "/json/create/complex", &spec).await;
    let cid = v["data"]["id"].as_i64().unwrap();
    let (st, v) = post_json(
        addr,
        &format!("/json/edit/complex/{cid}"),
        &json!({"sumup": 1, "description": "d", "graph_name": "c2",
                "data": [{"graph_id": b, "type": "LINE1", "gmode": "subtract", "stack": "0"}, {"graph_id": a}]}),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let (_, c) = json(addr, "GET", "/json/complex/s/sec/c2", "").await;
    assert_eq!(
        (c["sumup"].as_bool(), c["description"].as_str(), c["id"].as_i64()),
        (Some(true), Some("d"), Some(cid))
    );
    assert_eq!(c["data"][0], json!({"graph_id": b, "type": "LINE1", "gmode": "subtract", "stack": false}));
    let (st, _) =
        post_json(addr, &format!("/json/edit/complex/{cid}"), &json!({"data": [{"graph_id": b}]})).await;
    assert_eq!(st, 400);

    // Deletes: files go with the graph; then everything answers 404.
    let files = |id: i64| {
        [format!("{id}.rrd"), format!("{id}_s.rrd")].map(|f| dir.path().join("data").join(f).exists())
    };
    assert_eq!(files(a), [true, true]);
    let (st, v) = json(addr, "POST", &format!("/json/delete/graph/{a}"), "").await;
    assert_eq!((st, v["error"].as_i64()), (200, Some(0)), "{v}");
    assert_eq!(v["location"], "http://gf.test/list/s/sec");
    assert_eq!(files(a), [false, false]);
    for path in [format!("/json/graph/{a}"), "/api/s/sec/a2".into(), "/xport/s/sec/a2".into()] {
        let (st, v) = json(addr, "GET", &path, "").await;
        assert_eq!((st, v["error"].as_i64()), (404, Some(1)), "{path}");
    }
    let (st, _) = json(addr, "POST", &format!("/json/delete/graph/{a}"), "").await;
    assert_eq!(st, 404);
    // The complex still draws with the graph that is left.
    let (st, _) = http(addr, "GET", "/complex/graph/s/sec/c2", "").await;
    assert_eq!(st, 200);
    let (st, _) = json(addr, "POST", "/delete/s/sec/b", "").await;
    assert_eq!(st, 200);
    assert_eq!(files(b), [false, false]);
    let (st, _) = json(addr, "POST", &format!("/json/delete/complex/{cid}"), "").await;
    assert_eq!(st, 200);
    let (st, _) = json(addr, "GET", &format!("/json/complex/{cid}"), "").await;
    assert_eq!(st, 404);
    let (st, _) = json(addr, "POST", &format!("/json/delete/complex/{cid}"), "").await;
    assert_eq!(st, 404);
    let (_, all) = json(addr, "GET", "/json/list/all", "").await;
    assert_eq!(all, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_term_draws_and_short_terms_read_the_minute_file() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let t0 = (now() / 60 - 12) * 60;
    for k in 0..10 {
        post_number(addr, "/api/s/s/m", &format!("number={}&timestamp={}", 100 + k, t0 + k * 60)).await;
    }
    for t in
        ["h", "4h", "8h", "n", "d", "3d", "w", "m", "y", "c", "sh", "s4h", "s8h", "sn", "sd", "s3d", "sc"]
    {
        let (st, body) =
            http(addr, "GET", &format!("/graph/s/s/m?t={t}&width=200&height=80&graphonly=1"), "").await;
        assert_eq!(st, 200, "t={t}");
        assert_eq!(png_size(&body), (200, 80), "t={t}");
    }
    // One-minute steps, every posted number visible.
    let (_, x) = json(addr, "GET", "/xport/s/s/m?t=sh", "").await;
    assert_eq!(x["step"], 60, "{x}");
    let got: Vec<f64> = x["rows"].as_array().unwrap().iter().filter_map(|r| r[0].as_f64()).collect();
    assert!((101..=109).all(|n| got.contains(&(n as f64))), "{got:?}");
    // The 5-minute file averages them.
    let (_, x) = json(addr, "GET", "/xport/s/s/m?t=h", "").await;
    assert_eq!(x["step"], 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_draw_parameters_and_unknown_graphs() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    post_number(addr, "/api/s/s/g", "number=1").await;
    for (q, key) in [
        ("t=zz", "t"),
        ("t=sw", "t"),
        ("gmode=both", "gmode"),
        ("cf=MIN", "cf"),
        ("width=0", "width"),
        ("height=abc", "height"),
        ("t=c&from=notadate", "from"),
        ("t=c&from=1700000000&to=1600000000", "from"),
        ("graphonly=yes", "graphonly"),
        ("background_color=%23fff", "background_color"),
    ] {
        for route in ["graph", "xport", "summary", "json/series"] {
            let (st, v) = json(addr, "GET", &format!("/{route}/s/s/g?{q}"), "").await;
            assert_eq!(st, 400, "/{route}?{q}");
            assert_eq!(v["error"], 1);
            assert!(v["messages"][key].is_string(), "/{route}?{q}: {v}");
        }
    }
    for route in ["graph", "xport", "summary", "json/series", "complex/graph", "complex/xport"] {
        let (st, v) = json(addr, "GET", &format!("/{route}/no/such/graph"), "").await;
        assert_eq!((st, v["error"].as_i64()), (404, Some(1)), "{route}");
        let (st, _) = json(addr, "GET", &format!("/{route}/s/%2E%2E/g"), "").await;
        assert_eq!(st, 400, "{route}");
    }
    for path in ["/json/graph/abc", "/json/graph/99", "/json/complex/x"] {
        let (st, _) = json(addr, "GET", path, "").await;
        assert_eq!(st, 404, "{path}");
    }
    // Still posting after all that; refused posts are counted.
    let (st, _) = json(addr, "POST", "/api/s/s/g", "number=x").await;
    assert_eq!(st, 400);
    let (st, _, body) = http_full(addr, "GET", "/metrics", "text/plain", "").await;
    assert_eq!(st, 200);
    let text = String::from_utf8(body).unwrap();
    let scrape = rrd_metrics::parse(&text)
        .unwrap_or_else(|e| panic!("/metrics is not valid exposition text: {e}\n{text}"));
    assert_eq!(
        scrape.get("rrdscale_web_render_seconds_count"),
        scrape.get("rrdscale_web_render_seconds_bucket{le=\"+Inf\"}")
    );
    for needle in [
        "rrdscale_web_posts_total{result=\"accepted\"} 1",
        "rrdscale_web_posts_total{result=\"refused\"} 1",
        "rrdscale_web_graphs 1",
        "rrdscale_web_complexes 0",
        "rrdscale_web_writer{writer=\"embedded\"} 1",
        "route=\"/graph/{service}/{section}/{graph}\",status=\"400\"}",
        "rrdscale_web_render_seconds_count",
    ] {
        assert!(text.contains(needle), "/metrics lacks {needle}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_minute_tick_rewrites_every_number_like_gfs_worker() {
    let dir = tempfile::tempdir().unwrap();
    let app = rrd_web::App::open(dir.path()).unwrap();
    let addr = start_app(app.clone()).await;
    let t0 = (now() / 300 - 4) * 300;
    let g = post_number(addr, "/api/s/s/g", &format!("number=5&timestamp={t0}")).await;
    post_number(addr, "/api/s/s/g", &format!("number=8&timestamp={}", t0 + 30)).await;
    let c = post_number(addr, "/api/s/s/c", &format!("number=2&mode=count&timestamp={t0}")).await;
    let last = |id: &Value, suffix: &str| {
        let path = dir.path().join("data").join(format!("{}{suffix}.rrd", id["id"].as_i64().unwrap()));
        let rrd = rrd_engine::Rrd::open(&path, false).unwrap();
        rrd.header.live().last_up
    };
    // A 5-minute mark: both files of both graphs.
    let at = t0 + 300;
    let written = tokio::task::spawn_blocking({
        let app = app.clone();
        move || rrd_web::ticker::tick(&app, at)
    })
    .await
    .unwrap()
    .unwrap()
    .written;
    assert_eq!(written, 4);
    assert_eq!((last(&g, ""), last(&g, "_s"), last(&c, ""), last(&c, "_s")), (at, at, at, at));
    // Between marks: the 1-minute files only.
    let at2 = t0 + 360;
    let app2 = app.clone();
    assert_eq!(
        tokio::task::spawn_blocking(move || rrd_web::ticker::tick(&app2, at2))
            .await
            .unwrap()
            .unwrap()
            .written,
        2
    );
    assert_eq!((last(&g, ""), last(&g, "_s")), (at, at2));
    // The held number and GF's `sub`: the last difference for a gauge,
    // 0 for a count.
    let q = format!("t=sc&from={}&to={}", t0, at2);
    let (_, x) = json(addr, "GET", &format!("/xport/s/s/g?{q}"), "").await;
    let nums: Vec<f64> = x["rows"].as_array().unwrap().iter().filter_map(|r| r[0].as_f64()).collect();
    assert_eq!(nums.last(), Some(&8.0), "{x}");
    let (_, x) = json(addr, "GET", &format!("/xport/s/s/g?{q}&gmode=subtract"), "").await;
    let subs: Vec<f64> = x["rows"].as_array().unwrap().iter().filter_map(|r| r[0].as_f64()).collect();
    assert_eq!(subs.last(), Some(&3.0), "{x}");
    let (_, x) = json(addr, "GET", &format!("/xport/s/s/c?{q}&gmode=subtract"), "").await;
    let subs: Vec<f64> = x["rows"].as_array().unwrap().iter().filter_map(|r| r[0].as_f64()).collect();
    assert_eq!(subs.last(), Some(&0.0), "{x}");
}
