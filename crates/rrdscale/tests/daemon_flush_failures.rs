//! FLUSH tells the truth: when the values could not be written and synced
//! it answers an error line (rrdcached's negative status form), not
//! `0 Successfully flushed`. A write that fails for a reason that may pass
//! (here: the file replaced by a link out of the base under `-B`) keeps the
//! values pending (PENDING lists them); values the file cannot take (here:
//! it was replaced by something that is not an RRD) are dropped, logged at
//! LOG_ERR and counted in STATS (`FlushDrops`).

mod daemon_common;

use std::os::unix::fs::symlink;

use daemon_common::{create_rrd, require_tools, stat_field, temp_dir, Daemon, Kind};

const T0: i64 = 1_000_000_000;

#[test]
fn flush_answers_an_error_when_the_values_were_not_written() {
    require_tools();
    let (_t, dir) = temp_dir();
    let (_o, outside) = temp_dir();
    create_rrd(&dir.join("f.rrd"), T0);
    create_rrd(&dir.join("g.rrd"), T0);
    create_rrd(&outside.join("t.rrd"), T0);
    let d = Daemon::start(Kind::Ours, &dir, &["-B"]);
    let mut c = d.client();
    for f in ["f.rrd", "g.rrd"] {
        assert_eq!(c.call(&format!("UPDATE {f} {}:1:2", T0 + 300)), "0 errors, enqueued 1 value(s).\n");
    }
    // f.rrd: a link out of the base now; the flush cannot open it.
    std::fs::remove_file(dir.join("f.rrd")).unwrap();
    symlink(outside.join("t.rrd"), dir.join("f.rrd")).unwrap();
    let f = dir.join("f.rrd").display().to_string();
    let reply = c.call(&format!("FLUSH {f}"));
    assert!(reply.starts_with(&format!("-1 Cannot flush {f}: ")), "{reply}");
    assert!(reply.contains("kept pending"), "{reply}");
    assert_eq!(c.call(&format!("PENDING {f}")), format!("1 updates pending\n{}:1:2\n", T0 + 300));
    // g.rrd: not an RRD any more; its value is dropped.
    std::fs::write(dir.join("g.rrd"), b"not an rrd at all, but long enough to be read as a header").unwrap();
    let g = dir.join("g.rrd").display().to_string();
    let reply = c.call(&format!("FLUSH {g}"));
    assert!(reply.starts_with(&format!("-1 Cannot flush {g}: ")) && reply.contains("dropped"), "{reply}");
    assert!(stat_field(&c.call("STATS"), "FlushDrops") >= 1);
    // Once the file is sound again, FLUSH succeeds.
    std::fs::remove_file(dir.join("f.rrd")).unwrap();
    create_rrd(&dir.join("f.rrd"), T0);
    assert_eq!(c.call(&format!("FLUSH {f}")), format!("0 Successfully flushed {f}.\n"));
    d.stop();
    let log = std::fs::read_to_string(d_log(&dir)).unwrap_or_default();
    assert!(log.contains("dropped"), "the drop is not in the log:\n{log}");
}

fn d_log(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("daemon-")))
        .expect("the daemon's log")
}
