//! `rrdscale graph` / `graphv` against the real rrdtool 1.7.2 on files
//! rrdtool made:
//! - the series a graph plots (after DEF consolidation and CDEF) equal
//!   `rrdtool xport` of the same DEF/CDEF/VDEF, row by row;
//! - `graphv` prints the same lines (PRINT results, image and graph
//!   geometry, start/end, value_min/value_max, legends and their
//!   coordinates), and `graph` the same size and PRINT lines;
//! - errors carry rrdtool's messages;
//! - the images are real: the PNG decodes to the reported size and is not
//!   blank, the SVG parses as XML with the reported size.
//!
//! Pixels are not compared: rrdscale draws with its own rasteriser.
//! Example images are left in `test-output/graph/`. A missing rrdtool fails
//! the tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RRDTOOL: &str = "/usr/bin/rrdtool";
/// The files' data starts here (Tue 2023-11-14 22:13:20 UTC).
const T0: i64 = 1_700_000_000;

fn rrdscale_bin() -> &'static str {
    env!("CARGO_BIN_EXE_rrdscale")
}

fn run(program: &str, args: &[String], dir: &Path) -> Output {
    assert!(
        Path::new(RRDTOOL).exists(),
        "rrdtool not installed: run .ci/run or apt-get install rrdtool (looked for {RRDTOOL})"
    );
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"))
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A small deterministic generator for the readings.
struct Lcg(u64);

impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Two files made and filled by rrdtool: `t.rrd` (300 s step, a gauge, a
/// counter and a derive, several RRAs, two weeks with a gap) and `m.rrd`
/// (60 s step, for CDEFs over mixed steps).
fn setup(dir: &Path) {
    let ok = |o: Output| assert!(o.status.success(), "setup: {}", String::from_utf8_lossy(&o.stderr));
    ok(run(
        RRDTOOL,
        &strings(&[
            "create",
            "t.rrd",
            "--start",
            &(T0 - 1).to_string(),
            "--step",
            "300",
            "DS:a:GAUGE:600:U:U",
            "DS:b:COUNTER:600:U:U",
            "DS:c:DERIVE:600:U:U",
            "RRA:AVERAGE:0.5:1:1000",
            "RRA:MAX:0.5:6:600",
            "RRA:MIN:0.5:6:600",
            "RRA:AVERAGE:0.5:12:600",
            "RRA:LAST:0.5:1:1000",
        ]),
        dir,
    ));
    ok(run(
        RRDTOOL,
        &strings(&[
            "create",
            "m.rrd",
            "--start",
            &(T0 - 1).to_string(),
            "--step",
            "60",
            "DS:x:GAUGE:120:0:U",
            "RRA:AVERAGE:0.5:1:6000",
            "RRA:AVERAGE:0.5:10:2000",
        ]),
        dir,
    ));
    let mut rng = Lcg(7);
    let mut updates = Vec::new();
    let (mut b, mut c) = (0u64, 0i64);
    for i in 1..=(14 * 288) {
        // A gap of six hours on the third day.
        if (700..772).contains(&i) {
            continue;
        }
        let t = T0 + i * 300;
        let a = 50.0 + 40.0 * (i as f64 / 20.0).sin() + 5.0 * rng.unit();
        b += (1000.0 + 3000.0 * rng.unit()) as u64;
        c += (rng.unit() * 2000.0 - 900.0) as i64;
        updates.push(format!("{t}:{a:.4}:{b}:{c}"));
    }
    for chunk in updates.chunks(500) {
        let mut args = strings(&["update", "t.rrd"]);
        args.extend(chunk.iter().cloned());
        ok(run(RRDTOOL, &args, dir));
    }
    let mut updates = Vec::new();
    for i in 1..=(4 * 1440) {
        let t = T0 + i * 60;
        updates.push(format!("{t}:{:.3}", 10.0 + 8.0 * (i as f64 / 90.0).cos() + rng.unit()));
    }
    for chunk in updates.chunks(500) {
        let mut args = strings(&["update", "m.rrd"]);
        args.extend(chunk.iter().cloned());
        ok(run(RRDTOOL, &args, dir));
    }
}

fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("rrdscale-graph-").tempdir().expect("tempdir")
}

/// `<workspace>/test-output/graph`.
fn output_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate_dir.parent().and_then(Path::parent).unwrap_or(crate_dir);
    let dir = workspace.join("test-output/graph");
    std::fs::create_dir_all(&dir).expect("creating test-output/graph");
    dir
}

/// A graph definition: options, data elements, what is drawn (whose
/// variables are compared with xport).
struct Def {
    options: &'static [&'static str],
    data: &'static [&'static str],
    draw: &'static [&'static str],
    /// Variables whose plotted series must equal xport's.
    plotted: &'static [&'static str],
}

const S: &str = "1700100000";
const E: &str = "1700400000";

fn definitions() -> Vec<Def> {
    vec![
        Def {
            options: &["--start", S, "--end", E],
            data: &["DEF:a=t.rrd:a:AVERAGE"],
            draw: &["LINE1:a#ff0000:gauge"],
            plotted: &["a"],
        },
        Def {
            options: &[
                "--start",
                "1700000000",
                "--end",
                "1701200000",
                "-w",
                "500",
                "-h",
                "150",
                "--title=two weeks",
            ],
            data: &["DEF:a=t.rrd:a:AVERAGE", "DEF:b=t.rrd:b:AVERAGE", "CDEF:bk=b,1000,/", "CDEF:s=a,bk,+"],
            draw: &["AREA:a#00cc0080:gauge", "STACK:bk#0066ffa0:counter", "LINE1:s#000000:sum"],
            plotted: &["a", "bk", "s"],
        },
        Def {
            options: &["--start", S, "--end", E, "-w", "300"],
            data: &[
                "DEF:a=t.rrd:a:MAX:reduce=MAX",
                "DEF:mn=t.rrd:a:MIN",
                "CDEF:spread=a,mn,-",
                "CDEF:lim=a,30,70,LIMIT",
                "CDEF:cond=a,60,GT,a,UNKN,IF",
            ],
            draw: &[
                "LINE2:a#ff0000:max",
                "LINE1:mn#0000ff:min",
                "AREA:spread#88888880:spread",
                "LINE1:lim#00ff00:lim",
            ],
            plotted: &["a", "mn", "spread", "lim", "cond"],
        },
        Def {
            options: &["--start", S, "--end", E],
            data: &[
                "DEF:a=t.rrd:a:AVERAGE",
                "CDEF:tr=a,3600,TREND",
                "CDEF:holes=a,55,GT,a,UNKN,IF",
                "CDEF:trn=holes,7200,TRENDNAN",
                "CDEF:d=a,PREV(a),-",
                "CDEF:acc=a,PREV,ADDNAN",
                "CDEF:un=a,UN,1,0,IF",
                "CDEF:mx=a,45,MAX,60,MIN",
            ],
            draw: &["LINE1:tr#ff0000:trend", "LINE1:trn#00aa00:trendnan", "LINE1:d#0000ff:delta"],
            plotted: &["tr", "trn", "d", "acc", "un", "mx"],
        },
        Def {
            options: &["--start", S, "--end", E, "--step", "3600"],
            data: &[
                "DEF:a=t.rrd:a:AVERAGE",
                "DEF:c=t.rrd:c:AVERAGE:step=1800",
                "CDEF:t=TIME,86400,%,43200,LT,a,0,IF",
                "CDEF:isinf=c,0,GT,INF,c,IF,ISINF",
            ],
            draw: &["AREA:t#ffaa0080:daytime", "LINE1:c#0000ff:derive", "LINE1:isinf#ff0000"],
            plotted: &["a", "c", "t", "isinf"],
        },
        Def {
            options: &["--start", "1700050000", "--end", "1700300000"],
            data: &[
                "DEF:x=m.rrd:x:AVERAGE",
                "DEF:a=t.rrd:a:AVERAGE",
                "DEF:xs=m.rrd:x:AVERAGE:start=1700000000:end=1700200000",
                "VDEF:xmax=x,MAXIMUM",
                "CDEF:mixed=x,a,+",
                "CDEF:rel=x,xmax,/",
            ],
            draw: &[
                "LINE1:x#ff0000:x",
                "LINE1:mixed#0000ff:mixed",
                "LINE1:rel#00ff00:rel",
                "LINE1:xs#000000:xs",
            ],
            plotted: &["x", "mixed", "rel", "xs"],
        },
        Def {
            options: &["--start", "end-3d", "--end", "1701200000", "-w", "200"],
            data: &[
                "DEF:a=t.rrd:a:LAST",
                "DEF:b=t.rrd:b:AVERAGE",
                "VDEF:p=a,90,PERCENT",
                "CDEF:over=a,p,GT,a,UNKN,IF",
            ],
            draw: &[
                "LINE1:a#ff0000:last",
                "AREA:over#ff000060:above p90",
                "LINE1:b#0000ff:counter:skipscale",
            ],
            plotted: &["a", "b", "over"],
        },
    ]
}

/// The numbers of an `rrdtool xport` of one variable: (time, value).
fn rrdtool_xport(dir: &Path, def: &Def, width: &str, var: &str) -> Vec<(i64, f64)> {
    let mut args = strings(&["xport", "--maxrows", width]);
    let mut opts = def.options.iter();
    while let Some(o) = opts.next() {
        if ["--start", "--end", "--step"].contains(o) {
            args.push(o.to_string());
            args.push(opts.next().expect("option value").to_string());
        }
    }
    args.extend(def.data.iter().map(|s| s.to_string()));
    args.push("--showtime".into());
    args.push(format!("XPORT:{var}"));
    let out = run(RRDTOOL, &args, dir);
    assert!(out.status.success(), "rrdtool {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("xport is text");
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("<row><t>"))
        .map(|l| {
            let (t, rest) = l.split_once("</t><v>").expect("row time");
            let v = rest.split_once("</v>").expect("row value").0;
            (t.parse().expect("time"), if v == "NaN" { f64::NAN } else { v.parse().expect("value") })
        })
        .collect()
}

fn same_number(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    // rrdtool prints 11 significant digits.
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-300
}

fn width_of(def: &Def) -> String {
    let mut it = def.options.iter();
    while let Some(o) = it.next() {
        if *o == "-w" {
            return it.next().expect("width").to_string();
        }
    }
    "400".into()
}

#[test]
fn plotted_series_equal_rrdtool_xport() {
    let dir = tempdir();
    setup(dir.path());
    for (n, def) in definitions().iter().enumerate() {
        // The library call, in the files' directory (relative paths).
        let mut options = rrd_graph::Options::default();
        let mut it = def.options.iter();
        while let Some(o) = it.next() {
            let (name, value) = match *o {
                "--start" => ("start", it.next().copied()),
                "--end" => ("end", it.next().copied()),
                "--step" => ("step", it.next().copied()),
                "-w" => ("width", it.next().copied()),
                "-h" => ("height", it.next().copied()),
                t if t.starts_with("--title=") => ("title", Some(&t[8..])),
                other => panic!("test option {other}"),
            };
            options.apply(name, value).expect("option");
        }
        // The files by absolute path (the process's directory stays put).
        let base = dir.path().display().to_string();
        let elements: Vec<String> = def
            .data
            .iter()
            .chain(def.draw.iter())
            .map(|s| {
                s.replace("=t.rrd:", &format!("={base}/t.rrd:"))
                    .replace("=m.rrd:", &format!("={base}/m.rrd:"))
            })
            .collect();
        let graph = rrd_graph::render(&options, &elements, 1_700_700_000);
        let graph = graph.unwrap_or_else(|e| panic!("definition {n}: {e}"));
        for var in def.plotted {
            let series = graph.series(var).unwrap_or_else(|| panic!("definition {n}: no series {var}"));
            let rows = rrdtool_xport(dir.path(), def, &width_of(def), var);
            assert!(rows.len() > 10, "definition {n} {var}: xport gave {} rows", rows.len());
            let mut known = 0;
            for (t, theirs) in &rows {
                // rrdtool's xport reads past the end of a DEF whose
                // `end=` is earlier than the graph's (stale memory of its
                // in-place consolidation); its graph plots nothing there,
                // so only rows inside the series are compared.
                if *t <= series.start || *t > series.end {
                    continue;
                }
                // The row stamped t covers (t - step, t].
                let row = (t - series.step_secs - series.start).div_euclid(series.step_secs);
                let ours =
                    usize::try_from(row).ok().and_then(|r| series.values.get(r)).copied().unwrap_or(f64::NAN);
                assert!(
                    same_number(ours, *theirs),
                    "definition {n} {var} at {t}: rrdscale {ours}, rrdtool {theirs} (series {}..{} step {})",
                    series.start,
                    series.end,
                    series.step_secs
                );
                known += usize::from(!theirs.is_nan());
            }
            assert!(known > 0, "definition {n} {var}: every row unknown, a useless comparison");
            // The step agrees with xport's (one column: the series' own).
            let xport_step = rows[1].0 - rows[0].0;
            assert_eq!(series.step_secs, xport_step, "definition {n} {var}: step");
        }
    }
}

/// Graph definitions for the CLI comparisons: options and elements.
fn cli_cases() -> Vec<Vec<String>> {
    let mut cases: Vec<Vec<String>> = definitions()
        .iter()
        .map(|d| d.options.iter().chain(d.data.iter()).chain(d.draw.iter()).map(|s| s.to_string()).collect())
        .collect();
    let more: &[&[&str]] = &[
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "VDEF:m=a,MAXIMUM",
            "VDEF:n=a,MINIMUM",
            "VDEF:av=a,AVERAGE",
            "VDEF:l=a,LAST",
            "VDEF:f=a,FIRST",
            "VDEF:t=a,TOTAL",
            "VDEF:p=a,95,PERCENT",
            "VDEF:sd=a,STDEV",
            "LINE1:a#ff0000:gauge",
            "GPRINT:m:max %6.2lf%s",
            "GPRINT:n:min %6.2lf%S",
            "GPRINT:av:avg %6.2lf%S\\l",
            "PRINT:m:%lf",
            "PRINT:l:%le",
            "PRINT:f:%+.3lg",
            "PRINT:t:%10.2lf %s",
            "PRINT:p:p95=%.4lf",
            "PRINT:sd:%lE",
            "PRINT:a:AVERAGE:%lf",
            "PRINT:a:MAX:%5.1lf%%",
            "HRULE:m#0000ff:max",
            "VRULE:m#00ff00:when max\\r",
        ],
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:b=t.rrd:b:AVERAGE",
            "CDEF:big=b,1000000,*",
            "CDEF:small=b,1000000,/",
            "VDEF:bm=big,AVERAGE",
            "VDEF:sm=small,AVERAGE",
            "LINE1:big#ff0000",
            "GPRINT:bm:%6.2lf %S",
            "GPRINT:sm:%6.2lf %S",
            "GPRINT:sm:%6.2lf %s",
            "GPRINT:bm:%6.2lf %S",
            "PRINT:bm:%.3lf%s",
        ],
        &[
            "--start",
            S,
            "--end",
            E,
            "--title=Hello",
            "-v",
            "bytes/s",
            "-w",
            "321",
            "-h",
            "77",
            "DEF:a=t.rrd:a:AVERAGE",
            "AREA:a#ff000080:in\\: traffic",
            "COMMENT:centred\\c",
            "TEXTALIGN:right",
            "COMMENT:one",
            "COMMENT:two\\g",
            "COMMENT:three\\s",
            "COMMENT:up\\u",
            "LINE1:a#0000ff:a\\tb",
            "COMMENT:a long comment that will not fit on the same line as the others do",
        ],
        &["--start", S, "--end", E, "--only-graph", "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000:x"],
        &[
            "--start",
            S,
            "--end",
            E,
            "--full-size-mode",
            "-w",
            "600",
            "-h",
            "250",
            "DEF:a=t.rrd:a:AVERAGE",
            "LINE1:a#ff0000:x",
            "COMMENT:y\\n",
        ],
        &[
            "--start",
            S,
            "--end",
            E,
            "--no-legend",
            "-u",
            "50",
            "-l",
            "20",
            "--rigid",
            "DEF:a=t.rrd:a:AVERAGE",
            "LINE1:a#ff0000:x",
        ],
        &["--start", S, "--end", E, "-u", "50", "-l", "-20", "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000:x"],
        &[
            "--start",
            S,
            "--end",
            E,
            "--logarithmic",
            "DEF:b=t.rrd:b:AVERAGE",
            "CDEF:bb=b,1000,*",
            "LINE1:bb#ff0000:log",
        ],
        &[
            "--start",
            S,
            "--end",
            E,
            "--base",
            "1024",
            "--units-exponent",
            "3",
            "DEF:b=t.rrd:b:AVERAGE",
            "CDEF:bb=b,100000,*",
            "LINE1:bb#ff0000:base",
            "VDEF:m=bb,MAXIMUM",
            "GPRINT:m:%6.2lf %s",
        ],
        &[
            "--start",
            S,
            "--end",
            E,
            "--imgformat",
            "SVG",
            "-c",
            "BACK#000000",
            "-c",
            "FONT#ffffff",
            "-c",
            "CANVAS#202020",
            "DEF:a=t.rrd:a:AVERAGE",
            "LINE1:a#ff0000:x",
            "HRULE:1000#ffffff:hidden",
        ],
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "VDEF:m=a,MAXIMUM",
            "PRINT:m:%lf",
            "COMMENT:nothing drawn",
        ],
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "CDEF:u=a,UNKN,+",
            "LINE1:u#ff0000:empty",
            "VDEF:m=u,MAXIMUM",
            "GPRINT:m:%lf",
            "PRINT:m:%6.2lf %S",
        ],
        &["--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINE1:60#ff0000:const", "LINE2:a"],
    ];
    cases.extend(more.iter().map(|c| strings(c)));
    cases.extend(option_cases());
    cases
}

/// The graph options real templates use (Cacti, Munin, Smokeping,
/// LibreNMS, MRTG front ends), each over a graph with several legend
/// lines so that legend placement, sizes and coordinates are exercised.
fn option_cases() -> Vec<Vec<String>> {
    let legends: &[&str] = &[
        "DEF:a=t.rrd:a:AVERAGE",
        "DEF:b=t.rrd:b:AVERAGE",
        "VDEF:m=a,MAXIMUM",
        "AREA:a#ff000080:in traffic",
        "LINE2:b#0000ff:out traffic\\l",
        "GPRINT:m:max %6.2lf%s",
        "COMMENT:centred\\c",
        "HRULE:60#00ff00:sixty",
        "COMMENT:a long comment that will not fit on the same line as the others do",
        "LINE1:a#00ffff:last\\r",
        "PRINT:m:%lf",
    ];
    let options: &[&[&str]] = &[
        // Grids.
        &["--x-grid", "HOUR:6:DAY:1:DAY:1:86400:%a"],
        &["--x-grid", "MINUTE:30:HOUR:6:HOUR:12:0:%H:%M", "--y-grid", "25:2"],
        &["--x-grid", "DAY:1:WEEK:1:WEEK:1:0:week %V", "--y-grid", "7.5:3", "-u", "200"],
        &["--x-grid", "YEAR:1:YEAR:1:YEAR:1:0:%Y", "--y-grid", "none"],
        &["--x-grid", "none", "--y-grid", "0.5:4", "-l", "10", "-u", "12", "--rigid"],
        &["-Y"],
        &["--alt-y-grid", "-u", "1000"],
        &["-Y", "-l", "40", "-u", "42", "--rigid"],
        &["-Y", "--units-exponent", "3"],
        &["--alt-y-mrtg", "--alt-autoscale"],
        &["--week-fmt", "wk %V", "-w", "200"],
        // The right axis and axis formats.
        &["--right-axis", "2:0"],
        &["--right-axis", "0.001:5", "--right-axis-label", "per mille", "-v", "bits"],
        &["--right-axis", "1000:0", "--right-axis-format", "%5.1lf", "--legend-position", "east"],
        &["--right-axis", "8:0", "--right-axis-formatter", "duration", "--left-axis-format", "%4.1lf"],
        &["--right-axis", "1:0", "--right-axis-formatter", "timestamp", "--left-axis-formatter", "numeric"],
        &["--right-axis", "2:0", "--full-size-mode", "-w", "600", "-h", "200"],
        &["-o", "-l", "1", "--right-axis", "10:0"],
        &["-o", "-l", "1", "--right-axis", "10:0", "--units=si"],
        // Legends.
        &["--legend-position", "north", "-t", "Title"],
        &["--legend-position", "west", "-t", "Title", "-v", "vertical"],
        &["--legend-position", "east", "-t", "Title"],
        &["--legend-position", "east", "--disable-rrdtool-tag"],
        // The position moves the graph even without a legend.
        &["--legend-position", "east", "--no-legend", "--full-size-mode", "-w", "600", "-h", "300"],
        &["--legend-position", "east", "--full-size-mode", "-w", "700", "-h", "300"],
        &["--legend-position", "west", "--full-size-mode", "-w", "700", "-h", "300"],
        &["--legend-position", "north", "--full-size-mode", "-w", "700", "-h", "300"],
        &["--legend-position", "south", "--legend-direction", "bottomup"],
        &["--legend-direction", "bottomup2"],
        &["--legend-position", "east", "--legend-direction", "bottomup2"],
        &["--legend-direction", "topdown", "--dynamic-labels"],
        // Multi-line titles.
        &["-t", "Traffic\\nfor host<br>eth0<br/>dropped"],
        &["-t", "\\nleading\n\ndoubled", "--legend-position", "north"],
        // Tab stops follow the legend size and whether y labels exist.
        &["--font", "LEGEND:7", "-T", "30", "COMMENT:a\\tb\\tc\\l", "COMMENT:abcdefghij\\tz"],
        &["--y-grid", "none", "--font", "LEGEND:12", "COMMENT:a\\tb\\tc\\l"],
        // Fonts and zoom.
        &["--font", "DEFAULT:11:"],
        &["--font", "LEGEND:6.5", "--font", "AXIS:9"],
        // sscanf reads what it can: "10x" is size 10, "2x" is 2.
        &["--font", "LEGEND:10x", "--right-axis", "1:2x"],
        &["--font", "DEFAULT:9", "--font", "TITLE:13:DejaVu Sans Mono", "-t", "hello", "-v", "units"],
        &["--font", "UNIT:11", "-v", "vertical", "--font", "WATERMARK:9", "-W", "watermark"],
        &["--zoom", "2"],
        &["--zoom", "1.3", "--font", "LEGEND:9.5"],
        &["--zoom", "0.5"],
        &["--zoom", "3", "-a", "SVG"],
        // Pango sizes <sup> from the zoomed font: it grows with the zoom.
        &["--zoom", "2", "-P", "COMMENT:m<sup>2</sup> <b>b</b>"],
        &["--zoom", "0.8", "--pango-markup", "COMMENT:x<sup>2</sup> and <big>big</big>"],
        // Markup.
        &["-P", "-t", "<b>Bold</b> <i>title</i>", "COMMENT:m<sup>2</sup>/s H<sub>2</sub>O"],
        &[
            "--pango-markup",
            "COMMENT:<span foreground=\"#ff0000\">red</span> <small>small</small> <big>big</big>",
            "COMMENT:<span size=\"large\">large</span> a &amp; b <tt>tt</tt> <u>u</u>",
        ],
        // Data and limits.
        &["-Z", "DEF:z=missing.rrd:q:AVERAGE", "LINE1:z#00ff00:missing", "VDEF:zm=z,MAXIMUM", "PRINT:zm:%lf"],
        &["--allow-shrink", "--rigid", "-u", "500", "-l", "-100"],
        &["--allow-shrink", "-u", "500"],
        &["--imginfo", "<IMG SRC=\"/img/%s\" WIDTH=\"%lu\" HEIGHT=\"%lu\">"],
        &["-f", "%s %lu%% %lu", "--zoom", "2"],
        // Backend-only options: accepted, no effect on the numbers.
        &[
            "-N",
            "-i",
            "-G",
            "mono",
            "-R",
            "light",
            "-B",
            "10",
            "--grid-dash",
            "3:1",
            "--lazy",
            "--graph-type",
            "TIME",
        ],
    ];
    options
        .iter()
        .map(|o| {
            let mut case = strings(&["--start", S, "--end", E]);
            case.extend(strings(o));
            case.extend(strings(legends));
            case
        })
        .chain(template_cases())
        .chain([
            // Only data, no PRINT: rrdtool's graph prints nothing at all.
            strings(&["--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE"]),
            strings(&["--start", S, "--end", E]),
            strings(&["--start", S, "--end", E, "-f", "%s %lu %lu", "DEF:a=t.rrd:a:AVERAGE"]),
        ])
        .collect()
}

#[test]
fn graphv_and_graph_print_what_rrdtool_prints() {
    let dir = tempdir();
    setup(dir.path());
    let mut failures = Vec::new();
    for (n, case) in cli_cases().iter().enumerate() {
        for verb in ["graphv", "graph"] {
            let mut ours_args = vec![verb.to_string(), format!("ours{n}.img")];
            ours_args.extend(case.iter().cloned());
            let mut theirs_args = vec![verb.to_string(), format!("theirs{n}.img")];
            theirs_args.extend(case.iter().cloned());
            let mut ours = run(rrdscale_bin(), &ours_args, dir.path());
            let theirs = run(RRDTOOL, &theirs_args, dir.path());
            // --imginfo prints the file name, which differs by design.
            ours.stdout = String::from_utf8_lossy(&ours.stdout)
                .replace(&format!("ours{n}.img"), &format!("theirs{n}.img"))
                .into_bytes();
            if ours.stdout != theirs.stdout || ours.status.success() != theirs.status.success() {
                failures.push(format!(
                    "{verb} case {n} {case:?}:\n--- rrdtool ({})\n{}{}\n--- rrdscale ({})\n{}{}",
                    theirs.status,
                    String::from_utf8_lossy(&theirs.stdout),
                    String::from_utf8_lossy(&theirs.stderr),
                    ours.status,
                    String::from_utf8_lossy(&ours.stdout),
                    String::from_utf8_lossy(&ours.stderr)
                ));
            }
            // Both write a file exactly when something is drawn, of the
            // same size (--zoom included).
            let made = |who: &str| dir.path().join(format!("{who}{n}.img")).exists();
            assert_eq!(made("ours"), made("theirs"), "{verb} case {n}: image file written by one tool only");
            if made("ours") {
                let size =
                    |who: &str| image_size(&std::fs::read(dir.path().join(format!("{who}{n}.img"))).unwrap());
                assert_eq!(size("ours"), size("theirs"), "{verb} case {n}: image size {case:?}");
            }
            let _ = std::fs::remove_file(dir.path().join(format!("ours{n}.img")));
            let _ = std::fs::remove_file(dir.path().join(format!("theirs{n}.img")));
        }
    }
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn errors_match_rrdtool() {
    let dir = tempdir();
    setup(dir.path());
    let cases: &[&[&str]] = &[
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:nope:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "DEF:a=missing.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", E, "--end", S, "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", "1000", "--end", S, "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", "bogus", "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINE1:zz#ff0000"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINEx:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000:x:bogus"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "VDEF:m=a,MAXIMUM", "GPRINT:m:%d"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "VDEF:m=a,MAXIMUM", "PRINT:m:%lf %lf"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "VDEF:m=a,MAXIMUM", "PRINT:m:%s%lf"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "GPRINT:a:%lf"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "VDEF:m=a,FOO"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "VDEF:m=a,101,PERCENT"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "CDEF:b=a,+", "LINE1:b#ff0000"],
        &[
            "x.png",
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "CDEF:b=a,2,*,600,TREND",
            "LINE1:b#ff0000",
        ],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000:x\\q"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "STACK:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "TEXTALIGN:middle"],
        &["x.png", "--start", S, "--end", E, "-w", "5", "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "-u", "5x", "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "-o", "-l", "0", "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "-c", "NOPE#ffffff", "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "-a", "GIF", "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "--base", "10", "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"],
        &["--start", S],
    ];
    let line: &[&str] = &["DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000"];
    let bad_options: &[&[&str]] = &[
        &["--y-grid", "x"],
        &["--y-grid", "0:1"],
        &["--y-grid", "5:0"],
        &["--x-grid", "FOO:6:DAY:1:DAY:1:86400:%a"],
        &["--x-grid", "HOUR:6:DAY:1:NOPE:1:86400:%a"],
        &["--x-grid", "HOUR:6:DAY"],
        &["--right-axis", "0:1"],
        &["--right-axis", "1"],
        &["--right-axis", "3:1", "--right-axis-format", "%d"],
        &["--left-axis-format", "%lf%s"],
        &["--left-axis-formatter", "foo"],
        &["--right-axis-formatter", "bar"],
        &["--legend-position", "up"],
        &["--legend-direction", "up"],
        &["--zoom", "0"],
        &["--zoom", "x"],
        &["--font", "FOO:3"],
        &["--font", "DEFAULT:x"],
        &["-G", "foo"],
        &["-R", "foo"],
        &["--grid-dash", "1:x"],
        &["--grid-dash", "1"],
        &["-f", "%d"],
        &["-f", "%s %lu"],
        &["--graph-type", "FOO"],
        &["--graph-type", "XY"],
        &["--daemon", "a", "--daemon", "b"],
    ];
    let option_cases: Vec<Vec<String>> = bad_options
        .iter()
        .map(|o| {
            let mut case = strings(&["x.png", "--start", S, "--end", E]);
            case.extend(strings(o));
            case.extend(strings(line));
            case
        })
        .collect();
    let cases: Vec<Vec<String>> = cases.iter().map(|c| strings(c)).chain(option_cases).collect();
    let mut failures = Vec::new();
    for case in cases {
        let mut args = strings(&["graph"]);
        args.extend(case.iter().cloned());
        let ours = run(rrdscale_bin(), &args, dir.path());
        let theirs = run(RRDTOOL, &args, dir.path());
        assert!(!theirs.status.success(), "rrdtool accepted {case:?}");
        if ours.status.success() || ours.stderr != theirs.stderr {
            failures.push(format!(
                "{case:?}\n  rrdtool:  {}  rrdscale: {} (status {})",
                String::from_utf8_lossy(&theirs.stderr),
                String::from_utf8_lossy(&ours.stderr),
                ours.status
            ));
        }
    }
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

/// Command lines as Cacti, LibreNMS, Smokeping and Munin write them.
fn template_cases() -> Vec<Vec<String>> {
    let cases: &[&[&str]] = &[
        &[
            "--imgformat=PNG",
            "--title=Traffic - eth0",
            "--rigid",
            "--base=1000",
            "--height=120",
            "--width=500",
            "--alt-autoscale-max",
            "--lower-limit=0",
            "COMMENT:From 2023/11/16 To 2023/11/19\\c",
            "COMMENT:  \\n",
            "--vertical-label=bits per second",
            "--slope-mode",
            "--font",
            "TITLE:10:",
            "--font",
            "AXIS:7:",
            "--font",
            "LEGEND:8:",
            "--font",
            "UNIT:7:",
            "DEF:a=t.rrd:a:AVERAGE",
            "DEF:b=t.rrd:b:AVERAGE",
            "CDEF:cdefa=a,8,*",
            "AREA:cdefa#00CF00FF:Inbound",
            "GPRINT:cdefa:LAST: Current\\:%8.2lf %s",
            "GPRINT:cdefa:AVERAGE:Average\\:%8.2lf %s",
            "GPRINT:cdefa:MAX:Maximum\\:%8.2lf %s\\n",
            "LINE1:b#002A97FF:Outbound",
            "GPRINT:b:LAST:Current\\:%8.2lf %s",
            "GPRINT:b:AVERAGE:Average\\:%8.2lf %s",
            "GPRINT:b:MAX:Maximum\\:%8.2lf %s\\n",
        ],
        &[
            "--width",
            "400",
            "--height",
            "150",
            "--font",
            "LEGEND:7:DejaVuSansMono",
            "--font",
            "AXIS:6:DejaVuSansMono",
            "--font-render-mode",
            "normal",
            "-c",
            "BACK#EEEEEE00",
            "-c",
            "SHADEA#EEEEEE00",
            "-c",
            "SHADEB#EEEEEE00",
            "-c",
            "CANVAS#FFFFFF00",
            "-c",
            "GRID#a5a5a5",
            "-c",
            "MGRID#FF9999",
            "-R",
            "normal",
            "--grid-dash",
            "1:1",
            "--alt-autoscale-max",
            "--rigid",
            "-E",
            "-l",
            "0",
            "--pango-markup",
            "COMMENT:Bits/s   Now       Ave      Max     \\l",
            "DEF:a=t.rrd:a:AVERAGE",
            "VDEF:al=a,LAST",
            "VDEF:av=a,AVERAGE",
            "VDEF:am=a,MAXIMUM",
            "AREA:a#84BE84:In ",
            "GPRINT:al:%6.2lf%s",
            "GPRINT:av:%6.2lf%s",
            "GPRINT:am:%6.2lf%s\\l",
            "COMMENT:<span foreground='#ff0000'>95th</span>\\l",
        ],
        &[
            "--height",
            "200",
            "--width",
            "600",
            "--title",
            "Smokeping",
            "--rigid",
            "--upper-limit",
            "120",
            "--lower-limit",
            "0",
            "--vertical-label",
            "Seconds",
            "--color",
            "SHADEA#ffffff",
            "--color",
            "BACK#ffffff",
            "DEF:a=t.rrd:a:AVERAGE",
            "AREA:a#dddddd",
            "LINE1:a#00ff00:median rtt",
            "COMMENT:\\t",
            "GPRINT:a:AVERAGE:avg %.1lf ms\\l",
            "COMMENT:probe\\:  20 ICMP Echo Pings (56 Bytes) every 300s\\j",
            "COMMENT:end\\: Sun Nov 19 22\\:00\\:00 2023\\j",
        ],
        &[
            "--font",
            "DEFAULT:0:DejaVuSans,DejaVu Sans,DejaVu LGC Sans,Bitstream Vera Sans",
            "-W",
            "Munin 2.0",
            "--title",
            "Load average - by day",
            "-l",
            "0",
            "--vertical-label",
            "load",
            "--height",
            "175",
            "--only-graph",
            "--disable-rrdtool-tag",
            "DEF:a=t.rrd:a:AVERAGE",
            "LINE1:a#00CC00:load",
            "GPRINT:a:LAST:%6.2lf",
        ],
        // Markup bold in a proportional font: its bold face's widths.
        &[
            "-P",
            "--font",
            "DEFAULT:8:DejaVu Sans",
            "DEF:a=t.rrd:a:AVERAGE",
            "LINE1:a#ff0000",
            "COMMENT:<b>bold text here</b> plain\\l",
            "COMMENT:<i>italic</i> <b><i>bi</i></b>",
        ],
    ];
    cases
        .iter()
        .map(|c| {
            let mut case = strings(&["--start", S, "--end", E]);
            case.extend(strings(c));
            case
        })
        .collect()
}

/// `--lazy`: an image newer than one pixel's worth of seconds stays as it
/// is and graphv reports only PRINT and the geometry, as rrdtool does; an
/// older one is redrawn.
#[test]
fn lazy_keeps_a_fresh_image() {
    let dir = tempdir();
    setup(dir.path());
    let args = |verb: &str, file: &str| {
        let mut a = strings(&[verb, file, "--lazy", "--start", S, "--end", E]);
        a.extend(strings(&["DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000:a", "VDEF:m=a,MAXIMUM", "PRINT:m:%lf"]));
        a
    };
    for file in ["ours.png", "theirs.png"] {
        let made =
            run(RRDTOOL, &strings(&["graph", file, "--start", S, "--end", E, "LINE1:1#ff0000"]), dir.path());
        assert!(made.status.success());
    }
    let before = std::fs::read(dir.path().join("ours.png")).unwrap();
    let ours = run(rrdscale_bin(), &args("graphv", "ours.png"), dir.path());
    let theirs = run(RRDTOOL, &args("graphv", "theirs.png"), dir.path());
    assert_eq!(String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&theirs.stdout));
    assert!(!String::from_utf8_lossy(&ours.stdout).contains("value_min"));
    assert_eq!(std::fs::read(dir.path().join("ours.png")).unwrap(), before, "a fresh image was rewritten");
    // An hour old (more than the 750 s a pixel covers): redrawn.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let f = std::fs::File::options().write(true).open(dir.path().join("ours.png")).unwrap();
    f.set_modified(old).unwrap();
    drop(f);
    let ours = run(rrdscale_bin(), &args("graph", "ours.png"), dir.path());
    assert!(ours.status.success());
    assert_ne!(std::fs::read(dir.path().join("ours.png")).unwrap(), before, "an old image was kept");
}

/// `--font` with a font name (Munin asks for DejaVu Sans): the machine's
/// font is used. Pango's hinted advances of a proportional font cannot be
/// had without FreeType's hinter, so legend coordinates may differ by a
/// pixel or two; the image and graph geometry must be equal.
#[test]
fn named_fonts_are_used() {
    let dir = tempdir();
    setup(dir.path());
    let mut args = strings(&[
        "graphv",
        "-",
        "--start",
        S,
        "--end",
        E,
        "--font",
        "DEFAULT:0:DejaVuSans,DejaVu Sans,DejaVu LGC Sans,Bitstream Vera Sans",
        "-t",
        "Munin style",
        "-v",
        "bytes",
    ]);
    args.extend(strings(&[
        "DEF:a=t.rrd:a:AVERAGE",
        "DEF:b=t.rrd:b:AVERAGE",
        "VDEF:m=a,MAXIMUM",
        "AREA:a#ff000080:in traffic",
        "LINE2:b#0000ff:out traffic\\l",
        "GPRINT:m:max %6.2lf%s",
        "COMMENT:centred\\c",
        "HRULE:60#00ff00:sixty",
        "COMMENT:a long comment that will not fit on the same line as the others do",
        "LINE1:a#00ffff:last\\r",
    ]));
    let lines = |o: &Output| -> Vec<(String, String)> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .take_while(|l| !l.starts_with("image = "))
            .filter_map(|l| l.split_once(" = ").map(|(k, v)| (k.to_string(), v.to_string())))
            .collect()
    };
    let ours = lines(&run(rrdscale_bin(), &args, dir.path()));
    let theirs = lines(&run(RRDTOOL, &args, dir.path()));
    assert_eq!(ours.len(), theirs.len(), "ours {ours:?}\ntheirs {theirs:?}");
    for ((ok, ov), (tk, tv)) in ours.iter().zip(&theirs) {
        assert_eq!(ok, tk);
        if ok.starts_with("coords[") {
            let nums = |v: &str| -> Vec<i64> {
                v.trim_matches('"').split(',').map(|n| n.parse().unwrap()).collect()
            };
            for (a, b) in nums(ov).iter().zip(nums(tv)) {
                assert!((a - b).abs() <= 2, "{ok}: ours {ov}, rrdtool {tv}");
            }
        } else {
            assert_eq!(ov, tv, "{ok}");
        }
    }
}

/// Pixels as RGB, whatever the PNG's colour type (8-bit RGB, RGBA, grey).
fn rgb_pixels(bytes: &[u8]) -> (u32, u32, Vec<[u8; 3]>) {
    let (w, h, data, color) = decode_png(bytes);
    let px = match color {
        png::ColorType::Rgb => data.chunks(3).map(|c| [c[0], c[1], c[2]]).collect(),
        png::ColorType::Rgba => data.chunks(4).map(|c| [c[0], c[1], c[2]]).collect(),
        png::ColorType::Grayscale => data.iter().map(|&g| [g, g, g]).collect(),
        png::ColorType::GrayscaleAlpha => data.chunks(2).map(|c| [c[0], c[0], c[0]]).collect(),
        png::ColorType::Indexed => panic!("indexed PNG"),
    };
    (w, h, px)
}

/// The pictures of the option corpus: rrdtool's PNG and ours have the same
/// size, and at most 10% of the pixels differ by more than 48 in a
/// channel (15% below --zoom 1). Our glyphs are not Pango's hinted ones
/// and our tag reads RRDSCALE, so text and antialiasing alone make 1.5-3%
/// differ (5.5% at --zoom 2 where text is larger; 8-10% below --zoom 1,
/// where every line is thinner than a pixel); a misplaced graph, grid,
/// legend block or axis moves far more.
/// The worst pair is saved side by side in test-output/graph/.
#[test]
fn pictures_match_rrdtool_within_tolerance() {
    const TOLERANCE: u8 = 48;
    const MAX_SHARE: f64 = 0.10;
    const MAX_SHARE_SHRUNK: f64 = 0.15;
    let dir = tempdir();
    setup(dir.path());
    let mut worst: Option<(f64, usize, Vec<String>)> = None;
    let mut failures = Vec::new();
    for (n, case) in option_cases().iter().enumerate() {
        if case.iter().any(|a| a == "SVG") {
            continue;
        }
        let draw = |program: &str, file: &str| {
            let mut args = strings(&["graph", file]);
            args.extend(case.iter().cloned());
            run(program, &args, dir.path())
        };
        let (ours, theirs) = (draw(rrdscale_bin(), "ours.png"), draw(RRDTOOL, "theirs.png"));
        assert_eq!(ours.status.success(), theirs.status.success(), "case {n} {case:?}");
        let (Ok(a), Ok(b)) =
            (std::fs::read(dir.path().join("ours.png")), std::fs::read(dir.path().join("theirs.png")))
        else {
            continue;
        };
        let ((wa, ha, pa), (wb, hb, pb)) = (rgb_pixels(&a), rgb_pixels(&b));
        assert_eq!((wa, ha), (wb, hb), "case {n} {case:?}: picture size");
        let differ =
            pa.iter().zip(&pb).filter(|(x, y)| (0..3).any(|i| x[i].abs_diff(y[i]) > TOLERANCE)).count();
        let share = differ as f64 / pa.len().max(1) as f64;
        // Below --zoom 1 every line is thinner than a pixel, so all of it
        // is antialiasing, drawn by different rasterisers.
        let zoom = case.iter().position(|a| a == "--zoom").and_then(|i| case.get(i + 1)?.parse::<f64>().ok());
        let max_share = if zoom.is_some_and(|z| z < 1.0) { MAX_SHARE_SHRUNK } else { MAX_SHARE };
        if share > max_share {
            failures.push(format!("case {n}: {:.1}% of pixels differ {case:?}", share * 100.0));
        }
        if worst.as_ref().is_none_or(|w| share > w.0) {
            let side = side_by_side(wb, hb, &pb, &pa);
            std::fs::write(output_dir().join("worst-theirs-left-ours-right.png"), side).unwrap();
            worst = Some((share, n, case.clone()));
        }
        let _ = std::fs::remove_file(dir.path().join("ours.png"));
        let _ = std::fs::remove_file(dir.path().join("theirs.png"));
    }
    let (share, n, case) = worst.expect("pictures compared");
    eprintln!("worst picture: case {n}, {:.2}% differ: {case:?}", share * 100.0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Two RGB pictures of one size next to each other, as a PNG.
fn side_by_side(w: u32, h: u32, left: &[[u8; 3]], right: &[[u8; 3]]) -> Vec<u8> {
    let mut data = Vec::with_capacity((w * h * 6) as usize);
    for y in 0..h as usize {
        for img in [left, right] {
            for px in &img[y * w as usize..(y + 1) * w as usize] {
                data.extend_from_slice(px);
            }
        }
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w * 2, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().unwrap();
    writer.write_image_data(&data).unwrap();
    writer.finish().unwrap();
    out
}

/// Width and height of a PNG (its IHDR) or an SVG (its `width`/`height`).
fn image_size(bytes: &[u8]) -> (String, String) {
    if bytes.starts_with(b"\x89PNG") && bytes.len() >= 24 {
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]).to_string();
        return (be(&bytes[16..20]), be(&bytes[20..24]));
    }
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1000)]).to_string();
    let attr = |name: &str| {
        let key = format!(" {name}=\"");
        head.split_once(&key)
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(v, _)| v.to_string())
            .unwrap_or_default()
    };
    (attr("width"), attr("height"))
}

/// The graphv number of `key`.
fn info_number(text: &str, key: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no {key} in {text}"))
        .parse()
        .expect("a number")
}

fn decode_png(bytes: &[u8]) -> (u32, u32, Vec<u8>, png::ColorType) {
    let decoder = png::Decoder::new(bytes);
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buf).expect("PNG data");
    buf.truncate(frame.buffer_size());
    (frame.width, frame.height, buf, frame.color_type)
}

#[test]
fn images_decode_to_their_reported_size_and_are_not_blank() {
    let dir = tempdir();
    setup(dir.path());
    let out = output_dir();
    let examples: &[(&str, &[&str])] = &[
        (
            "traffic.png",
            &[
                "--start",
                "1700000000",
                "--end",
                "1700400000",
                "-w",
                "500",
                "-h",
                "160",
                "--title",
                "Traffic on eth0",
                "-v",
                "bits/s",
                "DEF:a=t.rrd:a:AVERAGE",
                "DEF:b=t.rrd:b:AVERAGE",
                "CDEF:bb=b,3,*",
                "AREA:a#00cc0080:in",
                "STACK:bb#0066ffa0:out",
                "LINE1:a#006600",
                "VDEF:m=a,MAXIMUM",
                "VDEF:av=a,AVERAGE",
                "GPRINT:m:max %6.2lf%s",
                "GPRINT:av:avg %6.2lf%s\\l",
                "HRULE:m#ff0000:peak:dashes",
                "VRULE:1700200000#aa00aa:event",
            ],
        ),
        (
            "trend.png",
            &[
                "--start",
                "1700050000",
                "--end",
                "1700300000",
                "-w",
                "400",
                "-h",
                "120",
                "--title",
                "60 s samples and a 2 h trend",
                "DEF:x=m.rrd:x:AVERAGE",
                "CDEF:t=x,7200,TREND",
                "LINE1:x#ff8800:sample",
                "LINE2:t#0044cc:2h trend",
                "VDEF:p=x,95,PERCENT",
                "GPRINT:p:p95 %5.2lf",
                "HRULE:p#cc0000:p95",
            ],
        ),
        (
            "dark.png",
            &[
                "--start",
                S,
                "--end",
                E,
                "--logarithmic",
                "-c",
                "BACK#1e1e1e",
                "-c",
                "CANVAS#101010",
                "-c",
                "FONT#dddddd",
                "-c",
                "SHADEA#1e1e1e",
                "-c",
                "SHADEB#1e1e1e",
                "-c",
                "AXIS#aaaaaa",
                "-c",
                "ARROW#aaaaaa",
                "-c",
                "FRAME#888888",
                "DEF:b=t.rrd:b:AVERAGE",
                "CDEF:bb=b,1000,*",
                "LINE2:bb#ffaa00:rate (log)",
            ],
        ),
        (
            "fullsize.png",
            &[
                "--start",
                S,
                "--end",
                E,
                "--full-size-mode",
                "-w",
                "300",
                "-h",
                "150",
                "DEF:a=t.rrd:a:AVERAGE",
                "AREA:a#3366cc:a",
            ],
        ),
        (
            "only-graph.png",
            &[
                "--start",
                S,
                "--end",
                E,
                "--only-graph",
                "-w",
                "120",
                "-h",
                "30",
                "DEF:a=t.rrd:a:AVERAGE",
                "AREA:a#3366cc",
            ],
        ),
    ];
    for (name, args) in examples {
        let mut full = strings(&["graphv", name]);
        full.extend(strings(args));
        let o = run(rrdscale_bin(), &full, dir.path());
        assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
        let info = String::from_utf8(o.stdout).expect("graphv text");
        let bytes = std::fs::read(dir.path().join(name)).expect("image written");
        std::fs::write(out.join(name), &bytes).expect("saving the example");
        let (w, h, pixels, color) = decode_png(&bytes);
        assert_eq!(i64::from(w), info_number(&info, "image_width"), "{name}");
        assert_eq!(i64::from(h), info_number(&info, "image_height"), "{name}");
        // rrdtool reports the same size for the same options.
        let mut theirs = strings(&["graphv", "theirs.png"]);
        theirs.extend(strings(args));
        let t = String::from_utf8(run(RRDTOOL, &theirs, dir.path()).stdout).expect("text");
        assert_eq!(info_number(&t, "image_width"), i64::from(w), "{name}: rrdtool's width");
        assert_eq!(info_number(&t, "image_height"), i64::from(h), "{name}: rrdtool's height");
        let bpp = color.samples();
        let first = &pixels[..bpp];
        let differing = pixels.chunks(bpp).filter(|p| p != &first).count();
        assert!(
            differing * 20 > (w * h) as usize,
            "{name}: only {differing} pixels differ from the background"
        );
    }
    // `-` writes the PNG to standard output, nothing else (rrdtool prints
    // no size line when the first argument is `-`).
    let o = run(
        rrdscale_bin(),
        &strings(&["graph", "-", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000:x"]),
        dir.path(),
    );
    assert!(o.status.success());
    let (w, h, _, _) = decode_png(&o.stdout);
    assert_eq!((w, h), (481, 155));
    assert!(o.stdout.ends_with(b"IEND\xaeB`\x82"), "trailing bytes after the PNG");
    // graphv with `-`: the info lines, then the image as a blob.
    let o = run(
        rrdscale_bin(),
        &strings(&["graphv", "-", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000:x"]),
        dir.path(),
    );
    let marker = b"image = BLOB_SIZE:";
    let at = o.stdout.windows(marker.len()).position(|w| w == marker).expect("image blob");
    let rest = &o.stdout[at + marker.len()..];
    let nl = rest.iter().position(|b| *b == b'\n').expect("blob size line");
    let size: usize = std::str::from_utf8(&rest[..nl]).unwrap().parse().unwrap();
    assert_eq!(rest.len() - nl - 1, size);
    assert_eq!(decode_png(&rest[nl + 1..]).0, 481);
}

#[test]
fn svg_parses_and_has_the_reported_size() {
    let dir = tempdir();
    setup(dir.path());
    let args = strings(&[
        "graphv",
        "g.svg",
        "--imgformat",
        "SVG",
        "--start",
        S,
        "--end",
        E,
        "--title",
        "SVG <&> test",
        "-v",
        "units",
        "DEF:a=t.rrd:a:AVERAGE",
        "AREA:a#00cc0080:in \"quoted\"",
        "LINE1:a#006600",
        "VDEF:m=a,MAXIMUM",
        "GPRINT:m:max %6.2lf%s",
        "HRULE:m#ff0000:peak",
    ]);
    let o = run(rrdscale_bin(), &args, dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let info = String::from_utf8(o.stdout).unwrap();
    let text = std::fs::read_to_string(dir.path().join("g.svg")).expect("svg written");
    std::fs::write(output_dir().join("example.svg"), &text).expect("saving the example");
    let doc = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let w = info_number(&info, "image_width");
    let h = info_number(&info, "image_height");
    assert_eq!(root.attribute("viewBox"), Some(format!("0 0 {w} {h}").as_str()));
    assert_eq!(root.attribute("width"), Some(format!("{w}pt").as_str()));
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect();
    assert!(texts.iter().any(|t| t == "SVG <&> test"), "title missing: {texts:?}");
    assert!(texts.iter().any(|t| t.contains("in \"quoted\"")), "legend missing: {texts:?}");
    assert!(doc.descendants().filter(|n| n.has_tag_name("path")).count() > 20);
    // rrdtool agrees on the size.
    let mut theirs = args.clone();
    theirs[1] = "theirs.svg".into();
    let t = String::from_utf8(run(RRDTOOL, &theirs, dir.path()).stdout).unwrap();
    assert_eq!((info_number(&t, "image_width"), info_number(&t, "image_height")), (w, h));
}
