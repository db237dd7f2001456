//! The file schemas the benchmarks create, the values they feed them, and
//! which consolidations a step fires.
//!
//! Owns: the named schemas of the seeds (perftest, MRTG, GrowthForecast),
//! parsing an arbitrary `create` line into a schema, the deterministic
//! update values (the same on every side of a comparison, so the files stay
//! byte-identical and can be checked against each other afterwards), and
//! the "which archives' periods ended" rule perftest prints per pass.
//!
//! Deliberately absent: validating DS/RRA definitions. The engine's
//! `create` (and librrd's) does that, and its error is the one reported.

use serde::{Deserialize, Serialize};

use crate::BenchError;
use rrd_engine::schemas::{self, owned};

/// What kind of number a data source is fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ValueKind {
    /// A reading (GAUGE, ABSOLUTE, DCOUNTER...): random in [0, 1000).
    Reading,
    /// A counter (COUNTER, DERIVE): grows from one step to the next, so
    /// rates are positive and no wrap is ever assumed.
    Counter,
}

/// A file's definitions, as `rrdtool create` takes them after the options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    /// `perftest`, `mrtg`, `growthforecast`, or `custom`.
    pub name: String,
    pub step_secs: u64,
    /// `DS:…` and `RRA:…` definitions, in order.
    pub defs: Vec<String>,
    /// One entry per data source that takes a value (COMPUTE takes none).
    pub values: Vec<ValueKind>,
    /// Steps per row of each archive, in file order.
    pub rra_pdp_counts: Vec<u64>,
}

/// Names accepted by `--schema` besides a create line.
pub const NAMED: [&str; 3] = ["perftest", "mrtg", "growthforecast"];

/// RRDtool's performance tester (perftest) ([`schemas::PERFTEST`]).
pub fn perftest() -> Vec<String> {
    owned(schemas::PERFTEST)
}

/// MRTG's default with `Interval 5` ([`schemas::MRTG`]).
pub fn mrtg() -> Vec<String> {
    owned(schemas::MRTG)
}

/// GrowthForecast's files ([`schemas::GROWTHFORECAST`]).
pub fn growthforecast() -> Vec<String> {
    owned(schemas::GROWTHFORECAST)
}

impl Schema {
    /// A named schema, or a create line such as
    /// `-s 60 DS:a:GAUGE:120:U:U RRA:AVERAGE:0.5:1:100` (options `-s`/`--step`
    /// are honoured; `-b`/`--start` is ignored because the bench sets the
    /// start time; a leading `create FILE` is skipped).
    pub fn parse(spec: &str) -> Result<Schema, BenchError> {
        let (name, step_secs, defs) = match spec {
            "perftest" => ("perftest", 300, perftest()),
            "mrtg" => ("mrtg", 300, mrtg()),
            "growthforecast" => ("growthforecast", 300, growthforecast()),
            line => {
                let (step, defs) = parse_create_line(line)?;
                ("custom", step, defs)
            }
        };
        Schema::from_defs(name, step_secs, defs)
    }

    fn from_defs(name: &str, step_secs: u64, defs: Vec<String>) -> Result<Schema, BenchError> {
        let mut values = Vec::new();
        let mut rra_pdp_counts = Vec::new();
        for def in &defs {
            let fields: Vec<&str> = def.split(':').collect();
            match fields.first().copied() {
                Some("DS") => {
                    let dst = fields.get(2).copied().unwrap_or("");
                    match dst {
                        "COMPUTE" => {}
                        "COUNTER" | "DERIVE" | "DCOUNTER" | "DDERIVE" => values.push(ValueKind::Counter),
                        _ => values.push(ValueKind::Reading),
                    }
                }
                Some("RRA") => {
                    // RRA:CF:xff:steps:rows for the consolidation functions
                    // the benchmarks use; Holt-Winters archives consolidate
                    // every step.
                    let steps = match fields.get(1).copied() {
                        Some("AVERAGE" | "MIN" | "MAX" | "LAST") => {
                            fields.get(3).and_then(|s| s.parse().ok())
                        }
                        _ => Some(1),
                    };
                    let steps = steps.ok_or_else(|| {
                        BenchError::Invalid(format!("the archive definition '{def}' has no step count"))
                    })?;
                    rra_pdp_counts.push(steps);
                }
                _ => {
                    return Err(BenchError::Invalid(format!("'{def}' is neither a DS nor an RRA definition")))
                }
            }
        }
        if values.is_empty() {
            return Err(BenchError::Invalid("the schema has no data source that takes a value".into()));
        }
        if rra_pdp_counts.is_empty() {
            return Err(BenchError::Invalid("the schema has no archive (RRA)".into()));
        }
        if step_secs == 0 {
            return Err(BenchError::Invalid("the step must be at least one second".into()));
        }
        Ok(Schema { name: name.to_string(), step_secs, defs, values, rra_pdp_counts })
    }

    /// The value string of an update of file `file` at time `time`: the
    /// same on every side of a comparison, so files updated by different
    /// tools stay equal.
    pub fn update_arg(&self, file: u64, time: i64) -> String {
        let mut buf = Vec::with_capacity(16 + 12 * self.values.len());
        self.push_update_arg(&mut buf, file, time);
        String::from_utf8(buf).expect("digits, dots and colons")
    }

    /// Appends [`Schema::update_arg`] to `buf` (no allocation once `buf`
    /// has room: for clients that format a request per reply).
    pub fn push_update_arg(&self, buf: &mut Vec<u8>, file: u64, time: i64) {
        use std::io::Write as _;
        let _ = write!(buf, "{time}");
        for (i, kind) in self.values.iter().enumerate() {
            let r = mix(file, time as u64, i as u64);
            let _ = match kind {
                ValueKind::Reading => {
                    let thousandths = r % 1_000_000;
                    write!(buf, ":{}.{:03}", thousandths / 1000, thousandths % 1000)
                }
                // rrdtool takes only integers for counters. Grows by 1000 to
                // 1999 per step: positive rates, never a wrap.
                ValueKind::Counter => {
                    let v = (time.max(0) as u64 / self.step_secs) * 2000 + r % 1000;
                    write!(buf, ":{v}")
                }
            };
        }
    }

    /// The distinct steps-per-row of the archives whose consolidation period
    /// ends in `(prev_time, time]`, smallest first: the archives that get a
    /// row written by an update at `time` after one at `prev_time`.
    pub fn consolidations(&self, prev_time: i64, time: i64) -> Vec<u64> {
        let mut fired: Vec<u64> = self
            .rra_pdp_counts
            .iter()
            .copied()
            .filter(|&steps| {
                let period = (steps * self.step_secs) as i64;
                time.div_euclid(period) > prev_time.div_euclid(period)
            })
            .collect();
        fired.sort_unstable();
        fired.dedup();
        fired
    }

    /// The distinct steps-per-row of all archives, smallest first.
    pub fn pdp_counts(&self) -> Vec<u64> {
        let mut all = self.rra_pdp_counts.clone();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The schema as `--schema` takes it (a name, or the create line).
    pub fn spec(&self) -> String {
        if NAMED.contains(&self.name.as_str()) {
            self.name.clone()
        } else {
            format!("-s {} {}", self.step_secs, self.defs.join(" "))
        }
    }
}

/// Splits a create line into the step and the definitions.
fn parse_create_line(line: &str) -> Result<(u64, Vec<String>), BenchError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut step = 300u64;
    let mut defs = Vec::new();
    let mut i = 0;
    if words.first() == Some(&"create") {
        i = 2;
    }
    let bad_step =
        |s: &str| BenchError::Invalid(format!("the step '{s}' of the create line is not a number"));
    while i < words.len() {
        let w = words[i];
        if w == "-s" || w == "--step" {
            let v = words.get(i + 1).ok_or_else(|| bad_step(""))?;
            step = v.parse().map_err(|_| bad_step(v))?;
            i += 2;
        } else if let Some(v) = w.strip_prefix("--step=") {
            step = v.parse().map_err(|_| bad_step(v))?;
            i += 1;
        } else if let Some(v) = w.strip_prefix("-s").filter(|v| !v.is_empty()) {
            step = v.parse().map_err(|_| bad_step(v))?;
            i += 1;
        } else if w == "-b" || w == "--start" {
            i += 2;
        } else if w.starts_with("--start=") || (w.starts_with("-b") && w.len() > 2) || w == "-O" {
            i += 1;
        } else if w.starts_with("DS:") || w.starts_with("RRA:") {
            defs.push(w.to_string());
            i += 1;
        } else {
            return Err(BenchError::Invalid(format!(
                "'{w}' in the schema is not a known schema name ({}) nor part of a create line",
                NAMED.join(", ")
            )));
        }
    }
    Ok((step, defs))
}

/// A well-mixed 64-bit hash of three numbers (splitmix64 finaliser), so
/// values look random but every side computes the same ones.
fn mix(a: u64, b: u64, c: u64) -> u64 {
    let mut z =
        a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.rotate_left(21) ^ c.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_schemas_parse() {
        let p = Schema::parse("perftest").unwrap();
        assert_eq!(p.values, vec![ValueKind::Reading; 2]);
        assert_eq!(p.rra_pdp_counts, vec![1, 6, 6, 24, 24, 144, 144]);
        assert_eq!(p.pdp_counts(), vec![1, 6, 24, 144]);
        let m = Schema::parse("mrtg").unwrap();
        assert_eq!(m.values, vec![ValueKind::Counter; 2]);
        assert_eq!(m.pdp_counts(), vec![1, 6, 24, 288]);
        assert_eq!(Schema::parse("growthforecast").unwrap().defs.len(), 10);
    }

    #[test]
    fn create_line_gives_step_and_defs() {
        let s =
            Schema::parse("create x.rrd -b 5 -s 60 DS:a:GAUGE:120:U:U DS:c:COMPUTE:a,2,* RRA:MAX:0.5:5:10")
                .unwrap();
        assert_eq!(s.name, "custom");
        assert_eq!(s.step_secs, 60);
        assert_eq!(s.values, vec![ValueKind::Reading]);
        assert_eq!(s.rra_pdp_counts, vec![5]);
        assert_eq!(Schema::parse(&s.spec()).unwrap(), s);
        assert!(Schema::parse("nonsense").is_err());
        assert!(Schema::parse("-s 60 DS:a:GAUGE:120:U:U").is_err());
        assert!(Schema::parse("-s x DS:a:GAUGE:120:U:U RRA:MAX:0.5:5:10").is_err());
    }

    #[test]
    fn values_are_deterministic_and_counters_grow() {
        let p = Schema::parse("perftest").unwrap();
        assert_eq!(p.update_arg(7, 1_700_000_100), p.update_arg(7, 1_700_000_100));
        assert_ne!(p.update_arg(7, 1_700_000_100), p.update_arg(8, 1_700_000_100));
        let arg = p.update_arg(7, 1_700_000_100);
        let parts: Vec<&str> = arg.split(':').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], "1700000100");
        assert!(parts[1].parse::<f64>().unwrap() < 1000.0);
        let m = Schema::parse("mrtg").unwrap();
        let v = |t: i64| m.update_arg(3, t).split(':').nth(1).unwrap().parse::<f64>().unwrap();
        assert!(v(1_700_000_400) > v(1_700_000_100));
    }

    #[test]
    fn consolidations_follow_period_ends() {
        let p = Schema::parse("perftest").unwrap();
        // 1_700_006_400 is a UTC midnight: every period ends there.
        assert_eq!(p.consolidations(1_700_006_100, 1_700_006_400), vec![1, 6, 24, 144]);
        assert_eq!(p.consolidations(1_700_006_400, 1_700_006_700), vec![1]);
        assert_eq!(p.consolidations(1_700_006_400 + 1500, 1_700_006_400 + 1800), vec![1, 6]);
        assert_eq!(p.consolidations(1_700_006_400, 1_700_006_401), Vec::<u64>::new());
    }
}
