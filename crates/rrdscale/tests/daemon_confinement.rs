//! `-B` confinement of every path a command reads, beyond UPDATE and the
//! reads (daemon_request_path.rs): CREATE's `-r` sources and `-t`
//! template reached through a symbolic link out of the base directory (a
//! linked directory or a linked file) are refused, and nothing of the
//! outside file reaches a new file. A directory of the base swapped for a
//! link out of it: TUNE's rewrite, CREATE (and `-R`'s directories) are
//! refused and nothing outside changes.

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

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn tune_and_create_through_a_directory_swapped_for_a_link_are_refused() {
    require_tools();
    let (_t, base) = temp_dir();
    let (_o, outside) = temp_dir();
    std::fs::create_dir(base.join("sub")).unwrap();
    create_rrd(&base.join("sub/f.rrd"), T0);
    let decoy = outside.join("f.rrd");
    create_rrd(&decoy, T0);
    let before = std::fs::read(&decoy).unwrap();
    let d = Daemon::start(Kind::Ours, &base, &["-B", "-R"]);
    let mut c = d.client();
    let tune = "TUNE sub/f.rrd 3 tune sub/f.rrd RRA#0:+5";
    let create =
        |name: &str| format!("CREATE {name} -b {} -s 300 DS:x:GAUGE:600:U:U RRA:AVERAGE:0.5:1:20", T0);
    // Before the swap all three work beneath the base.
    assert_eq!(
        c.call(tune),
        "0 Success
"
    );
    assert_eq!(
        c.call(&create("sub/new.rrd")),
        "0 RRD created OK
"
    );
    assert_eq!(
        c.call(&create("sub/deeper/new.rrd")),
        "0 RRD created OK
"
    );
    std::fs::rename(base.join("sub"), base.join("old-sub")).unwrap();
    std::os::unix::fs::symlink(&outside, base.join("sub")).unwrap();
    let r = c.call(tune);
    assert!(r.starts_with("-1 ") && r.contains("Permission denied"), "{r:?}");
    for name in ["sub/new2.rrd", "sub/deeper2/new.rrd"] {
        let r = c.call(&create(name));
        assert!(r.starts_with("-1 ") && r.contains("Permission denied"), "CREATE {name}: {r:?}");
    }
    assert_eq!(listing(&outside), ["f.rrd"], "something was made outside the base");
    assert!(std::fs::read(&decoy).unwrap() == before, "the outside file changed");
    d.stop();
}

/// An ordinary tree: rrd files at several depths, other files, an empty
/// directory, a link to a file and one to a directory, both inside.
fn ordinary_tree(root: &Path) {
    for d in ["a", "a/b", "a/b/c", "empty", "d"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for f in ["x.rrd", "a/y.rrd", "a/b/z.rrd", "a/b/c/w.rrd", "d/v.rrd", "a/b/notes.txt", "x.rrd.old"] {
        std::fs::write(root.join(f), b"").unwrap();
    }
    symlink("x.rrd", root.join("lx.rrd")).unwrap();
    symlink(root.join("d"), root.join("ld")).unwrap();
}

fn list(d: &Daemon, line: &str) -> String {
    d.client().call(line)
}

#[test]
fn list_recursive_of_an_ordinary_tree_is_rrdcached_s() {
    require_tools();
    let (_t, base) = temp_dir();
    ordinary_tree(&base.join("tree"));
    let lines = ["LIST RECURSIVE /tree", "LIST /tree", "LIST RECURSIVE /tree/a", "LIST /tree/a/y.rrd"];
    let theirs: Vec<String> = {
        let d = Daemon::start(Kind::Rrdcached, &base, &[]);
        let r = lines.iter().map(|l| list(&d, l)).collect();
        d.stop();
        r
    };
    let d = Daemon::start(Kind::Ours, &base, &[]);
    for (line, expected) in lines.iter().zip(&theirs) {
        assert_eq!(&list(&d, line), expected, "{line}");
    }
    d.stop();
}

#[test]
fn list_recursive_ends_on_loops_and_stays_in_the_base() {
    require_tools();
    let (_t, base) = temp_dir();
    let (_o, outside) = temp_dir();
    std::fs::write(outside.join("secret.rrd"), b"").unwrap();
    let tree = base.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a.rrd"), b"").unwrap();
    std::fs::write(tree.join("sub/b.rrd"), b"").unwrap();
    symlink(".", tree.join("l1")).unwrap();
    symlink("..", tree.join("sub/up")).unwrap();
    symlink(&outside, tree.join("out")).unwrap();
    let d = Daemon::start(Kind::Ours, &base, &[]);
    let mut c = d.client();
    let started = std::time::Instant::now();
    let reply = c.call("LIST RECURSIVE /tree");
    assert!(started.elapsed().as_secs() < 10, "LIST RECURSIVE took {:?}", started.elapsed());
    let mut names: Vec<&str> = reply.lines().skip(1).collect();
    names.sort();
    assert_eq!(reply.lines().next(), Some("2 RRDs"), "{reply}");
    assert_eq!(names, ["a.rrd", "sub/b.rrd"], "{reply}");
    // The whole base, loops and all.
    let all = c.call("LIST RECURSIVE /");
    assert!(!all.contains("secret"), "{all}");
    // A path through the link out of the base is refused, not listed.
    for line in
        ["LIST /tree/out", "LIST RECURSIVE /tree/out", "LIST /tree/out/secret.rrd", "LIST /tree/out/*.rrd"]
    {
        let r = c.call(line);
        assert!(r.starts_with("-1 "), "{line}: {r}");
    }
    d.stop();
}

/// A tree whose links make 2^24 paths (each level links twice to the
/// next): the walk stops at its bound (`--list-max-names`, lowered here
/// to keep the test short) with an error line, and the daemon still
/// answers; a client that leaves in the middle of such a walk stops it.
#[test]
fn list_recursive_of_an_exploding_tree_stops_at_its_bound() {
    require_tools();
    let (_t, base) = temp_dir();
    exploding_tree(&base);
    let d = Daemon::start(Kind::Ours, &base, &["--list-max-names", "20000"]);
    let mut c = d.client();
    let started = std::time::Instant::now();
    let reply = c.call("LIST RECURSIVE /tree/d0");
    eprintln!("bounded LIST took {:?}", started.elapsed());
    assert!(reply.starts_with("-1 List ") && reply.contains("limit"), "{}", &reply[..reply.len().min(200)]);
    assert_eq!(c.call("PING"), "0 PONG\n");
    d.stop();
}

/// `base/tree/d0`..`d24`, each `dI` holding two links to `dI+1`, and
/// `f.rrd` at the bottom: 2^24 paths.
fn exploding_tree(base: &Path) {
    let tree = base.join("tree");
    let levels = 24;
    for i in 0..=levels {
        std::fs::create_dir_all(tree.join(format!("d{i}"))).unwrap();
    }
    for i in 0..levels {
        for l in ["x", "y"] {
            symlink(format!("../d{}", i + 1), tree.join(format!("d{i}/{l}"))).unwrap();
        }
    }
    std::fs::write(tree.join(format!("d{levels}/f.rrd")), b"").unwrap();
}

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) / 100.0
}

#[test]
fn a_list_whose_client_left_stops() {
    require_tools();
    let (_t, base) = temp_dir();
    exploding_tree(&base);
    // The default bound: this walk would take many seconds.
    let d = Daemon::start(Kind::Ours, &base, &[]);
    let mut c = d.client();
    c.send("LIST RECURSIVE /tree/d0");
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(c);
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let before = cpu_secs(d.child.id());
    std::thread::sleep(std::time::Duration::from_secs(2));
    let used = cpu_secs(d.child.id()) - before;
    assert!(used < 0.5, "the daemon used {used} s of CPU in 2 s after the client left");
    assert_eq!(d.client().call("PING"), "0 PONG\n");
    d.stop();
}
