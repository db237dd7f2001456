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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const DEBIAN_LIBRRD: &str = "/usr/lib/x86_64-linux-gnu/librrd.so.8";
const PYTHON: &str = "/usr/bin/python3";

/// Our `librrd.so`, built by cargo for this test run.
fn our_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test> -> target/<profile>/librrd.so
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps");
    let lib = profile_dir.join("librrd.so");
    assert!(
        lib.is_file(),
        "our library is missing at {} (cargo builds it with `cargo test -p librrd`; \
         scripts/build-librrd.sh builds the release one)",
        lib.display()
    );
    lib.canonicalize().expect("canonical library path")
}

/// A directory holding `librrd.so.8 -> our librrd.so`, for LD_LIBRARY_PATH.
fn library_dir() -> (tempfile::TempDir, PathBuf) {
    let lib = our_library();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&lib, dir.path().join("librrd.so.8")).unwrap();
    (dir, lib)
}

fn require(path: &str, package: &str) {
    assert!(Path::new(path).exists(), "{path} is missing: install {package} (.ci/run does)");
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(name)
}

/// Runs a command in `cwd`, with our library first on the search path when
/// `lib_dir` is given; its standard output, or a failure naming its stderr.
fn run(mut cmd: Command, lib_dir: Option<&Path>) -> String {
    cmd.env_remove("LD_LIBRARY_PATH").env_remove("RRDCACHED_ADDRESS").env("TZ", "UTC");
    if let Some(d) = lib_dir {
        cmd.env("LD_LIBRARY_PATH", d);
    }
    let out = cmd.output().expect("running the program");
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The first line where two outputs differ, with context.
fn assert_same_text(ours: &str, theirs: &str, what: &str) {
    if ours == theirs {
        return;
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    let i = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let from = i.saturating_sub(8);
    panic!(
        "{what}: outputs differ at line {} (ours {} lines, librrd {}):\n--- context\n{}\n--- ours\n{}\n--- librrd\n{}",
        i + 1,
        a.len(),
        b.len(),
        a[from..i].join("\n"),
        a.get(i).unwrap_or(&"<end>"),
        b.get(i).unwrap_or(&"<end>"),
    );
}

/// An RRD with each archive rotated so that its oldest row comes first.
fn canonical_rrd(bytes: &[u8]) -> Vec<u8> {
    let (header, layout) = rrd_format::Header::decode(bytes, bytes.len() as u64).expect("a valid RRD");
    let mut out = bytes.to_vec();
    let row_len = layout.row_len() as usize;
    for (i, &cur) in header.rra_ptr.iter().enumerate() {
        let rows = layout.row_counts[i] as usize;
        let start = layout.rra_data_off[i] as usize;
        let area = &bytes[start..start + rows * row_len];
        let oldest = (cur as usize + 1) % rows;
        let dst = &mut out[start..start + rows * row_len];
        dst[..(rows - oldest) * row_len].copy_from_slice(&area[oldest * row_len..]);
        dst[(rows - oldest) * row_len..].copy_from_slice(&area[..oldest * row_len]);
        let ptr = layout.rra_ptr_off as usize + 8 * i;
        out[ptr..ptr + 8].copy_from_slice(&(rows as u64 - 1).to_le_bytes());
    }
    out
}

/// Every file both runs left, equal (RRDs canonically, images skipped);
/// returns how many were compared.
fn assert_same_files(ours: &Path, theirs: &Path) -> usize {
    let list = |d: &Path| -> BTreeMap<String, PathBuf> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
            .collect()
    };
    let (a, b) = (list(ours), list(theirs));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "the same files");
    let mut compared = 0;
    for (name, path) in &a {
        let (x, y) = (std::fs::read(path).unwrap(), std::fs::read(&b[name]).unwrap());
        if name.ends_with(".png") || name.ends_with(".svg") {
            continue;
        }
        if name.ends_with(".rrd") {
            let (cx, cy) = (canonical_rrd(&x), canonical_rrd(&y));
            let first = cx.iter().zip(&cy).position(|(p, q)| p != q);
            assert!(
                cx == cy,
                "{name}: bytes differ (lengths {} and {}, first at {first:?})",
                cx.len(),
                cy.len()
            );
        } else {
            assert_same_text(&String::from_utf8_lossy(&x), &String::from_utf8_lossy(&y), name);
        }
        compared += 1;
    }
    compared
}

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
    assert_eq!(assert_same_files(ours_dir.path(), theirs_dir.path()), 5, "r.rrd and four dumps");
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
