//! Durability under kill -9, under every `--sync` policy (the default
//! `every:100`, `always`, `none`: each writes the journal record before the
//! reply): every UPDATE the daemon
//! acknowledged is in the RRD files after restart (and FLUSH), whatever the
//! daemon was doing when it was killed — including writing files, since the
//! daemon runs with `-w 1` and a short tick so flushes overlap the kills.
//!
//! Each cycle: start, send BATCHes of updates for every file (some as
//! pipelined single UPDATEs), wait for the acknowledgement, kill -9 after a
//! random short delay. At the end the files must be byte-identical to copies
//! updated directly by rrdtool with exactly the acknowledged values, and
//! every file must pass `rrdtool info`.
//!
//! `RRDSCALE_CRASH_CYCLES` sets the number of cycles (default 3; the loop in
//! scripts/crash_loop.sh runs hundreds). `RRDSCALE_CRASH_SEED` repeats a run.

mod daemon_common;

use std::time::Duration;

use daemon_common::{create_rrd, require_tools, rrdtool, temp_dir, Daemon, Kind};
use rrd_testkit::Rng;

const T0: i64 = 1_000_000_000;

#[test]
fn acknowledged_updates_survive_kill_9_under_the_default_policy() {
    run(None);
}

#[test]
fn acknowledged_updates_survive_kill_9_under_sync_always() {
    run(Some("always"));
}

#[test]
fn acknowledged_updates_survive_kill_9_under_sync_none() {
    run(Some("none"));
}

fn run(sync: Option<&str>) {
    require_tools();
    let cycles: u64 = std::env::var("RRDSCALE_CRASH_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let seed: u64 =
        std::env::var("RRDSCALE_CRASH_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
        });
    eprintln!("crash test ({sync:?}): {cycles} cycles, RRDSCALE_CRASH_SEED={seed}");
    let mut rng = Rng::new(seed | 1);
    let (_t, dir) = temp_dir();
    let reference = dir.join("reference");
    std::fs::create_dir_all(&reference).unwrap();
    let files: Vec<String> = (0..12).map(|i| format!("f{i:02}.rrd")).collect();
    for f in &files {
        create_rrd(&dir.join(f), T0);
        std::fs::copy(dir.join(f), reference.join(f)).unwrap();
    }
    let mut extra = vec!["-w", "1", "-f", "3600", "--tick-ms", "20", "-t", "2", "--segment-bytes", "8192"];
    if let Some(policy) = sync {
        extra.extend(["--sync", policy]);
    }
    // acked[i] = values acknowledged for files[i], in order.
    let mut acked: Vec<Vec<String>> = vec![Vec::new(); files.len()];
    let mut step = 0i64;
    for cycle in 0..cycles {
        let daemon = Daemon::start(Kind::Ours, &dir, &extra);
        let mut c = daemon.client();
        let rounds = 1 + rng.next_u64() % 4;
        for _ in 0..rounds {
            step += 1;
            let t = T0 + 300 * step + (rng.next_u64() % 200) as i64;
            let values: Vec<String> = (0..files.len())
                .map(|i| format!("{t}:{}:{}", (rng.next_u64() % 1000) as f64 / 10.0, step * 1000 + i as i64))
                .collect();
            if rng.next_u64() & 1 == 0 {
                c.send("BATCH");
                assert_eq!(c.read_reply(), "0 Go ahead.  End with dot '.' on its own line.\n");
                for (f, v) in files.iter().zip(&values) {
                    c.send(&format!("UPDATE {f} {v}"));
                }
                let r = c.call(".");
                assert_eq!(r, "0 errors\n", "cycle {cycle}: batch refused");
            } else {
                // Pipelined: all lines first, then all replies.
                for (f, v) in files.iter().zip(&values) {
                    c.send(&format!("UPDATE {f} {v}"));
                }
                for _ in &files {
                    assert_eq!(c.read_reply(), "0 errors, enqueued 1 value(s).\n", "cycle {cycle}");
                }
            }
            for (i, v) in values.into_iter().enumerate() {
                acked[i].push(v);
            }
        }
        // Long enough, often, for values to fall due (-w 1) and be written
        // while we kill.
        std::thread::sleep(Duration::from_millis(rng.next_u64() % 1300));
        daemon.kill9();
    }
    // Restart once more, write everything, stop cleanly.
    let daemon = Daemon::start(Kind::Ours, &dir, &extra);
    let mut c = daemon.client();
    for f in &files {
        let r = c.call(&format!("FLUSH {f}"));
        assert!(r.starts_with("0 "), "{r}");
    }
    // Everything is written and synced: within a few ticks the journal
    // keeps no segment but the current one (and maybe one just closed).
    std::thread::sleep(Duration::from_millis(300));
    let segments = std::fs::read_dir(dir.join("journal")).unwrap().count();
    let stats = c.call("STATS");
    assert!(segments <= 2, "{segments} journal segments left after everything was flushed\n{stats}");
    let log = std::fs::read_to_string(&daemon.log).unwrap_or_default();
    drop(c);
    daemon.stop();
    for (i, f) in files.iter().enumerate() {
        let mut args = vec!["update".to_string(), reference.join(f).display().to_string()];
        args.extend(acked[i].iter().cloned());
        rrdtool(&args.iter().map(String::as_str).collect::<Vec<_>>());
        rrdtool(&["info", dir.join(f).to_str().unwrap()]);
        let ours = std::fs::read(dir.join(f)).unwrap();
        let want = std::fs::read(reference.join(f)).unwrap();
        if ours != want {
            panic!(
                "{f}: acknowledged updates missing or wrong after kill -9 (seed {seed})\n--- want\n{}\n--- have\n{}\n--- log\n{log}",
                rrdtool(&["dump", reference.join(f).to_str().unwrap()]),
                rrdtool(&["dump", dir.join(f).to_str().unwrap()]),
            );
        }
    }
}
