//! `create --source`: prefilling a new RRD from existing ones, compared with
//! the real rrdtool 1.7.2 (/usr/bin/rrdtool).
//!
//! Every scenario builds its source files with rrdtool (seeded update
//! streams over several days), then runs the same `create --source ...`
//! command line through rrdtool and through rrdscale and requires:
//! - the same exit status, standard output and standard error;
//! - `rrdtool dump` of both files identical byte for byte;
//! - `rrdtool info` identical except the file name and the `cur_row` lines
//!   (rrdtool picks a random current row per archive);
//! - the files identical byte for byte once that randomness is taken out:
//!   the header up to the row pointers, and each archive's rows rotated
//!   into time order;
//! - and, so that a comparison of two empty files cannot pass for a test,
//!   that the scenario really prefilled known values.
//!
//! A missing rrdtool fails every test here; it is never a skip. The number
//! of random cases can be raised with `RRDSCALE_PREFILL_CASES`.

use rrd_testkit::Rng;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RRDTOOL: &str = "/usr/bin/rrdtool";

fn rrdtool_path() -> &'static str {
    assert!(
        Path::new(RRDTOOL).exists(),
        "rrdtool not installed: run .ci/run or apt-get install rrdtool (looked for {RRDTOOL})"
    );
    RRDTOOL
}

fn run(program: &str, dir: &Path, args: &[String]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .env_remove("RRDCACHED_ADDRESS")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

fn rrdtool(dir: &Path, args: &[String]) -> Output {
    run(rrdtool_path(), dir, args)
}

fn rrdscale(dir: &Path, args: &[String]) -> Output {
    run(env!("CARGO_BIN_EXE_rrdscale"), dir, args)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn must(dir: &Path, args: &[String]) -> String {
    let out = rrdtool(dir, args);
    assert!(out.status.success(), "rrdtool {args:?} failed: {}", text(&out.stderr));
    text(&out.stdout)
}

/// A source file to build: its definitions, and an update stream of
/// `updates` readings from `start`, spaced around `step` with gaps.
struct SourceSpec {
    file: &'static str,
    start: i64,
    step: u64,
    /// `(name, type)` of each data source.
    ds: Vec<(&'static str, &'static str)>,
    rras: Vec<String>,
    updates: usize,
    seed: u64,
    /// Readings are `base + noise` for gauges, so overlapping sources can
    /// be told apart.
    base: u64,
}

fn build_source(dir: &Path, s: &SourceSpec) {
    let mut args =
        strings(&["create", s.file, "--start", &s.start.to_string(), "--step", &s.step.to_string()]);
    for (name, dst) in &s.ds {
        args.push(format!("DS:{name}:{dst}:{}:U:U", s.step * 2));
    }
    args.extend(s.rras.iter().cloned());
    must(dir, &args);
    let mut rng = Rng::new(s.seed);
    let mut t = s.start;
    let mut counters = vec![0u64; s.ds.len()];
    let mut batch: Vec<String> = Vec::new();
    for _ in 0..s.updates {
        let step = s.step as i64;
        t += match rng.below(10) {
            0 => step * 3,
            1 => (step / 2).max(1),
            2 => 1 + rng.below(s.step * 2) as i64,
            _ => step,
        };
        let mut line = t.to_string();
        for (k, (_, dst)) in s.ds.iter().enumerate() {
            line.push(':');
            if rng.below(100) < 4 {
                line.push('U');
            } else if matches!(*dst, "GAUGE" | "DDERIVE") {
                line.push_str(&(s.base + rng.below(100)).to_string());
            } else {
                counters[k] += s.base + rng.below(1000);
                line.push_str(&counters[k].to_string());
            }
        }
        batch.push(line);
        if batch.len() == 200 {
            let mut a = strings(&["update", s.file]);
            a.append(&mut batch);
            must(dir, &a);
        }
    }
    if !batch.is_empty() {
        let mut a = strings(&["update", s.file]);
        a.append(&mut batch);
        must(dir, &a);
    }
}

/// What the comparison saw, for scenario-specific assertions.
struct Compared {
    dump: String,
}

impl Compared {
    /// Known values in the archives' rows.
    fn known_values(&self) -> usize {
        self.dump.split("<v>").skip(1).filter(|v| !v.starts_with("NaN")).count()
    }
    fn known_last_ds(&self) -> usize {
        self.dump.split("<last_ds>").skip(1).filter(|v| !v.starts_with("U<")).count()
    }
}

/// Runs `create <file> <args>` through both tools and compares everything
/// observable (see the module doc). Returns rrdtool's dump.
fn compare_create(dir: &Path, args: &[String]) -> Compared {
    let mut a = strings(&["create", "by-rrdtool.rrd"]);
    a.extend_from_slice(args);
    let mut b = strings(&["create", "by-rrdscale.rrd"]);
    b.extend_from_slice(args);
    let expected = rrdtool(dir, &a);
    let got = rrdscale(dir, &b);
    let context = format!("create {}", args.join(" "));
    assert_eq!(text(&got.stderr), text(&expected.stderr), "stderr of {context}");
    assert_eq!(text(&got.stdout), text(&expected.stdout), "stdout of {context}");
    assert_eq!(got.status.code(), expected.status.code(), "exit status of {context}");
    assert!(expected.status.success(), "rrdtool refused {context}: {}", text(&expected.stderr));

    let dump_a = must(dir, &strings(&["dump", "by-rrdtool.rrd"]));
    let dump_b = must(dir, &strings(&["dump", "by-rrdscale.rrd"]));
    if dump_a != dump_b {
        let first = dump_a.lines().zip(dump_b.lines()).position(|(x, y)| x != y).unwrap_or(0);
        let show = |d: &str| d.lines().skip(first.saturating_sub(3)).take(8).collect::<Vec<_>>().join("\n");
        panic!(
            "dump differs for {context} at line {}:\n--- rrdtool\n{}\n--- rrdscale\n{}",
            first + 1,
            show(&dump_a),
            show(&dump_b)
        );
    }

    let info = |file: &str| -> Vec<String> {
        must(dir, &strings(&["info", file]))
            .lines()
            .filter(|l| !l.starts_with("filename = ") && !l.contains(".cur_row = "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(info("by-rrdscale.rrd"), info("by-rrdtool.rrd"), "info of {context}");

    let raw_a = normalized_bytes(&dir.join("by-rrdtool.rrd"));
    let raw_b = normalized_bytes(&dir.join("by-rrdscale.rrd"));
    assert!(raw_a.0 == raw_b.0, "header bytes (before the row pointers) differ for {context}");
    assert!(raw_a.1 == raw_b.1, "data bytes (rows in time order) differ for {context}");
    Compared { dump: dump_a }
}

/// A file's bytes without the randomness of `cur_row`: the header up to
/// the row pointers, and the data area with every archive rotated so that
/// its oldest row comes first.
fn normalized_bytes(path: &PathBuf) -> (Vec<u8>, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let u64_at = |off: usize| u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap()) as usize;
    let (ds, rra) = (u64_at(24), u64_at(32));
    let rra_def = 128 + ds * 120;
    let pointers = rra_def + rra * 120 + 16 + ds * 112 + rra * ds * 80;
    let mut data = Vec::new();
    let mut off = pointers + rra * 8;
    for r in 0..rra {
        let rows = u64_at(rra_def + r * 120 + 24);
        let cur = u64_at(pointers + r * 8);
        let row_len = ds * 8;
        let area = &bytes[off..off + rows * row_len];
        data.extend_from_slice(&area[(cur + 1) * row_len..]);
        data.extend_from_slice(&area[..(cur + 1) * row_len]);
        off += rows * row_len;
    }
    assert_eq!(off, bytes.len(), "{} has trailing bytes", path.display());
    (bytes[..pointers].to_vec(), data)
}

fn source_args(files: &[&str]) -> Vec<String> {
    files.iter().flat_map(|f| ["--source".to_string(), f.to_string()]).collect()
}

/// `create`'s arguments after the file name: `--source` for each of
/// `files`, then `rest` split at white space (options and definitions).
fn with_sources(files: &[&str], rest: &str) -> Vec<String> {
    let mut args = source_args(files);
    args.extend(rest.split_whitespace().map(str::to_string));
    args
}

const DAY: i64 = 86_400;
const T0: i64 = 1_600_000_123;

fn five_minute_source(file: &'static str, start: i64, updates: usize, seed: u64, base: u64) -> SourceSpec {
    SourceSpec {
        file,
        start,
        step: 300,
        ds: vec![("in", "GAUGE"), ("out", "COUNTER")],
        rras: strings(&[
            "RRA:AVERAGE:0.5:1:600",
            "RRA:MAX:0.5:6:200",
            "RRA:AVERAGE:0.5:12:200",
            "RRA:MIN:0.5:12:100",
        ]),
        updates,
        seed,
        base,
    }
}

#[test]
fn same_step_other_archives() {
    let dir = tempfile::tempdir().unwrap();
    // Three days of five-minute readings.
    build_source(dir.path(), &five_minute_source("src.rrd", T0, 3 * 288, 1, 0));
    let args = with_sources(
        &["src.rrd"],
        "DS:in:GAUGE:600:U:U DS:out:COUNTER:600:U:U RRA:AVERAGE:0.5:1:300 RRA:LAST:0.5:1:100 \
         RRA:MAX:0.5:3:100 RRA:MIN:0.2:6:50 RRA:AVERAGE:0.9:24:30 RRA:MAX:0:288:10",
    );
    let c = compare_create(dir.path(), &args);
    assert!(c.known_values() > 500, "too little was prefilled:\n{}", c.dump);
    assert_eq!(c.known_last_ds(), 2, "the PDP state is copied from the source");
    // Without --start the new file's last update is the source's.
    let last = must(dir.path(), &strings(&["last", "src.rrd"]));
    assert!(c.dump.contains(&format!("<lastupdate>{}</lastupdate>", last.trim())));
}

#[test]
fn different_steps() {
    let dir = tempfile::tempdir().unwrap();
    let mut minute = five_minute_source("minute.rrd", T0, 3000, 2, 0);
    minute.step = 60;
    minute.rras = strings(&["RRA:AVERAGE:0.5:1:3000", "RRA:MAX:0.5:5:1000", "RRA:LAST:0.5:15:300"]);
    build_source(dir.path(), &minute);
    for (step, rras) in [
        ("300", &["RRA:AVERAGE:0.5:1:200", "RRA:MAX:0.5:3:100", "RRA:LAST:0.5:2:50"][..]),
        ("7", &["RRA:AVERAGE:0.5:1:2000", "RRA:MAX:0.5:100:50", "RRA:MIN:0.5:13:100"][..]),
        ("30", &["RRA:AVERAGE:0.5:1:500", "RRA:AVERAGE:0.5:4:500", "RRA:LAST:0:3:300"][..]),
        ("3600", &["RRA:AVERAGE:0.5:1:48", "RRA:MAX:0.5:24:5"][..]),
    ] {
        let args = with_sources(
            &["minute.rrd"],
            &format!("--step {step} DS:in:GAUGE:600:U:U DS:out:DERIVE:600:U:U {}", rras.join(" ")),
        );
        let c = compare_create(dir.path(), &args);
        assert!(c.known_values() > 20, "step {step}: too little was prefilled:\n{}", c.dump);
    }
}

#[test]
fn archives_of_other_cfs_fall_back_to_average() {
    let dir = tempfile::tempdir().unwrap();
    let mut src = five_minute_source("avg-only.rrd", T0, 4 * 288, 3, 10);
    src.rras = strings(&["RRA:AVERAGE:0.5:1:300", "RRA:AVERAGE:0.5:12:100", "RRA:AVERAGE:0.5:288:10"]);
    build_source(dir.path(), &src);
    let args = with_sources(
        &["avg-only.rrd"],
        "DS:in:GAUGE:600:U:U DS:out:COUNTER:600:U:U RRA:MIN:0.5:1:400 RRA:MAX:0.5:6:200 RRA:LAST:0.5:36:100",
    );
    let c = compare_create(dir.path(), &args);
    assert!(c.known_values() > 200, "too little was prefilled:\n{}", c.dump);
}

#[test]
fn renamed_data_sources_with_mappings() {
    let dir = tempfile::tempdir().unwrap();
    build_source(dir.path(), &five_minute_source("one.rrd", T0, 2 * 288, 4, 0));
    build_source(dir.path(), &five_minute_source("two.rrd", T0 + DAY / 2, 2 * 288, 5, 1000));
    let mut args = source_args(&["one.rrd", "two.rrd"]);
    args.extend(strings(&[
        // By name from any source, renamed, and pinned to source 1 or 2.
        "DS:in:GAUGE:600:U:U",
        "DS:inbound=in:GAUGE:600:U:U",
        "DS:first_in=in[1]:GAUGE:600:U:U",
        "DS:second_in=in[2]:GAUGE:600:U:U",
        "DS:second_out=out[2]:COUNTER:600:U:U",
        // A mapping to a source index that does not exist fills nothing.
        "DS:nowhere=in[3]:GAUGE:600:U:U",
        "DS:missing:GAUGE:600:U:U",
        "RRA:AVERAGE:0.5:1:800",
        "RRA:MAX:0.5:12:100",
    ]));
    let c = compare_create(dir.path(), &args);
    assert!(c.known_values() > 1000, "too little was prefilled:\n{}", c.dump);
    // first_in and second_in differ where both sources have data (their
    // readings are offset by 1000), so the index really selected a source.
    assert!(c.dump.contains("e+03</v>") && c.dump.contains("e+01</v>"));
}

#[test]
fn overlapping_sources_in_both_orders() {
    let dir = tempfile::tempdir().unwrap();
    // Days 0-3 and days 2-5: the overlap has different readings.
    build_source(dir.path(), &five_minute_source("early.rrd", T0, 3 * 288, 6, 0));
    let mut late = five_minute_source("late.rrd", T0 + 2 * DAY, 3 * 288, 7, 500);
    late.rras = strings(&["RRA:AVERAGE:0.5:1:2000", "RRA:MAX:0.5:3:700", "RRA:LAST:0.5:1:500"]);
    build_source(dir.path(), &late);
    let defs = "DS:in:GAUGE:600:U:U DS:out:COUNTER:600:U:U RRA:AVERAGE:0.5:1:2000 RRA:MAX:0.5:3:800 \
                RRA:LAST:0.5:2:700 RRA:MIN:0.5:12:200";
    let mut dumps = Vec::new();
    for order in [["early.rrd", "late.rrd"], ["late.rrd", "early.rrd"]] {
        let args = with_sources(&order, defs);
        let c = compare_create(dir.path(), &args);
        assert!(c.known_values() > 2000, "too little was prefilled:\n{}", c.dump);
        dumps.push(c.dump);
    }
    // The order of the sources decides which one wins in the overlap.
    assert_ne!(dumps[0], dumps[1]);
}

#[test]
fn explicit_start_times() {
    let dir = tempfile::tempdir().unwrap();
    build_source(dir.path(), &five_minute_source("src.rrd", T0, 3 * 288, 8, 0));
    let last: i64 = must(dir.path(), &strings(&["last", "src.rrd"])).trim().parse().unwrap();
    for start in [last, last - DAY, last - 7, last + 3600, last + 123, T0 - DAY] {
        let args = with_sources(
            &["src.rrd"],
            &format!(
                "--start {start} DS:in:GAUGE:600:U:U DS:out:COUNTER:600:U:U \
                 RRA:AVERAGE:0.5:1:1000 RRA:MAX:0.5:4:300 RRA:LAST:0.5:7:100"
            ),
        );
        compare_create(dir.path(), &args);
    }
}

#[test]
fn type_mismatch_template_and_repeated_source() {
    let dir = tempfile::tempdir().unwrap();
    build_source(dir.path(), &five_minute_source("src.rrd", T0, 2 * 288, 9, 0));
    // A different DS type keeps the row data but not the PDP state.
    let args = with_sources(&["src.rrd"], "DS:in:COUNTER:600:U:U DS:out:GAUGE:600:U:U RRA:AVERAGE:0.5:1:300");
    let c = compare_create(dir.path(), &args);
    assert_eq!(c.known_last_ds(), 0);
    assert!(c.known_values() > 100);
    // Definitions from a template, data from the sources (the template's
    // last update does not count when sources are given).
    let args = with_sources(&["src.rrd"], "--template src.rrd --step 600");
    compare_create(dir.path(), &args);
    // The same source twice, and a Holt-Winters source.
    must(
        dir.path(),
        &strings(&[
            "create",
            "hw.rrd",
            "--start",
            &T0.to_string(),
            "DS:in:GAUGE:600:U:U",
            "RRA:AVERAGE:0.5:1:300",
            "RRA:HWPREDICT:100:0.1:0.01:12",
        ]),
    );
    let updates: Vec<String> = (1..400).map(|i| format!("{}:{}", T0 + i * 300, (i * 7) % 50)).collect();
    let mut a = strings(&["update", "hw.rrd"]);
    a.extend(updates);
    must(dir.path(), &a);
    let args = with_sources(
        &["hw.rrd", "src.rrd", "hw.rrd"],
        "DS:in:GAUGE:600:U:U RRA:AVERAGE:0.5:1:500 RRA:MAX:0.5:6:100",
    );
    compare_create(dir.path(), &args);
}

/// Random schemas and streams: several sources of random steps, data
/// source types and archives, and a random target with renamed and pinned
/// data sources, with and without --start.
#[test]
fn random_cases_match_rrdtool() {
    let cases: u64 = std::env::var("RRDSCALE_PREFILL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let names = ["a", "b", "c"];
    let types = ["GAUGE", "COUNTER", "DERIVE", "ABSOLUTE", "DCOUNTER", "DDERIVE"];
    let cfs = ["AVERAGE", "MIN", "MAX", "LAST"];
    let random_rra = |rng: &mut Rng| {
        format!(
            "RRA:{}:{}:{}:{}",
            rng.pick(&cfs),
            rng.pick(&["0", "0.1", "0.5", "0.9"]),
            rng.pick(&[1, 1, 2, 3, 5, 6, 12, 7, 60, 288]),
            rng.pick(&[3, 10, 50, 200, 288, 1000])
        )
    };
    let mut prefilled = 0;
    for case in 0..cases {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng::new(0x5eed_0000 + case);
        let source_count = 1 + rng.below(3) as usize;
        let files = ["s1.rrd", "s2.rrd", "s3.rrd"];
        let mut all_names = Vec::new();
        for (i, file) in files.iter().enumerate().take(source_count) {
            let step =
                if case % 2 == 0 { *rng.pick(&[60u64, 300]) } else { *rng.pick(&[1u64, 7, 60, 300, 600]) };
            let ds_count = 1 + rng.below(3) as usize;
            let ds: Vec<(&'static str, &'static str)> =
                names[..ds_count].iter().map(|n| (*n, *rng.pick(&types))).collect();
            all_names.extend(ds.iter().map(|(n, _)| *n));
            let rras: Vec<String> = (0..1 + rng.below(3)).map(|_| random_rra(&mut rng)).collect();
            let spec = SourceSpec {
                file,
                start: T0 + rng.below(7200) as i64 - 3600,
                step,
                ds,
                rras,
                updates: ((DAY as u64 * (1 + rng.below(3))) / step).min(2500) as usize,
                seed: case * 10 + i as u64,
                base: 100 * i as u64,
            };
            build_source(dir.path(), &spec);
        }
        all_names.sort();
        all_names.dedup();
        let step = *rng.pick(&[60u64, 60, 300, 300, 300, 600, 1, 7, 900]);
        let mut args = Vec::new();
        for file in &files[..source_count] {
            args.extend(source_args(&[file]));
        }
        args.extend(strings(&["--step", &step.to_string()]));
        if rng.below(100) < 30 {
            args.extend(strings(&["--start", &(T0 + rng.below(20_000) as i64).to_string()]));
        }
        for name in &all_names {
            let dst = rng.pick(&types);
            let heartbeat = step * 2;
            args.push(match rng.below(10) {
                0 | 1 => format!("DS:{name}x={name}:{dst}:{heartbeat}:U:U"),
                2 => {
                    format!("DS:{name}y={name}[{}]:{dst}:{heartbeat}:U:U", 1 + rng.below(source_count as u64))
                }
                _ => format!("DS:{name}:{dst}:{heartbeat}:U:U"),
            });
        }
        for _ in 0..1 + rng.below(4) {
            args.push(random_rra(&mut rng));
        }
        let c = compare_create(dir.path(), &args);
        println!("case {case}: {} known values: create {}", c.known_values(), args.join(" "));
        if c.known_values() > 0 {
            prefilled += 1;
        }
    }
    // Short sources and coarse targets often leave nothing to copy; most
    // cases must still have copied something, or this test proves little.
    assert!(prefilled * 2 >= cases, "only {prefilled} of {cases} random cases prefilled anything");
}

/// Runs a failing create through both tools: same message, same status,
/// and no file left behind.
fn compare_failure(dir: &Path, args: &[&str], message: &str) {
    let mut a = strings(&["create"]);
    a.extend(strings(args));
    let expected = rrdtool(dir, &a);
    let got = rrdscale(dir, &a);
    assert_eq!(text(&expected.stderr), format!("ERROR: {message}\n"), "rrdtool's own message for {args:?}");
    assert_eq!(text(&got.stderr), text(&expected.stderr), "stderr for {args:?}");
    assert_eq!(got.status.code(), Some(1), "exit status for {args:?}");
    assert_eq!(expected.status.code(), Some(1));
    assert!(text(&got.stdout).is_empty() && text(&expected.stdout).is_empty());
    assert!(!dir.join("new.rrd").exists(), "a failed create left new.rrd behind for {args:?}");
}

#[test]
fn source_errors_match_rrdtool() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("junk.rrd"), b"not an rrd at all").unwrap();
    std::fs::write(d.join("empty.rrd"), b"").unwrap();
    std::fs::create_dir(d.join("a-directory")).unwrap();
    build_source(d, &five_minute_source("good.rrd", T0, 10, 11, 0));
    let defs = ["DS:in:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"];
    fn with<'a>(extra: &[&'a str], defs: &[&'a str]) -> Vec<&'a str> {
        extra.iter().chain(defs.iter()).copied().collect()
    }

    compare_failure(
        d,
        &with(&["new.rrd", "--source", "missing.rrd"], &defs),
        "error checking for source RRD missing.rrd: No such file or directory",
    );
    compare_failure(
        d,
        &with(&["new.rrd", "-r", "good.rrd", "-r", "missing.rrd"], &defs),
        "error checking for source RRD missing.rrd: No such file or directory",
    );
    compare_failure(d, &with(&["new.rrd", "-r", "a-directory"], &defs), "Not a regular file: a-directory");
    compare_failure(d, &with(&["new.rrd", "-r", "junk.rrd"], &defs), "Cannot open source RRD junk.rrd");
    compare_failure(
        d,
        &with(&["new.rrd", "-r", "good.rrd", "-r", "empty.rrd"], &defs),
        "Cannot open source RRD empty.rrd",
    );
    // The sources are checked before --no-overwrite looks at the target...
    compare_failure(
        d,
        &with(&["good.rrd", "-O", "-r", "missing.rrd"], &defs),
        "error checking for source RRD missing.rrd: No such file or directory",
    );
    // ...but opened only after the definitions parsed.
    compare_failure(
        d,
        &["new.rrd", "-r", "junk.rrd", "DS:in:GAUGE:600:U", "RRA:AVERAGE:0.5:1:10"],
        "failed to parse data source 600:U: failed to extract min:max",
    );
    compare_failure(
        d,
        &["new.rrd", "-r", "junk.rrd", "DS:in:GAUGE:600:U:U"],
        "you must define at least one Round Robin Archive",
    );
}
