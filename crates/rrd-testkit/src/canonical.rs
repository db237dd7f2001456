//! One canonical form of an RRD's bytes, so that two files holding the
//! same data compare equal byte for byte. rrdtool's `create` starts every
//! archive at a random current row (to spread consolidation I/O across
//! files), so equal files can differ in `rra_ptr` and in where their rows
//! sit; the differential tests of librrd and of rrdscale compare files in
//! this form.

/// `bytes` with every archive rotated so that its oldest row comes first
/// and its `cur_row` set to its last row. Nothing else changes: rrdtool
/// zero-fills its structs, so padding and unused parameter slots are
/// already deterministic. An error names why the bytes do not decode.
pub fn oldest_rows_first(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let header =
        rrd_format::Header::decode(bytes, bytes.len() as u64).map_err(|e| format!("cannot decode: {e}"))?;
    let layout = header.layout();
    let mut out = bytes.to_vec();
    let row_len = layout.row_len() as usize;
    for (i, &cur) in header.rra_ptr().iter().enumerate() {
        let rows = layout.row_counts[i] as usize;
        let start = layout.rra_data_off[i] as usize;
        let area = &bytes[start..start + rows * row_len];
        let oldest = (cur as usize + 1) % rows;
        let dst = &mut out[start..start + rows * row_len];
        dst[..(rows - oldest) * row_len].copy_from_slice(&area[oldest * row_len..]);
        dst[(rows - oldest) * row_len..].copy_from_slice(&area[..oldest * row_len]);
        let ptr = layout.rra_ptr_off as usize + 8 * i;
        out[ptr..ptr + 8].copy_from_slice(&(rows as u64 - 1).to_le_bytes());
    }
    Ok(out)
}
