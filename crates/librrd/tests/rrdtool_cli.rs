//! Debian's own `/usr/bin/rrdtool` is linked against librrd.so.8 and does
//! little itself: run on our library it must print what it prints on
//! Debian's (rrd_info_print, rrd_xport printing when `xsize` is NULL,
//! rrd_lastupdate, rrd_update_v lists, error texts and exit statuses).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn session(lib_dir: Option<&Path>) -> (tempfile::TempDir, String) {
    let work = tempfile::tempdir().unwrap();
    let t0 = 1_600_000_000i64;
    let mut script: Vec<Vec<String>> = vec![
        "create a.rrd --start 1600000000 --step 60 DS:x:GAUGE:120:0:U DS:y:COUNTER:120:U:U RRA:AVERAGE:0.5:1:50 RRA:MAX:0.5:4:20 RRA:LAST:0:2:30"
            .split(' ')
            .map(String::from)
            .collect(),
    ];
    let mut batch = vec!["update".to_string(), "a.rrd".to_string()];
    for i in 1..80 {
        batch.push(format!("{}:{}:{}", t0 + 60 * i - (i % 3), (i * 17) % 23, i * i * 7));
    }
    script.push(batch);
    for line in [
        "updatev a.rrd 1600004900:5:60000 1600004960:U:61000",
        "updatev a.rrd 1600000000:1:1",
        "update a.rrd 1600000000:1:1",
        "fetch a.rrd AVERAGE -s 1600000000 -e 1600005000",
        "fetch a.rrd MAX -s 1600000000 -e 1600005000 -r 240",
        "fetch a.rrd NOPE -s 1600000000",
        "info a.rrd",
        "lastupdate a.rrd",
        "first a.rrd",
        "first --rraindex 2 a.rrd",
        "last a.rrd",
        "xport -s 1600000000 -e 1600005000 DEF:a=a.rrd:x:AVERAGE CDEF:b=a,2,* XPORT:a:x XPORT:b:double",
        "xport --json -t --enumds -s 1600000000 -e 1600005000 DEF:a=a.rrd:y:AVERAGE XPORT:a",
        "graphv g.png -s 1600000000 -e 1600005000 DEF:a=a.rrd:x:AVERAGE LINE:a#ff0000 PRINT:a:AVERAGE:%.2lf",
        "tune a.rrd -h x:300 -a x:100",
        "dump a.rrd",
        "resize a.rrd 0 GROW 3",
        "info missing.rrd",
        "dump missing.rrd",
        "list .",
    ] {
        script.push(line.split(' ').map(String::from).collect());
    }
    let mut out = String::new();
    for args in script {
        let mut cmd = Command::new("/usr/bin/rrdtool");
        cmd.args(&args).current_dir(work.path()).env_remove("LD_LIBRARY_PATH").env("TZ", "UTC");
        if let Some(d) = lib_dir {
            cmd.env("LD_LIBRARY_PATH", d);
        }
        let o = cmd.output().unwrap();
        out.push_str(&format!(
            "$ rrdtool {}\n[{:?}]\n{}\n{}\n",
            args.join(" "),
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    (work, out)
}

#[test]
fn debians_rrdtool_prints_the_same_on_our_library() {
    require("/usr/bin/rrdtool", "rrdtool");
    require(DEBIAN_LIBRRD, "librrd8");
    let (lib_dir, _lib) = library_dir();
    let (ours_dir, ours) = session(Some(lib_dir.path()));
    let (theirs_dir, theirs) = session(None);
    // An archive's current row is random (rrdtool's and ours).
    let stable = |s: &str| s.lines().filter(|l| !l.contains(".cur_row = ")).collect::<Vec<_>>().join("\n");
    assert_same_text(&stable(&ours), &stable(&theirs), "rrdtool's output");
    assert!(ours.contains("<xport>") && ours.contains("\"about\""), "xport printed, XML and JSON");
    assert!(ours.contains("[Some(1)]"), "the error cases ran");
    // resize.rrd and a.rrd, canonical bytes (the PNG is not compared).
    assert_eq!(assert_same_files(ours_dir.path(), theirs_dir.path()), 2);
}
