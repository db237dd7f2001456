//! Shared by the `api_*` tests: the server in-process on an ephemeral
//! port and a minimal HTTP/1.1 client.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub async fn start(dir: &Path) -> SocketAddr {
    start_with(dir, rrd_web::Writer::Embedded).await
}

pub async fn start_with(dir: &Path, writer: rrd_web::Writer) -> SocketAddr {
    start_app(rrd_web::App::open_with(dir, writer).expect("open data dir")).await
}

pub async fn start_app(app: std::sync::Arc<rrd_web::App>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rrd_web::serve(listener, app));
    addr
}

/// One request; returns (status, headers, body).
pub async fn http_full(
    addr: SocketAddr,
    method: &str,
    target: &str,
    content_type: &str,
    body: &str,
) -> (u16, String, Vec<u8>) {
    let content_type = format!("Content-Type: {content_type}");
    request(addr, method, target, &["Host: gf.test", &content_type], body).await
}

/// One request with the given extra header lines (`Name: value`) and no
/// Host unless one is among them; returns (status, headers, body).
pub async fn request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[&str],
    body: &str,
) -> (u16, String, Vec<u8>) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").expect("header end");
    let head = String::from_utf8_lossy(&buf[..split]).to_string();
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut out = buf[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        out = dechunk(&out);
    }
    (status, head, out)
}

/// `/metrics` as text.
pub async fn metrics_text(addr: SocketAddr) -> String {
    let (_, _, body) = http_full(addr, "GET", "/metrics", "text/plain", "").await;
    String::from_utf8(body).unwrap()
}

pub async fn http(addr: SocketAddr, method: &str, target: &str, form: &str) -> (u16, Vec<u8>) {
    let (st, _, body) = http_full(addr, method, target, "application/x-www-form-urlencoded", form).await;
    (st, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let n = usize::from_str_radix(std::str::from_utf8(&b[..line_end]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[line_end + 2..line_end + 2 + n]);
        b = &b[line_end + 4 + n..];
    }
}

fn parse(target: &str, body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{target}: {e}: {}", String::from_utf8_lossy(body)))
}

/// A form request answered with JSON.
pub async fn json(addr: SocketAddr, method: &str, target: &str, form: &str) -> (u16, Value) {
    let (st, body) = http(addr, method, target, form).await;
    (st, parse(target, &body))
}

/// A JSON-body POST answered with JSON.
pub async fn post_json(addr: SocketAddr, target: &str, body: &Value) -> (u16, Value) {
    let (st, _, out) = http_full(addr, "POST", target, "application/json", &body.to_string()).await;
    (st, parse(target, &out))
}

pub async fn post_raw(addr: SocketAddr, target: &str, body: &str) -> (u16, Value) {
    let (st, _, out) = http_full(addr, "POST", target, "application/json", body).await;
    (st, parse(target, &out))
}

pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// PNG width and height.
pub fn png_size(b: &[u8]) -> (u32, u32) {
    let dec = png::Decoder::new(std::io::Cursor::new(b.to_vec()));
    let reader = dec.read_info().expect("a decodable PNG");
    (reader.info().width, reader.info().height)
}

/// Posts `number` at `time` and checks the answer.
pub async fn post_number(addr: SocketAddr, path: &str, form: &str) -> Value {
    let (st, v) = json(addr, "POST", path, form).await;
    assert_eq!(st, 200, "{path} {form}: {v}");
    assert_eq!(v["error"], 0);
    v["data"].clone()
}

/// The real rrdtool, with TZ=UTC; fails loudly when it is missing.
pub fn rrdtool(args: &[String]) -> String {
    let out = std::process::Command::new("rrdtool")
        .args(args)
        .env("TZ", "UTC")
        .output()
        .expect("rrdtool 1.7.2 must be installed (Debian package rrdtool) for this test");
    assert!(out.status.success(), "rrdtool {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}
