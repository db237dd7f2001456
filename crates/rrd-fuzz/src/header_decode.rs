//! Fuzzes the file parser: any bytes, any claimed file length. Decoding must
//! return an error or a header that re-encodes to the same bytes.

use rrd_format::{Header, StatHead};

/// The target: one input.
pub fn run(data: &[u8]) {
    let _ = StatHead::decode(data);
    if let Ok((header, layout)) = Header::decode(data, data.len() as u64) {
        assert_eq!(header.encode(), data[..layout.data_off as usize]);
    }
}
