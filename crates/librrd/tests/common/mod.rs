//! Shared by the tests that run real programs on our library: finding it,
//! running a program with or without it, and comparing outputs and files.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const DEBIAN_LIBRRD: &str = "/usr/lib/x86_64-linux-gnu/librrd.so.8";
pub const PYTHON: &str = "/usr/bin/python3";

/// Our `librrd.so`, built by cargo for this test run.
pub fn our_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test> -> target/<profile>/deps/librrd.so: the
    // cdylib `cargo test` builds with the lib target (the crate is also an
    // rlib for that reason); `cargo build` copies it up a directory, but
    // `cargo test` does not, so the copy there may be stale.
    let deps = exe.parent().expect("target/<profile>/deps");
    let profile_dir = deps.parent().expect("target/<profile>");
    let lib = deps.join("librrd.so");
    assert!(lib.is_file(), "our library is missing at {} (`cargo test -p librrd` builds it)", lib.display());
    // cargo puts this directory on the tests' LD_LIBRARY_PATH: a
    // librrd.so.8 here would turn every /usr/bin/rrdtool the workspace's
    // tests run as their oracle into our library.
    let poison = profile_dir.join("librrd.so.8");
    assert!(
        !poison.exists(),
        "{} exists: remove it (scripts/build-librrd.sh puts the soname link in target/librrd/)",
        poison.display()
    );
    lib.canonicalize().expect("canonical library path")
}

/// A directory holding `librrd.so.8 -> our librrd.so`, for LD_LIBRARY_PATH.
pub fn library_dir() -> (tempfile::TempDir, PathBuf) {
    let lib = our_library();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&lib, dir.path().join("librrd.so.8")).unwrap();
    (dir, lib)
}

pub fn require(path: &str, package: &str) {
    assert!(Path::new(path).exists(), "{path} is missing: install {package} (.ci/run does)");
}

pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(name)
}

/// Runs a command in `cwd`, with our library first on the search path when
/// `lib_dir` is given; its standard output, or a failure naming its stderr.
pub fn run(mut cmd: Command, lib_dir: Option<&Path>) -> String {
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
pub fn assert_same_text(ours: &str, theirs: &str, what: &str) {
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

/// An RRD with each archive rotated so that its oldest row comes first
/// ([`rrd_testkit::canonical`]); panics on bytes that are not an RRD.
pub fn canonical_rrd(bytes: &[u8]) -> Vec<u8> {
    rrd_testkit::canonical::oldest_rows_first(bytes).unwrap_or_else(|e| panic!("a valid RRD: {e}"))
}

/// Every file both runs left, equal (RRDs canonically, images skipped);
/// returns how many were compared.
pub fn assert_same_files(ours: &Path, theirs: &Path) -> usize {
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

/// Compiles the C test program `NAME.c` (tests/scripts) against `lib` into
/// `out_dir/NAME`, with warnings as errors and debug info for valgrind.
pub fn compile_c(name: &str, lib: &Path, out_dir: &Path, extra: &[&str]) -> PathBuf {
    let exe = out_dir.join(name);
    let status = Command::new("cc")
        .args(["-g", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(script(&format!("{name}.c")))
        .arg(lib)
        .args(extra)
        .status()
        .expect("running cc");
    assert!(status.success(), "cc failed on {name}.c");
    exe
}

/// The calls a C test program printed (`report.h`): (name, the rest of its
/// line and the indented lines after it). Lines starting `lib ` (which
/// library was loaded) are not calls. A line without a tab is a call with
/// nothing after its name, or, when `tabbed`, a malformed line that fails
/// the test.
pub fn c_calls(out: &str, tabbed: bool) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    for line in out.lines().filter(|l| !l.starts_with("lib ")) {
        match line.strip_prefix("  ") {
            Some(data) => v.last_mut().expect("a call before its data").1.push_str(&format!("\n{data}")),
            None => {
                let (name, rest) = match line.split_once('\t') {
                    Some(split) => split,
                    None if !tabbed => (line, ""),
                    None => panic!("not name<TAB>result<TAB>flag<TAB>text: {line}"),
                };
                v.push((name.to_string(), rest.to_string()));
            }
        }
    }
    v
}

/// The two runs of a C test program, each writing in its own directory.
pub struct CRuns {
    /// Our library's path.
    pub lib: PathBuf,
    /// Its output on our library, under valgrind.
    pub ours: String,
    pub ours_dir: tempfile::TempDir,
    /// Its output on Debian's librrd 1.7.2.
    pub theirs: String,
    pub theirs_dir: tempfile::TempDir,
}

/// Compiles `NAME.c` (with `cc_extra`) against our library and runs it
/// twice with its output directory as first argument: (1) on ours under
/// valgrind's memcheck (`--error-exitcode=1 --leak-check=full
/// --errors-for-leak-kinds=definite`, fontconfig's configuration parse
/// suppressed (`fontconfig.supp`), `valgrind_extra` added: no invalid
/// access, no definite leak), with `ours_env` set and `ours_args` after the
/// directory; (2) on Debian's librrd 1.7.2. Both must succeed.
pub fn run_c_on_both(
    name: &str,
    cc_extra: &[&str],
    valgrind_extra: &[&str],
    ours_env: &[(&str, &str)],
    ours_args: &[&str],
) -> CRuns {
    require("/usr/bin/valgrind", "valgrind");
    require("/usr/bin/cc", "gcc");
    require(DEBIAN_LIBRRD, "librrd8");
    let (lib_dir, lib) = library_dir();
    let build = tempfile::tempdir().unwrap();
    let exe = compile_c(name, &lib, build.path(), cc_extra);

    let ours_dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("/usr/bin/valgrind");
    cmd.envs(ours_env.iter().copied())
        .args(["-q", "--error-exitcode=1", "--leak-check=full", "--errors-for-leak-kinds=definite"])
        // fontconfig's one-time configuration parse (see the file).
        .arg(format!("--suppressions={}", script("fontconfig.supp").display()))
        .args(valgrind_extra)
        .arg(&exe)
        .arg(ours_dir.path())
        .args(ours_args);
    let ours = run(cmd, Some(lib_dir.path()));
    let theirs_dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(&exe);
    cmd.arg(theirs_dir.path());
    let theirs = run(cmd, None);
    CRuns { lib, ours, ours_dir, theirs, theirs_dir }
}
