//! `-B` confinement of every path a command reads, beyond UPDATE and the
//! reads (daemon_request_path.rs): CREATE's `-r` sources and `-t`
//! template reached through a symbolic link out of the base directory (a
//! linked directory or a linked file) are refused, and nothing of the
//! outside file reaches a new file.

mod daemon_common;

use std::os::unix::fs::symlink;
use std::path::Path;

use daemon_common::{create_rrd, require_tools, rrdtool, temp_dir, Daemon, Kind};

const T0: i64 = 1_000_000_000;

/// A CREATE with a source (`-r`, with definitions) or a template (`-t`,
/// which brings its own).
fn create_line(target: &str, option: &str, source: &str) -> String {
    let defs =
        if option == "-r" { " DS:x:GAUGE:600:U:U DS:y:COUNTER:600:U:U RRA:AVERAGE:0.5:1:20" } else { "" };
    format!("CREATE {target} -b {} -s 300 {option} {source}{defs}", T0 + 3000)
}

/// An RRD outside the base with data in it (so a prefill would show).
fn outside_rrd(dir: &Path) -> std::path::PathBuf {
    let secret = dir.join("secret.rrd");
    create_rrd(&secret, T0);
    for i in 1..=8 {
        rrdtool(&["update", secret.to_str().unwrap(), &format!("{}:{}:{}", T0 + 300 * i, 1000 + i, 50 * i)]);
    }
    secret
}

#[test]
fn create_sources_and_templates_through_links_out_of_the_base_are_refused() {
    require_tools();
    let (_t, base) = temp_dir();
    let (_o, outside) = temp_dir();
    let secret = outside_rrd(&outside);
    symlink(&outside, base.join("ln")).unwrap();
    symlink(&secret, base.join("s.rrd")).unwrap();
    create_rrd(&base.join("inside.rrd"), T0);
    let d = Daemon::start(Kind::Ours, &base, &["-B"]);
    let mut c = d.client();
    for (i, (option, source)) in
        [("-r", "ln/secret.rrd"), ("-r", "s.rrd"), ("-t", "ln/secret.rrd"), ("-t", "s.rrd")]
            .iter()
            .enumerate()
    {
        let target = format!("x{i}.rrd");
        let reply = c.call(&create_line(&target, option, source));
        assert!(
            reply.starts_with("-1 ") && reply.contains("Permission denied"),
            "CREATE {option} {source}: {reply:?}"
        );
        assert!(!base.join(&target).exists(), "CREATE {option} {source} made {target}");
    }
    // The refusals are about the links: the same through a file inside works.
    assert_eq!(c.call(&create_line("ok.rrd", "-r", "inside.rrd")), "0 RRD created OK\n");
    assert_eq!(c.call(&create_line("ok2.rrd", "-t", "inside.rrd")), "0 RRD created OK\n");
    // UPDATE and INFO refuse the same names (as before).
    let info = c.call("INFO s.rrd");
    assert!(info.starts_with("-1 ") && info.contains("Permission denied"), "{info:?}");
    d.stop();
}
