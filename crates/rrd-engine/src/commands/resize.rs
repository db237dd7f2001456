//! `resize`: a copy of an RRD with one archive grown or shrunk, as
//! `rrdtool resize` 1.7.2 writes it (to `resize.rrd` in the current
//! directory; the source file is left alone).
//!
//! Where rows go, as in rrdtool: growing inserts unknown rows right after
//! the archive's current row, so they are the oldest rows and `cur_row`
//! does not move. Shrinking drops the rows right after the current row
//! (the oldest ones), wrapping to the start of the archive when needed, in
//! which case `cur_row` moves back by the rows dropped before it. Every
//! other byte (padding, scratch areas, other archives) is copied as is.
//!
//! Versions: 0003 and 0004 are resized as they are; 0001 files come out as
//! version 0003 (rrdtool means to convert them but writes a file of the old
//! length; we write the converted layout). Other versions are refused with
//! rrdtool's message. Unlike rrdtool, a refused file leaves no `resize.rrd`
//! behind, and the output is written atomically (temporary file + rename).

use std::path::Path;

use rrd_format::Version;

use crate::create;
use crate::error::{Error, Result, SizeLimit, Unknown};
use crate::numparse::DNAN;
use crate::rrd::Rrd;
use crate::store::Store;

/// The file `rrdtool resize` always writes, in the current directory.
pub const RESIZE_OUTPUT: &str = "resize.rrd";

/// Grows (`delta_rows > 0`) or shrinks (`delta_rows < 0`) archive
/// `rra_index` of the file at `path`, writing the result to `out_path`.
pub fn resize(path: &Path, rra_index: u64, delta_rows: i64, out_path: &Path) -> Result<()> {
    if delta_rows == 0 {
        return Err(Error::invalid("Please grow or shrink with at least 1 row"));
    }
    // rrdtool opens the source for writing (and locks it) although it
    // only reads it; asking for write access keeps its permission errors.
    let rrd = Rrd::open(path, true)?;
    let (header, data) = resized(&rrd, rra_index, delta_rows)?;
    create::write_file_with(out_path, &header, false, |out| {
        for chunk in data.chunks(8192) {
            let mut buf = Vec::with_capacity(chunk.len() * 8);
            rrd_format::encode_values(chunk, &mut buf);
            out.write_all(&buf)?;
        }
        Ok(())
    })
}

/// The header and data area of the resized file.
pub fn resized<S: Store>(
    rrd: &Rrd<S>,
    rra_index: u64,
    delta_rows: i64,
) -> Result<(rrd_format::Header, Vec<f64>)> {
    let header = &rrd.header;
    let mut parts = header.clone().into_parts();
    if rra_index >= header.rra_count() as u64 {
        return Err(Error::Unknown(Unknown::Rra { index: rra_index }));
    }
    let target = rra_index as usize;
    let row_count = header.rra()[target].row_count;
    if delta_rows < 0 && row_count <= delta_rows.unsigned_abs() {
        return Err(Error::invalid("This RRA is not that big"));
    }
    match header.version().0 {
        3 | 4 => {}
        1 => parts.version = Version(3),
        _ => {
            return Err(Error::invalid(format!(
                "Do not know how to handle RRD version {}",
                rrd.header.version().as_str()
            )))
        }
    }
    let ds = header.ds_count();
    if delta_rows > 0 {
        // rrdtool writes the new rows one by one whatever their number
        // (a saturated strtol's 2^63 - 1 rows never ends); the data is built
        // in memory here, so the grown file is held to create's size limit.
        let mut row_counts: Vec<u64> = header.rra().iter().map(|r| r.row_count).collect();
        row_counts[target] = row_count.saturating_add(delta_rows as u64);
        let len = rrd_format::Layout::new(ds as u64, parts.version.live_head_len(), &row_counts)
            .map_err(|e| Error::invalid(format!("the RRD would be too large: {e}")))?
            .file_len;
        let max = create::max_create_bytes()?;
        if len > max {
            let limit = SizeLimit::Configured { max_bytes: max };
            return Err(Error::TooLarge { action: "resizing".into(), len_bytes: len, limit });
        }
    }
    let cur_row = header.rra_ptr()[target];
    let mut data = Vec::new();
    for r in 0..header.rra_count() {
        let rows = rrd.read_rra(r)?;
        if r != target {
            data.extend(rows);
            continue;
        }
        let row = |i: u64| &rows[i as usize * ds..(i as usize + 1) * ds];
        if delta_rows > 0 {
            let grow = delta_rows as u64;
            data.extend_from_slice(&rows[..(cur_row as usize + 1) * ds]);
            data.resize(data.len() + grow as usize * ds, DNAN);
            data.extend_from_slice(&rows[(cur_row as usize + 1) * ds..]);
            parts.rra[r].row_count = row_count + grow;
        } else {
            let shrink = delta_rows.unsigned_abs();
            let remove_end = (cur_row + shrink) % row_count;
            let kept: Vec<u64> = if remove_end <= cur_row {
                // The dropped rows wrap: rows after cur_row and rows
                // 0..=remove_end go, and cur_row moves back.
                parts.rra_ptr[r] = cur_row - (remove_end + 1);
                (remove_end + 1..=cur_row).collect()
            } else {
                (0..=cur_row).chain(cur_row + shrink + 1..row_count).collect()
            };
            for i in kept {
                data.extend_from_slice(row(i));
            }
            parts.rra[r].row_count = row_count - shrink;
        }
    }
    let header = rrd_format::Header::from_parts(parts).map_err(|e| Error::invalid(e.to_string()))?;
    Ok((header, data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemStore;

    /// One DS, archive of `rows` rows holding 0, 1, 2, ... with `cur_row`.
    fn rrd(rows: u64, cur_row: u64) -> Rrd<MemStore> {
        let mut header =
            crate::testfile::header(&["DS:a:GAUGE:600:U:U", &format!("RRA:AVERAGE:0.5:1:{rows}")]);
        header.set_cur_row(0, cur_row).unwrap();
        let mut bytes = header.encode();
        rrd_format::encode_values(&(0..rows).map(|i| i as f64).collect::<Vec<_>>(), &mut bytes);
        Rrd::from_store(Path::new("t.rrd"), MemStore::new(bytes)).unwrap()
    }

    fn shown(v: &[f64]) -> Vec<i64> {
        v.iter().map(|x| if x.is_nan() { -1 } else { *x as i64 }).collect()
    }

    #[test]
    fn grow_inserts_unknown_rows_after_the_current_row() {
        let (h, d) = resized(&rrd(5, 1), 0, 2).unwrap();
        assert_eq!(shown(&d), [0, 1, -1, -1, 2, 3, 4]);
        assert_eq!((h.rra()[0].row_count, h.rra_ptr()[0]), (7, 1));
    }

    #[test]
    fn shrink_drops_the_oldest_rows_wrapping_when_needed() {
        let (h, d) = resized(&rrd(6, 1), 0, -2).unwrap();
        assert_eq!(shown(&d), [0, 1, 4, 5]);
        assert_eq!((h.rra()[0].row_count, h.rra_ptr()[0]), (4, 1));
        let (h, d) = resized(&rrd(6, 4), 0, -3).unwrap();
        assert_eq!(shown(&d), [2, 3, 4]);
        assert_eq!((h.rra()[0].row_count, h.rra_ptr()[0]), (3, 2));
    }

    #[test]
    fn refusals_use_rrdtool_messages() {
        assert_eq!(resized(&rrd(3, 0), 0, -3).unwrap_err().to_string(), "This RRA is not that big");
        let e = resized(&rrd(3, 0), 1, 1).unwrap_err();
        assert!(matches!(e, Error::Unknown(Unknown::Rra { index: 1 })), "{e:?}");
        assert_eq!(e.to_string(), "no such RRA in this RRD");
    }

    /// `resize f.rrd 0 GROW 99999999999999999999` reaches here as strtol's
    /// saturated i64::MAX rows: an error, not an allocation failure.
    #[test]
    fn absurd_growth_is_refused_before_any_allocation() {
        let e = resized(&rrd(3, 0), 0, i64::MAX).unwrap_err().to_string();
        assert!(e.starts_with("the RRD would be too large"), "{e}");
        // 2^40 rows of 8 bytes: beyond the limit unless the environment
        // lifted it.
        if create::max_create_bytes().unwrap() < 8 << 40 {
            let e = resized(&rrd(3, 0), 0, 1 << 40).unwrap_err();
            assert!(
                matches!(&e, Error::TooLarge { action, limit: SizeLimit::Configured { .. }, .. } if action == "resizing"),
                "{e:?}"
            );
            let e = e.to_string();
            assert!(
                e.starts_with("resizing: the file would be ") && e.contains("RRDSCALE_CREATE_MAX_BYTES"),
                "{e}"
            );
        }
    }
}
