//! The options of `tune`, applied to the header in place as rrdtool
//! applies them to its memory map of the file.

use std::path::Path;

use rrd_format::{
    Cf, Dst, Header, Par, PdpPrep, RraDef, Version, CDP_HW_INTERCEPT, CDP_HW_LAST_INTERCEPT,
    CDP_HW_LAST_SEASONAL, CDP_HW_LAST_SLOPE, CDP_HW_SEASONAL, CDP_HW_SLOPE, CDP_INIT_SEASONAL,
    CDP_LAST_NULL_COUNT, CDP_NULL_COUNT, CDP_UNKN_PDP_CNT, CDP_VAL, DS_MAX_VAL, DS_MIN_VAL, DS_MRHB_CNT,
    PDP_UNKN_SEC_CNT, RRA_DELTA_NEG, RRA_DELTA_POS, RRA_FAILURE_THRESHOLD, RRA_HW_ALPHA, RRA_HW_BETA,
    RRA_SEASONAL_GAMMA, RRA_SEASONAL_SMOOTHING_WINDOW, RRA_WINDOW_LEN,
};

use super::{err, TuneOption};
use crate::commands::rra_def::{outside_unit, MAX_FAILURES_WINDOW_LEN};
use crate::error::{Error, Result, Unknown};
use crate::numparse::{self, DNAN};
use crate::rrd::Rrd;
use crate::store::Store;
use rrd_lang::cscan;

/// An open file being tuned. Parameter options edit `rrd.header` (and data
/// columns, for `--aberrant-reset`, which are written at once);
/// [`Tuner::write_header`] stores the header.
pub struct Tuner<S: Store> {
    pub rrd: Rrd<S>,
    original_header: Vec<u8>,
    /// `--step` (`atoi` of the last one given); 0 or less means none.
    pub new_step: i32,
}

impl Tuner<std::fs::File> {
    /// Opens `path` for reading and writing.
    pub fn open(path: &Path) -> Result<Tuner<std::fs::File>> {
        Ok(Tuner::new(Rrd::open(path, true)?))
    }

    /// [`Tuner::open`] through `root` (beneath a confined caller's directory).
    pub fn open_in(root: &crate::root::Root, path: &Path) -> Result<Tuner<std::fs::File>> {
        Ok(Tuner::new(Rrd::open_in(root, path, true)?))
    }
}

impl<S: Store> Tuner<S> {
    pub fn new(rrd: Rrd<S>) -> Tuner<S> {
        let original_header = rrd.header.encode();
        Tuner { rrd, original_header, new_step: -1 }
    }

    fn ds_match(&self, name: &str) -> Result<usize> {
        self.rrd.header.ds_index(name).ok_or_else(|| Error::Unknown(Unknown::TuneDs(name.to_string())))
    }

    fn first_rra(&self, cf: Cf) -> Option<usize> {
        self.rrd.header.rra().iter().position(|r| r.cf == cf)
    }

    /// Applies one option to the header in memory.
    pub fn apply(&mut self, opt: &TuneOption) -> Result<()> {
        match opt {
            TuneOption::Heartbeat(arg) => {
                let parsed = cscan::name_colon(arg).and_then(|(n, rest)| Some((n, cscan::long(rest)?.0)));
                let (name, heartbeat) = parsed.ok_or_else(|| err("invalid arguments for heartbeat"))?;
                let ds = self.ds_match(name)?;
                self.rrd.header.ds_par_mut(ds)[DS_MRHB_CNT] = heartbeat as u64;
            }
            TuneOption::Minimum(arg) | TuneOption::Maximum(arg) => {
                let (what, slot) = match opt {
                    TuneOption::Minimum(_) => ("minimum", DS_MIN_VAL),
                    _ => ("maximum", DS_MAX_VAL),
                };
                let bad = || err(format!("invalid arguments for {what} ds value"));
                let (name, rest) = cscan::name_colon(arg).ok_or_else(bad)?;
                let text = cscan::number_chars(rest).ok_or_else(bad)?;
                let value =
                    if text == "U" { DNAN } else { numparse::parse_double(text).map_err(|_| bad())? };
                let ds = self.ds_match(name)?;
                self.rrd.header.ds_par_mut(ds)[slot] = value.to_bits();
            }
            TuneOption::DataSourceType(arg) => {
                let bad = || err("invalid arguments for data source type");
                let (name, rest) = cscan::name_colon(arg).ok_or_else(bad)?;
                let (dst_text, _) = cscan::upper(rest).ok_or_else(bad)?;
                let ds = self.ds_match(name)?;
                let dst = Dst::parse(dst_text)
                    .ok_or_else(|| err(format!("unknown data acquisition function '{dst_text}'")))?;
                if self.rrd.header.ds()[ds].dst_name.as_str() != dst_text {
                    self.rrd.header.set_ds_type(ds, dst);
                    // Only the first five bytes: the tail of the old reading stays.
                    self.rrd.header.pdp_mut()[ds].last_ds[..5].copy_from_slice(b"UNKN\0");
                }
            }
            TuneOption::DataSourceRename(arg) => {
                let bad = || err("invalid arguments for data source type");
                let (old, rest) = cscan::name_colon(arg).ok_or_else(bad)?;
                let (new, _) = cscan::ds_name(rest).ok_or_else(bad)?;
                let ds = self.ds_match(old)?;
                self.rrd.header.rename_ds(ds, new).map_err(|e| err(e.to_string()))?;
            }
            TuneOption::DeltaPos(arg) => self.set_delta(RRA_DELTA_POS, arg)?,
            TuneOption::DeltaNeg(arg) => self.set_delta(RRA_DELTA_NEG, arg)?,
            TuneOption::FailureThreshold(arg) => self.set_window(RRA_FAILURE_THRESHOLD, arg)?,
            TuneOption::WindowLength(arg) => self.set_window(RRA_WINDOW_LEN, arg)?,
            TuneOption::Alpha(arg) => {
                if self.set_hw(Cf::HwPredict, RRA_HW_ALPHA, arg, false).is_err() {
                    self.set_hw(Cf::MhwPredict, RRA_HW_ALPHA, arg, false)?;
                }
            }
            TuneOption::Beta(arg) => {
                if self.set_hw(Cf::HwPredict, RRA_HW_BETA, arg, false).is_err() {
                    self.set_hw(Cf::MhwPredict, RRA_HW_BETA, arg, false)?;
                }
            }
            TuneOption::Gamma(arg) => self.set_hw(Cf::Seasonal, RRA_SEASONAL_GAMMA, arg, false)?,
            TuneOption::GammaDeviation(arg) => {
                self.set_hw(Cf::DevSeasonal, RRA_SEASONAL_GAMMA, arg, false)?
            }
            TuneOption::SmoothingWindow(arg) | TuneOption::SmoothingWindowDeviation(arg) => {
                // The version goes up before the argument is checked, and
                // stays up when the check fails.
                if self.rrd.header.version() < Version(4) {
                    // Both have the same live head: only the version string changes.
                    self.rrd.header.set_version(Version(4)).map_err(|e| err(e.to_string()))?;
                }
                let cf = if matches!(opt, TuneOption::SmoothingWindow(_)) {
                    Cf::Seasonal
                } else {
                    Cf::DevSeasonal
                };
                self.set_hw(cf, RRA_SEASONAL_SMOOTHING_WINDOW, arg, true)?;
            }
            TuneOption::AberrantReset(arg) => {
                let (name, _) =
                    cscan::ds_name(arg).ok_or_else(|| err("invalid argument for aberrant-reset"))?;
                let ds = self.ds_match(name)?;
                self.reset_aberrant(ds)?;
            }
            TuneOption::Step(arg) => self.new_step = numparse::atoi(arg),
            TuneOption::Daemon(_) => {}
        }
        Ok(())
    }

    /// `set_hwarg` (`inclusive == false`: 0 < v < 1) and `set_hwsmootharg`
    /// (`inclusive`: 0 <= v <= 1) on the first archive of `cf`.
    fn set_hw(&mut self, cf: Cf, slot: usize, arg: &str, inclusive: bool) -> Result<()> {
        let (status, value) = cscan::strtodbl(arg);
        if (status == 1 || status == 2) && outside_unit(value, inclusive) {
            return Err(err("Holt-Winters parameter must be between 0 and 1"));
        }
        if status == 0 {
            return Err(err("Unable to parse Holt-Winters parameter"));
        }
        let rra = self.first_rra(cf).ok_or_else(|| err("Holt-Winters RRA does not exist in this RRD"))?;
        *self.rrd.header.rra_par_mut(rra).get_mut(slot).expect("a parameter slot") = value.to_bits();
        Ok(())
    }

    /// `set_deltaarg`. A string with no number at all is accepted as the
    /// value `rrd_strtod` left behind (0), as in rrdtool.
    fn set_delta(&mut self, slot: usize, arg: &str) -> Result<()> {
        let (status, value) = cscan::strtodbl(arg);
        if (status == 1 || status == 2) && value < 0.1 {
            return Err(err("Parameter specified is too small"));
        }
        if status == 1 {
            return Err(err("Unable to parse parameter in set_deltaarg"));
        }
        let rra =
            self.first_rra(Cf::Failures).ok_or_else(|| err("Failures RRA does not exist in this RRD"))?;
        *self.rrd.header.rra_par_mut(rra).get_mut(slot).expect("a parameter slot") = value.to_bits();
        Ok(())
    }

    /// `set_windowarg`: sets a count of the first FAILURES archive and
    /// forgets the violations recorded so far.
    fn set_window(&mut self, slot: usize, arg: &str) -> Result<()> {
        let value = i64::from(numparse::atoi(arg)) as u64;
        if !(1..=MAX_FAILURES_WINDOW_LEN).contains(&value) {
            return Err(err(format!("Parameter must be between 1 and {MAX_FAILURES_WINDOW_LEN}")));
        }
        let rra =
            self.first_rra(Cf::Failures).ok_or_else(|| err("Failures RRA does not exist in this RRD"))?;
        *self.rrd.header.rra_par_mut(rra).get_mut(slot).expect("a parameter slot") = value;
        for ds in 0..self.rrd.header.ds_count() {
            erase_violations(&mut self.rrd.header, rra, ds);
        }
        Ok(())
    }

    /// `reset_aberrant_coefficients`: forget what the Holt-Winters archives
    /// learned about one data source.
    fn reset_aberrant(&mut self, ds: usize) -> Result<()> {
        let ds_count = self.rrd.header.ds_count();
        for rra in 0..self.rrd.header.rra_count() {
            let cdp = rra * ds_count + ds;
            match self.rrd.header.rra()[rra].cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    init_hwpredict_cdp(&mut self.rrd.header.cdp_mut()[cdp].scratch)
                }
                Cf::Seasonal | Cf::DevSeasonal => {
                    let s = &mut self.rrd.header.cdp_mut()[cdp].scratch;
                    s[CDP_HW_SEASONAL] = DNAN.to_bits();
                    s[CDP_HW_LAST_SEASONAL] = DNAN.to_bits();
                    let nan = DNAN.to_le_bytes();
                    for row in 0..self.rrd.layout().row_counts[rra] {
                        let off = self.rrd.layout().value_off(rra, row, ds);
                        self.rrd
                            .store
                            .write_at(&nan, off)
                            .map_err(|source| Error::Io { path: self.rrd.path.clone(), source })?;
                    }
                }
                Cf::Failures => erase_violations(&mut self.rrd.header, rra, ds),
                _ => {}
            }
        }
        Ok(())
    }

    /// Writes the header back where it differs from what was read.
    pub fn write_header(&mut self) -> Result<()> {
        let bytes = self.rrd.header.encode();
        if bytes != self.original_header {
            self.rrd
                .store
                .write_at(&bytes, 0)
                .map_err(|source| Error::Io { path: self.rrd.path.clone(), source })?;
            self.original_header = bytes;
        }
        Ok(())
    }
}

/// `erase_violations`: zero the first `window_len` bytes of the scratch
/// area of a FAILURES archive (the violation history is kept as bytes).
fn erase_violations(header: &mut Header, rra: usize, ds: usize) {
    if header.rra()[rra].cf != Cf::Failures {
        return;
    }
    // `unsigned short` in rrdtool; bounded by the scratch area here.
    let window = (header.rra()[rra].par[RRA_WINDOW_LEN] as u16 as usize).min(80);
    let idx = header.cdp_index(rra, ds);
    let scratch = &mut header.cdp_mut()[idx].scratch;
    let mut bytes = [0u8; 80];
    for (chunk, v) in bytes.chunks_exact_mut(8).zip(scratch.iter()) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    bytes[..window].fill(0);
    for (chunk, v) in bytes.chunks_exact(8).zip(scratch.iter_mut()) {
        *v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
    }
}

pub(super) fn init_hwpredict_cdp(s: &mut Par) {
    for slot in [CDP_HW_INTERCEPT, CDP_HW_LAST_INTERCEPT, CDP_HW_SLOPE, CDP_HW_LAST_SLOPE] {
        s[slot] = DNAN.to_bits();
    }
    s[CDP_NULL_COUNT] = 1;
    s[CDP_LAST_NULL_COUNT] = 1;
}

/// `init_cdp`: the scratch area of a new archive (or of a new data source
/// in an archive), given the data source's PDP scratch.
pub(super) fn init_cdp(last_up: i64, step_secs: u64, rra: &RraDef, pdp: &PdpPrep, s: &mut Par) {
    match rra.cf {
        Cf::HwPredict | Cf::MhwPredict => init_hwpredict_cdp(s),
        Cf::Seasonal | Cf::DevSeasonal => {
            s[CDP_HW_SEASONAL] = DNAN.to_bits();
            s[CDP_HW_LAST_SEASONAL] = DNAN.to_bits();
            s[CDP_INIT_SEASONAL] = 1;
        }
        Cf::Failures => *s = [0; 10],
        _ => {
            s[CDP_VAL] = DNAN.to_bits();
            let span = step_secs.wrapping_mul(rra.pdp_count);
            s[CDP_UNKN_PDP_CNT] = if span == 0 {
                0
            } else {
                ((last_up as u64).wrapping_sub(pdp.scratch[PDP_UNKN_SEC_CNT]) % span) / step_secs
            };
        }
    }
}
