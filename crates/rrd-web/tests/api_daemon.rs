//! `rrdscale web --daemon`: POSTs go to a running rrdcached (the real
//! Debian 1.7.2 one) with UPDATE, and drawing or exporting FLUSHes the
//! graph's files first, so the numbers show although the daemon would
//! otherwise hold them for an hour.

mod api_support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use api_support::*;

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_rrdcached(dir: &std::path::Path) -> (Daemon, String) {
    let sock = dir.join("rrdcached.sock");
    let child = Command::new("rrdcached")
        .arg("-g")
        .arg("-l")
        .arg(format!("unix:{}", sock.display()))
        .arg("-p")
        .arg(dir.join("rrdcached.pid"))
        .args(["-w", "3600", "-z", "1", "-f", "7200"])
        .env("TZ", "UTC")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("rrdcached 1.7.2 must be installed (Debian package rrdcached) for this test");
    let began = Instant::now();
    while !sock.exists() {
        assert!(began.elapsed() < Duration::from_secs(10), "rrdcached did not open {}", sock.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    (Daemon(child), format!("unix:{}", sock.display()))
}

fn last_update(dir: &std::path::Path, id: i64) -> i64 {
    let rrd = rrd_engine::Rrd::open(&dir.join("data").join(format!("{id}.rrd")), false).unwrap();
    rrd.header.live().last_up
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_go_through_the_daemon_and_draws_flush_first() {
    let dir = tempfile::tempdir().unwrap();
    let (_daemon, address) = start_rrdcached(dir.path());
    let data = dir.path().join("web");
    let addr = start_with(&data, rrd_web::Writer::choose(Some(&address))).await;

    let t0 = (now() / 300 - 10) * 300;
    let mut id = 0;
    for k in 0..5 {
        let d =
            post_number(addr, "/api/s/s/g", &format!("number={}&timestamp={}", 100 * (k + 1), t0 + k * 300))
                .await;
        id = d["id"].as_i64().unwrap();
    }
    // The daemon holds the values: the file still ends before the posts
    // (only its creation, 10 s before the first one, is on disk).
    assert!(last_update(&data, id) < t0, "values reached the file without the daemon flushing them");

    let (st, x) =
        json(addr, "GET", &format!("/xport/s/s/g?t=c&from={}&to={}", t0 - 300, t0 + 1500), "").await;
    assert_eq!(st, 200, "{x}");
    let got: Vec<f64> = x["rows"].as_array().unwrap().iter().filter_map(|r| r[0].as_f64()).collect();
    assert!(got.contains(&500.0) && got.contains(&300.0), "{got:?}");
    assert_eq!(last_update(&data, id), t0 + 1200, "the export flushed the file");

    // An older second is refused through the daemon as by the engine:
    // an error answer, the metadata unchanged; the same second again is
    // dropped with success, as GF does.
    let (st, v) = json(addr, "POST", "/api/s/s/g", &format!("number=1&timestamp={t0}")).await;
    assert_eq!((st, v["error"].as_i64()), (409, Some(1)), "{v}");
    assert!(v["messages"]["timestamp"].as_str().unwrap().contains(&(t0 + 1200).to_string()), "{v}");
    // One the daemon holds but has not written: its refusal's numbers
    // decide (LAST may name the file's older second).
    post_number(addr, "/api/s/s/g", &format!("number=600&timestamp={}", t0 + 1500)).await;
    let (st, v) = json(addr, "POST", "/api/s/s/g", &format!("number=2&timestamp={}", t0 + 1400)).await;
    assert_eq!((st, v["error"].as_i64()), (409, Some(1)), "{v}");
    let d = post_number(addr, "/api/s/s/g", &format!("number=700&timestamp={}", t0 + 1500)).await;
    assert_eq!(d["number"], 700);
    let (_, g) = json(addr, "GET", "/api/s/s/g", "").await;
    assert_eq!(g["number"], 700);

    let (st, png) = http(addr, "GET", "/graph/s/s/g?t=h&graphonly=1", "").await;
    assert_eq!(st, 200);
    assert_eq!(png_size(&png), (390, 110));

    let (_, _, body) = http_full(addr, "GET", "/metrics", "text/plain", "").await;
    let text = String::from_utf8(body).unwrap();
    assert!(text.contains(&format!("rrdscale_web_writer{{writer=\"{address}\"}} 1")), "{text}");
    assert!(text.contains("rrdscale_web_daemon_connected 1"), "{text}");
    assert!(text.contains("rrdscale_web_write_errors_total 2"), "{text}");

    // Deleting flushes, then removes the files.
    let (st, _) = json(addr, "POST", &format!("/json/delete/graph/{id}"), "").await;
    assert_eq!(st, 200);
    assert!(!data.join("data").join(format!("{id}.rrd")).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_daemon_is_a_500_not_a_silent_direct_write() {
    let dir = tempfile::tempdir().unwrap();
    let address = format!("unix:{}", dir.path().join("nobody-listens.sock").display());
    let addr = start_with(dir.path(), rrd_web::Writer::choose(Some(&address))).await;
    let (st, v) = json(addr, "POST", "/api/s/s/g", "number=1").await;
    assert_eq!((st, v["error"].as_i64()), (500, Some(1)), "{v}");
    assert!(v["messages"]["server"].as_str().unwrap().contains("rrdcached"), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ticker_skips_what_the_daemon_holds_newer_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (_daemon, address) = start_rrdcached(dir.path());
    let data = dir.path().join("web");
    let app = rrd_web::App::open_with(&data, rrd_web::Writer::choose(Some(&address))).unwrap();
    let addr = start_app(app.clone()).await;
    // Held by the daemon, a little ahead of the server's clock.
    let ahead = now() + 200;
    post_number(addr, "/api/s/s/g", &format!("number=5&timestamp={ahead}")).await;
    let mark = (now() / 300) * 300;
    let a = app.clone();
    let r = tokio::task::spawn_blocking(move || rrd_web::ticker::tick(&a, mark)).await.unwrap().unwrap();
    assert_eq!((r.written, r.skipped, r.failed), (0, 2, 0), "{r:?}");
    // A minute after the held value, off the 5-minute marks: only the
    // 1-minute file is due.
    let mut later = ahead + 60;
    if later % 300 < 60 {
        later += 60;
    }
    let a = app.clone();
    let r = tokio::task::spawn_blocking(move || rrd_web::ticker::tick(&a, later)).await.unwrap().unwrap();
    assert_eq!((r.written, r.failed), (1, 0), "{r:?}");
    let (_, _, body) = http_full(addr, "GET", "/metrics", "text/plain", "").await;
    assert!(String::from_utf8(body).unwrap().contains("rrdscale_web_write_errors_total 0"));
}
