//! Where a tree drawing reads its rows.
//!
//! Graph elements name files by a token (`f0`, `f1`, ...) that
//! [`TreeSource`] maps to a path beneath the tree: element text never
//! carries a file name (no escaping of `:` to get right, and names that
//! are not UTF-8 work). Every file is opened read-only through the tree's
//! [`Root`], so a link leaving the root is refused at the open. With
//! `--daemon`, the rows then come from the daemon's FETCH (values still
//! pending there are drawn; no FLUSH is sent: rrdscale's daemon answers
//! from memory, rrdcached 1.7.2 writes the file's values itself before
//! answering a FETCH); the file is opened beneath the root (and closed)
//! first, so the daemon is never asked for a file outside the tree. A daemon that cannot be reached, or a name it cannot carry (not
//! UTF-8), falls back to the file.

use std::path::{Path, PathBuf};

use rrd_engine::fetch::FetchResult;
use rrd_engine::root::Root;
use rrd_engine::xport::{FetchRequest, FetchSource, Reduction};
use rrd_engine::Rrd;

/// The token DEFs name file `i` by.
pub fn token(i: usize) -> String {
    format!("f{i}")
}

/// Rows of the files a drawing names, beneath one root.
pub struct TreeSource<'a> {
    pub root: &'a Root,
    pub files: &'a [PathBuf],
    pub daemon: Option<&'a str>,
}

impl TreeSource<'_> {
    fn path(&self, token: &str) -> rrd_engine::Result<&Path> {
        token
            .strip_prefix('f')
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| self.files.get(i))
            .map(PathBuf::as_path)
            .ok_or_else(|| rrd_engine::Error::invalid(format!("no file is named '{token}' in this drawing")))
    }

    /// The daemon's rows for `path`, when a daemon is named and answers.
    /// The file is first opened beneath the root (the confinement check)
    /// and closed again before the daemon is asked: its shared lock would
    /// make a daemon that writes before answering (rrdcached's FETCH
    /// does) fail to write, and answer without the pending values.
    fn daemon_rows(&self, path: &Path, req: &FetchRequest) -> Option<rrd_engine::Result<FetchResult>> {
        let daemon = self.daemon?;
        let name = path.to_str()?;
        if let Err(e) = Rrd::open_in(self.root, path, false) {
            return Some(Err(e));
        }
        let rrd_client::Daemon::Connected(mut session) = rrd_client::daemon(Some(daemon)) else {
            return None;
        };
        Some(
            session
                .fetch(name, req.cf.name(), req.start, req.end)
                .map(|r| FetchResult {
                    start: r.start,
                    end: r.end,
                    step_secs: r.step_secs,
                    rra_index: 0,
                    ds_names: r.ds_names,
                    data: r.data,
                    // The daemon's FETCH answers only the rows asked for.
                    past_end: None,
                })
                .map_err(|e| rrd_engine::Error::invalid(e.to_string())),
        )
    }
}

impl FetchSource for TreeSource<'_> {
    fn fetch(&mut self, req: &FetchRequest) -> rrd_engine::Result<FetchResult> {
        let path = self.path(req.file)?;
        if let Some(r) = self.daemon_rows(path, req) {
            return r;
        }
        let rrd = Rrd::open_in(self.root, path, false)?;
        rrd_engine::fetch::fetch(&rrd, req.cf, req.start, req.end, req.resolution_secs)
    }

    fn fetch_reduced(&mut self, req: &FetchRequest, reduce: Reduction) -> rrd_engine::Result<FetchResult> {
        let path = self.path(req.file)?;
        if let Some(r) = self.daemon_rows(path, req) {
            return rrd_engine::reduce::reduce_result(r?, reduce.min_step, reduce.cf);
        }
        let rrd = Rrd::open_in(self.root, path, false)?;
        rrd_engine::reduce::fetch_reduced(
            &rrd,
            req.cf,
            req.start,
            req.end,
            req.resolution_secs,
            reduce.min_step,
            reduce.cf,
        )
    }
}
