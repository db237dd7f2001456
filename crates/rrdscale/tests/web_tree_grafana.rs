//! `rrdscale web --tree`'s Grafana side against grafana-rrd-server's
//! shapes and against Debian's `rrdtool fetch` on the same files (written
//! by rrdtool itself): the test-connection answer, search, query (exact
//! names, a glob, an unknown target, the CF field, maxDataPoints), with
//! one tree and with two (names prefixed by the tree), annotations, the
//! Infinity JSON endpoint; and the pages' CSV export against `rrdtool
//! xport` of the same lines.

mod tree_support;

use serde_json::{json, Value};
use tree_support::{fetch_rows, rfc3339, rrdtool_tree, Server};

/// Round stamps, far from now, so nothing depends on the clock.
const END: i64 = 1_700_006_400;

fn setup() -> (tempfile::TempDir, Vec<std::path::PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let files = rrdtool_tree(dir.path(), END, 4);
    (dir, files)
}

fn query(server: &Server, targets: Value, from: i64, to: i64, extra: Value) -> Vec<Value> {
    let mut body = json!({
        "range": {"from": rfc3339(from), "to": rfc3339(to), "raw": {"from": "now-4h", "to": "now"}},
        "targets": targets,
        "interval": "1m",
        "format": "json",
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = server.post("/grafana/query", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json().as_array().unwrap().clone()
}

/// rrdtool fetch's known values of `ds` as Grafana datapoints.
fn expected(file: &std::path::Path, cf: &str, ds: &str, from: i64, to: i64) -> Vec<(f64, i64)> {
    let (names, rows) = fetch_rows(file, cf, from, to);
    let col = names.iter().position(|n| n == ds).unwrap();
    rows.iter().filter(|(_, v)| !v[col].is_nan()).map(|(t, v)| (v[col], t * 1000)).collect()
}

fn points(entry: &Value) -> Vec<(f64, i64)> {
    entry["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_i64().unwrap()))
        .collect()
}

/// `--tree-annotations FILE`: grafana-rrd-server's CSV (its sample's
/// layout: quoted fields, tags with a comma), the rows in the range, in
/// its answer's shape; a later edit of the file shows at once; a broken
/// row is a 500 naming its line.
#[test]
fn annotations_come_from_the_csv_file_in_range() {
    let (dir, _) = setup();
    let csv = dir.path().join("annotations.csv");
    let t = |s: i64| s * 1000;
    std::fs::write(
        &csv,
        format!(
            "time,title,tags,text\n{},\"Rebooted\",\"system\",\"The server is rebooted.\"\n\
             {},\"App restarted\",\"app1,app2\",\"The apps are restarted.\"\n{},late,x,y\n",
            t(END - 3600),
            t(END - 60),
            t(END + 3600)
        ),
    )
    .unwrap();
    let tree = dir.path().to_str().unwrap().to_string();
    let server = Server::start(&["--tree", &tree, "--tree-annotations", csv.to_str().unwrap()]);
    let range =
        json!({"range": {"from": rfc3339(END - 7200), "to": rfc3339(END)}, "annotation": {"name": "a"}});
    let r = server.post("/grafana/annotations", &range);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json(),
        json!([
            {"annotation": "annotation", "time": t(END - 3600), "title": "Rebooted", "tags": "system", "text": "The server is rebooted."},
            {"annotation": "annotation", "time": t(END - 60), "title": "App restarted", "tags": "app1,app2", "text": "The apps are restarted."},
        ])
    );
    std::fs::write(&csv, format!("time,title,tags,text\n{},edited,e,f\nnot-a-time,x,y,z\n", t(END - 10)))
        .unwrap();
    let r = server.post("/grafana/annotations", &range);
    assert_eq!(r.status, 500);
    assert!(r.text().contains("line 3") && r.text().contains("not-a-time"), "{}", r.text());
    std::fs::write(&csv, format!("time,title,tags,text\n{},edited,e,f\n", t(END - 10))).unwrap();
    assert_eq!(server.post("/grafana/annotations", &range).json()[0]["title"], "edited");
}

#[test]
fn grafana_api_shapes_and_numbers_equal_rrdtool_fetch() {
    let (dir, files) = setup();
    let server = Server::start(&["--tree", dir.path().to_str().unwrap()]);

    let hello = server.get("/grafana/");
    assert_eq!(hello.status, 200);
    assert_eq!(hello.json(), json!({"message": "hello"}));

    let found = server.post("/grafana/search", &json!({"target": "if:a"})).json();
    let mut found: Vec<String> = serde_json::from_value(found).unwrap();
    found.sort();
    assert_eq!(found, ["h1:if:a:rx", "h1:if:a:tx", "h2:if:a:rx", "h2:if:a:tx"]);
    assert_eq!(server.post("/grafana/search", &json!({"target": ""})).json(), json!([]));

    // Exact target, AVERAGE, a range inside the fine archive: rrdtool
    // fetch's rows, every one (the last included), unknowns left out.
    let (from, to) = (END - 3 * 3600, END - 600);
    let got = query(&server, json!([{"target": "h1:if:a:rx", "refId": "A"}]), from, to, json!({}));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["target"], "h1:if:a:rx");
    let want = expected(&files[0], "AVERAGE", "rx", from, to);
    assert!(want.len() > 100, "the oracle has rows");
    assert_eq!(points(&got[0]), want);
    let last_ms = want.last().unwrap().1;
    assert!(last_ms >= to * 1000, "the row covering `to` is kept ({last_ms})");

    // The CF field and a range only the coarse archive covers.
    let (from, to) = (END - 4 * 3600 + 300, END);
    let got = query(&server, json!([{"target": "h1:if:b:tx", "cf": "MAX"}]), from, to, json!({}));
    assert_eq!(points(&got[0]), expected(&files[1], "MAX", "tx", from, to));

    // A glob matches every file, named as grafana-rrd-server names them.
    let got = query(&server, json!([{"target": "h*:if:*:rx"}]), from, to, json!({}));
    let mut names: Vec<&str> = got.iter().map(|e| e["target"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["h1:if:a:rx", "h1:if:b:rx", "h2:if:a:rx"]);
    for e in &got {
        let file = match e["target"].as_str().unwrap() {
            "h1:if:a:rx" => &files[0],
            "h1:if:b:rx" => &files[1],
            _ => &files[2],
        };
        assert_eq!(points(e), expected(file, "AVERAGE", "rx", from, to));
    }

    // Unknown targets give no entry (a missing file, a missing DS).
    let got =
        query(&server, json!([{"target": "h9:if:a:rx"}, {"target": "h1:if:a:nope"}]), from, to, json!({}));
    assert_eq!(got, Vec::<Value>::new());

    // maxDataPoints: consolidated to at most that many rows.
    let got = query(&server, json!([{"target": "h1:if:a:rx"}]), from, to, json!({"maxDataPoints": 20}));
    let n = points(&got[0]).len();
    assert!((1..=21).contains(&n), "{n} points for maxDataPoints 20");

    // Thirty years of a 60-second file, without maxDataPoints: consolidated
    // to a bounded number of rows, not fetched row by row.
    let got = query(&server, json!([{"target": "h1:if:a:rx"}]), 1_000_000_000, 2_000_000_000, json!({}));
    let n = points(&got[0]).len();
    assert!((1..=100_001).contains(&n), "{n} points");

    assert_eq!(server.post("/grafana/annotations", &json!({"range": {}})).json(), json!([]));
    let bad =
        server.post("/grafana/query", &json!({"range": {"from": "yesterday", "to": "now"}, "targets": []}));
    assert_eq!(bad.status, 400);
}

#[test]
fn several_trees_prefix_targets_and_infinity_reads_rows() {
    let (one, files) = setup();
    let (two, _) = setup();
    let a = format!("first={}", one.path().display());
    let b = format!("second={}", two.path().display());
    let server = Server::start(&["--tree", &a, "--tree", &b]);
    let r = server.post("/grafana/search", &json!({"target": "h2:if:a:tx"}));
    let mut found: Vec<String> =
        serde_json::from_value(r.json()).unwrap_or_else(|e| panic!("{e}: {}", r.text()));
    found.sort();
    assert_eq!(found, ["first:h2:if:a:tx", "second:h2:if:a:tx"]);
    let (from, to) = (END - 2 * 3600, END);
    let got = query(&server, json!([{"target": "second:h1:if:a:rx"}]), from, to, json!({}));
    assert_eq!(got[0]["target"], "second:h1:if:a:rx");
    assert_eq!(points(&got[0]), expected(&files[0], "AVERAGE", "rx", from, to));

    let r = server.get(&format!("/api/tree/first/h1/if/a.json?start={from}&end={to}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let rows = r.json();
    let rows = rows.as_array().unwrap();
    let (_, oracle) = fetch_rows(&files[0], "AVERAGE", from, to);
    assert_eq!(rows.len(), oracle.len());
    for (row, (_, vals)) in rows.iter().zip(&oracle) {
        assert!(row["time"].as_str().unwrap().ends_with('Z'));
        match row["rx"].as_f64() {
            Some(v) => assert_eq!(v, vals[0]),
            None => assert!(vals[0].is_nan()),
        }
    }
    assert_eq!(server.get("/api/tree/nope/h1/if/a.json").status, 404);
}

/// `rrdtool xport --showtime` rows: (stamp, values).
fn xport_rows(args: &[&str]) -> Vec<(i64, Vec<f64>)> {
    let xml = tree_support::rrdtool(args);
    xml.split("<row>")
        .skip(1)
        .map(|row| {
            let t = row.split("<t>").nth(1).unwrap().split("</t>").next().unwrap().trim().parse().unwrap();
            let v = row
                .split("<v>")
                .skip(1)
                .map(|v| v.split("</v>").next().unwrap().trim().parse::<f64>().unwrap_or(f64::NAN))
                .collect();
            (t, v)
        })
        .collect()
}

/// The CSV export of a page's graph holds what `rrdtool xport` gives for
/// the same lines at the same width (the generic definition: a line per
/// DS, unscaled), unknowns as empty cells.
#[test]
fn csv_export_equals_rrdtool_xport() {
    let (dir, files) = setup();
    let arg = format!("t={}", dir.path().display());
    let server = Server::start(&["--tree", &arg]);
    let (from, to) = (END - 3 * 3600, END - 300);
    let r = server.get(&format!("/tree/t/export?file=h1/if/a.rrd&format=csv&start={from}&end={to}&w=120"));
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time,\"rx\",\"tx\""));
    let got: Vec<(i64, Vec<f64>)> = lines
        .map(|l| {
            let mut cells = l.split(',');
            let t = cells.next().unwrap().parse().unwrap();
            (t, cells.map(|c| c.parse::<f64>().unwrap_or(f64::NAN)).collect())
        })
        .collect();
    let f = files[0].to_str().unwrap();
    let (s, e) = (from.to_string(), to.to_string());
    let (d0, d1) = (format!("DEF:d0={f}:rx:AVERAGE"), format!("DEF:d1={f}:tx:AVERAGE"));
    let want = xport_rows(&[
        "xport",
        "--showtime",
        "-s",
        &s,
        "-e",
        &e,
        "--maxrows",
        "120",
        &d0,
        "CDEF:v0=d0,1,*",
        &d1,
        "CDEF:v1=d1,1,*",
        "XPORT:v0:rx",
        "XPORT:v1:tx",
    ]);
    assert!(want.len() > 10);
    assert_eq!(got.len(), want.len());
    for ((gt, gv), (wt, wv)) in got.iter().zip(&want) {
        assert_eq!(gt, wt);
        for (a, b) in gv.iter().zip(wv) {
            assert!(a == b || (a.is_nan() && b.is_nan()), "at {gt}: {gv:?} vs {wv:?}");
        }
    }
}
