//! `create`: parse DS and RRA definitions as RRDtool 1.7.2 does, lay out a
//! fresh header, and write the file atomically (temporary file + rename, so
//! a reader never sees a half-written RRD).
//!
//! `--source` prefill is `prefill`'s; this module only picks the
//! last update time from the sources and writes what prefill computes.
//!
//! Holt-Winters archives (HWPREDICT, MHWPREDICT and their SEASONAL,
//! DEVSEASONAL, DEVPREDICT and FAILURES companions, implicit or explicit)
//! are parsed as `tune`'s archive additions parse them (rrdtool shares one
//! parser); the smoothing row of seasonal archives comes from the FNV hash
//! of the file name exactly as given, so `create x.rrd` and
//! `create ./x.rrd` differ there, as in rrdtool.
//!
//! Deliberately absent: `--source` prefill into a new file that has
//! Holt-Winters archives (refused with an error).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use rrd_format::{
    CdpPrep, Cf, DsDef, Dst, Header, HeaderParts, LiveHead, Name, PdpPrep, RraDef, Version, CDP_UNKN_PDP_CNT,
    CDP_VAL, DS_MAX_VAL, DS_MIN_VAL, DS_MRHB_CNT, LAST_DS_LEN, PDP_UNKN_SEC_CNT, PDP_VAL,
};

use super::rra_def::{handle_dependent_rras, parse_rra_def};
use crate::error::{Error, Result, SizeLimit};
use crate::newfile::NewFiles;
use crate::numparse::{self, DNAN};
use crate::rrd::Rrd;

/// `--source`'s checks, made while parsing options (prefill's, which is
/// internal).
pub use crate::prefill::{check_source_paths, check_source_paths_in};

/// Options of `rrdtool create`.
#[derive(Clone, Debug, Default)]
pub struct CreateOptions {
    /// `--start`: time of the last update (epoch seconds); default now - 10 s.
    pub start: Option<i64>,
    /// `--step` in seconds; default 300 (or the template's).
    pub step_secs: Option<u64>,
    /// `--no-overwrite`.
    pub no_overwrite: bool,
    /// `--template`: copy DS and RRA definitions (and step) from this file.
    pub template: Option<PathBuf>,
    /// `--source`: prefill from these files, in this order.
    pub sources: Vec<PathBuf>,
    /// Where `template` and `sources` are opened from: anywhere for
    /// rrdtool, beneath its base directory for the daemon under `-B`, so a
    /// source reached through a symbolic link cannot leave it.
    pub source_root: crate::root::Root,
    /// Where the new file is made by [`create`]: its directory opened
    /// beneath this root, the file made and renamed relative to it
    /// ([`crate::newfile::NewFiles::in_root`]); anywhere for rrdtool.
    pub target_root: crate::root::Root,
}

fn err(msg: impl Into<String>) -> Error {
    Error::invalid(msg)
}

fn valid_ds_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 19 && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// Parses the part after `DS:`. `earlier` are the names defined before it
/// (a COMPUTE expression may refer to them).
pub fn parse_ds(def: &str, earlier: &[&str]) -> Result<DsDef> {
    parse_ds_lazy(def, || earlier.to_vec())
}

/// The DS names of a file being defined, in order: what a COMPUTE DS may
/// refer to, and what a new DS must not repeat. Adding a name costs the
/// same with 100,000 DS as with one (rrdtool's check is quadratic).
#[derive(Debug, Default)]
pub struct DsNames {
    names: Vec<String>,
    seen: std::collections::HashSet<String>,
}

impl DsNames {
    /// The names of the DS a file already has.
    pub fn new<'a>(existing: impl IntoIterator<Item = &'a str>) -> DsNames {
        let mut list = DsNames::default();
        for name in existing {
            list.names.push(name.to_string());
            list.seen.insert(name.to_string());
        }
        list
    }

    /// Parses the part after `DS:` of the next DS and records its name;
    /// "Duplicate DS name" if an earlier DS has it.
    pub fn parse_next(&mut self, def: &str) -> Result<DsDef> {
        let d = parse_ds_lazy(def, || self.names.iter().map(String::as_str).collect())?;
        let name = d.name.as_str();
        if !self.seen.insert(name.to_string()) {
            return Err(err(format!("Duplicate DS name: {name}")));
        }
        self.names.push(name.to_string());
        Ok(d)
    }
}

/// [`parse_ds`], asking for the earlier names only for a COMPUTE DS.
fn parse_ds_lazy<'a>(def: &str, earlier: impl FnOnce() -> Vec<&'a str>) -> Result<DsDef> {
    // name[=mapped[index]]:TYPE:args
    let (name_part, rest) = def.split_once(':').ok_or_else(|| err("invalid DS format"))?;
    let (dst_name, args) = rest.split_once(':').ok_or_else(|| err("invalid DS format"))?;
    let name = match name_part.split_once('=') {
        None => name_part,
        Some((n, mapped)) => {
            let mapped_name = mapped.split_once('[').map_or(mapped, |(m, idx)| {
                if idx
                    .strip_suffix(']')
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
                {
                    m
                } else {
                    ""
                }
            });
            if !valid_ds_name(mapped_name) {
                return Err(err("invalid DS format"));
            }
            n
        }
    };
    if !valid_ds_name(name)
        || dst_name.is_empty()
        || dst_name.len() > 19
        || !dst_name.bytes().all(|c| c.is_ascii_uppercase())
        || args.is_empty()
    {
        return Err(err("invalid DS format"));
    }
    let dst = Dst::parse(dst_name).ok_or_else(|| err(format!("invalid DS type specified ({dst_name})")))?;
    let mut par = [0u64; 10];
    if dst == Dst::Compute {
        let program =
            crate::rpn::Program::parse_compute(args, &earlier()).map_err(|e| err(e.rrdtool_message()))?;
        par = program.to_par().map_err(|e| err(e.rrdtool_message()))?;
    } else {
        parse_generic_ds(args, &mut par)?;
    }
    Ok(DsDef { name: Name::new(name), dst_name: Name::new(dst_name), dst, par })
}

/// `heartbeat:min:max` of the non-COMPUTE types.
fn parse_generic_ds(args: &str, par: &mut [u64; 10]) -> Result<()> {
    let fail = |why: &str| err(format!("failed to parse data source {args}: {why}"));
    let (heartbeat, limits) = args.split_once(':').ok_or_else(|| fail("missing separator"))?;
    if heartbeat.len() >= 32 {
        return Err(fail("heartbeat too long"));
    }
    par[DS_MRHB_CNT] = numparse::scaled_duration(heartbeat, 1).map_err(fail)?;
    // sscanf("%18[^:]:%18[^:]"): two non-empty fields of at most 18
    // characters; anything after the second is ignored.
    let mut fields = limits.split(':');
    let min = fields.next().unwrap_or("");
    let max_full = fields.next();
    let (Some(max_full), false, false) = (max_full, min.is_empty(), min.len() > 18) else {
        return Err(fail("failed to extract min:max"));
    };
    let max: String = max_full.chars().take(18).collect();
    if max.is_empty() {
        return Err(fail("failed to extract min:max"));
    }
    let limit = |s: &str, what: &str| -> Result<f64> {
        if s == "U" {
            Ok(DNAN)
        } else {
            numparse::parse_double(s).map_err(|e| err(format!("{what} - {e}")))
        }
    };
    let min_v = limit(min, "parsing min val")?;
    let max_v = limit(&max, "parsing max val")?;
    if min_v >= max_v {
        return Err(fail("min must be less than max in DS definition"));
    }
    par[DS_MIN_VAL] = min_v.to_bits();
    par[DS_MAX_VAL] = max_v.to_bits();
    Ok(())
}

/// A small random generator for the initial rows (rrdtool picks a random
/// `cur_row` per RRA so that files created together do not write the same
/// offsets at the same time).
fn random_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (t.as_nanos() as u64) ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15
}

fn next_random(state: &mut u64) -> u64 {
    // xorshift64*
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Builds the header of a new file from `create`'s options and definitions
/// (as for a file named "": see [`build_header_named`]).
pub fn build_header(opts: &CreateOptions, defs: &[String], now_secs: i64) -> Result<Header> {
    build_header_named(b"", opts, defs, now_secs)
}

/// Builds the header of a new file called `file_name` (the name as given on
/// the command line: its hash places the smoothing of seasonal archives).
pub fn build_header_named(
    file_name: &[u8],
    opts: &CreateOptions,
    defs: &[String],
    now_secs: i64,
) -> Result<Header> {
    let hash = crate::hw::fnv_hash(file_name);
    let mut step = opts.step_secs.unwrap_or(0);
    let mut ds: Vec<DsDef> = Vec::new();
    let mut rra: Vec<RraDef> = Vec::new();
    let mut template_last_up = 0;
    if let Some(t) = &opts.template {
        let trrd = Rrd::open_in(&opts.source_root, t, false)
            .map_err(|e| err(format!("Cannot open template RRD {}: {e}", t.display())))?;
        if step == 0 {
            step = trrd.header.pdp_step();
        }
        ds = trrd.header.ds().to_vec();
        rra = trrd.header.rra().to_vec();
        template_last_up = trrd.header.live().last_up;
    }
    if step == 0 {
        step = 300;
    }
    let mut version = Version(3);
    let mut names = DsNames::new(ds.iter().map(|d| d.name.as_str()));
    for def in defs {
        if let Some(body) = def.strip_prefix("DS:") {
            let d = names.parse_next(body)?;
            if matches!(d.dst, Dst::Dcounter | Dst::Dderive) {
                version = version.max(Version(5));
            }
            ds.push(d);
        } else if def.starts_with("RRA:") {
            let mut require = None;
            rra.push(parse_rra_def(def, step, hash, &mut require)?);
            if let Some(v) = require {
                version = version.max(Version(v));
            }
            handle_dependent_rras(&mut rra, hash)?;
        } else {
            return Err(err(format!("can't parse argument '{def}'")));
        }
    }
    if rra.is_empty() {
        return Err(err("you must define at least one Round Robin Archive"));
    }
    if ds.is_empty() {
        return Err(err("you must define at least one Data Source"));
    }
    let last_up = match opts.start {
        Some(s) if s > 0 => s,
        // rrdtool: without --start, the latest last update of the sources
        // (the template's does not count then).
        _ if !opts.sources.is_empty() => crate::prefill::latest_last_up(&opts.source_root, &opts.sources)?,
        _ if template_last_up > 0 => template_last_up,
        _ => now_secs - 10,
    };
    let unkn_sec = (last_up as u64) % step;
    let mut pdp = Vec::with_capacity(ds.len());
    for _ in &ds {
        let mut p = PdpPrep { last_ds: [0; LAST_DS_LEN], pad: [0; 2], scratch: [0; 10] };
        p.set_last_ds("U");
        p.scratch[PDP_VAL] = DNAN.to_bits();
        p.scratch[PDP_UNKN_SEC_CNT] = unkn_sec;
        pdp.push(p);
    }
    let mut cdp = Vec::with_capacity(ds.len() * rra.len());
    for r in &rra {
        for _ in &ds {
            let mut scratch = [0u64; 10];
            // DEVPREDICT starts like a classic archive in rrdtool.
            if crate::hw::is_hw(r.cf) && r.cf != Cf::DevPredict {
                crate::hw::init_cdp(r.cf, &mut scratch);
            } else {
                scratch[CDP_VAL] = DNAN.to_bits();
                scratch[CDP_UNKN_PDP_CNT] = ((last_up as u64 - unkn_sec) % (step * r.pdp_count)) / step;
            }
            cdp.push(CdpPrep { scratch });
        }
    }
    let mut seed = random_seed();
    let rra_ptr = rra.iter().map(|r| next_random(&mut seed) % r.row_count).collect();
    // Fails on absurd sizes (rows × DS overflowing) before anything is written.
    let header = Header::from_parts(HeaderParts {
        version,
        stat_pad: [0; 7],
        pdp_step: step,
        stat_par: [0; 10],
        ds,
        rra,
        live: LiveHead { last_up, last_up_usec: 0 },
        pdp,
        cdp,
        rra_ptr,
    })
    .map_err(|e| err(format!("the RRD would be too large: {e}")))?;
    Ok(header)
}

/// Writes `header` then whatever `data` writes, to a temporary file beside
/// `path` that is made durable, then renamed over it (see
/// [`crate::newfile`]); durable when this returns `Ok`.
pub fn write_file_with(
    path: &Path,
    header: &Header,
    no_overwrite: bool,
    data: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    crate::newfile::write_one(path, header, no_overwrite, data)
}

/// [`write_file_with`] beneath `root` ([`crate::newfile::write_one_in`]).
pub fn write_file_in(
    root: &crate::root::Root,
    path: &Path,
    header: &Header,
    no_overwrite: bool,
    data: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    crate::newfile::write_one_in(root, path, header, no_overwrite, data)
}

/// `rrdtool create`: the file is durable under its name when this returns
/// `Ok` (one sync of its own; see [`create_in`] to share syncs).
pub fn create(path: &Path, opts: &CreateOptions, defs: &[String], now_secs: i64) -> Result<()> {
    let mut group = NewFiles::in_root(opts.target_root.clone());
    create_in(&mut group, path, opts, defs, now_secs)?;
    group.commit().pop().expect("one staged file, one result")
}

/// Default of [`max_create_bytes`]: far above real RRDs (ten years of
/// one-minute rows of 8 DS are 336 MiB), below a mistyped row count such as
/// 10^9 rows (8 GB per DS).
pub const DEFAULT_MAX_CREATE_BYTES: u64 = 4 << 30;

/// The largest file `create` writes: `RRDSCALE_CREATE_MAX_BYTES` (a
/// number of bytes, with an optional K, M, G or T suffix of powers of
/// 1024; 0 = no limit but the free space), else
/// [`DEFAULT_MAX_CREATE_BYTES`].
pub fn max_create_bytes() -> Result<u64> {
    let Ok(text) = std::env::var("RRDSCALE_CREATE_MAX_BYTES") else {
        return Ok(DEFAULT_MAX_CREATE_BYTES);
    };
    let t = text.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 10),
        Some((i, 'M' | 'm')) => (&t[..i], 20),
        Some((i, 'G' | 'g')) => (&t[..i], 30),
        Some((i, 'T' | 't')) => (&t[..i], 40),
        _ => (t, 0),
    };
    let n: u64 = digits.parse().map_err(|_| {
        err(format!("RRDSCALE_CREATE_MAX_BYTES must be a number of bytes (like 4G or 0), not '{text}'"))
    })?;
    Ok(if n == 0 { u64::MAX } else { n.checked_shl(shift).filter(|v| v >> shift == n).unwrap_or(u64::MAX) })
}

/// `rrdtool create` into a group: the file is written to a temporary name
/// and becomes durable under its own when `group` is committed. The size is
/// checked against [`max_create_bytes`] (and, by the group, the free space)
/// before anything is written.
pub fn create_in(
    group: &mut NewFiles,
    path: &Path,
    opts: &CreateOptions,
    defs: &[String],
    now_secs: i64,
) -> Result<usize> {
    // rrdtool checks the sources while parsing options, before anything else.
    crate::prefill::check_source_paths_in(&opts.source_root, &opts.sources)?;
    if opts.no_overwrite && (fs::symlink_metadata(path).is_ok() || group.is_staged(path)) {
        return Err(Error::Exists { path: path.to_path_buf() });
    }
    use std::os::unix::ffi::OsStrExt;
    let mut header = build_header_named(path.as_os_str().as_bytes(), opts, defs, now_secs)?;
    let len = header.layout().file_len;
    let max = max_create_bytes()?;
    if len > max {
        let (action, limit) =
            (format!("creating '{}'", path.display()), SizeLimit::Configured { max_bytes: max });
        return Err(Error::TooLarge { action, len_bytes: len, limit });
    }
    if opts.sources.is_empty() {
        let data_values = header.rra().iter().map(|r| r.row_count).sum::<u64>() * header.ds().len() as u64;
        return group.stage(path, &header, opts.no_overwrite, |out| {
            let chunk = [DNAN.to_le_bytes(); 512].concat();
            let mut left = data_values * 8;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                out.write_all(&chunk[..n])?;
                left -= n as u64;
            }
            Ok(())
        });
    }
    if header.rra().iter().any(|r| crate::hw::is_hw(r.cf)) {
        return Err(err("prefilling Holt-Winters archives from --source files is not supported"));
    }
    let archives = crate::prefill::prefill_from_files(&mut header, &opts.source_root, &opts.sources, defs)?;
    group.stage(path, &header, opts.no_overwrite, |out| {
        let mut buf = Vec::with_capacity(1 << 16);
        for chunk in archives.iter().flat_map(|rows| rows.chunks(8192)) {
            buf.clear();
            rrd_format::encode_values(chunk, &mut buf);
            out.write_all(&buf)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::rra_def::parse_rra;

    #[test]
    fn header_initial_state_matches_rrdtool() {
        let h = crate::testfile::header(&[
            "DS:in:GAUGE:600:U:U",
            "DS:out:COUNTER:600:0:1e9",
            "RRA:AVERAGE:0.5:1:5",
            "RRA:MAX:0.5:3:4",
        ]);
        assert_eq!(h.version(), Version(3));
        assert_eq!(h.pdp()[0].last_ds_str(), "U");
        assert_eq!(h.pdp()[0].scratch[PDP_UNKN_SEC_CNT], 100);
        assert_eq!(h.pdp()[0].scratch[PDP_VAL], DNAN.to_bits());
        assert_eq!(h.ds()[1].max(), 1e9);
        assert!(h.rra_ptr()[0] < 5 && h.rra_ptr()[1] < 4);
        assert_eq!(h.layout().file_len, 1328);
    }

    #[test]
    fn durations_scale_steps_and_rows() {
        let r = parse_rra("RRA:AVERAGE:0.5:1h:1d", 300).unwrap();
        assert_eq!((r.pdp_count, r.row_count), (12, 24));
        assert_eq!(
            parse_rra("RRA:AVERAGE:0.5:7m:10", 300).unwrap_err().to_string(),
            "Invalid step 7m: value would truncate when scaled"
        );
    }

    #[test]
    fn ds_names_refuse_repeats_and_compute_sees_only_earlier_names() {
        let mut names = DsNames::new(["a", "b"]);
        let dup = names.parse_next("b:GAUGE:600:U:U").unwrap_err().to_string();
        assert_eq!(dup, "Duplicate DS name: b");
        names.parse_next("c:COMPUTE:a,b,+").unwrap();
        let dup = names.parse_next("c:GAUGE:600:U:U").unwrap_err().to_string();
        assert_eq!(dup, "Duplicate DS name: c");
        // A COMPUTE DS may not name a DS defined after it (nor itself).
        assert!(names.parse_next("d:COMPUTE:e,1,+").is_err());
        names.parse_next("e:GAUGE:600:U:U").unwrap();
        // A refused definition did not take its name.
        names.parse_next("d:COMPUTE:e,c,+").unwrap();
    }

    #[test]
    fn bad_definitions_are_refused_with_rrdtool_messages() {
        let msg = |d: &str| parse_ds(d, &[]).unwrap_err().to_string();
        assert_eq!(
            msg("x:GAUGE:600:5:1"),
            "failed to parse data source 600:5:1: min must be less than max in DS definition"
        );
        assert_eq!(msg("x:FOO:600:U:U"), "invalid DS type specified (FOO)");
        assert_eq!(msg("x.y:GAUGE:600:U:U"), "invalid DS format");
        assert_eq!(msg("x:GAUGE:600:U"), "failed to parse data source 600:U: failed to extract min:max");
        assert_eq!(msg("x:GAUGE:600:a:U"), "parsing min val - Cannot convert 'a' to float");
        assert!(parse_ds("x:GAUGE:600:U:U:7", &[]).is_ok());
        assert_eq!(
            parse_rra("RRA:AVERAGE:0.5:1", 300).unwrap_err().to_string(),
            "Expected at least 4 arguments for RRA but got 3"
        );
        assert_eq!(
            parse_rra("RRA:AVERAGE:1:1:10", 300).unwrap_err().to_string(),
            "Invalid xff: must be between 0 and 1"
        );
    }
}
