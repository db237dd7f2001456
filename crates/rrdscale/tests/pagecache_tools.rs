//! `rrdscale fincore` and `rrdscale fadvise` against the kernel's own view of
//! the page cache and against util-linux `fincore`.
//!
//! Every test works in a directory on a disk-backed filesystem (tmpfs keeps
//! pages whatever DONTNEED says, which would make eviction untestable), puts
//! files into a known cache state with the engine's `pagecache` primitives
//! (evict, then read chosen pages with readahead off), and checks what the
//! tools print. util-linux `fincore` is the oracle for the totals; when it is
//! missing the tests fail with a message rather than pass.
//!
//! Deliberately absent: timing assertions. The 10,000-file run prints its
//! time for the record only.

use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rrd_engine::pagecache::{self, Advice};

const UTIL_LINUX_FINCORE: &str = "/usr/bin/fincore";

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn rrdscale(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_rrdscale")).args(args).output().expect("run rrdscale");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn rrdscale_ok(args: &[&str]) -> String {
    let run = rrdscale(args);
    assert_eq!(run.code, Some(0), "rrdscale {args:?} failed:\n{}{}", run.stdout, run.stderr);
    run.stdout
}

/// The filesystem type of `dir` as `stat -f` names it.
fn fs_type(dir: &Path) -> String {
    let out = Command::new("stat").args(["-f", "-c", "%T"]).arg(dir).output().expect("run stat -f");
    assert!(out.status.success(), "stat -f {} failed", dir.display());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A fresh directory on a disk-backed filesystem: under cargo's target
/// tmpdir, else /var/tmp. Fails the test if both are tmpfs.
fn disk_dir() -> tempfile::TempDir {
    for base in [PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from("/var/tmp")] {
        fs::create_dir_all(&base).unwrap();
        if fs_type(&base) != "tmpfs" {
            return tempfile::Builder::new().prefix("pagecache-tools").tempdir_in(&base).unwrap();
        }
    }
    panic!("no disk-backed directory for page-cache tests: both the cargo target dir and /var/tmp are tmpfs");
}

fn page() -> u64 {
    pagecache::page_size()
}

/// Writes a file of `len` bytes and drops all its pages.
fn cold_file(path: &Path, len: u64) {
    fs::write(path, vec![0x5au8; len as usize]).unwrap();
    let f = File::open(path).unwrap();
    pagecache::evict(&f).unwrap();
    assert_eq!(pagecache::resident_count(&f).unwrap().0, 0, "{} did not go cold", path.display());
}

/// Reads one byte of each listed page with readahead off, so exactly those
/// pages become resident.
fn touch_pages(path: &Path, pages: &[u64]) {
    let f = File::open(path).unwrap();
    pagecache::advise(&f, Advice::Random, 0, 0).unwrap();
    let mut byte = [0u8; 1];
    for &p in pages {
        f.read_exact_at(&mut byte, p * page()).unwrap();
    }
}

/// rrdscale fincore's per-file lines (no headings): resident pages, pages,
/// resident bytes, optional ranges, file.
#[derive(Debug, PartialEq)]
struct Line {
    resident: u64,
    pages: u64,
    resident_bytes: u64,
    ranges: Option<String>,
    file: String,
}

fn parse_lines(stdout: &str, with_ranges: bool) -> Vec<Line> {
    stdout
        .lines()
        .map(|l| {
            let n = if with_ranges { 5 } else { 4 };
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), n, "unexpected line {l:?}");
            Line {
                resident: f[0].parse().unwrap(),
                pages: f[1].parse().unwrap(),
                resident_bytes: f[2].parse().unwrap(),
                ranges: with_ranges.then(|| f[3].to_string()),
                file: f[n - 1].to_string(),
            }
        })
        .collect()
}

/// util-linux fincore's (RES bytes, PAGES) per file, in argument order.
fn util_linux_fincore(files: &[PathBuf]) -> Vec<(u64, u64, String)> {
    assert!(
        Path::new(UTIL_LINUX_FINCORE).exists(),
        "util-linux fincore is not installed (looked for {UTIL_LINUX_FINCORE}); apt-get install util-linux"
    );
    let out = Command::new(UTIL_LINUX_FINCORE)
        .args(["--bytes", "--noheadings", "--raw", "--output", "RES,PAGES,FILE"])
        .args(files)
        .output()
        .expect("run util-linux fincore");
    assert!(out.status.success(), "util-linux fincore failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.splitn(3, ' ').collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].to_string())
        })
        .collect()
}

fn strs(paths: &[PathBuf]) -> Vec<&str> {
    paths.iter().map(|p| p.to_str().unwrap()).collect()
}

#[test]
fn fincore_counts_the_pages_read_and_agrees_with_util_linux() {
    let dir = disk_dir();
    // Page sets per file; the last file has a partial last page.
    let touched: [&[u64]; 5] = [&[], &[0], &[0, 1, 2, 3, 17], &[19], &[0, 5, 10, 15, 20]];
    let mut files = Vec::new();
    for (i, pages) in touched.iter().enumerate() {
        let path = dir.path().join(format!("f{i}.rrd"));
        let len = if i == 4 { 20 * page() + 100 } else { 20 * page() };
        cold_file(&path, len);
        touch_pages(&path, pages);
        files.push(path);
    }
    let mut args = vec!["fincore", "-n"];
    args.extend(strs(&files));
    let lines = parse_lines(&rrdscale_ok(&args), false);
    assert_eq!(lines.len(), files.len());
    for ((line, pages), path) in lines.iter().zip(touched).zip(&files) {
        assert_eq!(line.file, path.to_str().unwrap());
        assert_eq!(line.resident, pages.len() as u64, "{line:?}");
        assert_eq!(line.resident_bytes, pages.len() as u64 * page(), "{line:?}");
    }
    assert_eq!(lines.iter().map(|l| l.pages).collect::<Vec<_>>(), [20, 20, 20, 20, 21]);

    let theirs = util_linux_fincore(&files);
    assert_eq!(theirs.len(), files.len(), "{theirs:?}");
    for (ours, (res_bytes, res_pages, file)) in lines.iter().zip(&theirs) {
        assert_eq!((ours.resident_bytes, ours.resident, &ours.file), (*res_bytes, *res_pages, file));
    }
    let our_total: u64 = lines.iter().map(|l| l.resident).sum();
    let their_total: u64 = theirs.iter().map(|t| t.1).sum();
    assert_eq!(our_total, their_total);
    assert_eq!(our_total, 12);

    // The summary's totals are the same numbers.
    let mut args = vec!["fincore", "--summary"];
    args.extend(strs(&files));
    let summary = rrdscale_ok(&args);
    assert!(summary.contains("files           5\n"), "{summary}");
    assert!(summary.contains("pages           101\n"), "{summary}");
    assert!(summary.starts_with("files") && summary.contains("resident pages  12 "), "{summary}");
    assert!(summary.contains(&format!("resident bytes  {}\n", 12 * page())), "{summary}");
}

#[test]
fn fadvise_dontneed_empties_the_cache_of_dirty_and_clean_files() {
    let dir = disk_dir();
    assert_ne!(fs_type(dir.path()), "tmpfs");
    let mut files = Vec::new();
    for i in 0..4 {
        let path = dir.path().join(format!("d{i}.rrd"));
        // Just written: every page resident, and dirty (DONTNEED alone would
        // keep them; fadvise must fdatasync first).
        fs::write(&path, vec![1u8; (8 * page()) as usize]).unwrap();
        files.push(path);
    }
    let mut args = vec!["fincore", "-n"];
    args.extend(strs(&files));
    let before = parse_lines(&rrdscale_ok(&args), false);
    assert!(before.iter().all(|l| l.resident == 8 && l.pages == 8), "{before:?}");

    let mut fadvise = vec!["fadvise", "--dontneed"];
    fadvise.extend(strs(&files));
    let run = rrdscale(&fadvise);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "", "fadvise prints nothing on stdout");
    assert!(!run.stderr.contains("note:"), "DONTNEED lasts; no note expected: {}", run.stderr);

    let after = parse_lines(&rrdscale_ok(&args), false);
    assert!(after.iter().all(|l| l.resident == 0 && l.pages == 8), "{after:?}");
    assert!(util_linux_fincore(&files).iter().all(|t| t.0 == 0 && t.1 == 0));
}

#[test]
fn fadvise_willneed_reads_files_in_and_fleeting_advice_is_flagged() {
    let dir = disk_dir();
    let path = dir.path().join("w.rrd");
    cold_file(&path, 6 * page());
    let p = path.to_str().unwrap();
    let run = rrdscale(&["fadvise", "--random", "--willneed", "-v", p]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("note: --random attaches to the open file description"), "{}", run.stderr);
    assert!(run.stderr.contains("random+willneed applied to 1 files (0 failed)"), "{}", run.stderr);
    // WILLNEED only starts the reads; wait for them to land.
    let mut resident = 0;
    for _ in 0..300 {
        resident = parse_lines(&rrdscale_ok(&["fincore", "-n", p]), false)[0].resident;
        if resident == 6 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(resident, 6);
    assert!(rrdscale_ok(&["fadvise", "--help"]).contains("NO lasting effect"));
}

#[test]
fn pages_option_lists_resident_page_ranges() {
    let dir = disk_dir();
    let a = dir.path().join("a.rrd");
    let b = dir.path().join("b.rrd");
    let c = dir.path().join("c.rrd");
    for path in [&a, &b, &c] {
        cold_file(path, 20 * page());
    }
    touch_pages(&a, &[0, 1, 2, 3, 17]);
    touch_pages(&b, &[5, 7, 8, 19]);
    let args = ["fincore", "--pages", a.to_str().unwrap(), b.to_str().unwrap(), c.to_str().unwrap()];
    let stdout = rrdscale_ok(&args);
    let (heading, rest) = stdout.split_once('\n').unwrap();
    assert_eq!(
        heading.split_whitespace().collect::<Vec<_>>(),
        ["RES_PAGES", "PAGES", "RES_BYTES", "RESIDENT", "FILE"]
    );
    let lines = parse_lines(rest, true);
    let ranges: Vec<&str> = lines.iter().map(|l| l.ranges.as_deref().unwrap()).collect();
    assert_eq!(ranges, ["0-3,17", "5,7-8,19", "-"]);
    assert_eq!(lines.iter().map(|l| l.resident).collect::<Vec<_>>(), [5, 4, 0]);

    // The same in JSON, checked by a real JSON parser.
    let json = rrdscale_ok(&["fincore", "--pages", "--json", a.to_str().unwrap(), c.to_str().unwrap()]);
    let check = Command::new("python3")
        .args([
            "-c",
            "import json,sys; d=json.load(sys.stdin); f=d['files']; \
             print(f[0]['resident'], f[0]['resident_pages'], f[0]['pages'], f[1]['resident'], len(f))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(json.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        })
        .expect("python3 is needed to validate the JSON output");
    assert!(check.status.success(), "invalid JSON:\n{json}\n{}", String::from_utf8_lossy(&check.stderr));
    assert_eq!(String::from_utf8_lossy(&check.stdout), "0-3,17 5 20 - 2\n");
}

#[test]
fn summary_histogram_counts_files_by_resident_pages() {
    let dir = disk_dir();
    // Resident pages per file: 0,0,0,1,1,2,3,3,3,8 (of 8).
    let counts = [0u64, 0, 0, 1, 1, 2, 3, 3, 3, 8];
    for (i, &n) in counts.iter().enumerate() {
        let path = dir.path().join(format!("s{i:02}.rrd"));
        cold_file(&path, 8 * page());
        touch_pages(&path, &(0..n).collect::<Vec<_>>());
    }
    // A directory operand: all ten files are found by the walk.
    let stdout = rrdscale_ok(&["fincore", "--summary", dir.path().to_str().unwrap()]);
    let table: Vec<Vec<&str>> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("RES_PAGES"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        table,
        [
            ["0", "3", "30.00%", "30.00%"],
            ["1", "2", "20.00%", "50.00%"],
            ["2", "1", "10.00%", "60.00%"],
            ["3", "3", "30.00%", "90.00%"],
            ["8", "1", "10.00%", "100.00%"],
        ],
        "{stdout}"
    );
    assert!(stdout.contains("files           10\n"), "{stdout}");
    assert!(stdout.contains("pages           80\n"), "{stdout}");
    assert!(stdout.contains("resident pages  21 (26.2% of pages, 2.10 per file)\n"), "{stdout}");

    let json = rrdscale_ok(&["fincore", "--summary", "--json", dir.path().to_str().unwrap()]);
    assert!(json.contains("\"files\":10,\"failed\":0,\"pages\":80,\"resident_pages\":21"), "{json}");
    assert!(
        json.contains(
            "\"histogram\":[{\"resident_pages\":0,\"files\":3},{\"resident_pages\":1,\"files\":2},\
             {\"resident_pages\":2,\"files\":1},{\"resident_pages\":3,\"files\":3},\
             {\"resident_pages\":8,\"files\":1}]"
        ),
        "{json}"
    );
}

#[test]
fn directories_are_walked_for_rrd_files_only_unless_all_files() {
    let dir = disk_dir();
    let d = dir.path();
    fs::create_dir_all(d.join("x/y")).unwrap();
    for name in ["x/b.rrd", "x/y/a.rrd", "x/notes.txt", "top.rrd"] {
        cold_file(&d.join(name), page());
    }
    let rel = |stdout: &str| -> Vec<String> {
        parse_lines(stdout, false)
            .into_iter()
            .map(|l| Path::new(&l.file).strip_prefix(d).unwrap().to_string_lossy().into_owned())
            .collect()
    };
    let root = d.to_str().unwrap();
    assert_eq!(rel(&rrdscale_ok(&["fincore", "-n", "-r", root])), ["top.rrd", "x/b.rrd", "x/y/a.rrd"]);
    assert_eq!(
        rel(&rrdscale_ok(&["fincore", "-n", "--all-files", root])),
        ["top.rrd", "x/b.rrd", "x/notes.txt", "x/y/a.rrd"]
    );
}

#[test]
fn unexaminable_files_are_reported_and_the_rest_still_processed() {
    let dir = disk_dir();
    let d = dir.path();
    let good1 = d.join("good1.rrd");
    let good2 = d.join("good2.rrd");
    fs::write(&good1, vec![1u8; (2 * page()) as usize]).unwrap();
    fs::write(&good2, vec![1u8; (3 * page()) as usize]).unwrap();
    let missing = d.join("missing.rrd");
    let empty = d.join("empty.rrd");
    File::create(&empty).unwrap();
    let fifo = d.join("fifo.rrd");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("run mkfifo");
    assert!(made.success());
    let all = [&good1, &missing, &empty, &fifo, &good2].map(|p| p.to_str().unwrap().to_string());
    let all: Vec<&str> = all.iter().map(String::as_str).collect();

    let mut args = vec!["fincore", "-n"];
    args.extend(&all);
    let run = rrdscale(&args);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    let lines = parse_lines(&run.stdout, false);
    assert_eq!(lines.iter().map(|l| l.file.as_str()).collect::<Vec<_>>(), [all[0], all[4]]);
    assert_eq!(lines.iter().map(|l| l.pages).collect::<Vec<_>>(), [2, 3]);
    let errs: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(errs.len(), 4, "{}", run.stderr);
    assert_eq!(errs[0], format!("rrdscale fincore: {}: cannot open: No such file or directory", all[1]));
    assert_eq!(
        errs[1],
        format!("rrdscale fincore: {}: the file is empty, so it has no pages to examine", all[2])
    );
    assert_eq!(errs[2], format!("rrdscale fincore: {}: not a regular file", all[3]));
    assert_eq!(errs[3], "ERROR: fincore: 3 of 5 files or directories could not be examined");

    // fadvise: the same failures, and the good files are still evicted.
    let mut args = vec!["fadvise", "--dontneed"];
    args.extend(&all);
    let run = rrdscale(&args);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("{}: cannot open: No such file or directory", all[1])),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&format!("{}: not a regular file", all[3])), "{}", run.stderr);
    assert!(
        run.stderr.ends_with("ERROR: fadvise: 2 of 5 files or directories could not be advised\n"),
        "an empty file can be advised: {}",
        run.stderr
    );
    let after = parse_lines(&rrdscale_ok(&["fincore", "-n", all[0], all[4]]), false);
    assert!(after.iter().all(|l| l.resident == 0), "{after:?}");

    // No advice, no files: usage errors.
    assert_eq!(rrdscale(&["fadvise", all[0]]).code, Some(1));
    assert_eq!(rrdscale(&["fincore"]).code, Some(1));
    assert_eq!(rrdscale(&["fadvise", "--dontneed", "--jobs", "0", all[0]]).code, Some(1));
}

#[test]
fn ten_thousand_files_dontneed() {
    let dir = disk_dir();
    let started = Instant::now();
    for d in 0..100 {
        let sub = dir.path().join(format!("{d:03}"));
        fs::create_dir(&sub).unwrap();
        for f in 0..100 {
            // Two pages each, dirty when fadvise runs.
            fs::write(sub.join(format!("{f:03}.rrd")), vec![7u8; (2 * page()) as usize]).unwrap();
        }
    }
    let created = started.elapsed();
    let root = dir.path().to_str().unwrap();
    let run = rrdscale(&["fadvise", "--dontneed", "--verbose", root]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("dontneed applied to 10000 files (0 failed)"), "{}", run.stderr);
    println!("created 10000 dirty files in {:.3} s", created.as_secs_f64());
    print!("{}", run.stderr);

    let started = Instant::now();
    let summary = rrdscale_ok(&["fincore", "--summary", "--json", root]);
    println!("fincore --summary over 10000 files: {:.3} s", started.elapsed().as_secs_f64());
    assert!(
        summary.contains("\"files\":10000,\"failed\":0,\"pages\":20000,\"resident_pages\":0,"),
        "{summary}"
    );
}
