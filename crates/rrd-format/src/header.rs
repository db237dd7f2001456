//! The header of an RRD file as Rust structs, decoded from and encoded to the
//! exact bytes RRDtool 1.7 writes on x86_64.
//!
//! Decoding validates everything later arithmetic relies on (counts, step,
//! row counts, `cur_row`, NUL-terminated names, the file length) so that the
//! engine can index without re-checking. Every byte is kept, padding
//! included, so that encode(decode(bytes)) == bytes: a file we rewrite
//! differs from the original only where the update changed it.
//!
//! The 8-byte `unival` parameter slots are kept as raw bits (`u64`); whether a
//! slot is a count or a double depends on its index and the DS type or CF,
//! and the accessors below interpret them.

use crate::error::FormatError;
use crate::layout::{self, Layout};

/// "RRD\0": the first four bytes of every RRD file.
pub const COOKIE: [u8; 4] = *b"RRD\0";
/// A double stored in every file to detect a foreign float representation.
pub const FLOAT_COOKIE: f64 = 8.642135E130;
/// Longest data source name (the field is 20 bytes, NUL-terminated).
pub const DS_NAME_MAX: usize = 19;
pub const LAST_DS_LEN: usize = 30;

/// `unival` slots of a DS definition.
pub const DS_MRHB_CNT: usize = 0;
pub const DS_MIN_VAL: usize = 1;
pub const DS_MAX_VAL: usize = 2;
/// `unival` slots of an RRA definition.
pub const RRA_CDP_XFF_VAL: usize = 0;
pub const RRA_HW_ALPHA: usize = 1;
pub const RRA_HW_BETA: usize = 2;
pub const RRA_DEPENDENT_RRA_IDX: usize = 3;
pub const RRA_SEASONAL_GAMMA: usize = 1;
pub const RRA_SEASONAL_SMOOTHING_WINDOW: usize = 2;
pub const RRA_SEASONAL_SMOOTH_IDX: usize = 4;
pub const RRA_DELTA_POS: usize = 1;
pub const RRA_DELTA_NEG: usize = 2;
pub const RRA_WINDOW_LEN: usize = 4;
pub const RRA_FAILURE_THRESHOLD: usize = 5;
/// `unival` slots of a PDP scratch area.
pub const PDP_UNKN_SEC_CNT: usize = 0;
pub const PDP_VAL: usize = 1;
/// `unival` slots of a CDP scratch area.
pub const CDP_VAL: usize = 0;
pub const CDP_UNKN_PDP_CNT: usize = 1;
pub const CDP_HW_INTERCEPT: usize = 2;
pub const CDP_HW_LAST_INTERCEPT: usize = 3;
pub const CDP_HW_SLOPE: usize = 4;
pub const CDP_HW_LAST_SLOPE: usize = 5;
pub const CDP_NULL_COUNT: usize = 6;
pub const CDP_LAST_NULL_COUNT: usize = 7;
pub const CDP_PRIMARY_VAL: usize = 8;
pub const CDP_SECONDARY_VAL: usize = 9;
pub const CDP_HW_SEASONAL: usize = CDP_HW_INTERCEPT;
pub const CDP_HW_LAST_SEASONAL: usize = CDP_HW_LAST_INTERCEPT;
pub const CDP_SEASONAL_DEVIATION: usize = CDP_HW_INTERCEPT;
pub const CDP_LAST_SEASONAL_DEVIATION: usize = CDP_HW_LAST_INTERCEPT;
pub const CDP_INIT_SEASONAL: usize = CDP_NULL_COUNT;

/// Ten 8-byte slots, each a count or a double depending on context.
pub type Par = [u64; 10];

/// The file format version ("0001" … "0005").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u8);

impl Version {
    pub fn parse(bytes: &[u8; 5]) -> Option<Version> {
        match bytes {
            b"0001\0" => Some(Version(1)),
            b"0002\0" => Some(Version(2)),
            b"0003\0" => Some(Version(3)),
            b"0004\0" => Some(Version(4)),
            b"0005\0" => Some(Version(5)),
            _ => None,
        }
    }

    pub fn as_bytes(self) -> [u8; 5] {
        let mut b = *b"0000\0";
        b[3] = b'0' + self.0;
        b
    }

    pub fn as_str(self) -> String {
        format!("000{}", self.0)
    }

    /// Versions before 0003 have no microseconds in the live head.
    pub fn live_head_len(self) -> u64 {
        if self.0 >= 3 {
            16
        } else {
            8
        }
    }
}

/// Data source types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dst {
    Counter,
    Absolute,
    Gauge,
    Derive,
    Dcounter,
    Dderive,
    Compute,
}

impl Dst {
    pub fn parse(name: &str) -> Option<Dst> {
        Some(match name {
            "COUNTER" => Dst::Counter,
            "ABSOLUTE" => Dst::Absolute,
            "GAUGE" => Dst::Gauge,
            "DERIVE" => Dst::Derive,
            "DCOUNTER" => Dst::Dcounter,
            "DDERIVE" => Dst::Dderive,
            "COMPUTE" => Dst::Compute,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Dst::Counter => "COUNTER",
            Dst::Absolute => "ABSOLUTE",
            Dst::Gauge => "GAUGE",
            Dst::Derive => "DERIVE",
            Dst::Dcounter => "DCOUNTER",
            Dst::Dderive => "DDERIVE",
            Dst::Compute => "COMPUTE",
        }
    }
}

/// Consolidation functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cf {
    Average,
    Minimum,
    Maximum,
    Last,
    HwPredict,
    MhwPredict,
    Seasonal,
    DevSeasonal,
    DevPredict,
    Failures,
}

impl Cf {
    pub fn parse(name: &str) -> Option<Cf> {
        Some(match name {
            "AVERAGE" => Cf::Average,
            "MIN" => Cf::Minimum,
            "MAX" => Cf::Maximum,
            "LAST" => Cf::Last,
            "HWPREDICT" => Cf::HwPredict,
            "MHWPREDICT" => Cf::MhwPredict,
            "SEASONAL" => Cf::Seasonal,
            "DEVSEASONAL" => Cf::DevSeasonal,
            "DEVPREDICT" => Cf::DevPredict,
            "FAILURES" => Cf::Failures,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Cf::Average => "AVERAGE",
            Cf::Minimum => "MIN",
            Cf::Maximum => "MAX",
            Cf::Last => "LAST",
            Cf::HwPredict => "HWPREDICT",
            Cf::MhwPredict => "MHWPREDICT",
            Cf::Seasonal => "SEASONAL",
            Cf::DevSeasonal => "DEVSEASONAL",
            Cf::DevPredict => "DEVPREDICT",
            Cf::Failures => "FAILURES",
        }
    }

    /// The four classic consolidation functions (as opposed to the
    /// Holt-Winters family).
    pub fn is_classic(self) -> bool {
        matches!(self, Cf::Average | Cf::Minimum | Cf::Maximum | Cf::Last)
    }
}

/// A fixed-size, NUL-terminated name field, kept byte for byte.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Name<const N: usize>(pub [u8; N]);

impl<const N: usize> Name<N> {
    /// A zero-filled field holding `s` (which must fit with its NUL).
    pub fn new(s: &str) -> Name<N> {
        assert!(s.len() < N, "name too long for its field");
        let mut b = [0u8; N];
        b[..s.len()].copy_from_slice(s.as_bytes());
        Name(b)
    }

    pub fn as_str(&self) -> &str {
        let end = self.0.iter().position(|&c| c == 0).unwrap_or(N);
        std::str::from_utf8(&self.0[..end]).unwrap_or("?")
    }
}

impl<const N: usize> std::fmt::Debug for Name<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct DsDef {
    pub name: Name<20>,
    pub dst_name: Name<20>,
    pub dst: Dst,
    pub par: Par,
}

impl DsDef {
    pub fn heartbeat(&self) -> u64 {
        self.par[DS_MRHB_CNT]
    }
    pub fn min(&self) -> f64 {
        f64::from_bits(self.par[DS_MIN_VAL])
    }
    pub fn max(&self) -> f64 {
        f64::from_bits(self.par[DS_MAX_VAL])
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct RraDef {
    pub cf_name: Name<20>,
    pub cf: Cf,
    pub pad: [u8; 4],
    pub row_count: u64,
    pub pdp_count: u64,
    pub par: Par,
}

impl RraDef {
    pub fn xff(&self) -> f64 {
        f64::from_bits(self.par[RRA_CDP_XFF_VAL])
    }
    pub fn par_f64(&self, i: usize) -> f64 {
        f64::from_bits(self.par[i])
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LiveHead {
    pub last_up: i64,
    pub last_up_usec: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PdpPrep {
    /// The last reading, as ASCII (so that huge counters keep every digit).
    pub last_ds: [u8; LAST_DS_LEN],
    pub pad: [u8; 2],
    pub scratch: Par,
}

impl PdpPrep {
    pub fn last_ds_str(&self) -> &str {
        let end = self.last_ds.iter().position(|&c| c == 0).unwrap_or(LAST_DS_LEN);
        std::str::from_utf8(&self.last_ds[..end]).unwrap_or("U")
    }

    pub fn set_last_ds(&mut self, s: &str) {
        let n = s.len().min(LAST_DS_LEN - 1);
        self.last_ds = [0; LAST_DS_LEN];
        self.last_ds[..n].copy_from_slice(&s.as_bytes()[..n]);
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CdpPrep {
    pub scratch: Par,
}

/// Everything before the data area, validated: a value of this type always
/// satisfies the invariants listed in the crate docs (non-zero counts, step,
/// row and PDP counts; every `cur_row` below its `row_cnt`; NUL-terminated
/// names whose DS types and CFs agree with their parsed forms; one PDP
/// scratch area per DS, one CDP area per (RRA, DS), one row pointer per
/// RRA; a layout without overflow). The fields are private so that nothing
/// can break them: a header comes from [`Header::decode`] or the checked
/// constructor [`Header::from_parts`], and the mutators below change only
/// what cannot move a byte of the layout or an index out of range (the live
/// head, scratch areas, parameters, row pointers through a checked setter).
/// Structural changes (new DS or RRA, other row counts, version) go through
/// [`Header::into_parts`] and back through `from_parts`.
///
/// `cdp` is indexed `rra_index * ds_count + ds_index`.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    version: Version,
    stat_pad: [u8; 7],
    pdp_step: u64,
    stat_par: Par,
    ds: Vec<DsDef>,
    rra: Vec<RraDef>,
    live: LiveHead,
    pdp: Vec<PdpPrep>,
    cdp: Vec<CdpPrep>,
    rra_ptr: Vec<u64>,
    /// Computed from the counts when the header was validated.
    layout: Layout,
}

/// The pieces of a header, unchecked: what [`Header::from_parts`] checks and
/// [`Header::into_parts`] gives back, for code that builds or restructures
/// a header (create, restore, tune's structural changes, resize).
#[derive(Clone, Debug, PartialEq)]
pub struct HeaderParts {
    pub version: Version,
    /// The seven bytes between the version string and the float cookie.
    pub stat_pad: [u8; 7],
    pub pdp_step: u64,
    pub stat_par: Par,
    pub ds: Vec<DsDef>,
    pub rra: Vec<RraDef>,
    pub live: LiveHead,
    pub pdp: Vec<PdpPrep>,
    pub cdp: Vec<CdpPrep>,
    pub rra_ptr: Vec<u64>,
}

/// What the first 128 bytes say about the rest: enough to know how many
/// header bytes to read next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatHead {
    pub version: Version,
    pub ds_count: u64,
    pub rra_count: u64,
    pub pdp_step: u64,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        out
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes::<8>())
    }
    fn par(&mut self) -> Par {
        let mut p = [0u64; 10];
        for slot in &mut p {
            *slot = self.u64();
        }
        p
    }
}

/// A NUL-terminated name field; `what` names it in the error (a closure, so
/// that decoding a sound header builds no message).
fn name_field<const N: usize>(
    raw: [u8; N],
    offset: u64,
    what: impl FnOnce() -> String,
) -> Result<Name<N>, FormatError> {
    if !raw.contains(&0) {
        return Err(FormatError::corrupt(offset, format!("{} is not NUL-terminated", what())));
    }
    Ok(Name(raw))
}

impl StatHead {
    /// Validates the static header (the first 128 bytes).
    pub fn decode(buf: &[u8]) -> Result<StatHead, FormatError> {
        if buf.len() < layout::STAT_HEAD_LEN as usize {
            return Err(FormatError::Truncated {
                what: "static header",
                need: layout::STAT_HEAD_LEN,
                have: buf.len() as u64,
            });
        }
        let mut r = Reader { buf, pos: 0 };
        if r.bytes::<4>() != COOKIE {
            return Err(FormatError::BadCookie);
        }
        let vbytes = r.bytes::<5>();
        let version = Version::parse(&vbytes).ok_or_else(|| {
            let end = vbytes.iter().position(|&c| c == 0).unwrap_or(5);
            FormatError::UnsupportedVersion(String::from_utf8_lossy(&vbytes[..end]).into_owned())
        })?;
        r.pos = 16;
        if f64::from_bits(r.u64()) != FLOAT_COOKIE {
            return Err(FormatError::FloatCookie);
        }
        let ds_count = r.u64();
        let rra_count = r.u64();
        let pdp_step = r.u64();
        if ds_count == 0 {
            return Err(FormatError::corrupt(24, "ds_cnt is zero"));
        }
        if rra_count == 0 {
            return Err(FormatError::corrupt(32, "rra_cnt is zero"));
        }
        if pdp_step == 0 {
            return Err(FormatError::corrupt(40, "pdp_step is zero"));
        }
        // Rejects counts whose header size overflows before anyone allocates.
        layout::header_len(ds_count, rra_count, version.live_head_len())?;
        Ok(StatHead { version, ds_count, rra_count, pdp_step })
    }

    /// Length of the whole header (everything before the data area).
    pub fn header_len(&self) -> u64 {
        layout::header_len(self.ds_count, self.rra_count, self.version.live_head_len())
            .expect("checked in decode")
    }
}

impl Header {
    /// Decodes and validates a header. `buf` must hold at least the header
    /// (see [`StatHead::header_len`]); `file_len` is the length of the whole
    /// file, checked against the layout.
    pub fn decode(buf: &[u8], file_len: u64) -> Result<Header, FormatError> {
        let sh = StatHead::decode(buf)?;
        let header_len = sh.header_len();
        if file_len < header_len {
            return Err(FormatError::Truncated { what: "header", need: header_len, have: file_len });
        }
        if (buf.len() as u64) < header_len {
            return Err(FormatError::Truncated {
                what: "header buffer",
                need: header_len,
                have: buf.len() as u64,
            });
        }
        let ds_count = sh.ds_count as usize;
        let rra_count = sh.rra_count as usize;
        let mut r = Reader { buf, pos: 9 };
        let stat_pad = r.bytes::<7>();
        r.pos = 48;
        let stat_par = r.par();

        let mut ds = Vec::with_capacity(ds_count);
        for i in 0..ds_count {
            let off = r.pos as u64;
            let name = name_field(r.bytes::<20>(), off, || format!("ds[{i}] name"))?;
            let dst_name = name_field(r.bytes::<20>(), off + 20, || format!("ds[{i}] type"))?;
            let dst = Dst::parse(dst_name.as_str()).ok_or_else(|| {
                FormatError::corrupt(off + 20, format!("ds[{i}] has unknown type '{}'", dst_name.as_str()))
            })?;
            let par = r.par();
            ds.push(DsDef { name, dst_name, dst, par });
        }

        let mut rra = Vec::with_capacity(rra_count);
        let mut row_counts = Vec::with_capacity(rra_count);
        for i in 0..rra_count {
            let off = r.pos as u64;
            let cf_name = name_field(r.bytes::<20>(), off, || format!("rra[{i}] cf"))?;
            let cf = Cf::parse(cf_name.as_str()).ok_or_else(|| {
                FormatError::corrupt(
                    off,
                    format!("rra[{i}] has unknown consolidation function '{}'", cf_name.as_str()),
                )
            })?;
            let pad = r.bytes::<4>();
            let row_count = r.u64();
            let pdp_count = r.u64();
            if row_count == 0 {
                return Err(FormatError::corrupt(off + 24, format!("rra[{i}] row_cnt is zero")));
            }
            if pdp_count == 0 {
                return Err(FormatError::corrupt(off + 32, format!("rra[{i}] pdp_cnt is zero")));
            }
            let par = r.par();
            row_counts.push(row_count);
            rra.push(RraDef { cf_name, cf, pad, row_count, pdp_count, par });
        }

        let layout = Layout::new(sh.ds_count, sh.version.live_head_len(), &row_counts)?;
        if layout.file_len != file_len {
            return Err(FormatError::LengthMismatch { expected: layout.file_len, actual: file_len });
        }
        debug_assert_eq!(r.pos as u64, layout.live_head_off);

        let last_up = r.u64() as i64;
        let last_up_usec = if sh.version.live_head_len() == 16 { r.u64() as i64 } else { 0 };
        let live = LiveHead { last_up, last_up_usec };

        let mut pdp = Vec::with_capacity(ds_count);
        for _ in 0..ds_count {
            let last_ds = r.bytes::<LAST_DS_LEN>();
            let pad = r.bytes::<2>();
            let scratch = r.par();
            pdp.push(PdpPrep { last_ds, pad, scratch });
        }
        let mut cdp = Vec::with_capacity(ds_count * rra_count);
        for _ in 0..ds_count * rra_count {
            cdp.push(CdpPrep { scratch: r.par() });
        }
        let mut rra_ptr = Vec::with_capacity(rra_count);
        for (i, def) in rra.iter().enumerate() {
            let off = r.pos as u64;
            let cur_row = r.u64();
            if cur_row >= def.row_count {
                return Err(FormatError::corrupt(
                    off,
                    format!("rra[{i}] cur_row {cur_row} is not below row_cnt {}", def.row_count),
                ));
            }
            rra_ptr.push(cur_row);
        }
        debug_assert_eq!(r.pos as u64, layout.data_off);

        Ok(Header {
            version: sh.version,
            stat_pad,
            pdp_step: sh.pdp_step,
            stat_par,
            ds,
            rra,
            live,
            pdp,
            cdp,
            rra_ptr,
            layout,
        })
    }

    /// The checked constructor: a header from parts that satisfy every
    /// invariant [`Header::decode`] guarantees, or an error naming the first
    /// one broken.
    pub fn from_parts(parts: HeaderParts) -> Result<Header, FormatError> {
        let HeaderParts { version, stat_pad, pdp_step, stat_par, ds, rra, live, pdp, cdp, rra_ptr } = parts;
        let invalid = |what: String| Err(FormatError::Invalid { what });
        if ds.is_empty() {
            return invalid("no data source".into());
        }
        if rra.is_empty() {
            return invalid("no archive".into());
        }
        if pdp_step == 0 {
            return invalid("pdp_step is zero".into());
        }
        for (i, d) in ds.iter().enumerate() {
            if !d.name.0.contains(&0) || !d.dst_name.0.contains(&0) {
                return invalid(format!("ds[{i}] has a name or type that is not NUL-terminated"));
            }
            if Dst::parse(d.dst_name.as_str()) != Some(d.dst) {
                return invalid(format!("ds[{i}] type '{}' is not {:?}", d.dst_name.as_str(), d.dst));
            }
        }
        for (j, r) in rra.iter().enumerate() {
            if !r.cf_name.0.contains(&0) {
                return invalid(format!("rra[{j}] cf is not NUL-terminated"));
            }
            if Cf::parse(r.cf_name.as_str()) != Some(r.cf) {
                return invalid(format!("rra[{j}] cf '{}' is not {:?}", r.cf_name.as_str(), r.cf));
            }
            if r.row_count == 0 {
                return invalid(format!("rra[{j}] row_cnt is zero"));
            }
            if r.pdp_count == 0 {
                return invalid(format!("rra[{j}] pdp_cnt is zero"));
            }
        }
        if pdp.len() != ds.len() {
            return invalid(format!("{} PDP scratch areas for {} data sources", pdp.len(), ds.len()));
        }
        if Some(cdp.len()) != ds.len().checked_mul(rra.len()) {
            return invalid(format!(
                "{} CDP scratch areas for {} data sources and {} archives",
                cdp.len(),
                ds.len(),
                rra.len()
            ));
        }
        if rra_ptr.len() != rra.len() {
            return invalid(format!("{} row pointers for {} archives", rra_ptr.len(), rra.len()));
        }
        for (j, (&cur, r)) in rra_ptr.iter().zip(&rra).enumerate() {
            if cur >= r.row_count {
                return invalid(format!("rra[{j}] cur_row {cur} is not below row_cnt {}", r.row_count));
            }
        }
        let rows: Vec<u64> = rra.iter().map(|r| r.row_count).collect();
        let layout = Layout::new(ds.len() as u64, version.live_head_len(), &rows)?;
        Ok(Header { version, stat_pad, pdp_step, stat_par, ds, rra, live, pdp, cdp, rra_ptr, layout })
    }

    /// The parts, for a structural change that ends in [`Header::from_parts`].
    pub fn into_parts(self) -> HeaderParts {
        let Header { version, stat_pad, pdp_step, stat_par, ds, rra, live, pdp, cdp, rra_ptr, layout: _ } =
            self;
        HeaderParts { version, stat_pad, pdp_step, stat_par, ds, rra, live, pdp, cdp, rra_ptr }
    }

    /// Where every section of a file with this header lives.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// The seven bytes between the version string and the float cookie.
    pub fn stat_pad(&self) -> [u8; 7] {
        self.stat_pad
    }

    pub fn pdp_step(&self) -> u64 {
        self.pdp_step
    }

    pub fn stat_par(&self) -> &Par {
        &self.stat_par
    }

    pub fn ds(&self) -> &[DsDef] {
        &self.ds
    }

    pub fn rra(&self) -> &[RraDef] {
        &self.rra
    }

    pub fn live(&self) -> &LiveHead {
        &self.live
    }

    pub fn pdp(&self) -> &[PdpPrep] {
        &self.pdp
    }

    pub fn cdp(&self) -> &[CdpPrep] {
        &self.cdp
    }

    /// Every archive's `cur_row` (the row written last).
    pub fn rra_ptr(&self) -> &[u64] {
        &self.rra_ptr
    }

    /// The live head (last update time).
    pub fn live_mut(&mut self) -> &mut LiveHead {
        &mut self.live
    }

    /// The PDP scratch areas (one per DS; the slice cannot change length).
    pub fn pdp_mut(&mut self) -> &mut [PdpPrep] {
        &mut self.pdp
    }

    /// The CDP scratch areas (one per (RRA, DS)).
    pub fn cdp_mut(&mut self) -> &mut [CdpPrep] {
        &mut self.cdp
    }

    /// A DS's parameters (heartbeat, minimum, maximum, or a COMPUTE's RPN).
    pub fn ds_par_mut(&mut self, ds: usize) -> &mut Par {
        &mut self.ds[ds].par
    }

    /// An archive's parameters (xff, Holt-Winters coefficients, ...).
    pub fn rra_par_mut(&mut self, rra: usize) -> &mut Par {
        &mut self.rra[rra].par
    }

    /// Moves archive `rra`'s `cur_row` to the next row (wrapping to the
    /// first) and returns it: how an update writes a row.
    pub fn advance_row(&mut self, rra: usize) -> u64 {
        let cur = &mut self.rra_ptr[rra];
        *cur = if *cur + 1 >= self.rra[rra].row_count { 0 } else { *cur + 1 };
        *cur
    }

    /// Sets archive `rra`'s `cur_row`, refusing a row past its last.
    pub fn set_cur_row(&mut self, rra: usize, row: u64) -> Result<(), FormatError> {
        let rows = self.rra[rra].row_count;
        if row >= rows {
            return Err(FormatError::Invalid {
                what: format!("rra[{rra}] cur_row {row} is not below row_cnt {rows}"),
            });
        }
        self.rra_ptr[rra] = row;
        Ok(())
    }

    /// Renames a DS (at most [`DS_NAME_MAX`] bytes).
    pub fn rename_ds(&mut self, ds: usize, name: &str) -> Result<(), FormatError> {
        if name.len() > DS_NAME_MAX || name.contains('\0') {
            return Err(FormatError::Invalid { what: format!("data source name '{name}' does not fit") });
        }
        self.ds[ds].name = Name::new(name);
        Ok(())
    }

    /// Changes a DS's type (the stored name and the parsed type together).
    pub fn set_ds_type(&mut self, ds: usize, dst: Dst) {
        self.ds[ds].dst_name = Name::new(dst.name());
        self.ds[ds].dst = dst;
    }

    /// Raises the version between those with the same live head (0003 to
    /// 0005), which changes no offset; other changes need `from_parts`.
    pub fn set_version(&mut self, version: Version) -> Result<(), FormatError> {
        if version.live_head_len() != self.version.live_head_len() {
            return Err(FormatError::Invalid {
                what: format!(
                    "version {} has another live head than {}",
                    version.as_str(),
                    self.version.as_str()
                ),
            });
        }
        self.version = version;
        Ok(())
    }

    /// Bytes this header holds on the heap (its vectors' allocations, the
    /// layout's included), for callers that budget the headers they keep.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.ds.capacity() * size_of::<DsDef>()
            + self.rra.capacity() * size_of::<RraDef>()
            + self.pdp.capacity() * size_of::<PdpPrep>()
            + self.cdp.capacity() * size_of::<CdpPrep>()
            + (self.rra_ptr.capacity() + self.layout.rra_data_off.len() + self.layout.row_counts.len())
                * size_of::<u64>()
    }

    pub fn ds_count(&self) -> usize {
        self.ds.len()
    }

    pub fn rra_count(&self) -> usize {
        self.rra.len()
    }

    pub fn cdp_index(&self, rra_index: usize, ds_index: usize) -> usize {
        rra_index * self.ds.len() + ds_index
    }

    pub fn ds_index(&self, name: &str) -> Option<usize> {
        self.ds.iter().position(|d| d.name.as_str() == name)
    }

    /// Encodes the whole header (everything before the data area).
    pub fn encode(&self) -> Vec<u8> {
        let layout = self.layout();
        let mut out = Vec::with_capacity(layout.data_off as usize);
        out.extend_from_slice(&COOKIE);
        out.extend_from_slice(&self.version.as_bytes());
        out.extend_from_slice(&self.stat_pad);
        out.extend_from_slice(&FLOAT_COOKIE.to_bits().to_le_bytes());
        for v in [self.ds.len() as u64, self.rra.len() as u64, self.pdp_step] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_par(&mut out, &self.stat_par);
        for d in &self.ds {
            out.extend_from_slice(&d.name.0);
            out.extend_from_slice(&d.dst_name.0);
            put_par(&mut out, &d.par);
        }
        for r in &self.rra {
            out.extend_from_slice(&r.cf_name.0);
            out.extend_from_slice(&r.pad);
            out.extend_from_slice(&r.row_count.to_le_bytes());
            out.extend_from_slice(&r.pdp_count.to_le_bytes());
            put_par(&mut out, &r.par);
        }
        self.encode_live_into(&mut out);
        assert_eq!(out.len() as u64, layout.data_off);
        out
    }

    /// Encodes the live part of the header, which starts at
    /// [`Layout::live_head_off`] and ends at the data area.
    pub fn encode_live(&self) -> Vec<u8> {
        // Sized up front: growing by doubling costs more than the encoding
        // (it runs on every update).
        let pdp_len: usize = self.pdp.iter().map(|p| p.last_ds.len() + p.pad.len() + 80).sum();
        let len = 16 + pdp_len + self.cdp.len() * 80 + self.rra_ptr.len() * 8;
        let mut out = Vec::with_capacity(len);
        self.encode_live_into(&mut out);
        out
    }

    fn encode_live_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.live.last_up.to_le_bytes());
        if self.version.live_head_len() == 16 {
            out.extend_from_slice(&self.live.last_up_usec.to_le_bytes());
        }
        for p in &self.pdp {
            out.extend_from_slice(&p.last_ds);
            out.extend_from_slice(&p.pad);
            put_par(out, &p.scratch);
        }
        for c in &self.cdp {
            put_par(out, &c.scratch);
        }
        for &row in &self.rra_ptr {
            out.extend_from_slice(&row.to_le_bytes());
        }
    }
}

fn put_par(out: &mut Vec<u8>, par: &Par) {
    for v in par {
        out.extend_from_slice(&v.to_le_bytes());
    }
}
