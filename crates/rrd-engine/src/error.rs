//! Engine errors. A corrupt file is a different error from an I/O failure,
//! and both name the file.
//!
//! A refusal whose kind a caller acts on, or that says something a caller
//! may want to tell apart (a value that came too early, a file replaced
//! while opening it, a size limit, a name the file does not have, a bad
//! time), is a variant of its own. Every variant's `Display` is the exact
//! text rrdtool 1.7.2 prints (or, where rrdtool has no such check,
//! rrdscale's sentence): the differential tests compare those bytes.
//! The many one-off refusals of argument parsing (`create`'s and `tune`'s
//! definitions, `xport`'s elements, ...) stay [`Error::Invalid`]: nothing
//! branches on them and their text is the whole of their meaning.

use std::path::PathBuf;
use thiserror::Error;

use crate::update::UpdateError;

#[derive(Debug, Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Format { path: PathBuf, source: rrd_format::FormatError },
    #[error("{path}: {}", os_message(source))]
    Io { path: PathBuf, source: std::io::Error },
    /// The file could not be opened; worded as rrdtool words it.
    #[error("opening '{path}': {}", os_message(source))]
    Open { path: PathBuf, source: std::io::Error },
    /// A request the engine refuses that has no variant of its own (a
    /// malformed definition, option or element). The message is a
    /// sentence that says what was wrong.
    #[error("{0}")]
    Invalid(String),
    /// Another process (or open file description) holds a conflicting
    /// lock on the file; worded as rrdtool words it.
    #[error("could not lock RRD")]
    Locked,
    /// An update argument of `path` was refused: too early (before or at
    /// the file's last update) or anything else, rrdtool's text after the
    /// file name. The arguments before it were applied.
    #[error("{}: {source}", path.display())]
    Update { path: PathBuf, source: UpdateError },
    /// The file under `path` was replaced (renamed over) every time it
    /// was opened: a transient state, worth retrying.
    #[error("{}: the file keeps being replaced while opening it", path.display())]
    Replaced { path: PathBuf },
    /// An update was asked of something that is not a regular file.
    #[error("'{}' is not a regular file", path.display())]
    NotRegularFile { path: PathBuf },
    /// `create --no-overwrite` (or a group's second create) found the name
    /// taken.
    #[error("creating '{}': File exists", path.display())]
    Exists { path: PathBuf },
    /// A new or resized file would be larger than a limit allows; nothing
    /// was written.
    #[error("{}", too_large_text(.action, *.len_bytes, .limit))]
    TooLarge {
        /// What was being done, as the message starts: `creating 'x.rrd'`
        /// or `resizing`.
        action: String,
        len_bytes: u64,
        limit: SizeLimit,
    },
    /// A data source or archive the file does not have.
    #[error("{0}")]
    Unknown(Unknown),
    /// A time that does not parse, or a start/end pair rrdtool refuses
    /// (each relative to the other, out of range), with rrd-lang's typed
    /// reason. (Whether start precedes end is each command's own check.)
    #[error("{}{source}", which.map(|w| format!("{w} time: ")).unwrap_or_default())]
    Time {
        /// `start` or `end` when the text of one did not parse; `None` for
        /// a refusal of the pair.
        which: Option<&'static str>,
        source: rrd_lang::attime::AtTimeError,
    },
}

/// Which limit a [`Error::TooLarge`] file passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeLimit {
    /// `RRDSCALE_CREATE_MAX_BYTES` (or its default), in bytes.
    Configured { max_bytes: u64 },
    /// The space available to this user on the filesystem of `dir`.
    FreeSpace { free_bytes: u64, dir: PathBuf },
}

/// A name or index the file does not have, in the words of the command
/// that looked it up (rrdtool words each differently).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Unknown {
    /// `update --template` named it.
    #[error("unknown DS name '{0}'")]
    TemplateDs(String),
    /// A `tune` option named it.
    #[error("unknown data source name '{0}'")]
    TuneDs(String),
    /// An `xport`/`graph` DEF named it.
    #[error("No DS called '{ds}' in '{file}'")]
    DefDs { ds: String, file: String },
    /// `resize` named an archive past the last.
    #[error("no such RRA in this RRD")]
    Rra { index: u64 },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::Invalid(msg.into())
    }
}

fn too_large_text(action: &str, len: u64, limit: &SizeLimit) -> String {
    use crate::newfile::human;
    match limit {
        SizeLimit::Configured { max_bytes: max } => format!(
            "{action}: the file would be {len} bytes ({}), more than the limit of {max} bytes ({}); set RRDSCALE_CREATE_MAX_BYTES to allow it",
            human(len),
            human(*max)
        ),
        SizeLimit::FreeSpace { free_bytes: free, dir } => format!(
            "{action}: the file would be {len} bytes ({}), but only {free} bytes ({}) are free on the filesystem of {}",
            human(len),
            human(*free),
            dir.display()
        ),
    }
}

/// The C library's wording of an I/O error ("No such file or directory"),
/// without Rust's "(os error N)" suffix, as rrdtool prints it (one copy, in
/// `rrd-lang`; callers outside the engine call that).
pub(crate) use rrd_lang::ctext::io_text as os_message;
