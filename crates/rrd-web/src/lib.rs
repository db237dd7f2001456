//! rrd-web: a GrowthForecast-compatible HTTP API over rrd-engine files.
//!
//! Owns the server: shared state ([`App`]), the router and serving. The
//! parts live in modules named for what they hold:
//! - [`routes`]: `api` (POST/GET `/api/...`), `json` (GF's JSON API:
//!   graphs, complexes, lists, create, edit, delete), `graph` (PNG,
//!   xport, summary, Grafana series);
//! - [`store`]: graph and complex metadata in SQLite;
//! - [`rrdfile`]: GF's two RRD files per graph; [`writes`]: embedded
//!   writes or a daemon; [`series`]: the DEF/CDEF lists GF draws;
//!   [`field`]: text inside a graph element's field, escaped once for all;
//! - [`range`], [`params`], [`edit`]: validation of untrusted input;
//! - [`ticker`]: GF's worker, re-writing each graph's number every minute;
//! - [`vrule`]: GF's vertical rules (stored, listed, drawn);
//! - [`metrics`]: `/metrics`; [`reply`]: GF's answers;
//! - [`guard`]: who may talk to the server (`Host` allow-list, no
//!   cross-site writes, an optional write token);
//! - [`tree`]: `--tree`: a read-only browser over RRD trees other
//!   programs wrote, grafana-rrd-server's API under `/grafana/`, and
//!   JSON for Grafana's Infinity data source;
//! - [`ui`]: the browser UI (embedded assets, one shell page at GF's page
//!   paths, client-side routing over the JSON API).
//!
//! Invariants: names never reach the file system (files are `<id>.rrd`
//! and `<id>_s.rrd`); names with `/`, `..`, NUL or control characters are
//! refused with 400; untrusted input never panics.
//! POSTs write their number at once; [`ticker`] then re-writes every
//! graph's number each minute, as GF's worker does. A POST is answered
//! `{"error":0}` only when its value is in the files (or the files hold
//! that very second already, as GF drops); a time the files cannot take
//! is refused with an error, never dropped in silence.
//!
//! Resources a client can ask for are bounded ([`Config`]): graphs drawn
//! at once (503 beyond, after a short wait), graphs stored (403 for a new
//! name beyond), request bodies ([`MAX_BODY_BYTES`], 413), request
//! targets ([`MAX_URI_BYTES`], 414), graphs in one picture
//! ([`MAX_SERIES`], 400), the time to
//! send headers (the connection is closed), and how far ahead of the
//! server's clock a posted time may be
//! ([`routes::api::MAX_CLOCK_SKEW_SECS`], 400).
//!
//! Deliberately not here: GF's MySQL backend, and its
//! `float_number` and `disable_subtract` modes.
#![forbid(unsafe_code)]

pub mod edit;
pub mod field;
pub mod guard;
pub mod metrics;
pub mod params;
pub mod range;
pub mod reply;
pub mod routes;
pub mod rrdfile;
pub mod series;
pub mod store;
pub mod ticker;
pub mod tree;
pub mod ui;
pub mod vrule;
pub mod writes;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::routing::get;
use axum::Router;

use store::Store;
pub use writes::Writer;

/// What can go wrong serving a request, beyond bad input.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("the metadata store failed: {0}")]
    Store(#[from] rusqlite::Error),
    #[error("the RRD engine failed: {0}")]
    Engine(#[from] rrd_engine::Error),
    #[error("drawing the graph failed: {0}")]
    Graph(#[from] rrd_graph::GraphError),
    #[error("the data directory could not be used: {0}")]
    Io(#[from] std::io::Error),
    #[error("the RRD daemon refused or failed: {0}")]
    Daemon(String),
    #[error("a worker task failed: {0}")]
    Join(String),
    /// A file refused an update because it already holds a later second
    /// (the value was not written; the caller answers with an error).
    #[error(
        "the graph's files already hold an update at {last} (epoch seconds); \
         a value at {time} would go back in time and was not written"
    )]
    TooEarly { time: i64, last: i64 },
    /// A request parameter the drawing refused (answered 400 under `key`).
    #[error("{message}")]
    Param { key: &'static str, message: String },
    #[error("a tree could not be served: {0}")]
    Tree(#[from] tree::TreeError),
}

/// The server's limits and access rules: what `rrdscale web`'s options
/// set. [`Config::default`] is what a library caller gets without them
/// (any `Host`; `rrdscale web` derives its allow-list from the listen
/// address with [`guard::HostPolicy::for_listen`]).
#[derive(Clone, Debug)]
pub struct Config {
    /// Graph pictures and exports drawn at once (each can take much
    /// memory and a core); default: the machine's cores.
    pub max_renders: usize,
    /// How long a draw waits for a free slot before a 503.
    pub render_wait: Duration,
    /// Graphs the store may hold; a POST naming a new graph beyond it is
    /// refused with 403 (each graph is two files, about 350 KB).
    pub max_graphs: u64,
    /// Which `Host` values are served.
    pub hosts: guard::HostPolicy,
    /// When set, every write (POST, PUT, DELETE, PATCH) must carry it as
    /// `Authorization: Bearer <token>` or as a basic-auth password.
    pub auth_token: Option<String>,
    /// How long a client may take to send a request's headers (the
    /// connection is then closed), and again a write's body (408).
    pub header_read_timeout: Duration,
    /// `--tree [NAME=]DIR`: trees browsed read-only.
    pub trees: Vec<tree::TreeSpec>,
    /// `--tree-defs FILE`'s text: graph definitions tried before the
    /// embedded ones.
    pub tree_defs: Option<String>,
    /// The daemon tree pictures read through (FETCH), when given.
    pub tree_daemon: Option<String>,
    /// `--mrtg-cfg FILE`s' texts: their `Title[target]` lines title MRTG's
    /// files in the trees.
    pub mrtg_cfgs: Vec<String>,
    /// `--tree-annotations FILE`: Grafana's annotations (CSV).
    pub tree_annotations: Option<std::path::PathBuf>,
}

/// [`Config::render_wait`]'s default: long enough to ride out a burst of
/// thumbnails on a list page, short enough that a client is told.
pub const DEFAULT_RENDER_WAIT: Duration = Duration::from_secs(5);

/// [`Config::max_graphs`]'s default.
pub const DEFAULT_MAX_GRAPHS: u64 = 100_000;

/// [`Config::header_read_timeout`]'s default (hyper's own is 30 s when a
/// timer is set; axum's `serve` sets none, so headers could trickle in
/// for ever).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(15);

/// The largest request body read (GF's bodies are small forms and JSON
/// objects; a complex of a thousand graphs is about 80 KB).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// The most graphs one picture, export or summary draws (an ad-hoc
/// `/graph/AREA:1:gauge:0:...` list, or a complex): each costs its own
/// elements, reads and legend lines, so a long list is refused (400)
/// rather than drawn in memory proportional to the URL.
pub const MAX_SERIES: usize = 100;

/// The longest request target (path and query) served; a longer one is
/// refused with 414. A list of [`MAX_SERIES`] graphs fits.
pub const MAX_URI_BYTES: usize = 8192;

impl Default for Config {
    fn default() -> Config {
        Config {
            max_renders: std::thread::available_parallelism().map_or(1, |n| n.get()),
            render_wait: DEFAULT_RENDER_WAIT,
            max_graphs: DEFAULT_MAX_GRAPHS,
            hosts: guard::HostPolicy::Any,
            auth_token: None,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            trees: Vec::new(),
            tree_defs: None,
            tree_daemon: None,
            mrtg_cfgs: Vec::new(),
            tree_annotations: None,
        }
    }
}

/// Shared server state: the metadata store, where the RRD files live,
/// how they are written, and the counters of `/metrics`.
pub struct App {
    pub(crate) config: Config,
    /// One permit per picture or export being drawn ([`Config::max_renders`]).
    pub(crate) renders: Arc<tokio::sync::Semaphore>,
    store: Mutex<Store>,
    pub(crate) rrd_dir: PathBuf,
    pub(crate) writer: Writer,
    pub(crate) metrics: metrics::Metrics,
    /// Readers (draws, exports) share it, writers (POST, delete) take it
    /// alone: the engine's file locks refuse at once rather than wait, and
    /// a POST must not fail because a picture is being drawn.
    pub(crate) files: RwLock<()>,
    /// Each graph's last posted difference (`sub`), for the ticker.
    last_sub: Mutex<HashMap<i64, i64>>,
    /// The `--tree`s (none without the option).
    pub(crate) trees: tree::Trees,
}

impl App {
    /// Opens (creating) `data_dir/gforecast.db` and `data_dir/data/`;
    /// writes go straight to the files.
    pub fn open(data_dir: &Path) -> Result<Arc<App>, WebError> {
        App::open_with(data_dir, Writer::Embedded)
    }

    /// [`App::open`] with writes made by `writer`.
    pub fn open_with(data_dir: &Path, writer: Writer) -> Result<Arc<App>, WebError> {
        App::open_configured(data_dir, writer, Config::default())
    }

    /// [`App::open_with`] under `config`'s limits and access rules.
    pub fn open_configured(data_dir: &Path, writer: Writer, config: Config) -> Result<Arc<App>, WebError> {
        let rrd_dir = data_dir.join("data");
        std::fs::create_dir_all(&rrd_dir)?;
        // An absolute directory, so a local daemon gets absolute names.
        let rrd_dir = std::fs::canonicalize(&rrd_dir)?;
        let store = Store::open(&data_dir.join("gforecast.db"))?;
        let renders = Arc::new(tokio::sync::Semaphore::new(config.max_renders.max(1)));
        let mut trees = tree::Trees::open_with(
            &config.trees,
            config.tree_defs.as_deref(),
            &config.mrtg_cfgs,
            config.tree_daemon.clone(),
        )?;
        trees.annotations = config.tree_annotations.clone();
        Ok(Arc::new(App {
            config,
            renders,
            store: Mutex::new(store),
            rrd_dir,
            writer,
            metrics: Default::default(),
            files: RwLock::new(()),
            last_sub: Mutex::new(HashMap::new()),
            trees,
        }))
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Takes `n` render slots until the permit is dropped, as `n` draws in
    /// progress would (for tests of the cap; `None` if they are not free).
    #[doc(hidden)]
    pub fn hold_render_slots(&self, n: u32) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.renders.clone().try_acquire_many_owned(n).ok()
    }

    pub(crate) fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        // A panic while holding the lock leaves SQLite consistent (each
        // change is a statement or a transaction), so a poisoned lock is
        // still usable.
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn last_sub(&self, id: i64) -> Option<i64> {
        self.last_sub.lock().unwrap_or_else(|p| p.into_inner()).get(&id).copied()
    }

    pub(crate) fn set_last_sub(&self, id: i64, sub: Option<i64>) {
        let mut m = self.last_sub.lock().unwrap_or_else(|p| p.into_inner());
        match sub {
            Some(s) => m.insert(id, s),
            None => m.remove(&id),
        };
    }

    pub(crate) fn read_files(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.files.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn write_files(&self) -> std::sync::RwLockWriteGuard<'_, ()> {
        self.files.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// The routes, over an opened [`App`]: every request passes
/// [`guard::check`] (Host, Origin, token) first, and bodies are bounded
/// by [`MAX_BODY_BYTES`].
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .merge(routes::api::routes())
        .merge(routes::json::routes())
        .merge(routes::graph::routes())
        .merge(routes::vrule::routes())
        .merge(tree::routes::routes())
        .route("/metrics", get(metrics::serve))
        .route_layer(axum::middleware::from_fn_with_state(app.clone(), metrics::track))
        .merge(ui::routes())
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard::check))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(app)
}

/// Serves until the listener fails: HTTP/1.1 through hyper, each
/// connection given [`Config::header_read_timeout`] to send each
/// request's headers (a slow client is disconnected, not waited for).
pub async fn serve(listener: tokio::net::TcpListener, app: Arc<App>) -> std::io::Result<()> {
    let timeout = app.config.header_read_timeout;
    let service = hyper_util::service::TowerToHyperService::new(router(app));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors and the like: wait instead of spinning.
                eprintln!("rrdscale web: accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = service.clone();
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(timeout);
            // A client that goes away or times out ends only its connection.
            let _ = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service).await;
        });
    }
}

/// Binds `addr` and serves `data_dir` on a new multi-threaded runtime.
pub fn run_blocking(
    addr: SocketAddr,
    data_dir: &Path,
    writer: Writer,
    config: Config,
) -> Result<(), WebError> {
    // Bound first: with port 0, the Host names derived from the listen
    // address take the port the kernel chose.
    let bound = std::net::TcpListener::bind(addr)?;
    bound.set_nonblocking(true)?;
    let mut config = config;
    config.hosts = config.hosts.bound_to(bound.local_addr()?.port());
    let app = App::open_configured(data_dir, writer, config)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(bound)?;
        let c = &app.config;
        let hosts = match &c.hosts {
            guard::HostPolicy::Any => "any".to_string(),
            guard::HostPolicy::Only(list) => list.join(","),
        };
        eprintln!(
            "rrdscale web: listening on http://{} (writes: {}; hosts: {hosts}; write token: {}; \
             max renders {}, max graphs {})",
            listener.local_addr()?,
            app.writer.describe(),
            if c.auth_token.is_some() { "required" } else { "none" },
            c.max_renders,
            c.max_graphs
        );
        for t in &app.trees.trees {
            eprintln!(
                "rrdscale web: tree '{}' ({}, read-only) at http://{}/tree/{}",
                t.name,
                t.dir.display(),
                listener.local_addr()?,
                t.name
            );
        }
        ticker::spawn(app.clone());
        serve(listener, app).await
    })?;
    Ok(())
}
