//! Power loss, simulated: every acknowledged update survives any power
//! failure once the daemon has restarted (journal replay) and written
//! everything.
//!
//! A run drives the daemon's parts in one thread, as its connections,
//! scheduler and flush workers drive them: updates go to the cache and the
//! journal (acknowledged when the append returned under `--sync always`;
//! under `every:MS`, when it was written, with a sync whenever MS ms of
//! model time have passed), flushes write batches of files
//! (`flusher::flush_batch`, the workers' code), the journal rotates and
//! drops the segments no pending value needs (the scheduler's rule).
//! Every file operation is recorded (`rrd_testkit::power::PowerLog`): the
//! journal's through `rrd_journal::fault::RecordingIo`, the RRD files'
//! through the batch updater's `FaultHook`. Then, at every crash point (a
//! prefix of the log) the durable images a kernel could leave are built
//! (writes since the file's last sync kept, lost or torn per 512-byte
//! sector; names durable only after a directory sync) and each is
//! recovered as a restart recovers it: `rrd_journal::replay`,
//! `replay::apply`, a flush of everything. Every acknowledged value must
//! then be in its file (read with the engine's `fetch`, as a client reads
//! it): under `always` every acknowledgement before the crash, under
//! `every:MS` those acknowledged more than MS ms of model time before it.
//!
//! Modes: exhaustive (two files, a few values, every subset of the
//! undecided sectors and names at every crash point up to a bound) and
//! random (more files and values; seeded: the seed is printed, and
//! `RRDSCALE_POWER_SEED=N` replays it; `RRDSCALE_POWER_SCALE=K` multiplies
//! the work, `scripts/crash-images.sh` runs a long campaign).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rrd_daemon::cache::{Key, Side};
use rrd_daemon::config::Config;
use rrd_daemon::flusher::{self, UndoLog};
use rrd_daemon::journaler::Journaler;
use rrd_daemon::replay;
use rrd_daemon::state::Daemon;
use rrd_engine::batch::{BatchUpdater, FaultHook};
use rrd_engine::fetch::fetch;
use rrd_engine::Rrd;
use rrd_format::Cf;
use rrd_journal::fault::{PowerLog, PowerOp, RecordingIo};
use rrd_journal::io::{JournalIo, MappedIo, OsIo};
use rrd_journal::{Journal, Record, SyncPolicy};
use rrd_testkit::power::{self, Choose, Files};
use rrd_testkit::Rng;

mod common;

const T0: i64 = 1_000_000_200;
const STEP: i64 = 300;
/// Model time between two rounds of updates.
const TICK_MS: u64 = 20;

/// Two gauges and three archives: the live header (744 bytes at offset
/// 728) spans two sectors, so a power loss can tear it.
fn make(path: &Path) {
    common::create_rrd(
        path,
        T0,
        &[
            "DS:a:GAUGE:600:U:U",
            "DS:b:GAUGE:600:U:U",
            "RRA:AVERAGE:0.5:1:120",
            "RRA:MAX:0.5:3:60",
            "RRA:LAST:0.5:2:60",
        ],
    );
}

fn values(file: usize, k: i64) -> (f64, f64) {
    ((file as i64 * 1000 + k) as f64, ((k * 7) % 17) as f64)
}

fn arg(file: usize, k: i64) -> String {
    let (a, b) = values(file, k);
    format!("{}:{a}:{b}", T0 + STEP * k)
}

/// The batch updater's writes and syncs, recorded.
struct Recorder(Arc<PowerLog>);

impl FaultHook for Recorder {
    fn write(&self, _: &Path, _: u64, len: usize) -> std::io::Result<usize> {
        Ok(len)
    }
    fn written(&self, path: &Path, offset: u64, bytes: &[u8]) {
        self.0.push(PowerOp::Write { path: path.to_path_buf(), offset, bytes: bytes.to_vec() });
    }
    fn sync(&self, path: &Path) -> std::io::Result<()> {
        self.0.push(PowerOp::Sync(path.to_path_buf()));
        Ok(())
    }
}

impl replay::RestoreObserver for Recorder {
    fn written(&self, path: &Path, offset: u64, bytes: &[u8]) {
        self.0.push(PowerOp::Write { path: path.to_path_buf(), offset, bytes: bytes.to_vec() });
    }
    fn sync(&self, path: &Path) {
        self.0.push(PowerOp::Sync(path.to_path_buf()));
    }
}

/// The flushes' undo and completion records, into the run's journal (as
/// the daemon's `Journaler` takes them: written, and synced for an undo).
struct JournalUndo(Arc<Mutex<Journal>>);

fn frames(records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        r.encode_frame(&mut out).unwrap();
    }
    out
}

impl UndoLog for JournalUndo {
    fn append_durable(&self, records: &[Record]) -> Result<(), String> {
        let mut j = self.0.lock().unwrap();
        j.write_encoded(&frames(records)).and_then(|()| j.sync()).map_err(|e| e.to_string())
    }
    fn append(&self, records: &[Record]) {
        let _ = self.0.lock().unwrap().write_encoded(&frames(records));
    }
}

#[derive(Clone, Copy, Debug)]
enum Policy {
    Always,
    Every(u64),
}

#[derive(Clone, Copy, Debug)]
struct Shape {
    files: usize,
    rounds: usize,
    policy: Policy,
    segments: Segments,
}

/// How the journal writes its segments (`rrd_journal::io`).
#[derive(Clone, Copy, Debug)]
enum Segments {
    /// `write(2)` at the end (`OsIo`, the fallback).
    Written,
    /// Stores through a mapping of reserved windows (`MappedIo`, the
    /// default), with one-page windows so that runs cross many.
    Mapped,
}

/// A page: the smallest window `MappedIo` takes.
const WINDOW: u64 = 4096;

impl Segments {
    /// The `i`th campaign's: both, in turn.
    fn nth(i: usize) -> Segments {
        if i.is_multiple_of(2) {
            Segments::Mapped
        } else {
            Segments::Written
        }
    }

    fn recording(self, log: &Arc<PowerLog>) -> Arc<dyn JournalIo> {
        match self {
            Segments::Written => Arc::new(RecordingIo::new(log.clone())),
            Segments::Mapped => Arc::new(RecordingIo::mapped(log.clone(), WINDOW)),
        }
    }

    fn real(self) -> Arc<dyn JournalIo> {
        match self {
            Segments::Written => Arc::new(OsIo),
            Segments::Mapped => Arc::new(MappedIo::with_window(WINDOW)),
        }
    }
}

struct Ack {
    file: usize,
    k: i64,
    /// Log length when the acknowledgement was given.
    at: usize,
    ms: u64,
}

/// What a run left: the initial durable files, the log, the
/// acknowledgements, and model time along the log.
struct Run {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    journal_dir: PathBuf,
    rrds: Vec<PathBuf>,
    initial: Files,
    ops: Vec<PowerOp>,
    acks: Vec<Ack>,
    /// (log length, model time from there on).
    times: Vec<(usize, u64)>,
    shape: Shape,
    /// Recoveries that found an unused tail (reserved zeros after the last
    /// record): that mapped segments were crashed where it matters.
    unused_tails: std::cell::Cell<usize>,
}

fn tempdir() -> tempfile::TempDir {
    // Thousands of recoveries sync their files: on tmpfs that costs nothing.
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(t) = tempfile::tempdir_in(shm) {
            return t;
        }
    }
    tempfile::tempdir().unwrap()
}

// A simulation loop: one model step per branch.
#[allow(clippy::too_many_lines)]
fn run(shape: Shape, undo: bool, rng: &mut Rng) -> Run {
    let tmp = tempdir();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let journal_dir = base.join("journal");
    std::fs::create_dir_all(&journal_dir).unwrap();
    let rrds: Vec<PathBuf> = (0..shape.files).map(|i| base.join(format!("f{i}.rrd"))).collect();
    for p in &rrds {
        make(p);
    }
    let initial = power::read_tree(&base).unwrap();
    let log = Arc::new(PowerLog::default());
    let policy = match shape.policy {
        Policy::Always => SyncPolicy::Always,
        // The model decides when to sync.
        Policy::Every(_) => SyncPolicy::None,
    };
    let journal = Journal::open_with(&journal_dir, policy, shape.segments.recording(&log)).unwrap();
    let journal = Arc::new(Mutex::new(journal));
    let config = Config { base_dir: Some(base.clone()), write_interval_secs: 3600, ..Default::default() };
    let daemon = Daemon::new(config, Journaler::disabled());
    let cache = &daemon.cache;
    if undo {
        let _ = cache.undo_log.set(Arc::new(JournalUndo(journal.clone())));
    }
    let mut updater = BatchUpdater::new(16);
    updater.keep_state_on_write_error = true;
    updater.faults = Some(Arc::new(Recorder(log.clone())));
    let mut acks = Vec::new();
    let mut times = vec![(0, 0)];
    let mut next_k = vec![1i64; shape.files];
    let mut now = 0u64;
    let mut last_sync = 0u64;
    let keys: Vec<String> = rrds.iter().map(|p| p.display().to_string()).collect();
    for _round in 0..shape.rounds {
        now += TICK_MS;
        times.push((log.len(), now));
        if let Policy::Every(ms) = shape.policy {
            if now - last_sync >= ms {
                journal.lock().unwrap().sync().unwrap();
                last_sync = now;
            }
        }
        // Updates: one or two values for some files, one append (a group).
        let mut records = Vec::new();
        let mut batch_acks = Vec::new();
        for f in 0..shape.files {
            if rng.below(3) == 0 {
                continue;
            }
            let n = 1 + rng.below(2) as i64;
            let args: Vec<String> = (0..n).map(|i| arg(f, next_k[f] + i)).collect();
            let seq = journal.lock().unwrap().seq();
            common::add_pending(&daemon, &keys[f], &args, seq);
            for i in 0..n {
                batch_acks.push((f, next_k[f] + i));
            }
            next_k[f] += n;
            records.push(Record { path: keys[f].clone(), args });
        }
        if !records.is_empty() {
            match shape.policy {
                Policy::Always => journal.lock().unwrap().append(&records).unwrap(),
                Policy::Every(_) => journal.lock().unwrap().write_encoded(&frames(&records)).unwrap(),
            }
            log.mark(acks.len() as u64);
            for (file, k) in batch_acks {
                acks.push(Ack { file, k, at: log.len(), ms: now });
            }
        }
        // A flush of some files (a worker's batch), now and then.
        if rng.below(3) == 0 {
            let mut batch: Vec<Key> = Vec::new();
            for (f, key) in keys.iter().enumerate() {
                if rng.below(4) == 0 && f != 0 {
                    continue;
                }
                let mut shard = cache.shard(key);
                if let Some(e) = shard.get_mut(key.as_str()) {
                    if cache.queue_flush(&key.as_str().into(), e, Side::Tail) {
                        batch.push(key.as_str().into());
                    }
                }
            }
            if !batch.is_empty() {
                let taken = cache.take_batch(flusher::BATCH_MAX);
                flusher::flush_batch(cache, &mut updater, taken);
            }
        }
        // The scheduler: rotate now and then, drop what no value needs.
        let mut j = journal.lock().unwrap();
        if rng.below(4) == 0 {
            j.rotate().unwrap();
            if matches!(shape.policy, Policy::Every(_)) {
                last_sync = now;
            }
        }
        let needed = cache.oldest_needed_seq(j.seq());
        let oldest = rrd_journal::segments(&journal_dir).unwrap()[0];
        if needed > oldest {
            // As the daemon's journal thread: synced first (the flushes'
            // completion records), then the unlinks and the directory sync.
            if undo {
                j.sync().unwrap();
            }
            j.remove_through(needed - 1).unwrap();
        }
    }
    let ops = log.ops();
    Run {
        _tmp: tmp,
        base,
        journal_dir,
        rrds,
        initial,
        ops,
        acks,
        times,
        shape,
        unused_tails: Default::default(),
    }
}

impl Run {
    fn time_at(&self, cut: usize) -> u64 {
        self.times.iter().rev().find(|(len, _)| *len <= cut).map_or(0, |(_, t)| *t)
    }

    /// The acknowledgements a crash after `ops[..cut]` must keep.
    fn required(&self, cut: usize) -> Vec<(usize, i64)> {
        let crash_ms = self.time_at(cut);
        self.acks
            .iter()
            .filter(|a| a.at <= cut)
            .filter(|a| match self.shape.policy {
                Policy::Always => true,
                Policy::Every(ms) => crash_ms - a.ms > ms,
            })
            .map(|a| (a.file, a.k))
            .collect()
    }

    /// Recovers `image` as a restart does, then checks `required`.
    /// Returns the number of values checked, or what is wrong.
    fn recover_and_check(&self, image: &Files, required: &[(usize, i64)]) -> Result<usize, String> {
        self.recover(image, None)?;
        self.check(required)
    }

    /// Recovers `image` as a restart does: the journal replayed (a torn
    /// tail cut), interrupted flushes undone, a new journal segment taking
    /// the recovery's own undo and completion records, everything written,
    /// then the segments no value needs removed (synced first, as the
    /// daemon's journal thread does). With `log`, every file operation
    /// after the replay's cut is recorded there, to crash the recovery in
    /// turn; the files as they were before them are returned.
    fn recover(&self, image: &Files, log: Option<&Arc<PowerLog>>) -> Result<Option<Files>, String> {
        power::write_tree(&self.base, image).map_err(|e| format!("materializing: {e}"))?;
        let report = rrd_journal::replay(&self.journal_dir).map_err(|e| format!("replay failed: {e}"))?;
        if report.unused_tail.is_some() {
            self.unused_tails.set(self.unused_tails.get() + 1);
        }
        let before = match log {
            Some(_) => Some(power::read_tree(&self.base).map_err(|e| format!("reading: {e}"))?),
            None => None,
        };
        let io = match log {
            Some(l) => self.shape.segments.recording(l),
            None => self.shape.segments.real(),
        };
        let journal = Journal::open_with(&self.journal_dir, SyncPolicy::Always, io)
            .map_err(|e| format!("opening the journal: {e}"))?;
        let journal = Arc::new(Mutex::new(journal));
        let config = Config { base_dir: Some(self.base.clone()), ..Default::default() };
        let daemon = Daemon::new(config, Journaler::disabled());
        let _ = daemon.cache.undo_log.set(Arc::new(JournalUndo(journal.clone())));
        let recorder = log.map(|l| Recorder(l.clone()));
        let first = report.segments.first().copied().unwrap_or(1);
        replay::apply_with_hook(&daemon, &report, first, recorder.as_ref().map(|r| r as _));
        let mut updater = BatchUpdater::new(16);
        updater.faults = recorder.map(|r| Arc::new(r) as _);
        flusher::enqueue_all(&daemon.cache);
        // Stopping: take_batch returns an empty batch instead of waiting.
        daemon.cache.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        loop {
            let batch = daemon.cache.take_batch(8);
            if batch.is_empty() {
                break;
            }
            flusher::flush_batch(&daemon.cache, &mut updater, batch);
        }
        let mut j = journal.lock().unwrap();
        let needed = daemon.cache.oldest_needed_seq(j.seq());
        if rrd_journal::segments(&self.journal_dir).map_err(|e| e.to_string())?.first() < Some(&needed) {
            j.sync().map_err(|e| format!("journal sync: {e}"))?;
            j.remove_through(needed - 1).map_err(|e| format!("removing segments: {e}"))?;
        }
        Ok(before)
    }

    /// Checks that every value of `required` is in its file, as a client
    /// reads it. Returns the number of values checked, or what is wrong.
    fn check(&self, required: &[(usize, i64)]) -> Result<usize, String> {
        let mut checked = 0;
        for (f, path) in self.rrds.iter().enumerate() {
            let want: std::collections::BTreeSet<i64> =
                required.iter().filter(|(rf, _)| *rf == f).map(|(_, k)| *k).collect();
            let rrd = Rrd::open(path, false).map_err(|e| format!("f{f}: {e}"))?;
            let last = want.iter().max().copied().unwrap_or(0);
            let end = T0 + STEP * (last + 3);
            let avg =
                fetch(&rrd, Cf::Average, T0 - STEP, end, STEP as u64).map_err(|e| format!("f{f}: {e}"))?;
            for &k in &want {
                let t = T0 + STEP * k;
                let i = (0..avg.row_count()).find(|&i| avg.row_time(i) == t);
                let got = i.map(|i| avg.row(i).to_vec());
                let (a, b) = values(f, k);
                if got.as_deref() != Some(&[a, b][..]) {
                    return Err(format!(
                        "f{f}: acknowledged value {k} ({}) missing: AVERAGE row at {t} is {got:?}, last update {}",
                        arg(f, k),
                        rrd.header.live().last_up
                    ));
                }
                checked += 1;
            }
            // A MAX row whose three values were all acknowledged is their maximum.
            let max = fetch(&rrd, Cf::Maximum, T0 - STEP, end, 3 * STEP as u64)
                .map_err(|e| format!("f{f}: {e}"))?;
            if max.step_secs == 3 * STEP as u64 {
                for i in 0..max.row_count() {
                    let t = max.row_time(i);
                    let ks: Vec<i64> = (0..3).map(|j| (t - j * STEP - T0) / STEP).collect();
                    if ks.iter().all(|k| *k >= 1 && want.contains(k)) {
                        let m = ks
                            .iter()
                            .map(|&k| values(f, k))
                            .fold((f64::MIN, f64::MIN), |x, v| (x.0.max(v.0), x.1.max(v.1)));
                        if max.row(i) != [m.0, m.1] {
                            return Err(format!(
                                "f{f}: MAX row at {t} is {:?}, the acknowledged values give {m:?}",
                                max.row(i)
                            ));
                        }
                        checked += 1;
                    }
                }
            }
        }
        Ok(checked)
    }
}

#[derive(Default, Debug)]
struct Tally {
    runs: usize,
    unused_tails: usize,
    crash_points: usize,
    images: usize,
    values: usize,
    failures: Vec<String>,
}

struct Campaign {
    label: &'static str,
    shape: Shape,
    seed: u64,
    choose: Choose,
    /// Random crash points per run (`None`: every one).
    cuts: Option<usize>,
    /// Flushes journal their undo records (the daemon's behaviour).
    undo: bool,
}

fn campaign(c: Campaign, tally: &mut Tally) {
    let Campaign { label, shape, seed, choose, cuts: cuts_per_run, undo } = c;
    let mut rng = Rng::new(seed);
    let r = run(shape, undo, &mut rng);
    tally.runs += 1;
    let n = r.ops.len();
    let cuts: Vec<usize> = match cuts_per_run {
        None => (0..=n).collect(),
        Some(c) => {
            let mut v: Vec<usize> = (0..c).map(|_| rng.below(n as u64 + 1) as usize).collect();
            v.push(n);
            v.sort_unstable();
            v.dedup();
            v
        }
    };
    for cut in cuts {
        // Marks do no I/O: a crash right before one is the same as after.
        if cut > 0 && matches!(r.ops[cut - 1], PowerOp::Mark(_)) && cut < n {
            continue;
        }
        let point = power::crash_point(&r.ops, cut);
        let required = r.required(cut);
        tally.crash_points += 1;
        let mut img_rng = Rng::new(rng.next_u64());
        let mut image_no = 0usize;
        power::images(&r.initial, &r.ops, &point, choose, &mut img_rng, |image| {
            image_no += 1;
            match r.recover_and_check(&image, &required) {
                Ok(v) => tally.values += v,
                Err(e) => {
                    if tally.failures.len() < 20 {
                        tally.failures.push(format!(
                            "{label} seed {seed} {shape:?} crash after op {cut}/{n} ({} undecided units), image {image_no}: {e}\n  last ops: {}",
                            point.choices(),
                            describe(&r.ops[cut.saturating_sub(6)..cut], &r.base)
                        ));
                    }
                }
            }
            tally.images += 1;
        });
    }
    tally.unused_tails += r.unused_tails.get();
}

/// A power loss during the recovery from a power loss: for some crash
/// points of a run (those inside a flush first) and some of their images,
/// the recovery is recorded, crashed at its own crash points, and each of
/// those images recovered again; the first crash's acknowledgements must
/// all be there.
fn second_crash_campaign(c: Campaign, first_images: usize, tally: &mut Tally) {
    let Campaign { label, shape, seed, choose, cuts: cuts_per_run, undo } = c;
    let mut rng = Rng::new(seed);
    let r = run(shape, undo, &mut rng);
    tally.runs += 1;
    let n = r.ops.len();
    // Crash points inside a flush: after a data-file write not yet synced.
    let mut cuts: Vec<usize> = (1..=n)
        .filter(|&cut| matches!(&r.ops[cut - 1], PowerOp::Write { path, .. } if !path.starts_with(&r.journal_dir)))
        .collect();
    rng.shuffle(&mut cuts);
    cuts.truncate(first_images);
    for cut in cuts {
        let point = power::crash_point(&r.ops, cut);
        let required = r.required(cut);
        let mut firsts = Vec::new();
        power::images(&r.initial, &r.ops, &point, Choose::Random { samples: 0 }, &mut rng, |i| {
            firsts.push(i)
        });
        // Everything lost, everything kept, and one random image.
        let bits: Vec<bool> = (0..point.choices()).map(|_| rng.next_u64() & 1 == 1).collect();
        firsts.push(power::image(&r.initial, &r.ops, &point, |k| bits[k]));
        for first in firsts {
            let log = Arc::new(PowerLog::default());
            let recorded =
                r.recover(&first, Some(&log)).and_then(|before| r.check(&required).map(|_| before));
            let initial = match recorded {
                Ok(before) => before.expect("recorded"),
                Err(e) => {
                    tally.failures.push(format!("{label} seed {seed} first crash at {cut}/{n}: {e}"));
                    continue;
                }
            };
            let ops = log.ops();
            let m = ops.len();
            let mut second: Vec<usize> = (0..=m).collect();
            rng.shuffle(&mut second);
            second.truncate(cuts_per_run.unwrap_or(m + 1));
            for cut2 in second {
                let point2 = power::crash_point(&ops, cut2);
                tally.crash_points += 1;
                power::images(&initial, &ops, &point2, choose, &mut rng, |image| {
                    tally.images += 1;
                    match r.recover_and_check(&image, &required) {
                        Ok(v) => tally.values += v,
                        Err(e) if tally.failures.len() < 20 => tally.failures.push(format!(
                            "{label} seed {seed} first crash at {cut}/{n}, second at {cut2}/{m} ({} undecided units): {e}\n  last ops: {}",
                            point2.choices(),
                            describe(&ops[cut2.saturating_sub(6)..cut2], &r.base)
                        )),
                        Err(_) => {}
                    }
                });
            }
        }
    }
}

fn describe(ops: &[PowerOp], base: &Path) -> String {
    let name = |p: &Path| p.strip_prefix(base).unwrap_or(p).display().to_string();
    ops.iter()
        .map(|op| match op {
            PowerOp::Create(p) => format!("create {}", name(p)),
            PowerOp::Write { path, offset, bytes } => {
                format!("write {}@{offset}+{}", name(path), bytes.len())
            }
            PowerOp::SetLen { path, len } => format!("truncate {} {len}", name(path)),
            PowerOp::Sync(p) => format!("sync {}", name(p)),
            PowerOp::SyncDir(p) => format!("syncdir {}", name(p)),
            PowerOp::Remove(p) => format!("unlink {}", name(p)),
            PowerOp::Mark(m) => format!("ack#{m}"),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn seed_from_env(default: u64) -> u64 {
    std::env::var("RRDSCALE_POWER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn scale() -> usize {
    std::env::var("RRDSCALE_POWER_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1)
}

fn finish(label: &str, started: std::time::Instant, tally: Tally) {
    println!(
        "{label}: {} runs, {} crash points, {} images ({} with an unused tail), {} acknowledged values verified, {} failures, {:.1} s",
        tally.runs,
        tally.crash_points,
        tally.images,
        tally.unused_tails,
        tally.values,
        tally.failures.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(tally.failures.is_empty(), "{label}: acknowledged values lost:\n{}", tally.failures.join("\n"));
    assert!(tally.values > 0);
}

/// Two files, a handful of values: at every crash point, every subset of
/// the undecided sectors and names (up to 2^9; past that, random ones).
#[test]
fn exhaustive_small_sync_always() {
    let started = std::time::Instant::now();
    let mut tally = Tally::default();
    let base_seed = seed_from_env(1);
    for i in 0..(2 * scale()) {
        let shape = Shape { files: 2, rounds: 6, policy: Policy::Always, segments: Segments::nth(i) };
        let choose = Choose::Exhaustive { max_units: 9, samples: 24 };
        let seed = base_seed + i as u64;
        let c = Campaign { label: "exhaustive", shape, seed, choose, cuts: None, undo: true };
        campaign(c, &mut tally);
    }
    assert!(tally.unused_tails > 0, "no image of a mapped segment left reserved space to recover");
    finish("exhaustive (sync always)", started, tally);
}

/// Random: more files and rounds, random crash points and images, both
/// policies. The seed is printed; RRDSCALE_POWER_SEED replays it.
#[test]
fn random_images_both_policies() {
    let started = std::time::Instant::now();
    let seed = seed_from_env(random_seed());
    println!("power-loss random seed {seed} (replay: RRDSCALE_POWER_SEED={seed})");
    let mut tally = Tally::default();
    let mut rng = Rng::new(seed);
    for i in 0..(4 * scale()) {
        let policy = if i % 2 == 0 { Policy::Always } else { Policy::Every(100) };
        let shape = Shape { files: 3, rounds: 30, policy, segments: Segments::nth(i / 2) };
        let choose = Choose::Random { samples: 6 };
        let c = Campaign { label: "random", shape, seed: rng.next_u64(), choose, cuts: Some(60), undo: true };
        campaign(c, &mut tally);
    }
    finish("random", started, tally);
}

/// A second power loss while the first one is being recovered from
/// (restoring interrupted flushes' headers, replaying, writing
/// everything, removing segments): nothing acknowledged before the first
/// is lost. Seeded as the random mode.
#[test]
fn a_power_loss_during_recovery_loses_nothing() {
    let started = std::time::Instant::now();
    let seed = seed_from_env(random_seed());
    println!("power loss during recovery, seed {seed} (replay: RRDSCALE_POWER_SEED={seed})");
    let mut tally = Tally::default();
    let mut rng = Rng::new(seed);
    for i in 0..(2 * scale()) {
        let shape = Shape { files: 2, rounds: 12, policy: Policy::Always, segments: Segments::nth(i) };
        let choose = Choose::Random { samples: 4 };
        let c = Campaign {
            label: "during recovery",
            shape,
            seed: rng.next_u64(),
            choose,
            cuts: Some(12),
            undo: true,
        };
        second_crash_campaign(c, 6, &mut tally);
    }
    finish("power loss during recovery", started, tally);
}

fn random_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    t.as_nanos() as u64 ^ u64::from(std::process::id())
}

/// Without the undo records (the flusher as it was): the harness finds the
/// acknowledged values a power loss in the middle of a flush loses (a new
/// live header over old rows, or a torn one). Kept as a check that the
/// harness sees what it is there to see.
#[test]
fn without_undo_records_a_power_loss_mid_flush_loses_acknowledged_values() {
    let mut tally = Tally::default();
    let shape = Shape { files: 2, rounds: 6, policy: Policy::Always, segments: Segments::Mapped };
    let choose = Choose::Exhaustive { max_units: 9, samples: 24 };
    campaign(Campaign { label: "no undo", shape, seed: 1, choose, cuts: None, undo: false }, &mut tally);
    println!("without undo records: {} images, {} failures", tally.images, tally.failures.len());
    assert!(!tally.failures.is_empty(), "the harness no longer sees the header-before-rows loss");
    assert!(tally.failures.iter().any(|f| f.contains("missing")), "{:?}", tally.failures);
}
