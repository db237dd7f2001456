//! The web server as an attacker or a careless client meets it: times the
//! RRD files cannot take, too many draws at once, cross-site writes and
//! foreign `Host` names, an unbounded number of graphs, slow headers and
//! big bodies. Each test states the answer and that nothing was lost.

mod api_support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use api_support::*;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn start_config(dir: &Path, config: rrd_web::Config) -> (Arc<rrd_web::App>, SocketAddr) {
    let app = rrd_web::App::open_configured(dir, rrd_web::Writer::Embedded, config).unwrap();
    let addr = start_app(app.clone()).await;
    (app, addr)
}

fn last_up(dir: &Path, id: i64, suffix: &str) -> i64 {
    let path = dir.join("data").join(format!("{id}{suffix}.rrd"));
    rrd_engine::Rrd::open(&path, false).unwrap().header.live().last_up
}

fn metric(text: &str, name: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("/metrics lacks {name}:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_future_time_is_refused_and_the_graph_keeps_updating() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let t = now() - 600;
    let id =
        post_number(addr, "/api/s/s/g", &format!("number=1&timestamp={t}")).await["id"].as_i64().unwrap();
    for (form, key) in [
        (format!("number=2&timestamp={}", now() + 86_400 * 365 * 100), "timestamp"),
        ("number=2&datetime=9999-12-31%2023:59:59".to_string(), "datetime"),
        (format!("number=2&timestamp={}", now() + 301 + 5), "timestamp"),
    ] {
        let (st, v) = json(addr, "POST", "/api/s/s/g", &form).await;
        assert_eq!((st, v["error"].as_i64()), (400, Some(1)), "{form}: {v}");
        assert!(v["messages"][key].as_str().unwrap().contains("300"), "{form}: {v}");
    }
    // Nothing reached the files or the metadata.
    assert_eq!((last_up(dir.path(), id, ""), last_up(dir.path(), id, "_s")), (t, t));
    let (_, g) = json(addr, "GET", "/api/s/s/g", "").await;
    assert_eq!(g["number"], 1);
    // Within the skew is a clock a little ahead: taken.
    post_number(addr, "/api/s/s/g", &format!("number=3&timestamp={}", now() + 60)).await;
    let later = now() + 120;
    post_number(addr, "/api/s/s/g", &format!("number=4&timestamp={later}")).await;
    assert_eq!((last_up(dir.path(), id, ""), last_up(dir.path(), id, "_s")), (later, later));
    let (_, g) = json(addr, "GET", "/api/s/s/g", "").await;
    assert_eq!(g["number"], 4);
    assert_eq!(metric(&metrics_text(addr).await, "rrdscale_web_write_errors_total"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_second_is_an_error_and_the_same_second_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let t = now() - 600;
    let id =
        post_number(addr, "/api/s/s/g", &format!("number=10&timestamp={t}")).await["id"].as_i64().unwrap();
    // GF: two POSTs in one second both succeed; the file keeps the first.
    let d = post_number(addr, "/api/s/s/g", &format!("number=11&timestamp={t}")).await;
    assert_eq!(d["number"], 11);
    // An earlier second: an error answer naming both times, nothing
    // written, the metadata unchanged, counted.
    let (st, v) = json(addr, "POST", "/api/s/s/g", &format!("number=12&timestamp={}", t - 60)).await;
    assert_eq!((st, v["error"].as_i64()), (409, Some(1)), "{v}");
    let msg = v["messages"]["timestamp"].as_str().unwrap();
    assert!(msg.contains(&t.to_string()) && msg.contains(&(t - 60).to_string()), "{msg}");
    let (_, g) = json(addr, "GET", "/api/s/s/g", "").await;
    assert_eq!(g["number"], 11);
    assert_eq!(last_up(dir.path(), id, ""), t);
    // Named after the parameter that gave the time.
    let (st, v) = json(addr, "POST", "/api/s/s/g", "number=12&datetime=2001-01-01%2000:00:00").await;
    assert_eq!(st, 409, "{v}");
    assert!(v["messages"]["datetime"].as_str().unwrap().contains("978307200"), "{v}");
    let text = metrics_text(addr).await;
    assert_eq!(metric(&text, "rrdscale_web_write_errors_total"), 2, "{text}");
    assert_eq!(metric(&text, "rrdscale_web_posts_total{result=\"refused\"}"), 2, "{text}");
    // A later second is written.
    post_number(addr, "/api/s/s/g", &format!("number=13&timestamp={}", t + 60)).await;
    assert_eq!(last_up(dir.path(), id, ""), t + 60);
}

/// POSTs without a time take the server's clock under the write's lock,
/// and never a second before the files' last update: 8 clients posting
/// at once across second boundaries get no 409, nor does a POST after
/// one stamped a little ahead.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn posts_without_a_time_never_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let clients: Vec<_> = (0..8)
        .map(|c| {
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                // 300 POSTs each, and at least across three second marks.
                let until = Instant::now() + Duration::from_secs(3);
                for i in 0.. {
                    if i >= 300 && Instant::now() > until {
                        break;
                    }
                    let (st, body) =
                        http(addr, "POST", "/api/s/s/g", &format!("number={}", c * 1000 + i)).await;
                    if st != 200 {
                        statuses.push((st, String::from_utf8_lossy(&body).into_owned()));
                    }
                }
                statuses
            })
        })
        .collect();
    let mut refused = Vec::new();
    for c in clients {
        refused.extend(c.await.unwrap());
    }
    assert!(refused.is_empty(), "{} POSTs refused, first: {:?}", refused.len(), refused.first());
    let text = metrics_text(addr).await;
    assert_eq!(metric(&text, "rrdscale_web_write_errors_total"), 0, "{text}");

    // A client stamps a second a little ahead; the next POST without a
    // time takes that second (GF's drop), not a 409.
    let ahead = now() + 120;
    let id =
        post_number(addr, "/api/s/s/h", &format!("number=1&timestamp={ahead}")).await["id"].as_i64().unwrap();
    let (st, v) = json(addr, "POST", "/api/s/s/h", "number=2").await;
    assert_eq!((st, v["error"].as_i64()), (200, Some(0)), "{v}");
    assert_eq!(v["data"]["number"], 2);
    assert_eq!((last_up(dir.path(), id, ""), last_up(dir.path(), id, "_s")), (ahead, ahead));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ticker_leaves_newer_files_alone_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let app = rrd_web::App::open(dir.path()).unwrap();
    let addr = start_app(app.clone()).await;
    // A POST stamped a little ahead of the server's clock (within the
    // skew), then a tick at the server's minute mark before it.
    let ahead = now() + 200;
    let id =
        post_number(addr, "/api/s/s/g", &format!("number=5&timestamp={ahead}")).await["id"].as_i64().unwrap();
    let mark = (now() / 300) * 300;
    let a = app.clone();
    let r = tokio::task::spawn_blocking(move || rrd_web::ticker::tick(&a, mark)).await.unwrap().unwrap();
    assert_eq!((r.written, r.skipped, r.failed), (0, 2, 0), "{r:?}");
    assert_eq!(last_up(dir.path(), id, "_s"), ahead);
    // A file that cannot be written is counted, and the others go on.
    let id2 = post_number(addr, "/api/s/s/h", &format!("number=1&timestamp={}", now() - 600)).await["id"]
        .as_i64()
        .unwrap();
    std::fs::write(dir.path().join("data").join(format!("{id}_s.rrd")), b"not an rrd").unwrap();
    let a = app.clone();
    let r = tokio::task::spawn_blocking(move || rrd_web::ticker::tick(&a, mark + 60)).await.unwrap().unwrap();
    assert_eq!((r.written, r.failed), (1, 1), "{r:?}");
    assert!(r.first_error.unwrap().contains(&format!("graph {id}")));
    assert_eq!(last_up(dir.path(), id2, "_s"), mark + 60);
    assert_eq!(metric(&metrics_text(addr).await, "rrdscale_web_write_errors_total"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draws_beyond_the_cap_wait_then_get_503() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        rrd_web::Config { max_renders: 2, render_wait: Duration::from_millis(300), ..Default::default() };
    let (app, addr) = start_config(dir.path(), config).await;
    post_number(addr, "/api/s/s/g", &format!("number=1&timestamp={}", now() - 600)).await;
    let (st, _) = http(addr, "GET", "/graph/s/s/g", "").await;
    assert_eq!(st, 200);
    // Both slots busy: every kind of draw waits, then is refused.
    let held = app.hold_render_slots(2).expect("two free slots");
    for path in ["/graph/s/s/g", "/xport/s/s/g", "/summary/s/s/g", "/json/series/s/s/g"] {
        let began = Instant::now();
        let (st, head, body) = http_full(addr, "GET", path, "text/plain", "").await;
        assert_eq!(st, 503, "{path}");
        assert!(began.elapsed() >= Duration::from_millis(250), "{path} did not wait");
        assert!(head.to_ascii_lowercase().contains("retry-after:"), "{head}");
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert!(v["messages"]["server"].as_str().unwrap().contains("--max-renders"), "{v}");
    }
    assert_eq!(metric(&metrics_text(addr).await, "rrdscale_web_refused_total{reason=\"busy\"}"), 4);
    // A slot freed while a request waits serves it.
    let waiting = tokio::spawn(async move { http(addr, "GET", "/graph/s/s/g", "").await.0 });
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(held);
    assert_eq!(waiting.await.unwrap(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_site_writes_are_refused_and_scripts_still_post() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let id = post_number(addr, "/api/s/s/g", "number=1").await["id"].as_i64().unwrap();
    let edit = format!("/json/edit/graph/{id}");
    // The issue's attacks: a text/plain edit from another origin, a form
    // delete with only a foreign Referer, a cross-site POST to /api.
    let evil = [
        (
            "POST",
            edit.as_str(),
            "Content-Type: text/plain",
            "Origin: http://evil.example",
            r##"{"color":"#FF0000"}"##,
        ),
        (
            "POST",
            "/delete/s/s/g",
            "Content-Type: application/x-www-form-urlencoded",
            "Referer: http://evil.example/x",
            "",
        ),
        (
            "POST",
            "/api/s/s/g",
            "Content-Type: application/x-www-form-urlencoded",
            "Origin: null",
            "number=666",
        ),
    ];
    for (method, path, ct, source, body) in evil {
        let (st, _, out) = request(addr, method, path, &["Host: gf.test", ct, source], body).await;
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!((st, v["error"].as_i64()), (403, Some(1)), "{path} {source}: {v}");
        assert!(v["messages"]["origin"].as_str().unwrap().contains("cross-site"), "{v}");
    }
    let (_, g) = json(addr, "GET", "/api/s/s/g", "").await;
    assert_eq!((g["number"].as_i64(), g["color"].as_str() == Some("#FF0000")), (Some(1), false), "{g}");
    assert_eq!(metric(&metrics_text(addr).await, "rrdscale_web_refused_total{reason=\"origin\"}"), 3);
    // The same origin (the UI) and no origin at all (curl) pass.
    let (st, _, out) = request(
        addr,
        "POST",
        &edit,
        &["Host: gf.test", "Content-Type: application/json", "Origin: http://gf.test"],
        r#"{"description":"from the UI"}"#,
    )
    .await;
    assert_eq!(st, 200, "{}", String::from_utf8_lossy(&out));
    let (st, _, _) = request(
        addr,
        "POST",
        "/api/s/s/g",
        &["Host: gf.test", "Content-Type: application/x-www-form-urlencoded"],
        "number=2",
    )
    .await;
    assert_eq!(st, 200);
}

/// RFC 9112 §3.2: an HTTP/1.1 request without `Host`, or any request
/// with two `Host` lines (or an invalid one), is a 400; nothing is
/// written. HTTP/1.0 may omit it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_repeated_host_is_a_bad_request() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let form = "Content-Type: application/x-www-form-urlencoded";
    for headers in [
        vec![form],
        vec!["Host: gf.test", "Host: evil.example", form],
        vec!["Host: gf.test", "Host: gf.test", form],
        vec!["Host: gf.test/x", form],
        vec!["Host: a b", form],
    ] {
        let (st, _, out) = request(addr, "POST", "/api/s/s/g", &headers, "number=1").await;
        let v: Value = serde_json::from_slice(&out).unwrap_or_else(|_| panic!("{headers:?}: {out:?}"));
        assert_eq!((st, v["error"].as_i64()), (400, Some(1)), "{headers:?}: {v}");
        assert!(v["messages"]["host"].as_str().unwrap().contains("Host"), "{v}");
        let (st, _, _) = request(addr, "GET", "/json/list/graph", &headers, "").await;
        assert_eq!(st, 400, "{headers:?}");
    }
    let (st, _) = json(addr, "GET", "/api/s/s/g", "").await;
    assert_eq!(st, 404, "a refused POST created the graph");
    // HTTP/1.0 without Host is served.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /json/list/graph HTTP/1.0\r\n\r\n").await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    assert!(out.starts_with(b"HTTP/1.0 200"), "{}", String::from_utf8_lossy(&out));
    // HTTP/1.0 with two is not.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /json/list/graph HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n").await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    assert!(out.starts_with(b"HTTP/1.0 400"), "{}", String::from_utf8_lossy(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_server_answers_only_its_own_host_names() {
    let dir = tempfile::tempdir().unwrap();
    // Bind first, so the policy can name the real port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config =
        rrd_web::Config { hosts: rrd_web::guard::HostPolicy::for_listen(addr, None), ..Default::default() };
    let app = rrd_web::App::open_configured(dir.path(), rrd_web::Writer::Embedded, config).unwrap();
    tokio::spawn(rrd_web::serve(listener, app));
    let port = addr.port();
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")] {
        let (st, _, _) = request(addr, "GET", "/json/list/all", &[&format!("Host: {host}")], "").await;
        assert_eq!(st, 200, "{host}");
    }
    // DNS rebinding: a browser on evil.example's page, name rebound here.
    for host in [format!("evil.example:{port}"), "localhost".to_string(), format!("localhost:{}", port + 1)] {
        for (method, path) in [("GET", "/json/list/all"), ("GET", "/"), ("POST", "/api/s/s/g")] {
            let (st, _, out) = request(addr, method, path, &[&format!("Host: {host}")], "number=1").await;
            let v: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(st, 403, "{host} {path}");
            assert!(v["messages"]["host"].as_str().unwrap().contains("--allowed-hosts"), "{v}");
        }
    }
    assert!(!dir.path().join("data").join("1.rrd").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_guards_every_write_and_reads_stay_open() {
    let dir = tempfile::tempdir().unwrap();
    let config = rrd_web::Config { auth_token: Some("s3cret".into()), ..Default::default() };
    let (_, addr) = start_config(dir.path(), config).await;
    let ct = "Content-Type: application/x-www-form-urlencoded";
    let (st, head, out) = request(addr, "POST", "/api/s/s/g", &["Host: gf.test", ct], "number=1").await;
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(st, 401, "{v}");
    assert!(head.to_ascii_lowercase().contains("www-authenticate: basic"), "{head}");
    assert!(v["messages"]["authorization"].is_string(), "{v}");
    let wrong = ["Host: gf.test", ct, "Authorization: Bearer s3cre"];
    assert_eq!(request(addr, "POST", "/api/s/s/g", &wrong, "number=1").await.0, 401);
    let bearer = ["Host: gf.test", ct, "Authorization: Bearer s3cret"];
    assert_eq!(request(addr, "POST", "/api/s/s/g", &bearer, "number=1").await.0, 200);
    // Basic auth, any user, the token as password ("gf:s3cret").
    let basic = ["Host: gf.test", ct, "Authorization: Basic Z2Y6czNjcmV0"];
    assert_eq!(request(addr, "POST", "/api/s/s/g", &basic, "number=2").await.0, 200);
    let (st, g) = json(addr, "GET", "/api/s/s/g", "").await;
    assert_eq!((st, g["number"].as_i64()), (200, Some(2)));
    assert_eq!(json(addr, "POST", "/json/delete/graph/1", "").await.0, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graph_cap_refuses_new_names_and_existing_graphs_keep_updating() {
    let dir = tempfile::tempdir().unwrap();
    let config = rrd_web::Config { max_graphs: 2, ..Default::default() };
    let (_, addr) = start_config(dir.path(), config).await;
    post_number(addr, "/api/s/s/a", "number=1").await;
    post_number(addr, "/api/s/s/b", "number=1").await;
    let (st, v) = json(addr, "POST", "/api/s/s/c", "number=1").await;
    assert_eq!((st, v["error"].as_i64()), (403, Some(1)), "{v}");
    assert!(v["messages"]["graph_name"].as_str().unwrap().contains("--max-graphs"), "{v}");
    assert_eq!(json(addr, "GET", "/api/s/s/c", "").await.0, 404);
    assert_eq!(metric(&metrics_text(addr).await, "rrdscale_web_refused_total{reason=\"graph_cap\"}"), 1);
    let files = std::fs::read_dir(dir.path().join("data")).unwrap().count();
    assert_eq!(files, 4, "the refused graph made files");
    let d = post_number(addr, "/api/s/s/a", "number=7&mode=count").await;
    assert_eq!(d["number"], 8);
    // Complexes are bounded by the same number.
    let (a, b) = (1, 2);
    for name in ["x", "y"] {
        let body = serde_json::json!({"service_name": "s", "section_name": "s", "graph_name": name,
                                      "data": [{"graph_id": a}, {"graph_id": b}]});
        assert_eq!(post_json(addr, "/json/create/complex", &body).await.0, 200);
    }
    let body = serde_json::json!({"service_name": "s", "section_name": "s", "graph_name": "z",
                                  "data": [{"graph_id": a}, {"graph_id": b}]});
    let (st, v) = post_json(addr, "/json/create/complex", &body).await;
    assert_eq!(st, 403, "{v}");
    assert!(v["messages"]["complex"].as_str().unwrap().contains("--max-graphs"), "{v}");
    // Deleting one makes room again.
    assert_eq!(json(addr, "POST", "/delete/s/s/b", "").await.0, 200);
    post_number(addr, "/api/s/s/c", "number=1").await;
}

/// This process's peak resident memory in bytes, after resetting it
/// (`/proc/self/clear_refs` 5) when `reset`.
fn peak_rss(reset: bool) -> u64 {
    if reset {
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// The work of one draw is bounded: an ad-hoc list or a complex of more
/// than `MAX_SERIES` graphs is a 400, a URL longer than `MAX_URI_BYTES`
/// a 414, and the largest list allowed draws in bounded memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_graph_lists_are_refused_and_draws_stay_small() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    let id = post_number(addr, "/api/s/s/g", &format!("number=5&timestamp={}", now() - 600)).await["id"]
        .as_i64()
        .unwrap();
    post_number(addr, "/api/s/s/h", &format!("number=6&timestamp={}", now() - 600)).await;
    let list = |n: usize| vec![format!("AREA:{id}:gauge:1"); n].join(":");
    let max = rrd_web::MAX_SERIES;
    // The probe's 32 KB URL.
    let huge = format!("/graph/{}", list(32 * 1024 / 15));
    assert!(huge.len() > rrd_web::MAX_URI_BYTES);
    let (st, _, body) = request(addr, "GET", &huge, &["Host: gf.test"], "").await;
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((st, v["error"].as_i64()), (414, Some(1)), "{v}");
    assert!(v["messages"]["uri"].as_str().unwrap().contains("bytes"), "{v}");
    for path in ["/graph", "/summary", "/xport"] {
        let (st, v) = json(addr, "GET", &format!("{path}/{}", list(max + 1)), "").await;
        assert_eq!((st, v["error"].as_i64()), (400, Some(1)), "{path}: {v}");
        assert!(v["messages"]["complex"].as_str().unwrap().contains(&max.to_string()), "{v}");
    }
    // A complex is bounded alike, on create and on edit.
    let data = |n: usize| (0..n).map(|_| serde_json::json!({"graph_id": id})).collect::<Vec<_>>();
    let body = serde_json::json!({"service_name": "s", "section_name": "s", "graph_name": "c",
                                  "data": data(max + 1)});
    let (st, v) = post_json(addr, "/json/create/complex", &body).await;
    assert_eq!(st, 400, "{v}");
    assert!(v["messages"]["data"].as_str().unwrap().contains(&max.to_string()), "{v}");
    let body = serde_json::json!({"service_name": "s", "section_name": "s", "graph_name": "c",
                                  "data": data(2)});
    let (st, v) = post_json(addr, "/json/create/complex", &body).await;
    assert_eq!(st, 200, "{v}");
    let cid = v["data"]["id"].as_i64().unwrap();
    let (st, v) =
        post_json(addr, &format!("/json/edit/complex/{cid}"), &serde_json::json!({"data": data(max + 1)}))
            .await;
    assert_eq!(st, 400, "{v}");
    // The largest list allowed: answered, in bounded memory.
    let before = peak_rss(true);
    let (st, png) = http(addr, "GET", &format!("/graph/{}", list(max)), "").await;
    assert_eq!(st, 200, "{}", String::from_utf8_lossy(&png));
    let grew = peak_rss(false).saturating_sub(before);
    assert!(grew < 32 << 20, "a {max}-series draw raised the peak memory by {} MiB", grew >> 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_are_cut_off_and_bodies_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let config = rrd_web::Config { header_read_timeout: Duration::from_secs(1), ..Default::default() };
    let (_, addr) = start_config(dir.path(), config).await;
    // A slowloris client: a byte of header every 200 ms, never done.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /json/list/all HTTP/1.1\r\nHost: gf.test\r\n").await.unwrap();
    let began = Instant::now();
    let mut closed = false;
    for _ in 0..50 {
        if s.write_all(b"X").await.is_err() {
            closed = true;
            break;
        }
        let mut buf = [0u8; 256];
        match tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = true;
                break;
            }
            Ok(Ok(_)) => {} // a 408, if the server says why
            Err(_) => {}
        }
    }
    assert!(closed, "the connection was still open after {:?}", began.elapsed());
    assert!(began.elapsed() < Duration::from_secs(4), "cut off only after {:?}", began.elapsed());
    // A connection that sends nothing at all is closed too.
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    let began = Instant::now();
    let mut buf = [0u8; 64];
    let r = tokio::time::timeout(Duration::from_secs(4), idle.read(&mut buf)).await;
    assert!(matches!(r, Ok(Ok(0)) | Ok(Err(_))), "an idle connection stayed open: {r:?}");
    assert!(began.elapsed() < Duration::from_secs(3), "closed only after {:?}", began.elapsed());
    // A normal request on a new connection is served.
    assert_eq!(json(addr, "GET", "/json/list/all", "").await.0, 200);
    // A body over the bound is refused before it is sent.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/s/s/g HTTP/1.1\r\nHost: gf.test\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\nnumber=1&",
        rrd_web::MAX_BODY_BYTES + 1
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await.unwrap().unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // A body trickled in: refused when the bound passes.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        b"POST /api/s/s/g HTTP/1.1\r\nHost: gf.test\r\nContent-Type: application/x-www-form-urlencoded\r\n\
          Content-Length: 100\r\n\r\nnumber=1",
    )
    .await
    .unwrap();
    let began = Instant::now();
    let mut answer = Vec::new();
    while began.elapsed() < Duration::from_secs(5) && !answer.ends_with(b"}") {
        let _ = s.write_all(b"0").await;
        let mut buf = [0u8; 1024];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
    }
    let answer = String::from_utf8_lossy(&answer).to_string();
    assert!(answer.starts_with("HTTP/1.1 408"), "after {:?}: {answer}", began.elapsed());
    assert!(began.elapsed() < Duration::from_secs(3), "refused only after {:?}", began.elapsed());
    let text = metrics_text(addr).await;
    assert_eq!(metric(&text, "rrdscale_web_refused_total{reason=\"body_size\"}"), 1, "{text}");
    assert_eq!(metric(&text, "rrdscale_web_refused_total{reason=\"body_timeout\"}"), 1, "{text}");
    assert_eq!(json(addr, "GET", "/api/s/s/g", "").await.0, 404);
}
