//! `rrdscale dump` and `rrdscale restore` against `rrdtool dump` and
//! `rrdtool restore` 1.7.2, as processes.
//!
//! - dump: the same stdout (and exit status) for every header option
//!   spelling, to stdout or to a file, in UTC and in a zone with DST;
//! - restore: for rrdtool's XML and for variants of it (older versions,
//!   missing optional elements, long FAILURES histories, `--range-check`
//!   with values outside min/max), our file equals rrdtool's once both are
//!   put in canonical form. The canonical form masks only what rrdtool
//!   chooses at random: each archive's `cur_row`, i.e. the rotation of its
//!   rows. Every other byte, padding included, must match. And rrdtool
//!   dumps our file to the XML it dumps its own to;
//! - errors: malformed XML, unknown elements, bad values, an existing target
//!   without `-f`: exit status 1, `ERROR: ` and a message naming the problem,
//!   and no file written.
//!
//! A missing rrdtool fails the tests loudly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const RRDSCALE: &str = env!("CARGO_BIN_EXE_rrdscale");

fn run(program: &str, args: &[&str], tz: &str, stdin: Option<&[u8]>) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args).env("TZ", tz).env("LC_ALL", "C").stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().unwrap_or_else(|e| {
        panic!("cannot run {program} (rrdtool 1.7.2 must be installed for these tests): {e}")
    });
    if let Some(input) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn rrdtool(args: &[&str]) -> Vec<u8> {
    let out = run("rrdtool", args, "UTC", None);
    assert!(out.status.success(), "rrdtool {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn ours(args: &[&str]) -> Output {
    run(RRDSCALE, args, "UTC", None)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A file made by rrdtool, updated often enough that rows wrap and scratch
/// areas are busy. `feeds` has one letter per non-COMPUTE data source:
/// `g` any float, `c` a growing integer counter, `d` a signed integer,
/// `f` a growing fractional counter.
fn fixture(dir: &Path, name: &str, defs: &[&str], feeds: &str) -> PathBuf {
    let path = dir.join(name);
    let p = path.to_str().unwrap();
    let mut args = vec!["create", p, "--start", "1000000000", "--step", "60"];
    args.extend_from_slice(defs);
    rrdtool(&args);
    let mut state: u64 = 0x1234_5678;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut counter = 0u64;
    let mut float_counter = 0.0f64;
    let mut lines = Vec::new();
    let mut t = 1_000_000_000u64;
    for _ in 0..240 {
        t += 20 + next() % 70;
        let mut line = t.to_string();
        for feed in feeds.chars() {
            if next() % 11 == 0 {
                line.push_str(":U");
                continue;
            }
            let value = match feed {
                'c' => {
                    counter += next() % 1000;
                    counter.to_string()
                }
                'f' => {
                    float_counter += (next() % 1000) as f64 / 7.0;
                    float_counter.to_string()
                }
                'd' => (next() as i64 % 500 - 200).to_string(),
                _ => ((next() % 20_000) as f64 / 77.0 - 40.0).to_string(),
            };
            line.push(':');
            line.push_str(&value);
        }
        lines.push(line);
    }
    for chunk in lines.chunks(60) {
        let mut args = vec!["update", p];
        args.extend(chunk.iter().map(String::as_str));
        let out = run("rrdtool", &args, "UTC", None);
        assert!(out.status.success(), "rrdtool update {name}: {}", stderr(&out));
    }
    path
}

fn fixtures(dir: &Path) -> Vec<PathBuf> {
    vec![
        fixture(
            dir,
            "mixed.rrd",
            &[
                "DS:g:GAUGE:120:-20:200",
                "DS:c:COUNTER:120:U:U",
                "DS:d:DERIVE:120:U:U",
                "DS:cc:COMPUTE:g,c,+,2,/",
                "RRA:AVERAGE:0.5:1:30",
                "RRA:MIN:0.5:4:9",
                "RRA:MAX:0.5:4:9",
                "RRA:LAST:0.5:10:5",
            ],
            "gcd",
        ),
        fixture(
            dir,
            "hw.rrd",
            &[
                "DS:x:GAUGE:120:0:150",
                "DS:y:DCOUNTER:120:U:U",
                "RRA:AVERAGE:0.5:1:20",
                "RRA:HWPREDICT:40:0.1:0.0035:12",
                "RRA:MHWPREDICT:40:0.2:0.01:12",
                "RRA:FAILURES:40:2:15:5",
            ],
            "gf",
        ),
    ]
}

#[test]
fn dump_prints_what_rrdtool_prints_for_every_header_option() {
    let dir = tempfile::tempdir().unwrap();
    let option_sets: &[&[&str]] = &[
        &[],
        &["-h", "xsd"],
        &["-h", "dtd"],
        &["-h", "none"],
        &["--header=xsd"],
        &["--header", "none"],
        &["-n"],
        &["--no-header"],
        &["-h", "bogus"],
        &["-n", "-h", "xsd"],
        &["-h", "xsd", "-n"],
    ];
    let zones = ["UTC", "Europe/Berlin"];
    for path in fixtures(dir.path()) {
        let p = path.to_str().unwrap();
        for opts in option_sets {
            for tz in zones {
                let mut args = vec!["dump"];
                args.extend_from_slice(opts);
                args.push(p);
                let theirs = run("rrdtool", &args, tz, None);
                let mine = run(RRDSCALE, &args, tz, None);
                assert!(theirs.status.success(), "rrdtool {args:?}: {}", stderr(&theirs));
                assert!(mine.status.success(), "rrdscale {args:?}: {}", stderr(&mine));
                assert!(mine.stdout == theirs.stdout, "{args:?} in {tz}: outputs differ");
            }
        }
        // To a file named by a second operand.
        let out_path = dir.path().join("out.xml");
        let o = ours(&["dump", "-h", "xsd", p, out_path.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(o.stdout.is_empty());
        assert_eq!(std::fs::read(&out_path).unwrap(), rrdtool(&["dump", "-h", "xsd", p]));
    }
}

#[test]
fn dump_usage_and_open_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = &fixtures(dir.path())[1];
    let p = path.to_str().unwrap();
    for args in [vec!["dump", p, "a.xml", "b.xml"], vec!["dump", "-x", p], vec!["dump", "-h"]] {
        let o = ours(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).starts_with("ERROR: usage"), "{args:?}: {}", stderr(&o));
    }
    let o = ours(&["dump", "/nonexistent/x.rrd"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("ERROR: ") && stderr(&o).contains("/nonexistent/x.rrd"), "{}", stderr(&o));
    // No arguments at all: the help text, exit status 0 (as rrdtool).
    assert!(ours(&["dump"]).status.success());
}

/// The file with every archive rotated so that its newest row is last and
/// `cur_row` masked: what remains is everything rrdtool does not choose at
/// random.
fn canonical(bytes: &[u8]) -> Vec<u8> {
    let h = rrd_format::Header::decode(bytes, bytes.len() as u64).expect("a valid RRD file");
    let layout = h.layout();
    let mut out = bytes[..layout.rra_ptr_off as usize].to_vec();
    let row_len = layout.row_len() as usize;
    for (r, &cur) in h.rra_ptr().iter().enumerate() {
        let start = layout.rra_data_off[r] as usize;
        let rows = layout.row_counts[r] as usize;
        let data = &bytes[start..start + rows * row_len];
        let split = (cur as usize + 1) * row_len;
        out.extend_from_slice(&data[split..]);
        out.extend_from_slice(&data[..split]);
    }
    out
}

/// Restores `xml` with both tools (same extra options) and compares.
fn compare_restore(dir: &Path, label: &str, xml: &[u8], extra: &[&str]) {
    compare_restore_named(dir, label, &format!("{label}.xml"), xml, extra)
}

/// As [`compare_restore`], the input (`bytes`) in a file named `name`.
fn compare_restore_named(dir: &Path, label: &str, name: &str, bytes: &[u8], extra: &[&str]) {
    let xml_path = dir.join(name);
    std::fs::write(&xml_path, bytes).unwrap();
    let theirs_path = dir.join(format!("{label}-theirs.rrd"));
    let ours_path = dir.join(format!("{label}-ours.rrd"));
    let x = xml_path.to_str().unwrap();
    let mut args = vec!["restore"];
    args.extend_from_slice(extra);
    rrdtool(&[&args[..], &[x, theirs_path.to_str().unwrap()]].concat());
    let o = ours(&[&args[..], &[x, ours_path.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{label}: {}", stderr(&o));
    let (theirs, mine) = (std::fs::read(&theirs_path).unwrap(), std::fs::read(&ours_path).unwrap());
    assert_eq!(mine.len(), theirs.len(), "{label}: file length");
    let (ct, cm) = (canonical(&theirs), canonical(&mine));
    if let Some(at) = cm.iter().zip(&ct).position(|(a, b)| a != b) {
        panic!("{label}: canonical forms differ at byte {at}");
    }
    assert_eq!(
        rrdtool(&["dump", ours_path.to_str().unwrap()]),
        rrdtool(&["dump", theirs_path.to_str().unwrap()]),
        "{label}: rrdtool dumps the two files differently"
    );
}

#[test]
fn restore_builds_the_file_rrdtool_builds() {
    let dir = tempfile::tempdir().unwrap();
    for path in fixtures(dir.path()) {
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let xml = rrdtool(&["dump", path.to_str().unwrap()]);
        let text = String::from_utf8(xml.clone()).unwrap();
        compare_restore(dir.path(), &name, &xml, &[]);
        compare_restore(dir.path(), &format!("{name}-r"), &xml, &["-r"]);

        // Our restore reads back to the very XML it was given.
        let ours_path = dir.path().join(format!("{name}-roundtrip.rrd"));
        let xml_path = dir.path().join(format!("{name}.xml"));
        let o = ours(&["restore", xml_path.to_str().unwrap(), ours_path.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(rrdtool(&["dump", ours_path.to_str().unwrap()]) == xml, "{name}: round trip");

        // --range-check with stored values outside a narrowed [min, max].
        let narrowed = text
            .replace("<min>-2.0000000000e+01</min>", "<min>1.0000000000e+01</min>")
            .replace("<max>2.0000000000e+02</max>", "<max>5.0000000000e+01</max>")
            .replace("<max>1.5000000000e+02</max>", "<max>4.0000000000e+01</max>");
        assert_ne!(narrowed, text, "{name}: the range edit must apply");
        compare_restore(dir.path(), &format!("{name}-narrow"), narrowed.as_bytes(), &["--range-check"]);
        compare_restore(dir.path(), &format!("{name}-narrow-nocheck"), narrowed.as_bytes(), &[]);
        let read =
            |label: &str| canonical(&std::fs::read(dir.path().join(format!("{label}-ours.rrd"))).unwrap());
        assert_ne!(
            read(&format!("{name}-narrow")),
            read(&format!("{name}-narrow-nocheck")),
            "{name}: --range-check must have turned some rows unknown"
        );

        // Older versions: 0002 is written as 0003; 0001 had <xff> directly
        // in <rra> and no <params>.
        let v2 = text.replace("<version>0003</version>", "<version>0002</version>");
        compare_restore(dir.path(), &format!("{name}-v2"), v2.as_bytes(), &[]);
        if text.contains("<version>0003</version>") && !text.contains("<hw_alpha>") {
            let mut v1 = text.replace("<version>0003</version>", "<version>0001</version>");
            v1 = v1.replace("<params>\n", "").replace("\t\t</params>\n", "");
            compare_restore(dir.path(), &format!("{name}-v1"), v1.as_bytes(), &[]);
        }

        // Optional elements left out: zeros where rrdtool leaves zeros.
        let mut sparse = String::new();
        let mut skipping = false;
        for line in text.lines() {
            if line.contains("<cdp_prep>") {
                skipping = true;
            }
            if !skipping && !line.contains("<lastupdate>") && !line.contains("<last_ds>") {
                sparse.push_str(line);
                sparse.push('\n');
            }
            if line.contains("</cdp_prep>") {
                skipping = false;
            }
        }
        compare_restore(dir.path(), &format!("{name}-sparse"), sparse.as_bytes(), &[]);

        // Case-insensitive element names, comments and odd spacing.
        let odd = text.replace("<step>", "<STEP> <!-- c -->").replace("</step>", "\n</STEP>");
        compare_restore(dir.path(), &format!("{name}-odd"), odd.as_bytes(), &[]);

        // A FAILURES history longer than the 10 slots rrdtool restores.
        if text.contains("<history>") {
            let start = text.find("<history>").unwrap() + "<history>".len();
            let end = text[start..].find('<').unwrap() + start;
            let len = end - start;
            let pattern: String = (0..len).map(|i| if i % 3 == 0 { '1' } else { '0' }).collect();
            let edited = format!("{}{}{}", &text[..start], pattern, &text[end..]);
            compare_restore(dir.path(), &format!("{name}-history"), edited.as_bytes(), &[]);
        }
    }
}

#[test]
fn restore_reads_stdin_and_writes_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let path = &fixtures(dir.path())[1];
    let xml = rrdtool(&["dump", path.to_str().unwrap()]);
    let target = dir.path().join("from-stdin.rrd");
    let o = run(RRDSCALE, &["restore", "-", target.to_str().unwrap()], "UTC", Some(&xml));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(rrdtool(&["dump", target.to_str().unwrap()]) == xml);

    let xml_path = dir.path().join("in.xml");
    std::fs::write(&xml_path, &xml).unwrap();
    let o = ours(&["restore", xml_path.to_str().unwrap(), "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(canonical(&o.stdout), canonical(&std::fs::read(&target).unwrap()));
}

#[test]
fn restore_errors_exit_1_name_the_problem_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = &fixtures(dir.path())[1];
    let xml = String::from_utf8(rrdtool(&["dump", path.to_str().unwrap()])).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("mismatched", xml.replacen("</step>", "</stp>", 1), "malformed XML"),
        ("truncated", xml[..xml.find("</cdp_prep>").unwrap()].to_string(), "ended"),
        ("unknown", xml.replacen("<xff>", "<bogus>1</bogus><xff>", 1), "<bogus>"),
        ("badvalue", xml.replacen("<xff>", "<xff>12abc", 1), "<xff> '12abc5.0000000000e-01' is not a number"),
        ("badcf", xml.replacen("<cf>AVERAGE</cf>", "<cf>MEDIAN</cf>", 1), "'MEDIAN'"),
        ("norows", xml.replace("<row>", "<!--").replace("</row>", "-->"), "no rows"),
        ("notxml", "this is not xml".to_string(), "line 1"),
        ("trailing", format!("{xml}<rrd>"), "after </rrd>"),
    ];
    for (label, text, expect) in cases {
        let xml_path = dir.path().join(format!("{label}.xml"));
        std::fs::write(&xml_path, &text).unwrap();
        let target = dir.path().join(format!("{label}.rrd"));
        let o = ours(&["restore", xml_path.to_str().unwrap(), target.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{label}");
        let msg = stderr(&o);
        assert!(msg.starts_with("ERROR: "), "{label}: {msg}");
        assert!(msg.contains(expect), "{label}: expected '{expect}' in: {msg}");
        assert!(!target.exists(), "{label}: a file was written");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

    // An existing target needs -f; the message is rrdtool's.
    let xml_path = dir.path().join("good.xml");
    std::fs::write(&xml_path, &xml).unwrap();
    let target = dir.path().join("exists.rrd");
    std::fs::write(&target, b"keep me").unwrap();
    let (x, t) = (xml_path.to_str().unwrap(), target.to_str().unwrap());
    let theirs = run("rrdtool", &["restore", x, t], "UTC", None);
    let mine = ours(&["restore", x, t]);
    assert_eq!(mine.status.code(), Some(1));
    assert_eq!(stderr(&mine), stderr(&theirs), "same message as rrdtool");
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
    let o = ours(&["restore", "--force-overwrite", x, t]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(rrdtool(&["dump", t]) == xml.as_bytes());

    // A missing input, a missing directory, usage errors.
    let o = ours(&["restore", "/nonexistent/in.xml", t]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/nonexistent/in.xml"), "{}", stderr(&o));
    let o = ours(&["restore", x, "/nonexistent/dir/out.rrd"]);
    let theirs = run("rrdtool", &["restore", x, "/nonexistent/dir/out.rrd"], "UTC", None);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), stderr(&theirs));
    for args in [vec!["restore", x], vec!["restore", "-q", x, t]] {
        let o = ours(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).starts_with("ERROR: "), "{args:?}");
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn restore_reads_gzip_compressed_xml_as_rrdtool_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = &fixtures(d)[1];
    let xml = rrdtool(&["dump", path.to_str().unwrap()]);
    let gz = gzip(&xml);
    assert!(gz.len() * 3 < xml.len(), "the fixture compresses");
    // By content, not by name (libxml2 opens every file through zlib);
    // what follows the gzip member is ignored.
    compare_restore_named(d, "gz", "gz.xml.gz", &gz, &[]);
    compare_restore_named(d, "gz-named-xml", "gz-named.xml", &gz, &[]);
    compare_restore_named(d, "gz-r", "gz-r.xml.gz", &gz, &["-r"]);
    compare_restore_named(
        d,
        "gz-trailing",
        "gz-trailing.xml.gz",
        &[&gz[..], b"trailing bytes\n"].concat(),
        &[],
    );

    // Failures of both: only the first gzip member is read (libxml2's
    // zlib reader stops there), a cut stream, gzip inside gzip; and gzip on
    // standard input, which rrdtool passes to the parser undecompressed.
    let half = xml.len() / 2;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("two-members", [gzip(&xml[..half]), gzip(&xml[half..])].concat(), "malformed XML"),
        ("cut", gz[..gz.len() / 2].to_vec(), "gzip data"),
        ("double", gzip(&gz), "out of allowed range"),
    ];
    for (label, bytes, needle) in cases {
        let input = d.join(format!("{label}.xml.gz"));
        std::fs::write(&input, &bytes).unwrap();
        for program in ["rrdtool", RRDSCALE] {
            let target = d.join(format!("{label}-{}.rrd", program.len()));
            let o =
                run(program, &["restore", input.to_str().unwrap(), target.to_str().unwrap()], "UTC", None);
            assert_eq!(o.status.code(), Some(1), "{label}: {program}: {}", stderr(&o));
            if program == RRDSCALE {
                assert!(
                    stderr(&o).starts_with("ERROR: ") && stderr(&o).contains(needle),
                    "{label}: {}",
                    stderr(&o)
                );
                assert!(!target.exists(), "{label}: a file was written");
            }
        }
    }
    for program in ["rrdtool", RRDSCALE] {
        let target = d.join(format!("stdin-{}.rrd", program.len()));
        let o = run(program, &["restore", "-", target.to_str().unwrap()], "UTC", Some(&gz));
        assert_eq!(o.status.code(), Some(1), "stdin: {program}: {}", stderr(&o));
        if program == RRDSCALE {
            assert!(stderr(&o).contains("standard input is compressed"), "{}", stderr(&o));
            assert!(!target.exists());
        }
    }
    // xz (which Debian's libxml2 also reads) is refused with a message.
    let xz = d.join("x.xml.xz");
    std::fs::write(&xz, [&[0xfd, b'7', b'z', b'X', b'Z', 0][..], &[1, 2, 3]].concat()).unwrap();
    let o = ours(&["restore", xz.to_str().unwrap(), d.join("xz.rrd").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("xz-compressed XML is not supported"), "{}", stderr(&o));
}

/// The largest resident set of any child waited for so far, in KiB.
fn children_max_rss_kib() -> i64 {
    // SAFETY: getrusage fills the struct we pass.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru.ru_maxrss
    }
}

#[test]
fn a_gzip_bomb_is_refused_within_the_bound() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    // 256 MiB of spaces (leading blanks an XML parser would accept) in
    // well under 4 MiB.
    let bomb = dir.path().join("bomb.xml.gz");
    let mut e =
        flate2::write::GzEncoder::new(std::fs::File::create(&bomb).unwrap(), flate2::Compression::fast());
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..256 {
        e.write_all(&chunk).unwrap();
    }
    e.finish().unwrap();
    assert!(std::fs::metadata(&bomb).unwrap().len() < 4 << 20);
    let target = dir.path().join("bomb.rrd");
    let mut cmd = Command::new(RRDSCALE);
    cmd.args(["restore", bomb.to_str().unwrap(), target.to_str().unwrap()])
        .env("RRDSCALE_GZIP_XML_MAX", (8 << 20).to_string());
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("expands to more than 8388608 bytes") && err.len() < 300, "{err}");
    assert!(!target.exists());
    // Stopped at the bound: far less memory than the 256 MiB the stream
    // holds (the other children of this test binary are small too).
    let rss = children_max_rss_kib();
    assert!(rss < 96 * 1024, "a child reached {rss} KiB");

    // A bad bound is an error, not a default.
    let o = Command::new(RRDSCALE)
        .args(["restore", bomb.to_str().unwrap(), target.to_str().unwrap()])
        .env("RRDSCALE_GZIP_XML_MAX", "lots")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("RRDSCALE_GZIP_XML_MAX must be a number of bytes"), "{}", stderr(&o));
}
