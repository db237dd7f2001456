//! A generated corpus of `graph`/`graphv` command lines, each run through
//! the real rrdtool 1.7.2 and through rrdscale on the same files, proving:
//! - `graphv` prints the same bytes (every key: image and graph geometry,
//!   start, end, value_min/value_max, `print[i]`, `legend[i]`,
//!   `coords[i]`) and both exit the same way;
//! - the PNG images have the same size and, decoded, the same pixels:
//!   at least [`MIN_EQUAL_SHARE`] of the pictures are equal pixel for
//!   pixel, and in none do more than [`MAX_FAR_SHARE`] of the pixels
//!   differ by more than [`STRICT_TOLERANCE`] in some channel.
//!
//! rrdscale draws through the libraries rrdtool draws with (Cairo, Pango;
//! see `docs/graph-rendering.md`), so its pictures are rrdtool's: on
//! 2026-11-28 all 282 pictures of 300 cases were equal. The limits leave
//! room for a rare one-pixel disagreement that an unusual font or Cairo
//! build could bring, not for anything drawn in the wrong place or colour
//! (a label a pixel off already differs by more than 0.1%). Every case
//! draws without the vertical tag (`--disable-rrdtool-tag`): rrdscale
//! writes its own name there, a difference by design. `--zoom` cases are
//! compared like the others.
//!
//! `--y-grid` with values is left to the fixed cases of `graph.rs`: a
//! random grid step against random data draws thousands of lines, where
//! rrdtool smears its labels and rrdscale says "No Data found".
//!
//! Cases are drawn from seeded pools of options and elements (the seed is
//! `RRDSCALE_DIFF_SEED`, printed; `RRDSCALE_GRAPH_CASES` sets how many;
//! `RRDSCALE_DIFF_ONLY=N` reruns one, `RRDSCALE_GRAPH_KEEP=1` keeps the
//! files and images; `RRDSCALE_GRAPH_LIST=1` names every picture that is
//! not pixel-equal). On failure the worst cases are
//! saved side by side (rrdtool | rrdscale | differing pixels in red) under
//! `test-output/graph-corpus/`. A missing rrdtool fails the test.

mod common;

use std::path::{Path, PathBuf};

use common::gen::{case_seed, Rng};
use common::tools::{differences, rrdscale_bin, run_in as run};
use common::RRDTOOL;

/// Data starts here (Tue 2023-11-14 22:13:20 UTC).
const T0: i64 = 1_700_000_000;
/// Four weeks of data in every file.
const DAYS: i64 = 28;

/// The smallest share of pictures that must equal rrdtool's pixel for pixel.
const MIN_EQUAL_SHARE: f64 = 0.95;
/// The largest share of a picture's pixels that may differ by more than
/// [`STRICT_TOLERANCE`].
const MAX_FAR_SHARE: f64 = 0.001;
/// Per-channel difference beyond which a pixel counts in the strict
/// measure (same place, no neighbourhood).
const STRICT_TOLERANCE: i32 = 48;

/// One RRD file of the fixture, as the generator needs to know it.
struct FileSpec {
    name: String,
    step: i64,
    ds: Vec<String>,
    cfs: Vec<&'static str>,
}

/// Makes the fixture's files with rrdtool: a few random schemas, four
/// weeks of readings with a gap, values spanning several magnitudes.
fn make_files(dir: &Path, rng: &mut Rng) -> Vec<FileSpec> {
    let mut files = Vec::new();
    for f in 0..3 {
        let step = *rng.pick(&[60i64, 300, 300]);
        let types = ["GAUGE", "COUNTER", "DERIVE", "ABSOLUTE"];
        let n_ds = rng.range(1, 3) as usize;
        let kinds: Vec<&str> = (0..n_ds).map(|i| if i == 0 { "GAUGE" } else { *rng.pick(&types) }).collect();
        let ds: Vec<String> = (0..n_ds).map(|i| format!("d{i}")).collect();
        let mut cfs = vec!["AVERAGE"];
        for cf in ["MAX", "MIN", "LAST"] {
            if rng.chance(0.6) {
                cfs.push(cf);
            }
        }
        let rows = (DAYS * 86400 / step) as u64 + 10;
        let mut args: Vec<String> =
            vec!["create".into(), format!("f{f}.rrd"), "--start".into(), (T0 - 1).to_string()];
        args.extend(["--step".into(), step.to_string()]);
        for (name, kind) in ds.iter().zip(&kinds) {
            args.push(format!("DS:{name}:{kind}:{}:U:U", step * 2));
        }
        for cf in &cfs {
            args.push(format!("RRA:{cf}:0.5:1:{rows}"));
            args.push(format!("RRA:{cf}:0.5:12:{}", rows / 12 + 1));
        }
        let out = run(RRDTOOL, &args, dir);
        assert!(out.status.success(), "create: {}", String::from_utf8_lossy(&out.stderr));

        let scale = 10f64.powi(rng.range(-2, 7) as i32);
        let mut counters = vec![0u64; n_ds];
        let mut updates = Vec::new();
        let gap = rng.range(100, 2000);
        for i in 1..=(DAYS * 86400 / step) {
            if (gap..gap + 120).contains(&i) {
                continue;
            }
            let t = T0 + i * step;
            let mut line = t.to_string();
            for (d, kind) in kinds.iter().enumerate() {
                let wave = 1.0 + 0.8 * ((i as f64) / (40.0 + 10.0 * d as f64)).sin();
                let v = scale * wave * (0.8 + 0.4 * rng.unit());
                match *kind {
                    "GAUGE" => line.push_str(&format!(":{v:.4}")),
                    "ABSOLUTE" => line.push_str(&format!(":{}", v as u64)),
                    _ => {
                        counters[d] += (v * step as f64) as u64;
                        line.push_str(&format!(":{}", counters[d]));
                    }
                }
            }
            updates.push(line);
        }
        for chunk in updates.chunks(2000) {
            let mut args = vec!["update".to_string(), format!("f{f}.rrd")];
            args.extend(chunk.iter().cloned());
            let out = run(RRDTOOL, &args, dir);
            assert!(out.status.success(), "update: {}", String::from_utf8_lossy(&out.stderr));
        }
        files.push(FileSpec { name: format!("f{f}.rrd"), step, ds, cfs });
    }
    files
}

fn color(rng: &mut Rng) -> String {
    let base = *rng.pick(&["ff0000", "00aa00", "0000ff", "ff8800", "8800cc", "00cccc", "444444"]);
    if rng.chance(0.25) {
        format!("#{base}{:02x}", rng.range(0x40, 0xd0))
    } else {
        format!("#{base}")
    }
}

/// Legend texts, with the escapes rrdtool's legend layout honours.
fn legend(rng: &mut Rng) -> String {
    let text = *rng.pick(&["in", "out", "Traffic in", "load avg", "errors/s", "a\\: b", "total"]);
    let tail = *rng.pick(&["", "", "", "\\l", "\\r", "\\c", "\\j", "\\n", "\\g"]);
    format!("{text}{tail}")
}

/// A GPRINT/PRINT format as templates write them.
fn number_format(rng: &mut Rng) -> String {
    rng.pick(&["%6.2lf", "%8.2lf %s", "%5.1lf%S", "%.3le", "%lf", "Cur\\: %6.2lf %sB", "%10.4lg"]).to_string()
}

/// Graph options and their arguments; each entry is what a template
/// might pass.
fn options(rng: &mut Rng, span: i64) -> Vec<String> {
    let mut out = Vec::new();
    let mut take = |p: f64, rng: &mut Rng, args: &mut dyn FnMut(&mut Rng) -> Vec<String>| {
        if rng.chance(p) {
            out.extend(args(rng));
        }
    };
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    take(0.4, rng, &mut |r| vec!["-w".into(), r.range(120, 800).to_string()]);
    take(0.4, rng, &mut |r| vec!["-h".into(), r.range(40, 300).to_string()]);
    take(0.5, rng, &mut |r| {
        vec!["--title".into(), r.pick(&["Traffic", "CPU load on host-1", "Ünïcødé"]).to_string()]
    });
    take(0.5, rng, &mut |r| vec!["--vertical-label".into(), r.pick(&["bits/s", "bytes", "%"]).to_string()]);
    take(0.15, rng, &mut |r| {
        let lo = r.range(0, 5) as f64;
        let mut v = vec!["-l".into(), lo.to_string(), "-u".into(), (lo + r.range(1, 100) as f64).to_string()];
        if r.chance(0.5) {
            v.push("--rigid".into());
        }
        v
    });
    take(0.1, rng, &mut |r| {
        s(&[*r.pick(&["--alt-autoscale", "--alt-autoscale-max", "--alt-autoscale-min"])])
    });
    take(0.1, rng, &mut |_| s(&["--no-gridfit"]));
    take(0.15, rng, &mut |_| s(&["--slope-mode"]));
    take(0.05, rng, &mut |_| s(&["--only-graph"]));
    take(0.08, rng, &mut |_| s(&["--full-size-mode"]));
    take(0.05, rng, &mut |_| s(&["--no-legend"]));
    take(0.1, rng, &mut |_| s(&["--force-rules-legend"]));
    take(0.1, rng, &mut |r| vec!["--units-exponent".into(), r.pick(&["0", "3", "6", "-3"]).to_string()]);
    take(0.1, rng, &mut |r| vec!["--units-length".into(), r.range(2, 9).to_string()]);
    take(0.15, rng, &mut |_| s(&["--base", "1024"]));
    take(0.08, rng, &mut |_| s(&["--logarithmic"]));
    take(0.1, rng, &mut |_| s(&["--units=si"]));
    take(0.15, rng, &mut |r| {
        let tag = *r
            .pick(&["BACK", "CANVAS", "SHADEA", "SHADEB", "GRID", "MGRID", "FONT", "AXIS", "FRAME", "ARROW"]);
        vec!["-c".into(), format!("{tag}{}", color(r))]
    });
    take(0.1, rng, &mut |_| s(&["--watermark", "rrdscale corpus"]));
    take(0.05, rng, &mut |r| s(&[*r.pick(&["--x-grid", "--y-grid"]), "none"]));
    // (`--y-grid` with values: see the module docs.)
    take(0.05, rng, &mut |r| vec!["--border".into(), r.range(0, 4).to_string()]);
    // What Cacti, Munin, Smokeping and LibreNMS templates pass.
    // A custom time grid that suits the span, as templates pick one per
    // graph period (a dense grid makes rrdtool's labels a black smear).
    let x_grid = match span {
        s if s <= 6 * 3600 => "MINUTE:10:HOUR:1:HOUR:1:0:%H:%M",
        s if s <= 2 * 86_400 => "HOUR:6:DAY:1:HOUR:12:43200:%a %Hh",
        _ => "DAY:1:WEEK:1:WEEK:1:0:%d.%m",
    };
    take(0.1, rng, &mut |_| s(&["--x-grid", x_grid]));
    take(0.1, rng, &mut |_| s(&["-Y"]));
    take(0.1, rng, &mut |r| {
        let mut v = s(&["--right-axis", *r.pick(&["1:0", "8:0", "0.001:10"])]);
        if r.chance(0.5) {
            v.extend(s(&["--right-axis-label", "bits"]));
        }
        if r.chance(0.3) {
            v.extend(s(&["--right-axis-format", "%5.1lf"]));
        }
        v
    });
    take(0.1, rng, &mut |r| {
        vec!["--legend-position".into(), r.pick(&["north", "south", "west", "east"]).to_string()]
    });
    take(0.08, rng, &mut |r| {
        vec!["--legend-direction".into(), r.pick(&["topdown", "bottomup", "bottomup2"]).to_string()]
    });
    take(0.1, rng, &mut |r| {
        vec![
            "--font".into(),
            r.pick(&["DEFAULT:7:", "LEGEND:6:", "TITLE:12:", "AXIS:6:", "UNIT:9:"]).to_string(),
        ]
    });
    // Compared by graphv and size only (see the module docs).
    take(0.05, rng, &mut |r| vec!["--zoom".into(), r.pick(&["2", "1.5", "0.8"]).to_string()]);
    take(0.05, rng, &mut |_| s(&["-Z"]));
    take(0.05, rng, &mut |_| s(&["--allow-shrink"]));
    take(0.05, rng, &mut |_| s(&["--alt-y-mrtg"]));
    out
}

/// One command line (after the image name): range, options, elements.
fn case(rng: &mut Rng, files: &[FileSpec]) -> Vec<String> {
    let span = *rng.pick(&[3 * 3600i64, 86_400, 2 * 86_400, 7 * 86_400, 21 * 86_400]);
    let end = rng.range(T0 + span, T0 + DAYS * 86_400);
    let mut args =
        vec!["--start".to_string(), (end - span).to_string(), "--end".to_string(), end.to_string()];
    // rrdscale writes its own name where rrdtool writes its tag: that
    // strip differs by design, so no case draws it.
    args.push("--disable-rrdtool-tag".to_string());
    args.extend(options(rng, span));

    let mut series = Vec::new();
    for i in 0..rng.range(1, 3) {
        let f = rng.pick(files);
        let ds = rng.pick(&f.ds).clone();
        let cf = *rng.pick(&f.cfs);
        let name = format!("v{i}");
        let mut def = format!("DEF:{name}={}:{ds}:{cf}", f.name);
        if rng.chance(0.1) {
            def.push_str(&format!(":step={}", f.step * 12));
        }
        args.push(def);
        series.push(name);
    }
    for i in 0..rng.range(0, 2) {
        let a = rng.pick(&series).clone();
        let b = rng.pick(&series).clone();
        let expr = match rng.below(6) {
            0 => format!("{a},8,*"),
            1 => format!("{a},{b},+"),
            2 => format!("{a},UN,0,{a},IF"),
            3 => format!("{a},3600,TREND"),
            4 => format!("{a},{b},MAX"),
            _ => format!("{a},-1,*"),
        };
        let name = format!("c{i}");
        args.push(format!("CDEF:{name}={expr}"));
        series.push(name);
    }
    let mut vdefs = Vec::new();
    for i in 0..rng.range(0, 3) {
        let s = rng.pick(&series).clone();
        let op =
            *rng.pick(&["MAXIMUM", "MINIMUM", "AVERAGE", "LAST", "FIRST", "TOTAL", "95,PERCENT", "STDEV"]);
        let name = format!("x{i}");
        args.push(format!("VDEF:{name}={s},{op}"));
        vdefs.push(name);
    }
    for (i, s) in series.iter().enumerate() {
        if !rng.chance(0.8) {
            continue;
        }
        let kind = *rng.pick(&["LINE1", "LINE2", "LINE3", "AREA", "LINE1"]);
        let mut el = format!("{kind}:{s}{}", color(rng));
        let has_legend = rng.chance(0.8);
        if has_legend {
            el.push(':');
            el.push_str(&legend(rng));
        }
        if i > 0 && rng.chance(0.3) {
            // STACK is the field after the legend, which may be empty.
            el.push_str(if has_legend { ":STACK" } else { "::STACK" });
        }
        args.push(el);
        if rng.chance(0.4) {
            let cf = *rng.pick(&["AVERAGE", "MAX", "MIN", "LAST"]);
            args.push(format!("GPRINT:{s}:{cf}:{}", number_format(rng)));
        }
    }
    for v in &vdefs {
        match rng.below(4) {
            0 => args.push(format!("GPRINT:{v}:{}", number_format(rng))),
            1 => args.push(format!("PRINT:{v}:{}", number_format(rng))),
            2 => args.push(format!("HRULE:{v}{}:{}", color(rng), legend(rng))),
            _ => args.push(format!("VRULE:{v}{}", color(rng))),
        }
    }
    if rng.chance(0.3) {
        args.push(format!("COMMENT:{}", legend(rng)));
    }
    if rng.chance(0.1) {
        args.push(format!("TICK:{}{}:0.{}", rng.pick(&series), color(rng), rng.range(1, 9)));
    }
    if rng.chance(0.15) {
        let v = vdefs.first().cloned().unwrap_or_else(|| "x".into());
        if !vdefs.is_empty() {
            args.push(format!("GPRINT:{v}:Last update\\: %c:strftime"));
        }
    }
    if rng.chance(0.15) {
        args.push(format!("HRULE:{}{}", rng.range(0, 50), color(rng)));
    }
    args
}

/// An 8-bit RGB image.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

fn decode_png(path: &Path) -> Image {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG data");
    let channels = info.color_type.samples();
    let (width, height) = (info.width as usize, info.height as usize);
    let mut rgb = Vec::with_capacity(width * height * 3);
    for px in buf[..info.buffer_size()].chunks(channels) {
        match channels {
            1 | 2 => rgb.extend([px[0]; 3]),
            3 => rgb.extend(&px[..3]),
            _ => {
                // Straight alpha over white, as a viewer shows it.
                let a = px[3] as u32;
                rgb.extend(px[..3].iter().map(|&c| ((c as u32 * a + 255 * (255 - a)) / 255) as u8));
            }
        }
    }
    Image { width, height, rgb }
}

/// The share of pixels differing by more than [`STRICT_TOLERANCE`] in some
/// channel from the pixel at the same place (no neighbourhood), and
/// whether every pixel is equal.
fn strict_diff(a: &Image, b: &Image) -> (f64, bool) {
    assert_eq!((a.width, a.height), (b.width, b.height));
    let mut far = 0usize;
    for (p, q) in a.rgb.chunks(3).zip(b.rgb.chunks(3)) {
        if p.iter().zip(q).any(|(x, y)| (i32::from(*x) - i32::from(*y)).abs() > STRICT_TOLERANCE) {
            far += 1;
        }
    }
    (far as f64 / (a.width * a.height).max(1) as f64, a.rgb == b.rgb)
}

/// Where two images of one size differ at all.
fn diff_mask(a: &Image, b: &Image) -> Vec<bool> {
    a.rgb.chunks(3).zip(b.rgb.chunks(3)).map(|(p, q)| p != q).collect()
}

/// Median and worst of a list of shares, in percent.
fn median_worst(shares: &mut [f64]) -> (f64, f64) {
    shares.sort_by(f64::total_cmp);
    let median = shares.get(shares.len() / 2).copied().unwrap_or(0.0);
    (median * 100.0, shares.last().copied().unwrap_or(0.0) * 100.0)
}

/// rrdtool | rrdscale | the mask in red over a faded rrdtool image.
fn save_side_by_side(path: &Path, theirs: &Image, ours: &Image, mask: &[bool]) {
    let (w, h) = (theirs.width, theirs.height);
    let gap = 4;
    let width = w * 3 + gap * 2;
    let mut out = vec![255u8; width * h * 3];
    for y in 0..h {
        for x in 0..w {
            let i = (y * w + x) * 3;
            let row = y * width * 3;
            out[row + x * 3..row + x * 3 + 3].copy_from_slice(&theirs.rgb[i..i + 3]);
            let o = row + (w + gap + x) * 3;
            out[o..o + 3].copy_from_slice(&ours.rgb[i..i + 3]);
            let d = row + (2 * (w + gap) + x) * 3;
            let faded = |c: u8| 192 + c / 4;
            let px = if mask[y * w + x] {
                [255, 0, 0]
            } else {
                [faded(theirs.rgb[i]), faded(theirs.rgb[i + 1]), faded(theirs.rgb[i + 2])]
            };
            out[d..d + 3].copy_from_slice(&px);
        }
    }
    let file = std::fs::File::create(path).expect("side-by-side file");
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), width as u32, h as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header().and_then(|mut w| w.write_image_data(&out)).expect("writing side-by-side PNG");
}

fn output_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate_dir.parent().and_then(Path::parent).unwrap_or(crate_dir);
    let dir = workspace.join("test-output/graph-corpus");
    std::fs::create_dir_all(&dir).expect("creating test-output/graph-corpus");
    dir
}

fn seed() -> u64 {
    let v = std::env::var("RRDSCALE_DIFF_SEED").unwrap_or_default();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    };
    parsed.unwrap_or(795_346_746)
}

#[test]
// One loop over the generated graphs, each compared alike.
#[allow(clippy::too_many_lines)]
fn generated_graphs_equal_rrdtool_in_graphv_and_pixels() {
    let seed = seed();
    let cases: u64 = std::env::var("RRDSCALE_GRAPH_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    let only: Option<u64> = std::env::var("RRDSCALE_DIFF_ONLY").ok().and_then(|v| v.parse().ok());
    eprintln!("graph corpus: RRDSCALE_DIFF_SEED={seed}, {cases} cases");
    let keep = std::env::var_os("RRDSCALE_GRAPH_KEEP").is_some();
    let list = std::env::var_os("RRDSCALE_GRAPH_LIST").is_some();
    let dir = tempfile::Builder::new()
        .prefix("rrdscale-graph-corpus-")
        .disable_cleanup(keep)
        .tempdir()
        .expect("tempdir");
    let files = make_files(dir.path(), &mut Rng::new(seed));
    if keep {
        eprintln!("graph corpus: keeping the files in {}", dir.path().display());
    }

    let mut failures = Vec::new();
    // (share of pixels off by more than STRICT_TOLERANCE, pixel-equal) of
    // every compared picture.
    let mut pictures: Vec<(f64, bool)> = Vec::new();
    // The pictures that are not pixel-equal: (share, case, line, rrdtool's, ours).
    let mut unequal: Vec<(f64, u64, Vec<String>, Image, Image)> = Vec::new();
    let out_dir = output_dir();
    for n in 0..cases {
        if only.is_some_and(|o| o != n) {
            continue;
        }
        let mut rng = Rng::new(case_seed(seed, n));
        let line = case(&mut rng, &files);
        if only.is_some() {
            eprintln!("graph corpus: case {n}: {line:?}");
        }
        let with_image = |image: &str| {
            let mut a = vec!["graphv".to_string(), image.to_string()];
            a.extend(line.iter().cloned());
            a
        };
        let theirs = run(RRDTOOL, &with_image("theirs.png"), dir.path());
        let ours = run(rrdscale_bin(), &with_image("ours.png"), dir.path());
        if theirs.stdout != ours.stdout || theirs.status.success() != ours.status.success() {
            failures.push(differences(&format!("case {n}: graphv {line:?}"), &theirs, &ours, true));
            continue;
        }
        if !theirs.status.success() {
            continue;
        }
        let a = decode_png(&dir.path().join("theirs.png"));
        let b = decode_png(&dir.path().join("ours.png"));
        if (a.width, a.height) != (b.width, b.height) {
            failures.push(format!(
                "case {n}: image sizes differ: rrdtool {}x{}, rrdscale {}x{} for {line:?}",
                a.width, a.height, b.width, b.height
            ));
            continue;
        }
        let (far, equal) = strict_diff(&a, &b);
        pictures.push((far, equal));
        if equal {
            continue;
        }
        if list {
            eprintln!(
                "graph corpus: case {n} not pixel-equal ({:.3}% off by > {STRICT_TOLERANCE}): {line:?}",
                far * 100.0
            );
        }
        if far > MAX_FAR_SHARE {
            failures.push(format!(
                "case {n}: {:.3}% of pixels differ by more than {STRICT_TOLERANCE} (limit {:.3}%): {line:?}",
                far * 100.0,
                MAX_FAR_SHARE * 100.0,
            ));
        }
        unequal.push((far, n, line, a, b));
        unequal.sort_by(|x, y| y.0.total_cmp(&x.0));
        unequal.truncate(5);
    }
    let equal = pictures.iter().filter(|p| p.1).count();
    let (far_median, far_worst) = median_worst(&mut pictures.iter().map(|p| p.0).collect::<Vec<_>>());
    eprintln!(
        "graph corpus: {} pictures, {equal} equal pixel for pixel; differing by > {STRICT_TOLERANCE}: \
         median {far_median:.3}%, worst {far_worst:.3}%",
        pictures.len(),
    );
    if (equal as f64) < MIN_EQUAL_SHARE * pictures.len() as f64 {
        failures.push(format!(
            "only {equal} of {} pictures equal rrdtool's pixel for pixel (at least {:.0}% must)",
            pictures.len(),
            MIN_EQUAL_SHARE * 100.0
        ));
    }
    if !failures.is_empty() {
        for (far, n, line, a, b) in &unequal {
            let path = out_dir.join(format!("case-{seed}-{n}.png"));
            save_side_by_side(&path, a, b, &diff_mask(a, b));
            failures.push(format!(
                "case {n} ({:.3}% off by > {STRICT_TOLERANCE}) side by side in {}: {line:?}",
                far * 100.0,
                path.display()
            ));
        }
    }
    assert!(
        pictures.len() as f64 >= 0.5 * (cases - failures.len() as u64) as f64 || only.is_some(),
        "most generated cases should draw: only {} of {cases} did",
        pictures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ from rrdtool:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
