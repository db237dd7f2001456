//! Headless Chromium driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: fd 3 carries commands in, fd 4 answers
//! out, each message JSON ended by a NUL byte), shared by the browser
//! tests. If Chromium is missing the test fails and says how to install
//! it.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(30);

pub fn chromium_path() -> PathBuf {
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
pub struct Browser {
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
    pub fn launch(profile: &Path, log: PathBuf) -> Browser {
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

    pub fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        match self.send_result(method, params, session) {
            Ok(v) => v,
            Err(err) => panic!("{method} failed: {err}"),
        }
    }

    /// [`Browser::send`], with Chromium's error answer returned instead of
    /// a panic.
    pub fn send_result(
        &mut self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, Value> {
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
                        return Err(err.clone());
                    }
                    return Ok(v["result"].clone());
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

    pub fn call_browser(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let s = self.session.clone();
        self.send(method, params, Some(&s))
    }

    /// Evaluates `expr` in the page (promises awaited); the value as JSON.
    pub fn eval(&mut self, expr: &str) -> Value {
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
    pub fn wait_for(&mut self, what: &str, expr: &str) -> Value {
        let deadline = Instant::now() + WAIT_TIMEOUT;
        let guarded = format!("(() => {{ try {{ return ({expr}); }} catch (e) {{ return null; }} }})()");
        loop {
            let session = self.session.clone();
            let asked = self.send_result(
                "Runtime.evaluate",
                json!({"expression": guarded, "returnByValue": true, "awaitPromise": true}),
                Some(&session),
            );
            // A navigation under way destroys the page's context: not yet.
            let r = match asked {
                Ok(r) => r,
                Err(e) if e.to_string().contains("navigated") || e.to_string().contains("context") => {
                    Value::Null
                }
                Err(e) => panic!("Runtime.evaluate failed: {e}"),
            };
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
            // Ask the page to wait a little rather than sleeping here; a
            // navigation cutting the wait short is as good.
            if self
                .send_result(
                    "Runtime.evaluate",
                    json!({"expression": "new Promise(r => setTimeout(r, 50))", "awaitPromise": true}),
                    Some(&session),
                )
                .is_err()
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Script exceptions, console errors and browser log errors (CSP
    /// violations, failed loads) seen so far.
    pub fn page_errors(&mut self) -> Vec<String> {
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

    pub fn viewport(&mut self, width: i64, height: i64, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": if mobile { 2 } else { 1 }, "mobile": mobile}),
        );
    }

    pub fn navigate(&mut self, url: &str) {
        self.navigate_until(url, "document.readyState === 'complete' && window.rrdNavigate !== undefined");
    }

    /// Opens `url` and waits until `ready` (a script expression) is truthy.
    pub fn navigate_until(&mut self, url: &str, ready: &str) {
        let r = self.call("Page.navigate", json!({"url": url}));
        assert!(r.get("errorText").is_none(), "navigating to {url}: {r}");
        self.wait_for("the page to load", ready);
    }

    pub fn screenshot(&mut self, path: &Path) {
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

pub fn base64_decode(s: &str) -> Vec<u8> {
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
