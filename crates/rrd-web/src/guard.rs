//! Who may talk to the server, checked before any route runs.
//!
//! GrowthForecast has no authentication, and scripts (curl, collectd,
//! cron jobs) post without cookies, `Origin` or tokens; they keep working.
//! What is refused is what only a browser tricked by another site sends:
//! - a `Host` the server does not answer to ([`HostPolicy`]): a page on
//!   `evil.example` whose name is rebound to 127.0.0.1 (DNS rebinding)
//!   reaches a local server with `Host: evil.example`, so a server bound
//!   to a loopback address answers only to its own names;
//! - a write (POST, PUT, DELETE, PATCH) whose `Origin`, or `Referer` when
//!   there is no `Origin`, names another site than the request's `Host`
//!   (or an allowed host): a cross-site form or `fetch` with
//!   `Content-Type: text/plain` needs no CORS preflight, so the browser
//!   would otherwise deliver it. Browsers send `Origin` on every POST,
//!   same-origin ones included, so the UI passes by matching its `Host`.
//!
//! Both are answered 403 with GF's error shape, the reason under `host`
//! or `origin`. Before them, a request whose `Host` is missing (HTTP/1.1),
//! repeated or not an authority is answered 400 (RFC 9112 §3.2: two
//! `Host` lines could make this check and a proxy disagree). With a token configured ([`crate::Config::auth_token`]),
//! every write must also carry it (`Authorization: Bearer <token>`, or
//! basic auth with the token as password, any user name): 401 with a
//! `WWW-Authenticate: Basic` challenge otherwise, so a browser asks once.
//! Reads stay open, as in GF.
//!
//! Invariants: the checks look at headers only and never panic on any
//! header bytes; a token is compared in time independent of where it
//! differs.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Version};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

use crate::reply::error_response;
use crate::App;

/// Which `Host` header values the server answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostPolicy {
    /// Any (a server bound to a public address, without `--allowed-hosts`).
    Any,
    /// Only these, lower-case: `name:port` matches exactly, a bare `name`
    /// matches that name on any port.
    Only(Vec<String>),
}

impl HostPolicy {
    /// `rrdscale web`'s policy: `allowed` when given (`*` in it means
    /// any); otherwise, for a loopback listen address, that address,
    /// `localhost`, `127.0.0.1` and `[::1]`, each with the port (and
    /// bare on port 80, where browsers omit it); for any other address,
    /// any host (a LAN or public server is reached by names it cannot
    /// know; `--allowed-hosts` narrows it).
    pub fn for_listen(listen: SocketAddr, allowed: Option<&[String]>) -> HostPolicy {
        if let Some(list) = allowed {
            if list.iter().any(|h| h.trim() == "*") {
                return HostPolicy::Any;
            }
            return HostPolicy::Only(
                list.iter().map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()).collect(),
            );
        }
        if !listen.ip().is_loopback() {
            return HostPolicy::Any;
        }
        let port = listen.port();
        let mut names = vec![listen.to_string(), format!("localhost:{port}"), format!("127.0.0.1:{port}")];
        names.push(format!("[::1]:{port}"));
        if port == 80 {
            names.extend(["localhost".into(), "127.0.0.1".into(), "[::1]".into()]);
        }
        let mut seen = std::collections::HashSet::new();
        names.retain(|n| seen.insert(n.clone()));
        HostPolicy::Only(names)
    }

    /// The policy of a server bound to `port`: the `name:0` entries (a
    /// listen address with port 0, for which [`HostPolicy::for_listen`]
    /// could not know the port) name `port` instead.
    pub fn bound_to(self, port: u16) -> HostPolicy {
        match self {
            HostPolicy::Any => HostPolicy::Any,
            HostPolicy::Only(list) => HostPolicy::Only(
                list.into_iter()
                    .map(|h| match h.strip_suffix(":0") {
                        Some(name) => format!("{name}:{port}"),
                        None => h,
                    })
                    .collect(),
            ),
        }
    }

    /// Whether `authority` (`name[:port]`) is allowed.
    pub fn allows(&self, authority: &str) -> bool {
        match self {
            HostPolicy::Any => true,
            HostPolicy::Only(list) => {
                let a = authority.to_ascii_lowercase();
                let (name, _) = split_port(&a);
                list.iter().any(|h| *h == a || (split_port(h).1.is_none() && h == name))
            }
        }
    }
}

/// `name[:port]` into the name and the port, if any (`[v6]:port` too).
fn split_port(a: &str) -> (&str, Option<&str>) {
    let after_name = if a.starts_with('[') { a.find(']').map_or(a.len(), |i| i + 1) } else { 0 };
    match a[after_name..].rfind(':') {
        Some(i) => {
            let i = after_name + i;
            let port = &a[i + 1..];
            if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
                (&a[..i], Some(port))
            } else {
                (a, None)
            }
        }
        None => (a, None),
    }
}

/// The `scheme://authority` of an `Origin` or `Referer` value, lower-case,
/// with the scheme's default port and any user info removed.
fn source_authority(url: &str) -> Option<String> {
    let url = url.trim().to_ascii_lowercase();
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.is_empty() {
        return None;
    }
    let default = match scheme {
        "http" => Some("80"),
        "https" => Some("443"),
        _ => None,
    };
    match split_port(authority) {
        (name, Some(p)) if Some(p) == default => Some(name.to_string()),
        _ => Some(authority.to_string()),
    }
}

/// RFC 9112 §3.2: an HTTP/1.1 request must carry exactly one `Host`,
/// any request at most one, and its value must be an authority
/// (`name[:port]`, `[v6][:port]`, or empty); `Err` is the 400's text.
pub fn host_field(version: Version, headers: &HeaderMap) -> Result<(), String> {
    let mut values = headers.get_all(header::HOST).iter();
    let Some(value) = values.next() else {
        return if version >= Version::HTTP_11 {
            Err("an HTTP/1.1 request must have a Host header (RFC 9112 section 3.2)".into())
        } else {
            Ok(())
        };
    };
    if values.next().is_some() {
        return Err("a request must have only one Host header (RFC 9112 section 3.2)".into());
    }
    let valid =
        value.as_bytes().iter().all(|&b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]%".contains(&b));
    if !valid {
        return Err(format!(
            "invalid Host header '{}': expected name[:port] (RFC 9112 section 3.2)",
            String::from_utf8_lossy(value.as_bytes()).escape_debug()
        ));
    }
    Ok(())
}

/// The request's `Host`, lower-case (an HTTP/1.0 request may have none).
fn host(headers: &HeaderMap) -> Option<String> {
    headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(|h| h.trim().to_ascii_lowercase())
}

fn is_write(m: &Method) -> bool {
    !matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE)
}

/// Why a request is refused, with the `messages` key it is reported under.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    Host(String),
    Origin(String),
    Token(String),
}

/// The checks of this module, on a request's method and headers.
pub fn judge(config: &crate::Config, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
    let host = host(headers);
    if let Some(h) = &host {
        if !config.hosts.allows(h) {
            return Err(Refusal::Host(format!(
                "Host '{h}' is not served here (DNS rebinding protection; rrdscale web --allowed-hosts adds names)"
            )));
        }
    }
    if !is_write(method) {
        return Ok(());
    }
    let source = match headers.get(header::ORIGIN) {
        Some(o) => Some(("Origin", o)),
        None => headers.get(header::REFERER).map(|r| ("Referer", r)),
    };
    if let Some((which, value)) = source {
        let text = String::from_utf8_lossy(value.as_bytes());
        let same = |a: &str| {
            host.as_deref()
                .is_some_and(|h| h == a || matches!(split_port(h), (name, Some("80" | "443")) if name == a))
        };
        let allowed = match source_authority(&text) {
            Some(a) => same(&a) || matches!(&config.hosts, HostPolicy::Only(_) if config.hosts.allows(&a)),
            None => false,
        };
        if !allowed {
            return Err(Refusal::Origin(format!(
                "cross-site write refused: {which} '{text}' does not match Host '{}'",
                host.as_deref().unwrap_or("")
            )));
        }
    }
    if let Some(token) = &config.auth_token {
        let given = headers.get(header::AUTHORIZATION).and_then(|v| credential(v.as_bytes()));
        if !given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
            return Err(Refusal::Token(
                "this server requires a token for writes: Authorization: Bearer <token>, or basic auth \
                 with the token as password"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// The token in an `Authorization` value: a Bearer token, or a basic-auth
/// password.
fn credential(v: &[u8]) -> Option<String> {
    let v = std::str::from_utf8(v).ok()?.trim();
    let (scheme, rest) = v.split_once(' ')?;
    match scheme.to_ascii_lowercase().as_str() {
        "bearer" => Some(rest.trim().to_string()),
        "basic" => {
            let decoded = String::from_utf8(base64_decode(rest.trim())?).ok()?;
            decoded.split_once(':').map(|(_, pass)| pass.to_string())
        }
        _ => None,
    }
}

/// Standard base64 with padding (what basic auth uses).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Equality whose time depends on the lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Middleware: [`judge`], answering a refusal before any route runs. A
/// write's body is read here, whole: one announced larger than
/// [`crate::MAX_BODY_BYTES`] is refused (413) before it is read, and one
/// that does not arrive within [`crate::Config::header_read_timeout`] is
/// refused with 408 (a client trickling its body holds a connection as
/// long as one trickling its headers would).
pub async fn check(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let announced =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > crate::MAX_BODY_BYTES as u64) {
        return too_large(&app);
    }
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > crate::MAX_URI_BYTES {
        app.metrics.refused("uri_size");
        return error_response(
            StatusCode::URI_TOO_LONG,
            json!({ "uri": format!("the request target is longer than {} bytes", crate::MAX_URI_BYTES) }),
        );
    }
    if let Err(m) = host_field(req.version(), req.headers()) {
        app.metrics.refused("host");
        return error_response(StatusCode::BAD_REQUEST, json!({ "host": m }));
    }
    if let Err(refusal) = judge(&app.config, req.method(), req.headers()) {
        return refuse(&app, refusal);
    }
    if !is_write(req.method()) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let read = axum::body::to_bytes(body, crate::MAX_BODY_BYTES);
    match tokio::time::timeout(app.config.header_read_timeout, read).await {
        Ok(Ok(bytes)) => next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await,
        Ok(Err(e)) if is_length_limit(&e) => too_large(&app),
        Ok(Err(e)) => error_response(
            StatusCode::BAD_REQUEST,
            json!({ "body": format!("reading the body failed: {e}") }),
        ),
        Err(_) => {
            app.metrics.refused("body_timeout");
            error_response(
                StatusCode::REQUEST_TIMEOUT,
                json!({ "body": format!("the body did not arrive within {:?}", app.config.header_read_timeout) }),
            )
        }
    }
}

fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = s.source();
    }
    false
}

fn too_large(app: &App) -> Response {
    app.metrics.refused("body_size");
    error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        json!({ "body": format!("the body is larger than {} bytes", crate::MAX_BODY_BYTES) }),
    )
}

fn refuse(app: &App, refusal: Refusal) -> Response {
    match refusal {
        Refusal::Host(m) => {
            app.metrics.refused("host");
            error_response(StatusCode::FORBIDDEN, json!({ "host": m }))
        }
        Refusal::Origin(m) => {
            app.metrics.refused("origin");
            error_response(StatusCode::FORBIDDEN, json!({ "origin": m }))
        }
        Refusal::Token(m) => {
            app.metrics.refused("token");
            let mut r = error_response(StatusCode::UNAUTHORIZED, json!({ "authorization": m }));
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"rrdscale web\", charset=\"UTF-8\""),
            );
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn host_must_be_one_authority() {
        let one = headers(&[("host", "gf.test:5125")]);
        assert!(host_field(Version::HTTP_11, &one).is_ok());
        assert!(host_field(Version::HTTP_11, &headers(&[("host", "[::1]:80")])).is_ok());
        assert!(host_field(Version::HTTP_11, &headers(&[("host", "")])).is_ok());
        assert!(host_field(Version::HTTP_11, &HeaderMap::new()).unwrap_err().contains("must have a Host"));
        assert!(host_field(Version::HTTP_10, &HeaderMap::new()).is_ok());
        let mut two = one.clone();
        two.append(header::HOST, HeaderValue::from_static("evil.example"));
        assert!(host_field(Version::HTTP_10, &two).unwrap_err().contains("only one"));
        for bad in ["a/b", "a b", "a@b", "\u{e9}t\u{e9}"] {
            let h = HeaderMap::from_iter([(header::HOST, HeaderValue::from_bytes(bad.as_bytes()).unwrap())]);
            assert!(host_field(Version::HTTP_11, &h).unwrap_err().contains("invalid Host"), "{bad}");
        }
    }

    #[test]
    fn a_listener_on_port_0_answers_the_port_it_was_bound_to() {
        let p = HostPolicy::for_listen("127.0.0.1:0".parse().unwrap(), None).bound_to(40123);
        assert!(p.allows("127.0.0.1:40123") && p.allows("localhost:40123"));
        assert!(!p.allows("127.0.0.1:0") && !p.allows("localhost:40124"));
        let given = HostPolicy::for_listen("127.0.0.1:0".parse().unwrap(), Some(&["gf.test".into()]));
        assert_eq!(given.clone().bound_to(40123), given);
        assert_eq!(HostPolicy::Any.bound_to(1), HostPolicy::Any);
    }

    #[test]
    fn loopback_listeners_answer_only_their_names() {
        let p = HostPolicy::for_listen("127.0.0.1:5125".parse().unwrap(), None);
        for ok in ["127.0.0.1:5125", "localhost:5125", "LOCALHOST:5125", "[::1]:5125"] {
            assert!(p.allows(ok), "{ok}");
        }
        for bad in ["evil.example:5125", "localhost:80", "127.0.0.1", "localhost"] {
            assert!(!p.allows(bad), "{bad}");
        }
        assert_eq!(HostPolicy::for_listen("0.0.0.0:5125".parse().unwrap(), None), HostPolicy::Any);
        let list = ["gf.example".to_string(), "10.0.0.5:5125".to_string()];
        let p = HostPolicy::for_listen("0.0.0.0:5125".parse().unwrap(), Some(&list));
        assert!(p.allows("gf.example") && p.allows("gf.example:8080") && p.allows("10.0.0.5:5125"));
        assert!(!p.allows("10.0.0.5:80") && !p.allows("other.example"));
        assert_eq!(
            HostPolicy::for_listen("127.0.0.1:1".parse().unwrap(), Some(&["*".into()])),
            HostPolicy::Any
        );
    }

    #[test]
    fn cross_site_writes_are_refused_and_scripts_pass() {
        let c = crate::Config::default();
        let post = Method::POST;
        assert!(judge(&c, &post, &headers(&[("host", "gf.test")])).is_ok());
        assert!(judge(&c, &post, &headers(&[("host", "gf.test"), ("origin", "http://gf.test")])).is_ok());
        assert!(judge(&c, &post, &headers(&[("host", "gf.test:80"), ("origin", "http://gf.test")])).is_ok());
        assert!(judge(&c, &post, &headers(&[("host", "gf.test"), ("origin", "https://gf.test:443")])).is_ok());
        let refer = headers(&[("host", "gf.test"), ("referer", "http://gf.test/edit/a/b/c?x=1")]);
        assert!(judge(&c, &post, &refer).is_ok());
        for (k, v) in [
            ("origin", "http://evil.example"),
            ("origin", "null"),
            ("origin", "http://gf.test.evil.example"),
            ("referer", "https://evil.example/gf.test"),
        ] {
            let r = judge(&c, &post, &headers(&[("host", "gf.test"), (k, v)]));
            assert!(matches!(r, Err(Refusal::Origin(_))), "{k}: {v}: {r:?}");
        }
        // Behind a proxy that rewrites Host, the public name in the
        // allow-list admits the UI's origin; nothing else is admitted.
        let proxied = crate::Config {
            hosts: HostPolicy::for_listen(
                "127.0.0.1:5125".parse().unwrap(),
                Some(&["gf.example".into(), "127.0.0.1:5125".into()]),
            ),
            ..Default::default()
        };
        let from = |o: &str| headers(&[("host", "127.0.0.1:5125"), ("origin", o)]);
        assert!(judge(&proxied, &post, &from("https://gf.example")).is_ok());
        assert!(matches!(judge(&proxied, &post, &from("https://evil.example")), Err(Refusal::Origin(_))));
        // Reads are not writes.
        assert!(judge(&c, &Method::GET, &headers(&[("host", "gf.test"), ("origin", "http://x")])).is_ok());
    }

    #[test]
    fn tokens_come_as_bearer_or_basic_password() {
        let c = crate::Config { auth_token: Some("s3cret".into()), ..Default::default() };
        let post = Method::POST;
        assert!(matches!(judge(&c, &post, &headers(&[])), Err(Refusal::Token(_))));
        assert!(judge(&c, &post, &headers(&[("authorization", "Bearer s3cret")])).is_ok());
        assert!(matches!(
            judge(&c, &post, &headers(&[("authorization", "Bearer s3cre")])),
            Err(Refusal::Token(_))
        ));
        // "user:s3cret"
        assert!(judge(&c, &post, &headers(&[("authorization", "Basic dXNlcjpzM2NyZXQ=")])).is_ok());
        assert!(judge(&c, &Method::GET, &headers(&[])).is_ok());
        assert_eq!(base64_decode("dXNlcjpzM2NyZXQ=").unwrap(), b"user:s3cret");
    }
}
