//! Where a POST's numbers go: straight into the files with the engine
//! (the embedded path, the default), or to a running rrdscale/rrdcached
//! daemon with `UPDATE` (`rrdscale web --daemon ADDR` or
//! `RRDCACHED_ADDRESS`), which then owns when the bytes reach the disk.
//!
//! With a daemon, every draw, export and delete first sends `FLUSH` for
//! the files it reads, so pictures and numbers include every accepted
//! POST. Files are still created here (the daemon's `UPDATE` needs them):
//! the daemon must see the same files, by the same absolute path over a
//! UNIX socket, or, over TCP, as `<id>.rrd` relative to its base
//! directory (run it with `-b <data-dir>/data`).
//!
//! Invariants: one connection, used by one request at a time (a mutex);
//! a broken connection is reopened on the next write. A refused update is
//! judged by its two times (the daemon's `LAST` before the write, the
//! numbers of its refusal after), exactly as the engine's: the same
//! second is dropped, an earlier one is [`WebError::TooEarly`].
//! Deliberately not here: batching several POSTs into one request
//! (`BATCH`), and a fallback to direct writes when the daemon is down
//! (a POST then fails with 500: silently writing behind a daemon's back
//! would lose values it holds).

use std::path::Path;
use std::sync::Mutex;

use crate::rrdfile::{self, Outcome, Update};
use crate::WebError;

/// How the web server writes RRD files.
pub enum Writer {
    Embedded,
    Daemon(DaemonLink),
}

pub struct DaemonLink {
    address: String,
    client: Mutex<Option<rrd_client::Client>>,
}

impl Writer {
    /// The daemon named by `option`, else `RRDCACHED_ADDRESS`, else none.
    /// Connecting is deferred to the first write, so the web server can
    /// start before the daemon.
    pub fn choose(option: Option<&str>) -> Writer {
        match rrd_client::chosen(option) {
            Some(address) => Writer::Daemon(DaemonLink { address, client: Mutex::new(None) }),
            None => Writer::Embedded,
        }
    }

    /// `"embedded"` or the daemon's address, for `/metrics` and the log.
    pub fn describe(&self) -> String {
        match self {
            Writer::Embedded => "embedded".into(),
            Writer::Daemon(d) => d.address.clone(),
        }
    }

    /// Writes `u` into `path`; see [`rrdfile::update_direct`] for what
    /// each refusal becomes.
    pub fn update(&self, path: &Path, u: &Update) -> Result<Outcome, WebError> {
        match self {
            Writer::Embedded => rrdfile::update_direct(path, u),
            Writer::Daemon(d) => match d.with(|c, name| c.update(name, &[u.arg()]), path) {
                Ok(()) => Ok(Outcome::Written),
                Err(WebError::Daemon(m)) => match rrdfile::refused_times(&m) {
                    // Judged by the daemon's own numbers, not by the
                    // words every such refusal shares.
                    Some((time, last)) => match rrdfile::judge(time, last)? {
                        Some(outcome) => Ok(outcome),
                        None => Err(WebError::Daemon(m)),
                    },
                    None => Err(WebError::Daemon(m)),
                },
                Err(e) => Err(e),
            },
        }
    }

    /// The file's last update time as the writer sees it (the daemon's
    /// `LAST` includes values it holds); `None` when the daemon cannot
    /// say, and the update's own refusal then decides.
    pub fn last_update(&self, path: &Path) -> Result<Option<i64>, WebError> {
        match self {
            Writer::Embedded => rrdfile::last_update(path).map(Some),
            Writer::Daemon(d) => Ok(d.with(|c, name| c.last(name), path).ok()),
        }
    }

    /// Makes the daemon write what it holds for `path` (no-op embedded).
    pub fn flush(&self, path: &Path) -> Result<(), WebError> {
        match self {
            Writer::Embedded => Ok(()),
            Writer::Daemon(d) => match d.with(|c, name| c.flush(name), path) {
                // A file the daemon never saw has nothing to flush.
                Err(WebError::Daemon(m)) if m.contains("No such file") || m.contains("not found") => Ok(()),
                other => other,
            },
        }
    }

    /// Whether writes go through a daemon and its connection is open.
    pub fn daemon_connected(&self) -> Option<bool> {
        match self {
            Writer::Embedded => None,
            Writer::Daemon(d) => Some(
                d.client.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|c| c.is_connected()),
            ),
        }
    }
}

impl DaemonLink {
    fn with<T>(
        &self,
        f: impl FnOnce(&mut rrd_client::Client, &str) -> Result<T, rrd_client::ClientError>,
        path: &Path,
    ) -> Result<T, WebError> {
        let name = if rrd_client::address::is_local(&self.address) {
            path.to_string_lossy().into_owned()
        } else {
            // A remote daemon resolves names against its base directory.
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        };
        let mut guard = self.client.lock().unwrap_or_else(|p| p.into_inner());
        if !guard.as_ref().is_some_and(|c| c.is_connected()) {
            *guard = Some(
                rrd_client::Client::connect(&self.address).map_err(|e| WebError::Daemon(e.to_string()))?,
            );
        }
        let client = guard.as_mut().ok_or_else(|| WebError::Daemon("no connection".into()))?;
        f(client, &name).map_err(|e| WebError::Daemon(e.to_string()))
    }
}
