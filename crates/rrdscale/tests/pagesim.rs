//! `rrdscale pagesim` end to end, at small sizes so that it never rots:
//! the output parses, has one row per cache size, and the files it writes
//! are SVG. The simulation's and the model's numbers are proved in the
//! engine's unit tests (`rrd_engine::pagesim`); here only what the CLI adds:
//! options, rendering, and errors.

use std::process::{Command, Output};

const RRDSCALE: &str = env!("CARGO_BIN_EXE_rrdscale");

fn pagesim(args: &[&str]) -> Output {
    Command::new(RRDSCALE).arg("pagesim").args(args).env("TZ", "UTC").output().expect("run rrdscale")
}

fn stdout_ok(args: &[&str]) -> String {
    let out = pagesim(args);
    assert!(out.status.success(), "pagesim {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// Proves `--json` is valid JSON with one row per requested cache size, in
/// order, every rate a non-negative number, the model's parts adding up,
/// and the MRTG consolidation levels present.
#[test]
fn json_has_one_row_per_cache_size() {
    let text = stdout_ok(&["--days", "2", "--pages", "1-8", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&text).expect("pagesim --json parses");
    assert_eq!(v["schema"]["name"], "mrtg");
    assert_eq!(v["steps"], 576);
    assert_eq!(v["file_len"], 105_312);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 8);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["p"], i + 1);
        for key in ["none", "none_aligned", "paper", "model", "readahead", "readahead_on_miss"] {
            assert!(num(row, key) >= 0.0, "{key} in {row}");
        }
        let parts = num(row, "model_header") + num(row, "model_rras") + num(row, "model_crossing");
        assert!((parts - num(row, "model")).abs() < 1e-9, "{row}");
    }
    // One page of cache cannot keep anything across an update.
    assert!(num(&rows[0], "none") > 2.0);
    let levels: Vec<u64> =
        v["levels"].as_array().expect("levels").iter().map(|l| l["pdp_count"].as_u64().unwrap()).collect();
    assert_eq!(levels, vec![1, 6, 24, 288]);
    let tod = v["tod"].as_array().expect("tod");
    assert_eq!(tod.len(), 288, "one bucket per 5-minute step of the day");
    assert_eq!(tod[0]["time"], "00:00");
}

/// Proves the text table has a header and exactly one row per cache size,
/// each with eight columns whose numbers parse.
#[test]
fn table_has_one_row_per_cache_size() {
    let text = stdout_ok(&["--days", "1", "--pages", "1,4,8-9", "--schema", "perftest"]);
    let header = text.lines().position(|l| l.split_whitespace().next() == Some("p")).expect("table header");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(header + 1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    let ps: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(ps, ["1", "4", "8", "9"]);
    for r in &rows {
        assert_eq!(r.len(), 8, "{r:?}");
        for (i, cell) in r.iter().enumerate() {
            if i != 5 {
                cell.parse::<f64>().unwrap_or_else(|_| panic!("{cell} in {r:?}"));
            }
        }
    }
    assert!(text.contains("# time of day (UTC)"), "{text}");
}

/// Proves `--svg` and `--tod-svg` write SVG documents with the curves.
#[test]
fn svg_files_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let f13 = dir.path().join("f13.svg");
    let f14 = dir.path().join("f14.svg");
    stdout_ok(&[
        "--days",
        "2",
        "--pages",
        "1-6",
        "--svg",
        f13.to_str().unwrap(),
        "--tod-svg",
        f14.to_str().unwrap(),
    ]);
    for (path, curves) in [(&f13, 6), (&f14, 0)] {
        let svg = std::fs::read_to_string(path).unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "no non-finite coordinates");
        assert_eq!(svg.matches("<polyline").count(), curves, "{}", path.display());
    }
    let f14 = std::fs::read_to_string(&f14).unwrap();
    assert!(f14.matches("<rect").count() > 288, "a bar per step of the day for the pages written");
}

/// Proves `--create` with `--step` simulates a custom schema.
#[test]
fn custom_schema() {
    let text = stdout_ok(&[
        "--create",
        "DS:a:GAUGE:120:U:U RRA:AVERAGE:0.5:1:100 RRA:MAX:0.5:10:100",
        "--step",
        "60",
        "--days",
        "1",
        "--pages",
        "1-3",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"]["step_secs"], 60);
    assert_eq!(v["steps"], 1440);
    assert_eq!(v["rows"].as_array().unwrap().len(), 3);
    // Header, one page per RRA: three pages hold everything (block-aligned).
    assert_eq!(num(&v["rows"][2], "none_aligned"), 0.0);
}

/// Proves bad options fail with rrdtool-style `ERROR:` messages and exit 1.
#[test]
fn bad_options_are_errors() {
    for (args, needle) in [
        (&["--schema", "nope"][..], "unknown schema 'nope'"),
        (&["--pages", "0"][..], "--pages"),
        (&["--pages", "9-3"][..], "--pages"),
        (&["--days", "-1"][..], "--days"),
        (&["--schema", "mrtg", "--create", "DS:a:GAUGE:600:U:U RRA:AVERAGE:0.5:1:10"][..], "exclusive"),
        (&["--create", "DS:a:GAUGE:600:U:U RRA:BOGUS:0.5:1:10", "--days", "1"][..], ""),
        (&["stray"][..], "Usage"),
    ] {
        let out = pagesim(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("ERROR: ") && err.contains(needle), "{args:?}: {err}");
    }
}
