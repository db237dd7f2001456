//! `rrdscale daemon`'s option parser against the real rrdcached 1.7.2,
//! which parses with rrdtool's optparse (not glibc's getopt_long): each
//! command line here is refused by both with the same message on stderr
//! (long names only in full, optparse's texts, cut at 47 bytes), and
//! `--help`/`-h` print a usage text. One deliberate difference is checked
//! too: rrdcached exits 0 after a refused option (its `read_options`
//! returns -1, which `main` turns into 0); we exit 1, so a supervisor sees
//! the mistake.
//!
//! rrdcached is required: when /usr/bin/rrdcached is missing this fails
//! saying so (CI installs the Debian package `rrdcached`).

use std::path::Path;
use std::process::{Command, Output};

const RRDCACHED: &str = "/usr/bin/rrdcached";

fn run(program: &str, pre: &[&str], args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(program)
        .args(pre)
        .args(args)
        .current_dir(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"))
}

fn both(args: &[&str]) -> (Output, Output) {
    assert!(
        Path::new(RRDCACHED).is_file(),
        "rrdcached 1.7.2 must be installed at {RRDCACHED} to compare against it (apt-get install rrdcached)"
    );
    (run(RRDCACHED, &[], args), run(env!("CARGO_BIN_EXE_rrdscale"), &["daemon"], args))
}

fn first_line(b: &[u8]) -> String {
    String::from_utf8_lossy(b).lines().next().unwrap_or("").to_string()
}

#[test]
fn refused_options_have_rrdcacheds_messages() {
    for args in [
        &["-x"][..],
        &["-g", "-q"],
        &["--hel"],
        &["--he"],
        &["--help=x"],
        &["-g", "-w"],
        &["-gw"],
        &["-l"],
        &["--bogus=1"],
        &["--w", "300"],
        &["-g", "--listen", "x"],
        &["--a-very-long-option-name-that-optparse-cuts-in-its-buffer"],
    ] {
        let (theirs, ours) = both(args);
        let want = first_line(&theirs.stderr);
        assert!(
            !want.is_empty(),
            "rrdcached {args:?} printed no error (stdout: {})",
            first_line(&theirs.stdout)
        );
        assert_eq!(first_line(&ours.stderr), want, "rrdscale daemon {args:?}");
        assert_eq!(theirs.status.code(), Some(0), "rrdcached {args:?} exits 0 after a refused option");
        assert_eq!(ours.status.code(), Some(1), "rrdscale daemon {args:?}: refused, status 1");
    }
}

#[test]
fn help_prints_usage_with_status_1_like_rrdcached() {
    for args in [&["-h"][..], &["--help"], &["-gh"]] {
        let (theirs, ours) = both(args);
        assert_eq!(theirs.status.code(), Some(1), "rrdcached {args:?}");
        assert_eq!(ours.status.code(), Some(1), "rrdscale daemon {args:?}");
        assert!(String::from_utf8_lossy(&theirs.stdout).contains("Usage: rrdcached [options]"));
        assert!(String::from_utf8_lossy(&ours.stdout).contains("Usage: rrdscale daemon [options]"));
    }
}

/// A `-j` directory that does not exist is refused before anything starts,
/// with rrdcached's message and status 6, and is not created (a mistyped
/// path must not start a daemon on an empty journal while the real one
/// waits, unreplayed).
#[test]
fn a_missing_journal_directory_is_refused_like_rrdcached() {
    assert!(Path::new(RRDCACHED).is_file(), "rrdcached 1.7.2 must be installed at {RRDCACHED}");
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    std::fs::create_dir(&base).unwrap();
    for (program, pre) in [(RRDCACHED, &[][..]), (env!("CARGO_BIN_EXE_rrdscale"), &["daemon"][..])] {
        for missing in ["nojournal", "a/b/c"] {
            let journal = dir.path().join(missing);
            let out = Command::new(program)
                .args(pre)
                .args(["-g", "-l", &format!("unix:{}", dir.path().join("sock").display())])
                .args(["-b", base.to_str().unwrap(), "-j", journal.to_str().unwrap()])
                .args(["-p", dir.path().join("pid").to_str().unwrap()])
                .output()
                .unwrap();
            assert_eq!(
                first_line(&out.stderr),
                format!("Unable to resolve journal path ({},No such file or directory)", journal.display()),
                "{program} -j {missing}"
            );
            assert_eq!(out.status.code(), Some(6), "{program} -j {missing}");
            assert!(!journal.exists() && !dir.path().join("a").exists(), "{program} created {missing}");
        }
    }
}
