//! Real programs linked against Debian's librrd8, run on our library.
//!
//! Each test runs Debian's own bindings twice: once with `LD_LIBRARY_PATH`
//! naming a directory that holds our `librrd.so.8`, once without (Debian's
//! librrd 1.7.2), and compares every result, error text and file. The
//! library under test is the cdylib cargo built for this test run (next to
//! the test binary's `deps/`); nothing is built here, and a missing library
//! fails the test.
//!
//! - `python3-rrdtool`: `differential.py`, random schemas and update streams
//!   through create/update/updatev/fetch/info/lastupdate/first/last/xport/
//!   graph/graphv/tune/resize/dump, and argument errors; `/proc/self/maps`
//!   must show our library in one process and Debian's in the other.
//! - The C API through ctypes (`capi.py`): `_r` variants, error flags, fetch
//!   errors.
//! - Perl `RRDs` (librrds-perl): a smaller run.
//!
//! Files are compared byte for byte after rotating every archive to a
//! canonical order (rrdtool starts archives at a random row), as the CLI's
//! differential harness does. Images are not: graph's pixels are not
//! promised identical to cairo's; graphv's numbers and PRINT results are.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn python_side(seed: u64, cases: u32, lib_dir: Option<&Path>) -> (tempfile::TempDir, String) {
    let work = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(PYTHON);
    cmd.arg(script("differential.py")).arg(work.path()).arg(seed.to_string()).arg(cases.to_string());
    cmd.current_dir(work.path());
    let out = run(cmd, lib_dir);
    (work, out)
}

/// The `libs` list of a differential run: the librrd files mapped.
fn mapped_libraries(out: &str) -> Vec<String> {
    let start = out.find("\"libs\"").expect("a libs entry");
    let open = start + out[start..].find('[').unwrap();
    let close = open + out[open..].find(']').unwrap();
    out[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn python_rrdtool_runs_on_our_library_and_matches_librrd() {
    require(PYTHON, "python3");
    require("/usr/lib/python3/dist-packages/rrdtool.cpython-311-x86_64-linux-gnu.so", "python3-rrdtool");
    require(DEBIAN_LIBRRD, "librrd8");
    let (lib_dir, lib) = library_dir();
    // A fixed seed set, plus one from the environment to explore.
    let mut seeds = vec![1, 2, 3];
    if let Some(s) = std::env::var("LIBRRD_DIFF_SEED").ok().and_then(|s| s.parse().ok()) {
        seeds = vec![s];
    }
    for seed in seeds {
        let (ours_dir, ours) = python_side(seed, 12, Some(lib_dir.path()));
        let (theirs_dir, theirs) = python_side(seed, 12, None);
        // The run really used our library, and the other one Debian's.
        assert_eq!(mapped_libraries(&ours), vec![lib.display().to_string()], "ours loaded, alone");
        let debian = Path::new(DEBIAN_LIBRRD).canonicalize().unwrap();
        assert_eq!(mapped_libraries(&theirs), vec![debian.display().to_string()], "Debian's loaded");
        let body = |s: &str| s[s.find("\"log\"").unwrap()..].to_string();
        assert_same_text(&body(&ours), &body(&theirs), &format!("python3-rrdtool calls, seed {seed}"));
        assert!(ours.matches("\"ok\"").count() > 200, "most calls succeed: {}", ours.len());
        assert!(ours.matches("\"error\"").count() >= 20, "the error cases ran");
        let files = assert_same_files(ours_dir.path(), theirs_dir.path());
        assert!(files >= 12 * 3, "RRDs, resized copies and dumps compared: {files}");
    }
}

#[test]
fn c_api_through_ctypes_matches_librrd() {
    require(PYTHON, "python3");
    require(DEBIAN_LIBRRD, "librrd8");
    let lib = our_library();
    let side = |library: &Path| {
        let work = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(PYTHON);
        cmd.arg(script("capi.py")).arg(library).arg(work.path());
        let out = run(cmd, None);
        (work, out)
    };
    let (ours_dir, ours) = side(&lib);
    let (theirs_dir, theirs) = side(Path::new(DEBIAN_LIBRRD));
    assert_same_text(&ours, &theirs, "C API results");
    assert!(ours.contains("\"fetch_r\""), "the script ran to the end");
    assert_eq!(
        assert_same_files(ours_dir.path(), theirs_dir.path()),
        10,
        "r.rrd, five dumps, four threads' files"
    );
}

#[test]
fn perl_rrds_runs_on_our_library_and_matches_librrd() {
    require("/usr/bin/perl", "perl");
    require("/usr/lib/x86_64-linux-gnu/perl5/5.36/auto/RRDs/RRDs.so", "librrds-perl");
    require(DEBIAN_LIBRRD, "librrd8");
    let (lib_dir, lib) = library_dir();
    let side = |lib_dir: Option<&Path>| {
        let work = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("/usr/bin/perl");
        cmd.arg(script("rrds.pl")).arg(work.path()).arg("7").arg("5");
        let out = run(cmd, lib_dir);
        (work, out)
    };
    let (ours_dir, ours) = side(Some(lib_dir.path()));
    let (theirs_dir, theirs) = side(None);
    let split = |s: &str| {
        let at = s.rfind("libs: ").expect("the script ran to the end");
        (s[..at].to_string(), s[at..].trim().to_string())
    };
    let ((ours_calls, ours_libs), (theirs_calls, theirs_libs)) = (split(&ours), split(&theirs));
    assert_eq!(ours_libs, format!("libs: {}", lib.display()), "ours loaded, alone");
    let debian = Path::new(DEBIAN_LIBRRD).canonicalize().unwrap();
    assert_eq!(theirs_libs, format!("libs: {}", debian.display()), "Debian's loaded");
    assert_same_text(&ours_calls, &theirs_calls, "RRDs calls");
    assert!(ours_calls.matches("$call = ").count() > 60, "the calls ran");
    let files = assert_same_files(ours_dir.path(), theirs_dir.path());
    assert!(files >= 10, "RRDs and dumps compared: {files}");
}
