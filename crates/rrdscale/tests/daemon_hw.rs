//! `rrdscale daemon` flushes files with Holt-Winters archives exactly as
//! rrdcached 1.7.2 does: the same UPDATE stream, flushed in the same groups
//! (each FLUSH is one rrdtool update call, so the seasonal smoother runs at
//! most once per group on both sides), leaves byte-identical files. Both
//! daemons start from copies of one rrdtool-made file, because the
//! smoother's schedule depends on the random initial rows.

mod daemon_common;

use std::time::Duration;

use daemon_common::{require_tools, rrdtool, temp_dir, Daemon, Kind};

const T0: i64 = 1_000_000_000;

#[test]
fn holt_winters_files_flush_like_rrdcached() {
    require_tools();
    let (_ts, src) = temp_dir();
    let (_ta, dir_theirs) = temp_dir();
    let (_tb, dir_ours) = temp_dir();
    // Explicit MHWPREDICT group with a smoothing window (smoothing happens
    // every few flushes), and an implicit HWPREDICT one.
    let files: [(&str, &[&str]); 2] = [
        (
            "m.rrd",
            &[
                "RRA:AVERAGE:0.5:1:10",
                "RRA:SEASONAL:6:0.3:3:smoothing-window=0.5",
                "RRA:MHWPREDICT:20:0.4:0.2:6:2",
                "RRA:DEVSEASONAL:6:0.2:3:smoothing-window=0.34",
                "RRA:DEVPREDICT:20:4",
                "RRA:FAILURES:20:2:4:4",
            ],
        ),
        ("h.rrd", &["RRA:HWPREDICT:30:0.5:0.1:5", "RRA:MAX:0.5:2:10"]),
    ];
    for (name, rras) in &files {
        let path = src.join(name);
        let mut args = vec!["create", path.to_str().unwrap(), "-b", "1000000000", "-s", "10"];
        args.extend(["DS:x:GAUGE:30:U:U", "DS:y:COUNTER:30:U:U"]);
        args.extend(rras.iter().copied());
        rrdtool(&args);
        std::fs::copy(&path, dir_theirs.join(name)).unwrap();
        std::fs::copy(&path, dir_ours.join(name)).unwrap();
    }
    let theirs = Daemon::start(Kind::Rrdcached, &dir_theirs, &[]);
    let ours = Daemon::start(Kind::Ours, &dir_ours, &[]);
    let mut ct = theirs.client();
    let mut co = ours.client();
    let mut t = T0;
    let mut counter = 0u64;
    for round in 0..40u64 {
        for k in 0..(1 + round % 4) {
            t += [10, 10, 7, 13, 10, 30, 10, 45][((round + k) % 8) as usize];
            counter += 1000 + (round * 37 + k * 11) % 500;
            let x = if (round + k) % 11 == 5 {
                "U".to_string()
            } else {
                format!("{}", 50 + (round * 7 + k) % 23)
            };
            for (name, _) in &files {
                let cmd = format!("UPDATE {name} {t}:{x}:{counter}");
                let (rt, ro) = (ct.call(&cmd), co.call(&cmd));
                assert_eq!(rt, ro, "reply to {cmd}");
            }
        }
        for (name, _) in &files {
            let cmd = format!("FLUSH {name}");
            let rt = ct.call(&cmd).replace(dir_theirs.to_str().unwrap(), "DIR");
            let ro = co.call(&cmd).replace(dir_ours.to_str().unwrap(), "DIR");
            assert_eq!(rt, ro, "reply to {cmd}");
            assert!(rt.starts_with('0'), "rrdcached refused {cmd}: {rt}");
        }
    }
    drop(ct);
    drop(co);
    std::thread::sleep(Duration::from_millis(300));
    theirs.stop();
    ours.stop();
    for (name, _) in &files {
        let a = std::fs::read(dir_theirs.join(name)).unwrap();
        let b = std::fs::read(dir_ours.join(name)).unwrap();
        if a != b {
            let dump = |d: &std::path::Path| rrdtool(&["dump", d.join(name).to_str().unwrap()]);
            panic!("{name} differs after the flushes:\n{}\n---\n{}", dump(&dir_theirs), dump(&dir_ours));
        }
    }
}
