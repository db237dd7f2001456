//! Fuzzes the file parser: any bytes, any claimed file length. Decoding must
//! return an error or a header that re-encodes to the same bytes, and whose
//! parts the checked constructor accepts as they are (decode and
//! `Header::from_parts` guard the same invariants).

use rrd_format::{Header, StatHead};

/// The target: one input.
pub fn run(data: &[u8]) {
    let _ = StatHead::decode(data);
    if let Ok(header) = Header::decode(data, data.len() as u64) {
        assert_eq!(header.encode(), data[..header.layout().data_off as usize]);
        let rebuilt =
            Header::from_parts(header.clone().into_parts()).expect("a decoded header's parts are valid");
        assert_eq!(rebuilt, header);
    }
}
