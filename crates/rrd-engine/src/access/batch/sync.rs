//! `syncfs(2)` of the file systems a batch wrote to: one call per file
//! system instead of one `fdatasync` per file.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::root::Root;

/// `syncfs(2)` of the filesystem holding `path`.
pub fn sync_filesystem_of(path: &Path) -> Result<()> {
    let file = File::open(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    syncfs(&file, path)
}

/// `syncfs(2)` of filesystem `device`, through the file at `path` opened
/// within `root`; refused when that file is not on `device` any more (the
/// name was replaced by a file elsewhere since it was written: syncing
/// that one would not make the written file durable).
pub fn sync_device_of(root: &Root, device: u64, path: &Path) -> Result<()> {
    let io_err = |source| Error::Io { path: path.to_path_buf(), source };
    let file = root.open(path, false).map_err(io_err)?;
    if file.metadata().map_err(io_err)?.dev() != device {
        return Err(Error::invalid(format!(
            "'{}' moved to another filesystem before its sync",
            path.display()
        )));
    }
    syncfs(&file, path)
}

pub(super) fn syncfs(file: &File, path: &Path) -> Result<()> {
    rustix::fs::syncfs(file).map_err(|e| Error::Io { path: path.to_path_buf(), source: e.into() })
}
