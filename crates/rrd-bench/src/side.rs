//! The sides of a comparison: which tool updates the files, and how.
//!
//! A side names its directory (each side works on its own copy of the
//! files) and its label in the report. Deliberately absent: how a side runs
//! (see [`crate::worker`]).

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// How rrdscale applies updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
pub enum Mode {
    /// One `update_file` call per update, opening and closing the file, as
    /// a librrd user does.
    Direct,
    /// The batch updater: files kept open (bounded), the pages of a chunk
    /// of updates prefetched at once, then the updates applied.
    Batch,
    /// `rrdscale -` fed one update line per update.
    Pipe,
    /// A fresh `rrdscale -` per pass, fed one update line per file, as
    /// Cacti's poller starts `rrdtool -` once per poll cycle.
    PipeCycle,
    /// `rrd_engine::mapped::MappedFiles`: files kept mapped (no descriptor,
    /// no lock), the pages of a chunk of updates prefetched at once
    /// (`MADV_WILLNEED`), then one update call per file per step.
    Mapped,
    /// rrdscale's drop-in `librrd.so.8` (crates/librrd), loaded in the
    /// side's worker by its path (`--librrd`) and called as the `librrd`
    /// side calls Debian's: `rrd_create_r`, then `rrd_update_r` once per
    /// file per step. Each library lives in its own worker process, so
    /// both run in one invocation.
    Librrd,
}

/// Which rrdtool a comparison runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
pub enum Versus {
    /// librrd 1.7.2 through `dlopen` and `rrd_update_r`.
    Rrdtool,
    /// `rrdtool -` fed one update line per update.
    RrdtoolPipe,
    /// A fresh `rrdtool -` per pass (Cacti's poller).
    RrdtoolPipeCycle,
}

/// One side of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    Rrdscale(Mode),
    Librrd,
    RrdtoolPipe,
    RrdtoolPipeCycle,
}

impl Side {
    /// The sides of a run: rrdscale's modes first, then rrdtool's.
    pub fn all(modes: &[Mode], vs: &[Versus]) -> Vec<Side> {
        let mut sides: Vec<Side> = Vec::new();
        for m in modes {
            let s = Side::Rrdscale(*m);
            if !sides.contains(&s) {
                sides.push(s);
            }
        }
        for v in vs {
            let s = match v {
                Versus::Rrdtool => Side::Librrd,
                Versus::RrdtoolPipe => Side::RrdtoolPipe,
                Versus::RrdtoolPipeCycle => Side::RrdtoolPipeCycle,
            };
            if !sides.contains(&s) {
                sides.push(s);
            }
        }
        sides
    }

    /// The directory name of this side's copy of the files.
    pub fn dir_name(self) -> &'static str {
        match self {
            Side::Rrdscale(Mode::Direct) => "rrdscale-direct",
            Side::Rrdscale(Mode::Batch) => "rrdscale-batch",
            Side::Rrdscale(Mode::Pipe) => "rrdscale-pipe",
            Side::Rrdscale(Mode::Mapped) => "rrdscale-mapped",
            Side::Rrdscale(Mode::PipeCycle) => "rrdscale-pipe-cycle",
            Side::Rrdscale(Mode::Librrd) => "rrdscale-librrd",
            Side::Librrd => "librrd",
            Side::RrdtoolPipe => "rrdtool-pipe",
            Side::RrdtoolPipeCycle => "rrdtool-pipe-cycle",
        }
    }

    /// The tool column of the report.
    pub fn tool(self) -> &'static str {
        match self {
            Side::Rrdscale(_) => "rrdscale",
            Side::Librrd | Side::RrdtoolPipe | Side::RrdtoolPipeCycle => "rrdtool 1.7.2",
        }
    }

    /// The mode column of the report.
    pub fn mode(self) -> &'static str {
        match self {
            Side::Rrdscale(Mode::Direct) => "direct",
            Side::Rrdscale(Mode::Batch) => "batch",
            Side::Rrdscale(Mode::Pipe) => "pipe",
            Side::Rrdscale(Mode::Mapped) => "mapped",
            Side::Rrdscale(Mode::PipeCycle) => "pipe-cycle",
            Side::Rrdscale(Mode::Librrd) => "librrd.so.8",
            Side::Librrd => "librrd",
            Side::RrdtoolPipe => "pipe",
            Side::RrdtoolPipeCycle => "pipe-cycle",
        }
    }

    /// A short label: `rrdscale direct`, `librrd`, `rrdtool pipe`.
    pub fn label(self) -> String {
        match self {
            Side::Rrdscale(_) => format!("rrdscale {}", self.mode()),
            Side::Librrd => "librrd".to_string(),
            Side::RrdtoolPipe => "rrdtool pipe".to_string(),
            Side::RrdtoolPipeCycle => "rrdtool pipe-cycle".to_string(),
        }
    }

    pub fn is_rrdtool(self) -> bool {
        !matches!(self, Side::Rrdscale(_))
    }

    /// Whether the updates run in a child process fed through a pipe.
    pub fn is_pipe(self) -> bool {
        matches!(
            self,
            Side::Rrdscale(Mode::Pipe | Mode::PipeCycle) | Side::RrdtoolPipe | Side::RrdtoolPipeCycle
        )
    }

    /// Whether a fresh process runs each pass (Cacti's poller).
    pub fn is_per_cycle(self) -> bool {
        matches!(self, Side::Rrdscale(Mode::PipeCycle) | Side::RrdtoolPipeCycle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_are_unique_and_ordered() {
        let s = Side::all(&[Mode::Batch, Mode::Direct, Mode::Batch], &[Versus::RrdtoolPipe, Versus::Rrdtool]);
        assert_eq!(
            s,
            vec![Side::Rrdscale(Mode::Batch), Side::Rrdscale(Mode::Direct), Side::RrdtoolPipe, Side::Librrd]
        );
        let dirs: std::collections::HashSet<_> = s.iter().map(|x| x.dir_name()).collect();
        assert_eq!(dirs.len(), 4);
    }
}
