//! `dump`: an RRD as the XML text RRDtool 1.7.2 prints, byte for byte.
//!
//! Owns the XML layout (every tab, space and comment of `rrdtool dump`),
//! the `%0.10e` number format, the local-time comments (libc's
//! `localtime_r` + `strftime` in the process time zone, as RRDtool does) and
//! the order of rows (oldest first, starting after `cur_row`).
//!
//! Invariants: the data area is read one bounded chunk of rows at a time, so
//! memory stays small whatever the file size; output goes to any
//! [`std::io::Write`] through one reusable buffer.
//!
//! Deliberately not here: option parsing and choosing the output file (the
//! CLI does that), flushing a caching daemon (rrdscale has none), and
//! validating the file (done by [`Rrd::open`]).

use std::io::Write;
use std::path::PathBuf;

use rrd_format::{
    Cf, Dst, Header, RraDef, CDP_HW_INTERCEPT, CDP_HW_LAST_INTERCEPT, CDP_HW_LAST_SEASONAL,
    CDP_HW_LAST_SLOPE, CDP_HW_SEASONAL, CDP_HW_SLOPE, CDP_INIT_SEASONAL, CDP_LAST_NULL_COUNT, CDP_NULL_COUNT,
    CDP_PRIMARY_VAL, CDP_SECONDARY_VAL, CDP_UNKN_PDP_CNT, CDP_VAL, DS_MAX_VAL, DS_MIN_VAL, DS_MRHB_CNT,
    PDP_UNKN_SEC_CNT, PDP_VAL, RRA_CDP_XFF_VAL, RRA_DELTA_NEG, RRA_DELTA_POS, RRA_DEPENDENT_RRA_IDX,
    RRA_FAILURE_THRESHOLD, RRA_HW_ALPHA, RRA_HW_BETA, RRA_SEASONAL_GAMMA, RRA_SEASONAL_SMOOTHING_WINDOW,
    RRA_SEASONAL_SMOOTH_IDX, RRA_WINDOW_LEN,
};

use crate::error::{Error, Result};
use crate::rrd::Rrd;
use crate::store::Store;
use rrd_lang::ctime;

/// Which prologue precedes `<rrd>` (`rrdtool dump --header`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DumpHeader {
    /// Only the `<!-- Round Robin Database Dump -->` comment (`--no-header`).
    None,
    /// XML declaration and DOCTYPE: RRDtool's default.
    #[default]
    Dtd,
    /// XML declaration and an XML-Schema-qualified root element.
    Xsd,
}

impl DumpHeader {
    /// Parses the value of `--header`; `None` for anything RRDtool ignores.
    pub fn parse(value: &str) -> Option<DumpHeader> {
        match value {
            "none" => Some(DumpHeader::None),
            "dtd" => Some(DumpHeader::Dtd),
            "xsd" => Some(DumpHeader::Xsd),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct DumpOptions {
    pub header: DumpHeader,
}

/// Rows read per chunk: bounds memory on huge archives while keeping reads
/// large enough to be efficient.
const ROWS_PER_CHUNK: u64 = 8192;

/// Output is handed to the writer in pieces of about this size.
const FLUSH_AT: usize = 64 * 1024;

/// Writes the XML dump of `rrd` to `out`. Errors writing `out` are
/// [`Error::Io`] with the path `dump output`.
pub fn dump<S: Store>(rrd: &Rrd<S>, out: &mut dyn Write, opts: &DumpOptions) -> Result<()> {
    let mut w = XmlOut { buf: Vec::with_capacity(FLUSH_AT + 4096), out, clock: LocalClock::new() };
    let h = &rrd.header;

    w.put(match opts.header {
        DumpHeader::Dtd => concat!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n",
            "<!DOCTYPE rrd SYSTEM \"https://oss.oetiker.ch/rrdtool/rrdtool.dtd\">\n",
            "<!-- Round Robin Database Dump -->\n",
            "<rrd>\n"
        ),
        DumpHeader::Xsd => concat!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n",
            "<!-- Round Robin Database Dump -->\n",
            "<rrd xmlns=\"https://oss.oetiker.ch/rrdtool/rrdtool-dump.xml\" ",
            "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"\n",
            "\txsi:schemaLocation=\"https://oss.oetiker.ch/rrdtool/rrdtool-dump.xml ",
            "https://oss.oetiker.ch/rrdtool/rrdtool-dump.xsd\">\n"
        ),
        DumpHeader::None => "<!-- Round Robin Database Dump -->\n<rrd>\n",
    });

    // Files of versions 0001..0003 all dump as 0003: restore writes 0003
    // for them, and the XML has no fields that tell them apart.
    let version = if h.version().0 <= 3 { "0003".to_string() } else { h.version().as_str() };
    w.put("\t<version>");
    w.put(&version);
    w.put("</version>\n\t<step>");
    w.put_u64(h.pdp_step());
    w.put("</step> <!-- Seconds -->\n\t<lastupdate>");
    w.put_i64(h.live().last_up);
    w.put("</lastupdate> <!-- ");
    w.put_local_time(h.live().last_up);
    w.put(" -->\n\n");

    dump_sources(rrd, &mut w)?;

    w.put("\t<!-- Round Robin Archives -->\n");
    for (r, rra) in h.rra().iter().enumerate() {
        w.put("\t<rra>\n\t\t<cf>");
        w.put_bytes(c_str(&rra.cf_name.0));
        w.put("</cf>\n\t\t<pdp_per_row>");
        w.put_u64(rra.pdp_count);
        w.put("</pdp_per_row> <!-- ");
        w.put_u64(rra.pdp_count.wrapping_mul(h.pdp_step()));
        w.put(" seconds -->\n\n\t\t<params>\n");
        dump_params(h, rra, &mut w);
        w.put("\t\t</params>\n\t\t<cdp_prep>\n");
        dump_cdp_prep(h, r, &mut w);
        w.put("\t\t</cdp_prep>\n\t\t<database>\n");
        w.maybe_flush()?;
        dump_rows(rrd, r, &mut w)?;
        w.put("\t\t</database>\n\t</rra>\n");
    }
    w.put("</rrd>\n");
    w.flush()
}

/// The `<ds>` elements: each data source's definition and PDP status.
fn dump_sources<S: Store>(rrd: &Rrd<S>, w: &mut XmlOut<'_>) -> Result<()> {
    let h = &rrd.header;
    let ds_names: Vec<&str> = h.ds().iter().map(|d| d.name.as_str()).collect();
    for (i, ds) in h.ds().iter().enumerate() {
        w.put("\t<ds>\n\t\t<name> ");
        w.put_bytes(c_str(&ds.name.0));
        w.put(" </name>\n\t\t<type> ");
        w.put_bytes(c_str(&ds.dst_name.0));
        w.put(" </type>\n");
        if ds.dst == Dst::Compute {
            let expr = compute_expression(&ds.par, &ds_names).map_err(|e| {
                Error::invalid(format!(
                    "{}: data source '{}' has an undecodable COMPUTE expression: {e}",
                    rrd.path.display(),
                    ds.name.as_str()
                ))
            })?;
            w.put("\t\t<cdef> ");
            w.put(&expr);
            w.put(" </cdef>\n");
        } else {
            w.put("\t\t<minimal_heartbeat>");
            w.put_u64(ds.par[DS_MRHB_CNT]);
            w.put("</minimal_heartbeat>\n");
            w.element("\t\t", "min", ds.par[DS_MIN_VAL]);
            w.element("\t\t", "max", ds.par[DS_MAX_VAL]);
        }
        let pdp = &h.pdp()[i];
        w.put("\n\t\t<!-- PDP Status -->\n\t\t<last_ds>");
        // RRDtool prints the field with %s: up to its NUL, which for a
        // corrupt field may lie in the two padding bytes after it.
        let mut last_ds = pdp.last_ds.to_vec();
        last_ds.extend_from_slice(&pdp.pad);
        w.put_bytes(c_str(&last_ds));
        w.put("</last_ds>\n");
        w.element("\t\t", "value", pdp.scratch[PDP_VAL]);
        w.put("\t\t<unknown_sec> ");
        w.put_u64(pdp.scratch[PDP_UNKN_SEC_CNT]);
        w.put(" </unknown_sec>\n\t</ds>\n\n");
        w.maybe_flush()?;
    }
    Ok(())
}

/// An archive's `<params>`: those of its consolidation function.
fn dump_params(h: &Header, rra: &RraDef, w: &mut XmlOut<'_>) {
    let p = &rra.par;
    match rra.cf {
        Cf::HwPredict | Cf::MhwPredict => {
            w.element("\t\t", "hw_alpha", p[RRA_HW_ALPHA]);
            w.element("\t\t", "hw_beta", p[RRA_HW_BETA]);
            w.count("\t\t", "dependent_rra_idx", p[RRA_DEPENDENT_RRA_IDX]);
        }
        Cf::Seasonal | Cf::DevSeasonal => {
            w.element("\t\t", "seasonal_gamma", p[RRA_SEASONAL_GAMMA]);
            w.count("\t\t", "seasonal_smooth_idx", p[RRA_SEASONAL_SMOOTH_IDX]);
            if h.version().0 >= 4 {
                w.element("\t\t", "smoothing_window", p[RRA_SEASONAL_SMOOTHING_WINDOW]);
            }
            w.count("\t\t", "dependent_rra_idx", p[RRA_DEPENDENT_RRA_IDX]);
        }
        Cf::Failures => {
            w.element("\t\t", "delta_pos", p[RRA_DELTA_POS]);
            w.element("\t\t", "delta_neg", p[RRA_DELTA_NEG]);
            w.count("\t\t", "window_len", p[RRA_WINDOW_LEN]);
            w.count("\t\t", "failure_threshold", p[RRA_FAILURE_THRESHOLD]);
            w.count("\t\t", "dependent_rra_idx", p[RRA_DEPENDENT_RRA_IDX]);
        }
        Cf::DevPredict => w.count("\t\t", "dependent_rra_idx", p[RRA_DEPENDENT_RRA_IDX]),
        Cf::Average | Cf::Minimum | Cf::Maximum | Cf::Last => w.element("\t\t", "xff", p[RRA_CDP_XFF_VAL]),
    }
}

/// Archive `r`'s `<cdp_prep>`: each data source's consolidation scratch.
fn dump_cdp_prep(h: &Header, r: usize, w: &mut XmlOut<'_>) {
    let rra = &h.rra()[r];
    let p = &rra.par;
    for d in 0..h.ds().len() {
        let s = &h.cdp()[h.cdp_index(r, d)].scratch;
        w.put("\t\t\t<ds>\n");
        w.element("\t\t\t", "primary_value", s[CDP_PRIMARY_VAL]);
        w.element("\t\t\t", "secondary_value", s[CDP_SECONDARY_VAL]);
        match rra.cf {
            Cf::HwPredict | Cf::MhwPredict => {
                w.element("\t\t\t", "intercept", s[CDP_HW_INTERCEPT]);
                w.element("\t\t\t", "last_intercept", s[CDP_HW_LAST_INTERCEPT]);
                w.element("\t\t\t", "slope", s[CDP_HW_SLOPE]);
                w.element("\t\t\t", "last_slope", s[CDP_HW_LAST_SLOPE]);
                w.count("\t\t\t", "nan_count", s[CDP_NULL_COUNT]);
                w.count("\t\t\t", "last_nan_count", s[CDP_LAST_NULL_COUNT]);
            }
            Cf::Seasonal | Cf::DevSeasonal => {
                w.element("\t\t\t", "seasonal", s[CDP_HW_SEASONAL]);
                w.element("\t\t\t", "last_seasonal", s[CDP_HW_LAST_SEASONAL]);
                w.count("\t\t\t", "init_flag", s[CDP_INIT_SEASONAL]);
            }
            Cf::DevPredict => {}
            Cf::Failures => {
                // The violation history is one byte per window slot,
                // overlaid on the scratch area and printed with %d of
                // a (signed) char. A window longer than the scratch
                // area only exists in corrupt files: stop at its end.
                let bytes: Vec<u8> = s.iter().flat_map(|v| v.to_le_bytes()).collect();
                let len = p[RRA_WINDOW_LEN].min(bytes.len() as u64) as usize;
                w.put("\t\t\t<history>");
                for &b in &bytes[..len] {
                    w.put_i64(i64::from(b as i8));
                }
                w.put("</history>\n");
            }
            Cf::Average | Cf::Minimum | Cf::Maximum | Cf::Last => {
                w.element("\t\t\t", "value", s[CDP_VAL]);
                w.count("\t\t\t", "unknown_datapoints", s[CDP_UNKN_PDP_CNT]);
            }
        }
        w.put("\t\t\t</ds>\n");
    }
}

/// The rows of archive `r`, oldest first: the row after `cur_row` is the
/// oldest, `cur_row` itself the newest.
fn dump_rows<S: Store>(rrd: &Rrd<S>, r: usize, w: &mut XmlOut<'_>) -> Result<()> {
    let h = &rrd.header;
    let rra = &h.rra()[r];
    let row_count = rra.row_count;
    let ds_count = h.ds().len();
    // RRDtool computes the row times in unsigned long arithmetic mixed with
    // time_t; on LP64 both are 64 bits, so wrapping u64 arithmetic gives the
    // same bits for every input, hostile ones included.
    let period = rra.pdp_count.wrapping_mul(h.pdp_step());
    let last_up = h.live().last_up as u64;
    let newest = last_up.wrapping_sub(if period == 0 { 0 } else { last_up % period });
    let mut timer = (row_count as i64).wrapping_neg().wrapping_add(1);

    let first = (h.rra_ptr()[r] + 1) % row_count;
    // Two runs in file order: first..row_count, then 0..first.
    for (start, end) in [(first, row_count), (0, first)] {
        let mut row = start;
        while row < end {
            let count = (end - row).min(ROWS_PER_CHUNK);
            let values = rrd.read_rows(r, row, count)?;
            for chunk in values.chunks_exact(ds_count) {
                let now = newest.wrapping_add((timer as u64).wrapping_mul(period)) as i64;
                timer = timer.wrapping_add(1);
                w.put("\t\t\t<!-- ");
                w.put_local_time(now);
                w.put(" / ");
                w.put_i64(now);
                w.put(" --> <row>");
                for &v in chunk {
                    w.put("<v>");
                    w.put_value(v);
                    w.put("</v>");
                }
                w.put("</row>\n");
                w.maybe_flush()?;
            }
            row += count;
        }
    }
    Ok(())
}

/// The RPN text of a COMPUTE data source, as `rrdtool dump` prints it.
fn compute_expression(par: &rrd_format::Par, ds_names: &[&str]) -> std::result::Result<String, String> {
    let program = crate::rpn::Program::from_par(par).map_err(|e| e.to_string())?;
    Ok(program.to_rrd_string(ds_names))
}

/// The bytes of a C string field up to (not including) its NUL.
fn c_str(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    &field[..end]
}

/// The buffered writer the dump goes through.
struct XmlOut<'a> {
    buf: Vec<u8>,
    out: &'a mut dyn Write,
    clock: LocalClock,
}

impl XmlOut<'_> {
    fn put(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    fn put_bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    fn put_u64(&mut self, v: u64) {
        use std::io::Write as _;
        write!(self.buf, "{v}").expect("writing to a Vec cannot fail");
    }

    fn put_i64(&mut self, v: i64) {
        use std::io::Write as _;
        write!(self.buf, "{v}").expect("writing to a Vec cannot fail");
    }

    /// A double slot as RRDtool prints it: `NaN` for any NaN, else
    /// `%0.10e` through rrdtool's own printf (which rounds near ties its own
    /// way and prints -0 as 0), not glibc's.
    fn put_value(&mut self, v: f64) {
        if v.is_nan() {
            self.buf.extend_from_slice(b"NaN");
        } else {
            self.buf.extend_from_slice(rrd_lang::cformat::rrd_snprintf_e(v, 10).as_bytes());
        }
    }

    /// `<indent><tag>value</tag>\n` for a double slot (raw bits).
    fn element(&mut self, indent: &str, tag: &str, bits: u64) {
        self.put(indent);
        self.put("<");
        self.put(tag);
        self.put(">");
        self.put_value(f64::from_bits(bits));
        self.put("</");
        self.put(tag);
        self.put(">\n");
    }

    /// `<indent><tag>count</tag>\n` for a count slot.
    fn count(&mut self, indent: &str, tag: &str, v: u64) {
        self.put(indent);
        self.put("<");
        self.put(tag);
        self.put(">");
        self.put_u64(v);
        self.put("</");
        self.put(tag);
        self.put(">\n");
    }

    fn put_local_time(&mut self, t: i64) {
        let s = self.clock.format(t);
        self.buf.extend_from_slice(&s);
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> Result<()> {
        self.out.write_all(&self.buf).map_err(output_error)?;
        self.buf.clear();
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.flush_buf()?;
        self.out.flush().map_err(output_error)
    }
}

fn output_error(source: std::io::Error) -> Error {
    Error::Io { path: PathBuf::from("dump output"), source }
}

/// `strftime("%Y-%m-%d %H:%M:%S %Z", localtime_r(t))`, as RRDtool formats
/// the time comments. Like RRDtool it keeps one `struct tm` across calls,
/// so a time `localtime_r` cannot represent repeats the previous one.
struct LocalClock {
    tm: ctime::Tm,
}

impl LocalClock {
    fn new() -> LocalClock {
        LocalClock { tm: ctime::zeroed_tm() }
    }

    fn format(&mut self, t: i64) -> Vec<u8> {
        // On failure localtime_r leaves the struct as it was (RRDtool then
        // prints the previous time too).
        ctime::localtime_into(t, &mut self.tm);
        // 255 as the buffer size, as RRDtool passes.
        ctime::strftime(c"%Y-%m-%d %H:%M:%S %Z", &self.tm, 255)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dump prints values with rrdtool's own printf: negative zero
    /// without a sign (glibc would print "-0.0000000000e+00").
    #[test]
    fn values_print_like_rrdtool_not_glibc() {
        assert_eq!(rrd_lang::cformat::rrd_snprintf_e(-0.0, 10), "0.0000000000e+00");
        assert_eq!(rrd_lang::cformat::rrd_snprintf_e(1.5, 10), "1.5000000000e+00");
    }

    #[test]
    fn header_option_values() {
        assert_eq!(DumpHeader::parse("xsd"), Some(DumpHeader::Xsd));
        assert_eq!(DumpHeader::parse("none"), Some(DumpHeader::None));
        assert_eq!(DumpHeader::parse("dtd"), Some(DumpHeader::Dtd));
        assert_eq!(DumpHeader::parse("DTD"), None);
        assert_eq!(DumpHeader::default(), DumpHeader::Dtd);
    }

    #[test]
    fn c_strings_stop_at_nul() {
        assert_eq!(c_str(b"abc\0def"), b"abc");
        assert_eq!(c_str(b"abc"), b"abc");
    }
}
