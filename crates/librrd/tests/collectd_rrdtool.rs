//! collectd's `rrdtool` plugin (direct writes: `rrd_create_r`,
//! `rrd_update_r`, `rrd_get_error`) on our library and on Debian's: the
//! same values, sent with explicit times through the `unixsock` plugin's
//! PUTVAL, make the same files (canonical bytes).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const COLLECTD: &str = "/usr/sbin/collectd";

/// Runs collectd with the rrdtool and unixsock plugins in `dir`, sends the
/// values, flushes, stops it; the log, and the librrd files it had mapped.
fn collectd_run(dir: &Path, lib_dir: Option<&Path>) -> (String, Vec<String>) {
    let d = dir.display();
    let conf = dir.join("collectd.conf");
    std::fs::write(
        &conf,
        format!(
            "Hostname \"testhost\"\nFQDNLookup false\nInterval 10\nWriteThreads 1\nBaseDir \"{d}\"\n\
             PIDFile \"{d}/collectd.pid\"\nPluginDir \"/usr/lib/collectd\"\n\
             TypesDB \"/usr/share/collectd/types.db\"\n\
             LoadPlugin logfile\n<Plugin logfile>\n  LogLevel \"info\"\n  File \"{d}/collectd.log\"\n</Plugin>\n\
             LoadPlugin unixsock\n<Plugin unixsock>\n  SocketFile \"{d}/sock\"\n</Plugin>\n\
             LoadPlugin rrdtool\n<Plugin rrdtool>\n  DataDir \"{d}/data\"\n  CacheTimeout 0\n\
             CacheFlush 0\n  WritesPerSecond 0\n  CreateFilesAsync false\n  RRARows 100\n</Plugin>\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new(COLLECTD);
    cmd.args(["-C", conf.to_str().unwrap(), "-f"])
        .env_remove("LD_LIBRARY_PATH")
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(l) = lib_dir {
        cmd.env("LD_LIBRARY_PATH", l);
    }
    let mut child = cmd.spawn().expect("starting collectd");
    let sock = dir.join("sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    let stream = loop {
        match UnixStream::connect(&sock) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("collectd's socket never appeared: {e}"),
        }
    };
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut w = stream;
    let mut ask = |line: String| {
        w.write_all(line.as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
        let mut reply = String::new();
        reader.read_line(&mut reply).unwrap();
        assert!(reply.starts_with('0'), "collectd refused {line:?}: {reply}");
    };
    let files =
        ["gauge-a", "derive-b", "if_octets-c"].map(|f| dir.join(format!("data/testhost/lib/{f}.rrd")));
    let last = |f: &Path| {
        let out = Command::new("/usr/bin/rrdtool").arg("last").arg(f).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse::<i64>().ok()
    };
    // Until every file's last update is `t`: the plugin writes from its
    // own queue thread, after collectd's write thread handed it the value.
    let wait_for = |t: i64, what: &str| {
        while !files.iter().all(|f| last(f) == Some(t)) {
            assert!(Instant::now() < deadline + Duration::from_secs(20), "collectd never wrote {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // Gauges, counters and a two-value type, with gaps and repeats.
    let t0 = 1_600_000_000i64;
    let mut t = t0;
    for i in 0..120i64 {
        t = t0 + 10 * i + if i % 7 == 0 { 3 } else { 0 };
        ask(format!("PUTVAL testhost/lib/gauge-a interval=10 {t}:{}", (i * 37 % 101) as f64 / 4.0));
        if i % 5 != 3 {
            ask(format!("PUTVAL testhost/lib/derive-b interval=10 {t}:{}", i * i * 13));
        }
        ask(format!("PUTVAL testhost/lib/if_octets-c interval=10 {t}:{}:{}", i * 1000, i * 250 + 7));
        if i == 0 {
            // The plugin drops values that arrive while their file is
            // being created (in another write thread): let it finish, and
            // write the first values (a fixed pause was too short under
            // load).
            while !files.iter().all(|f| f.exists()) {
                assert!(Instant::now() < deadline, "collectd created no files");
                std::thread::sleep(Duration::from_millis(20));
            }
            wait_for(t, "the first values");
        }
    }
    // collectd drops the values still in its write queue when it stops, so
    // the last ones must be in the files before the SIGTERM (a run that
    // stopped earlier lost the last update of one side now and then).
    wait_for(t, "the last values");
    ask("FLUSH plugin=rrdtool".to_string());
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", child.id())).unwrap();
    let mut libs: Vec<String> = maps
        .lines()
        .filter(|l| l.contains("librrd.so"))
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect();
    libs.dedup();
    // SAFETY: a signal to our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    (std::fs::read_to_string(dir.join("collectd.log")).unwrap_or_default(), libs)
}

#[test]
fn collectd_rrdtool_plugin_writes_the_same_files_through_our_library() {
    require(COLLECTD, "collectd-core");
    require("/usr/lib/collectd/rrdtool.so", "collectd-core");
    require(DEBIAN_LIBRRD, "librrd8");
    let (lib_dir, lib) = library_dir();
    // collectd refuses paths with a component starting with a dot, as
    // tempfile's default names have.
    let mk = || tempfile::Builder::new().prefix("librrd-collectd-").tempdir().unwrap();
    let (ours, theirs) = (mk(), mk());
    let (ours_log, ours_libs) = collectd_run(ours.path(), Some(lib_dir.path()));
    let (theirs_log, theirs_libs) = collectd_run(theirs.path(), None);
    assert_eq!(ours_libs, vec![lib.display().to_string()], "collectd ran on our library");
    let debian = Path::new(DEBIAN_LIBRRD).canonicalize().unwrap();
    assert_eq!(theirs_libs, vec![debian.display().to_string()], "and then on Debian's");
    for (name, log) in [("ours", &ours_log), ("librrd", &theirs_log)] {
        assert!(!log.contains("failed"), "{name}: collectd reported errors:\n{log}");
    }
    // The plugin's files, each written through the library in use.
    let data = |d: &Path| d.join("data/testhost/lib");
    let files = assert_same_files(&data(ours.path()), &data(theirs.path()));
    assert_eq!(files, 3, "three RRDs");
    // And they are not empty: the last value is in.
    let out = Command::new("/usr/bin/rrdtool")
        .args(["lastupdate", data(ours.path()).join("gauge-a.rrd").to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1600001193: 15"), "the last value is in: {text}");
}
