//! Fuzzes the web API's untrusted request bodies (rrd-web), as its routes
//! read them, without a store or files. The input's first line picks the
//! route; the rest is what the client sent:
//!
//! - `post <service>/<section>/<graph>?<query>` then a form body: GF's
//!   number API (`params`, `check_names`, `validate_post`);
//! - `graph`, `create`, `complex` then a JSON body: `/json/edit/graph/:id`,
//!   `/json/create/complex`, `/json/edit/complex/:id` (`body_object`,
//!   `edit_graph`, `create_complex`, `edit_complex`; graph ids that are
//!   even exist);
//! - anything else: the text goes to every parameter parser (`parse_int`,
//!   `parse_natural`, `parse_datetime`, `parse_time`, `parse_id`, the
//!   colour and name rules).
//!
//! Must hold: no panic; a refusal is a non-empty `messages` object; what
//! is accepted keeps the rules the files and pages rely on (names are
//! valid names, texts are short and free of control characters, a mode
//! or type is one of GF's, a colour is `#RRGGBB`, a POST's time is after
//! 1980 and at most five minutes past the clock, a complex has at least
//! two series, all of existing graphs).

use serde_json::Value;

use rrd_web::edit::{body_object, create_complex, edit_complex, edit_graph};
use rrd_web::params::{
    check_names, params, parse_datetime, parse_int, parse_natural, parse_time, valid_bare_color, valid_color,
    valid_name,
};
use rrd_web::routes::api::{validate_post, MAX_CLOCK_SKEW_SECS};
use rrd_web::routes::parse_id;
use rrd_web::store::{Complex, ComplexItem, ComplexSpec, Graph};

/// The server's clock in every run (2026-01-01), so runs repeat.
const NOW: i64 = 1_767_225_600;

fn refusal(m: &Value) {
    assert!(m.as_object().is_some_and(|o| !o.is_empty()), "a refusal without messages: {m}");
}

fn short_text(s: &str, max: usize) -> bool {
    s.len() <= max && !s.chars().any(char::is_control)
}

fn graph() -> Graph {
    Graph {
        id: 2,
        service_name: "svc".into(),
        section_name: "sec".into(),
        graph_name: "g".into(),
        number: 0,
        mode: "gauge".into(),
        description: String::new(),
        sort: 0,
        gmode: "gauge".into(),
        color: "#3366CC".into(),
        ulimit: 1_000_000_000_000_000,
        llimit: 0,
        sulimit: 100_000,
        sllimit: 0,
        kind: "AREA".into(),
        stype: "AREA".into(),
        adjust: "*".into(),
        adjustval: "1".into(),
        unit: String::new(),
        created_at: "2026/01/01 00:00:00".into(),
        updated_at: "2026/01/01 00:00:00".into(),
        complex: false,
    }
}

fn complex() -> Complex {
    let item = |graph_id| ComplexItem { graph_id, kind: "AREA".into(), gmode: "gauge".into(), stack: true };
    Complex {
        id: 1,
        service_name: "svc".into(),
        section_name: "sec".into(),
        graph_name: "c".into(),
        description: String::new(),
        sort: 19,
        sumup: false,
        data: vec![item(2), item(4)],
        number: 0,
        created_at: "2026/01/01 00:00:00".into(),
        updated_at: "2026/01/01 00:00:00".into(),
        complex: true,
    }
}

fn exists(id: i64) -> bool {
    id >= 0 && id % 2 == 0
}

fn check_spec(s: &ComplexSpec) {
    for n in [&s.service_name, &s.section_name, &s.graph_name] {
        assert!(valid_name(n), "an invalid name accepted: {n:?}");
    }
    assert!(short_text(&s.description, 1024));
    assert!((0..=19).contains(&s.sort));
    assert!(s.data.len() >= 2, "a complex of {} series", s.data.len());
    for d in &s.data {
        assert!(exists(d.graph_id), "a series of the missing graph {}", d.graph_id);
        assert!(["AREA", "LINE1", "LINE2"].contains(&d.kind.as_str()));
        assert!(["gauge", "subtract"].contains(&d.gmode.as_str()));
    }
}

fn post(head: &str, body: &[u8]) {
    let (path, query) = head.split_once('?').map_or((head, None), |(p, q)| (p, Some(q)));
    let mut names = path.splitn(3, '/');
    let (service, section, graph) =
        (names.next().unwrap_or(""), names.next().unwrap_or(""), names.next().unwrap_or(""));
    let p = params(query, body);
    match check_names(service, section, graph).and_then(|()| validate_post(&p, NOW)) {
        Err(m) => refusal(&m),
        Ok(r) => {
            assert!(valid_name(service) && valid_name(section) && valid_name(graph));
            assert!(["gauge", "count", "modified", "derive"].contains(&r.mode.as_str()), "mode {:?}", r.mode);
            assert!(r.color.as_deref().is_none_or(valid_color), "colour {:?}", r.color);
            assert!(r.description.as_deref().is_none_or(|d| short_text(d, 1024)));
            if let Some(t) = r.time_secs {
                assert!(t > 315_360_010 && t <= NOW + MAX_CLOCK_SKEW_SECS, "time {t}");
            }
            assert_eq!(p.get("number").and_then(|n| parse_int(n)), Some(r.number));
        }
    }
}

fn json(route: &str, body: &[u8]) {
    let body = match body_object(body) {
        Ok(b) => b,
        Err(m) => return refusal(&m),
    };
    match route {
        "graph" => match edit_graph(&graph(), &body) {
            Err(m) => refusal(&m),
            Ok(g) => {
                for n in [&g.service_name, &g.section_name, &g.graph_name] {
                    assert!(valid_name(n), "an invalid name accepted: {n:?}");
                }
                assert!(short_text(&g.description, 1024));
                assert!((0..=19).contains(&g.sort));
                assert!(["gauge", "subtract", "both"].contains(&g.gmode.as_str()));
                assert!(["AREA", "LINE1", "LINE2"].contains(&g.kind.as_str()));
                assert!(["AREA", "LINE1", "LINE2"].contains(&g.stype.as_str()));
                assert!(["*", "/"].contains(&g.adjust.as_str()));
                assert!(valid_color(&g.color), "colour {:?}", g.color);
                assert!(parse_natural(&g.adjustval).is_some(), "adjustval {:?}", g.adjustval);
                assert!(g.unit.len() <= 64 && !g.unit.chars().any(|c| c.is_control() || c == '\\'));
                assert_eq!((g.id, g.number, &g.mode), (2, 0, &"gauge".to_string()), "a fixed field changed");
            }
        },
        "create" => match create_complex(&body, &exists) {
            Err(m) => refusal(&m),
            Ok(s) => check_spec(&s),
        },
        _ => match edit_complex(&complex(), &body, &exists) {
            Err(m) => refusal(&m),
            Ok(s) => check_spec(&s),
        },
    }
}

fn parsers(text: &str) {
    if let Some(n) = parse_natural(text) {
        assert!(n >= 1 && parse_int(text) == Some(n));
    }
    if let Some(t) = parse_datetime(text) {
        // Years 0..=9999: within what a 64-bit second count holds.
        assert!((-62_167_219_200..=253_402_300_800).contains(&t), "{text:?} gave {t}");
    }
    let _ = parse_time(text);
    if let Some(id) = parse_id(text) {
        assert!(id >= 0);
    }
    if valid_color(text) {
        assert_eq!(text.len(), 7);
    }
    if valid_bare_color(text) {
        assert!(!text.starts_with('#'));
    }
    if valid_name(text) {
        assert!(!text.contains('/') && !text.contains("..") && text != ".");
    }
}

/// The target: one request.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        // Bodies are bytes: the JSON and form readers take them as they are.
        let (head, body) = data.split_at(data.iter().position(|&b| b == b'\n').unwrap_or(data.len()));
        let body = body.get(1..).unwrap_or(&[]);
        match head {
            b"graph" | b"create" | b"complex" => json(std::str::from_utf8(head).unwrap_or(""), body),
            _ if head.starts_with(b"post ") => post(&String::from_utf8_lossy(&head[5..]), body),
            _ => {}
        }
        return;
    };
    let (head, body) = text.split_once('\n').unwrap_or((text, ""));
    match head {
        "graph" | "create" | "complex" => json(head, body.as_bytes()),
        _ if head.starts_with("post ") => post(&head[5..], body.as_bytes()),
        _ => parsers(text),
    }
}
