//! `info`: the configuration and live state of an RRD as the ordered list of
//! key/value pairs RRDtool 1.7.2's `rrd_info_r` builds, and their printing
//! (`key = value` lines, as `rrd_info_print`).
//!
//! The list is typed ([`InfoValue`] mirrors RRDtool's `RD_I_VAL`, `RD_I_CNT`,
//! `RD_I_INT`, `RD_I_STR`, `RD_I_BLO`) so that other front ends (the daemon,
//! `updatev`, a JSON API) can reuse it and format it their own way.
//!
//! Invariants: keys and their order are exactly RRDtool's; only the header is
//! read (no data rows). Deliberately absent: option parsing and `--daemon`.

use std::io::{self, Write};

use rrd_format::{
    Cf, Dst, Header, Layout, CDP_HW_INTERCEPT, CDP_HW_SEASONAL, CDP_HW_SLOPE, CDP_NULL_COUNT,
    CDP_SEASONAL_DEVIATION, CDP_UNKN_PDP_CNT, CDP_VAL, DS_MAX_VAL, DS_MIN_VAL, DS_MRHB_CNT, PDP_UNKN_SEC_CNT,
    PDP_VAL, RRA_CDP_XFF_VAL, RRA_DELTA_NEG, RRA_DELTA_POS, RRA_FAILURE_THRESHOLD, RRA_HW_ALPHA, RRA_HW_BETA,
    RRA_SEASONAL_GAMMA, RRA_SEASONAL_SMOOTHING_WINDOW, RRA_WINDOW_LEN,
};

use crate::error::{Error, Result};
use crate::rpn;
use crate::rrd::Rrd;
use crate::store::Store;
use rrd_lang::cformat::printf_e10;

/// One value of an info entry, typed as RRDtool types it.
#[derive(Clone, Debug, PartialEq)]
pub enum InfoValue {
    /// A double (`RD_I_VAL`): printed `%0.10e`, or `NaN`.
    Value(f64),
    /// An unsigned count (`RD_I_CNT`): printed `%lu`.
    Count(u64),
    /// A signed int (`RD_I_INT`): printed `%d`.
    Int(i32),
    /// A string (`RD_I_STR`): printed in double quotes, unescaped.
    Str(String),
    /// Raw bytes (`RD_I_BLO`): printed as `BLOB_SIZE:n` then the bytes.
    Blob(Vec<u8>),
}

/// One `key = value` pair.
#[derive(Clone, Debug, PartialEq)]
pub struct InfoEntry {
    pub key: String,
    pub value: InfoValue,
}

/// The longest FAILURES window RRDtool accepts; the history is read from the
/// first `window_length` bytes of the CDP scratch area.
const FAILURES_WINDOW_MAX: usize = 28;

fn f(par: &[u64; 10], i: usize) -> InfoValue {
    InfoValue::Value(f64::from_bits(par[i]))
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The info list of an open file, `filename` being the name to report (as
/// given on the command line).
pub fn info<S: Store>(rrd: &Rrd<S>, filename: &str) -> Result<Vec<InfoEntry>> {
    info_of_header(&rrd.header, rrd.layout(), filename)
}

/// The info list of a decoded header.
pub fn info_of_header(header: &Header, layout: &Layout, filename: &str) -> Result<Vec<InfoEntry>> {
    let mut out =
        Vec::with_capacity(8 + header.ds().len() * 9 + header.rra().len() * (6 + header.ds().len() * 3));
    let mut push = |key: String, value: InfoValue| out.push(InfoEntry { key, value });
    push("filename".into(), InfoValue::Str(filename.to_string()));
    push("rrd_version".into(), InfoValue::Str(header.version().as_str()));
    push("step".into(), InfoValue::Count(header.pdp_step()));
    // RRDtool stores time_t in an unsigned count; a negative time prints huge.
    push("last_update".into(), InfoValue::Count(header.live().last_up as u64));
    push("header_size".into(), InfoValue::Count(layout.data_off));

    let ds_names: Vec<&str> = header.ds().iter().map(|d| d.name.as_str()).collect();
    for (i, ds) in header.ds().iter().enumerate() {
        let name = ds.name.as_str();
        push(format!("ds[{name}].index"), InfoValue::Count(i as u64));
        push(format!("ds[{name}].type"), InfoValue::Str(ds.dst_name.as_str().to_string()));
        if ds.dst == Dst::Compute {
            let cdef = rpn::Program::from_par(&ds.par)
                .map_err(|e| Error::invalid(format!("ds[{name}] has a bad COMPUTE expression: {e}")))?
                .to_rrd_string(&ds_names);
            push(format!("ds[{name}].cdef"), InfoValue::Str(cdef));
        } else {
            push(format!("ds[{name}].minimal_heartbeat"), InfoValue::Count(ds.par[DS_MRHB_CNT]));
            push(format!("ds[{name}].min"), f(&ds.par, DS_MIN_VAL));
            push(format!("ds[{name}].max"), f(&ds.par, DS_MAX_VAL));
        }
        let pdp = &header.pdp()[i];
        push(format!("ds[{name}].last_ds"), InfoValue::Str(c_string(&pdp.last_ds)));
        push(format!("ds[{name}].value"), f(&pdp.scratch, PDP_VAL));
        push(format!("ds[{name}].unknown_sec"), InfoValue::Count(pdp.scratch[PDP_UNKN_SEC_CNT]));
    }

    for (i, rra) in header.rra().iter().enumerate() {
        push(format!("rra[{i}].cf"), InfoValue::Str(rra.cf_name.as_str().to_string()));
        push(format!("rra[{i}].rows"), InfoValue::Count(rra.row_count));
        push(format!("rra[{i}].cur_row"), InfoValue::Count(header.rra_ptr()[i]));
        push(format!("rra[{i}].pdp_per_row"), InfoValue::Count(rra.pdp_count));
        match rra.cf {
            Cf::HwPredict | Cf::MhwPredict => {
                push(format!("rra[{i}].alpha"), f(&rra.par, RRA_HW_ALPHA));
                push(format!("rra[{i}].beta"), f(&rra.par, RRA_HW_BETA));
            }
            Cf::Seasonal | Cf::DevSeasonal => {
                push(format!("rra[{i}].gamma"), f(&rra.par, RRA_SEASONAL_GAMMA));
                // The smoothing window exists from format version 0004 on.
                if header.version().0 >= 4 {
                    push(format!("rra[{i}].smoothing_window"), f(&rra.par, RRA_SEASONAL_SMOOTHING_WINDOW));
                }
            }
            Cf::Failures => {
                push(format!("rra[{i}].delta_pos"), f(&rra.par, RRA_DELTA_POS));
                push(format!("rra[{i}].delta_neg"), f(&rra.par, RRA_DELTA_NEG));
                push(format!("rra[{i}].failure_threshold"), InfoValue::Count(rra.par[RRA_FAILURE_THRESHOLD]));
                push(format!("rra[{i}].window_length"), InfoValue::Count(rra.par[RRA_WINDOW_LEN]));
            }
            Cf::DevPredict => {}
            Cf::Average | Cf::Minimum | Cf::Maximum | Cf::Last => {
                push(format!("rra[{i}].xff"), f(&rra.par, RRA_CDP_XFF_VAL));
            }
        }
        for j in 0..header.ds().len() {
            let scratch = &header.cdp()[header.cdp_index(i, j)].scratch;
            match rra.cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    push(format!("rra[{i}].cdp_prep[{j}].intercept"), f(scratch, CDP_HW_INTERCEPT));
                    push(format!("rra[{i}].cdp_prep[{j}].slope"), f(scratch, CDP_HW_SLOPE));
                    push(
                        format!("rra[{i}].cdp_prep[{j}].NaN_count"),
                        InfoValue::Count(scratch[CDP_NULL_COUNT]),
                    );
                }
                Cf::Seasonal => {
                    push(format!("rra[{i}].cdp_prep[{j}].seasonal"), f(scratch, CDP_HW_SEASONAL));
                }
                Cf::DevSeasonal => {
                    push(format!("rra[{i}].cdp_prep[{j}].deviation"), f(scratch, CDP_SEASONAL_DEVIATION));
                }
                Cf::DevPredict => {}
                Cf::Failures => {
                    // The violation flags are bytes packed into the scratch
                    // slots, in memory (little-endian) order.
                    let bytes: Vec<u8> = scratch.iter().flat_map(|v| v.to_le_bytes()).collect();
                    let window = (rra.par[RRA_WINDOW_LEN] as usize).min(FAILURES_WINDOW_MAX);
                    let history: String =
                        bytes[..window].iter().map(|&b| if b == 1 { '1' } else { '0' }).collect();
                    push(format!("rra[{i}].cdp_prep[{j}].history"), InfoValue::Str(history));
                }
                Cf::Average | Cf::Minimum | Cf::Maximum | Cf::Last => {
                    push(format!("rra[{i}].cdp_prep[{j}].value"), f(scratch, CDP_VAL));
                    push(
                        format!("rra[{i}].cdp_prep[{j}].unknown_datapoints"),
                        InfoValue::Count(scratch[CDP_UNKN_PDP_CNT]),
                    );
                }
            }
        }
    }
    Ok(out)
}

/// The text RRDtool prints for one value (without the key).
pub fn format_value(value: &InfoValue) -> Vec<u8> {
    match value {
        InfoValue::Value(v) if v.is_nan() => b"NaN".to_vec(),
        InfoValue::Value(v) => printf_e10(*v).into_bytes(),
        InfoValue::Count(c) => c.to_string().into_bytes(),
        InfoValue::Int(i) => i.to_string().into_bytes(),
        InfoValue::Str(s) => format!("\"{s}\"").into_bytes(),
        InfoValue::Blob(b) => {
            let mut v = format!("BLOB_SIZE:{}\n", b.len()).into_bytes();
            v.extend_from_slice(b);
            v
        }
    }
}

/// Prints entries as `rrdtool info` does: `key = value`, one per line (a
/// blob's bytes follow its size line and get no newline of their own).
pub fn write_info(entries: &[InfoEntry], out: &mut dyn Write) -> io::Result<()> {
    for e in entries {
        out.write_all(e.key.as_bytes())?;
        out.write_all(b" = ")?;
        out.write_all(&format_value(&e.value))?;
        if !matches!(e.value, InfoValue::Blob(_)) {
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_like_rrd_info_print() {
        let entries = vec![
            InfoEntry { key: "a".into(), value: InfoValue::Value(f64::NAN) },
            InfoEntry { key: "b".into(), value: InfoValue::Value(f64::NEG_INFINITY) },
            InfoEntry { key: "c".into(), value: InfoValue::Value(0.5) },
            InfoEntry { key: "d".into(), value: InfoValue::Count(u64::MAX) },
            InfoEntry { key: "e".into(), value: InfoValue::Int(-3) },
            InfoEntry { key: "f".into(), value: InfoValue::Str("x y".into()) },
            InfoEntry { key: "g".into(), value: InfoValue::Blob(b"ab".to_vec()) },
        ];
        let mut out = Vec::new();
        write_info(&entries, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a = NaN\nb = -inf\nc = 5.0000000000e-01\nd = 18446744073709551615\ne = -3\nf = \"x y\"\ng = BLOB_SIZE:2\nab"
        );
    }
}
