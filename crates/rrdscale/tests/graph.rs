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

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::tools::{assert_no_failures, compare_outputs, differences, rrdscale_bin, run_in as run, words};
use common::RRDTOOL;

/// The files' data starts here (Tue 2023-11-14 22:13:20 UTC).
const T0: i64 = 1_700_000_000;

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// `--start S --end E` (the range of most cases), then `rest`.
fn in_range(rest: &[&str]) -> Vec<String> {
    [strings(&["--start", S, "--end", E]), strings(rest)].concat()
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
    let start = T0 - 1;
    ok(run(
        RRDTOOL,
        &words(&format!(
            "create t.rrd --start {start} --step 300 \
             DS:a:GAUGE:600:U:U DS:b:COUNTER:600:U:U DS:c:DERIVE:600:U:U \
             RRA:AVERAGE:0.5:1:1000 RRA:MAX:0.5:6:600 RRA:MIN:0.5:6:600 RRA:AVERAGE:0.5:12:600 \
             RRA:LAST:0.5:1:1000"
        )),
        dir,
    ));
    ok(run(
        RRDTOOL,
        &words(&format!(
            "create m.rrd --start {start} --step 60 DS:x:GAUGE:120:0:U RRA:AVERAGE:0.5:1:6000 RRA:AVERAGE:0.5:10:2000"
        )),
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

/// A new directory holding [`setup`]'s files.
fn scene() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("rrdscale-graph-").tempdir().expect("tempdir");
    setup(dir.path());
    dir
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

// A table of definitions.
#[allow(clippy::too_many_lines)]
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
        // Issue 12's 53-year range (GrowthForecast's t=sc with from=1979):
        // every DEF is consolidated from rows far finer than a pixel, most
        // of them outside the archive (rrdscale makes none of those).
        Def {
            options: &["--start", "315360011", "--end", "2000000000"],
            data: &[
                "DEF:x=m.rrd:x:AVERAGE",
                "DEF:a=t.rrd:a:MAX",
                "DEF:b=t.rrd:b:AVERAGE:reduce=MAX",
                "DEF:l=t.rrd:a:LAST:reduce=LAST",
                "VDEF:xa=x,AVERAGE",
                "VDEF:am=a,MAXIMUM",
            ],
            draw: &[
                "LINE1:x#ff0000:x",
                "AREA:a#00ff0080:a",
                "LINE1:b#0000ff:b",
                "PRINT:xa:%lf",
                "PRINT:am:%lf",
            ],
            plotted: &["x", "a", "b", "l"],
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
    let dir = scene();
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
// A table of command lines.
#[allow(clippy::too_many_lines)]
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
        // Drawing elements as rrdtool's argument parser reads them: keys
        // (legend=, color=, vname=, stack=), keywords in the legend's place,
        // an unknown key as a positional legend.
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "LINE1:a#0000ff:base",
            "AREA:a#00ff00:STACK",
            "LINE1:a#ff0000:skipscale",
            "LINE1:a#ff0000:dashes",
            "LINE1:a#ff0000:dashes=2,2:leg",
            "LINE1:a#ff0000:legend=Foo",
            "LINE1:a:color=ff0000:x",
            "AREA:a#ff0000:x:stack=1",
            "HRULE:50#ff0000:legend=h",
            "LINE1:vname=a:color=00ff00:legend=k",
            "LINE1:a#ff0000:l=x",
            "AREA:a#ff0000:color2=00ff00:gradheight=5",
        ],
        // A colour that is not hex keeps its element (no colour, no legend)
        // and ends the element list without an error.
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "LINE1:a#0000ff:base",
            "LINE1:a#ff00zz:leg",
            "COMMENT:after",
        ],
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "LINE1:a:color=#ff0000:x",
            "LINE2:a#00ff00:more",
        ],
        &["--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "AREA:a#ff0000#zz:grad", "TICK:a#zz:0.5:t"],
        // Nothing drawn and nothing printed: rrdtool prints nothing at all.
        &["--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE"],
        &["--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "COMMENT:only a comment"],
        // PRINT/GPRINT keys (format=, cf=, strftime=, vformatter=) and
        // `=` in a positional format.
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "VDEF:m=a,MAXIMUM",
            "LINE1:a#ff0000",
            "GPRINT:m:Max=%6.2lf",
            "GPRINT:m:format=%6.2lf",
            "GPRINT:m:strftime=1:%c",
            "PRINT:a:MAX:avg=%lf",
            "GPRINT:m:vformatter=duration:%H",
            "GPRINT:m:%H:vformatter=timestamp",
            "GPRINT:a:cf=MAX:%lf",
            "GPRINT:a:format=%lf:MIN",
        ],
        // Times and durations: strftime (a VDEF's time, local; dashes when
        // it has none; over a DEF the last VDEF's time carries over),
        // valstrftime (the value as UTC seconds), valstrfduration (ms).
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "CDEF:u=a,UN,UNKN,UNKN,IF",
            "VDEF:m=a,MAXIMUM",
            "VDEF:um=u,MAXIMUM",
            "VDEF:av=a,AVERAGE",
            "CDEF:ms=a,1000000,*",
            "VDEF:msm=ms,MAXIMUM",
            "LINE1:a#ff0000",
            "GPRINT:m:Max at %c:strftime",
            "PRINT:m:%Y-%m-%d %H\\:%M:strftime",
            "PRINT:um:%Y-%m-%d %T %j %Ex %F %R %D %y%%:strftime",
            "PRINT:av:%c:strftime",
            "PRINT:m:%H:valstrftime",
            "PRINT:msm:valstrfduration:%H",
            "PRINT:msm:%D days %02h\\:%02m:valstrfduration",
            "PRINT:msm:%W %d %.2M %S %04.1s %f %%:valstrfduration",
            "PRINT:um:%s:valstrfduration",
            "PRINT:um:%c:valstrftime",
            "PRINT:a:MAX:%.3H:valstrfduration",
            "GPRINT:msm:valstrfduration:%W %.3d",
            "GPRINT:av:%lf:valstrftime",
            "GPRINT:a:MAX:%c:strftime",
            "GPRINT:m:strftime:%F",
            "GPRINT:m:%lf:strftime:valstrftime",
            "COMMENT:Last update\\: ",
            "GPRINT:m:%a %b %d %H\\:%M\\:%S %Y\\c:strftime",
        ],
        // An XPORT's legend is laid out like a comment's.
        &["--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "XPORT:a:exported", "LINE1:a#ff0000:line"],
        // TICK (its legend has no two-space prefix; ticks never scale the
        // axis), a gradient AREA, a STACK on it.
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "CDEF:t=a,50,GT",
            "TICK:t#ff000080:0.5:above fifty",
            "TICK:t#0000ff:-0.2",
            "AREA:a#00ff00#0000ff:gradient:gradheight=20",
            "STACK:a#ff000080:stacked",
            "AREA:a#ffff00#000000:default height",
            "LINE1:a#000000:line",
        ],
        // SHIFT by seconds and by a VDEF (truncated to whole steps), the
        // DEFs reaching far enough that the shifted rows stay in range.
        &[
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE:start=1700000000:end=1700500000",
            "DEF:b=t.rrd:a:AVERAGE:start=1700000000:end=1700500000",
            "CDEF:c=a,2,/",
            "VDEF:f=a,FIRST",
            "SHIFT:b:86400",
            "CDEF:d=a,b,-",
            "VDEF:bm=b,MAXIMUM",
            "VDEF:dm=d,MAXIMUM",
            "LINE1:a#ff0000:now",
            "LINE1:b#0000ff:a day ago",
            "LINE1:d#00ff00:difference",
            "LINE1:c#000000:half",
            "GPRINT:bm:%lf",
            "GPRINT:bm:%c:strftime",
            "PRINT:dm:%lf",
        ],
    ];
    cases.extend(more.iter().map(|c| strings(c)));
    cases.extend(option_cases());
    cases
}

/// A graph with several legend lines (of `t.rrd`), so that legend
/// placement, sizes and coordinates are exercised.
const LEGENDS: &[&str] = &[
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
];

/// The graph options real templates use (Cacti, Munin, Smokeping,
/// LibreNMS, MRTG front ends), each over a graph with several legend
/// lines so that legend placement, sizes and coordinates are exercised.
fn option_cases() -> Vec<Vec<String>> {
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
            let mut case = in_range(o);
            case.extend(strings(LEGENDS));
            case.push("PRINT:m:%lf".to_string());
            case
        })
        .chain(template_cases())
        .chain([
            // Only data, no PRINT: rrdtool's graph prints nothing at all.
            in_range(&["DEF:a=t.rrd:a:AVERAGE"]),
            in_range(&[]),
            in_range(&["-f", "%s %lu %lu", "DEF:a=t.rrd:a:AVERAGE"]),
        ])
        .collect()
}

#[test]
fn graphv_and_graph_print_what_rrdtool_prints() {
    let dir = scene();
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
                failures.push(differences(&format!("{verb} case {n} {case:?}"), &theirs, &ours, true));
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
    assert_no_failures(&failures);
}

#[test]
// A table of failing command lines and the loop over it.
#[allow(clippy::too_many_lines)]
fn errors_match_rrdtool() {
    // The DEF most cases draw from.
    const DA: &str = "DEF:a=t.rrd:a:AVERAGE";
    let dir = scene();
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
        &["x.png", "--start", S, "--end", E, DA, "CDEF:b=a,2,*,600,TREND", "LINE1:b#ff0000"],
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
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINE1:a", "GPRINT:zz:%lf"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINE1:a", "GPRINT:a"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "VDEF:m=a,MAXIMUM", "GPRINT:m:%lf:x"],
        &["x.png", "--start", S, "--end", E, DA, "VDEF:m=a,MAXIMUM", "GPRINT:m:%H:vformatter=x"],
        &["x.png", "--start", S, "--end", E, DA, "VDEF:m=a,MAXIMUM", "PRINT:m:%q:valstrfduration"],
        &["x.png", "--start", S, "--end", E, DA, "VDEF:m=a,MAXIMUM", "GPRINT:m:format=%lf:format=%le"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "TICK:a#ff0000"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "TICK:a#ff0000:x"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "TICK:a#ff0000:1:l:extra"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "AREA:a#ff0000#00ff00:x:gradheight=x"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "LINE1:a#ff0000::gradheight=3"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "SHIFT:a:a", "LINE1:a"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "SHIFT:a:1x", "LINE1:a"],
        &["x.png", "--start", S, "--end", E, DA, "VDEF:m=a,LAST", "SHIFT:m:60", "LINE1:a"],
        &["x.png", "--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "XPORT:zz", "LINE1:a"],
        &["x.png", "--start", S, "--end", E, "-a", "JSON", DA, "VDEF:m=a,LAST", "PRINT:m:%lf"],
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
    assert_no_failures(&failures);
}

/// Command lines as Cacti, LibreNMS, Smokeping and Munin write them.
// A table of command lines.
#[allow(clippy::too_many_lines)]
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
    cases.iter().map(|c| in_range(c)).collect()
}

/// `--lazy`: an image newer than one pixel's worth of seconds stays as it
/// is and graphv reports only PRINT and the geometry, as rrdtool does; an
/// older one is redrawn.
#[test]
fn lazy_keeps_a_fresh_image() {
    let dir = scene();
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
/// font, laid out and drawn by Pango as in rrdtool, so graphv's keys (the
/// legend coordinates of a proportional font included) and the picture's
/// bytes are rrdtool's (drawn without the vertical tag).
#[test]
fn named_fonts_are_used() {
    let dir = scene();
    let mut args = strings(&[
        "graphv",
        "-",
        "--start",
        S,
        "--end",
        E,
        "--disable-rrdtool-tag",
        "--font",
        "DEFAULT:0:DejaVuSans,DejaVu Sans,DejaVu LGC Sans,Bitstream Vera Sans",
        "-t",
        "Munin style",
        "-v",
        "bytes",
    ]);
    args.extend(strings(LEGENDS));
    let (ours, theirs) = (run(rrdscale_bin(), &args, dir.path()), run(RRDTOOL, &args, dir.path()));
    assert!(theirs.status.success() && ours.status.success());
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout)
            .lines()
            .take_while(|l| !l.starts_with("image = "))
            .collect::<Vec<_>>(),
        String::from_utf8_lossy(&theirs.stdout)
            .lines()
            .take_while(|l| !l.starts_with("image = "))
            .collect::<Vec<_>>(),
        "graphv keys"
    );
    assert!(ours.stdout == theirs.stdout, "the PNG differs from rrdtool's");
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

/// The pictures of the option corpus and of the templates' command lines
/// (Cacti, LibreNMS, Smokeping, Munin): rrdtool's PNG and ours have the same
/// size and, both drawn through Cairo and Pango, the same pixels: at least
/// 95% of the pictures are equal pixel for pixel, and in none do more than
/// 0.1% of the pixels differ by more than 48 in a channel (the targets of
/// issue 24). Every case is drawn without the vertical tag, where rrdscale
/// writes its own name. The worst pair is saved side by side in
/// test-output/graph/.
#[test]
fn pictures_equal_rrdtool_pixel_for_pixel() {
    const TOLERANCE: u8 = 48;
    const MAX_SHARE: f64 = 0.001;
    const MIN_EQUAL_SHARE: f64 = 0.95;
    let dir = scene();
    let (mut compared, mut equal) = (0usize, 0usize);
    let mut worst: Option<(f64, usize, Vec<String>)> = None;
    let mut failures = Vec::new();
    for (n, case) in option_cases().iter().chain(&template_cases()).enumerate() {
        if case.iter().any(|a| a.contains("SVG")) {
            continue;
        }
        let draw = |program: &str, file: &str| {
            let mut args = strings(&["graph", file, "--disable-rrdtool-tag"]);
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
        compared += 1;
        if pa == pb {
            equal += 1;
        }
        if share > MAX_SHARE {
            failures.push(format!(
                "case {n}: {:.2}% of pixels differ by more than {TOLERANCE} {case:?}",
                share * 100.0
            ));
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
    eprintln!(
        "{equal} of {compared} pictures pixel-equal; worst: case {n}, {:.2}% differ: {case:?}",
        share * 100.0
    );
    if (equal as f64) < MIN_EQUAL_SHARE * compared as f64 {
        failures.push(format!("only {equal} of {compared} pictures equal rrdtool's pixel for pixel"));
    }
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
// One loop over many graph definitions, checked alike.
#[allow(clippy::too_many_lines)]
fn images_decode_to_their_reported_size_and_are_not_blank() {
    let dir = scene();
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
    let dir = scene();
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
        "CDEF:t=a,50,GT",
        "TICK:t#0000ff80:0.2:ticks",
        "AREA:a#ffff00#ff000040:gradient:gradheight=15",
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
    // Cairo writes text as glyph outlines, as in rrdtool's SVG.
    assert!(doc.descendants().filter(|n| n.has_tag_name("symbol")).count() > 20, "glyphs");
    assert!(doc.descendants().filter(|n| n.has_tag_name("path")).count() > 20);
    assert!(doc.descendants().any(|n| n.has_tag_name("linearGradient")), "the gradient AREA");
    // rrdtool agrees on the size.
    let mut theirs = args.clone();
    theirs[1] = "theirs.svg".into();
    let t = String::from_utf8(run(RRDTOOL, &theirs, dir.path()).stdout).unwrap();
    assert_eq!((info_number(&t, "image_width"), info_number(&t, "image_height")), (w, h));
    // Drawn without the vertical tag (rrdscale's differs by design), the
    // documents are the same bytes: the same Cairo calls in the same order.
    let (mut ours, mut theirs) = (args.clone(), theirs);
    ours.push("--disable-rrdtool-tag".into());
    theirs.push("--disable-rrdtool-tag".into());
    assert!(run(rrdscale_bin(), &ours, dir.path()).status.success());
    assert!(run(RRDTOOL, &theirs, dir.path()).status.success());
    let read = |name: &str| std::fs::read(dir.path().join(name)).expect("svg written");
    assert!(read("g.svg") == read("theirs.svg"), "the SVG differs from rrdtool's");
}

/// `-a XML|XMLENUM|JSON|JSONTIME|CSV|TSV|SSV`: the graph's LINE/AREA/STACK
/// series exported instead of a picture, equal to rrdtool's byte for byte
/// (standard output of `graph`/`graphv` with `-` and with a file, and the
/// file written), errors included.
#[test]
// One loop over the data formats and the ways to ask for them.
#[allow(clippy::too_many_lines)]
fn data_formats_equal_rrdtool_byte_for_byte() {
    let dir = scene();
    // Legends and formats keep 200 bytes; JSON-escaped texts can exceed
    // the 256-byte line buffer.
    let long_area = format!("AREA:a#00ff00:{}", "L".repeat(300));
    let long_gprint = format!("GPRINT:m:{} %lf", "\"".repeat(150));
    let long_comment = format!("COMMENT:{}", "\\".repeat(250));
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "--start",
            S,
            "--end",
            E,
            "-w",
            "60",
            "DEF:a=t.rrd:a:AVERAGE",
            "VDEF:m=a,MAXIMUM",
            "CDEF:c=a,2,*",
            "VDEF:cm=c,MAXIMUM",
            "AREA:a#ff0000:in traffic",
            "STACK:c#00ff00: stacked",
            "LINE2:c",
            "LINE1:a#0000ff:quote\" and back\\\\slash",
            "PRINT:m:%lf",
            "PRINT:m:%lf %S",
            "PRINT:cm:%lf %S",
            "GPRINT:m:max %lf\"\\\\",
            "GPRINT:m:%c:strftime",
            "GPRINT:cm:%6.2lf %s",
            "HRULE:50#ff0000:hr",
            "VRULE:1700200000#000000:vr",
            "COMMENT:a \"comment\" <b>\\l",
            "TEXTALIGN:left",
            "TEXTALIGN:center",
            "PRINT:a:MAX:%lf",
            "PRINT:cm:%lf:valstrftime",
        ],
        // Mixed steps (60 s and 300 s) at a step finer than the width asks.
        vec![
            "--start",
            S,
            "--end",
            "1700150000",
            "--step",
            "60",
            "DEF:x=m.rrd:x:AVERAGE",
            "DEF:a=t.rrd:a:AVERAGE",
            "CDEF:s=x,a,+",
            "LINE1:x#ff0000:x",
            "LINE1:s#00ff00:sum",
        ],
        vec![
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "VDEF:m=a,AVERAGE",
            &long_area,
            &long_gprint,
            &long_comment,
        ],
        // TICKs are not exported; SHIFTed series are.
        vec![
            "--start",
            S,
            "--end",
            E,
            "-w",
            "50",
            "DEF:a=t.rrd:a:AVERAGE:start=1700000000:end=1700500000",
            "DEF:b=t.rrd:a:AVERAGE:start=1700000000:end=1700500000",
            "SHIFT:b:-7200",
            "CDEF:t=a,50,GT",
            "TICK:t#ff0000:0.5:tick",
            "AREA:a#00ff00#0000ff:grad:gradheight=5",
            "LINE1:b#0000ff:earlier",
        ],
        // XPORT columns between the plotted ones; XPORT alone with a PRINT
        // (JSON keeps a trailing comma in a file, not on standard output).
        vec![
            "--start",
            S,
            "--end",
            E,
            "-w",
            "30",
            "DEF:a=t.rrd:a:AVERAGE",
            "CDEF:b=a,3,*",
            "XPORT:b:tripled",
            "LINE1:a#ff0000:line",
            "XPORT:a",
        ],
        vec![
            "--start",
            S,
            "--end",
            E,
            "-w",
            "30",
            "DEF:a=t.rrd:a:AVERAGE",
            "VDEF:m=a,MAXIMUM",
            "XPORT:a:only",
            "PRINT:m:%lf",
        ],
        vec!["--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "VDEF:m=a,MAXIMUM", "XPORT:m"],
        vec!["--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "XPORT:a:x:y"],
        // Nothing plotted: an error.
        vec!["--start", S, "--end", E, "DEF:a=t.rrd:a:AVERAGE", "VDEF:m=a,MAXIMUM", "PRINT:m:%lf"],
        // The XML/JSON meta lists print valstrftime numerically: a bad
        // number format fails them (and not CSV).
        vec![
            "--start",
            S,
            "--end",
            E,
            "DEF:a=t.rrd:a:AVERAGE",
            "VDEF:m=a,MAXIMUM",
            "LINE1:a",
            "PRINT:m:%H:valstrftime",
        ],
    ];
    let mut failures = Vec::new();
    let mut compared = 0;
    for (n, case) in cases.iter().enumerate() {
        for format in ["XML", "XMLENUM", "JSON", "JSONTIME", "CSV", "TSV", "SSV"] {
            for verb in ["graph", "graphv"] {
                for to_file in [false, true] {
                    let outcome = |program: &str, who: &str| {
                        let file = if to_file { format!("{who}.out") } else { "-".to_string() };
                        let mut args = strings(&[verb, &file, "-a", format]);
                        args.extend(strings(case));
                        let o = run(program, &args, dir.path());
                        let written = std::fs::read(dir.path().join(&file)).ok();
                        if to_file {
                            let _ = std::fs::remove_file(dir.path().join(&file));
                        }
                        (
                            o.status.success(),
                            o.stdout,
                            o.stderr,
                            if o.status.success() { written } else { None },
                        )
                    };
                    let theirs = outcome(RRDTOOL, "theirs");
                    let ours = outcome(rrdscale_bin(), "ours");
                    compared += 1;
                    if theirs != ours {
                        failures.push(format!(
                            "case {n} {verb} -a {format} (file: {to_file}):\n--- rrdtool\n{}{}{}\n--- rrdscale\n{}{}{}",
                            String::from_utf8_lossy(&theirs.1),
                            String::from_utf8_lossy(&theirs.2),
                            String::from_utf8_lossy(theirs.3.as_deref().unwrap_or_default()),
                            String::from_utf8_lossy(&ours.1),
                            String::from_utf8_lossy(&ours.2),
                            String::from_utf8_lossy(ours.3.as_deref().unwrap_or_default()),
                        ));
                    }
                }
            }
        }
    }
    assert_eq!(compared, cases.len() * 7 * 2 * 2);
    assert_no_failures(&failures);
}

/// CDEF's time-series operators PREDICT, PREDICTSIGMA, PREDICTPERC (with
/// listed shifts and with `step,-n`) and NEWWEEK, through `xport`, equal
/// rrdtool's byte for byte (in UTC and in Europe/Zurich).
#[test]
fn predict_and_newweek_equal_rrdtool() {
    let dir = scene();
    // The last row is masked where the `step,-n` form reads its shift 0:
    // rrdtool reads one row past its data there (beyond the array at the
    // very end).
    let last = "1701200000";
    let mask = format!("TIME,{last},LT,EXC,UNKN,IF");
    let cdefs = [
        "CDEF:w=a,POP,NEWWEEK".to_string(),
        "CDEF:d=a,POP,NEWDAY,NEWWEEK,2,*,+,NEWMONTH,4,*,+".to_string(),
        "CDEF:p=86400,172800,2,3600,a,PREDICT".to_string(),
        "CDEF:p=86400,172800,2,3600,a,PREDICTSIGMA".to_string(),
        "CDEF:p=86400,172800,2,7200,50,a,PREDICTPERC".to_string(),
        "CDEF:p=86400,172800,2,7200,95.5,a,PREDICTPERC".to_string(),
        "CDEF:p=86400,172800,2,7200,-90,a,PREDICTPERC".to_string(),
        "CDEF:p=3600,1,0,a,PREDICT".to_string(),
        "CDEF:p=1,1,1,a,2,+,PREDICT".to_string(),
        format!("CDEF:p=86400,-3,1800,a,PREDICT,{mask}"),
        format!("CDEF:p=86400,-3,1800,a,PREDICTSIGMA,{mask}"),
        format!("CDEF:p=43200,-4,0,25,a,PREDICTPERC,{mask}"),
        // Errors: underflow, percentile range, negative shift.
        "CDEF:p=1,2,a,PREDICT".to_string(),
        "CDEF:p=86400,1,1800,101,a,PREDICTPERC".to_string(),
        "CDEF:p=-5,1,1800,a,PREDICT".to_string(),
    ];
    let mut failures = Vec::new();
    for tz in ["UTC", "Europe/Zurich"] {
        for cdef in &cdefs {
            let var = &cdef[5..6];
            let args = words(&format!(
                "xport -t --start 1700300000 --end {last} --step 1800 -m 2000 \
                 DEF:a=t.rrd:a:AVERAGE {cdef} XPORT:{var}:x"
            ));
            compare_outputs(&args, dir.path(), tz, &format!("TZ={tz} {cdef}"), &mut failures);
        }
    }
    // Unmasked where the rows are consolidated (a day at 100 pixels over
    // the file's 5-minute rows): RRDtool's buffer still holds the next
    // fetched row after the consolidated ones, and its PREDICT reads it at
    // the last step (issue 24: a VDEF's 51.0762 against rrdtool's 51.0863).
    for cdef in ["86400,-3,1800,a,PREDICT", "86400,-3,1800,a,PREDICTSIGMA", "43200,-4,0,25,a,PREDICTPERC"] {
        let start = last.parse::<i64>().unwrap() - 86_400;
        let args = words(&format!(
            "graphv p.png --start {start} --end {last} -w 100 DEF:a=t.rrd:a:AVERAGE CDEF:p={cdef} \
             VDEF:v=p,AVERAGE PRINT:v:%.6lf VDEF:l=p,LAST PRINT:l:%.6lf LINE1:p#ff0000"
        ));
        compare_outputs(&args, dir.path(), "UTC", &format!("graph {cdef}"), &mut failures);
    }
    assert_no_failures(&failures);
}

/// `-a PDF` and `-a EPS`: Cairo's PDF and PostScript documents, vector
/// as rrdtool's are, of the graphv size (a MediaBox and a BoundingBox in
/// points), and, drawn without the vertical tag (rrdscale's differs by
/// design), the same bytes as rrdtool's but for the creation date.
#[test]
fn pdf_and_eps_are_documents_of_the_graph_size() {
    let dir = scene();
    let mut case = words(&format!(
        "--start {S} --end {E} --title documents --disable-rrdtool-tag DEF:a=t.rrd:a:AVERAGE \
         VDEF:m=a,MAXIMUM AREA:a#00ff0080:area LINE2:a#ff0000:line"
    ));
    case.extend(strings(&["GPRINT:m:max %6.2lf", "HRULE:m#0000ff:max"]));
    for format in ["PDF", "EPS"] {
        let theirs_args = [words(&format!("graphv theirs.doc -a {format}")), case.clone()].concat();
        let ours_args = [words(&format!("graphv ours.doc -a {format}")), case.clone()].concat();
        let theirs = run(RRDTOOL, &theirs_args, dir.path());
        let ours = run(rrdscale_bin(), &ours_args, dir.path());
        assert!(
            theirs.status.success() && ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "graphv -a {format}"
        );
        let text = String::from_utf8_lossy(&ours.stdout).into_owned();
        let (w, h) = (info_number(&text, "image_width"), info_number(&text, "image_height"));
        let doc = std::fs::read(dir.path().join("ours.doc")).expect("document written");
        let doc_text = String::from_utf8_lossy(&doc).into_owned();
        if format == "PDF" {
            assert!(doc.starts_with(b"%PDF-1.") && doc_text.trim_end().ends_with("%%EOF"));
            assert!(doc_text.contains(&format!("/MediaBox [ 0 0 {w} {h} ]")), "MediaBox");
        } else {
            assert!(doc_text.starts_with("%!PS-Adobe-3.0\n"));
            assert!(doc_text.contains(&format!("%%BoundingBox: 0 0 {w} {h}\n")), "BoundingBox");
        }
        let theirs_doc = std::fs::read(dir.path().join("theirs.doc")).expect("rrdtool's document");
        // Cairo stamps both documents with the time they were made.
        let undated = |d: &[u8]| -> Vec<Vec<u8>> {
            d.split(|b| *b == b'\n')
                .filter(|l| !l.windows(12).any(|w| w == b"CreationDate"))
                .map(<[u8]>::to_vec)
                .collect()
        };
        assert!(undated(&doc) == undated(&theirs_doc), "-a {format}: the document differs from rrdtool's");
        let _ = std::fs::remove_file(dir.path().join("ours.doc"));
        let _ = std::fs::remove_file(dir.path().join("theirs.doc"));
    }
}

/// Generated graphs in every data format (and as PNG, every other case):
/// random element lists over the
/// two files (DEFs with several CFs, CDEFs, VDEFs, SHIFT, LINE/AREA/STACK
/// with legends, TICK, XPORT, PRINT/GPRINT with number, strftime and
/// valstrftime formats, COMMENT, TEXTALIGN, rules), random ranges and
/// widths; `graphv` output equal to rrdtool's byte for byte.
/// `RRDSCALE_DIFF_SEED` picks another seed (printed); 60 cases by default
/// (`RRDSCALE_DIFF_CASES`).
#[test]
fn generated_data_format_graphs_equal_rrdtool() {
    let seed: u64 = match std::env::var("RRDSCALE_DIFF_SEED").ok().as_deref() {
        Some("clock") => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1),
        Some(s) => s.parse().unwrap_or(1),
        None => 20_261_125,
    };
    let cases: usize =
        std::env::var("RRDSCALE_DIFF_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(60).min(400);
    println!("generated data-format graphs: seed {seed}, {cases} cases");
    let dir = scene();
    let mut rng = Lcg(seed);
    let mut pick = |n: usize| ((rng.unit() * n as f64) as usize).min(n - 1);
    let formats = ["XML", "XMLENUM", "JSON", "JSONTIME", "CSV", "TSV", "SSV"];
    let legends = ["", "in", "  spaced", "quote\"d", "back\\\\slash", "x\\l", "tab\\tbed"];
    let mut failures = Vec::new();
    for n in 0..cases {
        let start = T0 + 86_400 + 3_600 * pick(200) as i64;
        let end = start + 3_600 * (1 + pick(150)) as i64;
        let mut args = strings(&["graphv", "-", "-a", formats[pick(formats.len())]]);
        args.extend(strings(&["--start", &start.to_string(), "--end", &end.to_string()]));
        args.extend(strings(&["-w", &(10 + pick(300)).to_string()]));
        if pick(4) == 0 {
            args.extend(strings(&["--step", &(300 * (1 + pick(12))).to_string()]));
        }
        // Data: DEFs reaching a day further each way (for SHIFT).
        args.push(format!("DEF:a=t.rrd:a:AVERAGE:start={}:end={}", start - 86_400, end + 86_400));
        args.push(format!("DEF:b=t.rrd:b:{}", ["AVERAGE", "MAX", "MIN", "LAST"][pick(4)]));
        args.push("DEF:x=m.rrd:x:AVERAGE".to_string());
        let mut series = vec!["a", "b", "x"];
        if pick(2) == 0 {
            args.push(format!("CDEF:c=a,{},*,b,1000,/,+", 1 + pick(5)));
            series.push("c");
        }
        if pick(3) == 0 {
            args.push(format!("SHIFT:a:{}", 300 * pick(40) as i64 - 6000));
        }
        args.push(format!(
            "VDEF:v={},{}",
            series[pick(series.len())],
            ["MAXIMUM", "AVERAGE", "LAST", "FIRST", "95,PERCENT"][pick(5)]
        ));
        for _ in 0..1 + pick(6) {
            let s = series[pick(series.len())];
            let legend = legends[pick(legends.len())];
            let el = match pick(12) {
                0 | 1 => format!("LINE{}:{s}#ff0000:{legend}", 1 + pick(3)),
                2 | 3 => format!("AREA:{s}#00ff00:{legend}"),
                4 => format!("AREA:{s}#00ff00#0000ff:{legend}:gradheight={}", pick(60)),
                5 => format!("LINE1:{s}#0000ff:{legend}:STACK"),
                6 => format!("TICK:{s}#ff000080:0.{}:{legend}", 1 + pick(9)),
                7 => format!("XPORT:{s}:{legend}"),
                8 => format!(
                    "GPRINT:v:{}",
                    ["%6.2lf %S", "%lf%s", "%c:strftime", "%H:%M:valstrftime", "%le"][pick(5)]
                ),
                9 => format!("PRINT:v:{}", ["%6.2lf %S", "%.1lf", "%Y-%m-%d:strftime"][pick(3)]),
                10 => format!("COMMENT:{legend}"),
                _ => ["HRULE:v#123456:rule", "VRULE:v#654321:when", "TEXTALIGN:right"][pick(3)].to_string(),
            };
            args.push(el);
        }
        // Every other case draws a PNG instead (graphv's numbers compared).
        if n % 2 == 1 {
            args.splice(1..4, strings(&["gen.png"]));
        }
        let theirs = run(RRDTOOL, &args, dir.path());
        let ours = run(rrdscale_bin(), &args, dir.path());
        if theirs.stdout != ours.stdout
            || theirs.stderr != ours.stderr
            || theirs.status.success() != ours.status.success()
        {
            failures.push(format!(
                "case {n} {args:?}:\n--- rrdtool\n{}{}\n--- rrdscale\n{}{}",
                String::from_utf8_lossy(&theirs.stdout).chars().take(3000).collect::<String>(),
                String::from_utf8_lossy(&theirs.stderr),
                String::from_utf8_lossy(&ours.stdout).chars().take(3000).collect::<String>(),
                String::from_utf8_lossy(&ours.stderr)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "seed {seed}: {} of {cases} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// PRINT numbers: graphv's `print[i]` (glibc's printf in rrdtool) and the
/// XML/JSON meta lists (rrdtool's own printf, which rounds ties up and
/// prints NaN unsigned) equal rrdtool's for values at rounding ties, large,
/// tiny, zero and unknown, in every conversion and flag.
#[test]
fn print_numbers_equal_rrdtool_in_pictures_and_meta_lists() {
    let dir = scene();
    let formats = [
        "%.1lf", "%.0lf", "%lf", "%8.2lf", "%08.2lf", "%-8.1lfx", "%le", "%.2lE", "%lg", "%#.3lg", "%+.2lf",
        "% .3le", "%.2lf", "v=%lf!", "%.3lG", "%#.1lg", "%#lg", "%#.0lf", "%#.0le", "%.0lg", "%.20lf",
        "%230lf", "%-300lf|",
    ];
    let values = words("12.25 2.5 -3.14159 12345.678 0.000123 100 1e20 0.125 -0.5 99.995 0 UNKN");
    let mut failures = Vec::new();
    for value in &values {
        for format in ["XML", "JSON"] {
            let mut args = words(&format!(
                "graphv - -a {format} --start {S} --end {E} -w 10 DEF:a=t.rrd:a:AVERAGE \
                 CDEF:c=a,0,*,{value},+ VDEF:v=c,MAXIMUM LINE1:c"
            ));
            args.extend(formats.iter().map(|f| format!("PRINT:v:{f}")));
            args.extend(formats.iter().map(|f| format!("GPRINT:v:{f}")));
            compare_outputs(&args, dir.path(), "UTC", &format!("{value} -a {format}"), &mut failures);
        }
    }
    assert_no_failures(&failures);
}

/// What TICK and a gradient AREA put on the picture: the same pixels as
/// rrdtool's; a full-height tick in every column where the value is
/// non-zero, none where it is zero; a gradient AREA over the whole height
/// (`gradheight=0`) redder at the top and bluer at the bottom (rrdtool's
/// gradient runs between the area's edges, not from colour to colour).
#[test]
fn tick_and_gradient_pixels() {
    let dir = scene();
    let draw = |elements: &[&str]| {
        let mut args =
            words(&format!("graph p.png --start {S} --end {E} --only-graph -w 100 -h 60 -l 0 -u 1 --rigid"));
        args.extend(strings(elements));
        let o = run(rrdscale_bin(), &args, dir.path());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (w, h, data, color) = decode_png(&std::fs::read(dir.path().join("p.png")).expect("png"));
        args[1] = "theirs.png".into();
        assert!(run(RRDTOOL, &args, dir.path()).status.success());
        let theirs = decode_png(&std::fs::read(dir.path().join("theirs.png")).expect("rrdtool's png"));
        assert!(
            (w, h, &data) == (theirs.0, theirs.1, &theirs.2),
            "pixels differ from rrdtool's: {elements:?}"
        );
        let channels = if color == png::ColorType::Rgba { 4 } else { 3 };
        move |x: u32, y: u32| -> [u8; 3] {
            assert!(x < w && y < h);
            let i = ((y * w + x) as usize) * channels;
            [data[i], data[i + 1], data[i + 2]]
        }
    };
    // Non-zero in the first half of the range only.
    let half = (S.parse::<i64>().unwrap() + E.parse::<i64>().unwrap()) / 2;
    let ticks =
        draw(&["DEF:a=t.rrd:a:AVERAGE", &format!("CDEF:t=a,0,*,TIME,{half},LT,+"), "TICK:t#0000ff:1.0"]);
    assert_eq!(ticks(20, 30), [0, 0, 255], "a tick where the value is 1");
    assert_ne!(ticks(80, 30), [0, 0, 255], "no tick where the value is 0");
    let gradient =
        draw(&["DEF:a=t.rrd:a:AVERAGE", "CDEF:one=a,0,*,1,+", "AREA:one#ff0000#0000ff::gradheight=0"]);
    let (top, middle, bottom) = (gradient(50, 1), gradient(50, 30), gradient(50, 58));
    assert!(top[0] > middle[0] && middle[0] > bottom[0], "red fades: {top:?} {middle:?} {bottom:?}");
    assert!(top[2] < middle[2] && middle[2] < bottom[2], "blue grows: {top:?} {middle:?} {bottom:?}");
}

/// A file that cannot be written: rrdtool prints what it would print,
/// then fails for PNG, complains on standard error but succeeds for the
/// Cairo streams (SVG, PDF, EPS), and prints a data format to standard
/// output (it stays in memory).
#[test]
fn unwritable_files_as_rrdtool() {
    let dir = scene();
    let mut failures = Vec::new();
    for verb in ["graph", "graphv"] {
        for format in ["PNG", "SVG", "PDF", "EPS", "CSV", "JSON", "XML"] {
            let args = words(&format!(
                "{verb} /nonexistent-dir/x.img -a {format} --start {S} --end {E} -w 20 \
                 DEF:a=t.rrd:a:AVERAGE VDEF:m=a,MAXIMUM LINE1:a#ff0000:x PRINT:m:%lf"
            ));
            let theirs = run(RRDTOOL, &args, dir.path());
            let ours = run(rrdscale_bin(), &args, dir.path());
            if theirs.stdout != ours.stdout
                || theirs.stderr != ours.stderr
                || theirs.status.success() != ours.status.success()
            {
                failures.push(format!(
                    "{verb} -a {format}: rrdtool {} {:?} / rrdscale {} {:?}",
                    theirs.status,
                    String::from_utf8_lossy(&theirs.stderr),
                    ours.status,
                    String::from_utf8_lossy(&ours.stderr)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs `program` like [`run`] and returns the CPU time (user + system) the
/// child used, from its own `wait4` accounting (which also reaps it).
#[allow(clippy::zombie_processes)]
fn run_cpu_timed(program: &str, args: &[String], dir: &Path) -> (Output, std::time::Duration) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {program}: {e}"));
    let mut err_pipe = child.stderr.take().expect("piped");
    let errors = std::thread::spawn(move || {
        let mut e = Vec::new();
        let _ = err_pipe.read_to_end(&mut e);
        e
    });
    let mut stdout = Vec::new();
    child.stdout.take().expect("piped").read_to_end(&mut stdout).expect("reading stdout");
    let stderr = errors.join().expect("stderr reader");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: waits for our own child, filling our own status and usage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let secs = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let cpu = secs(usage.ru_utime) + secs(usage.ru_stime);
    (Output { status: std::process::ExitStatus::from_raw(status), stdout, stderr }, cpu)
}

/// Issue 12: a graph of thousands of elements took time quadratic in their
/// number (each pixel of each LINE looked its variable up by name in a
/// list; CDEFs, VDEFs and drawing elements did the same at parse time).
/// 4,000 DEFs, 4,000 CDEFs over them, 4,000 VDEFs PRINTed and 4,000 LINEs
/// (without colour, so that the time measured is the data path's, not the
/// rasteriser's) must take well under a second's worth of work: the bound
/// is a generous 2 s in a release build (it took 13 s before the fix,
/// rrdtool about 0.5 s on a loaded 2-core machine), and graphv must print
/// what rrdtool prints, every PRINT included.
#[test]
fn thousands_of_elements_in_linear_time_and_as_rrdtool_draws_them() {
    let dir = scene();
    let n = 4000;
    let mut case = in_range(&[]);
    for i in 0..n {
        let ds = ["a", "b", "c"][i % 3];
        let cf = ["AVERAGE", "MAX", "MIN", "LAST"][i % 4];
        case.push(format!("DEF:v{i}=t.rrd:{ds}:{cf}"));
        case.push(format!("CDEF:c{i}=v{i},{i},+"));
        case.push(format!("VDEF:m{i}=c{i},MAXIMUM"));
        case.push(format!("LINE1:c{i}"));
        case.push(format!("PRINT:m{i}:%lf"));
    }
    // A few drawn, stacked and reading the last definitions.
    case.extend(strings(&["LINE1:v0#ff0000:first", "AREA:v3999#00ff0080:last:STACK", "GPRINT:m3999:%6.2lf"]));
    let ours_args = [words("graphv ours.png"), case.clone()].concat();
    let theirs_args = [words("graphv theirs.png"), case].concat();
    let (ours, took) = run_cpu_timed(rrdscale_bin(), &ours_args, dir.path());
    let theirs = run(RRDTOOL, &theirs_args, dir.path());
    assert!(theirs.status.success(), "rrdtool: {}", String::from_utf8_lossy(&theirs.stderr));
    assert!(ours.status.success(), "rrdscale: {}", String::from_utf8_lossy(&ours.stderr));
    let (ours_text, theirs_text) =
        (String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&theirs.stdout));
    assert_eq!(theirs_text.matches("print[").count(), n, "rrdtool printed every VDEF");
    if ours_text != theirs_text {
        let diff: Vec<String> = ours_text
            .lines()
            .zip(theirs_text.lines())
            .filter(|(a, b)| a != b)
            .take(10)
            .map(|(a, b)| format!("rrdscale {a:?}\n rrdtool {b:?}"))
            .collect();
        panic!(
            "graphv differs ({} vs {} lines):\n{}",
            ours_text.lines().count(),
            theirs_text.lines().count(),
            diff.join("\n")
        );
    }
    // Not a benchmark: only time quadratic in the element count fails this
    // (debug builds get more room). CPU time, which tests running beside
    // this one do not inflate.
    let bound = if cfg!(debug_assertions) { 20.0 } else { 2.0 };
    eprintln!("{} elements: {took:?} of CPU", 5 * n);
    assert!(took.as_secs_f64() < bound, "{} elements took {took:?} of CPU (bound {bound} s)", 5 * n);
}

/// Issue 12: `xport` over 53 years (DEFs consolidated while their files
/// are read) prints what rrdtool prints, byte for byte, for several
/// `--maxrows` and `--step`, reduce functions and a CDEF over two files.
#[test]
fn long_range_xport_equals_rrdtool() {
    let dir = scene();
    let mut failures = Vec::new();
    for extra in
        [&["--maxrows", "400"][..], &["--maxrows", "13"], &["--maxrows", "1000", "--step", "86400"], &[]]
    {
        let args = words(&format!(
            "xport --start 315360011 --end 2000000000 {} DEF:x=m.rrd:x:AVERAGE \
             DEF:a=t.rrd:a:AVERAGE:reduce=MIN DEF:b=t.rrd:b:MAX CDEF:s=x,a,+ \
             XPORT:x:x XPORT:a:a XPORT:b:b XPORT:s:s",
            extra.join(" ")
        ));
        let ours = run(rrdscale_bin(), &args, dir.path());
        let theirs = run(RRDTOOL, &args, dir.path());
        assert!(theirs.status.success(), "rrdtool {args:?}: {}", String::from_utf8_lossy(&theirs.stderr));
        let text = String::from_utf8_lossy(&theirs.stdout);
        assert!(text.contains("e+0"), "no known value: {text}");
        if ours.stdout != theirs.stdout || !ours.status.success() {
            failures.push(format!(
                "{extra:?}:\n--- rrdtool\n{text}\n--- rrdscale ({})\n{}{}",
                ours.status,
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&ours.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
