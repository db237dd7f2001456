//! librrd's error conventions and memory, from C: `memcheck.c` calls
//! create, update, update_v, fetch, info, lastupdate, last/first, graph_v,
//! xport, dump, restore, tune and resize with good and bad arguments,
//! freeing every result as `rrd.h` says, and prints each call's return
//! value, whether `rrd_test_error()` is set, and `rrd_get_error()`'s text.
//!
//! It is compiled here with `cc` against our library, then run (1) on ours
//! under valgrind's memcheck (`--error-exitcode=1 --leak-check=full
//! --errors-for-leak-kinds=definite`: no invalid access, no definite leak)
//! and (2) on Debian's librrd 1.7.2; the two outputs must be equal, line by
//! line, except where ours words an error differently on purpose (then the
//! return value and the error flag must still be equal).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Calls whose error text differs from librrd's by design: librrd 1.7.2
/// creates through a temporary file and names that; ours names the file
/// and the system's reason.
const OWN_WORDING: &[&str] = &["create_r bad dir"];

fn program(lib: &Path, out_dir: &Path) -> std::path::PathBuf {
    compile_c("memcheck", lib, out_dir, &[])
}

/// (name, "result\tflag\ttext" plus the lines of its data) per call.
fn calls(out: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    for line in out.lines().filter(|l| !l.starts_with("lib ")) {
        match line.strip_prefix("  ") {
            Some(data) => v.last_mut().expect("a call before its data").1.push_str(&format!("\n{data}")),
            None => {
                let (name, rest) = line.split_once('\t').expect("name<TAB>result<TAB>flag<TAB>text");
                v.push((name.to_string(), rest.to_string()));
            }
        }
    }
    v
}

#[test]
fn bad_arguments_set_errors_as_librrd_and_memcheck_finds_nothing() {
    require("/usr/bin/valgrind", "valgrind");
    require("/usr/bin/cc", "gcc");
    require(DEBIAN_LIBRRD, "librrd8");
    let (lib_dir, lib) = library_dir();
    let build = tempfile::tempdir().unwrap();
    let exe = program(&lib, build.path());

    let ours_dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("/usr/bin/valgrind");
    // The read-ahead across calls forced on, so memcheck sees it too.
    cmd.env("RRDSCALE_LIBRRD_AHEAD", "always");
    cmd.args(["-q", "--error-exitcode=1", "--leak-check=full", "--errors-for-leak-kinds=definite"])
        .arg(&exe)
        .arg(ours_dir.path());
    let ours = run(cmd, Some(lib_dir.path()));
    let theirs_dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(&exe);
    cmd.arg(theirs_dir.path());
    let theirs = run(cmd, None);

    assert!(ours.contains(&format!("lib {}", lib.display())), "ours loaded: {ours}");
    let debian = Path::new(DEBIAN_LIBRRD).canonicalize().unwrap();
    assert!(theirs.contains(&format!("lib {}", debian.display())), "Debian's loaded: {theirs}");
    let (a, b) = (calls(&ours), calls(&theirs));
    assert_eq!(a.len(), b.len(), "the same calls ran");
    assert!(a.len() > 60, "every call ran: {}", a.len());
    let mut failures = 0;
    for ((name, got), (name2, want)) in a.iter().zip(&b) {
        assert_eq!(name, name2);
        if OWN_WORDING.contains(&name.as_str()) {
            let head = |s: &str| s.split('\t').take(2).collect::<Vec<_>>().join("\t");
            assert_eq!(head(got), head(want), "{name}: return value and error flag");
        } else {
            assert_eq!(got, want, "{name}");
        }
        if got.starts_with("-1\t1\t") || got.starts_with("null\t1\t") {
            failures += 1;
        }
    }
    assert!(failures >= 35, "the bad calls failed with an error text set: {failures}");
}
