//! The web UI in a real browser: headless Chromium (the system binary,
//! Debian's `chromium`) driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: fd 3 carries commands in, fd 4 answers
//! out, each message JSON ended by a NUL byte), against the server
//! running in-process on an ephemeral port with a temporary data dir.
//!
//! It opens the list, checks the posted graphs and their thumbnails,
//! opens a graph, switches range and checks that the image changed
//! without a page reload and rendered at the server's size with real
//! pixels, tries the complex-graph builder, and saves laptop (1366x768)
//! and phone (390x844) screenshots under `<target>/test-output/web-ui/`.
//!
//! Never sleeps for a fixed time to let something happen: every wait is a
//! condition polled until a deadline, so a slow machine is only slower.
//! If Chromium is missing the test fails and says how to install it.

mod browser_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use browser_support::{chromium_path, Browser, COMMAND_TIMEOUT};
use serde_json::{json, Value};

const THUMB: (i64, i64) = (300, 72);
/// One HTTP/1.1 request with `Connection: close`; (status, body).
fn http(addr: SocketAddr, method: &str, target: &str, body: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(COMMAND_TIMEOUT)).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").expect("header end");
    let head = String::from_utf8_lossy(&buf[..split]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut rest = buf[split + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        let mut out = Vec::new();
        let mut b = &rest[..];
        loop {
            let end = b.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&b[..end]).unwrap().trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&b[end + 2..end + 2 + n]);
            b = &b[end + 4 + n..];
        }
        rest = out;
    }
    (status, rest)
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    let reader = png::Decoder::new(std::io::Cursor::new(bytes.to_vec())).read_info().expect("a PNG");
    (reader.info().width, reader.info().height)
}

fn output_dir() -> PathBuf {
    // <target>/tmp is CARGO_TARGET_TMPDIR; the screenshots go beside it.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().join("test-output").join("web-ui");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Posts a couple of hours of numbers for a few graphs.
fn seed(addr: SocketAddr) -> Vec<(&'static str, &'static str, &'static str)> {
    let graphs = [
        ("shop", "frontend", "requests"),
        ("shop", "frontend", "errors"),
        ("shop", "db", "connections"),
        ("batch", "jobs", "queued"),
    ];
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    // A day and a bit of history, a daily wave plus noise, so every range
    // from an hour to a week has something to draw.
    let steps = 300;
    let t0 = (now / 300 - steps) * 300;
    for (k, (s, sec, g)) in graphs.iter().enumerate() {
        for i in 0..steps {
            let phase = (i as f64 / 288.0 + k as f64 * 0.15) * std::f64::consts::TAU;
            let v = 100 + (k as i64 + 1) * 30 + (phase.sin() * 60.0) as i64 + (i * 37 + k as i64 * 11) % 25;
            let desc = if i == 0 { format!("&description=The+{g}+of+{s}") } else { String::new() };
            let (st, body) = http(
                addr,
                "POST",
                &format!("/api/{s}/{sec}/{g}"),
                &format!("number={v}&timestamp={}{desc}", t0 + i * 300),
            );
            assert_eq!(st, 200, "posting to {s}/{sec}/{g}: {}", String::from_utf8_lossy(&body));
        }
    }
    graphs.to_vec()
}

#[test]
// One browser session: each step builds on the one before.
#[allow(clippy::too_many_lines)]
fn the_ui_lists_shows_and_switches_graphs_in_chromium() {
    let exe = chromium_path();
    let data = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // As `rrdscale web` serves a loopback address: its own Host names
        // only, and writes only from its own origin (the UI's edits and
        // deletes below prove the UI passes both).
        let config = rrd_web::Config {
            hosts: rrd_web::guard::HostPolicy::for_listen(addr, None),
            ..Default::default()
        };
        let app = rrd_web::App::open_configured(data.path(), rrd_web::Writer::Embedded, config)
            .expect("open the data dir");
        tokio::spawn(rrd_web::serve(listener, app));
        addr
    });
    let graphs = seed(addr);
    let base = format!("http://{addr}");
    let out = output_dir();
    let profile = tempfile::tempdir().unwrap();
    println!("driving {} against {base}", exe.display());
    let mut b = Browser::launch(profile.path(), out.join("chromium.log"));

    // The list shows every posted graph, with thumbnails at exactly the
    // requested plot size (graphonly).
    b.viewport(1366, 768, false);
    b.navigate(&format!("{base}/"));
    b.wait_for("the graph cards", &format!("document.querySelectorAll('.card').length === {}", graphs.len()));
    let names = b.eval("[...document.querySelectorAll('.card .name')].map(e => e.textContent).sort()");
    let mut want: Vec<&str> = graphs.iter().map(|g| g.2).collect();
    want.sort();
    assert_eq!(names, json!(want));
    assert_no_stray_text(&mut b);
    let services = b.eval("[...document.querySelectorAll('section.service > h2')].map(e => e.textContent)");
    assert_eq!(services, json!(["batch", "shop"]));
    let thumbs = b.wait_for(
        "every thumbnail to load",
        "(() => { const i = [...document.querySelectorAll('.card img')]; \
         return i.every(x => x.complete && x.naturalWidth > 0) && i.map(x => [x.naturalWidth, x.naturalHeight]); })()",
    );
    for t in thumbs.as_array().unwrap() {
        assert_eq!(t, &json!([THUMB.0, THUMB.1]), "a thumbnail has the wrong size");
    }

    // The filter box narrows the list as one types.
    b.eval("(() => { const f = document.getElementById('filter'); f.value = 'front'; f.dispatchEvent(new Event('input')); })()");
    let visible = b.wait_for(
        "the filter to apply",
        "(() => { const n = document.querySelectorAll('.card:not([hidden])').length; return n === 2 && n; })()",
    );
    assert_eq!(visible, json!(2));
    b.screenshot(&out.join("laptop-list-filtered.png"));
    b.eval("(() => { const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()");
    b.wait_for("the filter to clear", "document.querySelectorAll('.card:not([hidden])').length === 4");
    b.screenshot(&out.join("laptop-list.png"));

    // Open a graph by clicking its card: client-side navigation, so a
    // marker set on window survives.
    b.eval("window.__noReload = 1; document.querySelector('a[href=\"/view_graph/shop/frontend/requests\"]').click()");
    b.wait_for("the graph page", "location.pathname === '/view_graph/shop/frontend/requests' && !!document.getElementById('graph-img')");
    let first = b.wait_for(
        "the graph image",
        "(() => { const i = document.getElementById('graph-img'); return i.complete && i.naturalWidth > 0 && i.src; })()",
    );
    let first = first.as_str().unwrap().to_string();
    assert!(first.contains("t=d"), "the default range is a day: {first}");
    let h1 = b.eval("document.querySelector('h1').textContent");
    assert_eq!(h1, json!("requests"));
    let desc = b.eval("document.querySelector('.description')?.textContent");
    assert_eq!(desc, json!("The requests of shop"));

    // Switch the range with a button press.
    b.eval("document.querySelector('button[data-t=\"w\"]').click()");
    let after = b.wait_for(
        "the image to change range and load",
        &format!(
            "(() => {{ const i = document.getElementById('graph-img'); \
             return i.src !== {first:?} && i.src.includes('t=w') && i.complete && i.naturalWidth > 0 && \
             {{src: i.src, w: i.naturalWidth, h: i.naturalHeight, aw: i.width, ah: i.height}}; }})()"
        ),
    );
    assert_eq!(b.eval("window.__noReload"), json!(1), "switching range reloaded the page");
    assert_eq!(
        b.eval("document.querySelector('button[data-t=\"w\"]').getAttribute('aria-pressed')"),
        json!("true")
    );
    assert!(b.eval("location.search").as_str().unwrap().contains("t=w"), "the range is kept in the URL");
    // The rendered image is the one the server draws for that URL.
    let src = after["src"].as_str().unwrap();
    let path = &src[base.len()..];
    let (st, png) = http(addr, "GET", path, "");
    assert_eq!(st, 200, "{path}");
    let (w, h) = png_size(&png);
    assert_eq!((after["w"].as_i64(), after["h"].as_i64()), (Some(w as i64), Some(h as i64)));
    assert_eq!(
        (after["aw"].clone(), after["ah"].clone()),
        (json!(w), json!(h)),
        "width/height attributes follow the image"
    );
    let url = query_param(path);
    let (rw, rh): (u32, u32) = (url("width").parse().unwrap(), url("height").parse().unwrap());
    assert!(w > rw && h > rh, "the image holds the {rw}x{rh} plot plus axes, got {w}x{h}");
    // Not a blank image: the drawn pixels are of more than a few colours.
    let colours = b.eval(
        "(() => { const i = document.getElementById('graph-img'); const c = document.createElement('canvas'); \
         c.width = i.naturalWidth; c.height = i.naturalHeight; const x = c.getContext('2d'); x.drawImage(i, 0, 0); \
         const d = x.getImageData(0, 0, c.width, c.height).data; const s = new Set(); \
         for (let k = 0; k < d.length; k += 4) s.add((d[k] << 16) | (d[k + 1] << 8) | d[k + 2]); return s.size; })()",
    );
    assert!(colours.as_i64().unwrap() >= 3, "the graph image looks blank: {colours} colours");
    assert_no_stray_text(&mut b);
    b.screenshot(&out.join("laptop-graph.png"));

    // Live refresh reloads the image with a cache buster; the toggle stops it.
    b.eval("window.rrdRefresh()");
    b.wait_for(
        "the refreshed image",
        "(() => { const i = document.getElementById('graph-img'); \
         return i.src.includes('t=w') && i.src.includes('&_=') && i.complete && i.naturalWidth > 0; })()",
    );
    assert_eq!(b.eval("document.getElementById('live').getAttribute('aria-pressed')"), json!("true"));
    b.eval("document.getElementById('live').click()");
    assert_eq!(b.eval("document.getElementById('live').getAttribute('aria-pressed')"), json!("false"));
    b.eval("document.getElementById('live').click()");

    // Edit the graph: description and colour, saved through the API.
    b.eval("document.querySelector('a[href=\"/edit/shop/frontend/requests\"]').click()");
    b.wait_for(
        "the edit form",
        "!!document.querySelector('input[type=color]') && !!document.getElementById('description')",
    );
    b.eval(
        "(() => { document.getElementById('description').value = 'Edited in the browser'; \
         const c = document.querySelector('input[aria-label=\"Colour as #RRGGBB\"]'); c.value = '#ff8800'; \
         c.dispatchEvent(new Event('input')); document.querySelector('form.edit button[type=submit]').click(); })()",
    );
    b.wait_for(
        "the graph page after saving",
        "location.pathname === '/view_graph/shop/frontend/requests' && \
         document.querySelector('.description')?.textContent === 'Edited in the browser'",
    );
    let (st, body) = http(addr, "GET", "/api/shop/frontend/requests", "");
    let saved: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(st, 200);
    assert_eq!(
        (&saved["description"], &saved["color"]),
        (&json!("Edited in the browser"), &json!("#FF8800"))
    );

    // The complex-graph builder: create one when the server has the endpoint.
    b.eval("document.querySelector('nav a[href=\"/add_complex\"]').click()");
    b.wait_for("the builder", "document.querySelectorAll('.rows .row').length === 2");
    // Its preview is the ad-hoc `/graph/TYPE:ID:GMODE:STACK:...` image.
    let preview = b.wait_for(
        "the builder's preview",
        "(() => { const i = document.querySelector('img.preview'); \
         return !i.hidden && i.complete && i.naturalWidth > 0 && i.src; })()",
    );
    assert!(preview.as_str().unwrap().contains("/graph/AREA%3A"), "{preview}");
    b.eval(
        "(() => { const v = (id, x) => { document.getElementById(id).value = x; }; \
         v('service_name', 'shop'); v('section_name', 'frontend'); v('graph_name', 'all-frontend'); \
         document.getElementById('save-complex').click(); })()",
    );
    let outcome = b.wait_for(
        "the builder to save or explain",
        "location.pathname.startsWith('/view_complex/') ? 'created' : \
         (document.querySelector('.form-status .notice')?.textContent || '')",
    );
    let outcome = outcome.as_str().unwrap().to_string();
    if outcome == "created" {
        b.wait_for(
            "the complex graph image",
            "(() => { const i = document.getElementById('graph-img'); return i && i.complete && i.naturalWidth > 0; })()",
        );
        let (_, all) = http(addr, "GET", "/json/list/all", "");
        let all: Value = serde_json::from_slice(&all).unwrap();
        let saved = all.as_array().unwrap().iter().find(|g| g["graph_name"] == "all-frontend");
        let saved = saved.expect("the complex graph is in /json/list/all");
        assert_eq!((&saved["service_name"], &saved["section_name"]), (&json!("shop"), &json!("frontend")));
        println!("complex graph created and drawn");
        b.screenshot(&out.join("laptop-complex.png"));

        // Delete it again, through the confirmation dialog.
        b.eval("document.querySelector('a[href=\"/edit_complex/shop/frontend/all-frontend\"]').click()");
        b.wait_for("the complex editor", "document.querySelectorAll('.rows .row').length === 2 && !!document.querySelector('button.danger')");
        b.eval("document.querySelector('button.danger').click()");
        b.wait_for("the confirmation dialog", "document.querySelector('dialog.confirm')?.open");
        b.screenshot(&out.join("laptop-confirm-delete.png"));
        b.eval("document.querySelector('dialog.confirm button[value=yes]').click()");
        b.wait_for(
            "the section list after deleting",
            "location.pathname === '/list/shop/frontend' && document.querySelectorAll('.card').length === 2",
        );
        let (_, all) = http(addr, "GET", "/json/list/all", "");
        let all: Value = serde_json::from_slice(&all).unwrap();
        assert!(
            all.as_array().unwrap().iter().all(|g| g["graph_name"] != "all-frontend"),
            "the complex graph was not deleted"
        );
    } else {
        assert!(
            outcome.contains("cannot be saved on this server yet"),
            "saving the complex graph failed: {outcome}"
        );
        println!("POST /json/create/complex is not served yet; the builder said so: {outcome}");
    }
    assert_eq!(b.eval("window.__noReload"), json!(1), "navigation reloaded the page");

    // Phone size: the same pages, one column.
    b.viewport(390, 844, true);
    b.navigate(&format!("{base}/"));
    b.wait_for("the graph cards", "document.querySelectorAll('.card').length === 4");
    let overflow = b.eval("document.documentElement.scrollWidth - document.documentElement.clientWidth");
    assert_eq!(overflow, json!(0), "the list scrolls sideways on a phone");
    b.wait_for(
        "the first thumbnail",
        "(() => { const i = document.querySelector('.card img'); return i.complete && i.naturalWidth > 0; })()",
    );
    b.screenshot(&out.join("phone-list.png"));
    b.navigate(&format!("{base}/view_graph/shop/frontend/requests?t=h"));
    b.wait_for(
        "the graph image",
        "(() => { const i = document.getElementById('graph-img'); return i && i.complete && i.naturalWidth > 0; })()",
    );
    let overflow = b.eval("document.documentElement.scrollWidth - document.documentElement.clientWidth");
    assert_eq!(overflow, json!(0), "the graph page scrolls sideways on a phone");
    b.screenshot(&out.join("phone-graph.png"));
    b.call(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    );
    b.wait_for(
        "the dark palette",
        "getComputedStyle(document.body).backgroundColor !== 'rgb(246, 247, 249)'",
    );
    b.screenshot(&out.join("phone-graph-dark.png"));
    let errors = b.page_errors();
    assert!(errors.is_empty(), "the pages logged errors:\n{}", errors.join("\n"));
    drop(b);
    drop(rt);
}

/// A `null`, `undefined` or `NaN` on screen is a script bug showing.
fn assert_no_stray_text(b: &mut Browser) {
    let text = b.eval("document.querySelector('main').innerText");
    let text = text.as_str().unwrap_or("");
    for bad in ["null", "undefined", "NaN", "[object Object]"] {
        assert!(!text.split_whitespace().any(|w| w == bad), "the page shows {bad:?}:\n{text}");
    }
}

/// Reads one query parameter of a request target.
fn query_param(target: &str) -> impl Fn(&str) -> String + '_ {
    move |key| {
        let q = target.split_once('?').map_or("", |(_, q)| q);
        q.split('&').find_map(|kv| kv.strip_prefix(&format!("{key}="))).unwrap_or("").to_string()
    }
}

/// With every render slot taken, the list's thumbnails are refused (503)
/// and show as broken; once a slot frees, the page's retries load them
/// without a reload.
#[test]
fn thumbnails_refused_by_the_render_cap_load_on_retry() {
    let _ = chromium_path();
    let data = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (addr, app) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = rrd_web::Config {
            hosts: rrd_web::guard::HostPolicy::for_listen(addr, None),
            max_renders: 1,
            render_wait: Duration::from_millis(100),
            ..Default::default()
        };
        let app = rrd_web::App::open_configured(data.path(), rrd_web::Writer::Embedded, config)
            .expect("open the data dir");
        tokio::spawn(rrd_web::serve(listener, app.clone()));
        (addr, app)
    });
    let graphs = seed(addr);
    let held = app.hold_render_slots(1).expect("a free slot");
    let profile = tempfile::tempdir().unwrap();
    let mut b = Browser::launch(profile.path(), output_dir().join("chromium-retry.log"));
    b.viewport(1366, 768, false);
    b.navigate(&format!("http://{addr}/"));
    b.wait_for("the graph cards", &format!("document.querySelectorAll('.card').length === {}", graphs.len()));
    b.wait_for("a refused thumbnail", "document.querySelectorAll('.card img.broken').length > 0");
    drop(held);
    b.wait_for(
        "every thumbnail to load after a retry",
        "(() => { const i = [...document.querySelectorAll('.card img')]; \
         return i.every(x => x.complete && x.naturalWidth > 0 && !x.classList.contains('broken')); })()",
    );
}
