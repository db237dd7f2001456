//! The state every connection shares: configuration, cache, journal,
//! counters, and the shutdown signal.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::cache::Cache;
use crate::config::Config;
use crate::journaler::Journaler;
use crate::paths::Paths;
use crate::stats::Stats;

pub struct Daemon {
    pub config: Config,
    pub paths: Paths,
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
        let paths = Paths::new(config.base_dir.as_deref(), config.base_only);
        let mut cache = Cache::new(stats.clone(), config.write_interval_secs, config.write_jitter_secs);
        cache.root = paths.root.clone();
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
        if journal.enabled() {
            let _ = cache.undo_log.set(journal.clone());
        }
        Daemon {
            config,
            paths,
            cache,
            journal,
            stats,
            shutdown: tokio::sync::watch::channel(false).0,
            flush_at_shutdown,
            create_lock: tokio::sync::Mutex::new(()),
            large_replies: Arc::new(tokio::sync::Semaphore::new(crate::commands::fetch::LARGE_REPLIES_MAX)),
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }
}
