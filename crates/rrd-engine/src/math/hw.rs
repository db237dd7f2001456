//! Holt-Winters aberrant behaviour detection, as RRDtool 1.7.2 computes it:
//! the prediction formulas (additive HWPREDICT and multiplicative
//! MHWPREDICT), the per-step updates of the HWPREDICT, SEASONAL,
//! DEVSEASONAL, DEVPREDICT and FAILURES scratch areas, the seasonal
//! smoother, the FAILURES violation window, and the initial scratch state
//! `create` writes.
//!
//! Invariants: everything here works on a [`Header`] and on row values
//! handed in by the caller; it never reads or writes a file. Dependency
//! indices (`RRA_DEPENDENT_RRA_IDX`) are checked once by [`check_dependencies`]
//! before any update; the functions below index with them unchecked only
//! after that check passed (they still use `get` and do nothing when an
//! index is out of range, so untrusted input cannot panic).
//!
//! Deliberately absent: deciding when to run (that is [`crate::update`]'s
//! schedule) and where the rows live.

use rrd_format::{
    Cf, Header, Par, CDP_HW_INTERCEPT, CDP_HW_LAST_INTERCEPT, CDP_HW_LAST_SEASONAL, CDP_HW_LAST_SLOPE,
    CDP_HW_SEASONAL, CDP_HW_SLOPE, CDP_INIT_SEASONAL, CDP_LAST_NULL_COUNT, CDP_LAST_SEASONAL_DEVIATION,
    CDP_NULL_COUNT, CDP_SEASONAL_DEVIATION, RRA_DELTA_NEG, RRA_DELTA_POS, RRA_DEPENDENT_RRA_IDX,
    RRA_FAILURE_THRESHOLD, RRA_HW_ALPHA, RRA_HW_BETA, RRA_SEASONAL_GAMMA, RRA_WINDOW_LEN,
};

use crate::numparse::DNAN;

/// Burn-in: the seasonal smoother runs at every wrap of the seasonal archive
/// until its first data source has seen this many wraps.
pub const BURNIN_CYCLES: u64 = 3;

/// The largest FAILURES window `create` accepts.
pub const MAX_FAILURES_WINDOW_LEN: i64 = 28;

/// `FnvHash`: 32-bit FNV-1 computed in a 64-bit `unsigned long`, as
/// rrdtool does (so the "32-bit" hash keeps growing past 32 bits). Its
/// value modulo the seasonal period is where the smoother runs.
pub fn fnv_hash(name: &[u8]) -> u64 {
    let mut h: u64 = 0x811c_9dc5;
    for &b in name {
        h = h.wrapping_mul(0x0100_0193);
        h ^= u64::from(b);
    }
    h
}

/// Whether an archive belongs to the Holt-Winters family.
pub fn is_hw(cf: Cf) -> bool {
    !cf.is_classic()
}

/// The scratch area `create` gives a Holt-Winters archive (the classic
/// archives are `create`'s own business).
pub fn init_cdp(cf: Cf, s: &mut Par) {
    match cf {
        Cf::HwPredict | Cf::MhwPredict => {
            for slot in [CDP_HW_INTERCEPT, CDP_HW_LAST_INTERCEPT, CDP_HW_SLOPE, CDP_HW_LAST_SLOPE] {
                s[slot] = DNAN.to_bits();
            }
            s[CDP_NULL_COUNT] = 1;
            s[CDP_LAST_NULL_COUNT] = 1;
        }
        Cf::Seasonal | Cf::DevSeasonal => {
            s[CDP_HW_SEASONAL] = DNAN.to_bits();
            s[CDP_HW_LAST_SEASONAL] = DNAN.to_bits();
            s[CDP_INIT_SEASONAL] = 1;
        }
        _ => {}
    }
}

fn dep(h: &Header, rra: usize) -> usize {
    // Out-of-range values become an index no archive has.
    usize::try_from(h.rra()[rra].par[RRA_DEPENDENT_RRA_IDX]).unwrap_or(usize::MAX)
}

/// Checks that every dependency chain an update follows stays inside the
/// file (rrdtool would read past its arrays), and that FAILURES windows fit
/// the scratch area. Returns a sentence naming the first problem.
pub fn check_dependencies(h: &Header) -> Result<(), String> {
    let n = h.rra_count();
    for r in 0..n {
        let cf = h.rra()[r].cf;
        let depth = match cf {
            Cf::HwPredict | Cf::MhwPredict | Cf::DevPredict => 1,
            Cf::Seasonal | Cf::DevSeasonal => 2,
            Cf::Failures => 3,
            _ => 0,
        };
        let mut cur = r;
        for _ in 0..depth {
            let next = dep(h, cur);
            if next >= n {
                return Err(format!(
                    "the Holt-Winters archive RRA[{r}] ({}) depends on an archive that does not exist \
                     (index {})",
                    cf.name(),
                    h.rra()[cur].par[RRA_DEPENDENT_RRA_IDX]
                ));
            }
            cur = next;
        }
        if cf == Cf::Failures && (h.rra()[r].par[RRA_WINDOW_LEN] as u16) > 80 {
            return Err(format!("the FAILURES archive RRA[{r}] has a window longer than 80 steps"));
        }
    }
    Ok(())
}

/// Additive (HWPREDICT) or multiplicative (MHWPREDICT) model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    Additive,
    Multiplicative,
}

impl Model {
    fn of(cf: Cf) -> Option<Model> {
        match cf {
            Cf::HwPredict => Some(Model::Additive),
            Cf::MhwPredict => Some(Model::Multiplicative),
            _ => None,
        }
    }

    /// `null_count` goes through a C `int` in rrdtool's prediction.
    pub fn predict(self, intercept: f64, slope: f64, null_count: u64, seasonal: f64) -> f64 {
        let n = f64::from(null_count as i32);
        match self {
            Model::Additive => intercept + slope * n + seasonal,
            Model::Multiplicative => (intercept + slope * n) * seasonal,
        }
    }

    fn intercept(self, alpha: f64, observed: f64, seasonal: f64, coefs: &Par) -> f64 {
        let trend = f(coefs[CDP_HW_INTERCEPT]) + f(coefs[CDP_HW_SLOPE]) * coefs[CDP_NULL_COUNT] as f64;
        match self {
            Model::Additive => alpha * (observed - seasonal) + (1.0 - alpha) * trend,
            Model::Multiplicative => {
                if seasonal <= 0.0 {
                    return DNAN;
                }
                alpha * (observed / seasonal) + (1.0 - alpha) * trend
            }
        }
    }

    fn seasonality(self, gamma: f64, observed: f64, intercept: f64, seasonal: f64) -> f64 {
        match self {
            Model::Additive => gamma * (observed - intercept) + (1.0 - gamma) * seasonal,
            Model::Multiplicative => {
                if intercept <= 0.0 {
                    return DNAN;
                }
                gamma * (observed / intercept) + (1.0 - gamma) * seasonal
            }
        }
    }

    /// The seasonal coefficient relative to a baseline (first season, smoother).
    pub fn init_seasonality(self, seasonal: f64, intercept: f64) -> f64 {
        match self {
            Model::Additive => seasonal - intercept,
            Model::Multiplicative => {
                if intercept <= 0.0 {
                    return DNAN;
                }
                seasonal / intercept
            }
        }
    }

    fn identity(self) -> f64 {
        match self {
            Model::Additive => 0.0,
            Model::Multiplicative => 1.0,
        }
    }
}

fn f(bits: u64) -> f64 {
    f64::from_bits(bits)
}

fn slope(beta: f64, coefs: &Par) -> f64 {
    beta * (f(coefs[CDP_HW_INTERCEPT]) - f(coefs[CDP_HW_LAST_INTERCEPT]))
        + (1.0 - beta) * f(coefs[CDP_HW_SLOPE])
}

/// `update_aberrant_CF`: stores `pdp` in `slot` of the scratch area of
/// (`rra`, `ds`), then updates that archive's Holt-Winters state, leaving in
/// `slot` the value the archive's next row gets. `seasonal_row` is the row
/// of a SEASONAL or DEVSEASONAL archive looked up for this step.
pub fn update_aberrant_cf(
    h: &mut Header,
    rra: usize,
    ds: usize,
    slot: usize,
    pdp: f64,
    seasonal_row: &[f64],
) {
    let ds_count = h.ds_count();
    let cdp = rra * ds_count + ds;
    h.cdp_mut()[cdp].scratch[slot] = pdp.to_bits();
    let cf = h.rra()[rra].cf;
    let model_at = |h: &Header, i: usize| h.rra().get(i).and_then(|r| Model::of(r.cf));
    match cf {
        Cf::HwPredict | Cf::MhwPredict => {
            let model = Model::of(cf).expect("HW family");
            update_hwpredict(h, rra, ds, slot, model);
        }
        Cf::DevPredict => update_devpredict(h, rra, ds, slot),
        Cf::Seasonal => {
            if let (Some(model), Some(&coef)) = (model_at(h, dep(h, rra)), seasonal_row.get(ds)) {
                update_seasonal(h, rra, ds, slot, coef, model);
            }
        }
        Cf::DevSeasonal => {
            if let (Some(model), Some(&coef)) = (model_at(h, dep(h, rra)), seasonal_row.get(ds)) {
                update_devseasonal(h, rra, ds, slot, coef, model);
            }
        }
        Cf::Failures => {
            let hw = h.rra().get(dep(h, rra)).map(|_| dep(h, dep(h, rra)));
            if let Some(model) = hw.and_then(|i| model_at(h, i)) {
                update_failures(h, rra, ds, slot, model);
            }
        }
        _ => {}
    }
}

fn update_hwpredict(h: &mut Header, rra: usize, ds: usize, slot: usize, model: Model) {
    let ds_count = h.ds_count();
    let seasonal_rra = dep(h, rra);
    let (alpha, beta) = (h.rra()[rra].par_f64(RRA_HW_ALPHA), h.rra()[rra].par_f64(RRA_HW_BETA));
    let seasonal_coef = {
        let s = &h.cdp()[seasonal_rra * ds_count + ds].scratch;
        // An archive earlier in the file has already moved on this step.
        f(if seasonal_rra < rra { s[CDP_HW_LAST_SEASONAL] } else { s[CDP_HW_SEASONAL] })
    };
    let c = &mut h.cdp_mut()[rra * ds_count + ds].scratch;
    c[CDP_HW_LAST_INTERCEPT] = c[CDP_HW_INTERCEPT];
    c[CDP_HW_LAST_SLOPE] = c[CDP_HW_SLOPE];
    c[CDP_LAST_NULL_COUNT] = c[CDP_NULL_COUNT];
    let observed = f(c[slot]);
    let prediction;
    if f(c[CDP_HW_INTERCEPT]).is_nan() || f(c[CDP_HW_SLOPE]).is_nan() || seasonal_coef.is_nan() {
        prediction = DNAN;
        if f(c[CDP_HW_INTERCEPT]).is_nan() && !observed.is_nan() {
            // Bootstrap: the first known value is the intercept, slope 0.
            c[CDP_HW_INTERCEPT] = c[slot];
            c[CDP_HW_LAST_INTERCEPT] = c[slot];
            c[CDP_HW_SLOPE] = 0f64.to_bits();
            c[CDP_HW_LAST_SLOPE] = 0f64.to_bits();
            c[CDP_NULL_COUNT] = 1;
            c[CDP_LAST_NULL_COUNT] = 1;
        }
    } else {
        prediction =
            model.predict(f(c[CDP_HW_INTERCEPT]), f(c[CDP_HW_SLOPE]), c[CDP_NULL_COUNT], seasonal_coef);
        if observed.is_nan() {
            c[CDP_NULL_COUNT] = c[CDP_NULL_COUNT].wrapping_add(1);
        } else {
            c[CDP_HW_INTERCEPT] = model.intercept(alpha, observed, seasonal_coef, c).to_bits();
            c[CDP_HW_SLOPE] = slope(beta, c).to_bits();
            c[CDP_NULL_COUNT] = 1;
        }
    }
    c[slot] = prediction.to_bits();
}

fn update_seasonal(h: &mut Header, rra: usize, ds: usize, slot: usize, next_coef: f64, model: Model) {
    let ds_count = h.ds_count();
    let hw_rra = dep(h, rra);
    let hw_alpha = h.rra()[hw_rra].par_f64(RRA_HW_ALPHA);
    let gamma = h.rra()[rra].par_f64(RRA_SEASONAL_GAMMA);
    let coefs = h.cdp()[hw_rra * ds_count + ds].scratch;
    let s = &mut h.cdp_mut()[rra * ds_count + ds].scratch;
    let seasonal = f(s[CDP_HW_SEASONAL]);
    s[CDP_HW_LAST_SEASONAL] = s[CDP_HW_SEASONAL];
    s[CDP_HW_SEASONAL] = next_coef.to_bits();
    let observed = f(s[slot]);
    if observed.is_nan() {
        // Unknown: the row keeps its coefficient.
        s[slot] = seasonal.to_bits();
        return;
    }
    let value = if hw_rra < rra {
        // HWPREDICT already moved on this step: its "last" values are the
        // ones this step's observation belongs to.
        if f(coefs[CDP_HW_LAST_INTERCEPT]).is_nan() || f(coefs[CDP_HW_LAST_SLOPE]).is_nan() {
            DNAN
        } else if seasonal.is_nan() {
            model.init_seasonality(observed, f(coefs[CDP_HW_LAST_INTERCEPT]))
        } else {
            model.seasonality(gamma, observed, f(coefs[CDP_HW_INTERCEPT]), seasonal)
        }
    } else if f(coefs[CDP_HW_INTERCEPT]).is_nan() || f(coefs[CDP_HW_SLOPE]).is_nan() {
        model.identity()
    } else if seasonal.is_nan() {
        model.init_seasonality(observed, f(coefs[CDP_HW_INTERCEPT]))
    } else {
        let intercept = model.intercept(hw_alpha, observed, seasonal, &coefs);
        model.seasonality(gamma, observed, intercept, seasonal)
    };
    s[slot] = value.to_bits();
}

fn update_devpredict(h: &mut Header, rra: usize, ds: usize, slot: usize) {
    let ds_count = h.ds_count();
    let dev_rra = dep(h, rra);
    let d = &h.cdp()[dev_rra * ds_count + ds].scratch;
    let v = if dev_rra < rra { d[CDP_LAST_SEASONAL_DEVIATION] } else { d[CDP_SEASONAL_DEVIATION] };
    h.cdp_mut()[rra * ds_count + ds].scratch[slot] = v;
}

fn update_devseasonal(h: &mut Header, rra: usize, ds: usize, slot: usize, next_dev: f64, model: Model) {
    let ds_count = h.ds_count();
    let hw_rra = dep(h, rra);
    let seasonal_rra = dep(h, hw_rra);
    let gamma = h.rra()[rra].par_f64(RRA_SEASONAL_GAMMA);
    let coefs = h.cdp()[hw_rra * ds_count + ds].scratch;
    {
        let s = &mut h.cdp_mut()[rra * ds_count + ds].scratch;
        s[CDP_LAST_SEASONAL_DEVIATION] = s[CDP_SEASONAL_DEVIATION];
        s[CDP_SEASONAL_DEVIATION] = next_dev.to_bits();
    }
    let seasonal_coef = match h.cdp().get(seasonal_rra.wrapping_mul(ds_count).wrapping_add(ds)) {
        Some(c) if seasonal_rra < rra => f(c.scratch[CDP_HW_LAST_SEASONAL]),
        Some(c) => f(c.scratch[CDP_HW_SEASONAL]),
        None => DNAN,
    };
    let (ic, sl, nc) = if hw_rra < rra {
        (CDP_HW_LAST_INTERCEPT, CDP_HW_LAST_SLOPE, CDP_LAST_NULL_COUNT)
    } else {
        (CDP_HW_INTERCEPT, CDP_HW_SLOPE, CDP_NULL_COUNT)
    };
    let s = &mut h.cdp_mut()[rra * ds_count + ds].scratch;
    if f(coefs[ic]).is_nan() || f(coefs[sl]).is_nan() || seasonal_coef.is_nan() {
        s[slot] = DNAN.to_bits();
        return;
    }
    let prediction = model.predict(f(coefs[ic]), f(coefs[sl]), coefs[nc], seasonal_coef);
    let observed = f(s[slot]);
    let last = f(s[CDP_LAST_SEASONAL_DEVIATION]);
    let value = if observed.is_nan() {
        last
    } else if last.is_nan() {
        (prediction - observed).abs()
    } else {
        gamma * (prediction - observed).abs() + (1.0 - gamma) * last
    };
    s[slot] = value.to_bits();
}

/// The violation history of a FAILURES archive lives in the first bytes of
/// its scratch area, one byte per step, newest first.
fn scratch_bytes(s: &Par) -> [u8; 80] {
    let mut bytes = [0u8; 80];
    for (chunk, v) in bytes.chunks_exact_mut(8).zip(s.iter()) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    bytes
}

fn set_scratch_bytes(s: &mut Par, bytes: &[u8; 80]) {
    for (chunk, v) in bytes.chunks_exact(8).zip(s.iter_mut()) {
        *v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
    }
}

/// Shifts `violation` into a window of `window_len` bytes and returns how
/// many of the window's bytes count as violations (rrdtool sums the bytes
/// as signed chars into an `unsigned short`).
pub fn push_violation(bytes: &mut [u8; 80], window_len: u16, violation: bool) -> u16 {
    let mut count = u16::from(violation);
    let mut i = usize::from(window_len).min(80);
    while i > 1 {
        bytes[i - 1] = bytes[i - 2];
        count = count.wrapping_add(bytes[i - 1] as i8 as i16 as u16);
        i -= 1;
    }
    bytes[0] = u8::from(violation);
    count
}

/// `erase_violations`: forget the window of a FAILURES archive.
pub fn erase_violations(s: &mut Par, window_len: u64) {
    let mut bytes = scratch_bytes(s);
    let n = usize::from(window_len as u16).min(80);
    bytes[..n].fill(0);
    set_scratch_bytes(s, &bytes);
}

fn update_failures(h: &mut Header, rra: usize, ds: usize, slot: usize, model: Model) {
    let ds_count = h.ds_count();
    let dev_rra = dep(h, rra);
    let hw_rra = dep(h, dev_rra);
    let seasonal_rra = dep(h, hw_rra);
    // rrdtool orders the DEVSEASONAL lookup by the SEASONAL archive's index.
    let deviation = {
        let d = &h.cdp()[dev_rra * ds_count + ds].scratch;
        f(if rra < seasonal_rra { d[CDP_SEASONAL_DEVIATION] } else { d[CDP_LAST_SEASONAL_DEVIATION] })
    };
    let observed = f(h.cdp()[rra * ds_count + ds].scratch[slot]);
    let mut violation = false;
    if !deviation.is_nan() {
        let s = &h.cdp()[seasonal_rra * ds_count + ds].scratch;
        let seasonal_coef = f(if rra < seasonal_rra { s[CDP_HW_SEASONAL] } else { s[CDP_HW_LAST_SEASONAL] });
        let c = &h.cdp()[hw_rra * ds_count + ds].scratch;
        let prediction = if rra < hw_rra {
            model.predict(f(c[CDP_HW_INTERCEPT]), f(c[CDP_HW_SLOPE]), c[CDP_NULL_COUNT], seasonal_coef)
        } else {
            model.predict(
                f(c[CDP_HW_LAST_INTERCEPT]),
                f(c[CDP_HW_LAST_SLOPE]),
                c[CDP_LAST_NULL_COUNT],
                seasonal_coef,
            )
        };
        violation = if observed.is_nan() {
            true
        } else {
            let (pos, neg) = (h.rra()[rra].par_f64(RRA_DELTA_POS), h.rra()[rra].par_f64(RRA_DELTA_NEG));
            observed > prediction + pos * deviation || observed < prediction - neg * deviation
        };
    }
    let window = h.rra()[rra].par[RRA_WINDOW_LEN] as u16;
    let threshold = h.rra()[rra].par[RRA_FAILURE_THRESHOLD];
    let s = &mut h.cdp_mut()[rra * ds_count + ds].scratch;
    let mut bytes = scratch_bytes(s);
    let count = push_violation(&mut bytes, window, violation);
    set_scratch_bytes(s, &bytes);
    s[slot] = if u64::from(count) < threshold { 0f64 } else { 1f64 }.to_bits();
}

/// `MyMod`: a modulus for possibly negative offsets.
fn my_mod(val: i64, modulus: u64) -> u64 {
    if val < 0 {
        modulus - (val.unsigned_abs() % modulus)
    } else {
        val as u64 % modulus
    }
}

/// The seasonal smoother over one archive's rows (`values`, row-major,
/// `ds_count` values a row, in file order): a centred moving average of
/// `2 * offset + 1` rows, computed with a running sum as rrdtool does (so
/// the rounding matches). Returns the per-data-source mean of the smoothed
/// rows (the baseline), or `None` and leaves `values` alone when nothing is
/// smoothed (`offset` 0, or any value unknown).
pub fn smooth(values: &mut [f64], ds_count: usize, offset: u64) -> Option<Vec<f64>> {
    if offset == 0 || ds_count == 0 || values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let row_count = (values.len() / ds_count) as u64;
    let copy = values.to_vec();
    let mut baseline = vec![0.0f64; ds_count];
    let width = (2 * offset + 1) as f64;
    let at = |k: u64, j: usize| k as usize * ds_count + j;
    for j in 0..ds_count {
        let mut queue = std::collections::VecDeque::with_capacity(2 * offset as usize + 1);
        let mut sum = 0.0f64;
        for i in 0..2 * offset {
            let k = my_mod(i as i64 - offset as i64, row_count);
            queue.push_back(copy[at(k, j)]);
            sum += copy[at(k, j)];
        }
        for i in offset..row_count + offset {
            let k = my_mod(i as i64, row_count);
            sum += copy[at(k, j)];
            queue.push_back(copy[at(k, j)]);
            let centre = my_mod(i as i64 - offset as i64, row_count);
            values[at(centre, j)] = sum / width;
            baseline[j] += values[at(centre, j)];
            sum -= queue.pop_front().unwrap_or(0.0);
        }
    }
    for b in &mut baseline {
        *b /= row_count as f64;
    }
    Some(baseline)
}

/// `apply_smoother` on the rows of SEASONAL or DEVSEASONAL archive `rra`:
/// smooths `values` (the whole archive) and, for SEASONAL, re-centres the
/// coefficients on the baseline and moves the baseline into the HWPREDICT
/// intercept. Returns whether `values` changed (and must be written).
pub fn apply_smoother(h: &mut Header, rra: usize, values: &mut [f64]) -> bool {
    let row_count = h.rra()[rra].row_count;
    let window = if h.version().0 >= 4 {
        h.rra()[rra].par_f64(rrd_format::RRA_SEASONAL_SMOOTHING_WINDOW)
    } else {
        0.05
    };
    let offset = (window / 2.0 * row_count as f64).floor() as u64;
    // The dependency must be known before anything is written.
    let model = if h.rra()[rra].cf == Cf::Seasonal {
        match h.rra().get(dep(h, rra)).and_then(|r| Model::of(r.cf)) {
            Some(m) => Some(m),
            None => return false,
        }
    } else {
        None
    };
    let Some(baseline) = smooth(values, h.ds_count(), offset) else {
        return false;
    };
    if let Some(model) = model {
        let ds_count = h.ds_count();
        let hw_rra = dep(h, rra);
        for (j, &b) in baseline.iter().enumerate() {
            for row in values.chunks_exact_mut(ds_count) {
                row[j] = model.init_seasonality(row[j], b);
            }
            let c = &mut h.cdp_mut()[hw_rra * ds_count + j].scratch;
            c[CDP_HW_INTERCEPT] = (f(c[CDP_HW_INTERCEPT]) + b).to_bits();
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_hash_matches_rrdtool_unsigned_long() {
        // FNV-1 of "" is the basis; of "a" computed by hand in 64 bits.
        assert_eq!(fnv_hash(b""), 0x811c_9dc5);
        assert_eq!(fnv_hash(b"a"), (0x811c_9dc5u64 * 0x0100_0193) ^ 0x61);
    }

    #[test]
    fn smoother_is_a_centred_moving_average_and_keeps_unknowns_untouched() {
        // 5 rows, one DS, offset 1: window of 3 around each row, wrapping.
        let mut v = vec![1.0, 2.0, 3.0, 4.0, 5.0];
        let base = smooth(&mut v, 1, 1).unwrap();
        assert_eq!(v, vec![(5.0 + 1.0 + 2.0) / 3.0, 2.0, 3.0, 4.0, (4.0 + 5.0 + 1.0) / 3.0]);
        assert!((base[0] - 3.0).abs() < 1e-12);
        let mut with_nan = vec![1.0, f64::NAN, 3.0];
        assert!(smooth(&mut with_nan, 1, 1).is_none());
        assert_eq!(with_nan[0], 1.0);
        assert!(smooth(&mut [1.0, 2.0], 1, 0).is_none());
    }

    #[test]
    fn failure_window_counts_the_last_window_len_steps() {
        let mut bytes = [0u8; 80];
        // threshold semantics: count includes the new step.
        assert_eq!(push_violation(&mut bytes, 3, true), 1);
        assert_eq!(push_violation(&mut bytes, 3, true), 2);
        assert_eq!(push_violation(&mut bytes, 3, false), 2);
        assert_eq!(push_violation(&mut bytes, 3, false), 1);
        assert_eq!(&bytes[..4], &[0, 0, 1, 0]);
        // The window never reaches beyond its length.
        assert_eq!(push_violation(&mut bytes, 3, false), 0);
        let mut s = [0u64; 10];
        s[0] = u64::MAX;
        erase_violations(&mut s, 3);
        assert_eq!(s[0], u64::MAX << 24);
    }

    #[test]
    fn multiplicative_model_refuses_non_positive_divisors() {
        let m = Model::Multiplicative;
        assert!(m.init_seasonality(2.0, 0.0).is_nan());
        assert_eq!(m.init_seasonality(2.0, 4.0), 0.5);
        assert_eq!(m.predict(10.0, 1.0, 2, 0.5), 6.0);
        assert_eq!(Model::Additive.predict(10.0, 1.0, 2, 0.5), 12.5);
    }
}
