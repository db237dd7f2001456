//! What the commands share about `--daemon`/`RRDCACHED_ADDRESS`: rrdtool's
//! conventions for a daemon that is named but unreachable, and for a failed
//! flush before a read.
//!
//! rrdtool keeps one error text per process and prints it (`ERROR: ...`,
//! exit status 1) after any command that leaves one set, even a command
//! that then did its work on the file directly. So a read command whose
//! daemon is unreachable prints its local result and still fails with the
//! connection error, unless its local work failed with an error of its own,
//! which replaces it. [`after_fallback`] is that rule.
//!
//! [`DaemonFetch`] is how `graph` and `xport` read their DEFs when a daemon
//! is named: through its FETCH, so values still pending in the daemon are
//! drawn without a flush (rrdtool 1.7.2 does the same).
//!
//! Deliberately absent: the daemon conversation itself (crates/rrd-client).

use anyhow::{anyhow, Result};
use rrd_client::{ClientError, Daemon};
use rrd_engine::fetch::FetchResult;
use rrd_engine::xport::{FetchRequest, FetchSource, LocalFiles, Reduction};

/// DEFs' rows from a daemon: each DEF's `:daemon=`, else the command's
/// `--daemon`, else `RRDCACHED_ADDRESS`; a DEF with none of them, or whose
/// daemon cannot be reached, reads its file (rrdtool's graph falls back the
/// same way and reports the connection error after drawing).
pub struct DaemonFetch {
    option: Option<String>,
    /// The last connection failure, reported after the command's work.
    pub unreachable: Option<ClientError>,
}

impl DaemonFetch {
    pub fn new(option: Option<&str>) -> DaemonFetch {
        DaemonFetch { option: option.map(str::to_string), unreachable: None }
    }

    /// The command's result as rrdtool reports it: a connection failure that
    /// a local read covered still fails the command (see [`after_fallback`]).
    pub fn finish<T>(self, local: Result<T>) -> Result<T> {
        match self.unreachable {
            Some(e) => after_fallback(local, e),
            None => local,
        }
    }
}

/// A daemon's FETCH reply as the engine's fetch result (the archive index
/// is not in the reply).
pub fn fetch_result(r: rrd_client::FetchReply) -> FetchResult {
    FetchResult {
        start: r.start,
        end: r.end,
        step_secs: r.step_secs,
        rra_index: 0,
        ds_names: r.ds_names,
        data: r.data,
        past_end: None,
    }
}

/// A failed FETCH as rrdtool reports it.
fn fetch_error(file: &str, e: ClientError) -> rrd_engine::Error {
    rrd_engine::Error::invalid(
        e.message().unwrap_or_else(|| format!("rrdc_fetch ({file}) failed with status {}.", e.status())),
    )
}

impl DaemonFetch {
    /// The session a DEF reads through, or `None` when it reads its file:
    /// no daemon named, or the one named is unreachable (remembered for
    /// [`DaemonFetch::finish`]).
    fn session(&mut self, daemon: Option<&str>) -> Option<rrd_client::Session> {
        match rrd_client::daemon(daemon.or(self.option.as_deref())) {
            Daemon::Absent => None,
            Daemon::Unreachable(e) => {
                self.unreachable = Some(e);
                None
            }
            Daemon::Connected(session) => Some(session),
        }
    }

    /// FETCH through `session`. The resolution is not sent: rrdtool's
    /// client does not send it either, and the caller consolidates to its
    /// own step.
    fn fetch_from(session: &mut rrd_client::Session, req: &FetchRequest) -> rrd_engine::Result<FetchResult> {
        session
            .fetch(req.file, req.cf.name(), req.start, req.end)
            .map(fetch_result)
            .map_err(|e| fetch_error(req.file, e))
    }
}

impl FetchSource for DaemonFetch {
    fn fetch(&mut self, req: &FetchRequest) -> rrd_engine::Result<FetchResult> {
        match self.session(req.daemon) {
            Some(mut session) => Self::fetch_from(&mut session, req),
            None => LocalFiles.fetch(req),
        }
    }

    /// Without a daemon the file is read and consolidated at once (bounded
    /// memory, see rrd_engine::reduce); a daemon's FETCH reply holds every
    /// row of the range (the protocol has no step), consolidated after.
    fn fetch_reduced(&mut self, req: &FetchRequest, reduce: Reduction) -> rrd_engine::Result<FetchResult> {
        match self.session(req.daemon) {
            Some(mut session) => rrd_engine::reduce::reduce_result(
                Self::fetch_from(&mut session, req)?,
                reduce.min_step,
                reduce.cf,
            ),
            None => LocalFiles.fetch_reduced(req, reduce),
        }
    }
}

/// The outcome of a command that fell back to the file because its daemon
/// was unreachable: the local error if there was one, else the connection
/// error.
pub fn after_fallback<T>(local: Result<T>, unreachable: ClientError) -> Result<T> {
    local.and(Err(unreachable.into()))
}

/// The error rrdtool reports when the flush before a read (`info`,
/// `lastupdate`) fails: the failure's own text, or librrd's wording of its
/// status when it set none.
pub fn flush_failure(file: &str, e: ClientError) -> anyhow::Error {
    if e.message().is_some() {
        return e.into();
    }
    let status = e.status();
    if status > 0 {
        anyhow!("rrdc_flush ({file}) failed: {}", rrd_client::ctext::strerror(status))
    } else {
        anyhow!("rrdc_flush ({file}) failed with status {status}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_keeps_the_local_error_first() {
        let unreachable = || ClientError::Connect("No such file or directory".into());
        let e = after_fallback(Ok(()), unreachable()).unwrap_err();
        assert_eq!(e.to_string(), "Unable to connect to rrdcached: No such file or directory");
        let e = after_fallback::<()>(Err(anyhow!("opening 'x': gone")), unreachable()).unwrap_err();
        assert_eq!(e.to_string(), "opening 'x': gone");
    }

    #[test]
    fn flush_failures_are_worded_like_librrd() {
        assert_eq!(
            flush_failure("f", ClientError::Silent).to_string(),
            "rrdc_flush (f) failed with status -1."
        );
        assert_eq!(
            flush_failure("f", ClientError::Errno(libc::ENOBUFS)).to_string(),
            "rrdc_flush (f) failed: No buffer space available"
        );
        assert_eq!(flush_failure("f", ClientError::Send).to_string(), ClientError::Send.to_string());
    }
}
