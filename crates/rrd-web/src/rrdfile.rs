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
        source_root: Default::default(),
        target_root: Default::default(),
    };
    match rrd_engine::create::create(path, &opts, &defs, start) {
        Ok(_) => Ok(()),
        // Two first POSTs racing: the other one made it.
        Err(_) if path.exists() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// One value for both data sources at one second, as GF's worker writes
/// it: `num`, and `sub` (`U` for a `sub` without a previous number). DS
/// order is `num`, `sub` in both files, so no template is needed
/// (rrdcached takes none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Update {
    pub time: i64,
    pub number: i64,
    pub sub: Option<i64>,
}

impl Update {
    /// The update argument, `time:num:sub`.
    pub fn arg(&self) -> String {
        let sub = self.sub.map_or_else(|| "U".to_string(), |s| s.to_string());
        format!("{}:{}:{sub}", self.time, self.number)
    }
}

/// What a file did with one [`Update`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Written,
    /// The file's last update is this very second: GF logs and drops
    /// those (two POSTs in one second keep the first value in the file
    /// and the latest in the metadata).
    SameSecond,
}

/// Decides an update at `time` against a file whose last update is at
/// `last`: `Ok(None)` to go ahead, `Ok(Some(SameSecond))` for the one
/// refusal that is not an error, [`WebError::TooEarly`] for any earlier
/// time (the file keeps its data and the caller must say so).
pub fn judge(time: i64, last: i64) -> Result<Option<Outcome>, WebError> {
    match time.cmp(&last) {
        std::cmp::Ordering::Greater => Ok(None),
        std::cmp::Ordering::Equal => Ok(Some(Outcome::SameSecond)),
        std::cmp::Ordering::Less => Err(WebError::TooEarly { time, last }),
    }
}

/// The two times of an "illegal attempt to update using time X when last
/// update time is Y" refusal (rrdtool's, rrdcached's and rrdscale's
/// wording; rrdcached prints them with decimals), as whole seconds.
/// `None` for any other message.
pub fn refused_times(message: &str) -> Option<(i64, i64)> {
    fn number_after(s: &str, key: &str) -> Option<f64> {
        let rest = &s[s.find(key)? + key.len()..];
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).unwrap_or(rest.len());
        rest[..end].parse::<f64>().ok().filter(|v| v.is_finite())
    }
    let time = number_after(message, "illegal attempt to update using time ")?;
    let last = number_after(message, " when last update time is ")?;
    Some((time.floor() as i64, last.floor() as i64))
}

/// The file's last update time (one header read).
pub fn last_update(path: &Path) -> Result<i64, WebError> {
    Ok(open_waiting(path, false)?.header.live().last_up)
}

/// How long an embedded write waits for a file lock held elsewhere.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Opens and locks `path` as [`rrd_engine::Rrd::open`] does, but waits (up
/// to [`LOCK_WAIT`]) for a lock held elsewhere instead of failing at once:
/// a POST is one value a client expects stored, not a command a user can
/// rerun. Locks are held briefly by whoever holds them: an `rrdtool` run
/// by hand, or this very process, whose closed descriptor lives on in a
/// child between its fork and exec (the lock belongs to the open file
/// description, which the child shares until exec closes it).
fn open_waiting(path: &Path, write: bool) -> Result<rrd_engine::Rrd<std::fs::File>, WebError> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match rrd_engine::Rrd::open(path, write) {
            Err(rrd_engine::Error::Locked) if std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            other => return Ok(other?),
        }
    }
}

/// Writes one update with the engine (the embedded path). The file's own
/// last update time decides a refusal, before anything is written: the
/// same second is [`Outcome::SameSecond`], an earlier one
/// [`WebError::TooEarly`].
pub fn update_direct(path: &Path, u: &Update) -> Result<Outcome, WebError> {
    let mut rrd = open_waiting(path, true)?;
    if let Some(outcome) = judge(u.time, rrd.header.live().last_up)? {
        return Ok(outcome);
    }
    let opts = rrd_engine::update::UpdateOptions { template: None, skip_past_updates: false };
    let now = rrd_engine::update::Now::system();
    let report = rrd_engine::update::update_rrd(&mut rrd, &[u.arg()], &opts, false, now)?;
    match report.error {
        Some(e) => Err(e.into()),
        None => Ok(Outcome::Written),
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
        assert_eq!((l.header.pdp_step(), s.header.pdp_step()), (300, 60));
        assert_eq!((l.header.rra().len(), s.header.rra().len()), (8, 2));
        // Readers hold a read lock until closed; the writer needs them gone.
        drop((l, s));
        let at = |time, number, sub| Update { time, number, sub };
        assert_eq!(update_direct(&long, &at(1_700_000_100, 5, None)).unwrap(), Outcome::Written);
        // The same second again is dropped, not an error.
        assert_eq!(update_direct(&long, &at(1_700_000_100, 6, Some(1))).unwrap(), Outcome::SameSecond);
        // An earlier second is an error that names both times.
        match update_direct(&long, &at(1_700_000_099, 6, Some(1))) {
            Err(WebError::TooEarly { time, last }) => {
                assert_eq!((time, last), (1_700_000_099, 1_700_000_100))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(last_update(&long).unwrap(), 1_700_000_100);
        remove(dir.path(), 7).unwrap();
        assert!(!long.exists() && !short.exists());
        remove(dir.path(), 7).unwrap();
    }

    #[test]
    fn a_write_waits_for_a_lock_held_briefly_elsewhere_and_names_one_held_too_long() {
        use rrd_engine::rrd::{lock_file, Locking};
        let dir = tempfile::tempdir().unwrap();
        let file = path(dir.path(), 3, Resolution::OneMinute);
        ensure(&file, Resolution::OneMinute, false, 1_700_000_000).unwrap();
        // Another open file description holds the write lock for 200 ms.
        let holder = std::fs::OpenOptions::new().read(true).write(true).open(&file).unwrap();
        lock_file(&holder, &file, true, false, Locking::Try).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(holder);
        });
        let at = |time| Update { time, number: 1, sub: None };
        let started = std::time::Instant::now();
        assert_eq!(update_direct(&file, &at(1_700_000_060)).unwrap(), Outcome::Written);
        assert!(started.elapsed() >= std::time::Duration::from_millis(150), "it waited for the lock");
        release.join().unwrap();
        assert_eq!(last_update(&file).unwrap(), 1_700_000_060);
        // Held past the wait: the POST fails with rrdtool's words.
        let holder = std::fs::OpenOptions::new().read(true).write(true).open(&file).unwrap();
        lock_file(&holder, &file, true, false, Locking::Try).unwrap();
        match update_direct(&file, &at(1_700_000_120)) {
            Err(WebError::Engine(rrd_engine::Error::Locked)) => {}
            other => panic!("{other:?}"),
        }
        drop(holder);
        assert_eq!(last_update(&file).unwrap(), 1_700_000_060, "the refused value was not written");
    }

    #[test]
    fn refusals_are_read_by_their_numbers() {
        let engine = "illegal attempt to update using time 1700000100 when last update time is 1700000100 \
                      (minimum one second step)";
        assert_eq!(refused_times(engine), Some((1_700_000_100, 1_700_000_100)));
        let cached = "rrdcached@unix:/x: illegal attempt to update using time 1700000000.000000 when last \
                      update time is 253402300799.000000 (minimum one second step)";
        assert_eq!(refused_times(cached), Some((1_700_000_000, 253_402_300_799)));
        assert_eq!(refused_times("No such file or directory"), None);
        assert_eq!(judge(5, 5).unwrap(), Some(Outcome::SameSecond));
        assert_eq!(judge(6, 5).unwrap(), None);
        assert!(matches!(judge(4, 5), Err(WebError::TooEarly { time: 4, last: 5 })));
    }
}
