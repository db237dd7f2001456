//! GrowthForecast's web features beyond numbers: vertical rules (posted,
//! listed, drawn on the graphs under their path), deleting a whole
//! section, and the `xgrid`/`ygrid` draw parameters.

mod api_support;

use api_support::*;
use serde_json::{json, Value};

/// Pixels of exactly `rgb` in a PNG.
fn count_color(png_bytes: &[u8], rgb: [u8; 3]) -> usize {
    let dec = png::Decoder::new(std::io::Cursor::new(png_bytes.to_vec()));
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    buf[..info.buffer_size()].chunks(px).filter(|p| p.len() >= 3 && p[..3] == rgb).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vrules_are_stored_listed_and_drawn_on_graphs_under_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let t0 = now() - 7200;
    for k in 0..12 {
        post_number(
            addr,
            "/api/s/sec/g",
            &format!("number={}&timestamp={}&color=%230000FF", k + 1, t0 + k * 600),
        )
        .await;
    }
    post_number(addr, "/api/other/sec/g", "number=1").await;
    let png = |q: &'static str| async move {
        let (st, body) = http(addr, "GET", &format!("/graph/s/sec/g?t=d&graphonly=1&{q}"), "").await;
        assert_eq!(st, 200);
        body
    };
    let green = [0, 255, 0];
    assert_eq!(count_color(&png("").await, green), 0);

    // A rule for another service is not drawn here.
    let (st, v) =
        json(addr, "POST", "/vrule/api/other", &format!("time={}&color=%2300FF00", t0 + 3600)).await;
    assert_eq!((st, v["error"].as_i64()), (200, Some(0)), "{v}");
    assert_eq!(v["data"]["graph_path"], "/other");
    assert_eq!(count_color(&png("").await, green), 0);

    // One for this service is: a vertical line the height of the plot.
    let (st, v) = json(
        addr,
        "POST",
        "/vrule/api/s",
        &format!("time={}&color=%2300FF00&description=deploy%3A%20v2&dashes=", t0 - 3 * 3600),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["data"]["time"].as_i64(), v["data"]["color"].as_str(), v["data"]["description"].as_str()),
        (Some(t0 - 3 * 3600), Some("#00FF00"), Some("deploy: v2"))
    );
    let drawn = count_color(&png("").await, green);
    assert!(drawn >= 100, "{drawn} green pixels for a 110-pixel-high plot");
    // Outside the drawn span (the last two hours): not drawn.
    assert_eq!(count_color(&png("t=h").await, green), 0);

    // Every path from the root down applies; defaults as GF's.
    let (st, v) = json(addr, "POST", "/vrule/api", "").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!((v["data"]["graph_path"].as_str(), v["data"]["color"].as_str()), (Some("/"), Some("#FF0000")));
    assert!((v["data"]["time"].as_i64().unwrap() - now()).abs() < 5);
    post_number(addr, "/vrule/api/s/sec/g", "time=2023-11-14%2022:13:20&dashes=5,3").await;
    let (st, list) = json(addr, "GET", "/vrule/summary/s/sec/g", "").await;
    assert_eq!(st, 200);
    let paths: Vec<&str> =
        list.as_array().unwrap().iter().map(|r| r["graph_path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["/s/sec/g", "/s", "/"], "{list}");
    let (_, list) = json(addr, "GET", "/vrule/summary/other/sec/g?t=d", "").await;
    let paths: Vec<&str> =
        list.as_array().unwrap().iter().map(|r| r["graph_path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["/other", "/"], "{list}");

    // Bad fields are GF's 400s; names that could be paths are refused.
    let (st, v) = json(addr, "POST", "/vrule/api/s", "time=soon&color=green&dashes=1,x").await;
    assert_eq!(st, 400);
    for k in ["time", "color", "dashes"] {
        assert!(v["messages"][k].is_string(), "{k}: {v}");
    }
    assert_eq!(json(addr, "POST", "/vrule/api/s/..", "").await.0, 400);
    // A legend that tries to add element fields draws as text.
    let (st, _) =
        json(addr, "POST", "/vrule/api/s/sec/g", &format!("time={}&description=a:b\\:c", t0 + 600)).await;
    assert_eq!(st, 200);
    assert_eq!(http(addr, "GET", "/graph/s/sec/g?t=d", "").await.0, 200);
    assert_eq!(http(addr, "GET", "/graph/s/sec/g?t=d&vrule_legend=0", "").await.0, 200);
    assert_eq!(http(addr, "GET", "/graph/s/sec/g?vrule_legend=2", "").await.0, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_section_removes_its_graphs_files_and_complexes() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let a = post_number(addr, "/api/s/sec/a", "number=1").await["id"].as_i64().unwrap();
    let b = post_number(addr, "/api/s/sec/b", "number=2").await["id"].as_i64().unwrap();
    let keep = post_number(addr, "/api/s/other/c", "number=3").await["id"].as_i64().unwrap();
    let body = json!({"service_name": "s", "section_name": "sec", "graph_name": "both",
                      "data": [{"graph_id": a}, {"graph_id": b}]});
    let (st, v) = post_json(addr, "/json/create/complex", &body).await;
    assert_eq!(st, 200, "{v}");
    let file = |id: i64| dir.path().join("data").join(format!("{id}.rrd"));
    assert!(file(a).exists() && file(b).exists());

    let (st, v) = json(addr, "POST", "/delete/s/sec", "").await;
    assert_eq!((st, v["error"].as_i64()), (200, Some(0)), "{v}");
    assert_eq!(v["location"], "http://gf.test/list/s");
    assert_eq!(v["deleted"], json!({"graphs": 2, "complexes": 1}));
    for path in ["/api/s/sec/a", "/api/s/sec/b", "/json/complex/s/sec/both"] {
        assert_eq!(json(addr, "GET", path, "").await.0, 404, "{path}");
    }
    assert!(!file(a).exists() && !file(b).exists(), "the section's files remain");
    let (st, g): (u16, Value) = json(addr, "GET", "/api/s/other/c", "").await;
    assert_eq!((st, g["id"].as_i64()), (200, Some(keep)));
    assert!(file(keep).exists());
    // An empty section is GF's success too; a path-like name is not.
    assert_eq!(json(addr, "POST", "/delete/s/sec", "").await.1["deleted"]["graphs"], 0);
    assert_eq!(json(addr, "POST", "/delete/s/..", "").await.0, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xgrid_and_ygrid_are_checked_and_passed_to_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    post_number(addr, "/api/s/s/g", &format!("number=1&timestamp={}", now() - 600)).await;
    for (q, key) in
        [("xgrid=HOUR", "xgrid"), ("ygrid=10", "ygrid"), ("xgrid=DAY:0:DAY:1:DAY:1:0:%25a", "xgrid")]
    {
        let (st, v) = json(addr, "GET", &format!("/graph/s/s/g?{q}"), "").await;
        assert_eq!((st, v["error"].as_i64()), (400, Some(1)), "{q}: {v}");
        assert!(v["messages"][key].as_str().unwrap().contains("rrdtool"), "{q}: {v}");
    }
    for q in ["xgrid=none", "ygrid=none"] {
        let (st, body) = http(addr, "GET", &format!("/graph/s/s/g?{q}"), "").await;
        assert_eq!(st, 200, "{q}: {}", String::from_utf8_lossy(&body));
    }
    // Values with rrdtool's syntax reach the graph options: drawn where
    // rrd-graph supports them, else its refusal is a 400 under the key
    // (never a 500).
    for (q, key) in [("xgrid=MINUTE:10:MINUTE:20:MINUTE:10:0:%25H%3A%25M", "xgrid"), ("ygrid=10:1", "ygrid")]
    {
        let (st, body) = http(addr, "GET", &format!("/graph/s/s/g?{q}"), "").await;
        match st {
            200 => assert_eq!(&body[1..4], b"PNG"),
            400 => {
                let v: Value = serde_json::from_slice(&body).unwrap();
                let option = key.replace("grid", "-grid");
                assert!(v["messages"][key].as_str().unwrap().contains(&option), "{q}: {v}");
            }
            other => panic!("{q}: {other} {}", String::from_utf8_lossy(&body)),
        }
    }
}
