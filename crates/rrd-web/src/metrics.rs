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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rrd_metrics::{Buckets, Exposition, Histogram, Kind};

use crate::App;

/// The render-time buckets: 5 ms to 5 s.
pub struct RenderBuckets;

impl Buckets for RenderBuckets {
    const BOUNDS_SECS: &'static [f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];
}

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    posts_accepted: AtomicU64,
    posts_refused: AtomicU64,
    write_errors: AtomicU64,
    render_seconds: Histogram<RenderBuckets>,
    refused: Mutex<BTreeMap<&'static str, u64>>,
}

/// Why a request was refused before its route did any work, for
/// `rrdscale_web_refused_total` (a fixed set of labels).
pub const REFUSALS: [&str; 8] =
    ["host", "origin", "token", "body_size", "body_timeout", "busy", "graph_cap", "uri_size"];

impl Metrics {
    pub fn post(&self, accepted: bool) {
        let c = if accepted { &self.posts_accepted } else { &self.posts_refused };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn write_error(&self) {
        self.write_errors.fetch_add(1, Ordering::Relaxed);
    }

    pub fn render(&self, took: Duration) {
        self.render_seconds.observe(took);
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
        let mut e = Exposition::new();
        let requests = "rrdscale_web_requests_total";
        e.family(requests, Kind::Counter, "HTTP requests by method, route and status.");
        for ((method, route, status), n) in self.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            e.sample(requests, &[("method", method), ("route", route), ("status", &status.to_string())], n);
        }
        let posts = "rrdscale_web_posts_total";
        e.family(posts, Kind::Counter, "Numbers POSTed to /api, by result.")
            .sample(posts, &[("result", "accepted")], self.posts_accepted.load(Ordering::Relaxed))
            .sample(posts, &[("result", "refused")], self.posts_refused.load(Ordering::Relaxed));
        e.counter(
            "rrdscale_web_write_errors_total",
            "RRD writes that failed after validation.",
            self.write_errors.load(Ordering::Relaxed),
        );
        let refused_total = "rrdscale_web_refused_total";
        e.family(refused_total, Kind::Counter, "Requests refused by a limit or an access rule, by reason.");
        {
            let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
            for reason in REFUSALS {
                e.sample(refused_total, &[("reason", reason)], refused.get(reason).copied().unwrap_or(0));
            }
        }
        if let Some((graphs, complexes)) = counts {
            e.gauge("rrdscale_web_graphs", "Graphs in the metadata store.", graphs);
            e.gauge("rrdscale_web_complexes", "Complex graphs in the metadata store.", complexes);
        }
        e.histogram("rrdscale_web_render_seconds", "Time to draw one graph PNG.", &self.render_seconds);
        e.family(
            "rrdscale_web_writer",
            Kind::Gauge,
            "How RRD files are written (embedded or a daemon address).",
        )
        .sample("rrdscale_web_writer", &[("writer", writer)], 1);
        if let Some(c) = connected {
            e.gauge("rrdscale_web_daemon_connected", "Whether the daemon connection is open.", u8::from(c));
        }
        e.finish()
    }
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
    ([(header::CONTENT_TYPE, rrd_metrics::CONTENT_TYPE)], text).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every family is there, the text is valid exposition text
    /// (`rrd_metrics::parse`: HELP and TYPE once each, histogram buckets
    /// cumulative up to +Inf with `_sum` and `_count`), label values are
    /// escaped, and the values are what was counted.
    #[test]
    fn exposition_has_every_family() {
        let m = Metrics::default();
        m.post(true);
        m.post(false);
        m.post(false);
        m.render(Duration::from_millis(30));
        m.render(Duration::from_secs(9));
        m.request("GET", "/graph/{service}/{section}/{graph}", 200);
        let t = m.render_text(Some((3, 1)), "unix:/run/\"x\".sock", Some(true));
        let s = rrd_metrics::parse(&t).unwrap_or_else(|e| panic!("{e}\n{t}"));
        assert_eq!(s.get("rrdscale_web_posts_total{result=\"refused\"}"), Some(2.0), "{t}");
        assert_eq!(s.get("rrdscale_web_render_seconds_bucket{le=\"0.025\"}"), Some(0.0), "{t}");
        assert_eq!(s.get("rrdscale_web_render_seconds_bucket{le=\"0.05\"}"), Some(1.0), "{t}");
        assert_eq!(s.get("rrdscale_web_render_seconds_bucket{le=\"5\"}"), Some(1.0), "{t}");
        assert_eq!(s.get("rrdscale_web_render_seconds_bucket{le=\"+Inf\"}"), Some(2.0), "{t}");
        assert_eq!(s.get("rrdscale_web_render_seconds_count"), Some(2.0), "{t}");
        assert!((s.get("rrdscale_web_render_seconds_sum").unwrap() - 9.03).abs() < 1e-9, "{t}");
        assert_eq!((s.get("rrdscale_web_graphs"), s.get("rrdscale_web_complexes")), (Some(3.0), Some(1.0)));
        assert!(t.contains("route=\"/graph/{service}/{section}/{graph}\",status=\"200\"} 1"), "{t}");
        let writer = &s.family("rrdscale_web_writer").unwrap().samples[0];
        assert_eq!(writer.label("writer"), Some("unix:/run/\"x\".sock"));
        assert_eq!(s.get("rrdscale_web_daemon_connected"), Some(1.0));
        m.refused("origin");
        let t = m.render_text(None, "embedded", None);
        let s = rrd_metrics::parse(&t).unwrap_or_else(|e| panic!("{e}\n{t}"));
        assert_eq!(s.get("rrdscale_web_refused_total{reason=\"origin\"}"), Some(1.0), "{t}");
        assert_eq!(s.get("rrdscale_web_refused_total{reason=\"host\"}"), Some(0.0), "{t}");
        assert!(
            s.family("rrdscale_web_graphs").is_none() && s.family("rrdscale_web_daemon_connected").is_none()
        );
    }
}
