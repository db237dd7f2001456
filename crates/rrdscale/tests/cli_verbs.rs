//! The CLI's own verbs against rrdtool 1.7.2: pipe mode's remote commands
//! (`rrdscale - [DIR]` with `cd`, `mkdir`, `pwd`, `ls`, `quit`), the
//! version banner tools parse (`--version`, `-v`), and the usage text.
//!
//! Pipe sessions run through both programs, each in its own fresh copy of
//! the same directory tree, and must print the same lines (the timing on
//! `OK` lines aside) and exit the same way. rrdtool is required: when it is
//! missing these tests fail with a message.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::pipe::tool_command;

const RRDTOOL: &str = "/usr/bin/rrdtool";
const RRDSCALE: &str = env!("CARGO_BIN_EXE_rrdscale");
const T0: i64 = 1_000_000_000;

fn run(program: &str, args: &[&str], dir: &Path, stdin: &str) -> Output {
    let mut child = tool_command(program, dir)
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {program} ({e}); rrdtool 1.7.2 must be installed"));
    // A program that exits before reading (a bad directory) closes the pipe.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn rrdtool_ok(args: &[&str], dir: &Path) {
    let out = run(RRDTOOL, args, dir, "");
    assert!(out.status.success(), "rrdtool {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Status, stdout and stderr, with `OK u:… s:… r:…` cut to `OK`.
fn outcome(out: &Output) -> String {
    let norm = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .split_inclusive('\n')
            .map(|l| if l.starts_with("OK u:") { "OK\n".to_string() } else { l.to_string() })
            .collect::<String>()
    };
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        norm(&out.stdout),
        norm(&out.stderr)
    )
}

/// The tree every session starts from: RRDs at two levels (same name,
/// different contents), names `ls` must show or leave out, links.
fn template() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir_all(root.join("sub/inner")).unwrap();
    std::fs::create_dir_all(root.join("sub/d.rrd")).unwrap();
    for (dir, last) in [("", T0 + 300), ("sub", T0 + 900)] {
        for name in ["x.rrd", "u.rrd"] {
            let path = root.join(dir).join(name);
            let path = path.to_str().unwrap();
            rrdtool_ok(
                &[
                    "create",
                    path,
                    "-b",
                    &T0.to_string(),
                    "-s",
                    "300",
                    "DS:v:GAUGE:600:U:U",
                    "RRA:LAST:0.5:1:10",
                ],
                &root,
            );
            rrdtool_ok(&["update", path, &format!("{last}:1")], &root);
        }
    }
    for name in ["Y.RRD", ".rrd", "abc.txt", "rrd", "z.rrd.bak"] {
        std::fs::write(root.join("sub").join(name), b"x").unwrap();
    }
    std::os::unix::fs::symlink("x.rrd", root.join("sub/link.rrd")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("sub/dangling.rrd")).unwrap();
    std::os::unix::fs::symlink("inner", root.join("sub/dirlink")).unwrap();
    (t, root)
}

/// A fresh copy of `from` at `to` (entries created in the same order, so
/// that readdir lists them in the same order).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let mut entries: Vec<_> = std::fs::read_dir(from).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Runs `args` with `stdin` through both programs, each in a fresh copy of
/// the tree at the same path; returns (rrdtool's, ours).
fn both(tree: &Path, args: &[&str], stdin: &str) -> (String, String) {
    let work = tree.parent().unwrap().join("work");
    let mut outcomes = Vec::new();
    for program in [RRDTOOL, RRDSCALE] {
        let _ = std::fs::remove_dir_all(&work);
        copy_tree(tree, &work);
        let stdin = stdin.replace("$WORK", work.to_str().unwrap());
        let args: Vec<String> = args.iter().map(|a| a.replace("$WORK", work.to_str().unwrap())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        outcomes.push(outcome(&run(program, &args, &work, &stdin)));
    }
    let ours = outcomes.pop().unwrap();
    (outcomes.pop().unwrap(), ours)
}

#[test]
fn remote_commands_match_rrdtool() {
    let (_t, tree) = template();
    let session = [
        "pwd",
        "last x.rrd",
        "ls",
        // Relative names follow the directory: these are other files.
        "cd sub",
        "pwd",
        "last x.rrd",
        "ls",
        // An update after cd must reach this directory's u.rrd, not the
        // file of that name kept open from before.
        "cd ..",
        &format!("update u.rrd {}:5", T0 + 600),
        "cd sub",
        &format!("update u.rrd {}:7", T0 + 1200),
        "lastupdate u.rrd",
        "cd ..",
        "lastupdate u.rrd",
        // mkdir, then into it; errors and argument counts.
        "mkdir made",
        "mkdir made",
        "mkdir nodir/made",
        "mkdir ''",
        "cd made",
        "pwd",
        "ls",
        "cd",
        "cd a b",
        "cd nope",
        "cd ../sub/abc.txt",
        "pwd extra",
        "ls -l",
        "mkdir",
        "quit now",
        "- x",
        // Absolute names and leaving the start directory are allowed.
        "cd /",
        "pwd",
        "cd $WORK/sub/inner",
        "pwd",
        "last ../x.rrd",
        "quit",
        "pwd",
    ];
    let (theirs, ours) = both(&tree, &["-"], &(session.join("\n") + "\n"));
    assert_eq!(theirs, ours, "rrdtool (left) and rrdscale (right) differ");
    // The session went where it was meant to (a typo would fail both alike).
    for expected in ["/work/made\n", "- link.rrd\n", "d inner\n", "1000001200: 7\n", "1000000600: 5\n"] {
        assert!(ours.contains(expected), "{expected:?} missing:\n{ours}");
    }
}

#[test]
fn the_start_directory_argument_matches_rrdtool() {
    let (_t, tree) = template();
    for args in [
        &["-", "sub"][..],
        &["-", "$WORK/sub/inner"],
        &["-", ""],
        &["-", "nodir"],
        &["-", "sub/abc.txt"],
        &["-", "a", "b"],
    ] {
        let (theirs, ours) = both(&tree, args, "pwd\nls\nlast x.rrd\n");
        assert_eq!(theirs, ours, "rrdtool (left) and rrdscale (right) differ for {args:?}");
    }
}

#[test]
fn a_blank_line_is_answered() {
    // rrdtool answers a blank line with its usage text and OK; a client
    // waiting for the answer must not hang.
    let (_t, tree) = template();
    let out = run(RRDSCALE, &["-"], &tree, "\n   \n-\npwd\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| l.starts_with("OK u:")).count(), 4, "{text}");
    assert!(text.contains("Valid remote commands: quit, ls, cd, mkdir, pwd"), "{text}");
}

/// The version as the tools that probe `rrdtool -v` read it: Cacti matches
/// `^RRDtool ([0-9.]+) `, others take the second word of the first line or
/// cut the first line before `Copyright`.
fn parsed_versions(first_line: &str) -> (Option<String>, Option<String>, Option<String>) {
    let cacti = first_line.strip_prefix("RRDtool ").and_then(|rest| {
        let v: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        (!v.is_empty() && rest[v.len()..].starts_with(' ')).then_some(v)
    });
    let second_word = first_line.split_whitespace().nth(1).map(str::to_string);
    let before_copyright = first_line
        .strip_prefix("RRDtool ")
        .and_then(|rest| rest.find("Copyright").map(|i| rest[..i].trim_end().to_string()));
    (cacti, second_word, before_copyright)
}

#[test]
fn version_banner_parses_as_rrdtools() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = run(RRDTOOL, &["-v"], dir.path(), "");
    let their_line = String::from_utf8_lossy(&theirs.stdout).lines().next().unwrap_or_default().to_string();
    let expected = parsed_versions(&their_line);
    assert_eq!(expected.0.as_deref(), Some("1.7.2"), "rrdtool's own banner: {their_line}");
    for flag in ["--version", "-v", "version", "v", "-version"] {
        let out = run(RRDSCALE, &[flag], dir.path(), "");
        assert_eq!(out.status.code(), theirs.status.code(), "{flag}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let first = text.lines().next().unwrap_or_default();
        assert_eq!(parsed_versions(first), expected, "{flag}: {first}");
        assert!(first.contains(&format!("rrdscale {}", env!("CARGO_PKG_VERSION"))), "{first}");
    }
    // With more words rrdtool prints the version line alone.
    let out = run(RRDSCALE, &["--version", "x"], dir.path(), "");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert_eq!(parsed_versions(text.trim_end()), expected);
    // And in pipe mode.
    let out = run(RRDSCALE, &["-"], dir.path(), "--version x\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("RRDtool 1.7.2 ") && text.lines().nth(1).unwrap_or("").starts_with("OK u:"),
        "{text}"
    );
}

/// The commands a usage text lists, one per line after `Commands:`.
fn listed(usage: &str) -> Vec<String> {
    usage
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn usage_lists_every_command() {
    let dir = tempfile::tempdir().unwrap();
    // rrdtool's usage, with no arguments, exits 0; its list of commands.
    let theirs = run(RRDTOOL, &[], dir.path(), "");
    assert_eq!(theirs.status.code(), Some(0));
    let their_text = String::from_utf8_lossy(&theirs.stdout).into_owned();
    let from = their_text.find("Valid commands:").expect("rrdtool's usage lists its commands");
    let their_commands: Vec<&str> = their_text[from + "Valid commands:".len()..]
        .split("\n\n")
        .next()
        .unwrap()
        .split([',', ' ', '\t', '\n'])
        .filter(|w| !w.is_empty())
        .collect();
    assert!(their_commands.contains(&"graphv"), "{their_commands:?}");
    for args in [&[][..], &["help"], &["--help"], &["-h"]] {
        let out = run(RRDSCALE, args, dir.path(), "");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let ours = listed(&String::from_utf8_lossy(&out.stdout));
        for c in &their_commands {
            assert!(ours.iter().any(|o| o == c), "{args:?}: usage lacks rrdtool's {c}: {ours:?}");
        }
        for c in ["daemon", "web", "bench", "pagesim", "fincore", "fadvise"] {
            assert!(ours.iter().any(|o| o == c), "{args:?}: usage lacks {c}: {ours:?}");
        }
        assert_eq!(ours.len(), their_commands.len() + 6, "{ours:?}");
    }
    // Every command listed is one the program runs.
    let out = run(RRDSCALE, &[], dir.path(), "");
    for c in listed(&String::from_utf8_lossy(&out.stdout)) {
        let probe = run(RRDSCALE, &[&c, "--no-such-option-at-all"], dir.path(), "");
        let err = String::from_utf8_lossy(&probe.stderr);
        assert!(!err.contains("unknown function"), "{c}: {err}");
    }
    // A lone word: the usage text and status 0, as rrdtool.
    for word in ["graph", "graphv", "last", "lastupdate", "first", "info", "list", "fetch", "xport", "nosuch"]
    {
        let theirs = run(RRDTOOL, &[word], dir.path(), "");
        let ours = run(RRDSCALE, &[word], dir.path(), "");
        assert_eq!(ours.status.code(), theirs.status.code(), "{word}");
        assert!(String::from_utf8_lossy(&ours.stdout).starts_with("RRDtool 1.7.2 "), "{word}");
        assert!(ours.stderr.is_empty(), "{word}: {}", String::from_utf8_lossy(&ours.stderr));
    }
    // A command neither knows: rrdtool's words and status.
    let theirs = run(RRDTOOL, &["nosuch", "x"], dir.path(), "");
    let ours = run(RRDSCALE, &["nosuch", "x"], dir.path(), "");
    assert_eq!(outcome(&ours), outcome(&theirs));
}
