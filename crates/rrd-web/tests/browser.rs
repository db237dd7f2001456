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

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
const WAIT_TIMEOUT: Duration = Duration::from_secs(30);
const THUMB: (i64, i64) = (300, 72);

fn chromium_path() -> PathBuf {
    if let Some(p) = std::env::var_os("RRDSCALE_CHROMIUM") {
        return PathBuf::from(p);
    }
    for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!(
        "Chromium is not installed: this test drives the web UI in headless Chromium. \
         Install it with `apt-get install -y chromium` (Debian) or point RRDSCALE_CHROMIUM at a \
         Chrome/Chromium binary."
    );
}

/// A headless Chromium and one page session on it.
struct Browser {
    child: Child,
    to_chrome: File,
    from_chrome: Receiver<Value>,
    events: VecDeque<Value>,
    next_id: u64,
    session: String,
    log: PathBuf,
}

/// Two pipes: (the fd Chromium reads commands from, our writer) and
/// (our reader, the fd Chromium writes answers to), all close-on-exec;
/// fds are moved to 10 and above so dup2 onto 3 and 4 cannot clobber them.
fn pipes() -> [i32; 4] {
    let mut out = [0; 4];
    for pair in 0..2 {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two fds into the array we own.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0, "pipe2 failed");
        for (k, fd) in fds.into_iter().enumerate() {
            // SAFETY: duplicating an fd we own; the original is closed after.
            let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
            assert!(high >= 10, "fcntl(F_DUPFD_CLOEXEC) failed");
            unsafe { libc::close(fd) };
            out[pair * 2 + k] = high;
        }
    }
    out
}

impl Browser {
    fn launch(profile: &Path, log: PathBuf) -> Browser {
        let exe = chromium_path();
        // [cmd_read, cmd_write, ans_read, ans_write]
        let [cmd_read, cmd_write, ans_read, ans_write] = pipes();
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--mute-audio",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&log).expect("create the Chromium log"));
        // SAFETY: only async-signal-safe calls (dup2) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(cmd_read, 3) < 0 || libc::dup2(ans_write, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
        // SAFETY: the child has its copies; ours of its ends must close so
        // that EOF arrives when it exits, and we own the other two.
        let (to_chrome, from) = unsafe {
            libc::close(cmd_read);
            libc::close(ans_write);
            (File::from_raw_fd(cmd_write), File::from_raw_fd(ans_read))
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(from);
            loop {
                let mut buf = Vec::new();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if buf.last() == Some(&0) {
                            buf.pop();
                        }
                        match serde_json::from_slice::<Value>(&buf) {
                            Ok(v) => {
                                if tx.send(v).is_err() {
                                    return;
                                }
                            }
                            Err(e) => eprintln!("unparsable DevTools message: {e}"),
                        }
                    }
                }
            }
        });
        let mut b = Browser {
            child,
            to_chrome,
            from_chrome: rx,
            events: VecDeque::new(),
            next_id: 1,
            session: String::new(),
            log,
        };
        let target = b.call_browser("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().expect("a target id").to_string();
        let attached =
            b.call_browser("Target.attachToTarget", json!({"targetId": target_id, "flatten": true}));
        b.session = attached["sessionId"].as_str().expect("a session id").to_string();
        b.call("Page.enable", json!({}));
        b.call("Runtime.enable", json!({}));
        b.call("Log.enable", json!({}));
        b
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to_chrome
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("writing to Chromium failed ({e}); see {}", self.log.display()));
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_chrome.recv_timeout(left) {
                Ok(v) if v["id"].as_u64() == Some(id) => {
                    if let Some(err) = v.get("error") {
                        panic!("{method} failed: {err}");
                    }
                    return v["result"].clone();
                }
                Ok(v) => {
                    if self.events.len() > 1000 {
                        self.events.pop_front();
                    }
                    self.events.push_back(v);
                }
                Err(RecvTimeoutError::Timeout) => panic!("{method}: no answer from Chromium in 30 s"),
                Err(RecvTimeoutError::Disconnected) => {
                    let mut log = String::new();
                    let _ = File::open(&self.log).and_then(|mut f| f.read_to_string(&mut log));
                    panic!("Chromium exited during {method}; its log:\n{log}");
                }
            }
        }
    }

    fn call_browser(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let s = self.session.clone();
        self.send(method, params, Some(&s))
    }

    /// Evaluates `expr` in the page (promises awaited); the value as JSON.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(ex) = r.get("exceptionDetails") {
            panic!(
                "page script threw: {}\n  in: {expr}",
                ex["exception"]["description"].as_str().unwrap_or(&ex.to_string())
            );
        }
        r["result"]["value"].clone()
    }

    /// Polls `expr` until it is truthy; its value. Errors thrown while the
    /// page is still loading count as "not yet".
    fn wait_for(&mut self, what: &str, expr: &str) -> Value {
        let deadline = Instant::now() + WAIT_TIMEOUT;
        let guarded = format!("(() => {{ try {{ return ({expr}); }} catch (e) {{ return null; }} }})()");
        loop {
            let r = self.call(
                "Runtime.evaluate",
                json!({"expression": guarded, "returnByValue": true, "awaitPromise": true}),
            );
            let v = r["result"]["value"].clone();
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return v;
            }
            if Instant::now() > deadline {
                let state = self.eval(
                    "JSON.stringify({url: location.href, main: document.querySelector('main')?.innerText.slice(0, 800)})",
                );
                panic!("timed out waiting for {what} ({expr}); page: {state}");
            }
            // Ask the page to wait for its next frame rather than sleeping here.
            self.call(
                "Runtime.evaluate",
                json!({"expression": "new Promise(r => setTimeout(r, 50))", "awaitPromise": true}),
            );
        }
    }

    /// Script exceptions, console errors and browser log errors (CSP
    /// violations, failed loads) seen so far.
    fn page_errors(&mut self) -> Vec<String> {
        // A round trip collects the events sent before it.
        self.eval("1");
        self.events
            .iter()
            .filter_map(|e| match e["method"].as_str()? {
                "Runtime.exceptionThrown" => Some(e["params"]["exceptionDetails"].to_string()),
                "Runtime.consoleAPICalled" if e["params"]["type"] == "error" => {
                    Some(e["params"]["args"].to_string())
                }
                "Log.entryAdded" if e["params"]["entry"]["level"] == "error" => {
                    Some(e["params"]["entry"].to_string())
                }
                _ => None,
            })
            .collect()
    }

    fn viewport(&mut self, width: i64, height: i64, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": if mobile { 2 } else { 1 }, "mobile": mobile}),
        );
    }

    fn navigate(&mut self, url: &str) {
        let r = self.call("Page.navigate", json!({"url": url}));
        assert!(r.get("errorText").is_none(), "navigating to {url}: {r}");
        self.wait_for(
            "the page to load",
            "document.readyState === 'complete' && window.rrdNavigate !== undefined",
        );
    }

    fn screenshot(&mut self, path: &Path) {
        let r = self.call("Page.captureScreenshot", json!({"format": "png", "captureBeyondViewport": false}));
        let png = base64_decode(r["data"].as_str().expect("screenshot data"));
        std::fs::write(path, &png).unwrap();
        println!("screenshot: {}", path.display());
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=').collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    out
}

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
