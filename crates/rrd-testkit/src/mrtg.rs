//! Running MRTG once, and the SNMP agent it polls, as the tests that drive the real MRTG through our
//! library (`librrd`'s `mrtg_direct`) or our daemon (`rrdscale`'s
//! `daemon_real_clients`) do: one copy of its command line and its checks.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Runs `cmd` (the `mrtg` program, its environment set by the caller) on
/// `cfg` with `LANG=C` and its conf cache, lock and log files in `state`;
/// asserts that it succeeded and logged no error.
pub fn run_once(mut cmd: Command, state: &Path, cfg: &Path) {
    cmd.env("LANG", "C")
        .arg("--confcache-file")
        .arg(state.join("mrtg.ok"))
        .arg("--lock-file")
        .arg(state.join("mrtg.lock"))
        .arg("--logging")
        .arg(state.join("mrtg.log"))
        .arg(cfg);
    let out = cmd.output().expect("running mrtg");
    let log = std::fs::read_to_string(state.join("mrtg.log")).unwrap_or_default();
    assert!(out.status.success(), "mrtg failed: {}\n{log}", String::from_utf8_lossy(&out.stderr));
    assert!(!log.contains("ERROR"), "mrtg reported an error:\n{log}");
}

/// Starts `snmpd` (the program at `program`) in the foreground on
/// `udp:127.0.0.1:PORT` with the configuration `conf` only, no MIBs and no
/// output, and gives it time to listen: the agent MRTG polls.
pub fn start_snmpd(program: &str, conf: &Path, port: u16) -> Child {
    let mut cmd = Command::new(program);
    cmd.args(["-f", "-Lo", "-C", "-c"]).arg(conf).arg(format!("udp:127.0.0.1:{port}")).env("MIBS", "");
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let child = cmd.spawn().expect("starting snmpd");
    std::thread::sleep(Duration::from_millis(800));
    child
}
