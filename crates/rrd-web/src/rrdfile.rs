//! The RRD files behind one graph, as GrowthForecast lays them out:
//! `data/<id>.rrd` (step 300, heartbeat 600, DS `num` and `sub`; AVERAGE
//! and MAX archives of 5 min × 1440, 30 min × 1008, 2 h × 1344 and
//! 1 day × 2500) and `data/<id>_s.rrd`, the 1-minute file GF keeps for
//! the `sh`/`s4h`/`s8h`/`sn`/`sd`/`s3d`/`sc` ranges (step 60, heartbeat
//! 120, AVERAGE and MAX of 1 min × 4800, i.e. 80 hours).
//!
//! Both files are created on a graph's first POST (the short one also on
//! its first later POST or short-range draw, for graphs made before it
//! existed). A graph in `derive` mode at creation gets DERIVE data sources
//! (`min 0`), as GF does; changing the mode later does not convert files.
//!
//! Invariants: a path is always built from the numeric id, never a name.
//! Deliberately not here: the daemon path ([`crate::writes`]).

use std::path::{Path, PathBuf};

use crate::WebError;

/// Which of a graph's two files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// `<id>.rrd`, step 300.
    FiveMinute,
    /// `<id>_s.rrd`, step 60.
    OneMinute,
}

pub fn path(rrd_dir: &Path, id: i64, r: Resolution) -> PathBuf {
    match r {
        Resolution::FiveMinute => rrd_dir.join(format!("{id}.rrd")),
        Resolution::OneMinute => rrd_dir.join(format!("{id}_s.rrd")),
    }
}

/// Creates the file unless it exists. `start` is the first update's time.
pub fn ensure(path: &Path, r: Resolution, derive: bool, start: i64) -> Result<(), WebError> {
    if path.exists() {
        return Ok(());
    }
    let (step, heartbeat, archives): (u64, u64, &[(u32, u32)]) = match r {
        Resolution::FiveMinute => (300, 600, &[(1, 1440), (6, 1008), (24, 1344), (288, 2500)]),
        Resolution::OneMinute => (60, 120, &[(1, 4800)]),
    };
    let dst = if derive { format!("DERIVE:{heartbeat}:0:U") } else { format!("GAUGE:{heartbeat}:U:U") };
    let mut defs = vec![format!("DS:num:{dst}"), format!("DS:sub:{dst}")];
    for cf in ["AVERAGE", "MAX"] {
        for (steps, rows) in archives {
            defs.push(format!("RRA:{cf}:0.5:{steps}:{rows}"));
        }
    }
    let opts = rrd_engine::create::CreateOptions {
        // GF starts 10 s before the first update, as rrdcreate's default.
        start: Some(start - 10),
        step_secs: Some(step),
        no_overwrite: true,
        template: None,
        sources: Vec::new(),
    };
    match rrd_engine::create::create(path, &opts, &defs, start) {
        Ok(_) => Ok(()),
        // Two first POSTs racing: the other one made it.
        Err(_) if path.exists() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The update argument GF's worker writes: `time:num:sub`, `U` for a
/// `sub` without a previous number. DS order is `num`, `sub` in both
/// files, so no template is needed (rrdcached takes none).
pub fn update_arg(time_secs: i64, number: i64, sub: Option<i64>) -> String {
    let sub = sub.map_or_else(|| "U".to_string(), |s| s.to_string());
    format!("{time_secs}:{number}:{sub}")
}

/// Whether an update error only says the file already holds this second
/// (GF logs and drops those: two POSTs in one second keep the first value
/// in the file and the latest in the metadata).
pub fn is_same_second(message: &str) -> bool {
    message.contains("minimum one second step")
}

/// Writes one update with the engine (the embedded path).
pub fn update_direct(path: &Path, arg: &str) -> Result<(), WebError> {
    let opts = rrd_engine::update::UpdateOptions { template: None, skip_past_updates: false };
    let report = rrd_engine::update::update_file(path, &[arg.to_string()], &opts, false)?;
    match report.error {
        Some(e) if is_same_second(&e.to_string()) => Ok(()),
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Removes both files of a graph; missing files are not an error.
pub fn remove(rrd_dir: &Path, id: i64) -> Result<(), WebError> {
    for r in [Resolution::FiveMinute, Resolution::OneMinute] {
        match std::fs::remove_file(path(rrd_dir, id, r)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_files_have_gf_schemas() {
        let dir = tempfile::tempdir().unwrap();
        let long = path(dir.path(), 7, Resolution::FiveMinute);
        let short = path(dir.path(), 7, Resolution::OneMinute);
        assert!(long.ends_with("7.rrd") && short.ends_with("7_s.rrd"));
        ensure(&long, Resolution::FiveMinute, false, 1_700_000_000).unwrap();
        ensure(&short, Resolution::OneMinute, true, 1_700_000_000).unwrap();
        let l = rrd_engine::Rrd::open(&long, false).unwrap();
        let s = rrd_engine::Rrd::open(&short, false).unwrap();
        assert_eq!((l.header.pdp_step, s.header.pdp_step), (300, 60));
        assert_eq!((l.header.rra.len(), s.header.rra.len()), (8, 2));
        // Readers hold a read lock until closed; the writer needs them gone.
        drop((l, s));
        update_direct(&long, &update_arg(1_700_000_100, 5, None)).unwrap();
        // The same second again is dropped, not an error.
        update_direct(&long, &update_arg(1_700_000_100, 6, Some(1))).unwrap();
        assert!(update_direct(&long, "1700000200:x:1").is_err());
        remove(dir.path(), 7).unwrap();
        assert!(!long.exists() && !short.exists());
        remove(dir.path(), 7).unwrap();
    }
}
