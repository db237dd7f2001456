//! `rrdscale web --tree` stays inside its tree and writes nothing there:
//! `..` (plain and as `%2e%2e`), absolute paths and symbolic links that
//! leave the tree are refused (403) by every route that names a path,
//! while a link that stays inside is served; names holding markup, or not
//! UTF-8, are listed escaped and can still be drawn; and after a run of
//! every kind of request no file in the tree (or outside it) changed:
//! same names, sizes, mtimes and bytes.

mod tree_support;

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::Path;

use serde_json::json;
use tree_support::{rfc3339, rrdtool_tree, Server};

const END: i64 = 1_700_006_400;

/// An entry's mode, size, mtime (seconds, nanoseconds) and bytes.
type Entry = (u32, u64, i64, i64, Vec<u8>);

/// Every entry beneath `dir` (links not followed), by path.
fn snapshot(dir: &Path) -> BTreeMap<Vec<u8>, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let bytes = if m.file_type().is_file() { std::fs::read(&p).unwrap() } else { Vec::new() };
            if m.file_type().is_dir() {
                stack.push(p.clone());
            }
            out.insert(
                p.as_os_str().as_bytes().to_vec(),
                (m.mode(), m.len(), m.mtime(), m.mtime_nsec(), bytes),
            );
        }
    }
    out
}

#[test]
fn paths_stay_in_the_tree_names_are_escaped_and_nothing_is_written() {
    let top = tempfile::tempdir().unwrap();
    let tree = top.path().join("tree");
    let outside = top.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let files = rrdtool_tree(&tree, END, 2);
    std::fs::copy(&files[0], outside.join("secret.rrd")).unwrap();
    std::fs::write(outside.join("secret.txt"), b"do not read").unwrap();
    symlink(&outside, tree.join("escape")).unwrap();
    symlink(outside.join("secret.rrd"), tree.join("h1/leak.rrd")).unwrap();
    symlink("if/a.rrd", tree.join("h1/inlink.rrd")).unwrap();
    std::fs::copy(&files[0], tree.join("h1/<script>alert(1).rrd")).unwrap();
    std::fs::copy(&files[0], tree.join(std::ffi::OsStr::from_bytes(b"h1/caf\xe9.rrd"))).unwrap();
    let before = (snapshot(&tree), snapshot(&outside));

    let arg = format!("t={}", tree.display());
    let server = Server::start(&["--tree", &arg]);
    let range = format!("start={}&end={END}", END - 7200);

    for refused in [
        "/tree/t?dir=..".to_string(),
        "/tree/t?dir=%2e%2e".into(),
        "/tree/t?dir=h1/%2E%2E/..".into(),
        "/tree/t?dir=/etc".into(),
        "/tree/t?dir=%2Fetc".into(),
        "/tree/t?dir=escape".into(),
        format!("/tree/t/png?file=../outside/secret.rrd&{range}"),
        format!("/tree/t/png?file=%2e%2e%2Foutside%2Fsecret.rrd&{range}"),
        format!("/tree/t/png?file={}&{range}", outside.join("secret.rrd").display()),
        format!("/tree/t/png?file=escape/secret.rrd&{range}"),
        format!("/tree/t/png?file=h1/leak.rrd&{range}"),
        format!("/tree/t/view?file=h1/leak.rrd&{range}"),
        format!("/tree/t/export?file=h1/leak.rrd&format=csv&{range}"),
        format!("/api/tree/t/h1/leak.json?{range}"),
        format!("/api/tree/t/escape/secret.json?{range}"),
        format!("/api/tree/t/%2e%2e/outside/secret.json?{range}"),
    ] {
        let r = server.get(&refused);
        assert_eq!(r.status, 403, "{refused}: {} {}", r.status, r.text());
        assert!(!r.text().contains("do not read"));
    }
    for target in ["..:outside:secret:rx", "escape:secret:rx", "h1:leak:rx", "h1:..:..:outside:secret:rx"] {
        let body = json!({"range": {"from": rfc3339(END - 7200), "to": rfc3339(END)}, "targets": [{"target": target}]});
        let r = server.post("/grafana/query", &body);
        assert_eq!((r.status, r.json()), (200, json!([])), "{target}");
    }

    // Inside links and odd names are served; names are escaped.
    let r = server.get(&format!("/tree/t/png?file=h1/inlink.rrd&{range}"));
    assert_eq!((r.status, r.header("content-type")), (200, Some("image/png")));
    let page = server.get("/tree/t?dir=h1").text();
    assert!(!page.contains("<script>alert"), "markup reached the page");
    assert!(page.contains("&lt;script&gt;alert(1).rrd"), "{page}");
    assert!(page.contains("file=h1/%3Cscript%3Ealert%281%29.rrd"));
    assert!(page.contains("file=h1/caf%E9.rrd"), "a name that is not UTF-8 keeps its bytes in URLs");
    for name in ["%3Cscript%3Ealert%281%29.rrd", "caf%E9.rrd"] {
        let r = server.get(&format!("/tree/t/png?file=h1/{name}&thumb=1&{range}"));
        assert_eq!(r.status, 200, "{name}");
    }

    // A run of every kind of request, then nothing changed anywhere.
    for get in [
        "/tree".to_string(),
        "/tree/t".into(),
        "/tree/t?dir=h1/if&filter=a*".into(),
        format!("/tree/t/view?file=h1/if/a.rrd&{range}"),
        format!("/tree/t/png?file=h1/if/a.rrd&{range}&cf=MAX"),
        format!("/tree/t/export?file=h1/if/a.rrd&format=csv&{range}"),
        format!("/tree/t/export?file=h1/if/a.rrd&format=json&{range}"),
        format!("/api/tree/t/h1/if/a.json?{range}"),
    ] {
        assert_eq!(server.get(&get).status, 200, "{get}");
    }
    server.post("/grafana/search", &json!({"target": "a"}));
    server.post("/grafana/annotations", &json!({}));
    let body = json!({"range": {"from": rfc3339(END - 7200), "to": rfc3339(END)}, "targets": [{"target": "h*:if:*:rx"}]});
    assert_eq!(server.post("/grafana/query", &body).status, 200);
    drop(server);
    assert!(before == (snapshot(&tree), snapshot(&outside)), "a file in or outside the tree changed");
}
