//! `--tree` over a WorkDir that the real MRTG wrote (RRD mode, polling
//! Debian's snmpd on a private port, three runs), in headless Chromium:
//! the page lists the target's file with a thumbnail that loads, the MRTG
//! definition draws it (its export's columns are "in" and "out", from
//! `ds0`/`ds1`), its graph takes the title of MRTG's `Title[lo]` (the
//! configuration given as `--mrtg-cfg`), and Grafana's search names its
//! DS as grafana-rrd-server would. A missing mrtg, snmpd or Chromium fails the test; snmpd and
//! Chromium are killed when it ends.

mod browser_support;
mod tree_support;

use std::path::Path;
use std::process::Command;

use browser_support::Browser;
use tree_support::http;

const MRTG: &str = "/usr/bin/mrtg";
const SNMPD: &str = "/usr/sbin/snmpd";

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs MRTG three times against a private snmpd; the WorkDir.
fn mrtg_tree(dir: &Path) -> std::path::PathBuf {
    for (p, pkg) in [(MRTG, "mrtg"), (SNMPD, "snmpd")] {
        assert!(
            Path::new(p).exists(),
            "{p} is missing: this test runs the real MRTG (apt-get install {pkg})"
        );
    }
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    std::fs::write(dir.join("snmpd.conf"), "rocommunity public 127.0.0.1\n").unwrap();
    let snmpd = Killed(rrd_testkit::mrtg::start_snmpd(SNMPD, &dir.join("snmpd.conf"), port));
    let work = dir.join("mrtg");
    std::fs::create_dir_all(&work).unwrap();
    let cfg = dir.join("mrtg.cfg");
    // ifInOctets.1 and ifOutOctets.1 (the loopback), by number: Debian
    // ships no MIBs.
    std::fs::write(
        &cfg,
        format!(
            "WorkDir: {}\nLogFormat: rrdtool\n\
             Target[lo]: 1.3.6.1.2.1.2.2.1.10.1&1.3.6.1.2.1.2.2.1.16.1:public@127.0.0.1:{port}\n\
             MaxBytes[lo]: 1250000000\nTitle[lo]: loopback\n",
            work.display()
        ),
    )
    .unwrap();
    for run in 0..3 {
        if run > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1200));
        }
        rrd_testkit::mrtg::run_once(Command::new(MRTG), dir, &cfg);
    }
    drop(snmpd);
    work
}

#[test]
fn an_mrtg_tree_is_browsed_in_chromium() {
    let top = tempfile::Builder::new().prefix("rrdscale-tree-").tempdir().unwrap();
    let work = mrtg_tree(top.path());
    assert!(work.join("lo.rrd").exists(), "MRTG wrote lo.rrd");

    let served = tree_support::serve(rrd_web::Config {
        trees: vec![rrd_web::tree::TreeSpec { name: "mrtg".into(), dir: work.clone() }],
        mrtg_cfgs: vec![std::fs::read_to_string(top.path().join("mrtg.cfg")).unwrap()],
        ..Default::default()
    });
    let addr = served.addr;

    let profile = tempfile::tempdir().unwrap();
    let log = top.path().join("chromium.log");
    let mut b = Browser::launch(profile.path(), log);
    b.navigate_until(&format!("http://{addr}/tree/mrtg"), "document.readyState === 'complete'");
    b.wait_for("the thumbnail", "[...document.images].every(i => i.complete && i.naturalWidth > 0)");
    let captions = b.eval("[...document.querySelectorAll('figcaption')].map(f => f.textContent)");
    assert_eq!(captions, serde_json::json!(["lo.rrd"]));
    // The graph takes its title from MRTG's configuration.
    b.navigate_until(
        &format!("http://{addr}/tree/mrtg/view?file=lo.rrd"),
        "document.readyState === 'complete'",
    );
    assert_eq!(b.eval("document.getElementById('title').textContent"), "loopback");
    drop(b);

    let (status, body) = http(addr, "GET", "/tree/mrtg/export?file=lo.rrd&format=json&range=hour", "");
    assert_eq!(status, 200);
    let export: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(export["columns"], serde_json::json!(["in", "out"]), "the MRTG definition: {export}");
    let (status, png) = http(addr, "GET", "/tree/mrtg/png?file=lo.rrd&range=hour", "");
    assert_eq!(status, 200);
    png::Decoder::new(std::io::Cursor::new(png)).read_info().expect("a PNG");
    let (_, found) = http(addr, "POST", "/grafana/search", r#"{"target":"lo"}"#);
    let mut found: Vec<String> = serde_json::from_slice(&found).unwrap();
    found.sort();
    assert_eq!(found, ["lo:ds0", "lo:ds1"]);
}
