//! `rrdscale daemon --cluster` refuses what cluster mode cannot honour,
//! with a sentence and a non-zero status, before it talks to Kafka (these
//! run without brokers; scripts/cluster-test.sh runs the cluster itself).

use std::process::Command;

fn daemon(args: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rrdscale"))
        .arg("daemon")
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("running rrdscale daemon");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn cluster_mode_refuses_what_it_cannot_honour() {
    let base = tempfile::tempdir().unwrap();
    let b = base.path().to_str().unwrap();
    let unix = format!("unix:{b}/s.sock");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--cluster", "127.0.0.1:1", "-b", b, "-l", "127.0.0.1:0"], "--node-id"),
        (vec!["--cluster", "127.0.0.1:1", "--node-id", "n1", "-l", "127.0.0.1:0"], "-b DIR"),
        (
            vec!["--cluster", "127.0.0.1:1", "--node-id", "n1", "-b", b, "-j", b, "-l", "127.0.0.1:0"],
            "replaces the journal",
        ),
        (vec!["--cluster", "127.0.0.1:1", "--node-id", "a b", "-b", b], "--node-id may not contain"),
        (
            vec!["--cluster", "127.0.0.1:1", "--node-id", "n1", "-b", b, "--cluster-partitions", "0"],
            "1 to 10000",
        ),
        (
            vec!["--cluster", "127.0.0.1:1", "--node-id", "n1", "-b", b, "--cluster-snapshots", "maybe"],
            "on or off",
        ),
        (
            vec!["--cluster", "127.0.0.1:1", "--node-id", "n1", "-b", b, "--cluster-name", "a.b"],
            "--cluster-name",
        ),
        (vec!["--cluster", "", "--node-id", "n1", "-b", b], "bootstrap servers"),
        (vec!["--cluster", "127.0.0.1:1", "--node-id", "n1", "-b", b, "-l", &unix], "TCP listener"),
    ];
    for (args, want) in cases {
        let (status, stderr) = daemon(&args);
        assert_eq!(status, 1, "{args:?}: status {status}, stderr {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr:?} does not say {want:?}");
    }
}
