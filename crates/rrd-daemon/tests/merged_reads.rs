//! Reads with pending values (what FETCH, INFO and FIRST answer through
//! `reader::with_merged`) equal reads of the file after a real flush: many
//! values spanning 3-, 4- and 12-step consolidations, GAUGE, COUNTER and
//! DERIVE, unknowns and fractional times, with part of the values already
//! in the file and the rest pending.

use std::path::Path;

use rrd_daemon::flusher;
use rrd_daemon::reader::{self, ReadError};
use rrd_daemon::state::Daemon;
use rrd_engine::batch::BatchUpdater;
use rrd_engine::fetch::fetch;
use rrd_engine::info::info_of_header;
use rrd_engine::{Rrd, Store};
use rrd_format::Cf;

mod common;

use common::Scene;

/// A multiple of 300 and of 3600.
const T0: i64 = 999_997_200;

fn make(path: &Path) {
    common::create_rrd(
        path,
        T0,
        &[
            "DS:g:GAUGE:600:U:U",
            "DS:c:COUNTER:600:U:U",
            "DS:d:DERIVE:600:U:U",
            "RRA:AVERAGE:0.5:1:30",
            "RRA:MAX:0.5:3:20",
            "RRA:AVERAGE:0.5:12:10",
            "RRA:MIN:0.5:12:10",
            "RRA:LAST:0.5:4:10",
        ],
    );
}

/// Value number `k`: a time on or off the step, a gauge (sometimes
/// unknown), a growing counter and a derive that goes up and down.
fn value(k: i64) -> String {
    let t = if k % 7 == 3 { format!("{}.25", T0 + 300 * k - 41) } else { (T0 + 300 * k).to_string() };
    let g = if k % 11 == 5 { "U".to_string() } else { format!("{}.{}", k * 3 % 17, k % 10) };
    format!("{t}:{g}:{}:{}", 1000 + k * k * 37, (k % 5) * 100 - 200)
}

/// What UPDATE does to the cache (without the journal).
fn add(daemon: &Daemon, key: &str, values: &[String]) {
    common::add_pending(daemon, key, values, 0);
}

fn flush_everything(daemon: &Daemon, updater: &mut BatchUpdater) {
    flusher::enqueue_all(&daemon.cache);
    loop {
        let keys = daemon.cache.queued();
        if keys.is_empty() {
            break;
        }
        let batch = daemon.cache.take_batch(8);
        flusher::flush_batch(&daemon.cache, updater, batch);
    }
    assert_eq!(daemon.cache.pending_values.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(daemon.cache.pending_bytes.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// Every read the daemon answers, as text: fetches of each CF over a few
/// ranges and resolutions, INFO, and the header facts FIRST uses.
fn everything<S: Store>(rrd: &Rrd<S>, key: &str) -> Result<Vec<String>, ReadError> {
    let mut out = Vec::new();
    let end = T0 + 300 * 80;
    for cf in [Cf::Average, Cf::Maximum, Cf::Minimum, Cf::Last] {
        for (start, stop, step) in
            [(end - 86_400, end, 1), (T0, T0 + 300 * 40, 1), (T0 + 3600, end, 3600), (T0, end + 7200, 900)]
        {
            match fetch(rrd, cf, start, stop, step) {
                Ok(r) => {
                    let bits: Vec<u64> = r.data.iter().map(|v| v.to_bits()).collect();
                    out.push(format!(
                        "{cf:?} {} {} {} {} {bits:?}",
                        r.start, r.end, r.step_secs, r.rra_index
                    ));
                }
                Err(e) => out.push(format!("{cf:?} error {e}")),
            }
        }
    }
    for e in info_of_header(&rrd.header, rrd.layout(), key).map_err(|e| ReadError(e.to_string()))? {
        out.push(format!("{} {:?}", e.key, e.value));
    }
    out.push(format!("{:?}", rrd.header.rra_ptr()));
    Ok(out)
}

fn from_file(key: &str) -> Vec<String> {
    let rrd = Rrd::open(Path::new(key), false).unwrap();
    everything(&rrd, key).unwrap()
}

#[test]
fn merged_reads_equal_the_file_after_a_flush() {
    let Scene { dir: _dir, key, daemon, .. } = Scene::new(make);
    let mut updater = BatchUpdater::new(4);

    // No entry at all: the file as it is.
    let plain = reader::with_merged(&daemon.cache, &key, |rrd| everything(rrd, &key)).unwrap();
    assert_eq!(plain, from_file(&key));

    // Some values written, then many pending across every consolidation.
    add(&daemon, &key, &(1..=17).map(value).collect::<Vec<_>>());
    flush_everything(&daemon, &mut updater);
    add(&daemon, &key, &(18..=75).map(value).collect::<Vec<_>>());
    let merged = reader::with_merged(&daemon.cache, &key, |rrd| {
        // Only the rows a read needs come from the file: the overlay holds
        // what the pending values produced.
        assert!(rrd.store.captured_bytes() > 0);
        everything(rrd, &key)
    })
    .unwrap();
    let before_flush = from_file(&key);
    assert_ne!(merged, before_flush, "the pending values must show in the merged reads");
    // Past the window in which a file's own timestamps cannot be trusted.
    std::thread::sleep(std::time::Duration::from_millis(80));
    flush_everything(&daemon, &mut updater);
    let after_flush = from_file(&key);
    assert_eq!(merged.len(), after_flush.len());
    for (m, f) in merged.iter().zip(&after_flush) {
        assert_eq!(m, f);
    }
    // With nothing pending, the merged read is the file.
    let again = reader::with_merged(&daemon.cache, &key, |rrd| everything(rrd, &key)).unwrap();
    assert_eq!(again, after_flush);
    // The flusher used the header the entry kept, after the first read.
    let s = &daemon.stats;
    assert!(s.headers_kept.load(std::sync::atomic::Ordering::Relaxed) >= 1);
}

/// A file changed behind the daemon's back (here: updated directly) is read
/// again: the kept header is not trusted, and the merged read equals a
/// flush applied to the changed file.
#[test]
fn merged_reads_notice_foreign_writes() {
    let Scene { dir: _dir, base, key, daemon, .. } = Scene::new(make);
    add(&daemon, &key, &(1..=5).map(value).collect::<Vec<_>>());
    std::thread::sleep(std::time::Duration::from_millis(80));
    // rrdtool (or anyone) writes values 1..=3 directly.
    let direct: Vec<String> = (1..=3).map(value).collect();
    rrd_engine::update::update_file(Path::new(&key), &direct, &Default::default(), false).unwrap();
    let merged = reader::with_merged(&daemon.cache, &key, |rrd| everything(rrd, &key)).unwrap();
    // The flush skips nothing here (rrdcached would log the three values as
    // too early and stop); compare with values 4..=5 applied to the file.
    let copy = base.join("copy.rrd");
    std::fs::copy(&key, &copy).unwrap();
    let rest: Vec<String> = (4..=5).map(value).collect();
    rrd_engine::update::update_file(&copy, &rest, &Default::default(), false).unwrap();
    let expected = from_file(&copy.display().to_string());
    assert_eq!(merged.len(), expected.len());
    for (m, e) in merged.iter().zip(&expected) {
        // INFO names the file; everything else must agree.
        if !m.starts_with("filename") {
            assert_eq!(m, e);
        }
    }
}
