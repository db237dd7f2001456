//! `rrdscale pagesim`: the LISA '07 paper's LRU buffer-cache simulation and
//! analytical model, side by side (see `rrd_engine::pagesim` for the models).
//!
//! ```text
//! rrdscale pagesim [--schema mrtg|mrtg-classic|perftest|growthforecast]
//!                  [--create 'DS:… RRA:…' [--step SECS]] [--days N]
//!                  [--pages 1-32] [--tod-pages P] [--seed N] [--files N]
//!                  [--start EPOCH]
//!                  [--json] [--svg FILE] [--tod-svg FILE]
//! ```
//!
//! Prints one row per cache size `p`: page-ins per update without
//! readahead (true layout and block-aligned), the model's prediction and its
//! error against the block-aligned simulation, and with readahead; then the
//! time-of-day profile at `--tod-pages`. `--svg` draws the paper's Figure 13
//! (page-ins per update against pages per file), `--tod-svg` its Figure 14.
//!
//! Owns: option parsing, the text/JSON rendering and the figures (drawn
//! with rrd-bench's SVG chart writer, `rrd_bench::svg`).
//! Deliberately not here: any simulation logic.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::{bail, Context, Result};
use rrd_bench::svg::{self, legend, linear_ticks, Frame};
use rrd_pagesim::{self as pagesim, Config, Report, Schema, TodBucket};

use rrd_cli::opts;

const SYNOPSIS: &str = "pagesim [--schema mrtg|mrtg-classic|perftest|growthforecast] \
[--create 'DS:... RRA:...' [--step SECS]] [--days N] [--pages 1-32] [--tod-pages P] [--seed N] [--files N] \
[--start EPOCH] [--json] [--svg FILE] [--tod-svg FILE]";

/// Longest simulation accepted: 100 years of 5-minute steps is ~10.5M
/// updates, minutes of CPU; anything longer is a typo.
const MAX_STEPS: u64 = 20_000_000;
/// Most files pooled in one run (each is a full simulation).
const MAX_FILES: u64 = 1000;
/// Largest cache simulated; the LRU scans linearly.
const MAX_PAGES: usize = 4096;

/// Parses `1-32`, `1,2,4,8`, `4-8,16`.
fn parse_pages(spec: &str) -> Result<Vec<usize>> {
    let mut pages = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo: usize =
            lo.parse().with_context(|| format!("'{part}' in --pages is not a page count or range"))?;
        let hi: usize =
            hi.parse().with_context(|| format!("'{part}' in --pages is not a page count or range"))?;
        if lo == 0 || hi < lo || hi > MAX_PAGES {
            bail!("--pages range '{part}' must be within 1-{MAX_PAGES} and ascending");
        }
        pages.extend(lo..=hi);
    }
    pages.sort_unstable();
    pages.dedup();
    if pages.is_empty() {
        bail!("--pages names no cache size");
    }
    Ok(pages)
}

fn config(args: &[String]) -> Result<(Config, bool, Option<String>, Option<String>)> {
    let parsed = opts::parse(
        args,
        &[
            opts::value(None, "schema"),
            opts::value(None, "create"),
            opts::value(Some('s'), "step"),
            opts::value(None, "days"),
            opts::value(None, "pages"),
            opts::value(None, "tod-pages"),
            opts::value(None, "seed"),
            opts::value(None, "files"),
            opts::value(Some('b'), "start"),
            opts::flag(None, "json"),
            opts::value(None, "svg"),
            opts::value(None, "tod-svg"),
        ],
    )?;
    if !parsed.operands.is_empty() {
        bail!("Usage: rrdscale {SYNOPSIS}");
    }
    let schema = match (parsed.value("create"), parsed.value("schema")) {
        (Some(_), Some(_)) => bail!("--create and --schema are exclusive"),
        (Some(line), None) => {
            let step: u64 = match parsed.value("step") {
                Some(s) => s.parse().with_context(|| format!("--step '{s}' is not a number of seconds"))?,
                None => 300,
            };
            Schema::from_create_line(line, step)?
        }
        (None, name) => {
            if parsed.has("step") {
                bail!("--step goes with --create (the named schemas have their own step)");
            }
            let name = name.unwrap_or("mrtg");
            Schema::named(name)
                .with_context(|| format!("unknown schema '{name}' (known: {})", Schema::NAMES.join(", ")))?
        }
    };
    let mut config = Config::new(schema);
    if let Some(d) = parsed.value("days") {
        let days: f64 = d.parse().with_context(|| format!("--days '{d}' is not a number"))?;
        if days.is_nan() || days <= 0.0 {
            bail!("--days must be positive");
        }
        let steps = (days * 86_400.0 / config.schema.step_secs as f64).round();
        if steps < 1.0 || steps > MAX_STEPS as f64 {
            bail!("--days {d} makes {steps} updates; between 1 and {MAX_STEPS} are simulated");
        }
        config.steps = steps as u64;
    }
    // One day of warm-up (at most a tenth of the run) so that averages
    // describe the steady state, not the first cold reads.
    config.warmup_steps = (86_400 / config.schema.step_secs).min(config.steps / 10);
    if let Some(p) = parsed.value("pages") {
        config.pages = parse_pages(p)?;
    }
    if let Some(p) = parsed.value("tod-pages") {
        config.tod_pages = p.parse().with_context(|| format!("--tod-pages '{p}' is not a page count"))?;
        if config.tod_pages == 0 || config.tod_pages > MAX_PAGES {
            bail!("--tod-pages must be within 1-{MAX_PAGES}");
        }
    }
    if let Some(s) = parsed.value("seed") {
        config.seed = s.parse().with_context(|| format!("--seed '{s}' is not a number"))?;
    }
    if let Some(f) = parsed.value("files") {
        config.files = f.parse().with_context(|| format!("--files '{f}' is not a number of files"))?;
        if config.files == 0 || config.files > MAX_FILES {
            bail!("--files must be within 1-{MAX_FILES}");
        }
    }
    if let Some(s) = parsed.value("start") {
        config.start = s.parse().with_context(|| format!("--start '{s}' is not epoch seconds"))?;
        if config.start <= 0 {
            bail!("--start must be positive epoch seconds");
        }
    }
    Ok((
        config,
        parsed.has("json"),
        parsed.value("svg").map(String::from),
        parsed.value("tod-svg").map(String::from),
    ))
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    // Unlike rrdtool's commands, pagesim has a default for everything, so
    // no arguments means a default run; `--help` prints the synopsis.
    if args.iter().any(|a| a == "--help" || a == "-h") {
        writeln!(out, "Usage: rrdscale {SYNOPSIS}")?;
        return Ok(());
    }
    let (config, json, svg, tod_svg) = config(args)?;
    let report = pagesim::run(&config)?;
    if let Some(path) = &svg {
        std::fs::write(path, figure13_svg(&report)).with_context(|| format!("writing {path}"))?;
    }
    if let Some(path) = &tod_svg {
        std::fs::write(path, figure14_svg(&report)).with_context(|| format!("writing {path}"))?;
    }
    if json {
        out.write_all(to_json(&report).as_bytes())?;
    } else {
        out.write_all(to_text(&report).as_bytes())?;
    }
    Ok(())
}

/// Relative error of the model against the simulation, as text.
fn pct(model: f64, sim: f64) -> String {
    match rel_error(model, sim) {
        Some(e) => format!("{:+.0}%", e * 100.0),
        None => "-".into(),
    }
}

/// `(model - sim) / sim`, or `None` when the simulation saw nothing.
fn rel_error(model: f64, sim: f64) -> Option<f64> {
    if sim == 0.0 {
        (model == 0.0).then_some(0.0)
    } else {
        Some((model - sim) / sim)
    }
}

/// `1h30m`, `5m`, `1d`: a period for humans.
fn period(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (v, unit) in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] {
        if v > 0 {
            let _ = write!(out, "{v}{unit}");
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

fn hhmm(minute: u32) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

fn to_text(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", describe(r));
    let _ = writeln!(
        s,
        "# page-ins per update with p cached pages per file: none = no readahead (fadvise RANDOM), true layout;"
    );
    let _ = writeln!(
        s,
        "# none-align = same, RRAs block-aligned as the model assumes; paper = the paper's model as written;"
    );
    let _ = writeln!(
        s,
        "# model = the model with LRU's eviction chain and page crossings; err = model vs none-align;"
    );
    let _ = writeln!(
        s,
        "# readahead = Linux 2.6.9 as the paper describes it ({}-page window at each open, {} after a seek, max {});",
        r.windows.initial_pages, r.windows.random_pages, r.windows.max_pages
    );
    let _ = writeln!(s, "# ra-on-miss = the same windows started only on a cache miss. Data pages only (paper's p = ours + 2).");
    let _ = writeln!(
        s,
        "{:>4} {:>10} {:>10} {:>10} {:>10} {:>6} {:>10} {:>10}",
        "p", "none", "none-align", "paper", "model", "err", "readahead", "ra-on-miss"
    );
    for row in &r.rows {
        let m = row.model.page_ins_per_update();
        let _ = writeln!(
            s,
            "{:>4} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>6} {:>10.4} {:>10.4}",
            row.cache_pages,
            row.none_true,
            row.none_aligned,
            row.paper.page_ins_per_update(),
            m,
            pct(m, row.none_aligned),
            row.readahead,
            row.readahead_on_miss
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "# time of day (UTC) at p = {}, true layout: updates grouped by the slowest consolidation they complete",
        r.tod_pages
    );
    let _ =
        writeln!(s, "{:>10} {:>9} {:>10} {:>10} {:>10}", "every", "updates", "none", "readahead", "written");
    for l in &r.levels {
        let _ = writeln!(
            s,
            "{:>10} {:>9} {:>10.4} {:>10.4} {:>10.2}",
            period(l.pdp_count * r.schema.step_secs),
            l.updates,
            l.none,
            l.readahead,
            l.written
        );
    }
    let mut busiest: Vec<&TodBucket> = r.tod.iter().collect();
    busiest.sort_by(|a, b| b.none.total_cmp(&a.none).then(a.minute.cmp(&b.minute)));
    let top: Vec<String> =
        busiest.iter().take(6).map(|b| format!("{} {:.3}", hhmm(b.minute), b.none)).collect();
    let _ = writeln!(s, "# busiest minutes (page-ins per update, no readahead): {}", top.join(", "));
    s
}

fn describe(r: &Report) -> String {
    format!(
        "# pagesim: schema {} (step {} s), {} file(s) of {} updates ({:.0} days; the first {} not counted), \
file {} bytes = {} pages ({} block-aligned), header {} bytes",
        r.schema.name,
        r.schema.step_secs,
        r.files,
        r.steps,
        r.steps as f64 * r.schema.step_secs as f64 / 86_400.0,
        r.warmup_steps,
        r.file_len,
        r.file_pages,
        r.aligned_file_pages,
        r.header_len
    )
}

fn json_str(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Finite numbers only (every rate here is a ratio of counts).
fn json_num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

fn to_json(r: &Report) -> String {
    let mut s = String::new();
    let defs: Vec<String> = r.schema.defs.iter().map(|d| json_str(d)).collect();
    let _ = write!(
        s,
        "{{\"schema\":{{\"name\":{},\"step_secs\":{},\"defs\":[{}]}},",
        json_str(&r.schema.name),
        r.schema.step_secs,
        defs.join(",")
    );
    let _ = write!(
        s,
        "\"steps\":{},\"files\":{},\"warmup_steps\":{},\"file_len\":{},\"file_pages\":{},\"aligned_file_pages\":{},\"header_len\":{},",
        r.steps, r.files, r.warmup_steps, r.file_len, r.file_pages, r.aligned_file_pages, r.header_len
    );
    let _ = write!(
        s,
        "\"readahead_windows\":{{\"initial_pages\":{},\"random_pages\":{},\"max_pages\":{}}},\"rows\":[",
        r.windows.initial_pages, r.windows.random_pages, r.windows.max_pages
    );
    for (i, row) in r.rows.iter().enumerate() {
        let m = row.model.page_ins_per_update();
        let _ = write!(
            s,
            "{}{{\"p\":{},\"none\":{},\"none_aligned\":{},\"paper\":{},\"paper_s\":{},\"model\":{},\
\"model_header\":{},\"model_rras\":{},\"model_crossing\":{},\"model_error\":{},\"readahead\":{},\"readahead_on_miss\":{}}}",
            if i > 0 { "," } else { "" },
            row.cache_pages,
            json_num(row.none_true),
            json_num(row.none_aligned),
            json_num(row.paper.page_ins_per_update()),
            row.paper.s.map_or("null".to_string(), |v| v.to_string()),
            json_num(m),
            json_num(row.model.header),
            json_num(row.model.rras),
            json_num(row.model.crossing),
            rel_error(m, row.none_aligned).map_or("null".to_string(), json_num),
            json_num(row.readahead),
            json_num(row.readahead_on_miss)
        );
    }
    let _ = write!(s, "],\"tod_pages\":{},\"levels\":[", r.tod_pages);
    for (i, l) in r.levels.iter().enumerate() {
        let _ = write!(
            s,
            "{}{{\"pdp_count\":{},\"period_secs\":{},\"updates\":{},\"none\":{},\"readahead\":{},\"written\":{}}}",
            if i > 0 { "," } else { "" },
            l.pdp_count,
            l.pdp_count * r.schema.step_secs,
            l.updates,
            json_num(l.none),
            json_num(l.readahead),
            json_num(l.written)
        );
    }
    s.push_str("],\"tod\":[");
    for (i, b) in r.tod.iter().enumerate() {
        let _ = write!(
            s,
            "{}{{\"minute\":{},\"time\":\"{}\",\"updates\":{},\"none\":{},\"readahead\":{},\"written\":{}}}",
            if i > 0 { "," } else { "" },
            b.minute,
            hhmm(b.minute),
            b.updates,
            json_num(b.none),
            json_num(b.readahead),
            json_num(b.written)
        );
    }
    s.push_str("]}\n");
    s
}

/// The paper's Figure 13: average page-ins per update against the pages of
/// cache per file, with and without readahead, and the model. Left: linear
/// scale as in the paper; right: the no-readahead curves on a log scale,
/// where the model can be told from the simulation.
// A flat sequence of drawing calls for one figure.
#[allow(clippy::too_many_lines)]
fn figure13_svg(r: &Report) -> String {
    let mut s = String::new();
    svg::open(&mut s, 1000.0, 520.0);
    let p_max = r.rows.last().map_or(1, |row| row.cache_pages) as f64;
    let p_min = r.rows.first().map_or(1, |row| row.cache_pages) as f64;
    let x_range = (p_min.min(p_max - 1.0), p_max);
    let step = if p_max - x_range.0 > 16.0 { 4.0 } else { 1.0 };
    let mut x_ticks: Vec<(f64, String)> = vec![(x_range.0, format!("{}", x_range.0))];
    let mut v = (x_range.0 / step).floor() * step + step;
    while v <= p_max {
        x_ticks.push((v, format!("{v}")));
        v += step;
    }
    let series = |f: &dyn Fn(&pagesim::Row) -> f64| -> Vec<(f64, f64)> {
        r.rows.iter().map(|row| (row.cache_pages as f64, f(row))).collect()
    };
    let ra = series(&|row| row.readahead);
    let ra_miss = series(&|row| row.readahead_on_miss);
    let none = series(&|row| row.none_true);
    let aligned = series(&|row| row.none_aligned);
    let model = series(&|row| row.model.page_ins_per_update());
    let paper = series(&|row| row.paper.page_ins_per_update());
    let y_max = ra.iter().chain(&ra_miss).chain(&none).map(|&(_, y)| y).fold(0.0, f64::max);
    let (top, y_ticks) = linear_ticks(y_max.max(1e-3));
    let left = Frame {
        left: 70.0,
        top: 50.0,
        width: 380.0,
        height: 330.0,
        x: x_range,
        y: (0.0, top),
        log_x: false,
        log_y: false,
    };
    left.axes(
        &mut s,
        &x_ticks,
        &y_ticks,
        "pages of buffer cache per file (data pages)",
        "page-ins per update",
        &format!("{}: page-ins per update (linear)", r.schema.name),
    );
    left.polyline(&mut s, &ra, "#d62728", None);
    left.polyline(&mut s, &ra_miss, "#ff9896", Some("6 4"));
    left.polyline(&mut s, &none, "#1f77b4", None);
    left.markers(&mut s, &model, "#2ca02c");
    // Right: log scale down to the smallest non-zero value.
    let positive: Vec<f64> = none
        .iter()
        .chain(&aligned)
        .chain(&model)
        .chain(&paper)
        .map(|&(_, y)| y)
        .filter(|&y| y > 0.0)
        .collect();
    let smallest = positive.iter().copied().fold(f64::INFINITY, f64::min);
    let largest = positive.iter().copied().fold(0.0, f64::max);
    // Decades around the data; a fixed range when nothing is positive.
    let y_lo = if smallest.is_finite() { 10f64.powf(smallest.max(1e-6).log10().floor()) } else { 1e-5 };
    let y_hi = 10f64.powf(largest.max(y_lo * 10.0).log10().ceil());
    let mut log_ticks = Vec::new();
    let mut d = y_lo;
    // Bounded: at most a dozen decades between 1e-6 and the data's maximum.
    while d <= y_hi * 1.0001 && log_ticks.len() < 16 {
        log_ticks.push((d, format!("{d:e}")));
        d *= 10.0;
    }
    let right = Frame {
        left: 570.0,
        top: 50.0,
        width: 380.0,
        height: 330.0,
        x: x_range,
        y: (y_lo, y_hi),
        log_x: false,
        log_y: true,
    };
    right.axes(
        &mut s,
        &x_ticks,
        &log_ticks,
        "pages of buffer cache per file (data pages)",
        "page-ins per update",
        "no readahead: simulation and models (log)",
    );
    let clip =
        |pts: &[(f64, f64)]| -> Vec<(f64, f64)> { pts.iter().copied().filter(|&(_, y)| y > 0.0).collect() };
    right.polyline(&mut s, &clip(&none), "#1f77b4", None);
    right.polyline(&mut s, &clip(&aligned), "#17becf", Some("6 4"));
    right.polyline(&mut s, &clip(&paper), "#9467bd", Some("2 3"));
    right.markers(&mut s, &clip(&model), "#2ca02c");
    legend(
        &mut s,
        80.0,
        440.0,
        &[
            ("readahead (Linux 2.6.9 as the paper describes it)", "#d62728", None, false),
            ("readahead on cache miss only", "#ff9896", Some("6 4"), false),
            ("no readahead (fadvise RANDOM), simulation", "#1f77b4", None, false),
        ],
    );
    legend(
        &mut s,
        580.0,
        440.0,
        &[
            ("no readahead, true layout (simulation)", "#1f77b4", None, false),
            ("no readahead, RRAs block-aligned (simulation)", "#17becf", Some("6 4"), false),
            ("the paper's model as written", "#9467bd", Some("2 3"), false),
            ("model with LRU chain and crossings (points)", "#2ca02c", None, true),
        ],
    );
    svg::close(&mut s);
    s
}

/// The paper's Figure 14: by time of day (UTC), the pages each update
/// writes and the page-ins it costs at `tod_pages` pages per file without
/// readahead.
fn figure14_svg(r: &Report) -> String {
    let mut s = String::new();
    svg::open(&mut s, 1000.0, 560.0);
    let x_ticks: Vec<(f64, String)> = (0..=12).map(|i| ((i * 120) as f64, hhmm(i * 120))).collect();
    let bar_w = (r.schema.step_secs as f64 / 60.0).clamp(1.0, 60.0);
    type Value = Box<dyn Fn(&TodBucket) -> f64>;
    let panels: [(&str, f64, Value, &str); 2] = [
        ("pages written per update", 50.0, Box::new(|b: &TodBucket| b.written), "#ff7f0e"),
        ("page-ins per update", 310.0, Box::new(|b: &TodBucket| b.none), "#1f77b4"),
    ];
    for (label, top_px, value, color) in panels {
        let y_max = r.tod.iter().map(&value).fold(0.0, f64::max);
        let (top, y_ticks) = linear_ticks(y_max.max(1e-3));
        let f = Frame {
            left: 80.0,
            top: top_px,
            width: 880.0,
            height: 190.0,
            x: (0.0, 1440.0),
            y: (0.0, top),
            log_x: false,
            log_y: false,
        };
        let title = if top_px < 100.0 {
            format!("{}: pages written per update by time of day (UTC)", r.schema.name)
        } else {
            format!("page-ins per update at {} pages per file, no readahead", r.tod_pages)
        };
        f.axes(&mut s, &x_ticks, &y_ticks, "time of day (UTC)", label, &title);
        for b in &r.tod {
            let v = value(b);
            if v <= 0.0 {
                continue;
            }
            let x0 = f.px(b.minute as f64);
            let x1 = f.px(b.minute as f64 + bar_w);
            let y = f.py(v);
            let _ = writeln!(
                s,
                r#"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
                (x1 - x0 - 0.5).max(0.5),
                f.py(0.0) - y
            );
        }
    }
    svg::close(&mut s);
    s
}
