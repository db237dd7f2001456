//! `rrdscale web --tree [NAME=]DIR`: a read-only browser and Grafana data
//! source over RRD trees that other programs wrote (collectd, MRTG, Munin,
//! Ganglia, scripts).
//!
//! Why here and not a second program: the tree pages reuse the server's
//! listener, its guard (Host allow-list), its render slots
//! ([`crate::Config::max_renders`]) and its graph engine.
//!
//! The parts, each in a module named for what it holds:
//! - [`confine`]: untrusted relative paths → paths beneath a tree's root
//!   (no `..`, no absolute path, no link leaving the root); the URL
//!   percent codec and HTML escaping;
//! - [`index`]: directory listings read on request, kept per directory
//!   while its mtime is unchanged (no walk of the tree per request);
//! - [`defs`]: graph definitions as data (`defs.json`, embedded, plus a
//!   user file), matched against a file's name and DS names;
//! - [`source`]: where a drawing reads rows: files opened beneath the
//!   root, or a daemon's FETCH (pending values drawn, no FLUSH);
//! - [`draw`]: a definition + a file → graph elements, a PNG with its
//!   plot-area geometry, or the drawn numbers (CSV, JSON);
//! - [`page`]: the HTML pages (directory with thumbnails, one graph);
//! - [`grafana`]: grafana-rrd-server's API under `/grafana/` and a plain
//!   JSON endpoint for Grafana's Infinity data source;
//! - [`routes`]: the HTTP routes.
//!
//! Invariants: no request writes, creates or deletes anything under a
//! tree (files are opened read-only; nothing else is opened there);
//! every file read is opened beneath the root by
//! [`rrd_engine::root::Root`] (`openat2(RESOLVE_BENEATH)` or a check of
//! the opened descriptor), so a link leaving the root is refused even if
//! swapped in after a listing; names reach HTML escaped and URLs
//! percent-encoded, whatever their bytes.

pub mod annotations;
pub mod confine;
pub mod defs;
pub mod draw;
pub mod grafana;
pub mod index;
pub mod munin;
pub mod page;
pub mod routes;
pub mod source;

use std::path::{Path, PathBuf};

use rrd_engine::root::Root;

/// What can go wrong serving a tree request.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("no tree is named '{0}'")]
    UnknownTree(String),
    #[error("the path is refused: {0}")]
    Refused(&'static str),
    #[error("no such file or directory in the tree")]
    NotFound,
    #[error("the path leaves the tree")]
    Escape,
    #[error("reading the tree failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the RRD engine failed: {0}")]
    Engine(#[from] rrd_engine::Error),
    #[error("drawing the graph failed: {0}")]
    Graph(#[from] rrd_graph::GraphError),
    #[error("the graph definitions are invalid: {0}")]
    Defs(String),
    #[error("{0}")]
    Param(String),
}

/// One `--tree [NAME=]DIR` as given on the command line.
#[derive(Clone, Debug)]
pub struct TreeSpec {
    pub name: String,
    pub dir: PathBuf,
}

impl TreeSpec {
    /// Parses `NAME=DIR` or `DIR` (the name is then the directory's base
    /// name). A name is letters, digits, `-`, `_` and `.`, not starting
    /// with a dot, so it can be a URL segment and a target prefix as is.
    pub fn parse(arg: &str) -> Result<TreeSpec, TreeError> {
        let (name, dir) = match arg.split_once('=') {
            Some((n, d)) if valid_name(n) => (n.to_string(), d),
            _ => {
                let base = Path::new(arg.trim_end_matches('/')).file_name().unwrap_or_default();
                (default_name(&base.to_string_lossy()), arg)
            }
        };
        if !valid_name(&name) {
            return Err(TreeError::Param(format!(
                "the tree name '{name}' must be letters, digits, '-', '_' or '.' (give one as NAME=DIR)"
            )));
        }
        Ok(TreeSpec { name, dir: PathBuf::from(dir) })
    }
}

/// A directory's base name made a tree name: other characters become
/// `_`, leading dots are dropped (`tree` if nothing is left).
fn default_name(base: &str) -> String {
    let n: String = base
        .trim_start_matches('.')
        .chars()
        .take(64)
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .collect();
    if n.is_empty() {
        "tree".into()
    } else {
        n
    }
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && !n.starts_with('.')
        && n.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// An opened tree: its name, canonical root, and the confined opener.
pub struct Tree {
    pub name: String,
    /// The canonical directory (every path handed to `root` starts with it).
    pub dir: PathBuf,
    pub root: Root,
}

/// Every tree the server browses, the graph definitions, the directory
/// cache and the daemon reads go through.
pub struct Trees {
    pub trees: Vec<Tree>,
    pub defs: defs::Defs,
    pub index: index::Index,
    /// `--daemon` for reads (FETCH), when given.
    pub daemon: Option<String>,
    pub thumbs: draw::ThumbCache,
    pub search: grafana::SearchCache,
    /// `--tree-annotations FILE`: Grafana's annotations, when given.
    pub annotations: Option<std::path::PathBuf>,
}

impl Trees {
    /// Opens each tree (its directory must exist) and the definitions
    /// (the embedded ones, after `user_defs` when given).
    pub fn open(
        specs: &[TreeSpec],
        user_defs: Option<&str>,
        daemon: Option<String>,
    ) -> Result<Trees, TreeError> {
        Trees::open_with(specs, user_defs, &[], daemon)
    }

    /// [`Trees::open`], with MRTG configurations whose `Title[...]`
    /// lines title MRTG's files.
    pub fn open_with(
        specs: &[TreeSpec],
        user_defs: Option<&str>,
        mrtg_cfgs: &[String],
        daemon: Option<String>,
    ) -> Result<Trees, TreeError> {
        let mut trees: Vec<Tree> = Vec::new();
        for s in specs {
            if trees.iter().any(|t| t.name == s.name) {
                return Err(TreeError::Param(format!("two trees are named '{}' (use NAME=DIR)", s.name)));
            }
            let dir = std::fs::canonicalize(&s.dir)?;
            if !dir.is_dir() {
                return Err(TreeError::Param(format!("{} is not a directory", s.dir.display())));
            }
            let root = Root::beneath(&dir)?;
            trees.push(Tree { name: s.name.clone(), dir, root });
        }
        let mut defs = defs::Defs::load(user_defs)?;
        for cfg in mrtg_cfgs {
            defs.add_mrtg_titles(cfg);
        }
        Ok(Trees {
            trees,
            defs,
            index: index::Index::new(index::MAX_CACHED_DIRS),
            daemon,
            thumbs: draw::ThumbCache::new(draw::THUMB_CACHE_BYTES),
            search: Default::default(),
            annotations: None,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }

    pub fn get(&self, name: &str) -> Result<&Tree, TreeError> {
        self.trees.iter().find(|t| t.name == name).ok_or_else(|| TreeError::UnknownTree(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_names_come_from_the_option_or_the_directory() {
        let name = |a: &str| TreeSpec::parse(a).unwrap().name;
        assert_eq!(name("collectd=/var/lib/collectd/rrd"), "collectd");
        assert_eq!(TreeSpec::parse("c=/a=b").unwrap().dir, PathBuf::from("/a=b"));
        assert_eq!(name("/var/lib/collectd/rrd/"), "rrd");
        assert_eq!(name("/tmp/.hidden"), "hidden");
        assert_eq!(name("/srv/my trees"), "my_trees");
        assert_eq!(name("/"), "tree");
    }
}
