//! The state every connection shares: configuration, cache, journal,
//! counters, and the shutdown signal.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rrd_engine::root::Root;
use rrd_protocol::Permissions;

use crate::cache::Cache;
use crate::config::{Config, ListenSpec};
use crate::journaler::Journaler;
use crate::paths::Paths;
use crate::stats::Stats;

/// What a connection knows of the listener that accepted it, handed to it
/// once (nothing is looked up per line).
#[derive(Clone, Copy, Debug)]
pub struct Listening {
    /// Its base directory: an index into [`Daemon::bases`].
    pub base: usize,
    /// `-P`: the commands it allows.
    pub permissions: Permissions,
    /// `--skip-past-updates`.
    pub skip_past_updates: bool,
}

pub struct Daemon {
    pub config: Config,
    /// Every distinct base directory of the listeners, the default base
    /// (the last `-b`, `/tmp` without one) first.
    pub bases: Vec<Paths>,
    /// How RRD files are opened, whichever listener's key: under `-B`,
    /// beneath the base directory that contains the key
    /// ([`crate::paths::open_root`]); anywhere otherwise.
    pub root: Root,
    pub cache: Arc<Cache>,
    pub journal: Arc<Journaler>,
    pub stats: Arc<Stats>,
    /// Becomes true when the daemon starts shutting down: connections close.
    pub shutdown: tokio::sync::watch::Sender<bool>,
    /// Set by SIGUSR1 (flush before exiting) and cleared by SIGUSR2.
    pub flush_at_shutdown: AtomicBool,
    /// Serializes CREATE, as rrdcached does.
    pub create_lock: tokio::sync::Mutex<()>,
    /// Large FETCH replies being written (`commands::fetch::LARGE_ROWS`):
    /// at most `LARGE_REPLIES_MAX` at once.
    pub large_replies: Arc<tokio::sync::Semaphore>,
    /// UNIX-socket connections served on threads of their own
    /// (`--unix-threads`).
    pub connection_threads: crate::connection::own_thread::Threads,
}

impl Daemon {
    pub fn new(config: Config, journal: Journaler) -> Daemon {
        let stats = Arc::new(Stats::default());
        Daemon::with_stats(config, journal, stats)
    }

    pub fn with_stats(mut config: Config, journal: Journaler, stats: Arc<Stats>) -> Daemon {
        if config.max_pending_bytes == 0 {
            config.max_pending_bytes = crate::config::default_pending_budget();
        }
        let mut bases = vec![Paths::new(config.base_dir.as_deref(), config.base_only)];
        for l in &config.listen {
            let p = Paths::new(l.base_dir.as_deref(), config.base_only);
            if !bases.iter().any(|b| b.base() == p.base()) {
                bases.push(p);
            }
        }
        let root = crate::paths::open_root(&bases, config.base_only);
        let mut cache = Cache::new(stats.clone(), config.write_interval_secs, config.write_jitter_secs);
        cache.root = root.clone();
        let cache = Arc::new(cache);
        cache.release_pages.store(!config.keep_pages, std::sync::atomic::Ordering::SeqCst);
        let kept_budget = if config.max_kept_bytes == 0 {
            crate::config::default_kept_budget()
        } else {
            config.max_kept_bytes
        };
        cache.kept_budget.store(kept_budget, std::sync::atomic::Ordering::SeqCst);
        let flush_at_shutdown = AtomicBool::new(config.flush_at_shutdown);
        let journal = Arc::new(journal);
        let connection_threads = crate::connection::own_thread::Threads::new(config.unix_threads);
        if journal.enabled() {
            let _ = cache.undo_log.set(journal.clone());
        }
        Daemon {
            config,
            bases,
            root,
            cache,
            journal,
            stats,
            shutdown: tokio::sync::watch::channel(false).0,
            flush_at_shutdown,
            create_lock: tokio::sync::Mutex::new(()),
            large_replies: Arc::new(tokio::sync::Semaphore::new(crate::commands::fetch::LARGE_REPLIES_MAX)),
            connection_threads,
        }
    }

    /// The default base's names: the default socket's, systemd's sockets',
    /// and those of callers that have no listener (the cluster mode).
    pub fn paths(&self) -> &Paths {
        &self.bases[0]
    }

    /// What a connection from the listener `spec` knows of it.
    pub fn listening(&self, spec: &ListenSpec) -> Listening {
        let base = spec.base_dir.as_deref().unwrap_or(std::path::Path::new("/tmp"));
        Listening {
            base: self.bases.iter().position(|b| b.base() == base).unwrap_or(0),
            permissions: spec.permissions,
            skip_past_updates: spec.skip_past_updates,
        }
    }

    /// What a connection from the default socket (or one systemd passed)
    /// knows: the default base, `permissions`, and `--skip-past-updates`
    /// if it was given.
    pub fn default_listening(&self, permissions: Permissions) -> Listening {
        Listening { base: 0, permissions, skip_past_updates: self.config.skip_past_updates }
    }

    /// The names of `listening`'s base directory.
    pub fn paths_of(&self, listening: &Listening) -> &Paths {
        &self.bases[listening.base]
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse_args, Parsed};

    /// One `Paths` per distinct base, the default (last `-b`) first; each
    /// listener gets its own base's index and skip flag; under `-B` the
    /// root confines opens to those bases.
    #[test]
    fn each_listener_knows_its_base() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let (a, b) = (real.join("a"), real.join("b"));
        let words: Vec<String> = [
            "-B",
            "-b",
            a.to_str().unwrap(),
            "-l",
            "unix:/s1",
            "--skip-past-updates",
            "-b",
            b.to_str().unwrap(),
            "-l",
            "unix:/s2",
            "-l",
            "unix:/s3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let Ok(Parsed::Run(mut config, _)) = parse_args(&words) else { panic!("parsed") };
        config.prepare().unwrap();
        let daemon = Daemon::new(*config, Journaler::disabled());
        let bases: Vec<&std::path::Path> = daemon.bases.iter().map(Paths::base).collect();
        assert_eq!(bases, [b.as_path(), a.as_path()]);
        let l: Vec<Listening> = daemon.config.listen.iter().map(|s| daemon.listening(s)).collect();
        assert_eq!(
            l.iter().map(|l| (l.base, l.skip_past_updates)).collect::<Vec<_>>(),
            [(1, false), (0, true), (0, true)]
        );
        assert_eq!(daemon.paths_of(&l[0]).resolve("x.rrd").unwrap(), format!("{}/x.rrd", a.display()));
        assert!(daemon.paths_of(&l[1]).resolve(&format!("{}/x.rrd", a.display())).is_err());
        std::fs::write(a.join("x.rrd"), b"x").unwrap();
        std::fs::write(real.join("outside.rrd"), b"x").unwrap();
        assert!(daemon.root.open(&a.join("x.rrd"), false).is_ok());
        assert!(Paths::is_escape(&daemon.root.open(&real.join("outside.rrd"), false).unwrap_err()));
    }
}
