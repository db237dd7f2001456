//! `tune`: change an existing RRD the way `rrdtool tune` 1.7.2 does.
//!
//! Two kinds of change, applied in this order:
//! - **parameters** (`-h -i -a -d -r -p -n -w -f -x -y -z -v -s -S -b`):
//!   edits of the header (and, for `--aberrant-reset`, of some data columns)
//!   made in place. rrdtool edits a shared memory map of the file, so every
//!   option applied before a failing one stays applied; [`Tuner`] reproduces
//!   that by writing the header back even when an option fails.
//! - **structure** (`DS:`, `DEL:`, `RRA:`, `DELRRA:`, `RRA#i:+n|-n|=n`, with
//!   `--step` stretching the file first): the whole file is rebuilt in
//!   memory ([`Image`]) and written to a temporary file renamed over the
//!   original. As in rrdtool every archive comes out in time order (oldest
//!   row first, `cur_row` on the last row), added rows and archives are
//!   filled from the other archives where a classic CF allows, and a new
//!   archive's consolidation scratch is primed from a fitting archive.
//!
//! rrdtool's quirks are reproduced on purpose (the binary is the reference)
//! where they do not lose data: adding a DCOUNTER or DDERIVE source does
//! not raise the file version while adding an MHWPREDICT archive can only
//! lower it; a new archive's primary CDP value is read with a row index
//! used as a value index; new archives' MIN and MAX scratch values start
//! from 0.
//!
//! Deliberately different because rrdtool destroys data there (the project
//! never corrupts a user's data, so compatibility stops where rrdtool
//! does): when an archive is deleted (`DELRRA:i`, `RRA#i:=0`, or a shrink
//! to 0 rows), rrdtool 1.7.2 does not move its read position past the
//! deleted archive's data, so every later archive is overwritten with
//! values read from the wrong place in the old file, and an archive grown
//! in the same call takes its `cur_row` from another archive (by its old
//! index in the new list, past the end of that list in some cases), so
//! the rows it fills get values from the wrong times. rrdscale keeps every
//! kept archive's own data and uses each grown archive's own `cur_row`.
//! Deleting only trailing archives is not affected, and there the result
//! is byte for byte rrdtool's. docs/compatibility.md lists this deviation.
//!
//! Deliberately different from rrdtool (which crashes, writes garbage or
//! writes a file nothing can read in these cases): a `DS:` definition that
//! does not parse is refused before anything is rewritten; deleting every
//! archive, or a Holt-Winters archive with a seasonal period of 0, is
//! refused; the bytes rrdtool leaves uninitialised in an added DS
//! definition (parameter slots 3 to 9) are written as zeros. The caching
//! daemon (`--daemon`) is not supported: the option is accepted and ignored.

use std::path::Path;

use rrd_format::{
    CdpPrep, Cf, DsDef, Dst, Header, HeaderParts, Name, Par, PdpPrep, RraDef, Version, CDP_HW_INTERCEPT,
    CDP_HW_LAST_INTERCEPT, CDP_HW_LAST_SEASONAL, CDP_HW_LAST_SLOPE, CDP_HW_SEASONAL, CDP_HW_SLOPE,
    CDP_INIT_SEASONAL, CDP_LAST_NULL_COUNT, CDP_NULL_COUNT, CDP_PRIMARY_VAL, CDP_SECONDARY_VAL,
    CDP_UNKN_PDP_CNT, CDP_VAL, DS_MAX_VAL, DS_MIN_VAL, DS_MRHB_CNT, LAST_DS_LEN, PDP_UNKN_SEC_CNT, PDP_VAL,
    RRA_DELTA_NEG, RRA_DELTA_POS, RRA_DEPENDENT_RRA_IDX, RRA_FAILURE_THRESHOLD, RRA_HW_ALPHA, RRA_HW_BETA,
    RRA_SEASONAL_GAMMA, RRA_SEASONAL_SMOOTHING_WINDOW, RRA_SEASONAL_SMOOTH_IDX, RRA_WINDOW_LEN,
};

use crate::create;
use crate::error::{Error, Result, Unknown};
use crate::numparse::{self, is_c_space, NumberError, DNAN};
use crate::rrd::Rrd;
use crate::store::Store;

/// Largest failure window (`MAX_FAILURES_WINDOW_LEN`, one copy: `hw`'s).
const MAX_FAILURES_WINDOW_LEN: u64 = crate::hw::MAX_FAILURES_WINDOW_LEN as u64;
/// `RRA_period`: the seasonal period of a HWPREDICT archive while parsing
/// (the slot later holds the smoothing index of seasonal archives).
const RRA_PERIOD: usize = 4;

/// One tune option with its argument as given on the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum TuneOption {
    /// `-h|--heartbeat ds:seconds`
    Heartbeat(String),
    /// `-i|--minimum ds:min` (`U` for unknown)
    Minimum(String),
    /// `-a|--maximum ds:max`
    Maximum(String),
    /// `-d|--data-source-type ds:DST`
    DataSourceType(String),
    /// `-r|--data-source-rename old:new`
    DataSourceRename(String),
    /// `-p|--deltapos value`
    DeltaPos(String),
    /// `-n|--deltaneg value`
    DeltaNeg(String),
    /// `-w|--window-length count`
    WindowLength(String),
    /// `-f|--failure-threshold count`
    FailureThreshold(String),
    /// `-x|--alpha value`
    Alpha(String),
    /// `-y|--beta value`
    Beta(String),
    /// `-z|--gamma value`
    Gamma(String),
    /// `-v|--gamma-deviation value`
    GammaDeviation(String),
    /// `-s|--smoothing-window fraction`
    SmoothingWindow(String),
    /// `-S|--smoothing-window-deviation fraction`
    SmoothingWindowDeviation(String),
    /// `-b|--aberrant-reset ds`
    AberrantReset(String),
    /// `-t|--step seconds`: the new step for structural changes.
    Step(String),
    /// `-D|--daemon address`: accepted and ignored.
    Daemon(String),
}

fn err(msg: impl Into<String>) -> Error {
    Error::invalid(msg)
}

// ---------------------------------------------------------------------------
// C conversions, as rrdtool's sscanf/atoi/strtod calls see their input.

/// `%19[a-zA-Z0-9_-]`: a DS name at the start of `s`, and what follows.
fn scan_ds_name(s: &str) -> Option<(&str, &str)> {
    let n = s.bytes().take(19).take_while(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-').count();
    (n > 0).then(|| s.split_at(n))
}

/// `%19[A-Z]`.
fn scan_upper(s: &str) -> Option<(&str, &str)> {
    let n = s.bytes().take(19).take_while(|c| c.is_ascii_uppercase()).count();
    (n > 0).then(|| s.split_at(n))
}

/// `%40[U0-9.e+-]`.
fn scan_number_chars(s: &str) -> Option<&str> {
    let n = s
        .bytes()
        .take(40)
        .take_while(|c| matches!(c, b'U' | b'0'..=b'9' | b'.' | b'e' | b'+' | b'-'))
        .count();
    (n > 0).then(|| &s[..n])
}

/// `name:rest` as `DS_NAM_FMT ":"` scans it.
fn scan_name_colon(s: &str) -> Option<(&str, &str)> {
    let (name, rest) = scan_ds_name(s)?;
    Some((name, rest.strip_prefix(':')?))
}

/// rrdtool's `rrd_strtodbl` status (2: the whole string is a number or a
/// special like `nan`; 1: a number followed by junk; 0: no number) and the
/// value it leaves behind in each case.
fn strtodbl(s: &str) -> (u32, f64) {
    match numparse::parse_double(s) {
        Ok(v) => (2, v),
        Err(NumberError::Trailing { value, .. }) => (1, value),
        Err(NumberError::NotANumber(_)) => (0, numparse::rrd_strtod(s).0),
    }
}

/// glibc `sscanf("%lf")` on a prefix: the longest leading run that parses as
/// a double (after white space). Hexadecimal floats are not recognised.
fn scan_c_double(s: &str) -> Option<f64> {
    let t = numparse::trim_c_space(s);
    let end = t
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .take_while(|&i| i <= 64)
        .filter(|&i| t[..i].parse::<f64>().is_ok())
        .last()?;
    t[..end].parse().ok()
}

/// Whether `v` is outside [0, 1] (`closed`) or (0, 1), as C's comparisons
/// decide it: NaN compares false, so it is never outside (and rrdtool
/// accepts it), which `RangeInclusive::contains` would get wrong.
#[allow(clippy::manual_range_contains)]
fn outside_unit(v: f64, closed: bool) -> bool {
    if closed {
        v < 0.0 || v > 1.0
    } else {
        v <= 0.0 || v >= 1.0
    }
}

/// `FnvHash`: 32-bit FNV-1 computed in 64-bit arithmetic, as rrdtool seeds
/// the smoothing index of seasonal archives from the file name.
pub fn fnv_hash(name: &[u8]) -> u64 {
    let mut h: u64 = 0x811c_9dc5;
    for &c in name {
        h = h.wrapping_mul(0x0100_0193);
        h ^= u64::from(c);
    }
    h
}

// ---------------------------------------------------------------------------
// In-place parameter changes.

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
                let parsed = scan_name_colon(arg).and_then(|(n, rest)| Some((n, scan_long(rest)?)));
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
                let (name, rest) = scan_name_colon(arg).ok_or_else(bad)?;
                let text = scan_number_chars(rest).ok_or_else(bad)?;
                let value =
                    if text == "U" { DNAN } else { numparse::parse_double(text).map_err(|_| bad())? };
                let ds = self.ds_match(name)?;
                self.rrd.header.ds_par_mut(ds)[slot] = value.to_bits();
            }
            TuneOption::DataSourceType(arg) => {
                let bad = || err("invalid arguments for data source type");
                let (name, rest) = scan_name_colon(arg).ok_or_else(bad)?;
                let (dst_text, _) = scan_upper(rest).ok_or_else(bad)?;
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
                let (old, rest) = scan_name_colon(arg).ok_or_else(bad)?;
                let (new, _) = scan_ds_name(rest).ok_or_else(bad)?;
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
                    scan_ds_name(arg).ok_or_else(|| err("invalid argument for aberrant-reset"))?;
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
        let (status, value) = strtodbl(arg);
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
        let (status, value) = strtodbl(arg);
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

/// `%ld` after white space: sign and digits, clamped like `strtol`.
fn scan_long(s: &str) -> Option<i64> {
    let t = numparse::trim_c_space(s);
    if t.starts_with(['+', '-']) && !t[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let long = numparse::strtol(t, 10);
    (long.consumed > 0).then_some(long.value)
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

fn init_hwpredict_cdp(s: &mut Par) {
    for slot in [CDP_HW_INTERCEPT, CDP_HW_LAST_INTERCEPT, CDP_HW_SLOPE, CDP_HW_LAST_SLOPE] {
        s[slot] = DNAN.to_bits();
    }
    s[CDP_NULL_COUNT] = 1;
    s[CDP_LAST_NULL_COUNT] = 1;
}

/// `init_cdp`: the scratch area of a new archive (or of a new data source
/// in an archive), given the data source's PDP scratch.
fn init_cdp(last_up: i64, step_secs: u64, rra: &RraDef, pdp: &PdpPrep, s: &mut Par) {
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

// ---------------------------------------------------------------------------
// Structural changes.

/// A whole RRD in memory: the header and every value, archives in file
/// order and each archive's rows in file order.
#[derive(Clone, Debug)]
pub struct Image {
    pub header: Header,
    pub values: Vec<f64>,
}

impl Image {
    /// Reads every archive of an open file.
    pub fn read<S: Store>(rrd: &Rrd<S>) -> Result<Image> {
        let mut values = Vec::with_capacity((rrd.layout().file_len - rrd.layout().data_off) as usize / 8);
        for rra in 0..rrd.header.rra_count() {
            values.extend(rrd.read_rra(rra)?);
        }
        Ok(Image { header: rrd.header.clone(), values })
    }

    /// Writes the image to `path` atomically (temporary file + rename).
    pub fn write(&self, path: &Path) -> Result<()> {
        create::write_file_with(path, &self.header, false, |out| {
            let mut buf = Vec::with_capacity(1 << 16);
            for chunk in self.values.chunks(8192) {
                buf.clear();
                rrd_format::encode_values(chunk, &mut buf);
                out.write_all(&buf)?;
            }
            Ok(())
        })
    }
}

/// One archive operation of a structural change.
#[derive(Clone, Debug, PartialEq)]
pub struct RraModOp {
    /// `+`, `-`, `=` (rows; `DELRRA` is `=0`) or `a` (add an archive).
    pub op: u8,
    /// The archive (as numbered before the change); -1 for additions.
    pub index: i32,
    pub row_count: u32,
    /// `RRA:...` for additions.
    pub def: Option<String>,
    final_row_count: u32,
}

/// The structural arguments of one `tune` call, in the order given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModifyPlan {
    /// Names from `DEL:name`.
    pub delete_ds: Vec<String>,
    /// Whole `DS:...` arguments.
    pub add_ds: Vec<String>,
    pub rra_ops: Vec<RraModOp>,
}

impl ModifyPlan {
    pub fn is_empty(&self) -> bool {
        self.delete_ds.is_empty() && self.add_ds.is_empty() && self.rra_ops.is_empty()
    }
}

/// `%u` as glibc's scanf reads it: white space, a sign, decimal digits,
/// stored as `unsigned int`. Returns the value and the rest.
fn scan_unsigned(s: &str) -> Option<(u32, &str)> {
    let t = numparse::trim_c_space(s);
    let b = t.as_bytes();
    let mut p = usize::from(t.starts_with(['+', '-']));
    let start = p;
    while p < b.len() && b[p].is_ascii_digit() {
        p += 1;
    }
    if p == start {
        return None;
    }
    let magnitude = t[start..p].parse::<u64>().unwrap_or(u64::MAX);
    let v = if t.starts_with('-') { magnitude.wrapping_neg() } else { magnitude };
    Some((v as u32, &t[p..]))
}

/// Sorts the arguments after the file name into a plan (`handle_modify`'s
/// parsing), with rrdtool's messages for what it cannot parse.
pub fn parse_modify_args(args: &[String]) -> Result<ModifyPlan> {
    let mut plan = ModifyPlan::default();
    for arg in args {
        if let Some(name) = arg.strip_prefix("DEL:").filter(|r| !r.is_empty()) {
            plan.delete_ds.push(name.to_string());
        } else if arg.starts_with("DS:") && arg.len() > 3 {
            plan.add_ds.push(arg.clone());
        } else if let Some(spec) = arg.strip_prefix("RRA#").filter(|r| !r.is_empty()) {
            let parsed = scan_unsigned(spec).and_then(|(index, rest)| {
                let rest = rest.strip_prefix(':')?;
                let sign = rest.chars().next()?;
                let (number, _) = scan_unsigned(&rest[sign.len_utf8()..])?;
                Some((index, sign, number))
            });
            let (index, sign, number) = parsed.ok_or_else(|| err("Failed to parse RRA# command"))?;
            if !matches!(sign, '=' | '-' | '+') {
                return Err(err(format!("Failed to parse RRA# command: invalid operation: {sign}")));
            }
            plan.rra_ops.push(RraModOp {
                op: sign as u8,
                index: index as i32,
                row_count: number,
                def: None,
                final_row_count: 0,
            });
        } else if arg.starts_with("RRA:") && arg.len() > 4 {
            plan.rra_ops.push(RraModOp {
                op: b'a',
                index: -1,
                row_count: 0,
                def: Some(arg.clone()),
                final_row_count: 0,
            });
        } else if let Some(index) = arg.strip_prefix("DELRRA:").filter(|r| !r.is_empty()) {
            let index = numparse::atoi(index);
            if index < 0 {
                return Err(err("DELRRA requires a non-negative, integer argument"));
            }
            plan.rra_ops.push(RraModOp { op: b'=', index, row_count: 0, def: None, final_row_count: 0 });
        } else {
            return Err(err(format!("unparseable argument: {arg}")));
        }
    }
    Ok(plan)
}

#[derive(Clone, Copy, PartialEq)]
enum DsOp {
    Copy,
    Delete,
    Add,
}

/// An archive of the input that may fill rows or scratch of another.
struct Candidate {
    index: usize,
    value_base: usize,
}

/// `find_candidate_rras` with `select_for_modify`: archives of the same CF,
/// or AVERAGE ones, finest step first and then the longest.
fn find_candidates(inp: &Image, tofill: &RraDef) -> Vec<Candidate> {
    let h = &inp.header;
    let mut out = Vec::new();
    let mut rows_before = 0u64;
    for (i, other) in h.rra().iter().enumerate() {
        if other.cf == tofill.cf || other.cf == Cf::Average {
            out.push(Candidate { index: i, value_base: rows_before as usize * h.ds().len() });
        }
        rows_before += other.row_count;
    }
    // glibc's qsort is a stable merge sort here, and so is `sort_by`.
    out.sort_by(|a, b| {
        let (ra, rb) = (&h.rra()[a.index], &h.rra()[b.index]);
        if ra.pdp_count == rb.pdp_count {
            rb.row_count.cmp(&ra.row_count)
        } else {
            ra.pdp_count.cmp(&rb.pdp_count)
        }
    });
    out
}

/// `a % b` made non-negative (rrdtool's `positive_mod`, on `int`s).
fn positive_mod(a: i32, b: i32) -> i32 {
    if b == 0 {
        return 0;
    }
    let x = a.wrapping_rem(b);
    if x < 0 {
        x + b
    } else {
        x
    }
}

/// What row times are computed from: the step and the last update of a
/// header, whether built (`HeaderParts`) or validated (`Header`).
#[derive(Clone, Copy)]
struct TimeBase {
    step: u64,
    last_up: i64,
}

impl From<&Header> for TimeBase {
    fn from(h: &Header) -> TimeBase {
        TimeBase { step: h.pdp_step(), last_up: h.live().last_up }
    }
}

impl From<&HeaderParts> for TimeBase {
    fn from(h: &HeaderParts) -> TimeBase {
        TimeBase { step: h.pdp_step, last_up: h.live.last_up }
    }
}

/// Seconds covered by one row of `rra`, as the C `int` rrdtool keeps it in.
fn timeslot(h: TimeBase, rra: &RraDef) -> i32 {
    rra.pdp_count.wrapping_mul(h.step) as i32
}

/// `end_time_for_row`: the end of the interval row `row` stands for, when
/// the archive's newest row is `cur_row`.
fn end_time_for_row(h: TimeBase, rra: &RraDef, cur_row: i32, row: i32) -> i64 {
    let slot = timeslot(h, rra);
    if slot == 0 {
        return 0;
    }
    let past = positive_mod(cur_row.wrapping_sub(row), rra.row_count as i32);
    let last_up = h.last_up;
    (last_up - last_up % i64::from(slot)) - i64::from(past.wrapping_mul(slot))
}

/// `row_for_time`: the row of `rra` whose interval holds `req_time`, or -1.
fn row_for_time(h: TimeBase, rra: &RraDef, cur_row: i32, req_time: i64) -> i32 {
    let slot = timeslot(h, rra);
    if slot == 0 {
        return -1;
    }
    let ts = i64::from(slot);
    let mut req = req_time;
    let delta = req % ts;
    if delta > 0 {
        req += ts - delta;
    }
    let mut last_up = h.last_up;
    let delta = req % ts;
    if delta > 0 {
        last_up += ts - delta;
    }
    if req > last_up {
        return -1;
    }
    let oldest = (last_up as i32).wrapping_sub((rra.row_count as i32).wrapping_mul(slot));
    if req <= i64::from(oldest) {
        return -1;
    }
    let past = ((last_up - req) / ts) as i32;
    if past >= rra.row_count as i32 {
        return -1;
    }
    positive_mod(cur_row.wrapping_sub(past), rra.row_count as i32)
}

/// `populate_row`: fills the still-unknown values of rows
/// `start..start + count` of a new or grown archive (`values` holds its
/// rows, newest at `cur_row`) from the input's archives. Only the classic
/// consolidation functions are filled.
#[allow(clippy::too_many_arguments)]
fn populate_rows(
    inp: &Image,
    out: &HeaderParts,
    ds_map: &[i32],
    new_rra: &RraDef,
    cur_row: i32,
    values: &mut [f64],
    start: i32,
    count: i32,
) {
    if inp.header.rra().is_empty() || !new_rra.cf.is_classic() {
        return;
    }
    let candidates = find_candidates(inp, new_rra);
    let ih = &inp.header;
    let in_ds = ih.ds().len();
    let out_ds = out.ds.len();
    let new_slot = new_rra.pdp_count.wrapping_mul(out.pdp_step) as i64;
    for ri in 0..count {
        let row = start + ri;
        let row_end = end_time_for_row(out.into(), new_rra, cur_row, row);
        let row_start = row_end - new_slot + 1;
        for c in &candidates {
            let r = &ih.rra()[c.index];
            let cand_cur = ih.rra_ptr()[c.index] as i32;
            let mut first = row_for_time(ih.into(), r, cand_cur, row_start);
            let mut last = row_for_time(ih.into(), r, cand_cur, row_end);
            if first == -1 && last != -1 {
                first = cand_cur;
            } else if first != -1 && last == -1 {
                last = ((i64::from(cand_cur) - 1) as u64 % r.row_count) as i32;
            } else if first == -1 && last == -1 {
                continue;
            }
            let mut cand_rows = last - first + 1;
            if cand_rows < 0 {
                cand_rows = (cand_rows as u64).wrapping_add(r.row_count) as i32;
            }
            let cand_slot = f64::from(timeslot(ih.into(), r));
            for (k, &in_k) in ds_map.iter().enumerate() {
                let idx = row as usize * out_ds + k;
                if idx >= values.len() || !values[idx].is_nan() {
                    continue;
                }
                let Ok(in_k) = usize::try_from(in_k) else { continue };
                let (mut acc, mut result, mut covered) = (DNAN, DNAN, 0.0f64);
                let mut cand_row = first as u64;
                for _ in 0..cand_rows {
                    let v = inp.values[c.value_base + cand_row as usize * in_ds + in_k];
                    cand_row = (cand_row + 1) % r.row_count;
                    if v.is_nan() {
                        continue;
                    }
                    match new_rra.cf {
                        Cf::Average => {
                            acc = if acc.is_nan() { v * cand_slot } else { acc + v * cand_slot };
                            covered += cand_slot;
                            result = acc / covered;
                        }
                        Cf::Minimum => {
                            acc = if acc.is_nan() || v <= acc { v } else { acc };
                            result = acc;
                        }
                        Cf::Maximum => {
                            acc = if acc.is_nan() || v >= acc { v } else { acc };
                            result = acc;
                        }
                        _ => {
                            acc = v;
                            result = v;
                        }
                    }
                }
                values[idx] = result;
            }
        }
    }
}

/// `prepare_CDPs`: the scratch area of a new archive `curr`, primed from
/// the finest fitting archive of the input so that the next update
/// continues the interval in progress.
fn prepare_cdps(
    inp: &Image,
    out: &mut HeaderParts,
    curr: usize,
    rows_before: usize,
    ds_map: &[i32],
    values: &[f64],
) {
    let rra_def = out.rra[curr].clone();
    let candidates = find_candidates(inp, &rra_def);
    let ih = &inp.header;
    let chosen =
        candidates.iter().find(|c| ih.rra()[c.index].pdp_count == 1 || ih.rra()[c.index].cf == Cf::Average);
    let out_ds = out.ds.len();
    let in_ds = ih.ds().len();
    for (i, &mapped) in ds_map.iter().enumerate() {
        let mut s: Par = [0; 10];
        init_cdp(out.live.last_up, out.pdp_step, &rra_def, &out.pdp[i], &mut s);
        if let (Some(c), Ok(mapped)) = (chosen, usize::try_from(mapped)) {
            let cand = &ih.rra()[c.index];
            let cand_cur = ih.rra_ptr()[c.index] as i32;
            let last_up = ih.live().last_up;
            let slot = i64::from(rra_def.pdp_count.wrapping_mul(ih.pdp_step()) as i32);
            if slot != 0 {
                let delta = last_up % slot;
                let end_time = if delta != 0 { last_up - delta + slot } else { last_up };
                let start_time = end_time - slot + 1;
                let start_row = row_for_time(ih.into(), cand, cand_cur, start_time);
                let end_row = if end_time >= last_up {
                    cand_cur
                } else {
                    row_for_time(ih.into(), cand, cand_cur, end_time)
                };
                let mut count = end_row - start_row + 1;
                if end_row < start_row {
                    count = (count as u64).wrapping_add(cand.row_count) as i32;
                }
                s = [0; 10];
                // rrdtool indexes the value array with a row count here.
                let curr_idx = rows_before + out_ds * out.rra_ptr[curr] as usize + i;
                s[CDP_PRIMARY_VAL] = values.get(curr_idx).copied().unwrap_or(DNAN).to_bits();
                s[CDP_VAL] = 0.0f64.to_bits();
                let cand_value = |row: u64| inp.values[c.value_base + row as usize * in_ds + mapped];
                if start_row == -1 {
                    s[CDP_SECONDARY_VAL] = ih.cdp()[c.index * in_ds + mapped].scratch[CDP_PRIMARY_VAL];
                } else {
                    let pre_start = if start_row == 0 { cand.row_count - 1 } else { start_row as u64 - 1 };
                    s[CDP_SECONDARY_VAL] = cand_value(pre_start).to_bits();
                    for j in 0..count.max(0) as u64 {
                        let v = cand_value((start_row as u64 + j) % cand.row_count);
                        if v.is_nan() {
                            s[CDP_UNKN_PDP_CNT] = s[CDP_UNKN_PDP_CNT].wrapping_add(1);
                        } else {
                            let cdp = f64::from_bits(s[CDP_VAL]);
                            s[CDP_VAL] = consolidate(cdp, v, rra_def.cf).to_bits();
                        }
                    }
                }
            }
        }
        let idx = curr * out_ds + i;
        out.cdp[idx].scratch = s;
    }
}

/// `calculate_cdp_val` for one elapsed PDP.
fn consolidate(cdp: f64, v: f64, cf: Cf) -> f64 {
    if cdp.is_nan() {
        return v;
    }
    match cf {
        Cf::Average => cdp + v,
        Cf::Minimum => {
            if v < cdp {
                v
            } else {
                cdp
            }
        }
        Cf::Maximum => {
            if v > cdp {
                v
            } else {
                cdp
            }
        }
        _ => v,
    }
}

/// Parses an `RRA:` argument of `tune` (all CFs, Holt-Winters included);
/// `require_version` records the version the archive needs.
pub(crate) fn parse_rra_def(
    def: &str,
    step_secs: u64,
    hash: u64,
    require_version: &mut Option<u8>,
) -> Result<RraDef> {
    let tokens: Vec<&str> = def[4..].split(':').filter(|t| !t.is_empty()).collect();
    let cf = tokens.first().and_then(|t| scan_upper(t)).and_then(|(name, _)| Cf::parse(name));
    match cf {
        Some(cf) if !cf.is_classic() => parse_hw_rra(cf, &tokens, step_secs, hash, require_version),
        _ => create::parse_rra(def, step_secs),
    }
}

/// The Holt-Winters part of `parseRRA`.
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
        let (status, v) = strtodbl(t);
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
                    Some(rest) => scan_c_double(rest).map(Some),
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

/// `rrd_modify_structure`: one pass of DS and archive changes.
fn modify_structure(
    inp: &Image,
    delete_ds: &[String],
    add_ds: &[String],
    ops: &mut [RraModOp],
    hash: u64,
) -> Result<Image> {
    let ih = &inp.header;
    if !(3..=5).contains(&ih.version().0) {
        return Err(err("direct modification is only supported for version 3, 4 or 5 of RRD files. \
             Consider to dump/restore before retrying a modification"));
    }
    let in_ds = ih.ds().len();
    let mut out = HeaderParts {
        version: ih.version(),
        stat_pad: [0; 7],
        pdp_step: ih.pdp_step(),
        stat_par: [0; 10],
        ds: Vec::new(),
        rra: Vec::new(),
        live: *ih.live(),
        pdp: Vec::new(),
        cdp: Vec::new(),
        rra_ptr: Vec::new(),
    };
    let mut ds_ops: Vec<DsOp> = ih
        .ds()
        .iter()
        .map(|d| if delete_ds.iter().any(|n| n == d.name.as_str()) { DsOp::Delete } else { DsOp::Copy })
        .collect();
    for (i, op) in ds_ops.iter().enumerate() {
        if *op == DsOp::Copy {
            out.ds.push(ih.ds()[i].clone());
            out.pdp.push(ih.pdp()[i].clone());
        }
    }
    let mut names = create::DsNames::new(out.ds.iter().map(|d| d.name.as_str()));
    for arg in add_ds {
        let def: DsDef = names.parse_next(&arg[3..])?;
        out.ds.push(def);
        let mut pdp = PdpPrep { last_ds: [0; LAST_DS_LEN], pad: [0; 2], scratch: [0; 10] };
        pdp.set_last_ds("U");
        pdp.scratch[PDP_VAL] = 0.0f64.to_bits();
        pdp.scratch[PDP_UNKN_SEC_CNT] = (out.live.last_up as u64) % out.pdp_step;
        out.pdp.push(pdp);
        ds_ops.push(DsOp::Add);
    }
    if out.ds.is_empty() {
        // rrdtool fails its allocation of an empty DS area with this message.
        return Err(err("Cannot allocate memory"));
    }
    let out_ds = out.ds.len();
    let mut ds_map = Vec::with_capacity(out_ds);
    for (i, op) in ds_ops.iter().enumerate() {
        match op {
            DsOp::Copy => ds_map.push(i as i32),
            DsOp::Add => ds_map.push(-1),
            DsOp::Delete => {}
        }
    }

    // Archive definitions and scratch areas (`handle_rra_defs`).
    for (j, in_rra) in ih.rra().iter().enumerate() {
        let mut final_rows = in_rra.row_count as i32;
        if let Some(op) = ops.iter_mut().find(|o| o.index == j as i32) {
            match op.op {
                b'=' => final_rows = op.row_count as i32,
                b'-' => final_rows = final_rows.wrapping_sub(op.row_count as i32),
                b'+' => final_rows = final_rows.wrapping_add(op.row_count as i32),
                _ => {}
            }
            final_rows = final_rows.max(0);
            op.final_row_count = final_rows as u32;
        }
        if final_rows == 0 {
            continue;
        }
        let mut def = in_rra.clone();
        def.row_count = final_rows as u64;
        let out_index = out.rra.len();
        out.rra.push(def);
        out.rra_ptr.push(final_rows as u64 - 1);
        let mut out_k = 0;
        for (i, op) in ds_ops.iter().enumerate() {
            match op {
                DsOp::Copy => out.cdp.push(ih.cdp()[j * in_ds + i].clone()),
                DsOp::Add => {
                    let mut s = [0; 10];
                    init_cdp(out.live.last_up, out.pdp_step, &out.rra[out_index], &out.pdp[out_k], &mut s);
                    out.cdp.push(CdpPrep { scratch: s });
                }
                DsOp::Delete => continue,
            }
            out_k += 1;
        }
    }
    // Data of the kept archives, oldest row first (`mod_rras`).
    let total_rows: u64 = out.rra.iter().map(|r| r.row_count).sum();
    let mut values = vec![DNAN; total_rows as usize * out_ds];
    let (mut in_base, mut out_base, mut out_rra) = (0usize, 0usize, 0usize);
    for (rra_index, in_rra) in ih.rra().iter().enumerate() {
        let in_values = in_rra.row_count as usize * in_ds;
        let op = ops.iter().find(|o| o.index == rra_index as i32);
        if op.is_some_and(|o| o.final_row_count == 0) {
            // Skip the deleted archive's data too, so that the archives
            // after it read their own (rrdtool 1.7.2 does not: see the
            // module docs).
            in_base += in_values;
            continue;
        }
        let in_rows = in_rra.row_count;
        let out_rows = out.rra[out_rra].row_count;
        let out_values = out_rows as usize * out_ds;
        let (mut ii, mut oi) = (0u64, 0u64);
        if let Some(op) = op {
            let (mut kind, mut count) = (op.op, op.row_count);
            if kind == b'=' {
                if u64::from(count) < in_rows {
                    count = (in_rows - u64::from(count)) as u32;
                    kind = b'-';
                } else if u64::from(count) > in_rows {
                    count = (u64::from(count) - in_rows) as u32;
                    kind = b'+';
                }
            }
            match kind {
                b'-' => ii = u64::from(count),
                b'+' => {
                    // New rows go in front (they are the oldest) and are
                    // filled from the other archives where possible.
                    oi = u64::from(count).min(out_rows);
                    // The archive's own cur_row (its last row). rrdtool
                    // looks it up by the old index in the new list, which
                    // names another archive once an earlier one is deleted.
                    let cur_row = out.rra_ptr[out_rra] as i32;
                    let rra_def = out.rra[out_rra].clone();
                    populate_rows(
                        inp,
                        &out,
                        &ds_map,
                        &rra_def,
                        cur_row,
                        &mut values[out_base..out_base + out_values],
                        0,
                        oi as i32,
                    );
                }
                _ => {}
            }
        }
        let in_cur = ih.rra_ptr()[rra_index];
        while ii < in_rows && oi < out_rows {
            let real_ii = ((ii + in_cur + 1) % in_rows) as usize;
            let mut jj = 0;
            for (j, op) in ds_ops.iter().enumerate() {
                let dst = out_base + oi as usize * out_ds + jj;
                match op {
                    DsOp::Copy => values[dst] = inp.values[in_base + real_ii * in_ds + j],
                    DsOp::Add => values[dst] = DNAN,
                    DsOp::Delete => continue,
                }
                jj += 1;
            }
            ii += 1;
            oi += 1;
        }
        in_base += in_values;
        out_base += out_values;
        out_rra += 1;
    }

    // New archives (`add_rras`).
    let last_rra_count = out.rra.len();
    let mut require_version = None;
    for op in ops.iter().filter(|o| o.op == b'a') {
        let def = op.def.as_deref().unwrap_or("RRA:");
        let rra = parse_rra_def(def, out.pdp_step, hash, &mut require_version)?;
        out.rra.push(rra);
        handle_dependent_rras(&mut out.rra, hash)?;
    }
    if out.rra.is_empty() {
        return Err(err("refusing to delete every RRA: the file would have no round robin archive left"));
    }
    if let Some(v) = require_version {
        if v < out.version.0 {
            out.version = Version(v);
        }
    }
    let mut rows_before = total_rows as usize;
    for curr in last_rra_count..out.rra.len() {
        let rows = out.rra[curr].row_count;
        out.cdp.extend((0..out_ds).map(|_| CdpPrep { scratch: [0; 10] }));
        out.rra_ptr.push(rows - 1);
        let base = values.len();
        values.resize(base + rows as usize * out_ds, DNAN);
        let rra_def = out.rra[curr].clone();
        populate_rows(inp, &out, &ds_map, &rra_def, rows as i32 - 1, &mut values[base..], 0, rows as i32);
        prepare_cdps(inp, &mut out, curr, rows_before, &ds_map, &values);
        rows_before += rows as usize;
    }
    let header = Header::from_parts(out).map_err(|e| err(format!("the RRD would be too large: {e}")))?;
    Ok(Image { header, values })
}

/// `stretch_rras`: the step shrinks by `factor` and every archive
/// consolidates `factor` times as many PDPs, so rows keep their meaning.
fn stretch(img: &mut Image, factor: u64) -> Result<()> {
    let mut h = img.header.clone().into_parts();
    let ds = h.ds.len();
    for (r, rra) in h.rra.iter_mut().enumerate() {
        if rra.cf.is_classic() {
            for d in 0..ds {
                // rrdtool multiplies the count's bits as a double.
                let slot = &mut h.cdp[r * ds + d].scratch[CDP_UNKN_PDP_CNT];
                *slot = (f64::from_bits(*slot) * factor as f64).to_bits();
            }
        }
        rra.pdp_count = rra.pdp_count.wrapping_mul(factor);
    }
    h.pdp_step /= factor;
    img.header = Header::from_parts(h).map_err(|e| err(format!("invalid 'newstep' parameter: {e}")))?;
    Ok(())
}

/// `rrd_modify_r2`: the structural change of one `tune` call, with the
/// optional new step applied first. `hash` is [`fnv_hash`] of the file name
/// as given.
pub fn modify(inp: &Image, plan: &ModifyPlan, new_step: i32, hash: u64) -> Result<Image> {
    let mut ops = plan.rra_ops.clone();
    if new_step > 0 {
        let step = inp.header.pdp_step();
        let new_step = new_step as u64;
        if step.checked_rem(new_step) != Some(0) || step / new_step <= 1 {
            return Err(err(
                "invalid 'newstep' parameter. The newsize must divide the old step parameter without a remainder.",
            ));
        }
        let mut stretched = modify_structure(inp, &[], &[], &mut [], hash)?;
        stretch(&mut stretched, step / new_step)?;
        modify_structure(&stretched, &plan.delete_ds, &plan.add_ds, &mut ops, hash)
    } else {
        modify_structure(inp, &plan.delete_ds, &plan.add_ds, &mut ops, hash)
    }
}

/// `rrdtool tune path options... structural-args...`: applies `options` in
/// order (writing the header back even when one fails, as rrdtool's memory
/// map does), then the structural arguments, rewriting the file if there
/// are any.
pub fn tune(path: &Path, options: &[TuneOption], structural: &[String]) -> Result<()> {
    let mut tuner = Tuner::open(path)?;
    for opt in options {
        if let Err(e) = tuner.apply(opt) {
            tuner.write_header()?;
            return Err(e);
        }
    }
    tuner.write_header()?;
    finish_modify(&tuner, path, structural)
}

/// The structural part of [`tune`], on a tuner whose options are applied.
pub fn finish_modify<S: Store>(tuner: &Tuner<S>, path: &Path, structural: &[String]) -> Result<()> {
    let plan = parse_modify_args(structural)?;
    if plan.is_empty() {
        return Ok(());
    }
    let image = Image::read(&tuner.rrd)?;
    let hash = fnv_hash(path.as_os_str().as_encoded_bytes());
    let out = modify(&image, &plan, tuner.new_step, hash)?;
    out.write(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testfile::defs as s;

    fn image(defs: &[&str]) -> Image {
        let mut header = crate::testfile::header(defs);
        for r in 0..header.rra_count() {
            header.set_cur_row(r, 0).unwrap();
        }
        let n = header.layout().file_len - header.layout().data_off;
        Image { header, values: (0..n / 8).map(|i| i as f64).collect() }
    }

    #[test]
    fn scans_match_libc() {
        assert_eq!(scan_long("99999999999999999999"), Some(i64::MAX));
        assert_eq!(scan_long(" -5x"), Some(-5));
        assert_eq!(scan_long("- 5"), None);
        assert_eq!(scan_unsigned("-1"), Some((u32::MAX, "")));
        assert_eq!(fnv_hash(b""), 0x811c_9dc5);
        assert_eq!(fnv_hash(b"a"), 0x811c_9dc5u64.wrapping_mul(0x0100_0193) ^ 0x61);
    }

    #[test]
    fn modify_arguments_parse_as_rrdtool_does() {
        let plan = parse_modify_args(&s(&["DEL:a", "DS:b:GAUGE:600:U:U", "RRA#1:+5", "DELRRA:abc"])).unwrap();
        assert_eq!(plan.delete_ds, ["a"]);
        assert_eq!(plan.add_ds, ["DS:b:GAUGE:600:U:U"]);
        assert_eq!((plan.rra_ops[0].op, plan.rra_ops[0].index, plan.rra_ops[0].row_count), (b'+', 1, 5));
        assert_eq!((plan.rra_ops[1].op, plan.rra_ops[1].index, plan.rra_ops[1].row_count), (b'=', 0, 0));
        let msg = |a: &str| parse_modify_args(&s(&[a])).unwrap_err().to_string();
        assert_eq!(msg("RRA#0:*3"), "Failed to parse RRA# command: invalid operation: *");
        assert_eq!(msg("RRA#x:+3"), "Failed to parse RRA# command");
        assert_eq!(msg("DELRRA:-1"), "DELRRA requires a non-negative, integer argument");
        assert_eq!(msg("DEL:"), "unparseable argument: DEL:");
    }

    #[test]
    fn growing_puts_new_rows_first_and_cur_row_last() {
        let img = image(&["DS:a:GAUGE:600:U:U", "RRA:LAST:0.5:1:3"]);
        let plan = parse_modify_args(&s(&["RRA#0:+2"])).unwrap();
        let out = modify(&img, &plan, 0, 0).unwrap();
        assert_eq!(out.header.rra()[0].row_count, 5);
        assert_eq!(out.header.rra_ptr()[0], 4);
        // Input rows 0,1,2 with cur_row 0: oldest is row 1.
        assert!(out.values[0].is_nan() && out.values[1].is_nan());
        assert_eq!(&out.values[2..], &[1.0, 2.0, 0.0]);
    }

    #[test]
    fn deleting_a_source_drops_its_column_and_scratch() {
        let img = image(&["DS:a:GAUGE:600:U:U", "DS:b:GAUGE:600:U:U", "RRA:LAST:0.5:1:2"]);
        let plan = parse_modify_args(&s(&["DEL:a"])).unwrap();
        let out = modify(&img, &plan, 0, 0).unwrap();
        assert_eq!(out.header.ds().len(), 1);
        assert_eq!(out.header.cdp().len(), 1);
        // Rows (a,b): (0,1) (2,3), cur_row 0, so time order is row 1, row 0.
        assert_eq!(out.values, [3.0, 1.0]);
        let none = parse_modify_args(&s(&["DEL:a", "DEL:b"])).unwrap();
        assert_eq!(modify(&img, &none, 0, 0).unwrap_err().to_string(), "Cannot allocate memory");
    }

    #[test]
    fn deleting_an_archive_keeps_the_data_of_the_later_ones() {
        let img = image(&["DS:a:GAUGE:600:U:U", "RRA:LAST:0.5:1:2", "RRA:LAST:0.5:1:3", "RRA:MAX:0.5:1:2"]);
        // File order: archive 0 holds 0,1; archive 1 holds 2,3,4; archive 2
        // holds 5,6; every cur_row is 0, so each starts at its row 1.
        for args in [&["DELRRA:0"][..], &["RRA#0:=0"], &["RRA#0:-5"]] {
            let plan = parse_modify_args(&s(args)).unwrap();
            let out = modify(&img, &plan, 0, 0).unwrap();
            assert_eq!(out.header.rra().len(), 2, "{args:?}");
            assert_eq!(out.values, [3.0, 4.0, 2.0, 6.0, 5.0], "{args:?}");
            assert_eq!(out.header.rra_ptr(), [2, 1], "{args:?}");
        }
        let plan = parse_modify_args(&s(&["DELRRA:1"])).unwrap();
        assert_eq!(modify(&img, &plan, 0, 0).unwrap().values, [1.0, 0.0, 6.0, 5.0]);
    }

    #[test]
    fn stretching_needs_a_divisor_of_the_step() {
        let img = image(&["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:2:2"]);
        let plan = parse_modify_args(&s(&["RRA#0:+1"])).unwrap();
        assert!(modify(&img, &plan, 7, 0).unwrap_err().to_string().starts_with("invalid 'newstep'"));
        let out = modify(&img, &plan, 100, 0).unwrap();
        assert_eq!((out.header.pdp_step(), out.header.rra()[0].pdp_count), (100, 6));
    }

    #[test]
    fn hw_archives_bring_their_dependents() {
        let img = image(&["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"]);
        let plan = parse_modify_args(&s(&["RRA:HWPREDICT:20:0.5:0.1:5"])).unwrap();
        let out = modify(&img, &plan, 0, 12345).unwrap();
        let cfs: Vec<Cf> = out.header.rra().iter().map(|r| r.cf).collect();
        assert_eq!(
            cfs,
            [Cf::Average, Cf::HwPredict, Cf::Seasonal, Cf::DevSeasonal, Cf::DevPredict, Cf::Failures]
        );
        assert_eq!(out.header.rra()[1].par[RRA_DEPENDENT_RRA_IDX], 2);
        assert_eq!(out.header.rra()[2].par[RRA_SEASONAL_SMOOTH_IDX], 12345 % 5);
        assert_eq!(out.header.rra()[5].par[RRA_WINDOW_LEN], 9);
        let bad = parse_modify_args(&s(&["RRA:HWPREDICT:20:1.5:0.1:5"])).unwrap();
        assert_eq!(
            modify(&img, &bad, 0, 0).unwrap_err().to_string(),
            "Invalid alpha: must be between 0 and 1"
        );
    }
}
