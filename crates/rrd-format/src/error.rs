//! Why bytes were refused. Each variant names what was wrong and, where it
//! helps, the file offset; the engine adds the file name.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum FormatError {
    #[error("not an RRD file (wrong cookie)")]
    BadCookie,
    #[error("unsupported RRD version '{0}'")]
    UnsupportedVersion(String),
    #[error("float cookie mismatch: the file was made on another architecture or is corrupt")]
    FloatCookie,
    #[error("file is truncated: {what} needs {need} bytes, the file has {have}")]
    Truncated { what: &'static str, need: u64, have: u64 },
    #[error("file length {actual} does not match the layout ({expected} bytes expected)")]
    LengthMismatch { expected: u64, actual: u64 },
    #[error("{what} overflows")]
    Overflow { what: &'static str },
    #[error("invalid header: {what}")]
    Invalid { what: String },
    #[error("corrupt header at byte {offset}: {what}")]
    Corrupt { offset: u64, what: String },
}

impl FormatError {
    pub(crate) fn corrupt(offset: u64, what: impl Into<String>) -> FormatError {
        FormatError::Corrupt { offset, what: what.into() }
    }
}
