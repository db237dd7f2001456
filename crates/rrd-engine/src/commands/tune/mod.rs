//! `tune`: change an existing RRD the way `rrdtool tune` 1.7.2 does.
//!
//! Two kinds of change, applied in this order:
//! - **parameters** (`-h -i -a -d -r -p -n -w -f -x -y -z -v -s -S -b`):
//!   edits of the header (and, for `--aberrant-reset`, of some data columns)
//!   made in place. rrdtool edits a shared memory map of the file, so every
//!   option applied before a failing one stays applied; [`Tuner`] reproduces
//!   that by writing the header back even when an option fails.
//! - **structure** (`DS:`, `DEL:`, `RRA:`, `DELRRA:`, `RRA#i:+n|-n|=n`, with
//!   `--step` stretching the file first): the whole file is rebuilt in
//!   memory ([`Image`]) and written to a temporary file renamed over the
//!   original. As in rrdtool every archive comes out in time order (oldest
//!   row first, `cur_row` on the last row), added rows and archives are
//!   filled from the other archives where a classic CF allows, and a new
//!   archive's consolidation scratch is primed from a fitting archive.
//!
//! rrdtool's quirks are reproduced on purpose (the binary is the reference)
//! where they do not lose data: adding a DCOUNTER or DDERIVE source does
//! not raise the file version while adding an MHWPREDICT archive can only
//! lower it; a new archive's primary CDP value is read with a row index
//! used as a value index; new archives' MIN and MAX scratch values start
//! from 0.
//!
//! Deliberately different because rrdtool destroys data there (the project
//! never corrupts a user's data, so compatibility stops where rrdtool
//! does): when an archive is deleted (`DELRRA:i`, `RRA#i:=0`, or a shrink
//! to 0 rows), rrdtool 1.7.2 does not move its read position past the
//! deleted archive's data, so every later archive is overwritten with
//! values read from the wrong place in the old file, and an archive grown
//! in the same call takes its `cur_row` from another archive (by its old
//! index in the new list, past the end of that list in some cases), so
//! the rows it fills get values from the wrong times. rrdscale keeps every
//! kept archive's own data and uses each grown archive's own `cur_row`.
//! Deleting only trailing archives is not affected, and there the result
//! is byte for byte rrdtool's. docs/compatibility.md lists this deviation.
//!
//! Deliberately different from rrdtool (which crashes, writes garbage or
//! writes a file nothing can read in these cases): a `DS:` definition that
//! does not parse is refused before anything is rewritten; deleting every
//! archive, or a Holt-Winters archive with a seasonal period of 0, is
//! refused; the bytes rrdtool leaves uninitialised in an added DS
//! definition (parameter slots 3 to 9) are written as zeros. The caching
//! daemon (`--daemon`) is not supported: the option is accepted and ignored.
//!
//! The parts: `args` ([`CommandLine`]: rrdtool's command line, read by
//! its `optparse`), `tuner` ([`Tuner`]: the options, in place), `restructure`
//! ([`Image`], [`modify`]: the structural rebuild); the `RRA:` definitions
//! they share with `create` are `commands/rra_def.rs`, and the C
//! conversions rrdtool reads its arguments with are [`rrd_lang::cscan`].

mod args;
mod restructure;
mod tuner;

use std::path::Path;

use crate::error::{Error, Result};
use crate::hw::fnv_hash;
use crate::store::Store;

pub use args::{CommandLine, Scan};
pub use restructure::{modify, parse_modify_args, Image, ModifyPlan, RraModOp};
pub use tuner::Tuner;

/// One tune option with its argument as given on the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum TuneOption {
    /// `-h|--heartbeat ds:seconds`
    Heartbeat(String),
    /// `-i|--minimum ds:min` (`U` for unknown)
    Minimum(String),
    /// `-a|--maximum ds:max`
    Maximum(String),
    /// `-d|--data-source-type ds:DST`
    DataSourceType(String),
    /// `-r|--data-source-rename old:new`
    DataSourceRename(String),
    /// `-p|--deltapos value`
    DeltaPos(String),
    /// `-n|--deltaneg value`
    DeltaNeg(String),
    /// `-w|--window-length count`
    WindowLength(String),
    /// `-f|--failure-threshold count`
    FailureThreshold(String),
    /// `-x|--alpha value`
    Alpha(String),
    /// `-y|--beta value`
    Beta(String),
    /// `-z|--gamma value`
    Gamma(String),
    /// `-v|--gamma-deviation value`
    GammaDeviation(String),
    /// `-s|--smoothing-window fraction`
    SmoothingWindow(String),
    /// `-S|--smoothing-window-deviation fraction`
    SmoothingWindowDeviation(String),
    /// `-b|--aberrant-reset ds`
    AberrantReset(String),
    /// `-t|--step seconds`: the new step for structural changes.
    Step(String),
    /// `-D|--daemon address`: accepted and ignored.
    Daemon(String),
}

fn err(msg: impl Into<String>) -> Error {
    Error::invalid(msg)
}

/// `rrdtool tune path options... structural-args...`: applies `options` in
/// order (writing the header back even when one fails, as rrdtool's memory
/// map does), then the structural arguments, rewriting the file if there
/// are any.
pub fn tune(path: &Path, options: &[TuneOption], structural: &[String]) -> Result<()> {
    let mut tuner = Tuner::open(path)?;
    for opt in options {
        if let Err(e) = tuner.apply(opt) {
            tuner.write_header()?;
            return Err(e);
        }
    }
    tuner.write_header()?;
    finish_modify(&tuner, path, structural)
}

/// The structural part of [`tune`], on a tuner whose options are applied.
pub fn finish_modify<S: Store>(tuner: &Tuner<S>, path: &Path, structural: &[String]) -> Result<()> {
    finish_modify_in(tuner, &crate::root::Root::Anywhere, path, structural)
}

/// [`finish_modify`] whose rewritten file is made beneath `root`
/// ([`Image::write_in`]).
pub fn finish_modify_in<S: Store>(
    tuner: &Tuner<S>,
    root: &crate::root::Root,
    path: &Path,
    structural: &[String],
) -> Result<()> {
    let plan = parse_modify_args(structural)?;
    if plan.is_empty() {
        return Ok(());
    }
    let image = Image::read(&tuner.rrd)?;
    let hash = fnv_hash(path.as_os_str().as_encoded_bytes());
    let out = modify(&image, &plan, tuner.new_step, hash)?;
    out.write_in(root, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::root::Root;
    use crate::testfile::{create_file, PERFTEST_LIKE};

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// A confined tune opened its file beneath the root, then the file's
    /// directory became a link out of the root: the rewrite (temporary
    /// file and rename, relative to the directory opened beneath the root)
    /// is refused, and the outside directory is left as it was.
    #[test]
    fn a_confined_rewrite_refuses_a_directory_swapped_after_the_open() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let b = base.path();
        std::fs::create_dir(b.join("sub")).unwrap();
        let path = create_file(&b.join("sub"), "f.rrd", &PERFTEST_LIKE);
        let decoy = create_file(outside.path(), "f.rrd", &PERFTEST_LIKE);
        let before = std::fs::read(&decoy).unwrap();
        let root = Root::beneath(b).unwrap();
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Unswapped, the rewrite happens beneath the root.
        let mut tuner = Tuner::open_in(&root, &path).unwrap();
        CommandLine::new(&argv(&["f.rrd", "RRA#0:+5"])).apply_in(&mut tuner, &root, &path).unwrap();
        assert_eq!(Tuner::open(&path).unwrap().rrd.header.rra()[0].row_count, 15);
        let mut tuner = Tuner::open_in(&root, &path).unwrap();
        std::fs::rename(b.join("sub"), b.join("old-sub")).unwrap();
        std::os::unix::fs::symlink(outside.path(), b.join("sub")).unwrap();
        let e =
            CommandLine::new(&argv(&["f.rrd", "RRA#0:+5"])).apply_in(&mut tuner, &root, &path).unwrap_err();
        assert!(matches!(&e, Error::Io { source, .. } if Root::is_escape(source)), "{e:?}");
        assert_eq!(names(outside.path()), ["f.rrd"]);
        assert!(std::fs::read(&decoy).unwrap() == before, "the outside file changed");
    }
}
