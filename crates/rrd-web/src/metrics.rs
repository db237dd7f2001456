//! `GET /metrics` in the Prometheus text format (version 0.0.4): requests
//! by route pattern and status, POSTs accepted and refused, graph and
//! complex counts, a histogram of graph render times, requests refused by
//! a limit or an access rule (by reason), and how writes are made
//! (embedded, or through a daemon and whether it is connected).
//!
//! Invariants: counters only grow; label values are route patterns (a
//! fixed set), never raw request paths, so a client cannot blow up the
//! number of series. Deliberately not here: per-graph metrics.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::App;

/// Upper bounds of the render-time buckets, in seconds.
const BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    posts_accepted: AtomicU64,
    posts_refused: AtomicU64,
    write_errors: AtomicU64,
    render_buckets: [AtomicU64; BUCKETS.len()],
    render_count: AtomicU64,
    render_micros: AtomicU64,
    refused: Mutex<BTreeMap<&'static str, u64>>,
}

/// Why a request was refused before its route did any work, for
/// `rrdscale_web_refused_total` (a fixed set of labels).
pub const REFUSALS: [&str; 7] = ["host", "origin", "token", "body_size", "body_timeout", "busy", "graph_cap"];

impl Metrics {
    pub fn post(&self, accepted: bool) {
        let c = if accepted { &self.posts_accepted } else { &self.posts_refused };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn write_error(&self) {
        self.write_errors.fetch_add(1, Ordering::Relaxed);
    }

    pub fn render(&self, took: Duration) {
        let secs = took.as_secs_f64();
        for (b, bound) in self.render_buckets.iter().zip(BUCKETS) {
            if secs <= bound {
                b.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.render_count.fetch_add(1, Ordering::Relaxed);
        self.render_micros.fetch_add(took.as_micros().min(u128::from(u64::MAX)) as u64, Ordering::Relaxed);
    }

    /// Counts a refusal; `reason` is one of [`REFUSALS`].
    pub fn refused(&self, reason: &'static str) {
        *self.refused.lock().unwrap_or_else(|p| p.into_inner()).entry(reason).or_default() += 1;
    }

    fn request(&self, method: &str, route: &str, status: u16) {
        let mut m = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((method.to_string(), route.to_string(), status)).or_default() += 1;
    }

    /// The exposition text; `counts` are (graphs, complexes) when known.
    pub fn render_text(&self, counts: Option<(i64, i64)>, writer: &str, connected: Option<bool>) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# HELP rrdscale_web_requests_total HTTP requests by method, route and status.");
        let _ = writeln!(s, "# TYPE rrdscale_web_requests_total counter");
        for ((method, route, status), n) in self.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(
                s,
                "rrdscale_web_requests_total{{method=\"{method}\",route=\"{}\",status=\"{status}\"}} {n}",
                escape(route)
            );
        }
        let _ = writeln!(s, "# HELP rrdscale_web_posts_total Numbers POSTed to /api, by result.");
        let _ = writeln!(s, "# TYPE rrdscale_web_posts_total counter");
        let _ = writeln!(
            s,
            "rrdscale_web_posts_total{{result=\"accepted\"}} {}",
            self.posts_accepted.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            s,
            "rrdscale_web_posts_total{{result=\"refused\"}} {}",
            self.posts_refused.load(Ordering::Relaxed)
        );
        let _ =
            writeln!(s, "# HELP rrdscale_web_write_errors_total RRD writes that failed after validation.");
        let _ = writeln!(s, "# TYPE rrdscale_web_write_errors_total counter");
        let _ = writeln!(s, "rrdscale_web_write_errors_total {}", self.write_errors.load(Ordering::Relaxed));
        let _ = writeln!(
            s,
            "# HELP rrdscale_web_refused_total Requests refused by a limit or an access rule, by reason."
        );
        let _ = writeln!(s, "# TYPE rrdscale_web_refused_total counter");
        {
            let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
            for reason in REFUSALS {
                let n = refused.get(reason).copied().unwrap_or(0);
                let _ = writeln!(s, "rrdscale_web_refused_total{{reason=\"{reason}\"}} {n}");
            }
        }
        if let Some((graphs, complexes)) = counts {
            let _ = writeln!(s, "# HELP rrdscale_web_graphs Graphs in the metadata store.");
            let _ = writeln!(s, "# TYPE rrdscale_web_graphs gauge");
            let _ = writeln!(s, "rrdscale_web_graphs {graphs}");
            let _ = writeln!(s, "# HELP rrdscale_web_complexes Complex graphs in the metadata store.");
            let _ = writeln!(s, "# TYPE rrdscale_web_complexes gauge");
            let _ = writeln!(s, "rrdscale_web_complexes {complexes}");
        }
        let _ = writeln!(s, "# HELP rrdscale_web_render_seconds Time to draw one graph PNG.");
        let _ = writeln!(s, "# TYPE rrdscale_web_render_seconds histogram");
        for (b, bound) in self.render_buckets.iter().zip(BUCKETS) {
            let _ = writeln!(
                s,
                "rrdscale_web_render_seconds_bucket{{le=\"{bound}\"}} {}",
                b.load(Ordering::Relaxed)
            );
        }
        let count = self.render_count.load(Ordering::Relaxed);
        let _ = writeln!(s, "rrdscale_web_render_seconds_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(
            s,
            "rrdscale_web_render_seconds_sum {}",
            self.render_micros.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(s, "rrdscale_web_render_seconds_count {count}");
        let _ = writeln!(
            s,
            "# HELP rrdscale_web_writer How RRD files are written (embedded or a daemon address)."
        );
        let _ = writeln!(s, "# TYPE rrdscale_web_writer gauge");
        let _ = writeln!(s, "rrdscale_web_writer{{writer=\"{}\"}} 1", escape(writer));
        if let Some(c) = connected {
            let _ =
                writeln!(s, "# HELP rrdscale_web_daemon_connected Whether the daemon connection is open.");
            let _ = writeln!(s, "# TYPE rrdscale_web_daemon_connected gauge");
            let _ = writeln!(s, "rrdscale_web_daemon_connected {}", u8::from(c));
        }
        s
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Middleware: counts every routed request by its route pattern.
pub async fn track(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_string();
    let method = req.method().as_str().to_string();
    let res = next.run(req).await;
    app.metrics.request(&method, &route, res.status().as_u16());
    res
}

pub async fn serve(State(app): State<Arc<App>>) -> Response {
    let a = app.clone();
    let counts = tokio::task::spawn_blocking(move || a.store().count_graphs().ok()).await.ok().flatten();
    let text = app.metrics.render_text(counts, &app.writer.describe(), app.writer.daemon_connected());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_every_family() {
        let m = Metrics::default();
        m.post(true);
        m.post(false);
        m.post(false);
        m.render(Duration::from_millis(30));
        m.request("GET", "/graph/{service}/{section}/{graph}", 200);
        let t = m.render_text(Some((3, 1)), "embedded", None);
        assert!(t.contains("rrdscale_web_posts_total{result=\"refused\"} 2"), "{t}");
        assert!(t.contains("rrdscale_web_render_seconds_bucket{le=\"0.025\"} 0"), "{t}");
        assert!(t.contains("rrdscale_web_render_seconds_bucket{le=\"0.05\"} 1"), "{t}");
        assert!(t.contains("rrdscale_web_graphs 3") && t.contains("rrdscale_web_complexes 1"));
        assert!(t.contains("route=\"/graph/{service}/{section}/{graph}\",status=\"200\"} 1"), "{t}");
        assert!(!t.contains("daemon_connected"));
        m.refused("origin");
        let t = m.render_text(None, "embedded", None);
        assert!(t.contains("rrdscale_web_refused_total{reason=\"origin\"} 1"), "{t}");
        assert!(t.contains("rrdscale_web_refused_total{reason=\"host\"} 0"), "{t}");
    }
}
