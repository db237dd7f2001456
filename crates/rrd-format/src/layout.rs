//! Where every section of an RRD file lives, computed from the counts alone.
//!
//! RRDtool writes its C structs verbatim, so the layout is that of the x86_64
//! (LP64) ABI: `unsigned long`, `time_t` and `double` are 8 bytes, aligned to 8.
//! The sections follow one another with no gaps (each size is a multiple of 8):
//!
//! ```text
//! stat_head  128
//! ds_def     120 × ds_cnt
//! rra_def    120 × rra_cnt
//! live_head   16 (8 for versions 0001/0002)
//! pdp_prep   112 × ds_cnt
//! cdp_prep    80 × rra_cnt × ds_cnt
//! rra_ptr      8 × rra_cnt
//! data         8 × ds_cnt × Σ row_cnt
//! ```
//!
//! Invariant: every offset here is computed with checked arithmetic, so a
//! hostile count yields [`FormatError::Overflow`] instead of wrapping.

use std::sync::Arc;

use crate::error::FormatError;

pub const STAT_HEAD_LEN: u64 = 128;
pub const DS_DEF_LEN: u64 = 120;
pub const RRA_DEF_LEN: u64 = 120;
pub const PDP_PREP_LEN: u64 = 112;
pub const CDP_PREP_LEN: u64 = 80;
pub const RRA_PTR_LEN: u64 = 8;
pub const VALUE_LEN: u64 = 8;

/// Offsets of the sections of one file. The per-archive lists are shared
/// (`Arc`): a header is cloned on hot paths (the flusher keeps the state
/// before each update to retry after a failed write), and its layout never
/// changes. Built from the counts in the static
/// header and the row counts of the RRA definitions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub ds_count: u64,
    pub rra_count: u64,
    pub live_head_len: u64,
    pub ds_def_off: u64,
    pub rra_def_off: u64,
    pub live_head_off: u64,
    pub pdp_prep_off: u64,
    pub cdp_prep_off: u64,
    pub rra_ptr_off: u64,
    /// Start of the data area (end of the header).
    pub data_off: u64,
    /// Start of each RRA's rows, in file order.
    pub rra_data_off: Arc<[u64]>,
    /// Row counts, copied so that row offsets need nothing else.
    pub row_counts: Arc<[u64]>,
    /// Length of the whole file.
    pub file_len: u64,
}

fn mul(a: u64, b: u64, what: &'static str) -> Result<u64, FormatError> {
    a.checked_mul(b).ok_or(FormatError::Overflow { what })
}

fn add(a: u64, b: u64, what: &'static str) -> Result<u64, FormatError> {
    a.checked_add(b).ok_or(FormatError::Overflow { what })
}

/// Offset where the live part of the header starts, and the header length,
/// from the counts alone (the row counts are not needed for these).
pub fn header_len(ds_count: u64, rra_count: u64, live_head_len: u64) -> Result<u64, FormatError> {
    let defs = add(
        mul(ds_count, DS_DEF_LEN + PDP_PREP_LEN, "ds_cnt")?,
        mul(rra_count, RRA_DEF_LEN + RRA_PTR_LEN, "rra_cnt")?,
        "header length",
    )?;
    let cdp = mul(mul(ds_count, rra_count, "ds_cnt × rra_cnt")?, CDP_PREP_LEN, "cdp_prep")?;
    add(add(STAT_HEAD_LEN + live_head_len, defs, "header length")?, cdp, "header length")
}

impl Layout {
    pub fn new(ds_count: u64, live_head_len: u64, row_counts: &[u64]) -> Result<Layout, FormatError> {
        let rra_count = row_counts.len() as u64;
        let ds_def_off = STAT_HEAD_LEN;
        let rra_def_off = add(ds_def_off, mul(ds_count, DS_DEF_LEN, "ds_cnt")?, "ds_def")?;
        let live_head_off = add(rra_def_off, mul(rra_count, RRA_DEF_LEN, "rra_cnt")?, "rra_def")?;
        let pdp_prep_off = add(live_head_off, live_head_len, "live_head")?;
        let cdp_prep_off = add(pdp_prep_off, mul(ds_count, PDP_PREP_LEN, "ds_cnt")?, "pdp_prep")?;
        let cdp_len = mul(mul(ds_count, rra_count, "ds_cnt × rra_cnt")?, CDP_PREP_LEN, "cdp_prep")?;
        let rra_ptr_off = add(cdp_prep_off, cdp_len, "cdp_prep")?;
        let data_off = add(rra_ptr_off, mul(rra_count, RRA_PTR_LEN, "rra_cnt")?, "rra_ptr")?;
        let row_len = mul(ds_count, VALUE_LEN, "ds_cnt")?;
        let mut rra_data_off = Vec::with_capacity(row_counts.len());
        let mut off = data_off;
        for &rows in row_counts {
            rra_data_off.push(off);
            off = add(off, mul(rows, row_len, "row_cnt")?, "data area")?;
        }
        Ok(Layout {
            ds_count,
            rra_count,
            live_head_len,
            ds_def_off,
            rra_def_off,
            live_head_off,
            pdp_prep_off,
            cdp_prep_off,
            rra_ptr_off,
            data_off,
            rra_data_off: rra_data_off.into(),
            row_counts: row_counts.into(),
            file_len: off,
        })
    }

    /// Bytes in one row (one value per data source).
    pub fn row_len(&self) -> u64 {
        self.ds_count * VALUE_LEN
    }

    /// File offset of row `row_index` of RRA `rra_index`.
    pub fn row_off(&self, rra_index: usize, row_index: u64) -> u64 {
        assert!(row_index < self.row_counts[rra_index], "row index out of range");
        self.rra_data_off[rra_index] + row_index * self.row_len()
    }

    /// File offset of the value of data source `ds_index` in a row.
    pub fn value_off(&self, rra_index: usize, row_index: u64, ds_index: usize) -> u64 {
        self.row_off(rra_index, row_index) + ds_index as u64 * VALUE_LEN
    }

    /// The live part of the header (written by every update): live_head,
    /// pdp_prep, cdp_prep and rra_ptr, which are contiguous.
    pub fn live_range(&self) -> std::ops::Range<u64> {
        self.live_head_off..self.data_off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The perftest schema: 2 DS, 7 RRAs of 600 rows is 69,824 bytes,
    /// as measured on files rrdtool 1.7.2 made.
    #[test]
    fn perftest_file_length_matches_rrdtool() {
        let layout = Layout::new(2, 16, &[600; 7]).unwrap();
        assert_eq!(layout.file_len, 69_824);
        assert_eq!(layout.data_off, header_len(2, 7, 16).unwrap());
    }

    #[test]
    fn hostile_counts_overflow_instead_of_wrapping() {
        assert!(matches!(header_len(u64::MAX / 2, 3, 16), Err(FormatError::Overflow { .. })));
        assert!(Layout::new(1 << 60, 16, &[1 << 20]).is_err());
    }
}
