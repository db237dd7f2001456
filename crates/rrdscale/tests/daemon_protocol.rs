//! Differential tests of `rrdscale daemon` against the real rrdcached 1.7.2:
//! the same command stream, sent to both over UNIX sockets in two temp dirs
//! holding copies of the same rrdtool-made files, must get the same replies
//! (base directory names substituted; the documented differences are
//! avoided by the stream or compared loosely, see docs/protocol.md), and
//! after FLUSHALL and shutdown both sets of RRD files must be byte-identical.

mod daemon_common;

use std::path::Path;
use std::time::Duration;

use daemon_common::{create_rrd, require_tools, rrdtool, temp_dir, Client, Daemon, Kind};

const T0: i64 = 1_000_000_000;

/// Makes the same files in both directories (copies of one creation).
fn make_files(dirs: &[&Path], names: &[&str]) {
    let (_t, src) = temp_dir();
    for n in names {
        let p = src.join(n);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        create_rrd(&p, T0);
        for d in dirs {
            let q = d.join(n);
            std::fs::create_dir_all(q.parent().unwrap()).unwrap();
            std::fs::copy(&p, &q).unwrap();
        }
    }
    for d in dirs {
        std::fs::write(d.join("notrrd.rrd"), b"hello\n").unwrap();
        std::fs::create_dir_all(d.join("subdir")).unwrap();
    }
}

/// The stream: (command, how to compare the reply).
#[derive(Clone, Copy, PartialEq)]
enum Cmp {
    Exact,
    /// Only the status line's sign and the STATS field names.
    StatsNames,
    /// Only whether it is an error (the texts differ by design).
    ErrorOnly,
    /// HELP's overview: rrdcached 1.7.2's plus the TUNE and DUMP lines
    /// rrdcached 1.9 lists after UPDATE's.
    Overview19,
}

// A table of protocol lines.
#[allow(clippy::too_many_lines)]
fn stream() -> Vec<(String, Cmp)> {
    use Cmp::*;
    let mut s: Vec<(String, Cmp)> = Vec::new();
    let mut add = |c: &str, m: Cmp| s.push((c.to_string(), m));
    add("PING", Exact);
    add("ping", Exact);
    add("HELP", Overview19);
    for c in [
        "UPDATE",
        "FLUSH",
        "FLUSHALL",
        "PENDING",
        "FORGET",
        "QUEUE",
        "STATS",
        "HELP",
        "PING",
        "BATCH",
        "FETCH",
        "FETCHBIN",
        "INFO",
        "FIRST",
        "LAST",
        "CREATE",
        "LIST",
        "SUSPEND",
        "RESUME",
        "SUSPENDALL",
        "RESUMEALL",
        "QUIT",
        "WROTE",
        ".",
        "update",
        "NOPE",
    ] {
        // An internal or unknown command gets the overview.
        let how = if matches!(c, "WROTE" | "." | "NOPE") { Overview19 } else { Exact };
        add(&format!("HELP {c}"), how);
    }
    add("STATS", StatsNames);
    // Reads before any pending value: identical by construction.
    add("INFO a.rrd", Exact);
    add("FIRST a.rrd 0", Exact);
    add("FIRST a.rrd 2", Exact);
    add("FIRST a.rrd 9", Exact);
    add("FIRST a.rrd", Exact);
    add("FIRST a.rrd -1", Exact);
    add("FIRST a.rrd x", Exact);
    // rrdcached's index is glibc's atoi: base 10, an int cut from a long.
    add("FIRST a.rrd 0x1", Exact);
    add("FIRST a.rrd 4294967297", Exact);
    add("FIRST a.rrd 99999999999999999999", Exact);
    // rrdcached rounds even the file's own last update down to the step.
    add("LAST a.rrd", ErrorOnly);
    add(&format!("FETCH a.rrd AVERAGE {} {}", T0 - 3000, T0 + 3000), Exact);
    // Updates, good and bad.
    add(&format!("UPDATE a.rrd {}:1:100 {}:2:200", T0 + 300, T0 + 600), Exact);
    add("PENDING a.rrd", Exact);
    // LAST with pending values differs by design (rrdcached rounds its
    // newest pending time down to the step; ours answers what `rrdtool
    // last` prints after the flush: tests/daemon_request_path.rs).
    add("LAST a.rrd", ErrorOnly);
    add(&format!("UPDATE a.rrd {}:3:300", T0 + 600), Exact);
    add(&format!("UPDATE a.rrd {}:3:300 {}:1:1", T0 + 900, T0 + 800), Exact);
    add(&format!("UPDATE a.rrd {}", T0 + 1200), Exact);
    add("UPDATE a.rrd N:1:1", Exact);
    add("UPDATE a.rrd", Exact);
    add("UPDATE", Exact);
    add("UPDATE nofile.rrd 1:1", Exact);
    add("UPDATE subdir 1:1", Exact);
    add("UPDATE notrrd.rrd 1000000000:1", ErrorOnly);
    add(&format!("UPDATE a.rrd  {}:1:1", T0 + 1500), Exact);
    add(&format!("UPDATE b.rrd {}:5:5", T0 + 10), Exact);
    add(&format!("UPDATE b.rrd {}:6:50 {}:7:90 {}:U:U", T0 + 320, T0 + 640, T0 + 1000), Exact);
    add(&format!("UPDATE sub/c.rrd {}:1.5:7 {}:2.5e1:12", T0 + 60, T0 + 2000), Exact);
    // The same checks on our fast path (a cached file, a plain line) and
    // on the lines it leaves to the general one.
    add(&format!("update b.rrd {}:1:1", T0 + 1100), Exact);
    add("UPDATE b.rrd ", Exact);
    add(&format!("UPDATE b.rrd {}:2:2 ", T0 + 1160), Exact);
    add(&format!("UPDATE b\\.rrd {}:2:2", T0 + 1170), Exact);
    add(&format!("UPDATE b.rrd {}:2:2 x {}:3:3", T0 + 1180, T0 + 1190), Exact);
    add("PENDING a.rrd", Exact);
    add("PENDING b.rrd", Exact);
    add("PENDING zz.rrd", Exact);
    add("PENDING", Exact);
    add("QUEUE", Exact);
    add("LAST a.rrd", ErrorOnly);
    add("LAST b.rrd", ErrorOnly);
    add("LAST nofile.rrd", Exact);
    add("LAST", Exact);
    // FETCH: rrdcached writes the file first, we merge; same numbers.
    add(&format!("FETCH a.rrd AVERAGE {} {}", T0, T0 + 1500), Exact);
    add(&format!("FETCH a.rrd AVERAGE {} {} y", T0, T0 + 1500), Exact);
    add(&format!("FETCH a.rrd AVERAGE {} {} y x", T0, T0 + 1500), Exact);
    add(&format!("FETCH a.rrd AVERAGE {} {} y y", T0, T0 + 1500), Exact);
    add(&format!("FETCH a.rrd AVERAGE {} {} x y x", T0, T0 + 1500), Exact);
    add(&format!("FETCH a.rrd FOO {} {}", T0, T0 + 1500), Exact);
    add(&format!("FETCH a.rrd MAX {} {}", T0 - 9000, T0 + 6000), Exact);
    add("FETCH a.rrd AVERAGE abc", Exact);
    add(&format!("FETCH a.rrd AVERAGE {} abc", T0), Exact);
    add(&format!("FETCH a.rrd AVERAGE 0x{:x} {}", T0, T0 + 1500), Exact);
    // strtol's ERANGE is refused, whichever the sign.
    add("FETCH a.rrd AVERAGE 99999999999999999999", Exact);
    add(&format!("FETCH a.rrd AVERAGE {} -99999999999999999999", T0), Exact);
    add("FETCH a.rrd", Exact);
    add("FETCH nofile.rrd AVERAGE", Exact);
    // After FETCH (which flushed a.rrd in rrdcached) a.rrd has no pending
    // values in either daemon, so INFO and FIRST agree again.
    add("INFO a.rrd", Exact);
    add("FIRST a.rrd 1", Exact);
    add("FORGET sub/c.rrd", Exact);
    add("FORGET sub/c.rrd", Exact);
    add("FORGET", Exact);
    add("FLUSH b.rrd", Exact);
    add("FLUSH b.rrd", Exact);
    add("FLUSH zz.rrd", Exact);
    add("FLUSH subdir", Exact);
    add("FLUSH", Exact);
    add(".", Exact);
    add("NOSUCHCOMMAND arg", Exact);
    add("", Exact);
    add("BATCH", Exact);
    add(&format!("UPDATE b.rrd {}:1:1", T0 + 1300), Exact);
    add(&format!("UPDATE b.rrd {}:1:1", T0 + 1300), Exact);
    add("PING", Exact);
    add(&format!("UPDATE a.rrd {}:4:400", T0 + 1800), Exact);
    add("FOO", Exact);
    add("BATCH", Exact);
    add("FLUSH zz.rrd", Exact);
    add("FORGET zz.rrd", Exact);
    add("STATS", Exact);
    add("", Exact);
    add(".", Exact);
    add("PENDING b.rrd", Exact);
    add("SUSPEND b.rrd", Exact);
    add("SUSPEND b.rrd", Exact);
    add("RESUME b.rrd", Exact);
    add("RESUME b.rrd", Exact);
    add("SUSPENDALL", Exact);
    add("RESUMEALL", Exact);
    add("LIST", Exact);
    add("LIST RECURSIVE", Exact);
    add("LIST FOO /", Exact);
    add("LIST /nonexist", Exact);
    add("LIST /../", Exact);
    add("LIST /sub/c.rrd", Exact);
    add("CREATE", Exact);
    add("CREATE new.rrd", Exact);
    add("CREATE new.rrd -b 100 DS:a:GAUGE:600:U:U RRA:AVERAGE:0.5:1:10", Exact);
    add("CREATE new.rrd -z DS:a:GAUGE:600:U:U", Exact);
    add(&format!("CREATE new.rrd -b {T0} -s 60 DS:a:GAUGE:600:U:U RRA:AVERAGE:0.5:1:10"), Exact);
    add(&format!("UPDATE new.rrd {}:42", T0 + 60), Exact);
    // CREATE's -b and -s are rrdcached's atol: base 10, so 0x... is 0
    // (before 1980) and 060 is sixty seconds (FIRST shows the step).
    add(&format!("CREATE hex.rrd -b 0x{T0:x} DS:a:GAUGE:600:U:U RRA:AVERAGE:0.5:1:10"), Exact);
    add(&format!("CREATE oct.rrd -b {} -s 060 DS:a:GAUGE:600:U:U RRA:AVERAGE:0.5:1:10", T0 + 7), Exact);
    add("FIRST oct.rrd 0", Exact);
    add("STATS", StatsNames);
    add("FLUSHALL", Exact);
    s
}

fn normalize(reply: &str, dir: &Path) -> String {
    reply.replace(&dir.display().to_string(), "$BASE")
}

fn compare(cmd: &str, how: Cmp, ours: &str, theirs: &str) -> Option<String> {
    let same = match how {
        Cmp::Exact => ours == theirs,
        Cmp::ErrorOnly => ours.starts_with('-') == theirs.starts_with('-'),
        Cmp::Overview19 => {
            let mut lines: Vec<&str> = theirs.split_inclusive('\n').collect();
            let count = format!("{} Command overview\n", lines.len() + 1);
            lines[0] = &count;
            lines.insert(2, "TUNE <filename> [options]\n");
            lines.insert(3, "DUMP <filename> [-h none|xsd|dtd]\n");
            ours == lines.concat()
        }
        Cmp::StatsNames => {
            let names = |s: &str| -> Vec<String> {
                s.lines().skip(1).take(9).map(|l| l.split(':').next().unwrap_or("").to_string()).collect()
            };
            names(ours) == names(theirs) && theirs.starts_with("9 Statistics follow")
        }
    };
    (!same).then(|| format!("command {cmd:?}:\n--- rrdcached\n{theirs}--- rrdscale\n{ours}"))
}

/// Sends `cmds` to both daemons, comparing replies. Between `BATCH` and
/// `.` commands get no reply of their own.
fn run_stream(
    ct: &mut Client,
    co: &mut Client,
    dir_theirs: &Path,
    dir_ours: &Path,
    cmds: Vec<(String, Cmp)>,
    failures: &mut Vec<String>,
) {
    let mut in_batch = false;
    for (cmd, how) in cmds {
        ct.send(&cmd);
        co.send(&cmd);
        if in_batch && cmd != "." {
            continue;
        }
        let rt = normalize(&ct.read_reply(), dir_theirs);
        let ro = normalize(&co.read_reply(), dir_ours);
        if cmd == "." {
            in_batch = false;
        }
        if cmd.eq_ignore_ascii_case("BATCH") && rt.starts_with("0 Go ahead") {
            in_batch = true;
        }
        if let Some(f) = compare(&cmd, how, &ro, &rt) {
            failures.push(f);
        }
    }
}

/// The same stream to both daemons gives the same replies and, after
/// FLUSHALL and shutdown, the same files.
#[test]
fn replies_and_files_match_rrdcached() {
    require_tools();
    let (_ta, dir_theirs) = temp_dir();
    let (_tb, dir_ours) = temp_dir();
    let names = ["a.rrd", "b.rrd", "sub/c.rrd", "sub/deep/d.rrd"];
    make_files(&[&dir_theirs, &dir_ours], &names);
    let theirs = Daemon::start(Kind::Rrdcached, &dir_theirs, &[]);
    let ours = Daemon::start(Kind::Ours, &dir_ours, &[]);
    let mut ct = theirs.client();
    let mut co = ours.client();
    let mut failures = Vec::new();
    run_stream(&mut ct, &mut co, &dir_theirs, &dir_ours, stream(), &mut failures);
    // FETCHBIN: compared as raw bytes, once both files hold the same rows.
    for c in [&mut ct, &mut co] {
        assert_eq!(c.call("FLUSH a.rrd").lines().next().unwrap().split(' ').next(), Some("0"));
    }
    let fb = format!("FETCHBIN a.rrd AVERAGE {} {} y x", T0, T0 + 1500);
    ct.send(&fb);
    co.send(&fb);
    let bt = ct.read_raw(Duration::from_millis(500));
    let bo = co.read_raw(Duration::from_millis(500));
    if bt != bo {
        failures.push(format!(
            "FETCHBIN differs:\n{:?}\n{:?}",
            String::from_utf8_lossy(&bt),
            String::from_utf8_lossy(&bo)
        ));
    }
    // Write everything, then stop both (rrdcached finishes its writes).
    for c in [&mut ct, &mut co] {
        c.call("FLUSHALL");
        for n in names {
            c.call(&format!("FLUSH {n}"));
        }
    }
    drop(ct);
    drop(co);
    std::thread::sleep(Duration::from_millis(300));
    theirs.stop();
    ours.stop();
    for n in names.iter().chain(["new.rrd"].iter()) {
        let a = std::fs::read(dir_theirs.join(n)).unwrap();
        let b = std::fs::read(dir_ours.join(n)).unwrap();
        if n != &"new.rrd" && a != b {
            let dump = |d: &Path| rrdtool(&["dump", d.join(n).to_str().unwrap()]);
            failures.push(format!(
                "{n} differs after FLUSHALL:\n{}\n---\n{}",
                dump(&dir_theirs),
                dump(&dir_ours)
            ));
        }
        if n == &"new.rrd" {
            // A created file's ring positions may be random: compare dumps.
            let dump = |d: &Path| rrdtool(&["dump", d.join(n).to_str().unwrap()]);
            if dump(&dir_theirs) != dump(&dir_ours) {
                failures.push(format!(
                    "new.rrd (CREATE + UPDATE) differs ({} vs {} bytes)",
                    a.len(),
                    b.len()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

/// `-P` restricts the sockets that follow it, as rrdcached: the same
/// commands are refused with the same reply.
#[test]
fn socket_permissions_match_rrdcached() {
    require_tools();
    let (_ta, dir_theirs) = temp_dir();
    let (_tb, dir_ours) = temp_dir();
    make_files(&[&dir_theirs, &dir_ours], &["a.rrd"]);
    let extra_for = |d: &Path| {
        vec![
            "-P".to_string(),
            "FLUSH,PENDING,BATCH".to_string(),
            "-l".to_string(),
            format!("unix:{}", d.join("ro.sock").display()),
        ]
    };
    let et = extra_for(&dir_theirs);
    let eo = extra_for(&dir_ours);
    let theirs =
        Daemon::start(Kind::Rrdcached, &dir_theirs, &et.iter().map(String::as_str).collect::<Vec<_>>());
    let ours = Daemon::start(Kind::Ours, &dir_ours, &eo.iter().map(String::as_str).collect::<Vec<_>>());
    let mut ct = Client::connect(&dir_theirs.join("ro.sock"));
    let mut co = Client::connect(&dir_ours.join("ro.sock"));
    let mut failures = Vec::new();
    let cmds = [
        "PING".to_string(),
        "HELP FLUSH".into(),
        format!("UPDATE a.rrd {}:1:1", T0 + 300),
        "PENDING a.rrd".into(),
        "FLUSH a.rrd".into(),
        "STATS".into(),
        "BATCH".into(),
        format!("UPDATE a.rrd {}:1:1", T0 + 300),
        "FLUSH a.rrd".into(),
        ".".into(),
    ];
    let cmds = cmds.into_iter().map(|c| (c, Cmp::Exact)).collect();
    run_stream(&mut ct, &mut co, &dir_theirs, &dir_ours, cmds, &mut failures);
    // The unrestricted socket still takes updates.
    let r = ours.client().call(&format!("UPDATE a.rrd {}:1:1", T0 + 300));
    assert_eq!(r, "0 errors, enqueued 1 value(s).\n");
    drop((theirs, ours));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
