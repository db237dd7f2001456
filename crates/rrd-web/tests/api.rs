//! The GrowthForecast API over a real socket: the server runs in-process on
//! an ephemeral port and a minimal HTTP/1.1 client talks to it.

mod api_support;

use std::path::Path;

use api_support::{http, json, now, post_number, start};

/// The last known `num` value in the graph's RRD file (AVERAGE, 5 min).
fn rrd_num(dir: &Path, id: i64, at: i64) -> f64 {
    let rrd = rrd_engine::Rrd::open(&dir.join("data").join(format!("{id}.rrd")), false).unwrap();
    let step = 300;
    let end = (at / step + 2) * step;
    let r = rrd_engine::fetch::fetch(&rrd, rrd_format::Cf::Average, end - 3600, end, 300).unwrap();
    let num = r.ds_names.iter().position(|n| n == "num").unwrap();
    (0..r.row_count()).rev().map(|i| r.row(i)[num]).find(|v| !v.is_nan()).unwrap_or(f64::NAN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// One scenario: each step builds on the one before.
#[allow(clippy::too_many_lines)]
async fn every_mode_posts_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    // Times in the past, one step apart, so each post lands in its own PDP.
    let t0 = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
        / 300
        - 20)
        * 300;

    let (st, v) = json(
        addr,
        "POST",
        "/api/svc/sec/gauge",
        &format!("number=10&timestamp={t0}&color=%2300FF00&description=hi"),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["error"], 0);
    assert_eq!(v["data"]["number"], 10);
    assert_eq!(v["data"]["mode"], "gauge");
    assert_eq!(v["data"]["color"], "#00FF00");
    assert_eq!(v["data"]["description"], "hi");
    let gauge_id = v["data"]["id"].as_i64().unwrap();
    let (_, v) = json(addr, "POST", "/api/svc/sec/gauge", &format!("number=20&timestamp={}", t0 + 300)).await;
    assert_eq!(v["data"]["number"], 20);
    let (_, v) = json(addr, "POST", "/api/svc/sec/gauge", &format!("number=20&timestamp={}", t0 + 600)).await;
    assert_eq!(v["data"]["number"], 20);
    assert_eq!(rrd_num(dir.path(), gauge_id, t0 + 600), 20.0);

    let (_, v) =
        json(addr, "POST", "/api/svc/sec/count", &format!("number=5&mode=count&timestamp={t0}")).await;
    let count_id = v["data"]["id"].as_i64().unwrap();
    let (_, v) =
        json(addr, "POST", "/api/svc/sec/count", &format!("number=7&mode=count&timestamp={}", t0 + 300))
            .await;
    assert_eq!(v["data"]["number"], 12);
    assert_eq!(rrd_num(dir.path(), count_id, t0 + 300), 12.0);

    let (_, v) =
        json(addr, "POST", "/api/svc/sec/mod", &format!("number=3&mode=modified&timestamp={t0}")).await;
    let first_update = v["data"]["updated_at"].clone();
    let (_, v) =
        json(addr, "POST", "/api/svc/sec/mod", &format!("number=3&mode=modified&timestamp={}", t0 + 300))
            .await;
    assert_eq!(v["data"]["number"], 3);
    assert_eq!(v["data"]["updated_at"], first_update);

    // derive: the RRD stores a rate per second (the DS is DERIVE).
    let (_, v) =
        json(addr, "POST", "/api/svc/sec/der", &format!("number=0&mode=derive&timestamp={t0}")).await;
    let der_id = v["data"]["id"].as_i64().unwrap();
    for k in 1..=3 {
        let (st, v) = json(
            addr,
            "POST",
            "/api/svc/sec/der",
            &format!("number={}&mode=derive&timestamp={}", k * 600, t0 + k * 300),
        )
        .await;
        assert_eq!((st, v["data"]["mode"].as_str()), (200, Some("derive")));
    }
    assert_eq!(rrd_num(dir.path(), der_id, t0 + 900), 2.0);

    // Read back through every JSON endpoint.
    for path in ["/api/svc/sec/count", "/json/graph/svc/sec/count"] {
        let (st, v) = json(addr, "GET", path, "").await;
        assert_eq!(st, 200);
        assert_eq!(
            (v["number"].as_i64(), v["mode"].as_str(), v["id"].as_i64()),
            (Some(12), Some("count"), Some(count_id))
        );
        for key in [
            "service_name",
            "section_name",
            "graph_name",
            "color",
            "created_at",
            "updated_at",
            "type",
            "gmode",
        ] {
            assert!(v.get(key).is_some(), "{path} lacks {key}");
        }
    }
    let (_, list) = json(addr, "GET", "/json/list/graph", "").await;
    let names: Vec<&str> =
        list.as_array().unwrap().iter().map(|g| g["graph_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["count", "der", "gauge", "mod"]);
    let (_, all) = json(addr, "GET", "/json/list/all", "").await;
    assert_eq!(all.as_array().unwrap().len(), 4);
    assert_eq!(all[2]["number"], 20);

    // By id, and as numbers over time (xport and the Grafana series).
    for (id, name, number, mode) in
        [(gauge_id, "gauge", 20, "gauge"), (count_id, "count", 12, "count"), (der_id, "der", 1800, "derive")]
    {
        let (st, v) = json(addr, "GET", &format!("/json/graph/{id}"), "").await;
        assert_eq!(st, 200);
        assert_eq!(
            (v["graph_name"].as_str(), v["number"].as_i64(), v["mode"].as_str()),
            (Some(name), Some(number), Some(mode))
        );
        let q = format!("t=c&from={}&to={}", t0 - 300, t0 + 1200);
        let (st, x) = json(addr, "GET", &format!("/xport/svc/sec/{name}?{q}"), "").await;
        assert_eq!(st, 200, "{x}");
        let last = x["rows"].as_array().unwrap().iter().filter_map(|r| r[0].as_f64()).next_back();
        let (_, series) = json(addr, "GET", &format!("/json/series/svc/sec/{name}?{q}"), "").await;
        let last_series = series.as_array().unwrap().iter().filter_map(|o| o["value"].as_f64()).next_back();
        assert_eq!(last, last_series, "{name}");
        let want = match mode {
            "derive" => 2.0,
            _ => number as f64,
        };
        assert_eq!(last, Some(want), "{name}: {x}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_growthforecast_errors() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    for (form, key) in [
        ("", "number"),
        ("number=abc", "number"),
        ("number=1.5", "number"),
        ("number=1&mode=rate", "mode"),
        ("number=1&color=red", "color"),
    ] {
        let (st, v) = json(addr, "POST", "/api/s/s/g", form).await;
        assert_eq!(st, 400, "{form}");
        assert_eq!(v["error"], 1);
        assert!(v["messages"][key].is_string(), "{form}: {v}");
    }
    // Nothing was created by the refused posts.
    let (st, v) = json(addr, "GET", "/api/s/s/g", "").await;
    assert_eq!((st, v["error"].as_i64()), (404, Some(1)));
    let (st, _) = json(addr, "GET", "/json/graph/no/such/graph", "").await;
    assert_eq!(st, 404);
    let (st, _) = http(addr, "GET", "/graph/no/such/graph", "").await;
    assert_eq!(st, 404);

    for target in ["/api/s/%2E%2E/g", "/api/s/a%2Fb/g", "/api/s/s/%00", "/api/..%2F..%2Fetc/s/g"] {
        let (st, v) = json(addr, "POST", target, "number=1").await;
        assert_eq!(st, 400, "{target}: {v}");
        assert_eq!(v["error"], 1);
    }
    let entries: Vec<_> = std::fs::read_dir(dir.path().join("data")).unwrap().collect();
    assert!(entries.is_empty(), "refused posts created files");
}

/// rrdtool refuses `--logarithmic` with a lower limit at or below 0 ("for
/// a logarithmic yaxis you must specify a lower-limit > 0"); GF passes
/// the options through and answers 500. Here it is a 400 naming
/// `lower_limit`, for every draw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logarithmic_needs_a_lower_limit_above_zero() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    post_number(addr, "/api/s/s/g", &format!("number=5&timestamp={}", now() - 600)).await;
    for target in [
        "/graph/s/s/g?logarithmic=1&lower_limit=0",
        "/graph/s/s/g?logarithmic=1&lower_limit=-5&rigid=1",
        "/graph/AREA:1:gauge:0?logarithmic=1&lower_limit=0",
        "/summary/s/s/g?logarithmic=1&lower_limit=-1",
    ] {
        let (st, v) = json(addr, "GET", target, "").await;
        assert_eq!((st, v["error"].as_i64()), (400, Some(1)), "{target}: {v}");
        let m = v["messages"]["lower_limit"].as_str().unwrap_or_else(|| panic!("{target}: {v}"));
        assert!(m.contains("lower-limit > 0"), "{target}: {m}");
    }
    for target in ["/graph/s/s/g?logarithmic=1", "/graph/s/s/g?logarithmic=1&lower_limit=0.5"] {
        let (st, body) = http(addr, "GET", target, "").await;
        assert_eq!(st, 200, "{target}: {}", String::from_utf8_lossy(&body));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graph_png_has_the_requested_size() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    for k in 0..6 {
        let (st, _) = json(
            addr,
            "POST",
            "/api/s/s/g",
            &format!("number={}&timestamp={}", k * 10, now - 1800 + k * 300),
        )
        .await;
        assert_eq!(st, 200);
    }
    let decode = |b: &[u8]| {
        let dec = png::Decoder::new(std::io::Cursor::new(b.to_vec()));
        let reader = dec.read_info().expect("a decodable PNG");
        (reader.info().width, reader.info().height)
    };
    let (st, body) = http(addr, "GET", "/graph/s/s/g?t=h&width=300&height=120&graphonly=1", "").await;
    assert_eq!(st, 200);
    assert_eq!(decode(&body), (300, 120));
    for t in ["h", "4h", "8h", "n", "d", "3d", "w", "m", "y"] {
        let (st, body) = http(addr, "GET", &format!("/graph/s/s/g?t={t}&width=200&height=80"), "").await;
        assert_eq!(st, 200, "t={t}");
        let (w, h) = decode(&body);
        assert!(w > 200 && h > 80, "t={t}: the canvas plus axes and legend, got {w}x{h}");
    }
    let (st, _) = http(addr, "GET", "/graph/s/s/g?t=zz", "").await;
    assert_eq!(st, 400);
    let (st, _) = http(addr, "GET", "/graph/s/s/g?width=-5", "").await;
    assert_eq!(st, 400);
}
