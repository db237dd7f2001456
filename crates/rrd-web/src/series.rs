//! The data definitions behind every picture and export of one graph or
//! a complex: GrowthForecast's `RRD::graph` and `RRD::export` element
//! lists, rebuilt here from the metadata, then handed to rrd-graph (PNG,
//! summary) or to `rrd_engine::xport` (xport, JSON series).
//!
//! For member `i` reading DS `g` (`num`, or `sub` under gmode `subtract`):
//! `DEF:gIt=<file>:g:<cf>`, `CDEF:gI=gIt,<llimit>,<ulimit>,LIMIT,
//! <adjustval>,<adjust>` (limits and type come from the `s`-prefixed
//! columns under `subtract`), then AREA/LINE1/LINE2 (stacked on the
//! previous one when asked, never the first), four GPRINTs and four
//! VDEF+PRINT pairs (LAST, AVERAGE, MAXIMUM, MINIMUM; the summary reads
//! the PRINTs). `sumup` adds the `total` CDEF as GF does.
//!
//! Invariants: files are named by graph id only; names and units reach
//! element text escaped (`\:` for colons, `%%` in formats), so a name
//! can neither add fields nor a printf directive (rrd-graph's whitelist
//! checks formats again).
//! Vrules ([`crate::vrule`]) of the first member's path go last, before
//! the closing `COMMENT:\n`, as GF draws them.
//! Deliberately not here: routes, request parsing.

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::field::field;
use crate::range::DrawRequest;
use crate::rrdfile::{self, Resolution};
use crate::store::{Complex, Graph, Store};
use crate::{App, WebError};

/// One drawn series: a graph and, inside a complex, how it is drawn.
#[derive(Clone, Debug)]
pub struct Member {
    pub graph: Graph,
    /// The complex's type (AREA/LINE1/LINE2); `None`: the graph's own.
    pub kind: Option<String>,
    /// The complex's gmode; `None`: the request's.
    pub gmode: Option<String>,
    pub stack: bool,
}

impl Member {
    pub fn single(graph: Graph) -> Member {
        Member { graph, kind: None, gmode: None, stack: false }
    }
}

/// The members of a complex whose graphs still exist (a deleted graph
/// drops out of its complexes' pictures, as it does from GF's listing).
pub fn complex_members(store: &Store, c: &Complex) -> rusqlite::Result<Vec<Member>> {
    let mut out = Vec::new();
    for item in &c.data {
        if let Some(graph) = store.get_by_id(item.graph_id)? {
            out.push(Member {
                graph,
                kind: Some(item.kind.clone()),
                gmode: Some(item.gmode.clone()),
                stack: item.stack,
            });
        }
    }
    Ok(out)
}

/// Escapes text that goes inside a GPRINT format.
fn format_text(s: &str) -> String {
    field(s).replace('%', "%%")
}

struct Defined {
    /// DEF and CDEF elements.
    elements: Vec<String>,
    /// The CDEF name of each member, in order.
    vnames: Vec<String>,
}

/// Makes sure every member's file exists (GF creates on first read too,
/// and graphs made before the 1-minute file existed lack it), flushes it
/// through the daemon if there is one, and returns the paths.
fn prepare_files(app: &App, members: &[Member], r: Resolution, now: i64) -> Result<Vec<PathBuf>, WebError> {
    let mut paths = Vec::with_capacity(members.len());
    for m in members {
        let path = rrdfile::path(&app.rrd_dir, m.graph.id, r);
        if !path.exists() {
            let _files = app.write_files();
            rrdfile::ensure(&path, r, m.graph.mode == "derive", now)?;
        }
        app.writer.flush(&path)?;
        paths.push(path);
    }
    Ok(paths)
}

fn define(members: &[Member], paths: &[PathBuf], req: &DrawRequest) -> Defined {
    let mut elements = Vec::new();
    let mut vnames = Vec::new();
    for (i, (m, path)) in members.iter().zip(paths).enumerate() {
        let g = &m.graph;
        let subtract = m.gmode.as_deref().unwrap_or(&req.gmode) == "subtract";
        let ds = if subtract { "sub" } else { "num" };
        let (ll, ul) = if subtract { (g.sllimit, g.sulimit) } else { (g.llimit, g.ulimit) };
        let adjust = if g.adjust == "/" { "/" } else { "*" };
        let adjustval = crate::params::parse_natural(&g.adjustval).unwrap_or(1);
        let v = format!("{ds}{i}");
        elements.push(format!("DEF:{v}t={}:{ds}:{}", field(&path.to_string_lossy()), req.cf));
        elements.push(format!("CDEF:{v}={v}t,{ll},{ul},LIMIT,{adjustval},{adjust}"));
        vnames.push(v);
    }
    Defined { elements, vnames }
}

fn sumup_cdef(vnames: &[String]) -> String {
    let mut rpn = vnames[0].clone();
    for v in &vnames[1..] {
        rpn.push(',');
        rpn.push_str(v);
        rpn.push_str(",+");
    }
    format!("CDEF:sumup={rpn}")
}

/// A rendered picture and GF's summary of it.
pub struct Drawn {
    pub png: Vec<u8>,
    /// `{"service/section/graph": [cur, avg, max, min], "total": [...]}`,
    /// each value the `%.8lf` text rrdtool's PRINT gives (GF passes those
    /// strings through).
    pub summary: Map<String, Value>,
}

/// Draws `members` as GF's `RRD::graph` does.
pub fn draw(app: &App, members: &[Member], req: &DrawRequest, now: i64) -> Result<Drawn, WebError> {
    let paths = prepare_files(app, members, req.range.resolution, now)?;
    let Defined { mut elements, vnames } = define(members, &paths, req);
    let gprints = |v: &str, unit: &str, out: &mut Vec<String>| {
        let unit = format_text(unit);
        out.push(format!("GPRINT:{v}:LAST:Cur\\: %4.1lf%s{unit}"));
        out.push(format!("GPRINT:{v}:AVERAGE:Avg\\: %4.1lf%s{unit}"));
        out.push(format!("GPRINT:{v}:MAX:Max\\: %4.1lf%s{unit}"));
        out.push(format!("GPRINT:{v}:MIN:Min\\: %4.1lf%s{unit}\\l"));
        for (suffix, f) in [("cur", "LAST"), ("avg", "AVERAGE"), ("max", "MAXIMUM"), ("min", "MINIMUM")] {
            out.push(format!("VDEF:{v}{suffix}={v},{f}"));
            out.push(format!("PRINT:{v}{suffix}:%.8lf"));
        }
    };
    for (i, (m, v)) in members.iter().zip(&vnames).enumerate() {
        let g = &m.graph;
        let subtract = m.gmode.as_deref().unwrap_or(&req.gmode) == "subtract";
        let kind = m.kind.as_deref().unwrap_or(if subtract { &g.stype } else { &g.kind });
        let kind = if matches!(kind, "AREA" | "LINE1" | "LINE2") { kind } else { "AREA" };
        let stack = if m.stack && i > 0 { ":STACK" } else { "" };
        elements.push(format!("{kind}:{v}{}:{}{stack}", g.color, field(&g.graph_name)));
        gprints(v, &g.unit, &mut elements);
    }
    let sumup = req.sumup.unwrap_or(false) && !vnames.is_empty();
    if sumup {
        elements.push(sumup_cdef(&vnames));
        elements.push("LINE0:sumup#cccccc:total".into());
        gprints("sumup", members.first().map_or("", |m| m.graph.unit.as_str()), &mut elements);
    }
    if let Some(first) = members.first() {
        let paths = crate::vrule::applicable_paths(&first.graph);
        let rules = app.store().vrules(&paths, req.range.start, req.range.end, crate::vrule::MAX_DRAWN)?;
        elements.extend(crate::vrule::elements(&rules, req.vrule_legend));
    }
    elements.push("COMMENT:\\n".into());

    let mut title = req.range.title.clone();
    if members.len() == 1 && req.gmode == "subtract" {
        title = format!("[subtract] {title}");
    }
    let mut o = rrd_graph::Options {
        start: req.range.start.to_string(),
        end: req.range.end.to_string(),
        width: req.width,
        height: req.height,
        lower_limit: 0.0,
        upper_limit: 2.0,
        slope_mode: true,
        no_rrdtool_tag: true,
        border: req.border,
        only_graph: req.graphonly,
        logarithmic: req.logarithmic,
        no_legend: !req.legend,
        rigid: req.rigid,
        title: if req.notitle { String::new() } else { title },
        ..Default::default()
    };
    if req.logarithmic {
        // GF's fixed `-l 0` would make a logarithmic axis impossible.
        o.lower_limit = f64::NAN;
    }
    if let Some(u) = req.upper_limit {
        o.upper_limit = u;
    }
    if let Some(l) = req.lower_limit {
        o.lower_limit = l;
    }
    for c in &req.colors {
        o.apply("color", Some(c))?;
    }
    for (key, option, value) in [("xgrid", "x-grid", &req.xgrid), ("ygrid", "y-grid", &req.ygrid)] {
        if let Some(v) = value {
            o.apply(option, Some(v)).map_err(|e| WebError::Param { key, message: e.to_string() })?;
        }
    }
    let out = {
        let _files = app.read_files();
        rrd_graph::render(&o, &elements, now)?
    };
    let png = out.image.ok_or_else(|| WebError::Join("the graph drew no image".into()))?;
    let mut summary = Map::new();
    let mut prints = out.prints.into_iter();
    for m in members {
        let four: Vec<Value> = prints.by_ref().take(4).map(Value::String).collect();
        let g = &m.graph;
        summary.insert(format!("{}/{}/{}", g.service_name, g.section_name, g.graph_name), Value::Array(four));
    }
    if sumup {
        summary.insert("total".into(), Value::Array(prints.take(4).map(Value::String).collect()));
    }
    Ok(Drawn { png, summary })
}

/// Exports `members` as GF's `RRD::export` does: one column per member
/// (named after the graph), plus `total` under sumup.
pub fn export(
    app: &App,
    members: &[Member],
    req: &DrawRequest,
    now: i64,
) -> Result<rrd_engine::xport::XportResult, WebError> {
    let paths = prepare_files(app, members, req.range.resolution, now)?;
    let Defined { mut elements, vnames } = define(members, &paths, req);
    for (m, v) in members.iter().zip(&vnames) {
        elements.push(format!("XPORT:{v}:{}", field(&m.graph.graph_name)));
    }
    if req.sumup.unwrap_or(false) && !vnames.is_empty() {
        elements.push(sumup_cdef(&vnames));
        elements.push("XPORT:sumup:total".into());
    }
    let range = rrd_engine::xport::XportRange {
        start: req.range.start,
        end: req.range.end,
        step_secs: req.step_secs,
        max_rows: req.width,
        now,
    };
    let _files = app.read_files();
    Ok(rrd_engine::xport::xport(&range, &elements)?)
}

fn number(v: f64) -> Value {
    // serde_json writes a non-finite f64 as null, which is what GF's
    // RRDs::xport gives for unknowns.
    json!(v)
}

/// GF's `/xport` JSON: the `RRDs::xport` list as a hash. Like RRDs (and
/// `rrdtool xport`'s meta), `start_timestamp` is the first row's stamp,
/// one step after the engine's `start`.
pub fn xport_json(r: &rrd_engine::xport::XportResult) -> Value {
    let cols = r.legends.len();
    let rows: Vec<Value> = if cols == 0 {
        Vec::new()
    } else {
        r.data.chunks(cols).map(|row| Value::Array(row.iter().map(|v| number(*v)).collect())).collect()
    };
    json!({
        "start_timestamp": r.start + r.step_secs,
        "end_timestamp": r.end,
        "step": r.step_secs,
        "columns": cols,
        "column_names": r.legends,
        "rows": rows,
    })
}

/// Rows for Grafana's Infinity datasource: `time` (ISO 8601, UTC; the
/// row's stamp as `rrdtool xport --showtime` prints it) and `value` for a
/// graph, or one key per column (graph name, `total`) for a complex.
pub fn series_json(r: &rrd_engine::xport::XportResult, single: bool) -> Value {
    let cols = r.legends.len();
    if cols == 0 {
        return json!([]);
    }
    let rows = r
        .data
        .chunks(cols)
        .enumerate()
        .map(|(i, row)| {
            let t = r.start + (i as i64 + 1) * r.step_secs;
            let mut o = Map::new();
            o.insert("time".into(), json!(crate::store::iso_time(t)));
            if single {
                o.insert("value".into(), number(row[0]));
            } else {
                for (name, v) in r.legends.iter().zip(row) {
                    o.insert(name.clone(), number(*v));
                }
            }
            Value::Object(o)
        })
        .collect();
    Value::Array(rows)
}
