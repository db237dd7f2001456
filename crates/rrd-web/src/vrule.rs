//! GrowthForecast's vertical rules: marks in time ("deployed v2.1",
//! "maintenance") posted to `/vrule/api[/service[/section[/graph]]]` and
//! drawn as `VRULE:time#color:description[:dashes=...]` on every graph
//! under that path whose drawn span holds the time (a rule posted to
//! `/vrule/api/web` shows on every graph of service `web`; one posted to
//! `/vrule/api` on all of them).
//!
//! As in GF: a POST takes `time` (epoch seconds or a date; default now),
//! `color` (`#RRGGBB` or `#RRGGBBAA`, default `#FF0000`), `description`
//! and `dashes`, and answers `{"error":0,"data":{id, graph_path, time,
//! color, description, dashes}}`; `GET /vrule/summary[/...]` lists the
//! rules a graph at that path would draw (`t`, default `all`, and
//! `from`/`to` as for drawing). A complex or an ad-hoc list draws the
//! rules of its first graph's path, as GF does. Only the first rule of a
//! colour and description carries the legend text; `vrule_legend=0`
//! drops all of it.
//!
//! Invariants: the stored text reaches the graph only escaped (`\:`), so
//! it cannot add element fields; `dashes` is a checked list of positive
//! numbers. Deliberately bounded, where GF is not: at most
//! [`MAX_VRULES`] stored and [`MAX_DRAWN`] drawn per picture (the latest).

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use crate::params::{parse_datetime, parse_natural};
use crate::store::{Graph, Vrule};

/// How many vrules the server keeps (each POST adds one).
pub const MAX_VRULES: u64 = 100_000;

/// How many a picture draws at most (the latest in its span).
pub const MAX_DRAWN: usize = 500;

/// `/` joined with the parts given.
pub fn graph_path(parts: &[&str]) -> String {
    format!("/{}", parts.join("/"))
}

/// The paths whose rules a graph draws: `/`, `/s`, `/s/sec`, `/s/sec/g`.
pub fn applicable_paths(g: &Graph) -> Vec<String> {
    let parts = [g.service_name.as_str(), g.section_name.as_str(), g.graph_name.as_str()];
    (0..=3).map(|n| graph_path(&parts[..n])).collect()
}

fn valid_dashes(d: &str) -> bool {
    let parts: Vec<&str> = d.split(',').collect();
    parts.len() <= 8
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && p.parse::<f64>().is_ok_and(|v| v > 0.0 && v <= 1000.0)
        })
}

/// A vrule from a POST's parameters (not yet stored: `id` 0); `Err` is
/// GF's `messages` object.
pub fn from_params(p: &HashMap<String, String>, path: String, now: i64) -> Result<Vrule, Value> {
    let mut bad = serde_json::Map::new();
    let time = match p.get("time").map(String::as_str).filter(|t| !t.is_empty()) {
        None => now,
        Some(t)
            if t.starts_with(|c: char| ('1'..='9').contains(&c)) && t.bytes().all(|b| b.is_ascii_digit()) =>
        {
            parse_natural(t).filter(|v| *v <= u32::MAX as i64).unwrap_or_else(|| {
                bad.insert("time".into(), json!("epoch time or date string is required for \"time\""));
                0
            })
        }
        Some(t) => parse_datetime(t).unwrap_or_else(|| {
            bad.insert("time".into(), json!("epoch time or date string is required for \"time\""));
            0
        }),
    };
    let color = match p.get("color").map(String::as_str).filter(|c| !c.is_empty()) {
        None => "#FF0000".to_string(),
        Some(c)
            if (c.len() == 7 || c.len() == 9)
                && c.starts_with('#')
                && c[1..].bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            c.to_string()
        }
        Some(_) => {
            bad.insert("color".into(), json!("invalid color format"));
            String::new()
        }
    };
    let description = p.get("description").cloned().unwrap_or_default();
    if description.len() > 1024 || description.chars().any(char::is_control) {
        bad.insert("description".into(), json!("description must be text of at most 1024 bytes"));
    }
    let dashes = p.get("dashes").cloned().unwrap_or_default();
    if !dashes.is_empty() && !valid_dashes(&dashes) {
        bad.insert("dashes".into(), json!("dashes is a list of up to 8 positive numbers, e.g. 5,3"));
    }
    if !bad.is_empty() {
        return Err(Value::Object(bad));
    }
    Ok(Vrule { id: 0, graph_path: path, time, color, description, dashes })
}

/// The `VRULE` elements for `rules` (already those in the drawn span).
pub fn elements(rules: &[Vrule], legend: bool) -> Vec<String> {
    let mut seen = HashSet::new();
    rules
        .iter()
        .map(|v| {
            let first = !v.description.is_empty() && seen.insert((v.color.as_str(), v.description.as_str()));
            let text = if legend && first { crate::field::field(&v.description) } else { String::new() };
            let mut e = format!("VRULE:{}{}", v.time, v.color);
            if !text.is_empty() || !v.dashes.is_empty() {
                e.push(':');
                e.push_str(&text);
            }
            if !v.dashes.is_empty() {
                e.push_str(":dashes=");
                e.push_str(&v.dashes);
            }
            e
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn posts_take_gfs_defaults_and_refuse_bad_fields() {
        let v = from_params(&p(&[]), "/a".into(), 1_700_000_000).unwrap();
        assert_eq!((v.time, v.color.as_str(), v.dashes.as_str()), (1_700_000_000, "#FF0000", ""));
        let v = from_params(&p(&[("time", "2023-11-14 22:13:20"), ("color", "#00ff0080")]), "/".into(), 0)
            .unwrap();
        assert_eq!((v.time, v.color.as_str()), (1_700_000_000, "#00ff0080"));
        let e = from_params(
            &p(&[("time", "soon"), ("color", "red"), ("dashes", "5,x"), ("description", "a\nb")]),
            "/".into(),
            0,
        )
        .unwrap_err();
        for k in ["time", "color", "dashes", "description"] {
            assert!(e[k].is_string(), "{k}: {e}");
        }
    }

    #[test]
    fn elements_escape_and_label_each_description_once() {
        let rule = |time, desc: &str, dashes: &str| Vrule {
            id: 1,
            graph_path: "/".into(),
            time,
            color: "#FF0000".into(),
            description: desc.into(),
            dashes: dashes.into(),
        };
        let rules = [rule(10, "deploy: v2", ""), rule(20, "deploy: v2", "5,3"), rule(30, "", "")];
        assert_eq!(
            elements(&rules, true),
            ["VRULE:10#FF0000:deploy\\: v2", "VRULE:20#FF0000::dashes=5,3", "VRULE:30#FF0000"]
        );
        assert_eq!(elements(&rules[..1], false), ["VRULE:10#FF0000"]);
    }
}
