//! Engine errors. A corrupt file is a different error from an I/O failure,
//! and both name the file.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Format { path: PathBuf, source: rrd_format::FormatError },
    #[error("{path}: {}", os_message(source))]
    Io { path: PathBuf, source: std::io::Error },
    /// The file could not be opened; worded as rrdtool words it.
    #[error("opening '{path}': {}", os_message(source))]
    Open { path: PathBuf, source: std::io::Error },
    /// A request the engine refuses (bad argument, update too early, ...).
    /// The message is a sentence that says what was wrong.
    #[error("{0}")]
    Invalid(String),
    /// Another process (or open file description) holds a conflicting
    /// lock on the file; worded as rrdtool words it.
    #[error("could not lock RRD")]
    Locked,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::Invalid(msg.into())
    }
}

/// The C library's wording of an I/O error ("No such file or directory"),
/// without Rust's "(os error N)" suffix, as rrdtool prints it (one copy, in
/// `rrd-lang`).
pub use rrd_lang::ctext::io_text as os_message;
