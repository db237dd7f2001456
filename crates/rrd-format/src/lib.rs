//! The RRDtool file format, byte for byte, with no I/O.
//!
//! This crate owns the mapping between the bytes of an RRD file (as written
//! by RRDtool 1.7 on x86_64, versions 0001 to 0005) and Rust structs, and the
//! validation that makes those structs safe to index. It does not open
//! files, decide how to read them, or know what an update means: that is the
//! engine's job. See `docs/format.md` for the layout drawn byte by byte.
//!
//! Invariants of every [`Header`] (its fields are private: a header comes
//! only from [`Header::decode`] or the checked constructor
//! [`Header::from_parts`], and its mutators cannot break them):
//! - `ds_cnt`, `rra_cnt`, `pdp_step`, every `row_cnt` and `pdp_cnt` are non-zero;
//! - every `cur_row` is below its `row_cnt`;
//! - every name field is NUL-terminated and every DS type and CF is known;
//! - one PDP scratch area per DS, one CDP scratch area per (RRA, DS), one
//!   row pointer per RRA;
//! - the layout (which the header carries) computes without overflow; after
//!   `decode`, the file length equals the layout's length, so every row
//!   offset is in the file.
#![forbid(unsafe_code)]

pub mod error;
pub mod header;
pub mod layout;

pub use error::FormatError;
pub use header::*;
pub use layout::Layout;

/// Reads little-endian doubles from a byte slice (a row or a run of rows).
pub fn decode_values(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("chunk of 8"))).collect()
}

/// Appends doubles as little-endian bytes.
pub fn encode_values(values: &[f64], out: &mut Vec<u8>) {
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
}
