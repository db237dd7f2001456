//! `RRA:` definitions as `rrdtool create` and `rrdtool tune` parse them
//! (`parseRRA`), classic and Holt-Winters, and the archives a Holt-Winters
//! definition brings along; one copy for both commands.

use rrd_format::{
    Cf, Name, Par, RraDef, RRA_CDP_XFF_VAL, RRA_DELTA_NEG, RRA_DELTA_POS, RRA_DEPENDENT_RRA_IDX,
    RRA_FAILURE_THRESHOLD, RRA_HW_ALPHA, RRA_HW_BETA, RRA_SEASONAL_GAMMA, RRA_SEASONAL_SMOOTHING_WINDOW,
    RRA_SEASONAL_SMOOTH_IDX, RRA_WINDOW_LEN,
};

use crate::error::{Error, Result};
use crate::numparse::{self, is_c_space};
use rrd_lang::cscan;

/// Largest failure window (`MAX_FAILURES_WINDOW_LEN`, one copy: `hw`'s).
pub(crate) const MAX_FAILURES_WINDOW_LEN: u64 = crate::hw::MAX_FAILURES_WINDOW_LEN as u64;
/// `RRA_period`: the seasonal period of a HWPREDICT archive while parsing
/// (the slot later holds the smoothing index of seasonal archives).
const RRA_PERIOD: usize = 4;

fn err(msg: impl Into<String>) -> Error {
    Error::invalid(msg)
}

/// Whether `v` is outside [0, 1] (`closed`) or (0, 1), as C's comparisons
/// decide it: NaN compares false, so it is never outside (and rrdtool
/// accepts it), which `RangeInclusive::contains` would get wrong.
#[allow(clippy::manual_range_contains)]
pub(crate) fn outside_unit(v: f64, closed: bool) -> bool {
    if closed {
        v < 0.0 || v > 1.0
    } else {
        v <= 0.0 || v >= 1.0
    }
}

/// Parses an `RRA:` argument of `tune` or `create` (all CFs, Holt-Winters
/// included); `require_version` records the version the archive needs.
pub(crate) fn parse_rra_def(
    def: &str,
    step_secs: u64,
    hash: u64,
    require_version: &mut Option<u8>,
) -> Result<RraDef> {
    let tokens: Vec<&str> = def[4..].split(':').filter(|t| !t.is_empty()).collect();
    let cf = tokens.first().and_then(|t| cscan::upper(t)).and_then(|(name, _)| Cf::parse(name));
    match cf {
        Some(cf) if !cf.is_classic() => parse_hw_rra(cf, &tokens, step_secs, hash, require_version),
        _ => parse_rra(def, step_secs),
    }
}

/// The Holt-Winters part of `parseRRA`.
// A flat parse of the Holt-Winters fields, in RRDtool's order and wording.
#[allow(clippy::too_many_lines)]
fn parse_hw_rra(
    cf: Cf,
    tokens: &[&str],
    step_secs: u64,
    hash: u64,
    require_version: &mut Option<u8>,
) -> Result<RraDef> {
    let mut par: Par = [0; 10];
    let mut row_count = 0u64;
    let token_min;
    let set_f = |par: &mut Par, slot: usize, v: f64| par[slot] = v.to_bits();
    match cf {
        Cf::HwPredict | Cf::MhwPredict => {
            if cf == Cf::MhwPredict {
                require_at_least(require_version, 4);
            }
            token_min = 5;
            set_f(&mut par, RRA_HW_ALPHA, 0.1);
            set_f(&mut par, RRA_HW_BETA, 1.0 / 288.0);
            par[RRA_DEPENDENT_RRA_IDX] = i32::MAX as u64;
        }
        Cf::Seasonal | Cf::DevSeasonal => {
            token_min = if cf == Cf::Seasonal { 4 } else { 3 };
            set_f(&mut par, RRA_SEASONAL_GAMMA, 0.1);
            set_f(&mut par, RRA_SEASONAL_SMOOTHING_WINDOW, 0.05);
            par[RRA_DEPENDENT_RRA_IDX] = u64::MAX;
        }
        Cf::DevPredict => {
            token_min = 3;
            par[RRA_DEPENDENT_RRA_IDX] = u64::MAX;
        }
        _ => {
            token_min = 5;
            set_f(&mut par, RRA_DELTA_POS, 2.0);
            set_f(&mut par, RRA_DELTA_NEG, 2.0);
            par[RRA_WINDOW_LEN] = 3;
            par[RRA_FAILURE_THRESHOLD] = 2;
            par[RRA_DEPENDENT_RRA_IDX] = u64::MAX;
        }
    }
    let index_arg = |t: &str| i64::from(numparse::atoi(t).wrapping_sub(1)) as u64;
    let fraction = |t: &str, lo_open: bool, what: &str| -> Result<f64> {
        let (status, v) = cscan::strtodbl(t);
        if status != 2 || outside_unit(v, !lo_open) {
            return Err(err(format!("Invalid {what}: must be between 0 and 1")));
        }
        Ok(v)
    };
    for (i, token) in tokens.iter().enumerate() {
        match (i, cf) {
            (0, _) => {}
            (1, _) => {
                row_count = numparse::scaled_duration(token, step_secs)
                    .map_err(|e| err(format!("Invalid row count {token}: {e}")))?;
            }
            (2, Cf::HwPredict | Cf::MhwPredict) => {
                set_f(&mut par, RRA_HW_ALPHA, fraction(token, true, "alpha")?)
            }
            (2, Cf::Seasonal | Cf::DevSeasonal) => {
                set_f(&mut par, RRA_SEASONAL_GAMMA, fraction(token, true, "gamma")?);
                par[RRA_SEASONAL_SMOOTH_IDX] = if row_count == 0 { 0 } else { hash % row_count };
            }
            (2, Cf::Failures) => {
                let n = numparse::atoi(token);
                par[RRA_FAILURE_THRESHOLD] = i64::from(n) as u64;
                if !(1..=MAX_FAILURES_WINDOW_LEN as i32).contains(&n) {
                    return Err(err(format!(
                        "Failure threshold is out of range 1, {MAX_FAILURES_WINDOW_LEN}"
                    )));
                }
            }
            (2, _) => par[RRA_DEPENDENT_RRA_IDX] = index_arg(token),
            (3, Cf::HwPredict | Cf::MhwPredict) => {
                set_f(&mut par, RRA_HW_BETA, fraction(token, false, "beta")?)
            }
            (3, Cf::Seasonal | Cf::DevSeasonal) => par[RRA_DEPENDENT_RRA_IDX] = index_arg(token),
            (3, Cf::Failures) => {
                let n = numparse::atoi(token);
                par[RRA_WINDOW_LEN] = i64::from(n) as u64;
                let mut problem = None;
                if !(1..=MAX_FAILURES_WINDOW_LEN as i32).contains(&n) {
                    problem = Some(format!("Window length is out of range 1, {MAX_FAILURES_WINDOW_LEN}"));
                }
                if par[RRA_WINDOW_LEN] < par[RRA_FAILURE_THRESHOLD] {
                    problem = Some("Window length is shorter than the failure threshold".to_string());
                }
                if let Some(p) = problem {
                    return Err(err(p));
                }
            }
            (3, _) => return Err(err("Unexpected extra argument for consolidation function DEVPREDICT")),
            (4, Cf::Failures) => par[RRA_DEPENDENT_RRA_IDX] = index_arg(token),
            (4, Cf::Seasonal | Cf::DevSeasonal) => {
                // sscanf("smoothing-window=%lf") is true when it converts the
                // number and also when the input ends first (EOF), which
                // keeps the default.
                const KEY: &str = "smoothing-window=";
                let scanned = match token.strip_prefix(KEY) {
                    Some(rest) if rest.bytes().all(is_c_space) => Some(None),
                    Some(rest) => cscan::double(rest).map(Some),
                    None if KEY.starts_with(token) => Some(None),
                    None => None,
                };
                let Some(value) = scanned else {
                    return Err(err(format!("Invalid option {token}")));
                };
                if let Some(v) = value {
                    set_f(&mut par, RRA_SEASONAL_SMOOTHING_WINDOW, v);
                }
                require_at_least(require_version, 4);
                let v = f64::from_bits(par[RRA_SEASONAL_SMOOTHING_WINDOW]);
                if outside_unit(v, true) {
                    return Err(err(format!("Invalid smoothing-window {v:.6}: must be between 0 and 1")));
                }
            }
            (4, Cf::HwPredict | Cf::MhwPredict) => {
                let period = numparse::atoi(token) as u16;
                if u64::from(period) > row_count {
                    return Err(err("Length of seasonal cycle exceeds length of HW prediction array"));
                }
                set_f(&mut par, RRA_PERIOD, f64::from(period));
            }
            (4, _) => {
                return Err(err(format!(
                    "Unexpected extra argument for consolidation function {}",
                    cf.name()
                )))
            }
            (5, _) => par[RRA_DEPENDENT_RRA_IDX] = index_arg(token),
            _ => return Err(err("Unknown error")),
        }
    }
    if tokens.len() < token_min {
        return Err(err(format!("Expected at least {token_min} arguments for RRA but got {}", tokens.len())));
    }
    Ok(RraDef { cf_name: Name::new(cf.name()), cf, pad: [0; 4], row_count, pdp_count: 1, par })
}

fn require_at_least(require_version: &mut Option<u8>, version: u8) {
    if !matches!(*require_version, Some(v) if v >= version) {
        *require_version = Some(version);
    }
}

fn hw_rra(cf: Cf, row_count: u64) -> RraDef {
    RraDef { cf_name: Name::new(cf.name()), cf, pad: [0; 4], row_count, pdp_count: 1, par: [0; 10] }
}

/// `handle_dependent_rras`: a HWPREDICT or MHWPREDICT archive without an
/// explicit SEASONAL index brings its SEASONAL, DEVSEASONAL, DEVPREDICT and
/// FAILURES archives along.
pub(crate) fn handle_dependent_rras(rras: &mut Vec<RraDef>, hash: u64) -> Result<()> {
    let hw_index = rras.len() - 1;
    let hw = &mut rras[hw_index];
    if !matches!(hw.cf, Cf::HwPredict | Cf::MhwPredict) || hw.par[RRA_DEPENDENT_RRA_IDX] != i32::MAX as u64 {
        return Ok(());
    }
    let period = f64::from_bits(hw.par[RRA_PERIOD]) as u16;
    if period == 0 {
        return Err(err("the seasonal period of a Holt-Winters archive must be at least 1"));
    }
    let period = u64::from(period);
    let alpha = hw.par[RRA_HW_ALPHA];
    let hw_rows = hw.row_count;
    hw.par[RRA_DEPENDENT_RRA_IDX] = (hw_index + 1) as u64;
    for cf in [Cf::Seasonal, Cf::DevSeasonal] {
        let mut r = hw_rra(cf, period);
        r.par[RRA_SEASONAL_SMOOTH_IDX] = hash % period;
        r.par[RRA_SEASONAL_GAMMA] = alpha;
        r.par[RRA_DEPENDENT_RRA_IDX] = hw_index as u64;
        rras.push(r);
    }
    let mut devpredict = hw_rra(Cf::DevPredict, hw_rows);
    devpredict.par[RRA_DEPENDENT_RRA_IDX] = (hw_index + 2) as u64;
    rras.push(devpredict);
    let mut failures = hw_rra(Cf::Failures, period);
    failures.par[RRA_DELTA_POS] = 2.0f64.to_bits();
    failures.par[RRA_DELTA_NEG] = 2.0f64.to_bits();
    failures.par[RRA_FAILURE_THRESHOLD] = 7;
    failures.par[RRA_WINDOW_LEN] = 9;
    failures.par[RRA_DEPENDENT_RRA_IDX] = (hw_index + 2) as u64;
    rras.push(failures);
    Ok(())
}

/// Parses a whole `RRA:...` argument.
pub fn parse_rra(def: &str, step_secs: u64) -> Result<RraDef> {
    // strtok skips empty tokens, so "a::b" has two tokens.
    let tokens: Vec<&str> = def[4..].split(':').filter(|t| !t.is_empty()).collect();
    let mut cf = None;
    let mut cf_text = String::new();
    let mut xff = 0.0f64;
    let mut pdp_count = 1u64;
    let mut row_count = 0u64;
    for (i, token) in tokens.iter().enumerate() {
        match i {
            0 => {
                cf_text = token.chars().take_while(|c| c.is_ascii_uppercase()).take(19).collect();
                if cf_text.is_empty() {
                    return Err(err("Failed to parse CF name"));
                }
                let parsed = Cf::parse(&cf_text)
                    .ok_or_else(|| err(format!("Unrecognized consolidation function {cf_text}")))?;
                if !parsed.is_classic() {
                    // Without a file name: the smoothing row of seasonal
                    // archives is then hash("") modulo the period.
                    return parse_rra_def(def, step_secs, crate::hw::fnv_hash(b""), &mut None);
                }
                cf = Some(parsed);
            }
            1 => {
                xff = match numparse::parse_double(token) {
                    Ok(v) if (0.0..1.0).contains(&v) => v,
                    _ => return Err(err("Invalid xff: must be between 0 and 1")),
                };
            }
            2 => {
                pdp_count = numparse::scaled_duration(token, step_secs)
                    .map_err(|e| err(format!("Invalid step {token}: {e}")))?;
            }
            3 => {
                row_count = numparse::scaled_duration(token, step_secs.saturating_mul(pdp_count))
                    .map_err(|e| err(format!("Invalid row count {token}: {e}")))?;
            }
            _ => return Err(err(format!("Unexpected extra argument for consolidation function {cf_text}"))),
        }
    }
    if tokens.len() < 4 {
        return Err(err(format!("Expected at least 4 arguments for RRA but got {}", tokens.len())));
    }
    let cf = cf.expect("token 0 parsed");
    let mut par = [0u64; 10];
    par[RRA_CDP_XFF_VAL] = xff.to_bits();
    Ok(RraDef { cf_name: Name::new(cf.name()), cf, pad: [0; 4], row_count, pdp_count, par })
}
