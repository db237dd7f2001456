//! `--tree` pictures obey the server's render cap, and thumbnails are
//! kept: with every render slot held, a picture, an export and a Grafana
//! query wait and get 503 with `Retry-After`; a thumbnail drawn before is
//! served from the cache even then; a freed slot draws again.

mod api_support;

use std::time::{Duration, Instant};

use api_support::{http_full, start_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_draws_take_render_slots_and_thumbnails_are_kept() {
    let tree = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let opts = rrd_engine::create::CreateOptions { step_secs: Some(60), ..Default::default() };
    let defs = ["DS:v:GAUGE:120:U:U".to_string(), "RRA:AVERAGE:0.5:1:100".to_string()];
    rrd_engine::create::create(&tree.path().join("a.rrd"), &opts, &defs, 1_700_000_000).unwrap();
    let config = rrd_web::Config {
        max_renders: 1,
        render_wait: Duration::from_millis(200),
        trees: vec![rrd_web::tree::TreeSpec { name: "t".into(), dir: tree.path().to_path_buf() }],
        ..Default::default()
    };
    let app = rrd_web::App::open_configured(data.path(), rrd_web::Writer::Embedded, config).unwrap();
    let addr = start_app(app.clone()).await;
    let thumb = "/tree/t/png?file=a.rrd&thumb=1&start=1699990000&end=1700000000";
    let (st, _, first) = http_full(addr, "GET", thumb, "text/plain", "").await;
    assert_eq!(st, 200);

    let held = app.hold_render_slots(1).expect("a free slot");
    for path in [
        "/tree/t/png?file=a.rrd&start=1699990000&end=1700000000",
        "/tree/t/export?file=a.rrd&format=csv&start=1699990000&end=1700000000",
    ] {
        let began = Instant::now();
        let (st, head, _) = http_full(addr, "GET", path, "text/plain", "").await;
        assert_eq!(st, 503, "{path}");
        assert!(began.elapsed() >= Duration::from_millis(150), "{path} did not wait");
        assert!(head.to_ascii_lowercase().contains("retry-after:"), "{head}");
    }
    let query = r#"{"range":{"from":"2023-11-14T12:00:00Z","to":"2023-11-14T22:00:00Z"},"targets":[{"target":"a:v"}]}"#;
    let (st, _, _) = http_full(addr, "POST", "/grafana/query", "application/json", query).await;
    assert_eq!(st, 503);
    let (st, _, again) = http_full(addr, "GET", thumb, "text/plain", "").await;
    assert_eq!((st, again == first), (200, true), "the kept thumbnail is served without a slot");
    drop(held);
    let (st, _, _) =
        http_full(addr, "GET", "/tree/t/png?file=a.rrd&start=1699990000&end=1700000000", "text/plain", "")
            .await;
    assert_eq!(st, 200);
}
