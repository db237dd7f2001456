//! The JSON bodies of GF's JSON API: `/json/create/complex`,
//! `/json/edit/complex/:id` and `/json/edit/graph/:id`, turned into
//! validated store values.
//!
//! An edit body carries the fields to change; a field that is absent
//! keeps its value (GF's clients send the whole object back, and fields
//! that cannot be edited, like `id`, `number`, `mode`, `created_at` or
//! `complex`, are ignored). Numbers may come as JSON numbers or as
//! strings, flags as booleans, 0/1 or "0"/"1", as GF's own forms and
//! clients send them.
//!
//! Invariants: every refusal names its field in GF's `messages` object;
//! nothing here touches the store except through the lookups it is given.
//! Deliberately not here: uniqueness of a renamed path (the route checks
//! it under the store's lock and answers 409).

use serde_json::{json, Map, Value};

use crate::params::{parse_int, parse_natural, valid_color, valid_name};
use crate::store::{Complex, ComplexItem, ComplexSpec, Graph};

type Messages = Map<String, Value>;

/// Parses a request body as a JSON object; `Err` is GF's messages.
pub fn body_object(body: &[u8]) -> Result<Map<String, Value>, Value> {
    let text = if body.iter().all(u8::is_ascii_whitespace) { b"{}".as_slice() } else { body };
    match serde_json::from_slice::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(json!({"body": "the body is not a JSON object"})),
        Err(e) => Err(json!({"body": format!("the body is not valid JSON: {e}")})),
    }
}

fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => parse_int(s),
        _ => None,
    }
}

fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_i64() {
            Some(0) => Some(false),
            Some(1) => Some(true),
            _ => None,
        },
        Value::String(s) => match s.as_str() {
            "0" | "false" => Some(false),
            "1" | "true" => Some(true),
            _ => None,
        },
        _ => None,
    }
}

fn refuse(bad: &mut Messages, key: &str, msg: &str) {
    bad.insert(key.into(), json!(msg));
}

/// Sets `target` from `body[key]` when present and valid.
fn take_name(body: &Map<String, Value>, key: &str, target: &mut String, bad: &mut Messages) {
    match body.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if valid_name(s) => *target = s.clone(),
        Some(_) => refuse(bad, key, &format!("{key} is not a valid name")),
    }
}

fn take_text(body: &Map<String, Value>, key: &str, target: &mut String, max: usize, bad: &mut Messages) {
    match body.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.len() <= max && !s.chars().any(char::is_control) => *target = s.clone(),
        Some(_) => refuse(bad, key, &format!("{key} must be text of at most {max} bytes")),
    }
}

fn take_sort(body: &Map<String, Value>, target: &mut i64, bad: &mut Messages) {
    if let Some(v) = body.get("sort").filter(|v| !v.is_null()) {
        match as_int(v).filter(|s| (0..=19).contains(s)) {
            Some(s) => *target = s,
            None => refuse(bad, "sort", "invalid value"),
        }
    }
}

fn take_choice(
    body: &Map<String, Value>,
    key: &str,
    choices: &[&str],
    target: &mut String,
    bad: &mut Messages,
) {
    match body.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if choices.contains(&s.as_str()) => *target = s.clone(),
        Some(_) => refuse(bad, key, &format!("{key} is one of {}", choices.join(", "))),
    }
}

/// Applies an edit body to `g`; `Err` is GF's messages object.
pub fn edit_graph(g: &Graph, body: &Map<String, Value>) -> Result<Graph, Value> {
    let mut out = g.clone();
    let mut bad = Messages::new();
    take_name(body, "service_name", &mut out.service_name, &mut bad);
    take_name(body, "section_name", &mut out.section_name, &mut bad);
    take_name(body, "graph_name", &mut out.graph_name, &mut bad);
    take_text(body, "description", &mut out.description, 1024, &mut bad);
    take_sort(body, &mut out.sort, &mut bad);
    take_choice(body, "gmode", &["gauge", "subtract", "both"], &mut out.gmode, &mut bad);
    take_choice(body, "type", &["AREA", "LINE1", "LINE2"], &mut out.kind, &mut bad);
    take_choice(body, "stype", &["AREA", "LINE1", "LINE2"], &mut out.stype, &mut bad);
    take_choice(body, "adjust", &["*", "/"], &mut out.adjust, &mut bad);
    match body.get("color") {
        None | Some(Value::Null) => {}
        Some(Value::String(c)) if valid_color(c) => out.color = c.to_ascii_uppercase(),
        Some(_) => refuse(&mut bad, "color", "color supports #000000 format"),
    }
    for (key, target) in [
        ("llimit", &mut out.llimit),
        ("ulimit", &mut out.ulimit),
        ("sllimit", &mut out.sllimit),
        ("sulimit", &mut out.sulimit),
    ] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            match as_int(v) {
                Some(n) => *target = n,
                None => refuse(&mut bad, key, "a INT number is required"),
            }
        }
    }
    if let Some(v) = body.get("adjustval").filter(|v| !v.is_null()) {
        let n = match v {
            Value::String(s) => parse_natural(s),
            other => as_int(other).filter(|n| *n >= 1),
        };
        match n {
            Some(n) => out.adjustval = n.to_string(),
            None => refuse(&mut bad, "adjustval", "a integral number is required"),
        }
    }
    match body.get("unit") {
        None | Some(Value::Null) => {}
        // A unit ends up inside a GPRINT format: no backslashes, no control
        // characters (colons and percent signs are escaped when drawn).
        Some(Value::String(s)) if s.len() <= 64 && !s.chars().any(|c| c.is_control() || c == '\\') => {
            out.unit = s.clone()
        }
        Some(_) => refuse(&mut bad, "unit", "unit must be short text without backslashes"),
    }
    if bad.is_empty() {
        Ok(out)
    } else {
        Err(Value::Object(bad))
    }
}

/// Reads the `data` array; `exists` says whether a graph id is known.
fn complex_items(v: &Value, exists: &dyn Fn(i64) -> bool, bad: &mut Messages) -> Vec<ComplexItem> {
    let Some(list) = v.as_array() else {
        refuse(bad, "data", "data must be a list of sub graphs");
        return Vec::new();
    };
    if list.len() < 2 {
        refuse(bad, "data", "Invalid argument: data (sub graph list (size >= 2)) required");
        return Vec::new();
    }
    if list.len() > crate::MAX_SERIES {
        let max = crate::MAX_SERIES;
        refuse(bad, "data", &format!("a complex holds at most {max} sub graphs"));
        return Vec::new();
    }
    let mut items = Vec::new();
    for (i, d) in list.iter().enumerate() {
        let key = format!("data[{i}]");
        let Some(o) = d.as_object() else {
            refuse(bad, &key, "each sub graph is an object");
            continue;
        };
        let pick = |key: &str, default: &'static str, choices: &[&str]| -> Option<String> {
            match o.get(key) {
                None | Some(Value::Null) => Some(default.to_string()),
                Some(v) => v.as_str().filter(|s| choices.contains(s)).map(str::to_string),
            }
        };
        let graph_id = o.get("graph_id").and_then(as_int);
        let kind = pick("type", "AREA", &["AREA", "LINE1", "LINE2"]);
        let gmode = pick("gmode", "gauge", &["gauge", "subtract"]);
        let stack = o.get("stack").filter(|v| !v.is_null()).map_or(Some(true), as_bool);
        match (graph_id, kind, gmode, stack) {
            (None, ..) => refuse(bad, &key, "graph_id is missing or not an integer"),
            (Some(id), ..) if !exists(id) => refuse(bad, &key, &format!("no graph has id {id}")),
            (_, None, _, _) => refuse(bad, &key, "invalid type"),
            (_, _, None, _) => refuse(bad, &key, "invalid mode"),
            (_, _, _, None) => refuse(bad, &key, "invalid stack flag"),
            (Some(graph_id), Some(kind), Some(gmode), Some(stack)) => {
                items.push(ComplexItem { graph_id, kind, gmode, stack })
            }
        }
    }
    items
}

/// A new complex from a create body (GF's defaults: description "",
/// sumup false, sort 19; per item type AREA, gmode gauge, stack true).
pub fn create_complex(body: &Map<String, Value>, exists: &dyn Fn(i64) -> bool) -> Result<ComplexSpec, Value> {
    let mut bad = Messages::new();
    let mut spec = ComplexSpec {
        service_name: String::new(),
        section_name: String::new(),
        graph_name: String::new(),
        description: String::new(),
        sort: 19,
        sumup: false,
        data: Vec::new(),
    };
    for key in ["service_name", "section_name", "graph_name"] {
        if body.get(key).is_none_or(Value::is_null) {
            refuse(&mut bad, key, &format!("{key} is missing"));
        }
    }
    apply_complex(&mut spec, body, exists, &mut bad);
    if body.get("data").is_none() {
        refuse(&mut bad, "data", "Invalid argument: data (sub graph list (size >= 2)) required");
    }
    if bad.is_empty() {
        Ok(spec)
    } else {
        Err(Value::Object(bad))
    }
}

/// Applies an edit body to complex `c`.
pub fn edit_complex(
    c: &Complex,
    body: &Map<String, Value>,
    exists: &dyn Fn(i64) -> bool,
) -> Result<ComplexSpec, Value> {
    let mut bad = Messages::new();
    let mut spec = ComplexSpec {
        service_name: c.service_name.clone(),
        section_name: c.section_name.clone(),
        graph_name: c.graph_name.clone(),
        description: c.description.clone(),
        sort: c.sort,
        sumup: c.sumup,
        data: c.data.clone(),
    };
    apply_complex(&mut spec, body, exists, &mut bad);
    if bad.is_empty() {
        Ok(spec)
    } else {
        Err(Value::Object(bad))
    }
}

fn apply_complex(
    spec: &mut ComplexSpec,
    body: &Map<String, Value>,
    exists: &dyn Fn(i64) -> bool,
    bad: &mut Messages,
) {
    take_name(body, "service_name", &mut spec.service_name, bad);
    take_name(body, "section_name", &mut spec.section_name, bad);
    take_name(body, "graph_name", &mut spec.graph_name, bad);
    take_text(body, "description", &mut spec.description, 1024, bad);
    take_sort(body, &mut spec.sort, bad);
    if let Some(v) = body.get("sumup").filter(|v| !v.is_null()) {
        match as_bool(v) {
            Some(b) => spec.sumup = b,
            None => refuse(bad, "sumup", "invalid value"),
        }
    }
    if let Some(v) = body.get("data").filter(|v| !v.is_null()) {
        spec.data = complex_items(v, exists, bad);
    }
}

/// Percent-encodes one path segment (GF's `CGI::escape`).
pub fn escape_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> Graph {
        Graph {
            id: 1,
            service_name: "s".into(),
            section_name: "sec".into(),
            graph_name: "g".into(),
            number: 0,
            mode: "gauge".into(),
            description: String::new(),
            sort: 0,
            gmode: "gauge".into(),
            color: "#000000".into(),
            ulimit: 10,
            llimit: 0,
            sulimit: 10,
            sllimit: 0,
            kind: "AREA".into(),
            stype: "AREA".into(),
            adjust: "*".into(),
            adjustval: "1".into(),
            unit: String::new(),
            created_at: String::new(),
            updated_at: String::new(),
            complex: false,
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn graph_edits_change_only_given_fields() {
        let g = edit_graph(
            &graph(),
            &obj(
                json!({"color": "#ff0000", "ulimit": "99", "sort": 5, "adjustval": 8, "id": 77, "number": 3}),
            ),
        )
        .unwrap();
        assert_eq!((g.color.as_str(), g.ulimit, g.sort, g.adjustval.as_str()), ("#FF0000", 99, 5, "8"));
        assert_eq!((g.id, g.number, g.graph_name.as_str()), (1, 0, "g"));
        let e = edit_graph(
            &graph(),
            &obj(json!({"color": "red", "sort": 20, "type": "LINE3", "llimit": 1.5, "graph_name": "../x",
                         "adjust": "+", "adjustval": 0, "unit": "a\\b"})),
        )
        .unwrap_err();
        for k in ["color", "sort", "type", "llimit", "graph_name", "adjust", "adjustval", "unit"] {
            assert!(e[k].is_string(), "{k}: {e}");
        }
    }

    #[test]
    fn complex_bodies_take_gf_defaults() {
        let exists = |id: i64| id < 10;
        let spec = create_complex(
            &obj(json!({"service_name": "a", "section_name": "b", "graph_name": "c",
                         "data": [{"graph_id": 1}, {"graph_id": "2", "type": "LINE2", "gmode": "subtract", "stack": 0}]})),
            &exists,
        )
        .unwrap();
        assert_eq!((spec.sort, spec.sumup, spec.description.as_str()), (19, false, ""));
        assert_eq!(
            spec.data[0],
            ComplexItem { graph_id: 1, kind: "AREA".into(), gmode: "gauge".into(), stack: true }
        );
        assert!(!spec.data[1].stack);
        let e = create_complex(&obj(json!({"service_name": "a", "data": [{"graph_id": 1}]})), &exists)
            .unwrap_err();
        for k in ["section_name", "graph_name", "data"] {
            assert!(e[k].is_string(), "{k}: {e}");
        }
        let e = create_complex(
            &obj(json!({"service_name": "a", "section_name": "b", "graph_name": "c",
                         "data": [{"graph_id": 11}, {"graph_id": 1, "type": "BAR"}]})),
            &exists,
        )
        .unwrap_err();
        assert!(e["data[0]"].is_string() && e["data[1]"].is_string(), "{e}");
        assert!(body_object(b"[1]").is_err() && body_object(b"{").is_err());
        assert!(body_object(b"").unwrap().is_empty());
        assert_eq!(escape_segment("a b/c"), "a%20b%2Fc");
    }
}
