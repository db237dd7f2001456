//! Shared by the daemon's in-process integration tests.

#![allow(dead_code)]

use std::path::Path;

use rrd_engine::create::{create, CreateOptions};

/// Creates an RRD at `path`: 300 s step, last update `start`, `defs` its
/// `DS:`/`RRA:` definitions.
pub fn create_rrd(path: &Path, start: i64, defs: &[&str]) {
    let defs: Vec<String> = defs.iter().map(|s| s.to_string()).collect();
    let opts = CreateOptions { start: Some(start), step_secs: Some(300), ..Default::default() };
    create(path, &opts, &defs, start).unwrap();
}
