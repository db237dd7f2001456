//! Fuzzes restore's XML reader (`rrdtool dump` output, or anything a user
//! feeds `restore`). The first byte chooses range checking (`-r`). Nothing
//! may panic or abort on memory; a dump that parses must become a valid
//! file: its header decodes (so `rrd_format`'s invariants hold) and, for
//! files small enough to write here, the written bytes decode to the same
//! header and hold every row.

use rrd_engine::restore;
use rrd_format::Header;

/// The target: one input.
pub fn run(data: &[u8]) {
    let Some((&flags, xml)) = data.split_first() else { return };
    let Ok(restored) = restore::parse(xml, flags & 1 == 1) else { return };
    let header_bytes = restored.header.encode();
    let layout = restored.header.layout();
    let decoded = Header::decode(&header_bytes, layout.file_len).expect("a restored header decodes");
    assert_eq!(decoded.encode(), header_bytes);
    let rows: usize = restored.rows.iter().map(Vec::len).sum();
    assert_eq!(rows as u64 * 8, layout.file_len - layout.data_off, "every row of every archive is restored");
    if layout.file_len <= 1 << 20 {
        let cur_rows: Vec<u64> = restored.header.rra().iter().map(|r| r.row_count - 1).collect();
        let mut file = Vec::new();
        restored.write_to(&mut file, &cur_rows).expect("writing to memory");
        assert_eq!(file.len() as u64, layout.file_len);
        let again = Header::decode(&file, layout.file_len).expect("the written file decodes");
        assert_eq!(again.encode(), header_bytes);
    }
}
