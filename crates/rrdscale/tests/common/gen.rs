//! Seeded generator of differential cases: a random schema (`create`
//! arguments) and a random stream of `update`/`updatev` calls.
//!
//! Owns: the PRNG, the shapes of schemas and update streams, and the
//! generator's *expectation* of whether each call is valid (checked against
//! rrdtool by the harness self-test, so a generator bug shows up as a failed
//! expectation rather than as a false engine failure).
//!
//! Invariants: the same seed always yields the same case (no clock, no global
//! state); every case names its file `t.rrd`; times never use `N` (the
//! differential runs compare two runs made at different moments); valid
//! updates are strictly later than the last applied one by at least 0.1 s, so
//! the float rounding of fractional times cannot reorder them.
//!
//! Deliberately not here: running anything, or knowing rrdtool's arithmetic.
//! The generator only produces inputs; rrdtool is the oracle for outputs.

/// The workspace's test generator (SplitMix64: tiny, seedable, and good
/// enough to pick test shapes); a seed keeps its meaning.
pub use rrd_testkit::Rng;

/// The seed of case `index` of a run seeded with `seed`: cases are
/// independent, so one can be rerun alone.
pub fn case_seed(seed: u64, index: u64) -> u64 {
    Rng::new(seed ^ index.wrapping_mul(0xd6e8_feb8_6659_fd93)).next_u64()
}

/// Earliest and latest `--start` the generator picks: 2000-01-01 and
/// 2030-01-01 UTC.
const START_MIN: i64 = 946_684_800;
const START_MAX: i64 = 1_893_456_000;

#[derive(Clone, Debug, PartialEq)]
pub enum DsKind {
    Gauge,
    Counter,
    Derive,
    Absolute,
    DCounter,
    DDerive,
    /// An RPN expression over earlier data sources.
    Compute(String),
}

impl DsKind {
    pub fn name(&self) -> &'static str {
        match self {
            DsKind::Gauge => "GAUGE",
            DsKind::Counter => "COUNTER",
            DsKind::Derive => "DERIVE",
            DsKind::Absolute => "ABSOLUTE",
            DsKind::DCounter => "DCOUNTER",
            DsKind::DDerive => "DDERIVE",
            DsKind::Compute(_) => "COMPUTE",
        }
    }
}

#[derive(Clone, Debug)]
pub struct DsSpec {
    pub name: String,
    pub kind: DsKind,
    pub heartbeat: String,
    pub heartbeat_secs: u64,
    pub min: String,
    pub max: String,
}

impl DsSpec {
    pub fn arg(&self) -> String {
        match &self.kind {
            DsKind::Compute(rpn) => format!("DS:{}:COMPUTE:{rpn}", self.name),
            k => format!("DS:{}:{}:{}:{}:{}", self.name, k.name(), self.heartbeat, self.min, self.max),
        }
    }

    pub fn takes_value(&self) -> bool {
        !matches!(self.kind, DsKind::Compute(_))
    }
}

#[derive(Clone, Debug)]
pub struct RraSpec {
    pub cf: &'static str,
    pub xff: String,
    /// PDPs per row, and how it is spelled (a count, or a duration like `30m`).
    pub pdp_per_row: u64,
    pub steps_arg: String,
    pub rows: u64,
    pub rows_arg: String,
    /// A Holt-Winters group: the literal `RRA:` arguments of one HWPREDICT
    /// or MHWPREDICT archive and (explicit form) its companions, which
    /// refer to each other by index and so are kept (and shrunk) together.
    /// `cf` is then the predicting archive's CF, `rows` its row count.
    pub hw: Option<Vec<String>>,
}

impl RraSpec {
    pub fn args(&self) -> Vec<String> {
        match &self.hw {
            Some(args) => args.clone(),
            None => vec![format!("RRA:{}:{}:{}:{}", self.cf, self.xff, self.steps_arg, self.rows_arg)],
        }
    }
}

#[derive(Clone, Debug)]
pub struct Schema {
    pub start: i64,
    pub step_secs: u64,
    pub step_arg: String,
    pub start_flag: &'static str,
    pub step_flag: &'static str,
    pub ds: Vec<DsSpec>,
    pub rras: Vec<RraSpec>,
}

impl Schema {
    /// Whether the file has Holt-Winters archives (whose smoothing depends
    /// on the random initial rows, see the harness).
    pub fn has_hw(&self) -> bool {
        self.rras.iter().any(|r| r.hw.is_some())
    }

    /// How many archives the file has (a Holt-Winters group is several).
    pub fn file_rra_count(&self) -> usize {
        self.rras
            .iter()
            .map(|r| match &r.hw {
                Some(args) if args.len() == 1 => 5,
                Some(args) => args.len(),
                None => 1,
            })
            .sum()
    }
}

impl Schema {
    /// Names of the data sources an update gives values for, in file order.
    pub fn input_ds(&self) -> Vec<usize> {
        (0..self.ds.len()).filter(|&i| self.ds[i].takes_value()).collect()
    }

    pub fn cfs(&self) -> Vec<&'static str> {
        let mut cfs: Vec<&'static str> = Vec::new();
        for r in &self.rras {
            if !cfs.contains(&r.cf) {
                cfs.push(r.cf);
            }
        }
        cfs
    }
}

#[derive(Clone, Debug)]
pub struct UpdateCall {
    pub verb: &'static str,
    /// `(flag spelling, DS names)` when the call uses a template.
    pub template: Option<(&'static str, Vec<String>)>,
    pub skip_past: bool,
    /// Options after the file name instead of before (getopt permutes both).
    pub options_last: bool,
    pub entries: Vec<String>,
    /// What the generator meant: false when one entry is deliberately invalid.
    pub expect_ok: bool,
}

impl UpdateCall {
    pub fn args(&self) -> Vec<String> {
        let mut opts = Vec::new();
        if let Some((flag, names)) = &self.template {
            opts.push(flag.to_string());
            opts.push(names.join(":"));
        }
        if self.skip_past {
            opts.push("--skip-past-updates".to_string());
        }
        let mut args = vec![self.verb.to_string()];
        if !self.options_last {
            args.extend(opts.iter().cloned());
        }
        args.push("t.rrd".to_string());
        if self.options_last {
            args.extend(opts);
        }
        args.extend(self.entries.iter().cloned());
        args
    }
}

#[derive(Clone, Debug)]
pub struct Case {
    pub seed: u64,
    pub schema: Schema,
    pub calls: Vec<UpdateCall>,
}

impl Case {
    pub fn create_args(&self) -> Vec<String> {
        let s = &self.schema;
        let mut args = vec![
            "create".to_string(),
            "t.rrd".to_string(),
            s.start_flag.to_string(),
            s.start.to_string(),
            s.step_flag.to_string(),
            s.step_arg.clone(),
        ];
        args.extend(s.ds.iter().map(DsSpec::arg));
        args.extend(s.rras.iter().flat_map(RraSpec::args));
        args
    }

    pub fn generate(seed: u64) -> Case {
        let mut rng = Rng::new(seed);
        let schema = gen_schema(&mut rng);
        let calls = gen_calls(&mut rng, &schema);
        Case { seed, schema, calls }
    }

    /// One line per command, for humans reading a failure.
    pub fn describe(&self) -> String {
        let mut s = format!("create {}\n", self.create_args()[1..].join(" "));
        for c in &self.calls {
            s.push_str(&c.args().join(" "));
            s.push('\n');
        }
        s
    }

    pub fn update_count(&self) -> usize {
        self.calls.iter().map(|c| c.entries.len()).sum()
    }
}

/// Spells `secs` as rrdtool's duration syntax when it divides evenly.
fn duration_spelling(rng: &mut Rng, secs: u64) -> Option<String> {
    let units: &[(u64, &str)] = &[(86_400, "d"), (3_600, "h"), (60, "m"), (1, "s")];
    let fitting: Vec<&(u64, &str)> = units.iter().filter(|(u, _)| secs.is_multiple_of(*u)).collect();
    if fitting.is_empty() {
        return None;
    }
    let (u, suffix) = rng.pick(&fitting);
    Some(format!("{}{suffix}", secs / u))
}

fn gen_step(rng: &mut Rng) -> u64 {
    match rng.below(10) {
        0 => 1,
        1 => rng.range(2, 10) as u64,
        2 => 60,
        3 | 4 => 300,
        5 => 3_600,
        6 => 86_400,
        7 => rng.range(1, 86_400) as u64,
        _ => rng.range(1, 1_000) as u64,
    }
}

fn gen_heartbeat(rng: &mut Rng, step: u64) -> u64 {
    match rng.below(6) {
        0 if step > 1 => rng.range(1, step as i64 - 1) as u64,
        1 => step,
        2 | 3 => 2 * step,
        _ => step * rng.range(1, 10) as u64 + rng.below(step),
    }
}

fn gen_limits(rng: &mut Rng, kind: &DsKind) -> (String, String) {
    match rng.below(6) {
        0..=2 => ("U".into(), "U".into()),
        3 => ("0".into(), "U".into()),
        4 => {
            let max = match kind {
                DsKind::Counter | DsKind::Derive | DsKind::DCounter | DsKind::DDerive => {
                    rng.pick(&["100", "1000", "1e6", "4294967296"]).to_string()
                }
                _ => rng.pick(&["100", "1000", "500.5", "1e5"]).to_string(),
            };
            ("U".into(), max)
        }
        _ => {
            let lo = rng.range(-1000, 100);
            let hi = lo + rng.range(1, 100_000);
            (lo.to_string(), hi.to_string())
        }
    }
}

fn gen_compute(rng: &mut Rng, earlier: &[String]) -> String {
    let a = rng.pick(earlier).clone();
    let b = rng.pick(earlier).clone();
    let forms = [
        format!("{a},{b},+"),
        format!("{a},2,*"),
        format!("{a},{b},-"),
        format!("{a},{b},MAX"),
        format!("{a},{b},MIN"),
        format!("{a},1000,/"),
        format!("{a},0,LT,0,{a},IF"),
        format!("{a},{b},ADDNAN"),
        format!("{a},UN,0,{a},IF"),
        format!("{a},{b},-,ABS"),
        format!("{a},3,%"),
        format!("{a},8,*,{b},+"),
    ];
    rng.pick(&forms).clone()
}

fn gen_schema(rng: &mut Rng) -> Schema {
    let step_secs = gen_step(rng);
    let step_arg = if rng.chance(0.2) {
        duration_spelling(rng, step_secs).unwrap_or_else(|| step_secs.to_string())
    } else {
        step_secs.to_string()
    };
    let start = rng.range(START_MIN, START_MAX);

    let ds_count = rng.range(1, 5) as usize;
    let pool = ["a", "b", "c", "d", "e", "in", "out", "x_1", "Load5", "ifHCInOctets"];
    let mut names: Vec<String> = Vec::new();
    while names.len() < ds_count {
        let n = rng.pick(&pool).to_string();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let mut ds = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let input_so_far = ds.iter().any(|d: &DsSpec| d.takes_value());
        let kind = match rng.below(14) {
            _ if i == 0 || !input_so_far => gen_input_kind(rng),
            0 | 1 => DsKind::Compute(gen_compute(rng, &names[..i])),
            _ => gen_input_kind(rng),
        };
        let heartbeat_secs = gen_heartbeat(rng, step_secs);
        let heartbeat = if rng.chance(0.1) { duration_spelling(rng, heartbeat_secs) } else { None }
            .unwrap_or(heartbeat_secs.to_string());
        let (min, max) = gen_limits(rng, &kind);
        ds.push(DsSpec { name: name.clone(), kind, heartbeat, heartbeat_secs, min, max });
    }

    let rra_count = rng.range(1, 6) as usize;
    let mut rras = Vec::new();
    for _ in 0..rra_count {
        let cf = *rng.pick(&["AVERAGE", "MIN", "MAX", "LAST"]);
        let xff = match rng.below(5) {
            0 => "0".to_string(),
            1 => "0.99".to_string(),
            2 => "0.5".to_string(),
            _ => format!("{:.2}", rng.below(100) as f64 / 100.0),
        };
        let pdp_per_row = match rng.below(3) {
            0 => 1,
            _ => rng.range(1, 30) as u64,
        };
        let rows = rng.range(1, 50) as u64;
        let mut steps_arg = pdp_per_row.to_string();
        let mut rows_arg = rows.to_string();
        if rng.chance(0.1) {
            if let Some(d) = duration_spelling(rng, pdp_per_row * step_secs) {
                steps_arg = d;
                if rng.chance(0.5) {
                    if let Some(r) = duration_spelling(rng, rows * pdp_per_row * step_secs) {
                        rows_arg = r;
                    }
                }
            }
        }
        rras.push(RraSpec { cf, xff, pdp_per_row, steps_arg, rows, rows_arg, hw: None });
    }
    // A share of the schemas get a Holt-Winters group, first or last, with
    // short seasonal periods so that wraps, burn-in and smoothing happen
    // within a case.
    if rng.chance(0.3) {
        let base = if rng.chance(0.5) { 0 } else { rras.len() };
        let group = gen_hw_group(rng, base);
        rras.insert(base, group);
    }

    Schema {
        start,
        step_secs,
        step_arg,
        start_flag: ["-b", "--start"][rng.below(2) as usize],
        step_flag: ["-s", "--step"][rng.below(2) as usize],
        ds,
        rras,
    }
}

/// One HWPREDICT or MHWPREDICT archive with its companions, implicit
/// (`create` adds SEASONAL, DEVSEASONAL, DEVPREDICT and FAILURES) or
/// explicit (a random subset and order, cross-referenced by 1-based index;
/// `base` archives come before the group).
fn gen_hw_group(rng: &mut Rng, base: usize) -> RraSpec {
    let cf = *rng.pick(&["HWPREDICT", "MHWPREDICT"]);
    let period = rng.range(2, 7) as u64;
    let rows = rng.range(period as i64, 30) as u64;
    let frac = |rng: &mut Rng| format!("{:.2}", rng.range(1, 99) as f64 / 100.0);
    let (alpha, beta) = (frac(rng), frac(rng));
    let args = if rng.chance(0.4) {
        vec![format!("RRA:{cf}:{rows}:{alpha}:{beta}:{period}")]
    } else {
        // Which companions: SEASONAL always; DEVSEASONAL, then DEVPREDICT
        // and FAILURES (which need it) each maybe.
        let mut kinds = vec!["HW", "SEASONAL"];
        if rng.chance(0.8) {
            kinds.push("DEVSEASONAL");
            if rng.chance(0.7) {
                kinds.push("DEVPREDICT");
            }
            if rng.chance(0.7) {
                kinds.push("FAILURES");
            }
        }
        rng.shuffle(&mut kinds);
        let idx = |k: &str| base + kinds.iter().position(|x| *x == k).expect("kind present") + 1;
        let smoothing = |rng: &mut Rng| {
            if rng.chance(0.7) {
                format!(":smoothing-window={}", rng.pick(&["0.5", "0.8", "1", "0.34", "0.05"]))
            } else {
                String::new()
            }
        };
        let mut args = Vec::new();
        for k in &kinds {
            args.push(match *k {
                "HW" => format!("RRA:{cf}:{rows}:{alpha}:{beta}:{period}:{}", idx("SEASONAL")),
                "SEASONAL" | "DEVSEASONAL" => {
                    format!("RRA:{k}:{period}:{}:{}{}", frac(rng), idx("HW"), smoothing(rng))
                }
                "DEVPREDICT" => format!("RRA:DEVPREDICT:{rows}:{}", idx("DEVSEASONAL")),
                _ => {
                    let window = rng.range(1, 9);
                    let threshold = rng.range(1, window);
                    format!("RRA:FAILURES:{rows}:{threshold}:{window}:{}", idx("DEVSEASONAL"))
                }
            });
        }
        args
    };
    RraSpec {
        cf,
        xff: String::new(),
        pdp_per_row: 1,
        steps_arg: "1".to_string(),
        rows,
        rows_arg: rows.to_string(),
        hw: Some(args),
    }
}

fn gen_input_kind(rng: &mut Rng) -> DsKind {
    match rng.below(9) {
        0..=2 => DsKind::Gauge,
        3 | 4 => DsKind::Counter,
        5 => DsKind::Derive,
        6 => DsKind::Absolute,
        7 => DsKind::DCounter,
        _ => DsKind::DDerive,
    }
}

/// Where a counter's values live, so that wraps at 2^32 and 2^64 happen.
#[derive(Clone, Copy, Debug)]
enum CounterMode {
    Small,
    Wrap32,
    Wrap64,
}

/// The running value of one input data source.
#[derive(Clone, Debug)]
struct DsState {
    kind: DsKind,
    mode: CounterMode,
    int: u128,
    signed: i64,
    float: f64,
}

const TWO_32: u128 = 1 << 32;
const TWO_64: u128 = 1 << 64;

impl DsState {
    fn new(rng: &mut Rng, kind: DsKind) -> DsState {
        let mode =
            *rng.pick(&[CounterMode::Small, CounterMode::Small, CounterMode::Wrap32, CounterMode::Wrap64]);
        let int = match mode {
            CounterMode::Small => rng.below(1000) as u128,
            CounterMode::Wrap32 => TWO_32 - 1 - rng.below(1_000_000) as u128,
            CounterMode::Wrap64 => TWO_64 - 1 - rng.below(1_000_000_000) as u128,
        };
        DsState { kind, mode, int, signed: rng.range(-1000, 1000), float: rng.unit() * 100.0 }
    }

    fn next_value(&mut self, rng: &mut Rng) -> String {
        if rng.chance(0.06) {
            return "U".to_string();
        }
        match self.kind {
            DsKind::Gauge => random_number(rng),
            DsKind::Counter => {
                let inc = match self.mode {
                    CounterMode::Small => rng.below(10_000) as u128,
                    CounterMode::Wrap32 => rng.below(200_000) as u128,
                    CounterMode::Wrap64 => rng.below(400_000_000) as u128,
                };
                self.int += inc;
                match self.mode {
                    CounterMode::Small if rng.chance(0.03) => self.int = rng.below(100) as u128,
                    CounterMode::Small => {}
                    CounterMode::Wrap32 => self.int %= TWO_32,
                    CounterMode::Wrap64 => self.int %= TWO_64,
                }
                self.int.to_string()
            }
            DsKind::Derive => {
                self.signed = self.signed.saturating_add(rng.range(-5_000, 20_000));
                self.signed.to_string()
            }
            DsKind::Absolute => {
                if rng.chance(0.3) {
                    format!("{:.2}", rng.unit() * 5000.0)
                } else {
                    rng.below(100_000).to_string()
                }
            }
            DsKind::DCounter => {
                // Mostly increasing; a decrease now and then (a reset).
                if rng.chance(0.05) {
                    self.float = rng.unit() * 10.0;
                } else {
                    self.float += rng.unit() * 1000.0;
                }
                format!("{:.3}", self.float)
            }
            DsKind::DDerive => {
                self.float += (rng.unit() - 0.3) * 500.0;
                format!("{:.4}", self.float)
            }
            DsKind::Compute(_) => unreachable!("COMPUTE data sources take no value"),
        }
    }
}

/// A float or integer in one of the spellings strtod accepts.
fn random_number(rng: &mut Rng) -> String {
    let x = (rng.unit() - 0.3) * 10f64.powi(rng.range(-3, 7) as i32);
    match rng.below(6) {
        0 => (x as i64).to_string(),
        1 => format!("{x:.1}"),
        2 => format!("{x:.6}"),
        3 => format!("{x:e}"),
        4 => format!("{}", rng.range(-100, 100)),
        _ => format!("{x}"),
    }
}

/// Microseconds, so that fractional times order exactly in the generator.
type Micros = i64;
const SEC: Micros = 1_000_000;

fn format_time(t: Micros) -> String {
    let (s, us) = (t.div_euclid(SEC), t.rem_euclid(SEC));
    if us == 0 {
        s.to_string()
    } else {
        let frac = format!("{us:06}");
        format!("{s}.{}", frac.trim_end_matches('0'))
    }
}

/// Fractions of a second used for fractional times. Most are exact in
/// binary; .1, .3 and .9 exercise rrdtool's float-to-usec truncation.
const FRACTIONS: [Micros; 8] = [500_000, 250_000, 750_000, 125_000, 100_000, 300_000, 900_000, 62_500];

fn next_gap_secs(rng: &mut Rng, schema: &Schema, heartbeat: u64) -> i64 {
    let step = schema.step_secs as i64;
    let span = schema.rras.iter().map(|r| r.pdp_per_row * r.rows).max().unwrap_or(1) as i64 * step;
    let g = match rng.below(100) {
        0..=24 if step > 1 => rng.range(1, step - 1),
        0..=49 => step * rng.range(1, 3),
        50..=74 => rng.range(1, 3 * step),
        75..=84 => (heartbeat as i64 + rng.range(-2, 2)).max(1),
        85..=94 => heartbeat as i64 * rng.range(2, 5) + rng.below(step as u64) as i64,
        // A huge gap: the catch-up walks over every row of the largest RRA.
        _ => (span * rng.range(1, 3) + rng.below(step as u64) as i64).min(200_000_000),
    };
    g.max(1)
}

enum Invalid {
    TimeNotAfterLast,
    ExtraValue,
    MissingValue,
    NonNumeric,
}

// A generator whose kinds of call are one flat match.
#[allow(clippy::too_many_lines)]
fn gen_calls(rng: &mut Rng, schema: &Schema) -> Vec<UpdateCall> {
    let inputs = schema.input_ds();
    let mut states: Vec<DsState> =
        inputs.iter().map(|&i| DsState::new(rng, schema.ds[i].kind.clone())).collect();
    let heartbeat = schema
        .ds
        .iter()
        .filter(|d| d.takes_value())
        .map(|d| d.heartbeat_secs)
        .min()
        .unwrap_or(schema.step_secs * 2);

    // Typical entries per call: one-by-one streams and batched ones.
    let batch = *rng.pick(&[1usize, 3, 8, 20, 50]);
    let total = if rng.chance(0.25) { rng.range(1, 300) } else { rng.range(1, 60) } as usize;
    // Each call costs two process starts (rrdtool's ~10 ms dominates the
    // run time), so one-by-one streams are kept shorter.
    let total = total.min(30 * batch);

    let mut last: Micros = schema.start * SEC;
    let mut calls = Vec::new();
    let mut made = 0;
    while made < total {
        let n = rng.range(1, batch as i64) as usize;
        let n = n.min(total - made);
        let verb = if rng.chance(0.3) { "updatev" } else { "update" };
        let template = if !inputs.is_empty() && rng.chance(0.2) {
            let mut order: Vec<usize> = (0..inputs.len()).collect();
            rng.shuffle(&mut order);
            let keep = rng.range(1, order.len() as i64) as usize;
            order.truncate(keep);
            Some(order)
        } else {
            None
        };
        let skip_past = rng.chance(0.04);
        let invalid_at = if rng.chance(0.07) { Some(rng.below(n as u64) as usize) } else { None };

        let mut entries = Vec::new();
        let mut expect_ok = true;
        for k in 0..n {
            let gap = next_gap_secs(rng, schema, heartbeat);
            let frac = if rng.chance(0.12) { *rng.pick(&FRACTIONS) } else { 0 };
            let mut t = (last.div_euclid(SEC) + gap) * SEC + frac;
            // Now and then a later fraction within the same second.
            if rng.chance(0.03) && last.rem_euclid(SEC) < 400_000 {
                t = last.div_euclid(SEC) * SEC + 900_000;
            }
            let all_values: Vec<String> = states.iter_mut().map(|s| s.next_value(rng)).collect();
            let mut values: Vec<String> = match &template {
                Some(order) => order.iter().map(|&j| all_values[j].clone()).collect(),
                None => all_values,
            };
            let value_order: Vec<usize> = match &template {
                Some(order) => order.clone(),
                None => (0..states.len()).collect(),
            };
            let value_kinds: Vec<DsKind> = value_order.iter().map(|&j| states[j].kind.clone()).collect();
            let value_heartbeats: Vec<u64> =
                value_order.iter().map(|&j| schema.ds[inputs[j]].heartbeat_secs).collect();

            if invalid_at == Some(k) {
                // DCOUNTER and DDERIVE parse a value only when the previous
                // one was known, which the generator does not track; so a
                // non-numeric value goes to a DS of another type.
                let parsed_always: Vec<usize> = (0..values.len())
                    .filter(|&i| !matches!(value_kinds[i], DsKind::DCounter | DsKind::DDerive))
                    .collect();
                let kind = match rng.below(4) {
                    0 => Invalid::TimeNotAfterLast,
                    1 => Invalid::ExtraValue,
                    2 if !values.is_empty() => Invalid::MissingValue,
                    _ if !parsed_always.is_empty() => Invalid::NonNumeric,
                    _ => Invalid::ExtraValue,
                };
                match kind {
                    Invalid::TimeNotAfterLast => {
                        t = if rng.chance(0.5) || last <= schema.start * SEC + SEC {
                            last
                        } else {
                            last - rng.range(1, 1000) * SEC
                        };
                        if !skip_past {
                            expect_ok = false;
                        }
                    }
                    Invalid::ExtraValue => {
                        values.push(rng.range(0, 9).to_string());
                        expect_ok = false;
                    }
                    Invalid::MissingValue => {
                        values.pop();
                        expect_ok = false;
                    }
                    Invalid::NonNumeric => {
                        let i = *rng.pick(&parsed_always);
                        // rrdtool parses a value only when the interval is
                        // within the DS's heartbeat (else it is unknown
                        // unread), so keep this entry within it.
                        let hb = value_heartbeats[i].max(1) as i64;
                        t = (last.div_euclid(SEC) + rng.range(1, hb)) * SEC;
                        // COUNTER and DERIVE only check characters after the
                        // first for digits and '-': "--" would pass.
                        let integer_only = matches!(value_kinds[i], DsKind::Counter | DsKind::Derive);
                        values[i] = if integer_only {
                            rng.pick(&["1.5", "abc", "1x"]).to_string()
                        } else {
                            rng.pick(&["abc", "1x", "0x1g", "--"]).to_string()
                        };
                        expect_ok = false;
                    }
                }
                let mut e = format_time(t);
                for v in &values {
                    e.push(':');
                    e.push_str(v);
                }
                entries.push(e);
                continue;
            }

            let mut e = format_time(t);
            for v in &values {
                e.push(':');
                e.push_str(v);
            }
            entries.push(e);
            // rrdtool stops at the first bad entry, so the valid entries
            // after it in this call are never applied and `last` stays.
            if expect_ok {
                last = t;
            }
        }
        made += n;
        let template = template.map(|order| {
            let names = order.iter().map(|&j| schema.ds[inputs[j]].name.clone()).collect();
            (*rng.pick(&["-t", "--template"]), names)
        });
        calls.push(UpdateCall {
            verb,
            template,
            skip_past,
            options_last: rng.chance(0.2),
            entries,
            expect_ok,
        });
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_case() {
        assert_eq!(Case::generate(7).describe(), Case::generate(7).describe());
        assert_ne!(Case::generate(7).describe(), Case::generate(8).describe());
    }
}
