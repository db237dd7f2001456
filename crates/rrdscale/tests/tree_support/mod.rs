//! What the `web_tree_*` tests share: `rrdscale web --tree ...` started
//! on an ephemeral port (killed when dropped), a minimal HTTP/1.1 client
//! over a plain socket, and Debian's rrdtool to write trees and to be the
//! oracle (`rrdtool fetch`). A missing peer program fails the test; it
//! never skips.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const RRDTOOL: &str = "/usr/bin/rrdtool";

/// Runs Debian's rrdtool, failing the test on a non-zero status.
pub fn rrdtool(args: &[&str]) -> String {
    assert!(
        Path::new(RRDTOOL).exists(),
        "{RRDTOOL} is missing: these tests compare with Debian's rrdtool (apt-get install rrdtool)"
    );
    let out = Command::new(RRDTOOL).args(args).output().expect("run rrdtool");
    assert!(out.status.success(), "rrdtool {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `rrdtool fetch`'s rows: (stamp, values), `nan` as NaN.
pub fn fetch_rows(file: &Path, cf: &str, start: i64, end: i64) -> (Vec<String>, Vec<(i64, Vec<f64>)>) {
    let text =
        rrdtool(&["fetch", file.to_str().unwrap(), cf, "-s", &start.to_string(), "-e", &end.to_string()]);
    let mut lines = text.lines();
    let names: Vec<String> = lines.next().unwrap().split_whitespace().map(String::from).collect();
    let rows = lines
        .filter(|l| l.contains(':'))
        .map(|l| {
            let (t, vals) = l.split_once(':').unwrap();
            let v = vals.split_whitespace().map(|x| x.parse::<f64>().unwrap_or(f64::NAN)).collect();
            (t.trim().parse().unwrap(), v)
        })
        .collect();
    (names, rows)
}

/// A running `rrdscale web`.
pub struct Server {
    child: Child,
    pub addr: String,
    _data: tempfile::TempDir,
}

impl Server {
    /// `rrdscale web --listen 127.0.0.1:0 --data-dir <temp> <args>`,
    /// once it says where it listens.
    pub fn start(args: &[&str]) -> Server {
        let data = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rrdscale"))
            .args([
                "web",
                "--listen",
                "127.0.0.1:0",
                "--allowed-hosts",
                "127.0.0.1",
                "--daemon",
                "",
                "--data-dir",
            ])
            .arg(data.path())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rrdscale web");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            if err.read_line(&mut line).unwrap() == 0 {
                let _ = child.wait();
                panic!("rrdscale web {args:?} exited before listening");
            }
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = err.read_to_end(&mut sink);
        });
        Server { child, addr, _data: data }
    }

    pub fn get(&self, target: &str) -> Reply {
        self.request("GET", target, None)
    }

    pub fn post(&self, target: &str, body: &serde_json::Value) -> Reply {
        self.request("POST", target, Some(body.to_string()))
    }

    fn request(&self, method: &str, target: &str, body: Option<String>) -> Reply {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let body = body.unwrap_or_default();
        let head = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body.as_bytes()).unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        Reply::parse(&raw)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    fn parse(raw: &[u8]) -> Reply {
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP answer");
        let head = String::from_utf8_lossy(&raw[..end]);
        let mut lines = head.lines();
        let status = lines.next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let mut body = raw[end + 4..].to_vec();
        if headers.iter().any(|(k, v)| k == "transfer-encoding" && v == "chunked") {
            body = dechunk(&body);
        }
        Reply { status, headers, body }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(nl) = b.windows(2).position(|w| w == b"\r\n") else { return out };
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..nl]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[nl + 2..nl + 2 + size]);
        b = &b[nl + 2 + size + 2..];
    }
}

/// A tree written by rrdtool: `h1/if/a.rrd`, `h1/if/b.rrd`, `h2/if/a.rrd`
/// (DS rx, tx; AVERAGE and MAX archives, 60 s and 300 s rows), with
/// `hours` hours of values ending at `end`, some missing.
pub fn rrdtool_tree(dir: &Path, end: i64, hours: i64) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for (k, rel) in ["h1/if/a.rrd", "h1/if/b.rrd", "h2/if/a.rrd"].iter().enumerate() {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let start = end - hours * 3600;
        rrdtool(&[
            "create",
            p.to_str().unwrap(),
            "--start",
            &(start - 60).to_string(),
            "--step",
            "60",
            "DS:rx:GAUGE:120:U:U",
            "DS:tx:GAUGE:120:U:U",
            "RRA:AVERAGE:0.5:1:600",
            "RRA:MAX:0.5:1:600",
            "RRA:AVERAGE:0.5:5:600",
            "RRA:MAX:0.5:5:600",
        ]);
        let mut args = vec!["update".to_string(), p.to_str().unwrap().to_string()];
        let mut t = start;
        let mut i = 0i64;
        while t <= end {
            // A gap of ten minutes in the middle: unknown rows.
            if !(100..110).contains(&i) {
                let rx = ((i * 37 + k as i64 * 11) % 101) as f64 * 1.5;
                let tx = ((i * 13) % 57) as f64 + 0.25;
                args.push(format!("{t}:{rx}:{tx}"));
            }
            t += 60;
            i += 1;
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        rrdtool(&refs);
        files.push(p);
    }
    files
}

/// `secs` as RFC 3339 (UTC), as Grafana sends ranges.
pub fn rfc3339(secs: i64) -> String {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%S.000Z"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
