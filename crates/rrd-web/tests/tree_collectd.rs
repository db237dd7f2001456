//! `--tree` over a tree that collectd itself wrote, in headless Chromium.
//!
//! Debian's collectd (`/usr/sbin/collectd`, package collectd-core) runs
//! for a few seconds with a private configuration (plugins cpu, load,
//! memory, interface and df writing through its rrdtool plugin every
//! second into a temporary DataDir), is stopped, and the server (in this
//! process, on an ephemeral port) browses the result. It proves: every
//! directory page lists every file collectd wrote, with a thumbnail that
//! loads (and a CPU's per-state files stacked in one more); a graph renders (the PNG decodes and holds the definition's
//! line colour); the filter box narrows the list (substring and glob);
//! drag-to-zoom with real mouse events selects the range under the
//! pointer (from the plot-area geometry the server reports), back
//! returns, and a favourite is kept in the browser across pages.
//! Screenshots go to `<workspace>/test-output/tree/`.
//!
//! A missing collectd or Chromium fails the test. Every child process is
//! killed when the test ends, pass or fail.

mod browser_support;
mod tree_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browser_support::Browser;
use serde_json::{json, Value};
use tree_support::{http, pixels};

const COLLECTD: &str = "/usr/sbin/collectd";

/// A child killed (SIGTERM, then waited for) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        // SIGTERM lets collectd's rrdtool plugin write what it holds.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rrd_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rrd_files(&p));
        } else if p.extension().is_some_and(|x| x == "rrd") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Runs collectd until every plugin has written a few values.
fn collectd_tree(top: &Path) -> PathBuf {
    assert!(
        Path::new(COLLECTD).exists(),
        "{COLLECTD} is missing: this test browses a tree collectd writes (apt-get install collectd-core)"
    );
    let data = top.join("data");
    let conf = top.join("collectd.conf");
    std::fs::write(
        &conf,
        format!(
            "Hostname \"testhost\"\nFQDNLookup false\nInterval 1\nBaseDir \"{top}\"\nPIDFile \"{top}/collectd.pid\"\n\
             PluginDir \"/usr/lib/collectd\"\nTypesDB \"/usr/share/collectd/types.db\"\n\
             LoadPlugin cpu\nLoadPlugin load\nLoadPlugin memory\nLoadPlugin interface\nLoadPlugin df\nLoadPlugin rrdtool\n\
             <Plugin rrdtool>\n  DataDir \"{data}\"\n  CacheTimeout 0\n  CacheFlush 0\n</Plugin>\n",
            top = top.display(),
            data = data.display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(top.join("collectd.log")).unwrap();
    let child = Command::new(COLLECTD)
        .args(["-f", "-C"])
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start collectd");
    let collectd = Killed(child);
    let host = data.join("testhost");
    let deadline = Instant::now() + Duration::from_secs(30);
    let plugins = ["cpu-0", "load", "memory", "interface-lo", "df-"];
    loop {
        let dirs: Vec<String> = std::fs::read_dir(&host)
            .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        if plugins.iter().all(|p| dirs.iter().any(|d| d.starts_with(p))) {
            break;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(top.join("collectd.log")).unwrap_or_default();
            panic!("collectd wrote no full tree in 30 s (dirs: {dirs:?}); its log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // A few more updates, so lines have two points or more.
    std::thread::sleep(Duration::from_secs(4));
    drop(collectd);
    data
}

fn output_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap();
    let dir = workspace.join("test-output/tree");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The figure captions (file names) a directory page shows, once every
/// thumbnail has loaded with real pixels.
fn listed(b: &mut Browser, url: &str) -> Vec<String> {
    b.navigate_until(url, "document.readyState === 'complete'");
    b.wait_for(
        "every thumbnail to load",
        "[...document.images].every(i => i.complete && i.naturalWidth > 0)",
    );
    let v = b.eval("[...document.querySelectorAll('figure:not(.group) figcaption')].map(f => f.textContent)");
    serde_json::from_value(v).unwrap()
}

#[test]
fn a_collectd_tree_is_browsed_filtered_and_zoomed_in_chromium() {
    // collectd refuses to create directories under a name starting with a
    // dot (tempfile's default prefix).
    let top = tempfile::Builder::new().prefix("rrdscale-tree-").tempdir().unwrap();
    let data = collectd_tree(top.path());
    let files = rrd_files(&data);
    assert!(files.len() >= 10, "collectd wrote {} files", files.len());

    let served = tree_support::serve(rrd_web::Config {
        trees: vec![rrd_web::tree::TreeSpec { name: "collectd".into(), dir: data.clone() }],
        ..Default::default()
    });
    let addr = served.addr;
    let base = format!("http://{addr}");
    let out = output_dir();
    let profile = tempfile::tempdir().unwrap();
    let mut b = Browser::launch(profile.path(), out.join("chromium.log"));
    b.viewport(1366, 900, false);

    // Every directory lists every file collectd wrote there.
    let mut dirs: Vec<PathBuf> = files.iter().map(|f| f.parent().unwrap().to_path_buf()).collect();
    dirs.dedup();
    for dir in &dirs {
        let rel = dir.strip_prefix(&data).unwrap().to_str().unwrap();
        let mut want: Vec<String> = files
            .iter()
            .filter(|f| f.parent() == Some(dir))
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        want.sort();
        let mut got = listed(&mut b, &format!("{base}/tree/collectd?dir={rel}&range=hour"));
        got.sort();
        assert_eq!(got, want, "the page of {rel}");
    }
    // The last seconds, where collectd's values are, for the pictures.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let recent = format!("start={}&end={}", now - 40, now + 5);
    listed(&mut b, &format!("{base}/tree/collectd?dir=testhost/cpu-0&{recent}"));
    // The per-state files of a CPU, stacked in one picture, come first.
    let groups = b.eval("[...document.querySelectorAll('figure.group')].map(f => [f.textContent, f.querySelector('img').naturalWidth])");
    assert_eq!(groups[0][0], "collectd cpu, every state stacked", "{groups}");
    assert!(groups[0][1].as_i64().unwrap() > 0);
    b.screenshot(&out.join("directory.png"));
    let host = b.eval("document.body.innerText");
    assert!(host.as_str().unwrap().contains("Favourites"));

    // A graph renders: the load definition's 1-minute line is drawn.
    let (status, png) = http(addr, "GET", "/tree/collectd/png?file=testhost/load/load.rrd&range=hour", "");
    assert_eq!(status, 200);
    let (px, step) = pixels(png);
    let green = px.chunks(step).filter(|p| p[0] == 0 && p[1] == 0xcc && p[2] == 0).count();
    assert!(green > 20, "the 1-minute load line is drawn ({green} pixels)");

    // The filter box: typed and submitted, as a user would; then a glob.
    b.navigate_until(
        &format!("{base}/tree/collectd?dir=testhost/cpu-0&range=hour"),
        "document.readyState === 'complete'",
    );
    b.eval(
        "document.getElementById('filter').value = 'user'; document.querySelector('form.filter').submit(); 1",
    );
    b.wait_for(
        "the filtered page",
        "location.search.includes('filter=user') && document.readyState === 'complete'",
    );
    let got: Vec<String> = serde_json::from_value(
        b.eval("[...document.querySelectorAll('figcaption')].map(f => f.textContent)"),
    )
    .unwrap();
    assert_eq!(got, ["cpu-user.rrd"]);
    let got = listed(&mut b, &format!("{base}/tree/collectd?dir=testhost/cpu-0&filter=cpu-s*&range=hour"));
    assert_eq!(got, ["cpu-softirq.rrd", "cpu-steal.rrd", "cpu-system.rrd"]);

    drag_to_zoom(&mut b, &base, &recent, &out);
}

/// Drags across the middle half of the plot area with real mouse events;
/// the new URL's range is the one under the pointer (to a pixel); back
/// returns to the first view.
fn drag_to_zoom(b: &mut Browser, base: &str, recent: &str, out: &Path) {
    let url = format!("{base}/tree/collectd/view?file=testhost/load/load.rrd&{recent}");
    b.navigate_until(&url, "document.getElementById('graph')?.dataset.geometry");
    let g: Value =
        serde_json::from_str(b.eval("document.getElementById('graph').dataset.geometry").as_str().unwrap())
            .unwrap();
    // The picture's place once the page's layout has settled (fonts and
    // the favourites list can move it after the geometry is known).
    let place = "document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => \
                 requestAnimationFrame(() => { const i = document.getElementById('graph'); \
                 const b = i.getBoundingClientRect(); r([b.left, b.top, i.clientWidth / i.naturalWidth]); }))))";
    let mut rect = b.eval(place);
    for _ in 0..20 {
        let again = b.eval(place);
        if again == rect {
            break;
        }
        rect = again;
    }
    let (left, top, scale) =
        (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap(), rect[2].as_f64().unwrap());
    let (gl, gw) = (g["left"].as_f64().unwrap(), g["width"].as_f64().unwrap());
    let (gs, ge) = (g["start"].as_i64().unwrap(), g["end"].as_i64().unwrap());
    let span = ge - gs;
    assert_eq!(span, 45, "the geometry is the range asked for: {g}");
    let y = top + (g["top"].as_f64().unwrap() + g["height"].as_f64().unwrap() / 2.0) * scale;
    let x = |f: f64| left + (gl + f * gw) * scale;
    b.screenshot(&out.join("graph.png"));
    // The page before the drag already has start= in its URL: the zoomed
    // one is another.
    let before = b.eval("location.href");
    for (kind, at) in
        [("mousePressed", 0.25), ("mouseMoved", 0.5), ("mouseMoved", 0.75), ("mouseReleased", 0.75)]
    {
        b.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x(at), "y": y, "button": "left", "buttons": 1, "clickCount": 1}),
        );
    }
    let zoomed = b.wait_for(
        "the zoomed page",
        &format!("location.href !== {before} && document.readyState === 'complete' && location.href"),
    );
    let zoomed = zoomed.as_str().unwrap().to_string();
    let param = |k: &str| -> i64 {
        zoomed.split(['?', '&']).find_map(|p| p.strip_prefix(&format!("{k}="))).unwrap().parse().unwrap()
    };
    let pixel_secs = (span as f64 / gw).ceil() as i64 + 1;
    let (want_s, want_e) = (gs + span / 4, gs + span * 3 / 4);
    assert!(
        (param("start") - want_s).abs() <= pixel_secs,
        "start {} vs {want_s} (end {} vs {want_e}; geometry {g}; place {rect}; {zoomed})",
        param("start"),
        param("end")
    );
    assert!((param("end") - want_e).abs() <= pixel_secs, "end {} vs {want_e}", param("end"));
    assert!(param("end") > param("start"), "{zoomed}");
    b.wait_for("the zoomed graph", "document.getElementById('graph')?.dataset.geometry");
    b.screenshot(&out.join("zoomed.png"));
    b.eval("document.getElementById('back').click(); 1");
    b.wait_for("back to the first range", &format!("location.href === {:?}", url));

    // A favourite is kept in the browser and listed on every page.
    b.eval("document.getElementById('fav').click(); 1");
    let title = b.eval("document.title");
    let listed = b.wait_for("the favourite", "document.querySelector('#fav-list a')?.textContent");
    assert_eq!(listed, title);
    b.navigate_until(&format!("{base}/tree/collectd"), "document.readyState === 'complete'");
    let kept = b.wait_for(
        "the favourite on another page",
        "document.querySelector('#fav-list a')?.getAttribute('href')",
    );
    assert!(kept.as_str().unwrap().starts_with("/tree/collectd/view?file=testhost/load/load.rrd"), "{kept}");
}
