//! TUNE and DUMP as rrdcached 1.9 speaks them (no 1.9 daemon is packaged:
//! the expected bytes are written from its `rrd_daemon.c` and
//! `rrd_client.c`): the replies on the wire, the files a TUNE leaves
//! (byte for byte `rrdtool tune` on a copy after the same updates), the
//! XML a DUMP streams (`rrdtool dump` of the flushed file), and the
//! requests `rrdscale tune|dump --daemon` send.

mod daemon_common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use daemon_common::{create_rrd, require_tools, rrdtool, temp_dir, Daemon, Kind};

const T0: i64 = 1_000_000_000;

/// Sends `request` on a fresh connection and reads until the daemon closes
/// it or is silent for a while.
fn exchange(socket: &Path, request: &str) -> (Vec<u8>, bool) {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(1500))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => return (out, false),
        }
    }
}

fn updates(n: i64) -> Vec<String> {
    (1..=n).map(|i| format!("{}:{}:{}", T0 + 300 * i, 10 * i, 1000 * i)).collect()
}

/// The same updates through the daemon (left pending) and by rrdtool on a
/// copy.
fn two_files(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, Daemon) {
    let ours = dir.join("a.rrd");
    create_rrd(&ours, T0);
    let copy_dir = dir.join("copy");
    std::fs::create_dir_all(&copy_dir).unwrap();
    let copy = copy_dir.join("a.rrd");
    std::fs::copy(&ours, &copy).unwrap();
    let d = Daemon::start(Kind::Ours, dir, &[]);
    let mut c = d.client();
    let values = updates(12);
    let r = c.call(&format!("UPDATE a.rrd {}", values.join(" ")));
    assert_eq!(r, "0 errors, enqueued 12 value(s).\n");
    let mut args = vec!["update".to_string(), copy.display().to_string()];
    args.extend(values);
    rrdtool(&args.iter().map(String::as_str).collect::<Vec<_>>());
    (ours, copy, d)
}

#[test]
fn tune_replies_and_file_match_rrdtool() {
    require_tools();
    let (_t, dir) = temp_dir();
    let (ours, copy, d) = two_files(&dir);
    let path = ours.display().to_string();
    // rrd_client.c's rrd_client_tune: "tune <path> <argc> <argv...>\n",
    // argv being rrdtool tune's own (permuted: options, then operands).
    let request = format!(
        "tune {path} 10 tune -h x:900 -a y:1e6 --data-source-rename=x:speed --daemon unix:/x a.rrd RRA#0:+5\n"
    );
    let (reply, closed) = exchange(&d.socket, &request);
    assert_eq!(String::from_utf8_lossy(&reply), "0 Success\n");
    assert!(!closed, "TUNE keeps the connection");
    rrdtool(&[
        "tune",
        copy.to_str().unwrap(),
        "-h",
        "x:900",
        "-a",
        "y:1e6",
        "--data-source-rename=x:speed",
        "RRA#0:+5",
    ]);
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&copy).unwrap(), "tuned files differ");

    // Updates after the tune use the tuned header (renamed DS, grown RRA).
    let mut c = d.client();
    let r = c.call(&format!("UPDATE a.rrd {}:5:5000", T0 + 300 * 13));
    assert_eq!(r, "0 errors, enqueued 1 value(s).\n");
    assert_eq!(c.call("FLUSH a.rrd"), format!("0 Successfully flushed {path}.\n"));
    rrdtool(&["update", copy.to_str().unwrap(), &format!("{}:5:5000", T0 + 300 * 13)]);
    assert!(
        std::fs::read(&ours).unwrap() == std::fs::read(&copy).unwrap(),
        "files differ after the next flush"
    );

    // Errors, rrdcached's texts.
    let e = |line: &str| String::from_utf8_lossy(&exchange(&d.socket, line).0).into_owned();
    assert_eq!(e("TUNE\n"), "-1 Usage: TUNE <filename> [options]\n");
    assert_eq!(e("TUNE a.rrd\n"), "-1 Usage: TUNE <filename> [options]\n");
    assert_eq!(e("TUNE a.rrd -1\n"), "-1 Invalid argument count specified (-1)\n");
    assert_eq!(
        e("TUNE a.rrd 3 tune -h\n"),
        "-1 Invalid argument count specified (3): 2 argument(s) follow it\n"
    );
    assert_eq!(e("TUNE a.rrd 3 tune -h nope:5\n"), "-1 Got error unknown data source name 'nope'\n");
    assert_eq!(
        e("TUNE missing.rrd 1 tune\n"),
        format!("-1 Got error opening '{}': No such file or directory\n", dir.join("missing.rrd").display())
    );
    assert_eq!(
        e("BATCH\nTUNE a.rrd 1 tune\n.\n"),
        "0 Go ahead.  End with dot '.' on its own line.\n1 errors\n1 Can't use 'TUNE' here.\n"
    );
    d.stop();
}

#[test]
fn tune_flushes_pending_values_first() {
    require_tools();
    let (_t, dir) = temp_dir();
    let (ours, copy, d) = two_files(&dir);
    // A change of structure: the pending values are written to the old one.
    // (An added DS is not compared: rrdtool leaves some of its bytes
    // uninitialised.)
    let request = format!("TUNE {} 4 tune a.rrd DEL:y RRA:MIN:0.5:2:10\n", ours.display());
    assert_eq!(String::from_utf8_lossy(&exchange(&d.socket, &request).0), "0 Success\n");
    rrdtool(&["tune", copy.to_str().unwrap(), "DEL:y", "RRA:MIN:0.5:2:10"]);
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&copy).unwrap(), "restructured files differ");
    let mut c = d.client();
    assert_eq!(c.call("PENDING a.rrd"), "0 updates pending\n");
    // One DS now: the next value has one column.
    let r = c.call(&format!("UPDATE a.rrd {}:5", T0 + 300 * 13));
    assert_eq!(r, "0 errors, enqueued 1 value(s).\n");
    assert_eq!(c.call("FLUSH a.rrd"), format!("0 Successfully flushed {}.\n", ours.display()));
    rrdtool(&["update", copy.to_str().unwrap(), &format!("{}:5", T0 + 300 * 13)]);
    assert!(
        std::fs::read(&ours).unwrap() == std::fs::read(&copy).unwrap(),
        "files differ after the next flush"
    );
    d.stop();
}

#[test]
fn dump_streams_rrdtools_xml_and_closes() {
    require_tools();
    let (_t, dir) = temp_dir();
    let (ours, copy, d) = two_files(&dir);
    let expected = rrdtool(&["dump", copy.to_str().unwrap()]);
    // rrd_client.c's rrd_client_dump: "dump <path> <header>\n".
    let (xml, closed) = exchange(&d.socket, &format!("dump {} dtd\n", ours.display()));
    assert!(closed, "DUMP closes the connection at the end of the XML");
    assert_eq!(String::from_utf8_lossy(&xml), expected);
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&copy).unwrap(), "DUMP flushes first");
    // No header asked: rrdcached's (the DTD one); others on request.
    assert_eq!(String::from_utf8_lossy(&exchange(&d.socket, "DUMP a.rrd\n").0), expected);
    let none = rrdtool(&["dump", "--header", "none", copy.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&exchange(&d.socket, "DUMP a.rrd -h none\n").0), none);
    let xsd = rrdtool(&["dump", "--header", "xsd", copy.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&exchange(&d.socket, "DUMP a.rrd xsd\n").0), xsd);

    // Errors are status lines; the connection stays.
    let (r, closed) = exchange(&d.socket, "DUMP nope.rrd\n");
    assert_eq!(String::from_utf8_lossy(&r), "-1 nope.rrd: failed to stat: No such file or directory\n");
    assert!(!closed);
    std::fs::create_dir(dir.join("d.rrd")).unwrap();
    let (r, _) = exchange(&d.socket, "DUMP d.rrd\n");
    assert_eq!(String::from_utf8_lossy(&r), "-1 d.rrd: failed to stat: not a regular file\n");
    std::fs::write(dir.join("junk.rrd"), b"not an rrd").unwrap();
    let (r, _) = exchange(&d.socket, "DUMP junk.rrd\n");
    assert!(String::from_utf8_lossy(&r).starts_with("-1 junk.rrd: failed to relay dump: "), "{r:?}");
    let (r, _) = exchange(&d.socket, "DUMP\n");
    assert_eq!(String::from_utf8_lossy(&r), "-1 Usage: DUMP <filename> [-h none|xsd|dtd]\n");
    let (r, _) = exchange(&d.socket, "DUMP a.rrd html\n");
    assert_eq!(String::from_utf8_lossy(&r), "-1 Usage: DUMP <filename> [-h none|xsd|dtd]\n");
    // Replies before a DUMP come first; lines after it are not run.
    let (r, closed) = exchange(&d.socket, "PING\nDUMP a.rrd\nPING\n");
    assert!(closed);
    assert_eq!(String::from_utf8_lossy(&r), format!("0 PONG\n{expected}"));
    d.stop();
}

#[test]
fn help_lists_tune_and_dump_where_rrdcached_19_does() {
    let (_t, dir) = temp_dir();
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let mut c = d.client();
    let help = c.call("HELP");
    let lines: Vec<&str> = help.lines().collect();
    assert_eq!(lines[0], "24 Command overview");
    assert_eq!(
        &lines[1..5],
        [
            "UPDATE <filename> <values> [<values> ...]",
            "TUNE <filename> [options]",
            "DUMP <filename> [-h none|xsd|dtd]",
            "FLUSH <filename>"
        ]
    );
    assert_eq!(
        c.call("HELP TUNE"),
        "4 Help for TUNE\nUsage: TUNE <filename> [options]\n\nTunes the given file, takes the parameters as defined in rrdtool.\n\n"
    );
    assert_eq!(
        c.call("HELP dump"),
        "4 Help for DUMP\nUsage: DUMP <filename> [-h none|xsd|dtd]\n\nDumps the specified RRD to XML.\n\n"
    );
    d.stop();
}

/// A daemon that records the lines it gets: `flush` and `tune` are
/// answered with success, `dump` with `payload` and the end of the
/// connection (rrdcached 1.9's DUMP).
fn recording_daemon(socket: &Path, payload: &'static str) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = std::io::BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                let _ = tx.send(line.clone());
                let reply = match line.split(' ').next().unwrap_or("") {
                    "dump" => {
                        let _ = conn.write_all(payload.as_bytes());
                        break;
                    }
                    "tune" => "0 Success\n",
                    _ => "0 Successfully flushed.\n",
                };
                let _ = conn.write_all(reply.as_bytes());
                line.clear();
            }
        }
    });
    rx
}

fn rrdscale(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rrdscale"))
        .args(args)
        .env_remove("RRDCACHED_ADDRESS")
        .envs(env.iter().copied())
        .env("TZ", "UTC")
        .output()
        .unwrap()
}

fn received(rx: &std::sync::mpsc::Receiver<String>) -> Vec<String> {
    rx.try_iter().collect()
}

#[test]
fn client_sends_rrdtool_19_requests() {
    let (_t, dir) = temp_dir();
    let socket = dir.join("sock");
    let rx = recording_daemon(&socket, "<?xml?>\n<rrd>a b\\c</rrd>\n");
    let file = dir.join("my file.rrd");
    std::fs::write(&file, b"").unwrap();
    let (f, addr) = (file.to_str().unwrap(), format!("unix:{}", socket.display()));
    let esc = f.replace(' ', "\\ ");

    // rrd_tune: flush, then the whole (permuted) command line.
    let out = rrdscale(&["tune", f, "DEL:y", "-h", "x:900", "--daemon", &addr], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sock = socket.display().to_string();
    assert_eq!(
        received(&rx),
        [format!("flush {esc}\n"), format!("tune {esc} 7 tune -h x:900 --daemon unix:{sock} {esc} DEL:y\n")]
    );
    // RRDCACHED_ADDRESS names the daemon just as well.
    let out = rrdscale(&["tune", f, "--heartbeat=x:60"], &[("RRDCACHED_ADDRESS", &addr)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        received(&rx),
        [format!("flush {esc}\n"), format!("tune {esc} 3 tune --heartbeat=x:60 {esc}\n")]
    );

    // rrd_dump: flush, then "dump <file> <header>"; the XML is what came
    // before the close.
    let out = rrdscale(&["dump", "--daemon", &addr, f], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "<?xml?>\n<rrd>a b\\c</rrd>\n");
    assert_eq!(received(&rx), [format!("flush {esc}\n"), format!("dump {esc} dtd\n")]);
    let xml = dir.join("out.xml");
    let out = rrdscale(&["dump", "-h", "xsd", f, xml.to_str().unwrap()], &[("RRDCACHED_ADDRESS", &addr)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&xml).unwrap(), "<?xml?>\n<rrd>a b\\c</rrd>\n");
    assert_eq!(received(&rx), [format!("flush {esc}\n"), format!("dump {esc} xsd\n")]);
    let out = rrdscale(&["dump", "--no-header", "--daemon", &addr, f], &[]);
    assert!(out.status.success());
    assert_eq!(received(&rx)[1], format!("dump {esc} none\n"));
}

#[test]
fn client_uses_our_daemons_tune_and_dump() {
    require_tools();
    let (_t, dir) = temp_dir();
    let (ours, copy, d) = two_files(&dir);
    let addr = format!("unix:{}", d.socket.display());
    let f = ours.to_str().unwrap();
    let out = rrdscale(&["dump", "--daemon", &addr, f], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), rrdtool(&["dump", copy.to_str().unwrap()]));
    let mut c = d.client();
    let r = c.call(&format!("UPDATE a.rrd {}:7:7000", T0 + 300 * 13));
    assert_eq!(r, "0 errors, enqueued 1 value(s).\n");
    rrdtool(&["update", copy.to_str().unwrap(), &format!("{}:7:7000", T0 + 300 * 13)]);
    let out = rrdscale(&["tune", f, "-i", "x:0", "RRA#2:+4"], &[("RRDCACHED_ADDRESS", &addr)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    rrdtool(&["tune", copy.to_str().unwrap(), "-i", "x:0", "RRA#2:+4"]);
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&copy).unwrap(), "tuned files differ");
    // The daemon's error is the command's.
    let out = rrdscale(&["tune", f, "-h", "nope:1", "--daemon", &addr], &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Got error unknown data source name 'nope'"), "{err}");
    let out = rrdscale(&["dump", "--daemon", &addr, dir.join("nope.rrd").to_str().unwrap()], &[]);
    assert!(!out.status.success());
    d.stop();
}

#[test]
fn client_falls_back_with_rrdcached_172() {
    require_tools();
    let (_t, dir) = temp_dir();
    let ours = dir.join("a.rrd");
    create_rrd(&ours, T0);
    let copy = dir.join("copy.rrd");
    std::fs::copy(&ours, &copy).unwrap();
    let d = Daemon::start(Kind::Rrdcached, &dir, &[]);
    let addr = format!("unix:{}", d.socket.display());
    let mut c = d.client();
    assert_eq!(c.call("TUNE a.rrd 1 tune"), "-1 Unknown command: TUNE\n");
    let r = c.call(&format!("UPDATE a.rrd {}:1:100 {}:2:200", T0 + 300, T0 + 600));
    assert_eq!(r, "0 errors, enqueued 2 value(s).\n");
    for v in [format!("{}:1:100", T0 + 300), format!("{}:2:200", T0 + 600)] {
        rrdtool(&["update", copy.to_str().unwrap(), &v]);
    }
    let f = ours.to_str().unwrap();
    let out = rrdscale(&["dump", "--daemon", &addr, f], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), rrdtool(&["dump", copy.to_str().unwrap()]));
    let out = rrdscale(&["tune", f, "-h", "x:900", "--daemon", &addr], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    rrdtool(&["tune", copy.to_str().unwrap(), "-h", "x:900"]);
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&copy).unwrap(), "tuned files differ");
    d.stop();
}

#[test]
fn tune_and_dump_stay_beneath_the_base_directory() {
    require_tools();
    let (_t, top) = temp_dir();
    let outside = top.join("outside.rrd");
    create_rrd(&outside, T0);
    let before = std::fs::read(&outside).unwrap();
    let dir = top.join("base");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("link.rrd")).unwrap();
    let d = Daemon::start(Kind::Ours, &dir, &["-B"]);
    let e = |line: &str| String::from_utf8_lossy(&exchange(&d.socket, line).0).into_owned();
    let up = format!("-1 {}/../outside.rrd: Permission denied\n", dir.display());
    assert_eq!(e("TUNE ../outside.rrd 3 tune -h x:900\n"), up);
    assert_eq!(
        e("TUNE link.rrd 3 tune -h x:900\n"),
        format!(
            "-1 Got error {}: Permission denied (outside the base directory)\n",
            dir.join("link.rrd").display()
        )
    );
    assert_eq!(e("DUMP ../outside.rrd\n"), up);
    assert_eq!(e("DUMP link.rrd\n"), "-1 link.rrd: Permission denied\n");
    assert!(std::fs::read(&outside).unwrap() == before, "the outside file changed");
    d.stop();
}

#[test]
fn a_large_dump_arrives_whole_in_many_pieces() {
    require_tools();
    let (_t, dir) = temp_dir();
    let file = dir.join("big.rrd");
    let f = file.to_str().unwrap();
    rrdtool(&[
        "create",
        f,
        "-b",
        &T0.to_string(),
        "-s",
        "60",
        "DS:x:GAUGE:120:U:U",
        "RRA:AVERAGE:0.5:1:100000",
    ]);
    rrdtool(&["update", f, &format!("{}:1", T0 + 60), &format!("{}:2", T0 + 120)]);
    let expected = rrdtool(&["dump", f]);
    assert!(expected.len() > 8 * 256 * 1024, "the XML spans many pieces ({} bytes)", expected.len());
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let (xml, closed) = exchange(&d.socket, "DUMP big.rrd\n");
    assert!(closed);
    assert!(xml == expected.as_bytes(), "{} bytes, expected {}", xml.len(), expected.len());
    d.stop();
}
