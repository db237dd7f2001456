//! Records and snapshots name a file relative to the base directory (so
//! that nodes with different base directories agree); the daemon's cache
//! keys it by its absolute path. The two conversions, in one place.

use rrd_daemon::state::Daemon;

/// The cache key of `relative`: the base directory's absolute path joined
/// with it.
pub fn key_in(daemon: &Daemon, relative: &str) -> String {
    format!("{}/{}", daemon.paths().base().display(), relative)
}

/// `key` relative to the base directory (`None`: outside it, or the base
/// itself).
pub fn relative_in<'a>(daemon: &Daemon, key: &'a str) -> Option<&'a str> {
    let base = daemon.paths().base().to_str()?;
    let rest = key.strip_prefix(base)?;
    let rest = if base == "/" { rest } else { rest.strip_prefix('/')? };
    (!rest.is_empty()).then_some(rest)
}
