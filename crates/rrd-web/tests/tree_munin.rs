//! `--tree` over a `dbdir` that the real munin-update wrote (Debian's
//! munin 2.0), in headless Chromium. The node munin-update polls is a
//! small munin-node protocol responder in this process (two plugins:
//! `load`, a GAUGE, and `cpu` with DERIVE fields), so the test needs no
//! system munin-node nor its plugins; munin-update itself runs as the
//! `munin` user when the test runs as root (it refuses root). It proves:
//! the group's page lists every file munin-update created with a
//! thumbnail that loads, the Munin definition draws them with the labels,
//! draw type and colour munin-update's `datafile` gives (the load graph's
//! area in its colour), and Grafana's search names them as
//! grafana-rrd-server would. A missing munin or Chromium fails the test.

mod browser_support;
mod tree_support;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;

use browser_support::Browser;
use tree_support::{http, pixels};

const MUNIN_UPDATE: &str = "/usr/share/munin/munin-update";

/// Answers munin-update as a munin-node with two plugins would.
fn fake_node() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = answer(conn);
            });
        }
    });
    port
}

fn answer(conn: TcpStream) -> std::io::Result<()> {
    let mut out = conn.try_clone()?;
    out.write_all(b"# munin node at testhost\n")?;
    for line in BufReader::new(conn).lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words.as_slice() {
            ["cap", ..] => "cap multigraph\n",
            ["nodes"] => "testhost\n.\n",
            ["list", ..] => "load cpu\n",
            ["config", "load"] => {
                "graph_title Load average\ngraph_vlabel load\nload.label load (5 min)\nload.draw AREA\n\
                 load.colour 00aa00\n.\n"
            }
            ["config", "cpu"] => {
                "graph_title CPU\nuser.label user time\nuser.type DERIVE\nuser.min 0\n\
                 system.label system\nsystem.type DERIVE\nsystem.min 0\n.\n"
            }
            ["fetch", "load"] => "load.value 0.42\n.\n",
            ["fetch", "cpu"] => "user.value 1000\nsystem.value 500\n.\n",
            ["quit"] => return Ok(()),
            _ => "# unknown command\n.\n",
        };
        out.write_all(reply.as_bytes())?;
    }
    Ok(())
}

/// Runs munin-update once against the fake node; the dbdir.
fn munin_tree(top: &Path) -> std::path::PathBuf {
    assert!(
        Path::new(MUNIN_UPDATE).exists(),
        "{MUNIN_UPDATE} is missing: this test runs the real munin-update (apt-get install munin)"
    );
    let port = fake_node();
    for d in ["db", "html", "log", "run"] {
        std::fs::create_dir_all(top.join(d)).unwrap();
    }
    let conf = top.join("munin.conf");
    let t = top.display();
    std::fs::write(
        &conf,
        format!(
            "dbdir {t}/db\nhtmldir {t}/html\nlogdir {t}/log\nrundir {t}/run\n\
             [testgroup;testhost]\n    address 127.0.0.1\n    port {port}\n"
        ),
    )
    .unwrap();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        // munin-update refuses to run as root: as the munin user, which
        // must own the directories it writes.
        let st = Command::new("chown").args(["-R", "munin:munin"]).arg(top).status().unwrap();
        assert!(st.success(), "chown to the munin user failed");
        let mut c = Command::new("setpriv");
        c.args(["--reuid", "munin", "--regid", "munin", "--init-groups", MUNIN_UPDATE]);
        c
    } else {
        Command::new(MUNIN_UPDATE)
    };
    let out = cmd.arg("--config_file").arg(&conf).arg("--nofork").output().expect("run munin-update");
    let log = std::fs::read_to_string(top.join("log/munin-update.log")).unwrap_or_default();
    assert!(out.status.success(), "munin-update failed: {}\n{log}", String::from_utf8_lossy(&out.stderr));
    top.join("db")
}

#[test]
fn a_munin_tree_is_browsed_in_chromium() {
    let top = tempfile::Builder::new().prefix("rrdscale-tree-").tempdir().unwrap();
    let db = munin_tree(top.path());
    let want = ["testhost-cpu-system-d.rrd", "testhost-cpu-user-d.rrd", "testhost-load-load-g.rrd"];
    for f in want {
        assert!(db.join("testgroup").join(f).exists(), "munin-update wrote {f}");
    }

    let served = tree_support::serve(rrd_web::Config {
        trees: vec![rrd_web::tree::TreeSpec { name: "munin".into(), dir: db.clone() }],
        ..Default::default()
    });
    let addr = served.addr;

    let profile = tempfile::tempdir().unwrap();
    let mut b = Browser::launch(profile.path(), top.path().join("chromium.log"));
    b.navigate_until(
        &format!("http://{addr}/tree/munin?dir=testgroup"),
        "document.readyState === 'complete'",
    );
    b.wait_for("the thumbnails", "[...document.images].every(i => i.complete && i.naturalWidth > 0)");
    let captions = b.eval("[...document.querySelectorAll('figcaption')].map(f => f.textContent)");
    assert_eq!(captions, serde_json::json!(want));
    drop(b);

    // Labels from munin-update's datafile (not the field in the name).
    for (file, label) in
        [("testhost-load-load-g.rrd", "load (5 min)"), ("testhost-cpu-user-d.rrd", "user time")]
    {
        let (status, body) =
            http(addr, "GET", &format!("/tree/munin/export?file=testgroup/{file}&format=json"), "");
        assert_eq!(status, 200);
        let export: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(export["columns"], serde_json::json!([label]), "the Munin definition: {export}");
    }
    // The load graph is drawn as the datafile says: an AREA in 00aa00
    // (its legend box at least: one update gives no data point yet).
    let (status, png) =
        http(addr, "GET", "/tree/munin/png?file=testgroup/testhost-load-load-g.rrd&range=hour", "");
    assert_eq!(status, 200);
    let (px, step) = pixels(png);
    let green = px.chunks(step).filter(|p| p[0] == 0 && p[1] == 0xaa && p[2] == 0).count();
    assert!(green >= 30, "the datafile's colour is drawn ({green} pixels)");
    let (_, found) = http(addr, "POST", "/grafana/search", r#"{"target":"load"}"#);
    let found: Vec<String> = serde_json::from_slice(&found).unwrap();
    assert_eq!(found, ["testgroup:testhost-load-load-g:42"]);
}
