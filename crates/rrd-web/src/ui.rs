//! The browser UI: one HTML shell served at GrowthForecast's page paths,
//! and the JavaScript modules and CSS it loads, all embedded in the binary.
//!
//! Owns: the page routes (`/`, `/list/...`, `/view_graph/...`,
//! `/view_complex/...`, `/add_complex`, `/edit/...`, `/edit_complex/...`),
//! the asset route `/ui/{version}/{file}`, and their caching headers.
//!
//! Invariants: every asset URL carries a version that is a hash of all the
//! embedded assets, so an asset served under the current version never
//! changes and is cached for a year (`immutable`); a request for another
//! version gets the current bytes with `no-cache`, so a page loaded before
//! an upgrade still works. The shell is `no-cache` (revalidated through its
//! ETag) because it names the current version. Every asset has a strong
//! ETag and `If-None-Match` is answered with 304. Unknown files are 404.
//!
//! Deliberately not here: the JSON API and the graph PNGs (lib.rs and its
//! modules); data is never rendered on the server, the client fetches the
//! JSON API, so this module needs no state. No build step: the files in
//! `ui/` are served exactly as written.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// One embedded file of `ui/`.
struct Asset {
    name: &'static str,
    mime: &'static str,
    body: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the shell may load. Modules import each other by relative
/// path, so they all live under the same versioned folder.
const ASSETS: &[Asset] = &[
    Asset { name: "app.css", mime: "text/css; charset=utf-8", body: include_bytes!("../ui/app.css") },
    Asset { name: "app.js", mime: JS, body: include_bytes!("../ui/app.js") },
    Asset { name: "api.js", mime: JS, body: include_bytes!("../ui/api.js") },
    Asset { name: "dom.js", mime: JS, body: include_bytes!("../ui/dom.js") },
    Asset { name: "list.js", mime: JS, body: include_bytes!("../ui/list.js") },
    Asset { name: "graph.js", mime: JS, body: include_bytes!("../ui/graph.js") },
    Asset { name: "edit.js", mime: JS, body: include_bytes!("../ui/edit.js") },
    Asset { name: "complex.js", mime: JS, body: include_bytes!("../ui/complex.js") },
    Asset { name: "icon.svg", mime: "image/svg+xml", body: include_bytes!("../ui/icon.svg") },
];

/// The shell's template; `{{VERSION}}` becomes the asset version.
const SHELL_TEMPLATE: &str = include_str!("../ui/index.html");

/// Same-origin scripts, styles and images only: the UI never needs inline
/// code, so an injected `<script>` could not run.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
     connect-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// Derived once from the embedded bytes.
struct Built {
    version: String,
    etags: Vec<String>,
    shell: String,
    shell_etag: String,
}

static BUILT: LazyLock<Built> = LazyLock::new(|| {
    let mut all = Fnv::new();
    let etags = ASSETS
        .iter()
        .map(|a| {
            all.write(a.name.as_bytes());
            all.write(a.body);
            let mut one = Fnv::new();
            one.write(a.body);
            format!("\"{:016x}\"", one.finish())
        })
        .collect();
    all.write(SHELL_TEMPLATE.as_bytes());
    let version = format!("{:012x}", all.finish() >> 16);
    let shell = SHELL_TEMPLATE.replace("{{VERSION}}", &version);
    let shell_etag = format!("\"{version}\"");
    Built { version, etags, shell, shell_etag }
});

/// FNV-1a, 64 bits: a content fingerprint for cache validation, not a
/// defence against anyone (the assets are ours).
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The version in the current asset URLs (`/ui/{version}/app.js`).
pub fn asset_version() -> &'static str {
    &BUILT.version
}

/// The page and asset routes; stateless, so they merge into any router.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(shell))
        .route("/list/{service}", get(shell))
        .route("/list/{service}/{section}", get(shell))
        .route("/view_graph/{service}/{section}/{graph}", get(shell))
        .route("/view_complex/{service}/{section}/{graph}", get(shell))
        .route("/add_complex", get(shell))
        .route("/edit/{service}/{section}/{graph}", get(shell))
        .route("/edit_complex/{service}/{section}/{graph}", get(shell))
        .route("/ui/{version}/{file}", get(asset))
}

/// True when `If-None-Match` lists `etag` (or is `*`).
fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

fn respond(
    headers: &HeaderMap,
    etag: &str,
    mime: &'static str,
    cache: &'static str,
    body: &'static [u8],
) -> Response {
    let etag_value = HeaderValue::from_str(etag).unwrap_or_else(|_| HeaderValue::from_static("\"0\""));
    let common = [
        (header::ETAG, etag_value),
        (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ];
    if not_modified(headers, etag) {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (StatusCode::OK, common, [(header::CONTENT_TYPE, mime)], body).into_response()
}

async fn shell(headers: HeaderMap) -> Response {
    let built = &*BUILT;
    let mut res =
        respond(&headers, &built.shell_etag, "text/html; charset=utf-8", "no-cache", built.shell.as_bytes());
    let h = res.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    res
}

async fn asset(Path((version, file)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let built = &*BUILT;
    let Some(i) = ASSETS.iter().position(|a| a.name == file) else {
        return (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain")], "no such UI file\n")
            .into_response();
    };
    let cache = if version == built.version { "public, max-age=31536000, immutable" } else { "no-cache" };
    respond(&headers, &built.etags[i], ASSETS[i].mime, cache, ASSETS[i].body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    async fn get_with(uri: &str, if_none_match: Option<&str>) -> Response {
        let mut req = Request::get(uri);
        if let Some(t) = if_none_match {
            req = req.header(header::IF_NONE_MATCH, t);
        }
        routes::<()>().oneshot(req.body(Body::empty()).unwrap()).await.unwrap()
    }

    fn hdr(r: &Response, name: header::HeaderName) -> &str {
        r.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    #[tokio::test]
    async fn shell_is_served_at_every_page_path_and_names_the_current_version() {
        for path in [
            "/",
            "/list/svc",
            "/list/svc/sec",
            "/view_graph/a/b/c",
            "/view_complex/a/b/c",
            "/add_complex",
            "/edit/a/b/c",
            "/edit_complex/a/b/c",
        ] {
            let r = get_with(path, None).await;
            assert_eq!(r.status(), StatusCode::OK, "{path}");
            assert_eq!(hdr(&r, header::CACHE_CONTROL), "no-cache", "{path}");
            assert!(hdr(&r, header::CONTENT_TYPE).starts_with("text/html"));
            assert!(hdr(&r, header::CONTENT_SECURITY_POLICY).contains("script-src 'self'"));
        }
        assert!(BUILT.shell.contains(&format!("/ui/{}/app.js", asset_version())));
        assert!(!BUILT.shell.contains("{{"), "a placeholder was left in the shell");
    }

    #[tokio::test]
    async fn assets_are_immutable_under_the_current_version_and_revalidated_otherwise() {
        let v = asset_version();
        let r = get_with(&format!("/ui/{v}/app.js"), None).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(hdr(&r, header::CACHE_CONTROL), "public, max-age=31536000, immutable");
        assert!(hdr(&r, header::CONTENT_TYPE).starts_with("text/javascript"));
        let etag = hdr(&r, header::ETAG).to_string();
        assert!(etag.starts_with('"') && etag.len() == 18, "{etag}");

        let r = get_with(&format!("/ui/{v}/app.js"), Some(&etag)).await;
        assert_eq!(r.status(), StatusCode::NOT_MODIFIED);
        let r = get_with(&format!("/ui/{v}/app.js"), Some("\"other\", W/\"x\"")).await;
        assert_eq!(r.status(), StatusCode::OK);

        let r = get_with("/ui/0ld/app.css", None).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(hdr(&r, header::CACHE_CONTROL), "no-cache");
        for bad in ["/ui/x/nope.js", "/ui/x/..%2Fui.rs", "/ui/x/index.html"] {
            assert_eq!(get_with(bad, None).await.status(), StatusCode::NOT_FOUND, "{bad}");
        }
    }

    #[test]
    fn every_module_the_shell_loads_is_embedded() {
        // A module imported by another but missing here would 404 at run
        // time only; check every relative import against the table.
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(a.body).unwrap();
            for part in text.split("from './").skip(1) {
                let name = &part[..part.find('\'').unwrap()];
                assert!(ASSETS.iter().any(|b| b.name == name), "{} imports missing {name}", a.name);
            }
        }
        for part in SHELL_TEMPLATE.split("/ui/{{VERSION}}/").skip(1) {
            let name = &part[..part.find('"').unwrap()];
            assert!(ASSETS.iter().any(|b| b.name == name), "the shell loads missing {name}");
        }
    }
}
