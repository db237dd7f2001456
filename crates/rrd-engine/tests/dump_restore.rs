//! `dump` and `restore` against the real rrdtool 1.7.2, in-process.
//!
//! Each fixture is a file made by `rrdtool create` and fed a seeded stream of
//! `rrdtool update`s (random values, unknowns, gaps longer than the
//! heartbeat), so that PDP and CDP scratch areas and rows are non-trivial.
//! For each one:
//! - our `dump` must print exactly the bytes `rrdtool dump` prints, for all
//!   three header kinds;
//! - our `restore` of rrdtool's XML, written with the `cur_row`s rrdtool's
//!   `restore` picked at random, must be byte-identical to rrdtool's file;
//! - `rrdtool dump` of our restored file must give back the XML.
//!
//! rrdtool runs with TZ=UTC, and so does this process (set before any time
//! is formatted). A missing rrdtool fails the tests loudly.

use std::path::{Path, PathBuf};
use std::sync::Once;

use rrd_engine::dump::{dump, DumpHeader, DumpOptions};
use rrd_engine::restore;
use rrd_engine::Rrd;

use rrd_testkit::Rng;

mod common;
use common::rrdtool;

fn setup() {
    static TZ: Once = Once::new();
    // Before any localtime_r call in this process; glibc reads TZ once.
    TZ.call_once(|| std::env::set_var("TZ", "UTC"));
}

/// What the update stream feeds a data source.
#[derive(Clone, Copy)]
enum Feed {
    /// Any value in a range, negative ones included.
    Gauge,
    /// A growing integer counter.
    Counter,
    /// A growing counter with fractions (DCOUNTER).
    FloatCounter,
    /// Small integers, up and down (DERIVE, ABSOLUTE).
    Delta,
    /// Fractional deltas (DDERIVE).
    FloatDelta,
}

struct Fixture {
    name: &'static str,
    step: u64,
    defs: &'static [&'static str],
    /// One feed per non-COMPUTE data source, in order.
    feeds: &'static [Feed],
    updates: usize,
}

const START: u64 = 1_000_000_000;

fn fixtures() -> Vec<Fixture> {
    vec![
        Fixture {
            name: "classic",
            step: 300,
            defs: &[
                "DS:g:GAUGE:600:-50:150",
                "DS:c:COUNTER:600:U:U",
                "DS:d:DERIVE:900:U:1000",
                "DS:a:ABSOLUTE:600:0:U",
                "DS:sum:COMPUTE:g,d,+,2,*",
                "RRA:AVERAGE:0.5:1:30",
                "RRA:MIN:0.3:3:12",
                "RRA:MAX:0.9:4:10",
                "RRA:LAST:0:7:5",
            ],
            feeds: &[Feed::Gauge, Feed::Counter, Feed::Delta, Feed::Delta],
            updates: 180,
        },
        Fixture {
            name: "version5",
            step: 60,
            defs: &[
                "DS:dc:DCOUNTER:120:U:U",
                "DS:dd:DDERIVE:120:-10:10",
                "DS:g:GAUGE:120:U:U",
                "RRA:AVERAGE:0.5:1:20",
                "RRA:MAX:0.5:5:8",
            ],
            feeds: &[Feed::FloatCounter, Feed::FloatDelta, Feed::Gauge],
            updates: 150,
        },
        Fixture {
            name: "hwpredict_implied",
            step: 60,
            defs: &["DS:x:GAUGE:120:U:U", "RRA:AVERAGE:0.5:1:40", "RRA:HWPREDICT:50:0.1:0.0035:12"],
            feeds: &[Feed::Gauge],
            updates: 200,
        },
        Fixture {
            name: "mhwpredict",
            step: 60,
            defs: &[
                "DS:x:GAUGE:120:U:U",
                "DS:y:COUNTER:120:U:U",
                "RRA:MHWPREDICT:30:0.2:0.01:10",
                "RRA:LAST:0.5:2:25",
            ],
            feeds: &[Feed::Gauge, Feed::Counter],
            updates: 140,
        },
        Fixture {
            name: "explicit_hw_family",
            step: 60,
            defs: &[
                "DS:x:GAUGE:120:0:100",
                "RRA:AVERAGE:0.5:1:10",
                "RRA:HWPREDICT:30:0.1:0.0035:10:2",
                "RRA:SEASONAL:10:0.1:1",
                "RRA:DEVSEASONAL:10:0.1:1",
                "RRA:DEVPREDICT:30:3",
                "RRA:FAILURES:30:2:4:3",
            ],
            feeds: &[Feed::Gauge],
            updates: 160,
        },
        Fixture {
            name: "smoothing_window_v4",
            step: 60,
            defs: &[
                "DS:x:GAUGE:120:U:U",
                "RRA:AVERAGE:0.5:1:10",
                "RRA:HWPREDICT:20:0.1:0.0035:6:2",
                "RRA:SEASONAL:6:0.1:1:smoothing-window=0.2",
                "RRA:DEVSEASONAL:6:0.1:1:smoothing-window=0.3",
            ],
            feeds: &[Feed::Gauge],
            updates: 90,
        },
    ]
}

/// Creates the fixture with rrdtool in `dir` and applies its updates.
fn build(dir: &Path, f: &Fixture, seed: u64) -> PathBuf {
    let path = dir.join(format!("{}.rrd", f.name));
    let p = path.to_str().unwrap();
    let start = START.to_string();
    let step = f.step.to_string();
    let mut args = vec!["create", p, "--start", &start, "--step", &step];
    args.extend_from_slice(f.defs);
    rrdtool(&args);

    let mut rng = Rng::new(seed);
    let mut t = START;
    let mut counters: Vec<f64> = vec![1000.0; f.feeds.len()];
    let mut batch: Vec<String> = Vec::new();
    for i in 0..f.updates {
        // Mostly a step apart, sometimes a fraction of it, sometimes a gap
        // longer than the heartbeat.
        t += match rng.below(10) {
            0 => f.step * 3 + rng.below(f.step),
            1 | 2 => 1 + rng.below(f.step / 2),
            _ => f.step / 2 + rng.below(f.step),
        };
        let mut line = t.to_string();
        for (k, feed) in f.feeds.iter().enumerate() {
            line.push(':');
            if rng.below(12) == 0 {
                line.push('U');
                continue;
            }
            let value = match feed {
                Feed::Gauge => format!("{}", (rng.below(20_000) as f64 - 5_000.0) / 97.0),
                Feed::Counter => {
                    counters[k] += rng.below(5_000) as f64;
                    format!("{}", counters[k] as u64)
                }
                Feed::FloatCounter => {
                    counters[k] += rng.below(5_000) as f64 / 7.0;
                    format!("{}", counters[k])
                }
                Feed::Delta => format!("{}", rng.below(400) as i64 - (i as i64 % 3) * 10),
                Feed::FloatDelta => format!("{}", (rng.below(4000) as f64 - 2000.0) / 13.0),
            };
            line.push_str(&value);
        }
        batch.push(line);
        if batch.len() == 50 || i + 1 == f.updates {
            let mut args = vec!["update", p];
            args.extend(batch.iter().map(String::as_str));
            rrdtool(&args);
            batch.clear();
        }
    }
    path
}

fn our_dump(path: &Path, header: DumpHeader) -> Vec<u8> {
    let rrd = Rrd::open(path, false).unwrap();
    let mut out = Vec::new();
    dump(&rrd, &mut out, &DumpOptions { header }).unwrap();
    out
}

fn show_diff(ours: &[u8], theirs: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(ours), String::from_utf8_lossy(theirs));
    for (n, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("first difference at line {}:\n ours:    {x}\n rrdtool: {y}", n + 1);
        }
    }
    format!("lengths differ: ours {} bytes, rrdtool {} bytes", ours.len(), theirs.len())
}

#[test]
fn dump_matches_rrdtool_byte_for_byte() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    for (n, f) in fixtures().iter().enumerate() {
        for seed in [1u64, 2] {
            let path = build(dir.path(), f, seed * 100 + n as u64);
            let p = path.to_str().unwrap();
            for (header, flag) in
                [(DumpHeader::Dtd, "dtd"), (DumpHeader::Xsd, "xsd"), (DumpHeader::None, "none")]
            {
                let theirs = rrdtool(&["dump", "--header", flag, p]);
                let ours = our_dump(&path, header);
                assert!(
                    ours == theirs,
                    "{} seed {seed} header {flag}: {}",
                    f.name,
                    show_diff(&ours, &theirs)
                );
            }
            std::fs::remove_file(&path).unwrap();
        }
    }
}

/// The `cur_row` of every archive of an RRD file.
fn cur_rows(bytes: &[u8]) -> Vec<u64> {
    let h = rrd_format::Header::decode(bytes, bytes.len() as u64).unwrap();
    h.rra_ptr().to_vec()
}

#[test]
fn restore_matches_rrdtool_byte_for_byte() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    for (n, f) in fixtures().iter().enumerate() {
        let path = build(dir.path(), f, 7 + n as u64);
        let xml = rrdtool(&["dump", path.to_str().unwrap()]);
        let xml_path = dir.path().join(format!("{}.xml", f.name));
        std::fs::write(&xml_path, &xml).unwrap();

        for range_check in [false, true] {
            let theirs_path = dir.path().join(format!("{}-theirs-{range_check}.rrd", f.name));
            let mut args = vec!["restore"];
            if range_check {
                args.push("--range-check");
            }
            args.extend([xml_path.to_str().unwrap(), theirs_path.to_str().unwrap()]);
            rrdtool(&args);
            let theirs = std::fs::read(&theirs_path).unwrap();

            // rrdtool picks each cur_row at random; restore with the same
            // ones so that every other byte must match.
            let restored = restore::parse(&xml, range_check).unwrap();
            let mut ours = Vec::new();
            restored.write_to(&mut ours, &cur_rows(&theirs)).unwrap();
            assert_eq!(ours.len(), theirs.len(), "{} range_check {range_check}: file length", f.name);
            if let Some(at) = ours.iter().zip(&theirs).position(|(a, b)| a != b) {
                panic!("{} range_check {range_check}: first differing byte at offset {at}", f.name);
            }

            // And through the file-writing path, with its own random rows:
            // rrdtool reads our file back to the same XML.
            let ours_path = dir.path().join(format!("{}-ours-{range_check}.rrd", f.name));
            let opts = restore::RestoreOptions { range_check, force_overwrite: false };
            restore::restore_file(&xml_path, &ours_path, &opts).unwrap();
            let ours_xml = rrdtool(&["dump", ours_path.to_str().unwrap()]);
            let theirs_xml = rrdtool(&["dump", theirs_path.to_str().unwrap()]);
            assert!(ours_xml == theirs_xml, "{}: {}", f.name, show_diff(&ours_xml, &theirs_xml));
            if !range_check {
                assert!(ours_xml == xml, "{}: {}", f.name, show_diff(&ours_xml, &xml));
            }
        }
    }
}

#[test]
fn restore_refuses_to_overwrite_without_force_and_leaves_nothing_on_error() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let f = &fixtures()[2];
    let path = build(dir.path(), f, 3);
    let xml = rrdtool(&["dump", path.to_str().unwrap()]);
    let target = dir.path().join("target.rrd");
    std::fs::write(&target, b"precious").unwrap();
    let err = restore::restore(&xml, &target, &restore::RestoreOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), format!("creating '{}': File exists", target.display()));
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");

    let forced = restore::RestoreOptions { range_check: false, force_overwrite: true };
    restore::restore(&xml, &target, &forced).unwrap();
    assert_eq!(rrdtool(&["dump", target.to_str().unwrap()]), xml);

    // A document that fails half-way writes nothing, not even a temporary.
    let broken = String::from_utf8(xml).unwrap().replacen("<row>", "<row><bogus/>", 1);
    let fresh = dir.path().join("fresh.rrd");
    assert!(restore::restore(broken.as_bytes(), &fresh, &forced).is_err());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with(".") || n == "fresh.rrd"), "left behind: {names:?}");
}
