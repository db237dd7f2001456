//! `restore`: an RRD file from the XML of `dump`, as RRDtool 1.7.2 builds it.
//!
//! Owns reading the XML (element names compared case-insensitively, values
//! parsed with C's `strtoul`/`strtoll` and RRDtool's own decimal parser, so
//! that every stored bit matches `rrdtool restore`), building the header and
//! the rows, and writing the file safely (a temporary file in the target's
//! directory, synced, then renamed into place: a failed restore leaves
//! nothing behind).
//!
//! RRDtool's layout rules, kept here: everything not in the XML is zero; a
//! file of version 0001/0002 is written as 0003; each archive's `cur_row` is
//! chosen at random (RRDtool does this to spread the writes of many files
//! restored together over different disk blocks), and the rows are rotated
//! so that the newest row sits at `cur_row`; only the first 10 slots of a
//! FAILURES history are kept, as in RRDtool.
//!
//! Deliberately stricter than RRDtool, which in these cases either crashes,
//! writes a file it cannot read itself, or writes a file and then reports
//! an error: an archive without rows, a zero step or `pdp_per_row`, a data
//! source without a type, a document without data sources or archives, a
//! version other than 0001..0005, any value that is not a number, and any
//! unknown element. Those are all errors here and nothing is written.
//!
//! Deliberately not here: option parsing and standard input/output handling
//! (the CLI does that).

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use quick_xml::events::Event;

use crate::error::os_message;
use rrd_format::{
    CdpPrep, Cf, DsDef, Dst, Header, HeaderParts, LiveHead, Name, Par, PdpPrep, RraDef, Version,
    CDP_HW_INTERCEPT, CDP_HW_LAST_INTERCEPT, CDP_HW_LAST_SEASONAL, CDP_HW_LAST_SLOPE, CDP_HW_SEASONAL,
    CDP_HW_SLOPE, CDP_INIT_SEASONAL, CDP_LAST_NULL_COUNT, CDP_NULL_COUNT, CDP_PRIMARY_VAL, CDP_SECONDARY_VAL,
    CDP_UNKN_PDP_CNT, CDP_VAL, DS_MAX_VAL, DS_MIN_VAL, DS_MRHB_CNT, LAST_DS_LEN, PDP_UNKN_SEC_CNT, PDP_VAL,
    RRA_CDP_XFF_VAL, RRA_DELTA_NEG, RRA_DELTA_POS, RRA_DEPENDENT_RRA_IDX, RRA_FAILURE_THRESHOLD,
    RRA_HW_ALPHA, RRA_HW_BETA, RRA_SEASONAL_GAMMA, RRA_SEASONAL_SMOOTHING_WINDOW, RRA_SEASONAL_SMOOTH_IDX,
    RRA_WINDOW_LEN,
};

/// The NaN RRDtool stores for unknown values: x86's default NaN, sign bit set.
use crate::numparse::{self, is_c_space, DNAN};

/// Bytes of a FAILURES history RRDtool restores (`MAX_CDP_PAR_EN`): the
/// rest of a longer window reads back as zeros.
const HISTORY_RESTORED: usize = 10;

#[derive(Clone, Debug, Default)]
pub struct RestoreOptions {
    /// `--range-check`: rows outside their data source's [min, max] become
    /// unknown.
    pub range_check: bool,
    /// `--force-overwrite`: replace an existing file.
    pub force_overwrite: bool,
}

/// Why a restore failed. Each message is one sentence naming what was wrong
/// and, for XML problems, the line.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// Malformed XML, or an element that is not where a dump puts it, or a
    /// value that does not parse.
    #[error("line {line}: {what}")]
    Xml { line: u64, what: String },
    /// Well-formed XML that describes no usable RRD.
    #[error("{0}")]
    Invalid(String),
    /// Worded as rrdtool's (its XML reader cannot be created for a file
    /// it cannot open); the cause is kept for callers that want it.
    #[error("Could not create xml reader for: {}", .path.display())]
    Read { path: PathBuf, cause: io::Error },
    /// Worded like RRDtool's (`creating 'x.rrd': File exists`).
    #[error("creating '{}': {}", .path.display(), os_message(.cause))]
    Create { path: PathBuf, cause: io::Error },
    #[error("writing '{}': {}", .path.display(), os_message(.cause))]
    Write { path: PathBuf, cause: io::Error },
}

/// A parsed dump: the header of the file to write and every archive's rows
/// in time order (oldest first).
#[derive(Clone, Debug)]
pub struct Restored {
    /// `rra_ptr` holds `row_count - 1` for every archive (rows in time
    /// order); [`Restored::write_to`] takes the `cur_row`s actually written.
    pub header: Header,
    /// `rows[rra]` holds `row_count × ds_count` values, oldest row first.
    pub rows: Vec<Vec<f64>>,
}

impl Restored {
    /// A `cur_row` for every archive, chosen at random as RRDtool does.
    pub fn random_cur_rows(&self) -> Vec<u64> {
        self.header
            .rra()
            .iter()
            .map(|r| {
                let mut h = RandomState::new().build_hasher();
                h.write_u64(r.row_count);
                h.finish() % r.row_count
            })
            .collect()
    }

    /// Writes the whole file, archive `i` having `cur_rows[i]` as its
    /// current row (the newest row is stored there, the oldest after it).
    pub fn write_to(&self, out: &mut dyn Write, cur_rows: &[u64]) -> io::Result<()> {
        assert_eq!(cur_rows.len(), self.header.rra().len(), "one cur_row per archive");
        let mut header = self.header.clone();
        for (i, &cur) in cur_rows.iter().enumerate() {
            header.set_cur_row(i, cur).expect("cur_row in range");
        }
        out.write_all(&header.encode())?;
        let ds_count = self.header.ds().len();
        let mut buf = Vec::with_capacity(64 * 1024);
        for (rows, &cur) in self.rows.iter().zip(cur_rows) {
            let row_count = rows.len() / ds_count;
            // File row 0 holds the time-order row `row_count - first`.
            let first = (cur as usize + 1) % row_count;
            let split = (row_count - first) * ds_count;
            for part in [&rows[split..], &rows[..split]] {
                for chunk in part.chunks(8192) {
                    buf.clear();
                    rrd_format::encode_values(chunk, &mut buf);
                    out.write_all(&buf)?;
                }
            }
        }
        Ok(())
    }
}

/// Parses XML as written by `rrdtool dump` (or older RRDtool versions).
pub fn parse(xml: &[u8], range_check: bool) -> Result<Restored, RestoreError> {
    refuse_control_characters(xml)?;
    let mut p = Pull::new(xml);
    p.expect_start("rrd")?;
    let doc = parse_rrd(&mut p, range_check)?;
    p.expect_document_end()?;
    doc.build()
}

/// XML 1.0 allows no control character but tab, line feed and carriage
/// return, anywhere (comments included); libxml2, rrdtool's reader, stops
/// at the first, and so do we (a NUL would otherwise end a C string that
/// another tool reads from the same dump).
fn refuse_control_characters(xml: &[u8]) -> Result<(), RestoreError> {
    let allowed = |b: u8| b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r');
    match xml.iter().position(|&b| !allowed(b)) {
        None => Ok(()),
        Some(at) => Err(RestoreError::Xml {
            line: 1 + xml[..at].iter().filter(|&&b| b == b'\n').count() as u64,
            what: format!("Char {:#x} out of allowed range", xml[at]),
        }),
    }
}

/// Parses `xml` and writes the file at `target` (through a temporary file
/// in the same directory, synced and renamed into place).
pub fn restore(xml: &[u8], target: &Path, opts: &RestoreOptions) -> Result<(), RestoreError> {
    let restored = parse(xml, opts.range_check)?;
    let cur_rows = restored.random_cur_rows();
    write_file(&restored, &cur_rows, target, opts.force_overwrite)
}

/// Reads the XML file at `xml_path` and restores it to `target`.
pub fn restore_file(xml_path: &Path, target: &Path, opts: &RestoreOptions) -> Result<(), RestoreError> {
    let xml =
        fs::read(xml_path).map_err(|cause| RestoreError::Read { path: xml_path.to_path_buf(), cause })?;
    restore(&xml, target, opts)
}

/// Writes `restored` to `target` atomically: a temporary file next to it,
/// fdatasync, then a rename (or, without `force_overwrite`, a hard link that
/// fails if `target` exists, so a file created meanwhile is never replaced).
pub fn write_file(
    restored: &Restored,
    cur_rows: &[u64],
    target: &Path,
    force_overwrite: bool,
) -> Result<(), RestoreError> {
    let create_err = |cause| RestoreError::Create { path: target.to_path_buf(), cause };
    if !force_overwrite && fs::symlink_metadata(target).is_ok() {
        return Err(create_err(io::Error::from_raw_os_error(libc::EEXIST)));
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name =
        target.file_name().ok_or_else(|| create_err(io::Error::from_raw_os_error(libc::EINVAL)))?;
    let (tmp_path, file) = create_temp(&dir, &file_name.to_string_lossy()).map_err(create_err)?;
    let result = (|| {
        let write_err = |cause| RestoreError::Write { path: target.to_path_buf(), cause };
        let mut w = BufWriter::with_capacity(256 * 1024, file);
        restored.write_to(&mut w, cur_rows).map_err(write_err)?;
        let file = w.into_inner().map_err(|e| write_err(e.into_error()))?;
        // Synced, and its pages dropped from the cache (see create).
        crate::pagecache::evict(&file).map_err(write_err)?;
        drop(file);
        if force_overwrite {
            fs::rename(&tmp_path, target).map_err(create_err)?;
        } else {
            match fs::hard_link(&tmp_path, target) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(create_err(e)),
                // A file system without hard links: check, then rename.
                Err(_) if fs::symlink_metadata(target).is_ok() => {
                    return Err(create_err(io::Error::from_raw_os_error(libc::EEXIST)))
                }
                Err(_) => fs::rename(&tmp_path, target).map_err(create_err)?,
            }
        }
        // Makes the new directory entry durable too (best effort: some file
        // systems refuse to sync a directory).
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    // After a rename this fails harmlessly; after a link or an error it
    // removes the temporary name.
    let _ = fs::remove_file(&tmp_path);
    result
}

/// Creates a new, uniquely named file in `dir` with mode 0666 (less the
/// umask), as RRDtool creates its files.
fn create_temp(dir: &Path, base: &str) -> io::Result<(PathBuf, File)> {
    let mut last_err = None;
    for attempt in 0..16u64 {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(attempt);
        h.write_u32(std::process::id());
        let path = dir.join(format!(".{base}.restore-{:016x}", h.finish()));
        match OpenOptions::new().write(true).create_new(true).mode(0o666).open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EEXIST)))
}

// ---------------------------------------------------------------------------
// The document, as read so far.

#[derive(Default)]
struct DocBuild {
    version: String,
    step: u64,
    last_up: i64,
    ds: Vec<DsBuild>,
    rra: Vec<RraBuild>,
}

struct DsBuild {
    name: String,
    dst: Option<(Dst, String)>,
    par: Par,
    last_ds: String,
    pdp: Par,
}

struct RraBuild {
    cf: Option<(Cf, String)>,
    pdp_count: u64,
    par: Par,
    cdp: Vec<Par>,
    rows: Vec<f64>,
    saw_database: bool,
}

impl DocBuild {
    /// C's `atoi` of the version, which decides how RRA parameters are laid
    /// out in the XML (version 1 had `<xff>` directly in `<rra>`).
    fn version_number(&self) -> i64 {
        i64::from(numparse::atoi(&self.version))
    }

    fn build(self) -> Result<Restored, RestoreError> {
        let invalid = |s: String| Err(RestoreError::Invalid(s));
        let version = if self.version_number() < 3 {
            Version(3)
        } else {
            match self.version.as_str() {
                "0003" => Version(3),
                "0004" => Version(4),
                "0005" => Version(5),
                other => {
                    return invalid(format!(
                        "<version> '{other}' is not an RRD version this tool can write (0001 to 0005)"
                    ))
                }
            }
        };
        if self.step == 0 {
            return invalid("<step> is missing or zero".into());
        }
        if self.ds.is_empty() {
            return invalid("the XML defines no data source (<ds>)".into());
        }
        if self.rra.is_empty() {
            return invalid("the XML defines no archive (<rra>)".into());
        }
        let mut ds = Vec::with_capacity(self.ds.len());
        let mut pdp = Vec::with_capacity(self.ds.len());
        for (i, d) in self.ds.into_iter().enumerate() {
            let Some((dst, dst_name)) = d.dst else {
                return invalid(format!("data source #{i} ('{}') has no <type>", d.name));
            };
            ds.push(DsDef { name: Name::new(&d.name), dst_name: Name::new(&dst_name), dst, par: d.par });
            let mut p = PdpPrep { last_ds: [0; LAST_DS_LEN], pad: [0; 2], scratch: d.pdp };
            p.last_ds[..d.last_ds.len()].copy_from_slice(d.last_ds.as_bytes());
            pdp.push(p);
        }
        let ds_count = ds.len();
        let mut rra = Vec::with_capacity(self.rra.len());
        let mut cdp = Vec::with_capacity(self.rra.len() * ds_count);
        let mut rows = Vec::with_capacity(self.rra.len());
        let mut rra_ptr = Vec::with_capacity(self.rra.len());
        for (i, r) in self.rra.into_iter().enumerate() {
            let Some((cf, cf_name)) = r.cf else {
                return invalid(format!("archive #{i} has no <cf>"));
            };
            if r.pdp_count == 0 {
                return invalid(format!("archive #{i} ({cf_name}) has no <pdp_per_row> or a zero one"));
            }
            let row_count = (r.rows.len() / ds_count) as u64;
            if row_count == 0 {
                return invalid(format!("archive #{i} ({cf_name}) has no rows in its <database>"));
            }
            rra.push(RraDef {
                cf_name: Name::new(&cf_name),
                cf,
                pad: [0; 4],
                row_count,
                pdp_count: r.pdp_count,
                par: r.par,
            });
            cdp.extend(r.cdp.into_iter().map(|scratch| CdpPrep { scratch }));
            rows.push(r.rows);
            rra_ptr.push(row_count - 1);
        }
        let header = Header::from_parts(HeaderParts {
            version,
            stat_pad: [0; 7],
            pdp_step: self.step,
            stat_par: [0; 10],
            ds,
            rra,
            live: LiveHead { last_up: self.last_up, last_up_usec: 0 },
            pdp,
            cdp,
            rra_ptr,
        })
        .map_err(|e| RestoreError::Invalid(format!("the RRD described is too large: {e}")))?;
        Ok(Restored { header, rows })
    }
}

fn parse_rrd(p: &mut Pull<'_>, range_check: bool) -> Result<DocBuild, RestoreError> {
    let mut doc = DocBuild::default();
    loop {
        let tag = p.element()?;
        match tag.as_start() {
            None if tag.is_end("rrd") => return Ok(doc),
            None => return Err(p.unexpected(&tag, "in <rrd>")),
            Some("version") => doc.version = p.string("version", 5)?,
            Some("step") => doc.step = p.ulong("step")?,
            Some("lastupdate") => doc.last_up = p.time("lastupdate")?,
            Some("ds") => {
                parse_ds(p, &mut doc)?;
                continue;
            }
            Some("rra") => {
                parse_rra(p, &mut doc, range_check)?;
                continue;
            }
            Some(other) => return Err(p.error(format!("unknown element <{other}> in <rrd>"))),
        }
        p.expect_end(&tag.name)?;
    }
}

fn parse_ds(p: &mut Pull<'_>, doc: &mut DocBuild) -> Result<(), RestoreError> {
    if !doc.rra.is_empty() {
        return Err(p.error("every <ds> must precede the first <rra>".into()));
    }
    doc.ds.push(DsBuild {
        name: String::new(),
        dst: None,
        par: [0; 10],
        last_ds: String::new(),
        pdp: [0; 10],
    });
    let i = doc.ds.len() - 1;
    loop {
        let tag = p.element()?;
        let d = &mut doc.ds[i];
        match tag.as_start() {
            None if tag.is_end("ds") => return Ok(()),
            None => return Err(p.unexpected(&tag, "in <ds>")),
            Some("name") => d.name = p.string("name", 20)?,
            Some("type") => {
                let t = p.text("type")?;
                let dst = Dst::parse(&t)
                    .ok_or_else(|| p.error(format!("<type> '{t}' is not a data source type")))?;
                d.dst = Some((dst, t));
            }
            Some("minimal_heartbeat") => d.par[DS_MRHB_CNT] = p.ulong("minimal_heartbeat")?,
            Some("min") => d.par[DS_MIN_VAL] = p.double("min")?.to_bits(),
            Some("max") => d.par[DS_MAX_VAL] = p.double("max")?.to_bits(),
            Some("cdef") => {
                let expr = p.text("cdef")?;
                // The expression may name this data source and the ones
                // before it (RRDtool looks names up among those read so far).
                let names: Vec<&str> = doc.ds.iter().map(|d| d.name.as_str()).collect();
                let par = compute_par(&expr, &names).map_err(|e| {
                    p.error(format!("<cdef> '{expr}' is not a valid COMPUTE expression: {e}"))
                })?;
                doc.ds[i].par = par;
            }
            Some("last_ds") => d.last_ds = p.string("last_ds", LAST_DS_LEN)?,
            Some("value") => d.pdp[PDP_VAL] = p.double("value")?.to_bits(),
            Some("unknown_sec") => d.pdp[PDP_UNKN_SEC_CNT] = p.ulong("unknown_sec")?,
            Some(other) => return Err(p.error(format!("unknown element <{other}> in <ds>"))),
        }
        p.expect_end(&tag.name)?;
    }
}

fn parse_rra(p: &mut Pull<'_>, doc: &mut DocBuild, range_check: bool) -> Result<(), RestoreError> {
    let ds_count = doc.ds.len();
    doc.rra.push(RraBuild {
        cf: None,
        pdp_count: 0,
        par: [0; 10],
        cdp: vec![[0; 10]; ds_count],
        rows: Vec::new(),
        saw_database: false,
    });
    let i = doc.rra.len() - 1;
    let version = doc.version_number();
    loop {
        let tag = p.element()?;
        match tag.as_start() {
            None if tag.is_end("rra") => return Ok(()),
            None => return Err(p.unexpected(&tag, "in <rra>")),
            Some("cf") => {
                let name = p.string("cf", 20)?;
                let cf = Cf::parse(&name)
                    .ok_or_else(|| p.error(format!("<cf> '{name}' is not a consolidation function")))?;
                doc.rra[i].cf = Some((cf, name));
            }
            Some("pdp_per_row") => doc.rra[i].pdp_count = p.ulong("pdp_per_row")?,
            Some("xff") if version == 1 => doc.rra[i].par[RRA_CDP_XFF_VAL] = p.double("xff")?.to_bits(),
            Some("params") if version >= 2 => {
                parse_params(p, &mut doc.rra[i].par)?;
                continue;
            }
            Some("cdp_prep") => {
                for d in 0..ds_count {
                    p.expect_start("ds")?;
                    doc.rra[i].cdp[d] = parse_cdp_ds(p, version)?;
                }
                p.expect_end("cdp_prep")?;
                continue;
            }
            Some("database") => {
                if doc.rra[i].saw_database {
                    return Err(p.error("an <rra> has a second <database>".into()));
                }
                doc.rra[i].saw_database = true;
                let rows = parse_database(p, &doc.ds, range_check)?;
                doc.rra[i].rows = rows;
                continue;
            }
            Some(other) => {
                return Err(
                    p.error(format!("unknown element <{other}> in <rra> (for version '{}')", doc.version))
                )
            }
        }
        p.expect_end(&tag.name)?;
    }
}

fn parse_params(p: &mut Pull<'_>, par: &mut Par) -> Result<(), RestoreError> {
    loop {
        let tag = p.element()?;
        let name = match tag.as_start() {
            None if tag.is_end("params") => return Ok(()),
            None => return Err(p.unexpected(&tag, "in <params>")),
            Some(n) => n.to_string(),
        };
        let (slot, is_double) = match name.as_str() {
            "hw_alpha" => (RRA_HW_ALPHA, true),
            "hw_beta" => (RRA_HW_BETA, true),
            "dependent_rra_idx" => (RRA_DEPENDENT_RRA_IDX, false),
            "seasonal_gamma" => (RRA_SEASONAL_GAMMA, true),
            "seasonal_smooth_idx" => (RRA_SEASONAL_SMOOTH_IDX, false),
            "smoothing_window" => (RRA_SEASONAL_SMOOTHING_WINDOW, true),
            "delta_pos" => (RRA_DELTA_POS, true),
            "delta_neg" => (RRA_DELTA_NEG, true),
            "window_len" => (RRA_WINDOW_LEN, false),
            "failure_threshold" => (RRA_FAILURE_THRESHOLD, false),
            "xff" => (RRA_CDP_XFF_VAL, true),
            other => return Err(p.error(format!("unknown element <{other}> in <params>"))),
        };
        par[slot] = if is_double { p.double(&name)?.to_bits() } else { p.ulong(&name)? };
        p.expect_end(&tag.name)?;
    }
}

/// One `<ds>` of a `<cdp_prep>`. Every field goes to its scratch slot
/// whatever the archive's function, as in RRDtool (a dump only writes the
/// fields of its function, several of which share slots).
fn parse_cdp_ds(p: &mut Pull<'_>, version: i64) -> Result<Par, RestoreError> {
    let mut s: Par = [0; 10];
    if version == 1 {
        s[CDP_PRIMARY_VAL] = 0f64.to_bits();
        s[CDP_SECONDARY_VAL] = 0f64.to_bits();
    }
    loop {
        let tag = p.element()?;
        let name = match tag.as_start() {
            None if tag.is_end("ds") => return Ok(s),
            None => return Err(p.unexpected(&tag, "in a <cdp_prep> <ds>")),
            Some(n) => n.to_string(),
        };
        let double_slot = match name.as_str() {
            "primary_value" => Some(CDP_PRIMARY_VAL),
            "secondary_value" => Some(CDP_SECONDARY_VAL),
            "intercept" => Some(CDP_HW_INTERCEPT),
            "last_intercept" => Some(CDP_HW_LAST_INTERCEPT),
            "slope" => Some(CDP_HW_SLOPE),
            "last_slope" => Some(CDP_HW_LAST_SLOPE),
            "seasonal" => Some(CDP_HW_SEASONAL),
            "last_seasonal" => Some(CDP_HW_LAST_SEASONAL),
            "value" => Some(CDP_VAL),
            _ => None,
        };
        let count_slot = match name.as_str() {
            "nan_count" => Some(CDP_NULL_COUNT),
            "last_nan_count" => Some(CDP_LAST_NULL_COUNT),
            "init_flag" => Some(CDP_INIT_SEASONAL),
            "unknown_datapoints" => Some(CDP_UNKN_PDP_CNT),
            _ => None,
        };
        if let Some(slot) = double_slot {
            s[slot] = p.double(&name)?.to_bits();
        } else if let Some(slot) = count_slot {
            s[slot] = p.ulong(&name)?;
        } else if name == "history" {
            let h = p.text("history")?;
            // One byte per slot, overlaid on the start of the scratch area.
            let mut bytes: Vec<u8> = s.iter().flat_map(|v| v.to_le_bytes()).collect();
            for (b, c) in bytes.iter_mut().zip(h.bytes().take(HISTORY_RESTORED)) {
                *b = u8::from(c == b'1');
            }
            for (slot, chunk) in s.iter_mut().zip(bytes.chunks_exact(8)) {
                *slot = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            }
        } else {
            return Err(p.error(format!("unknown element <{name}> in a <cdp_prep> <ds>")));
        }
        p.expect_end(&tag.name)?;
    }
}

fn parse_database(p: &mut Pull<'_>, ds: &[DsBuild], range_check: bool) -> Result<Vec<f64>, RestoreError> {
    let mut rows = Vec::new();
    loop {
        let tag = p.element()?;
        match tag.as_start() {
            None if tag.is_end("database") => return Ok(rows),
            None => return Err(p.unexpected(&tag, "in <database>")),
            Some("row") => {}
            Some(other) => return Err(p.error(format!("unknown element <{other}> in <database>"))),
        }
        for d in ds {
            p.expect_start("v")?;
            let mut v = p.double("v")?;
            if range_check {
                // Whatever the type, RRDtool compares with the min and max
                // slots read as doubles.
                let (min, max) = (f64::from_bits(d.par[DS_MIN_VAL]), f64::from_bits(d.par[DS_MAX_VAL]));
                if (!min.is_nan() && v < min) || (!max.is_nan() && v > max) {
                    v = DNAN;
                }
            }
            rows.push(v);
            p.expect_end("v")?;
        }
        p.expect_end("row")?;
    }
}

/// The parameter slots of a COMPUTE data source holding `expr` compiled.
fn compute_par(expr: &str, ds_names: &[&str]) -> Result<Par, String> {
    crate::rpn::Program::parse_compute(expr, ds_names).and_then(|p| p.to_par()).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------
// Values, parsed as RRDtool's C library calls parse them.

/// C's `strtoul(s, NULL, 0)`; `None` where it sets `ERANGE`.
fn c_strtoul(s: &str) -> Option<u64> {
    let r = numparse::strtoul(s, 0);
    (!r.overflow).then_some(r.value)
}

/// C's `strtoll(s, NULL, 0)`; `None` where it sets `ERANGE`.
fn c_strtoll(s: &str) -> Option<i64> {
    let r = numparse::strtol(s, 0);
    (!r.overflow).then_some(r.value)
}

/// A double as RRDtool's restore reads one: any token containing `nan`
/// (any case) is unknown, `-inf`/`inf` are infinities, anything else must
/// be entirely a decimal number for RRDtool's own parser.
fn parse_double(token: &str) -> Option<f64> {
    let lower = token.to_ascii_lowercase();
    if lower.contains("nan") {
        return Some(DNAN);
    }
    if lower.contains("-inf") {
        return Some(f64::NEG_INFINITY);
    }
    if lower.contains("inf") {
        return Some(f64::INFINITY);
    }
    let (v, used) = crate::numparse::rrd_strtod(token);
    (used > 0 && used == token.len()).then_some(v)
}

// ---------------------------------------------------------------------------
// A pull reader over the XML, in the terms RRDtool's restore reads it:
// elements (start or end) and text, comments and the like skipped.

struct Tag {
    end: bool,
    /// Lower-cased (RRDtool compares names case-insensitively).
    name: String,
}

impl Tag {
    fn as_start(&self) -> Option<&str> {
        (!self.end).then_some(self.name.as_str())
    }

    fn is_end(&self, name: &str) -> bool {
        self.end && self.name == name
    }
}

enum Node {
    Tag(Tag),
    Text(String),
    Eof,
}

struct Pull<'a> {
    reader: quick_xml::Reader<&'a [u8]>,
    data: &'a [u8],
    /// Line of the node read last (1-based), and how far newlines have been
    /// counted to get it.
    line: u64,
    counted: usize,
    /// The end tag that ended the text of an empty element, still to be
    /// matched by `expect_end`.
    pending_end: Option<String>,
}

impl<'a> Pull<'a> {
    fn new(data: &'a [u8]) -> Pull<'a> {
        let mut reader = quick_xml::Reader::from_reader(data);
        let config = reader.config_mut();
        config.expand_empty_elements = true;
        config.check_end_names = true;
        Pull { reader, data, line: 1, counted: 0, pending_end: None }
    }

    fn advance_line(&mut self, pos: usize) {
        let pos = pos.min(self.data.len());
        if pos > self.counted {
            self.line += self.data[self.counted..pos].iter().filter(|&&c| c == b'\n').count() as u64;
            self.counted = pos;
        }
    }

    fn error(&self, what: String) -> RestoreError {
        RestoreError::Xml { line: self.line, what }
    }

    fn unexpected(&self, tag: &Tag, context: &str) -> RestoreError {
        let shown = if tag.end { format!("</{}>", tag.name) } else { format!("<{}>", tag.name) };
        self.error(format!("unexpected {shown} {context}"))
    }

    fn node(&mut self) -> Result<Node, RestoreError> {
        loop {
            let start = self.reader.buffer_position() as usize;
            // Text events start with the whitespace after the previous
            // markup; count lines up to the first non-blank byte so that an
            // element's line is the one it is on.
            let skip = self.data[start.min(self.data.len())..].iter().take_while(|c| is_c_space(**c)).count();
            self.advance_line(start + skip);
            let event = match self.reader.read_event() {
                Ok(e) => e,
                Err(e) => {
                    self.advance_line(self.reader.error_position() as usize);
                    return Err(self.error(format!("malformed XML: {e}")));
                }
            };
            match event {
                Event::Start(e) => {
                    let name = String::from_utf8_lossy(e.name().as_ref()).to_ascii_lowercase();
                    return Ok(Node::Tag(Tag { end: false, name }));
                }
                Event::End(e) => {
                    let name = String::from_utf8_lossy(e.name().as_ref()).to_ascii_lowercase();
                    return Ok(Node::Tag(Tag { end: true, name }));
                }
                Event::Text(t) => {
                    let text = t.unescape().map_err(|e| self.error(format!("malformed XML: {e}")))?;
                    if text.bytes().all(is_c_space) {
                        continue;
                    }
                    return Ok(Node::Text(text.into_owned()));
                }
                Event::Eof => return Ok(Node::Eof),
                // Comments, declarations, DOCTYPE, processing instructions
                // and CDATA carry nothing RRDtool reads.
                Event::Empty(_)
                | Event::CData(_)
                | Event::Comment(_)
                | Event::Decl(_)
                | Event::PI(_)
                | Event::DocType(_) => continue,
            }
        }
    }

    /// The next element tag, start or end; text is an error.
    fn element(&mut self) -> Result<Tag, RestoreError> {
        self.pending_end = None;
        match self.node()? {
            Node::Tag(t) => Ok(t),
            Node::Text(t) => {
                Err(self.error(format!("expected an element but found text '{}'", first_token(&t))))
            }
            Node::Eof => Err(self.error("the XML ended while an element was expected".into())),
        }
    }

    fn expect_start(&mut self, name: &str) -> Result<(), RestoreError> {
        let tag = self.element()?;
        if tag.as_start() == Some(name) {
            Ok(())
        } else {
            Err(self.unexpected(&tag, &format!("where <{name}> was expected")))
        }
    }

    fn expect_end(&mut self, name: &str) -> Result<(), RestoreError> {
        let tag = match self.pending_end.take() {
            Some(name) => Tag { end: true, name },
            None => self.element()?,
        };
        if tag.is_end(name) {
            Ok(())
        } else {
            Err(self.unexpected(&tag, &format!("where </{name}> was expected")))
        }
    }

    /// After `</rrd>`: only comments, processing instructions and blanks.
    fn expect_document_end(&mut self) -> Result<(), RestoreError> {
        match self.node()? {
            Node::Eof => Ok(()),
            Node::Tag(t) => Err(self.unexpected(&t, "after </rrd>")),
            Node::Text(t) => Err(self.error(format!("unexpected text '{}' after </rrd>", first_token(&t)))),
        }
    }

    /// The value of element `elem`: the first blank-separated token of its
    /// text ("" when it has none), as RRDtool reads values.
    fn text(&mut self, elem: &str) -> Result<String, RestoreError> {
        match self.node()? {
            Node::Text(t) => Ok(first_token(&t).to_string()),
            Node::Tag(t) if t.end => {
                self.pending_end = Some(t.name);
                Ok(String::new())
            }
            Node::Tag(t) => Err(self.error(format!("expected the value of <{elem}> but found <{}>", t.name))),
            Node::Eof => Err(self.error(format!("the XML ended inside <{elem}>"))),
        }
    }

    /// A string value that must fit a C field of `field_len` bytes with its NUL.
    fn string(&mut self, elem: &str, field_len: usize) -> Result<String, RestoreError> {
        let s = self.text(elem)?;
        if s.len() >= field_len {
            return Err(self.error(format!("<{elem}> '{s}' is longer than {} bytes", field_len - 1)));
        }
        Ok(s)
    }

    fn ulong(&mut self, elem: &str) -> Result<u64, RestoreError> {
        let s = self.text(elem)?;
        c_strtoul(&s).ok_or_else(|| self.error(format!("<{elem}> '{s}' is out of range")))
    }

    fn time(&mut self, elem: &str) -> Result<i64, RestoreError> {
        let s = self.text(elem)?;
        c_strtoll(&s).ok_or_else(|| self.error(format!("<{elem}> '{s}' is out of range")))
    }

    fn double(&mut self, elem: &str) -> Result<f64, RestoreError> {
        let s = self.text(elem)?;
        parse_double(&s).ok_or_else(|| self.error(format!("<{elem}> '{s}' is not a number")))
    }
}

/// The first word of `text`, cut to 64 characters (an error message quotes
/// it; a document of one huge word must not make a huge message).
fn first_token(text: &str) -> &str {
    let t = numparse::trim_c_space(text);
    let end = t.bytes().position(is_c_space).unwrap_or(t.len());
    let cut = t.char_indices().nth(64).map_or(end, |(i, _)| i.min(end));
    &t[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_refused_even_in_comments() {
        for (xml, line, byte) in [
            ("<rrd>\n<version>0003</version>\0\n</rrd>", 2, 0u8),
            ("<rrd>\n\n<!-- a\u{1}b -->\n</rrd>", 3, 1),
            ("<rrd>\u{c}</rrd>", 1, 12),
        ] {
            match parse(xml.as_bytes(), false) {
                Err(RestoreError::Xml { line: l, what }) => {
                    assert_eq!(l, line, "{xml:?}");
                    assert_eq!(what, format!("Char {byte:#x} out of allowed range"));
                }
                other => panic!("{xml:?}: {other:?}"),
            }
        }
        // Tabs, line feeds and carriage returns are text.
        assert!(!matches!(
            parse(b"<rrd>\t\r\n</rrd>", false),
            Err(RestoreError::Xml { what, .. }) if what.contains("out of allowed range")
        ));
    }

    #[test]
    fn quoted_text_is_cut() {
        let long = "x".repeat(100_000);
        let msg = err(&format!("<rrd>{long}</rrd>"));
        assert!(msg.len() < 200, "{msg}");
        assert!(msg.contains(&"x".repeat(64)) && !msg.contains(&"x".repeat(65)), "{msg}");
    }

    #[test]
    fn c_integer_parsing() {
        assert_eq!(c_strtoul("300"), Some(300));
        assert_eq!(c_strtoul("0x1f"), Some(31));
        assert_eq!(c_strtoul("010"), Some(8));
        assert_eq!(c_strtoul("12abc"), Some(12));
        assert_eq!(c_strtoul(""), Some(0));
        assert_eq!(c_strtoul("abc"), Some(0));
        assert_eq!(c_strtoul("0x"), Some(0));
        assert_eq!(c_strtoul("-1"), Some(u64::MAX));
        assert_eq!(c_strtoul("18446744073709551615"), Some(u64::MAX));
        assert_eq!(c_strtoul("18446744073709551616"), None);
        assert_eq!(c_strtoll("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(c_strtoll("9223372036854775808"), None);
        assert_eq!(c_strtoll("1000000700"), Some(1_000_000_700));
    }

    #[test]
    fn doubles_parse_like_rrdtool() {
        assert_eq!(parse_double("NaN").map(f64::to_bits), Some(DNAN.to_bits()));
        assert_eq!(parse_double("banana").map(f64::to_bits), Some(DNAN.to_bits()));
        assert_eq!(parse_double("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double("Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_double("1.3333333333e+02"), Some(133.33333333));
        assert_eq!(parse_double("5"), Some(5.0));
        assert_eq!(parse_double("abc"), None);
        assert_eq!(parse_double(""), None);
        assert_eq!(parse_double("1.5x"), None);
    }

    #[test]
    fn tokens_are_the_first_blank_separated_word() {
        assert_eq!(first_token("  1.0 2.0 "), "1.0");
        assert_eq!(first_token("\n\tAVERAGE\n"), "AVERAGE");
        assert_eq!(first_token("   "), "");
    }

    const MINIMAL: &str = "<rrd><version>0003</version><step>300</step><lastupdate>1000</lastupdate>\
        <ds><name>a</name><type>GAUGE</type><minimal_heartbeat>600</minimal_heartbeat>\
        <min>0</min><max>10</max><last_ds>U</last_ds><value>0</value><unknown_sec>0</unknown_sec></ds>\
        <rra><cf>AVERAGE</cf><pdp_per_row>1</pdp_per_row><params><xff>0.5</xff></params>\
        <database><row><v>1</v></row><row><v>20</v></row><row><v>NaN</v></row></database></rra></rrd>";

    #[test]
    fn minimal_document_builds_a_header() {
        let r = parse(MINIMAL.as_bytes(), false).unwrap();
        assert_eq!(r.header.version(), Version(3));
        assert_eq!(r.header.pdp_step(), 300);
        assert_eq!(r.header.rra()[0].row_count, 3);
        assert_eq!(r.rows[0][..2], [1.0, 20.0]);
        let checked = parse(MINIMAL.as_bytes(), true).unwrap();
        assert!(checked.rows[0][1].is_nan(), "20 is above max 10");
        assert_eq!(checked.rows[0][0], 1.0);
    }

    #[test]
    fn rows_are_rotated_to_cur_row() {
        let r = parse(MINIMAL.as_bytes(), false).unwrap();
        for cur in 0..3u64 {
            let mut bytes = Vec::new();
            r.write_to(&mut bytes, &[cur]).unwrap();
            let h = Header::decode(&bytes, bytes.len() as u64).unwrap();
            assert_eq!(h.rra_ptr(), [cur]);
            let data = rrd_format::decode_values(&bytes[h.layout().data_off as usize..]);
            // The newest row (NaN) is at cur_row, the oldest right after it.
            assert!(data[cur as usize].is_nan());
            assert_eq!(data[(cur as usize + 1) % 3], 1.0);
            assert_eq!(data[(cur as usize + 2) % 3], 20.0);
        }
    }

    fn err(xml: &str) -> String {
        parse(xml.as_bytes(), false).unwrap_err().to_string()
    }

    #[test]
    fn bad_documents_are_errors_naming_the_problem() {
        assert!(err("<foo/>").contains("<rrd>"), "{}", err("<foo/>"));
        assert!(err("").contains("ended"));
        assert!(err("<rrd><step>300</stp></rrd>").contains("malformed XML"));
        let trailing = format!("{MINIMAL}<rrd>");
        assert!(err(&trailing).contains("after </rrd>"), "{}", err(&trailing));
        // MINIMAL with one piece replaced, and what the error must name.
        let edits = [
            ("<row><v>1</v></row><row><v>20</v></row><row><v>NaN</v></row>", "", "no rows"),
            ("<v>20</v>", "<v>abc</v>", "<v> 'abc' is not a number"),
            ("<row><v>20</v></row>", "<row></row>", "</row>"),
            ("<xff>0.5</xff>", "<xff>0.5</xff><foo>1</foo>", "<foo>"),
            ("GAUGE", "GAGE", "'GAGE'"),
            ("<step>300</step>", "", "<step>"),
            ("<name>a</name>", "<name>abcdefghijklmnopqrstu</name>", "longer than 19"),
            ("</rra></rrd>", "</rra><ds></ds></rrd>", "precede"),
            ("0003", "0009", "'0009'"),
        ];
        for (from, to, named) in edits {
            assert!(MINIMAL.contains(from), "{from}");
            let e = err(&MINIMAL.replace(from, to));
            assert!(e.contains(named), "{from} -> {to}: {e}");
        }
    }

    #[test]
    fn compute_expressions_round_trip_and_bad_ones_are_errors() {
        let with_compute = MINIMAL
            .replace("</ds><rra>", "</ds><ds><name>b</name><type>COMPUTE</type><cdef>a,2,*</cdef></ds><rra>");
        let with_compute = with_compute.replace("<row><v>1</v></row>", "<row><v>1</v><v>2</v></row>");
        let with_compute = with_compute.replace("<row><v>20</v></row>", "<row><v>20</v><v>40</v></row>");
        let with_compute = with_compute.replace("<row><v>NaN</v></row>", "<row><v>NaN</v><v>NaN</v></row>");
        let r = parse(with_compute.as_bytes(), false).unwrap();
        let program = crate::rpn::Program::from_par(&r.header.ds()[1].par).unwrap();
        assert_eq!(program.to_rrd_string(&["a", "b"]), "a,2,*");
        let unknown_name = with_compute.replace("a,2,*", "zz,2,*");
        assert!(err(&unknown_name).contains("<cdef> 'zz,2,*'"), "{}", err(&unknown_name));
        // A name defined later is not visible yet, as in RRDtool.
        let forward = with_compute.replace("<name>a</name>", "<name>c</name>").replace("a,2,*", "c,b,+");
        assert!(
            parse(forward.as_bytes(), false).is_ok(),
            "a COMPUTE source may name itself and earlier ones"
        );
    }

    #[test]
    fn error_lines_point_at_the_element() {
        let xml = "<rrd>\n<version>0003</version>\n<step>300</step>\n<bogus>1</bogus>\n</rrd>";
        match parse(xml.as_bytes(), false).unwrap_err() {
            RestoreError::Xml { line, what } => {
                assert_eq!(line, 4, "{what}");
                assert!(what.contains("<bogus>"));
            }
            other => panic!("unexpected error {other}"),
        }
    }

    #[test]
    fn hostile_input_never_panics() {
        let samples = [
            "<rrd><ds><name>x</name><type>COMPUTE</type><cdef>x,x,+</cdef></ds></rrd>",
            "<rrd><rra><database><row><v>1</v></row></database></rra></rrd>",
            "<rrd><version>0001</version><step>1</step><ds><type>GAUGE</type></ds>\
             <rra><cf>MIN</cf><pdp_per_row>1</pdp_per_row><xff>0.5</xff><database><row><v>1</v></row></database></rra></rrd>",
            "<rrd><![CDATA[x]]><step>&amp;</step></rrd>",
            "<rrd><step>&bogus;</step></rrd>",
            "<rrd><step>1<step>",
            "\u{0}\u{1}<<>>",
        ];
        for s in samples {
            let _ = parse(s.as_bytes(), true);
        }
        for len in 0..MINIMAL.len() {
            let _ = parse(&MINIMAL.as_bytes()[..len], false);
        }
        // Deterministic mutations: single bytes replaced by XML-significant
        // ones, anywhere in a valid document.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let replacements = b"<>/&;x0-9e. \n\x1aN";
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut doc = MINIMAL.as_bytes().to_vec();
            for k in 0..1 + (x % 3) as usize {
                let at = ((x >> (8 * k)) as usize) % doc.len();
                doc[at] = replacements[((x >> 40) as usize + k) % replacements.len()];
            }
            let _ = parse(&doc, true);
        }
    }
}
