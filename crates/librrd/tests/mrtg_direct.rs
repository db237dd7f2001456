//! MRTG in direct mode (no `RRDCached:`): Debian's `mrtg` polls a local
//! `snmpd` and writes its RRD through Perl's `RRDs` (librrds-perl), once on
//! our `librrd.so.8` (`LD_LIBRARY_PATH`) and once on Debian's librrd 1.7.2.
//! The files must be equal (canonically: archives rotated to their oldest
//! row) after every run, and `/proc/<pid>/maps` of each MRTG must show the
//! library it was meant to load.
//!
//! To make the two runs comparable, what MRTG reads is fixed: the counters
//! come from snmpd's `pass` hook (a script printing values this test
//! writes before each run), and the time MRTG stamps its updates with
//! comes from a `time()` shim (`LD_PRELOAD`, compiled here with `cc`),
//! 300 s apart per run. MRTG's create, tune checks and `updatev` then
//! reach the library with identical arguments on both sides.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

const MRTG: &str = "/usr/bin/mrtg";
const SNMPD: &str = "/usr/sbin/snmpd";
/// Under net-snmp's experimental arc, served by the pass script.
const OID: &str = ".1.3.6.1.4.1.8072.9999";

/// `time()` (what Perl's `time` calls) returns `$FAKE_TIME`; everything
/// else is the C library's.
const TIME_SHIM: &str = r#"
#include <stdlib.h>
#include <time.h>
time_t time(time_t *t) {
    const char *v = getenv("FAKE_TIME");
    time_t now = v ? (time_t)atoll(v) : 0;
    if (t) *t = now;
    return now;
}
"#;

struct Snmpd {
    child: std::process::Child,
    port: u16,
}

impl Drop for Snmpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// snmpd on a free local port answering `OID.1`/`OID.2` with the counters
/// in `dir/in` and `dir/out`.
fn start_snmpd(dir: &Path) -> Snmpd {
    let script = dir.join("pass.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n[ \"$1\" = -g ] || exit 0\ncase \"$2\" in\n\
             {OID}.1) echo \"$2\"; echo counter; cat {d}/in ;;\n\
             {OID}.2) echo \"$2\"; echo counter; cat {d}/out ;;\nesac\n",
            d = dir.display()
        ),
    )
    .unwrap();
    std::fs::write(dir.join("in"), "0\n").unwrap();
    std::fs::write(dir.join("out"), "0\n").unwrap();
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let conf = dir.join("snmpd.conf");
    std::fs::write(&conf, format!("rocommunity public 127.0.0.1\npass {OID} /bin/sh {}\n", script.display()))
        .unwrap();
    let child = rrd_testkit::mrtg::start_snmpd(SNMPD, &conf, port);
    Snmpd { child, port }
}

/// One MRTG run over `work` at `time`; returns the librrd files its
/// process mapped (printed at its end by `ShowLibrrd.pm`, which
/// `PERL5OPT` loads into MRTG's Perl).
fn mrtg(dir: &Path, work: &Path, shim: &Path, lib_dir: Option<&Path>, time: i64, port: u16) -> String {
    let cfg = work.join("mrtg.cfg");
    std::fs::write(
        &cfg,
        format!(
            "WorkDir: {}\nLogFormat: rrdtool\n\
             Target[t]: {OID}.1&{OID}.2:public@127.0.0.1:{port}\n\
             MaxBytes[t]: 1250000000\nTitle[t]: t\nPageTop[t]: <h1>t</h1>\n",
            work.display()
        ),
    )
    .unwrap();
    let maps_out = work.join("maps.txt");
    let mut cmd = Command::new(MRTG);
    cmd.env("FAKE_TIME", time.to_string())
        .env("LD_PRELOAD", shim)
        .env("PERL5LIB", dir)
        .env("PERL5OPT", "-MShowLibrrd")
        .env("SHOW_LIBRRD", &maps_out);
    cmd.env_remove("LD_LIBRARY_PATH");
    if let Some(d) = lib_dir {
        cmd.env("LD_LIBRARY_PATH", d);
    }
    rrd_testkit::mrtg::run_once(cmd, work, &cfg);
    std::fs::read_to_string(&maps_out).expect("the mapped libraries")
}

/// The RRD files of a work directory, canonical, by name.
fn rrds(work: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rrd"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                canonical_rrd(&std::fs::read(&p).unwrap()),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn mrtg_direct_mode_writes_the_same_files_through_our_library() {
    require(MRTG, "mrtg");
    require(SNMPD, "snmpd");
    require("/usr/bin/cc", "gcc");
    require(DEBIAN_LIBRRD, "librrd8");
    let rrds_ok = Command::new("perl").args(["-MRRDs", "-e", "1"]).output().expect("running perl");
    assert!(rrds_ok.status.success(), "perl's RRDs module is missing: install librrds-perl");
    let (lib_dir, lib) = library_dir();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();

    let shim = dir.join("faketime.so");
    std::fs::write(dir.join("faketime.c"), TIME_SHIM).unwrap();
    let cc = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&shim)
        .arg(dir.join("faketime.c"))
        .status()
        .expect("running cc");
    assert!(cc.success(), "cc failed on the time shim");
    // Prints the librrd files this Perl process mapped, at its end.
    std::fs::write(
        dir.join("ShowLibrrd.pm"),
        "package ShowLibrrd;\nEND {\n  open(my $m, '<', '/proc/self/maps') or die;\n  my %seen;\n\
         open(my $o, '>', $ENV{SHOW_LIBRRD}) or die;\n\
         while (<$m>) { print $o \"$1\\n\" if m{(/\\S*librrd\\S*)} && !$seen{$1}++ }\n}\n1;\n",
    )
    .unwrap();

    let snmpd = start_snmpd(dir);
    let ours: PathBuf = dir.join("ours");
    let theirs: PathBuf = dir.join("theirs");
    std::fs::create_dir_all(&ours).unwrap();
    std::fs::create_dir_all(&theirs).unwrap();
    let debian = Path::new(DEBIAN_LIBRRD).canonicalize().unwrap();
    let start = 1_700_000_000i64;
    let mut compared = 0;
    for run in 0..6i64 {
        // Counters that grow by a different amount each interval; `out`
        // wraps its 32 bits in the 4th.
        let inc = run * run * 70_000;
        let outc = [0i64, 4_000_000_000, 4_100_000_000, 50_000, 1_000_000, 2_000_000][run as usize];
        std::fs::write(dir.join("in"), format!("{inc}\n")).unwrap();
        std::fs::write(dir.join("out"), format!("{outc}\n")).unwrap();
        let time = start + 300 * run;
        let a = mrtg(dir, &ours, &shim, Some(lib_dir.path()), time, snmpd.port);
        let b = mrtg(dir, &theirs, &shim, None, time, snmpd.port);
        assert_eq!(a.trim(), lib.display().to_string(), "run {run}: ours loaded, alone");
        assert_eq!(b.trim(), debian.display().to_string(), "run {run}: Debian's loaded");
        let (x, y) = (rrds(&ours), rrds(&theirs));
        assert_eq!(x.len(), 1, "run {run}: MRTG made its file");
        assert_eq!(x, y, "run {run}: files differ");
        compared += 1;
    }
    assert_eq!(compared, 6);
    // The runs wrote data: the file's last update is the last run's time.
    let info = Command::new("/usr/bin/rrdtool")
        .args(["lastupdate", ours.join("t.rrd").to_str().unwrap()])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("rrdtool lastupdate");
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains(&format!("{}:", start + 300 * 5)), "last update at the last run: {text}");
    // ... and the counters' rates reached the archive (not unknowns).
    let fetch = Command::new("/usr/bin/rrdtool")
        .args(["fetch", ours.join("t.rrd").to_str().unwrap(), "AVERAGE", "-s"])
        .arg((start - 300).to_string())
        .arg("-e")
        .arg((start + 1500).to_string())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("rrdtool fetch");
    let rows = String::from_utf8_lossy(&fetch.stdout);
    let known = rows.lines().filter(|l| l.contains(": ") && !l.contains("nan")).count();
    assert!(known >= 3, "rates stored: {rows}");
}
