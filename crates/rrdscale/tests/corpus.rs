//! Golden tests over a committed corpus of files made by rrdtool 1.7.2
//! (formats 0003, 0004 and 0005, COMPUTE, DCOUNTER/DDERIVE, HWPREDICT and
//! MHWPREDICT), each with the `dump`, `info`, `lastupdate` and `fetch` output
//! rrdtool printed for it (TZ=UTC). rrdscale must print the same bytes, and
//! must not need rrdtool installed to prove it.

mod common;

use std::path::Path;

use common::tools::rrdscale_ok as rrdscale;

const CORPUS: &[&str] = &["v3_classic", "v3_hw", "v4_mhw", "v5_dcounter"];

fn golden(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("golden file {name}: {e}"))
}

fn assert_same(what: &str, ours: &[u8], expected: &[u8]) {
    if ours != expected {
        let ours = String::from_utf8_lossy(ours);
        let expected = String::from_utf8_lossy(expected);
        let first = ours.lines().zip(expected.lines()).position(|(a, b)| a != b);
        panic!(
            "{what} differs from rrdtool's (first differing line {first:?}):\n--- rrdtool\n{expected}\n--- rrdscale\n{ours}"
        );
    }
}

#[test]
fn corpus_outputs_match_rrdtool_byte_for_byte() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    for name in CORPUS {
        let file = format!("{name}.rrd");
        assert_same(
            &format!("dump {file}"),
            &rrdscale(&dir, &["dump", &file]),
            &golden(&dir, &format!("{name}.dump.xml")),
        );
        assert_same(
            &format!("info {file}"),
            &rrdscale(&dir, &["info", &file]),
            &golden(&dir, &format!("{name}.info.txt")),
        );
        assert_same(
            &format!("lastupdate {file}"),
            &rrdscale(&dir, &["lastupdate", &file]),
            &golden(&dir, &format!("{name}.lastupdate.txt")),
        );
        assert_same(
            &format!("fetch {file}"),
            &rrdscale(&dir, &["fetch", &file, "AVERAGE", "-s", "1000000000", "-e", "1000020000"]),
            &golden(&dir, &format!("{name}.fetch.txt")),
        );
    }
}

/// Restoring rrdtool's dump and dumping again gives the same XML, for every
/// format version and archive type in the corpus.
#[test]
fn corpus_dump_restore_round_trips() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let tmp = tempfile::tempdir().unwrap();
    for name in CORPUS {
        let xml = dir.join(format!("{name}.dump.xml"));
        let target = tmp.path().join(format!("{name}.rrd"));
        rrdscale(tmp.path(), &["restore", xml.to_str().unwrap(), target.to_str().unwrap()]);
        let again = rrdscale(tmp.path(), &["dump", target.to_str().unwrap()]);
        assert_same(&format!("dump of restored {name}"), &again, &golden(&dir, &format!("{name}.dump.xml")));
    }
}
