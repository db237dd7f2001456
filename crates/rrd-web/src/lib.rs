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
//! - [`range`], [`params`], [`edit`]: validation of untrusted input;
//! - [`ticker`]: GF's worker, re-writing each graph's number every minute;
//! - [`metrics`]: `/metrics`; [`reply`]: GF's answers;
//! - [`ui`]: the browser UI (embedded assets, one shell page at GF's page
//!   paths, client-side routing over the JSON API).
//!
//! Invariants: names never reach the file system (files are `<id>.rrd`
//! and `<id>_s.rrd`); names with `/`, `..`, NUL or control characters are
//! refused with 400; untrusted input never panics.
//! POSTs write their number at once; [`ticker`] then re-writes every
//! graph's number each minute, as GF's worker does.
//!
//! Deliberately not here: GF's vrules, its MySQL backend, and its
//! `float_number` and `disable_subtract` modes.

pub mod edit;
pub mod metrics;
pub mod params;
pub mod range;
pub mod reply;
pub mod routes;
pub mod rrdfile;
pub mod series;
pub mod store;
pub mod ticker;
pub mod ui;
pub mod writes;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

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
}

/// Shared server state: the metadata store, where the RRD files live,
/// how they are written, and the counters of `/metrics`.
pub struct App {
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
}

impl App {
    /// Opens (creating) `data_dir/gforecast.db` and `data_dir/data/`;
    /// writes go straight to the files.
    pub fn open(data_dir: &Path) -> Result<Arc<App>, WebError> {
        App::open_with(data_dir, Writer::Embedded)
    }

    /// [`App::open`] with writes made by `writer`.
    pub fn open_with(data_dir: &Path, writer: Writer) -> Result<Arc<App>, WebError> {
        let rrd_dir = data_dir.join("data");
        std::fs::create_dir_all(&rrd_dir)?;
        // An absolute directory, so a local daemon gets absolute names.
        let rrd_dir = std::fs::canonicalize(&rrd_dir)?;
        let store = Store::open(&data_dir.join("gforecast.db"))?;
        Ok(Arc::new(App {
            store: Mutex::new(store),
            rrd_dir,
            writer,
            metrics: Default::default(),
            files: RwLock::new(()),
            last_sub: Mutex::new(HashMap::new()),
        }))
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

/// The routes, over an opened [`App`].
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .merge(routes::api::routes())
        .merge(routes::json::routes())
        .merge(routes::graph::routes())
        .route("/metrics", get(metrics::serve))
        .route_layer(axum::middleware::from_fn_with_state(app.clone(), metrics::track))
        .merge(ui::routes())
        .with_state(app)
}

/// Serves until the listener fails.
pub async fn serve(listener: tokio::net::TcpListener, app: Arc<App>) -> std::io::Result<()> {
    axum::serve(listener, router(app)).await
}

/// Binds `addr` and serves `data_dir` on a new multi-threaded runtime.
pub fn run_blocking(addr: SocketAddr, data_dir: &Path, writer: Writer) -> Result<(), WebError> {
    let app = App::open_with(data_dir, writer)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        eprintln!(
            "rrdscale web: listening on http://{} (writes: {})",
            listener.local_addr()?,
            app.writer.describe()
        );
        ticker::spawn(app.clone());
        serve(listener, app).await
    })?;
    Ok(())
}
