//! librrd's internal file API and small exported helpers, from C:
//! `fileapi.c` opens files with `rrd_open` in every mode (read-only,
//! read-write, values, create, exclusive create, locked by another
//! process), reads the header through the `rrd_t` it fills, reads, seeks
//! and writes, changes the header through the mapping and checks that
//! `rrd_update_r` sees it, opens broken files (empty, short, truncated, not
//! an RRD, another architecture, a newer version), and calls `rrd_lcd`,
//! `rrd_reduce_data` (every CF, aligned and not, the sanity check),
//! `rrd_strtod`, `rrd_strtodbl`, `rrd_snprintf` and `rrd_set_error` with
//! every argument kind.
//!
//! Compiled against our library, run (1) on ours under valgrind's memcheck
//! (no invalid access, no definite leak), with the NULL arguments Debian's
//! librrd crashes on added, and (2) on Debian's librrd 1.7.2. Every line
//! must be equal; `rrd_snprintf` is librrd's own formatter, not glibc's
//! (the program prints glibc's text beside each case, and they differ).

mod common;

use common::*;

/// `rrd_snprintf` cases where librrd's own formatter and glibc's differ
/// (ties rounded up, not to even; negative zero without its sign; `%c`
/// unpadded; no digits for an integer part past 64 bits).
const NOT_GLIBC: &[&str] = &[
    "snprintf doubles",
    "snprintf special",
    "snprintf ties",
    "snprintf two flags",
    "snprintf huge",
    "snprintf char width",
];

#[test]
fn file_api_and_helpers_behave_as_librrd_and_memcheck_finds_nothing() {
    let CRuns { ours, ours_dir, theirs, theirs_dir, .. } =
        run_c_on_both("fileapi", &["-lm"], &["--trace-children=yes"], &[], &["--null"]);
    let (a, b) = (c_calls(&ours, false), c_calls(&theirs, false));
    // Ours ran the NULL calls too, after everything both ran.
    let null_calls = &a[b.len().min(a.len())..];
    assert!(a.len() > b.len() && b.len() > 150, "every call ran: {} and {}", a.len(), b.len());
    for ((name, got), (name2, want)) in a.iter().zip(&b) {
        assert_eq!(name, name2, "the same calls in the same order");
        assert_eq!(got, want, "{name}");
    }
    for name in NOT_GLIBC {
        let line = |n: &str| &a.iter().find(|(x, _)| x == n).unwrap_or_else(|| panic!("{n} ran")).1;
        assert_ne!(line(name), line(&name.replace("snprintf", "libc")), "{name}: librrd's text, not glibc's");
    }
    // The cases did what they are named for.
    for (name, expected) in [
        ("update_r after mapped write", "-1\t1\tr.rrd: illegal attempt to update using time 1600009301"),
        ("open locked rw", "null\t1\tcould not lock RRD"),
        ("open trunc.rrd", "null\t1\treached EOF while loading header rrd->pdp_prep"),
        ("open made excl", "null\t1\topening 'made.rrd': File exists"),
        ("write past end", "-1\t1\tattempting to write beyond end of file (2282 + 8 > 2272)"),
        ("reduce sanity", "0\t1\tSANITY CHECK: "),
        ("set_error", "-\t1\tfile.rrd has 42 values, 0.667 avg, 600 rows, 1.000000e-09 0.5 x"),
        ("dump made", "0\t0\t"),
    ] {
        let got = &a.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{name} ran")).1;
        assert!(got.starts_with(expected), "{name}: {got}");
    }
    // The file made through rrd_open(RRD_CREAT) and rrd_write is the
    // restored file's copy, on both libraries.
    for dir in [ours_dir.path(), theirs_dir.path()] {
        let (made, source) =
            (std::fs::read(dir.join("made.rrd")).unwrap(), std::fs::read(dir.join("r.rrd")).unwrap());
        assert!(made.len() == 2272 && made == source, "made.rrd is r.rrd's copy in {}", dir.display());
    }
    // NULL arguments (ours only): refused, never a crash.
    let names: Vec<&str> = null_calls.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"null close") && names.contains(&"null set_error"), "{names:?}");
    for (name, rest) in null_calls {
        assert!(
            rest.starts_with("0\t") || rest.starts_with("-1\t") || rest.starts_with("-\t") || rest == "0\t",
            "{name}: {rest}"
        );
    }
}
