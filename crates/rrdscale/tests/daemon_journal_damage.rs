//! A damaged journal costs only the damaged records, end to end: 900
//! acknowledged UPDATEs (`--sync always`) over 3 files, spread over 3
//! journal segments by a small `--segment-bytes`; kill -9; two bytes
//! flipped in the middle of one segment (the newest in one test, the
//! oldest in the other); restart, FLUSH. The real rrdtool then finds every
//! value in the files except those of the records the flipped bytes fell
//! in, no segment was truncated by the restart, the log has the damage at
//! ERROR level, and STATS counts exactly the damaged frames' bytes.

mod daemon_common;

use std::path::{Path, PathBuf};

use daemon_common::{rrdtool, temp_dir, Daemon, Kind, RRDTOOL};

const T0: i64 = 1_000_000_000;
const FILES: usize = 3;
const PER_FILE: usize = 300;

/// The value file `f` is given at `T0 + i`.
fn value(f: usize, i: usize) -> u64 {
    (f as u64 + 1) * 100_000 + i as u64
}

fn create(path: &Path) {
    // One-second steps, a LAST archive of single-PDP rows: the row at
    // `T0 + i` holds the value updated at `T0 + i` (GAUGE), or, when that
    // update is missing, the next one's (it covers the gap).
    rrdtool(&[
        "create",
        path.to_str().unwrap(),
        "-b",
        &T0.to_string(),
        "-s",
        "1",
        "DS:x:GAUGE:10:U:U",
        "RRA:LAST:0.5:1:400",
    ]);
}

/// A journal frame as the test reads it from the segment file.
struct Frame {
    off: usize,
    len: usize,
    path: String,
    args: Vec<String>,
}

/// Walks the frames of an undamaged segment (the format of docs/journal.md),
/// up to the zeros the open segment reserved past its last record.
fn frames(bytes: &[u8]) -> Vec<Frame> {
    assert_eq!(&bytes[..8], b"RRDSJNL1");
    let u16_at = |b: &[u8], p: usize| u16::from_le_bytes([b[p], b[p + 1]]) as usize;
    let mut out = Vec::new();
    let mut off = 16;
    while off < bytes.len() && bytes[off..].iter().any(|&b| b != 0) {
        let len = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
        let p = &bytes[off + 8..off + 8 + len];
        let path_len = u16_at(p, 0);
        let path = String::from_utf8(p[2..2 + path_len].to_vec()).unwrap();
        let mut pos = 2 + path_len;
        let count = u16_at(p, pos);
        pos += 2;
        let mut args = Vec::new();
        for _ in 0..count {
            let l = u16_at(p, pos);
            args.push(String::from_utf8(p[pos + 2..pos + 2 + l].to_vec()).unwrap());
            pos += 2 + l;
        }
        assert_eq!(pos, len, "frame at {off} does not decode");
        out.push(Frame { off, len: 8 + len, path, args });
        off += 8 + len;
    }
    out
}

fn segments(journal: &Path) -> Vec<PathBuf> {
    let mut s: Vec<PathBuf> = std::fs::read_dir(journal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("journal."))
        .collect();
    s.sort();
    s
}

fn stat(stats: &str, name: &str) -> u64 {
    stats
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(": ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in STATS:\n{stats}"))
}

#[derive(Clone, Copy, Debug)]
enum Which {
    Newest,
    Oldest,
}

// One scenario: each step builds on the one before.
#[allow(clippy::too_many_lines)]
fn run(which: Which) {
    assert!(
        Path::new(RRDTOOL).exists(),
        "rrdtool is not installed (apt-get install rrdtool): {RRDTOOL} missing"
    );
    let (_t, dir) = temp_dir();
    let names: Vec<String> = (0..FILES).map(|f| format!("f{f}.rrd")).collect();
    for n in &names {
        create(&dir.join(n));
    }
    // Segments of about 2/5 of the whole journal: two full ones and a
    // newest one holding the last fifth or so.
    let frame_len = 8 + 2 + dir.join(&names[0]).to_str().unwrap().len() + 2 + 2 + "1000000001:100001".len();
    let segment_bytes = (FILES * PER_FILE * frame_len * 2 / 5).max(4096).to_string();
    let extra = ["--sync", "always", "--segment-bytes", segment_bytes.as_str(), "-t", "2"];

    let daemon = Daemon::start(Kind::Ours, &dir, &extra);
    let mut c = daemon.client();
    // Pipelined in rounds of 10 seconds × 3 files; each UPDATE is answered
    // (acknowledged) on its own.
    for round in 0..PER_FILE / 10 {
        for i in round * 10 + 1..=round * 10 + 10 {
            for (f, n) in names.iter().enumerate() {
                c.send(&format!("UPDATE {n} {}:{}", T0 + i as i64, value(f, i)));
            }
        }
        for _ in 0..10 * FILES {
            assert_eq!(c.read_reply(), "0 errors, enqueued 1 value(s).\n");
        }
    }
    drop(c);
    daemon.kill9();

    let journal = dir.join("journal");
    let segs = segments(&journal);
    assert_eq!(segs.len(), 3, "expected 3 journal segments, have {segs:?}");
    let target = match which {
        Which::Newest => segs.last().unwrap().clone(),
        Which::Oldest => segs[0].clone(),
    };
    let mut bytes = std::fs::read(&target).unwrap();
    let layout = frames(&bytes);
    assert!(layout.len() >= 50, "{} records in {}", layout.len(), target.display());
    let total: usize = segs.iter().map(|s| frames(&std::fs::read(s).unwrap()).len()).sum();
    assert_eq!(total, FILES * PER_FILE, "one record per acknowledged UPDATE");
    // What a restart may leave: every record; only the reserved zeros after
    // the newest segment's last record are given back.
    let lengths: Vec<u64> = segs
        .iter()
        .map(|s| frames(&std::fs::read(s).unwrap()).last().map_or(16, |fr| (fr.off + fr.len) as u64))
        .collect();
    // The middle of the records (the open segment reserves zeros past them).
    let mid = layout.last().map_or(16, |fr| fr.off + fr.len) / 2;
    bytes[mid] ^= 0xff;
    bytes[mid + 1] ^= 0x5a;
    std::fs::write(&target, &bytes).unwrap();
    let damaged: Vec<&Frame> = layout
        .iter()
        .filter(|fr| {
            (fr.off..fr.off + fr.len).contains(&mid) || (fr.off..fr.off + fr.len).contains(&(mid + 1))
        })
        .collect();
    assert!(!damaged.is_empty() && damaged.len() <= 2);
    // (file, i) of every lost value.
    let lost: Vec<(usize, usize)> = damaged
        .iter()
        .flat_map(|fr| {
            let f = names.iter().position(|n| fr.path.ends_with(&format!("/{n}"))).expect("a test file");
            fr.args.iter().map(move |a| {
                let t: i64 = a.split(':').next().unwrap().parse().unwrap();
                (f, (t - T0) as usize)
            })
        })
        .collect();
    assert!(!lost.is_empty());

    let daemon = Daemon::start(Kind::Ours, &dir, &extra);
    let mut c = daemon.client();
    // Replay ran before the daemon answered; nothing is flushed yet (-w 3600).
    for (s, len) in segs.iter().zip(&lengths) {
        assert_eq!(std::fs::metadata(s).unwrap().len(), *len, "{} was truncated by the restart", s.display());
    }
    let stats = c.call("STATS");
    assert_eq!(stat(&stats, "JournalDamagedRegions"), 1, "{stats}");
    let damaged_bytes: usize = damaged.iter().map(|fr| fr.len).sum();
    assert_eq!(stat(&stats, "JournalDamagedBytes"), damaged_bytes as u64, "{stats}");
    for n in &names {
        let r = c.call(&format!("FLUSH {n}"));
        assert!(r.starts_with("0 "), "{r}");
    }
    drop(c);
    let log = std::fs::read_to_string(&daemon.log).unwrap_or_default();
    daemon.stop();
    let error = log
        .lines()
        .find(|l| l.contains("damaged range"))
        .unwrap_or_else(|| panic!("no damage logged:\n{log}"));
    assert!(error.contains("ERROR"), "{error}");
    assert!(error.contains(&format!("{damaged_bytes} bytes skipped")), "{error}");
    assert!(error.contains("after it were kept"), "{error}");
    assert!(!log.contains("torn tail"), "damage reported as a torn tail:\n{log}");

    for (f, n) in names.iter().enumerate() {
        let path = dir.join(n);
        let out = rrdtool(&[
            "fetch",
            path.to_str().unwrap(),
            "LAST",
            "-r",
            "1",
            "-s",
            &T0.to_string(),
            "-e",
            &(T0 + PER_FILE as i64).to_string(),
        ]);
        let rows: std::collections::HashMap<i64, f64> = out
            .lines()
            .filter_map(|l| {
                let (t, v) = l.split_once(": ")?;
                Some((t.trim().parse().ok()?, v.trim().parse().ok()?))
            })
            .collect();
        for i in 1..=PER_FILE {
            let t = T0 + i as i64;
            let have = rows.get(&t).copied().unwrap_or(f64::NAN);
            if lost.contains(&(f, i)) {
                // The value is gone; the next update that survived covered its second.
                let next = (i + 1..=PER_FILE)
                    .find(|j| !lost.contains(&(f, *j)))
                    .map_or(f64::NAN, |j| value(f, j) as f64);
                assert!(
                    have == next || (have.is_nan() && next.is_nan()),
                    "{n} at {t}: {have}, lost value still there?"
                );
            } else {
                assert_eq!(
                    have,
                    value(f, i) as f64,
                    "{n}: acknowledged value at {t} missing ({which:?})\n{out}"
                );
            }
        }
        let last = rrdtool(&["lastupdate", path.to_str().unwrap()]);
        let want_last = (1..=PER_FILE).rev().find(|j| !lost.contains(&(f, *j))).unwrap();
        assert!(
            last.contains(&format!("{}: {}", T0 + want_last as i64, value(f, want_last))),
            "{n}: lastupdate {last}"
        );
    }
}

/// Two bytes flipped mid-way through the newest segment (the one being
/// appended to at the kill) are damage, not a torn tail: only the records
/// they hit are lost, the segment is not truncated, STATS counts them.
#[test]
fn damage_in_the_newest_segment_costs_only_the_damaged_records() {
    run(Which::Newest);
}

/// The same in the oldest segment: the records after the damage in that
/// segment, and every later segment, come back.
#[test]
fn damage_in_an_older_segment_costs_only_the_damaged_records() {
    run(Which::Oldest);
}
