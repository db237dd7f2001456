//! Prometheus text exposition (format 0.0.4), written and read back, and
//! the lock-free histogram both servers observe into: one copy for
//! `rrdscale daemon --metrics` and `rrdscale web`'s `/metrics`.
//!
//! [`Exposition`] writes a scrape: every family opens with `# HELP` and
//! `# TYPE`, once ([`Exposition::family`] refuses a second opening of the
//! same name with a panic: families are fixed in code, so a duplicate is a
//! programmer error); label values are escaped; a [`Histogram`] renders as
//! cumulative `_bucket` lines ending in `le="+Inf"`, then `_sum` and
//! `_count` (the count is the `+Inf` bucket, so the two always agree).
//! [`parse`] reads a scrape and checks the same rules (and the house
//! convention that counters, and only counters, end in `_total`): tests
//! of both servers parse their own output with it.
//!
//! Deliberately absent: the HTTP side (the daemon answers on a plain
//! thread, the web server through axum), timestamps on samples, and the
//! OpenMetrics format.

#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::fmt::{self, Display, Write as _};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The `Content-Type` of a scrape.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A metric family's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "counter" => Kind::Counter,
            "gauge" => Kind::Gauge,
            "histogram" => Kind::Histogram,
            _ => return None,
        })
    }
}

/// The upper bounds (seconds, increasing) of a histogram's buckets; the
/// `+Inf` bucket is implied. A type, so a histogram field can derive
/// `Default`.
pub trait Buckets {
    const BOUNDS_SECS: &'static [f64];
}

/// Durations counted into [`Buckets`]: per-bucket counts (the exposition
/// makes them cumulative), the sum in nanoseconds and the count. Lock-free;
/// a scrape may see one observation half-added.
pub struct Histogram<B: Buckets> {
    /// One per bound, then the overflow (`+Inf`) bucket.
    buckets: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
    count: AtomicU64,
    bounds: PhantomData<B>,
}

impl<B: Buckets> Default for Histogram<B> {
    fn default() -> Self {
        Histogram {
            buckets: (0..=B::BOUNDS_SECS.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
            count: AtomicU64::new(0),
            bounds: PhantomData,
        }
    }
}

impl<B: Buckets> fmt::Debug for Histogram<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("bounds_secs", &B::BOUNDS_SECS)
            .field("cumulative", &self.cumulative())
            .field("sum_secs", &self.sum_secs())
            .finish()
    }
}

impl<B: Buckets> Histogram<B> {
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = B::BOUNDS_SECS.iter().position(|&b| secs <= b).unwrap_or(B::BOUNDS_SECS.len());
        self.buckets[i].fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Relaxed);
        self.count.fetch_add(1, Relaxed);
    }

    /// Cumulative counts per bound, the last one `+Inf`: what a scrape shows.
    pub fn cumulative(&self) -> Vec<u64> {
        let mut total = 0;
        self.buckets
            .iter()
            .map(|b| {
                total += b.load(Relaxed);
                total
            })
            .collect()
    }

    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }

    pub fn sum_secs(&self) -> f64 {
        self.sum_ns.load(Relaxed) as f64 / 1e9
    }
}

/// A label value with `\`, `"` and newlines escaped.
pub fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A scrape being written.
#[derive(Default)]
pub struct Exposition {
    text: String,
    families: BTreeSet<String>,
}

impl Exposition {
    pub fn new() -> Exposition {
        Exposition { text: String::with_capacity(8192), families: BTreeSet::new() }
    }

    /// Opens a family: its `# HELP` and `# TYPE` lines. Its samples follow
    /// ([`Exposition::sample`]).
    ///
    /// # Panics
    /// When `name` was opened before, or is not a metric name.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) -> &mut Exposition {
        assert!(valid_name(name), "'{name}' is not a metric name");
        assert!(self.families.insert(name.to_string()), "metric family {name} written twice");
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = write!(self.text, "# HELP {name} {help}\n# TYPE {name} {}\n", kind.as_str());
        self
    }

    /// One sample line: `name{k="v",...} value` (labels escaped).
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) -> &mut Exposition {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", escape_label(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
        self
    }

    /// A counter family with one unlabelled sample.
    pub fn counter(&mut self, name: &str, help: &str, value: u64) -> &mut Exposition {
        self.family(name, Kind::Counter, help).sample(name, &[], value)
    }

    /// A gauge family with one unlabelled sample.
    pub fn gauge(&mut self, name: &str, help: &str, value: impl Display) -> &mut Exposition {
        self.family(name, Kind::Gauge, help).sample(name, &[], value)
    }

    /// A histogram family: cumulative buckets, `+Inf`, `_sum`, `_count`.
    pub fn histogram<B: Buckets>(&mut self, name: &str, help: &str, h: &Histogram<B>) -> &mut Exposition {
        self.family(name, Kind::Histogram, help);
        let bucket = format!("{name}_bucket");
        let cumulative = h.cumulative();
        for (i, c) in cumulative.iter().enumerate() {
            let le = B::BOUNDS_SECS.get(i).map_or_else(|| "+Inf".to_string(), f64::to_string);
            self.sample(&bucket, &[("le", &le)], c);
        }
        let count = cumulative.last().copied().unwrap_or(0);
        self.sample(&format!("{name}_sum"), &[], h.sum_secs());
        self.sample(&format!("{name}_count"), &[], count)
    }

    pub fn finish(self) -> String {
        self.text
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// One sample of a scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    /// `name{k="v",...}` as written (labels escaped, in their order).
    pub fn key(&self) -> String {
        if self.labels.is_empty() {
            return self.name.clone();
        }
        let l: Vec<String> =
            self.labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
        format!("{}{{{}}}", self.name, l.join(","))
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// One family of a scrape.
#[derive(Clone, Debug)]
pub struct Family {
    pub name: String,
    pub kind: Kind,
    pub help: String,
    pub samples: Vec<Sample>,
}

/// A scrape read back by [`parse`].
#[derive(Clone, Debug, Default)]
pub struct Scrape {
    pub families: Vec<Family>,
}

impl Scrape {
    /// The value of the sample written as `key` (`name` or
    /// `name{k="v",...}`, labels in the order written).
    pub fn get(&self, key: &str) -> Option<f64> {
        self.samples().find(|s| s.key() == key).map(|s| s.value)
    }

    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    pub fn samples(&self) -> impl Iterator<Item = &Sample> {
        self.families.iter().flat_map(|f| &f.samples)
    }
}

/// A scrape that breaks the rules [`parse`] checks: the line and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based; 0 for a family-wide problem found at the end.
    pub line: usize,
    pub what: String,
}

impl Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

impl std::error::Error for ParseError {}

/// Reads exposition text and checks it: every family opens with `# HELP`
/// then `# TYPE` (each once per name), every sample belongs to the family
/// just opened (histograms: `_bucket` with an `le` label, `_sum`,
/// `_count`), values are numbers, counters and only counters end in
/// `_total`, a histogram's buckets have increasing bounds and
/// non-decreasing counts, end in `le="+Inf"` and its `_count` equals that
/// bucket, and `_sum` is present.
pub fn parse(text: &str) -> Result<Scrape, ParseError> {
    let mut scrape = Scrape::default();
    let mut seen = BTreeSet::new();
    let mut pending_help: Option<(String, String)> = None;
    let err = |line: usize, what: String| Err(ParseError { line, what });
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            if !seen.insert(name.to_string()) {
                return err(n, format!("family {name} opened twice"));
            }
            pending_help = Some((name.to_string(), help.to_string()));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            let Some((help_name, help)) = pending_help.take().filter(|(h, _)| h == name) else {
                return err(n, format!("# TYPE {name} without a # HELP {name} just before"));
            };
            let Some(kind) = Kind::parse(kind) else { return err(n, format!("unknown type '{kind}'")) };
            if (kind == Kind::Counter) != name.ends_with("_total") {
                return err(n, format!("{name}: counters, and only counters, end in _total"));
            }
            scrape.families.push(Family { name: help_name, kind, help, samples: Vec::new() });
        } else if line.starts_with('#') || line.trim().is_empty() {
            continue;
        } else {
            if pending_help.is_some() {
                return err(n, "a sample between # HELP and # TYPE".into());
            }
            let sample = parse_sample(line).map_err(|what| ParseError { line: n, what })?;
            let Some(f) = scrape.families.last_mut() else {
                return err(n, format!("{} before any family", sample.name));
            };
            let belongs = match f.kind {
                Kind::Histogram => {
                    sample.name == format!("{}_sum", f.name)
                        || sample.name == format!("{}_count", f.name)
                        || (sample.name == format!("{}_bucket", f.name) && sample.label("le").is_some())
                }
                _ => sample.name == f.name,
            };
            if !belongs {
                return err(
                    n,
                    format!("{} is not a sample of {} ({})", sample.name, f.name, f.kind.as_str()),
                );
            }
            f.samples.push(sample);
        }
    }
    if let Some((name, _)) = pending_help {
        return err(0, format!("# HELP {name} without # TYPE"));
    }
    for f in &scrape.families {
        if f.samples.is_empty() {
            return err(0, format!("{} has no sample", f.name));
        }
        if f.kind == Kind::Histogram {
            check_histogram(f).map_err(|what| ParseError { line: 0, what })?;
        }
    }
    Ok(scrape)
}

fn check_histogram(f: &Family) -> Result<(), String> {
    let name = &f.name;
    let mut last_le = f64::NEG_INFINITY;
    let mut last_count = 0.0;
    let mut inf = None;
    for s in f.samples.iter().filter(|s| s.name.ends_with("_bucket")) {
        let le = s.label("le").unwrap_or_default();
        let bound: f64 = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().map_err(|_| format!("{name}: bucket bound '{le}' is not a number"))?
        };
        if inf.is_some() || bound <= last_le {
            return Err(format!("{name}: bucket bounds do not increase to +Inf (at le=\"{le}\")"));
        }
        if s.value < last_count {
            return Err(format!("{name}: bucket counts are not cumulative (at le=\"{le}\")"));
        }
        (last_le, last_count) = (bound, s.value);
        if bound == f64::INFINITY {
            inf = Some(s.value);
        }
    }
    let Some(inf) = inf else { return Err(format!("{name}: no le=\"+Inf\" bucket")) };
    let one = |suffix: &str| {
        let v: Vec<f64> =
            f.samples.iter().filter(|s| s.name == format!("{name}{suffix}")).map(|s| s.value).collect();
        match v.as_slice() {
            [x] => Ok(*x),
            _ => Err(format!("{name}: {} {name}{suffix} samples, not one", v.len())),
        }
    };
    let count = one("_count")?;
    one("_sum")?;
    if count != inf {
        return Err(format!("{name}: _count {count} is not the +Inf bucket's {inf}"));
    }
    Ok(())
}

/// `name{k="v",...} value` (no timestamp).
fn parse_sample(line: &str) -> Result<Sample, String> {
    let (head, value) = line.rsplit_once(' ').ok_or_else(|| format!("'{line}' has no value"))?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().map_err(|_| format!("'{v}' is not a number"))?,
    };
    let (name, labels) = match head.split_once('{') {
        None => (head, Vec::new()),
        Some((name, rest)) => {
            let body =
                rest.strip_suffix('}').ok_or_else(|| format!("'{head}': labels do not end in '}}'"))?;
            (name, parse_labels(body)?)
        }
    };
    if !valid_name(name) {
        return Err(format!("'{name}' is not a metric name"));
    }
    Ok(Sample { name: name.to_string(), labels, value })
}

fn parse_labels(body: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").ok_or_else(|| format!("bad labels '{body}'"))?;
        if !valid_name(key) || key.contains(':') {
            return Err(format!("'{key}' is not a label name"));
        }
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err(format!("unterminated label value in '{body}'")),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    _ => return Err(format!("bad escape in '{body}'")),
                },
                Some((_, c)) => value.push(c),
            }
        };
        out.push((key.to_string(), value));
        rest = &after[end + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.is_empty() {
            return Err(format!("bad labels '{body}'"));
        }
    }
    Ok(out)
}

/// `(name{labels}, value)` of every sample line, without checking
/// families; for a quick look at a scrape.
pub fn parse_samples(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ms;
    impl Buckets for Ms {
        const BOUNDS_SECS: &'static [f64] = &[0.001, 0.01, 0.1];
    }

    #[test]
    fn a_written_scrape_parses_back_with_its_values() {
        let h = Histogram::<Ms>::default();
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(50));
        h.observe(Duration::from_secs(3));
        let mut e = Exposition::new();
        e.counter("x_requests_total", "Requests.", 7).gauge("x_queue", "Queue \\ length\nnow.", 2.5);
        e.family("x_by_route_total", Kind::Counter, "By route.")
            .sample("x_by_route_total", &[("route", "/a\"b\\c\nd"), ("status", "200")], 3)
            .sample("x_by_route_total", &[("route", "/e"), ("status", "404")], 1);
        e.histogram("x_wait_seconds", "Waits.", &h);
        let text = e.finish();
        let s = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(s.families.len(), 4);
        assert_eq!(s.get("x_requests_total"), Some(7.0));
        assert_eq!(s.get("x_queue"), Some(2.5));
        assert_eq!(s.family("x_queue").unwrap().help, "Queue \\\\ length\\nnow.");
        let routes = &s.family("x_by_route_total").unwrap().samples;
        assert_eq!(routes[0].label("route"), Some("/a\"b\\c\nd"));
        assert_eq!(s.get("x_by_route_total{route=\"/e\",status=\"404\"}"), Some(1.0));
        assert_eq!(s.get("x_wait_seconds_bucket{le=\"0.001\"}"), Some(1.0));
        assert_eq!(s.get("x_wait_seconds_bucket{le=\"0.01\"}"), Some(1.0));
        assert_eq!(s.get("x_wait_seconds_bucket{le=\"0.1\"}"), Some(2.0));
        assert_eq!(s.get("x_wait_seconds_bucket{le=\"+Inf\"}"), Some(3.0));
        assert_eq!(s.get("x_wait_seconds_count"), Some(3.0));
        assert!((s.get("x_wait_seconds_sum").unwrap() - 3.0505).abs() < 1e-9);
        assert_eq!(h.cumulative(), vec![1, 1, 2, 3]);
        assert_eq!(parse_samples(&text).len(), s.samples().count());
    }

    #[test]
    #[should_panic(expected = "written twice")]
    fn a_family_is_opened_once() {
        let mut e = Exposition::new();
        e.counter("a_total", "A.", 1).counter("a_total", "A.", 2);
    }

    /// Each rule `parse` checks, broken once.
    #[test]
    fn broken_scrapes_are_refused() {
        let ok = "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n";
        assert!(parse(ok).is_ok());
        let hist = |lines: &str| format!("# HELP h H.\n# TYPE h histogram\n{lines}");
        for (bad, why) in [
            (format!("{ok}{ok}"), "opened twice"),
            ("# TYPE a_total counter\na_total 1\n".to_string(), "without a # HELP"),
            ("# HELP a A.\n# TYPE a counter\na 1\n".to_string(), "end in _total"),
            ("# HELP a_total A.\n# TYPE a_total gauge\na_total 1\n".to_string(), "end in _total"),
            (format!("{ok}b_total 2\n"), "not a sample of a_total"),
            ("# HELP a_total A.\n# TYPE a_total counter\na_total x\n".to_string(), "not a number"),
            ("# HELP a_total A.\n# TYPE a_total counter\n".to_string(), "has no sample"),
            ("a_total 1\n".to_string(), "before any family"),
            (hist("h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"), "not cumulative"),
            (hist("h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"), "do not increase"),
            (hist("h_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"), "no le=\"+Inf\""),
            (hist("h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n"), "is not the +Inf"),
            (hist("h_bucket{le=\"+Inf\"} 1\nh_count 1\n"), "h_sum samples"),
            (format!("{ok}# HELP c_total C.\nc_total 1\n"), "between # HELP and # TYPE"),
            ("# HELP a_total A.\n# TYPE a_total counter\na_total{k=\"v} 1\n".to_string(), "label"),
        ] {
            let e = parse(&bad).expect_err(&bad);
            assert!(e.what.contains(why), "{bad}: {e} (expected '{why}')");
        }
    }
}
