//! Where DEFs get their rows: the [`FetchSource`] trait, the request it is
//! handed, and [`LocalFiles`], which reads the files themselves (the CLI's
//! and rrd-web's sources ask a daemon or a tree instead).

use std::path::Path;

use rrd_format::Cf;

use crate::error::Result;
use crate::fetch::{fetch, FetchResult};
use crate::reduce::{fetch_reduced, reduce_result};
use crate::rrd::Rrd;

/// One DEF's read: the file, the consolidation function of the archive
/// wanted, the range and resolution asked for, and the DEF's own
/// `:daemon=` address, when it has one.
#[derive(Clone, Copy, Debug)]
pub struct FetchRequest<'a> {
    pub file: &'a str,
    pub cf: Cf,
    pub start: i64,
    pub end: i64,
    pub resolution_secs: u64,
    pub daemon: Option<&'a str>,
}

/// How a DEF's rows finer than its step are consolidated: to at least
/// `min_step` seconds a row, with `cf` (rrdtool's `rrd_reduce_data`).
#[derive(Clone, Copy, Debug)]
pub struct Reduction {
    pub min_step: i64,
    pub cf: Cf,
}

/// Where DEFs get their rows. [`LocalFiles`] reads the files; the CLI's
/// `--daemon` implementation asks a caching daemon (FETCH), as rrdtool's
/// graph and xport do, so pending values are seen without a flush.
pub trait FetchSource {
    /// The rows of the file's best archive for the request.
    fn fetch(&mut self, req: &FetchRequest) -> Result<FetchResult>;

    /// [`FetchSource::fetch`], then consolidated as `reduce` says when the
    /// archive is finer, as a DEF's rows are. The default consolidates the
    /// fetched rows; [`LocalFiles`] consolidates while reading, so a long
    /// range over a fine archive costs memory in the output rows only
    /// ([`crate::reduce`]).
    fn fetch_reduced(&mut self, req: &FetchRequest, reduce: Reduction) -> Result<FetchResult> {
        let got = self.fetch(req)?;
        reduce_result(got, reduce.min_step, reduce.cf)
    }
}

/// DEFs read their files directly (a DEF's `:daemon=` is ignored).
pub struct LocalFiles;

impl FetchSource for LocalFiles {
    fn fetch(&mut self, req: &FetchRequest) -> Result<FetchResult> {
        let rrd = Rrd::open(Path::new(req.file), false)?;
        fetch(&rrd, req.cf, req.start, req.end, req.resolution_secs)
    }

    fn fetch_reduced(&mut self, req: &FetchRequest, reduce: Reduction) -> Result<FetchResult> {
        let rrd = Rrd::open(Path::new(req.file), false)?;
        fetch_reduced(&rrd, req.cf, req.start, req.end, req.resolution_secs, reduce.min_step, reduce.cf)
    }
}
