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

use common::*;

/// Calls whose error text differs from librrd's by design: librrd 1.7.2
/// creates through a temporary file and names that; ours names the file
/// and the system's reason.
const OWN_WORDING: &[&str] = &["create_r bad dir"];

#[test]
fn bad_arguments_set_errors_as_librrd_and_memcheck_finds_nothing() {
    // The read-ahead across calls forced on, so memcheck sees it too.
    let CRuns { lib, ours, theirs, .. } =
        run_c_on_both("memcheck", &[], &[], &[("RRDSCALE_LIBRRD_AHEAD", "always")], &[]);
    assert!(ours.contains(&format!("lib {}", lib.display())), "ours loaded: {ours}");
    let debian = Path::new(DEBIAN_LIBRRD).canonicalize().unwrap();
    assert!(theirs.contains(&format!("lib {}", debian.display())), "Debian's loaded: {theirs}");
    let (a, b) = (c_calls(&ours, true), c_calls(&theirs, true));
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
