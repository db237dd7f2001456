//! Graph and complex-graph metadata in SQLite: one row per (service,
//! section, graph) in `graphs`, one per stacked graph in `complex_graphs`,
//! each keyed by an integer id; a graph's id also names its RRD files.
//!
//! Invariants: names are validated before they reach this module; the id
//! is the only thing derived from a row that touches the file system, so
//! a name can never choose a path. A path (service/section/graph) names at
//! most one graph or complex, across both tables (checked here, under the
//! caller's lock, before every insert or rename). Times are epoch seconds
//! in the tables and GrowthForecast's `YYYY/MM/DD HH:MM:SS` (UTC) in JSON.
//!
//! Deliberately not here: request validation, the RRD files, GF's vrules.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension, ToSql};
use serde::{Deserialize, Serialize};

/// One graph as GrowthForecast's JSON shows it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Graph {
    pub id: i64,
    pub service_name: String,
    pub section_name: String,
    pub graph_name: String,
    pub number: i64,
    pub mode: String,
    pub description: String,
    pub sort: i64,
    pub gmode: String,
    pub color: String,
    pub ulimit: i64,
    pub llimit: i64,
    pub sulimit: i64,
    pub sllimit: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub stype: String,
    pub adjust: String,
    pub adjustval: String,
    pub unit: String,
    pub created_at: String,
    pub updated_at: String,
    /// Always false: GF's `graph4json` marks plain graphs so a client can
    /// tell them from complexes in `/json/list/all`.
    pub complex: bool,
}

/// The short entry of `/json/list/graph` and `/json/list/complex`.
#[derive(Clone, Debug, Serialize)]
pub struct GraphName {
    pub id: i64,
    pub service_name: String,
    pub section_name: String,
    pub graph_name: String,
}

/// One series of a complex graph, as GF's JSON API spells it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ComplexItem {
    pub graph_id: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub gmode: String,
    pub stack: bool,
}

/// One complex (stacked) graph as GF's `graph4json` shows it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Complex {
    pub id: i64,
    pub service_name: String,
    pub section_name: String,
    pub graph_name: String,
    pub description: String,
    pub sort: i64,
    pub sumup: bool,
    pub data: Vec<ComplexItem>,
    /// GF keeps a `number` column on complexes that is always 0.
    pub number: i64,
    pub created_at: String,
    pub updated_at: String,
    /// Always true.
    pub complex: bool,
}

/// The fields a complex is created or replaced with.
#[derive(Clone, Debug)]
pub struct ComplexSpec {
    pub service_name: String,
    pub section_name: String,
    pub graph_name: String,
    pub description: String,
    pub sort: i64,
    pub sumup: bool,
    pub data: Vec<ComplexItem>,
}

pub struct Store {
    conn: Connection,
}

const COLUMNS: &str = "id, service_name, section_name, graph_name, number, mode, description, \
     sort, gmode, color, ulimit, llimit, sulimit, sllimit, type, stype, adjust, adjustval, unit, \
     created_at, updated_at";

const COMPLEX_COLUMNS: &str =
    "id, service_name, section_name, graph_name, description, sort, sumup, data, created_at, updated_at";

fn row_to_graph(r: &rusqlite::Row<'_>) -> rusqlite::Result<Graph> {
    Ok(Graph {
        id: r.get(0)?,
        service_name: r.get(1)?,
        section_name: r.get(2)?,
        graph_name: r.get(3)?,
        number: r.get(4)?,
        mode: r.get(5)?,
        description: r.get(6)?,
        sort: r.get(7)?,
        gmode: r.get(8)?,
        color: r.get(9)?,
        ulimit: r.get(10)?,
        llimit: r.get(11)?,
        sulimit: r.get(12)?,
        sllimit: r.get(13)?,
        kind: r.get(14)?,
        stype: r.get(15)?,
        adjust: r.get(16)?,
        adjustval: r.get(17)?,
        unit: r.get(18)?,
        created_at: gf_time(r.get(19)?),
        updated_at: gf_time(r.get(20)?),
        complex: false,
    })
}

fn row_to_complex(r: &rusqlite::Row<'_>) -> rusqlite::Result<Complex> {
    let data: String = r.get(7)?;
    // The column is only ever written from a serialized Vec<ComplexItem>;
    // a row edited by hand into something else reads as an empty list
    // rather than failing every listing.
    let data = serde_json::from_str(&data).unwrap_or_default();
    Ok(Complex {
        id: r.get(0)?,
        service_name: r.get(1)?,
        section_name: r.get(2)?,
        graph_name: r.get(3)?,
        description: r.get(4)?,
        sort: r.get(5)?,
        sumup: r.get::<_, i64>(6)? != 0,
        data,
        number: 0,
        created_at: gf_time(r.get(8)?),
        updated_at: gf_time(r.get(9)?),
        complex: true,
    })
}

/// What a POST changes in a graph row.
pub struct Posted<'a> {
    pub number: i64,
    pub mode: &'a str,
    pub color: Option<&'a str>,
    pub description: Option<&'a str>,
    pub now_secs: i64,
}

/// GF's limits for a new graph: wide enough that LIMIT drops nothing a
/// script is likely to post (GF inserts these, not the column defaults).
const NEW_GRAPH_LLIMIT: i64 = -1_000_000_000;
const NEW_GRAPH_SLLIMIT: i64 = -100_000;

impl Store {
    pub fn open(path: &Path) -> rusqlite::Result<Store> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=NORMAL;
             CREATE TABLE IF NOT EXISTS graphs (
               id INTEGER PRIMARY KEY AUTOINCREMENT,
               service_name TEXT NOT NULL, section_name TEXT NOT NULL, graph_name TEXT NOT NULL,
               number INTEGER NOT NULL DEFAULT 0, mode TEXT NOT NULL DEFAULT 'gauge',
               description TEXT NOT NULL DEFAULT '', sort INTEGER NOT NULL DEFAULT 0,
               gmode TEXT NOT NULL DEFAULT 'gauge', color TEXT NOT NULL,
               ulimit INTEGER NOT NULL DEFAULT 1000000000000000,
               llimit INTEGER NOT NULL DEFAULT 0,
               sulimit INTEGER NOT NULL DEFAULT 100000,
               sllimit INTEGER NOT NULL DEFAULT 0,
               type TEXT NOT NULL DEFAULT 'AREA', stype TEXT NOT NULL DEFAULT 'AREA',
               adjust TEXT NOT NULL DEFAULT '*', adjustval TEXT NOT NULL DEFAULT '1',
               unit TEXT NOT NULL DEFAULT '',
               created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
               UNIQUE (service_name, section_name, graph_name));
             CREATE TABLE IF NOT EXISTS complex_graphs (
               id INTEGER PRIMARY KEY AUTOINCREMENT,
               service_name TEXT NOT NULL, section_name TEXT NOT NULL, graph_name TEXT NOT NULL,
               description TEXT NOT NULL DEFAULT '', sort INTEGER NOT NULL DEFAULT 0,
               sumup INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '[]',
               created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
               UNIQUE (service_name, section_name, graph_name));
             CREATE TABLE IF NOT EXISTS vrules (
               id INTEGER PRIMARY KEY AUTOINCREMENT,
               graph_path TEXT NOT NULL, time INTEGER NOT NULL,
               color TEXT NOT NULL DEFAULT '#FF0000', description TEXT NOT NULL DEFAULT '',
               dashes TEXT NOT NULL DEFAULT '');
             CREATE INDEX IF NOT EXISTS vrules_time_path ON vrules (time, graph_path);",
        )?;
        Ok(Store { conn })
    }

    pub fn get(&self, service: &str, section: &str, graph: &str) -> rusqlite::Result<Option<Graph>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM graphs WHERE service_name=?1 AND section_name=?2 AND graph_name=?3"
        );
        self.conn.query_row(&sql, params![service, section, graph], row_to_graph).optional()
    }

    pub fn get_by_id(&self, id: i64) -> rusqlite::Result<Option<Graph>> {
        let sql = format!("SELECT {COLUMNS} FROM graphs WHERE id=?1");
        self.conn.query_row(&sql, params![id], row_to_graph).optional()
    }

    pub fn all(&self) -> rusqlite::Result<Vec<Graph>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM graphs ORDER BY service_name, section_name, sort DESC, graph_name"
        );
        let mut st = self.conn.prepare(&sql)?;
        let rows = st.query_map([], row_to_graph)?;
        rows.collect()
    }

    pub fn count_graphs(&self) -> rusqlite::Result<(i64, i64)> {
        let g = self.conn.query_row("SELECT COUNT(*) FROM graphs", [], |r| r.get(0))?;
        let c = self.conn.query_row("SELECT COUNT(*) FROM complex_graphs", [], |r| r.get(0))?;
        Ok((g, c))
    }

    /// Whether a graph or a complex other than `except` (a graph id with
    /// `false`, a complex id with `true`) already has this path.
    pub fn path_taken(
        &self,
        service: &str,
        section: &str,
        graph: &str,
        except: Option<(bool, i64)>,
    ) -> rusqlite::Result<bool> {
        let find = |table: &str| -> rusqlite::Result<Option<i64>> {
            let sql =
                format!("SELECT id FROM {table} WHERE service_name=?1 AND section_name=?2 AND graph_name=?3");
            self.conn.query_row(&sql, params![service, section, graph], |r| r.get(0)).optional()
        };
        let graph_id = find("graphs")?;
        let complex_id = find("complex_graphs")?;
        let other = |found: Option<i64>, is_complex: bool| match (found, except) {
            (None, _) => false,
            (Some(id), Some((c, e))) => !(c == is_complex && e == id),
            (Some(_), None) => true,
        };
        Ok(other(graph_id, false) || other(complex_id, true))
    }

    /// Inserts the graph with its first number, or applies the POST to it.
    /// Returns the row and the number it held before (`None` for a new
    /// graph), for the `sub` DS.
    pub fn post(
        &mut self,
        service: &str,
        section: &str,
        graph: &str,
        p: &Posted<'_>,
    ) -> rusqlite::Result<(Graph, Option<i64>)> {
        let saved =
            self.post_with(service, section, graph, p, u64::MAX, |_, _| Ok::<_, rusqlite::Error>(()))?;
        saved.ok_or(rusqlite::Error::QueryReturnedNoRows)
    }

    /// [`Store::post`], keeping the change only if `write` (given the new
    /// row and the previous number) succeeds: a value the RRD files
    /// refused leaves the metadata as it was. A new name is refused
    /// (`Ok(None)`, nothing changed) when `max_graphs` graphs exist.
    pub fn post_with<E: From<rusqlite::Error>>(
        &mut self,
        service: &str,
        section: &str,
        graph: &str,
        p: &Posted<'_>,
        max_graphs: u64,
        write: impl FnOnce(&Graph, Option<i64>) -> Result<(), E>,
    ) -> Result<Option<(Graph, Option<i64>)>, E> {
        let tx = self.conn.transaction()?;
        let sql = format!(
            "SELECT {COLUMNS} FROM graphs WHERE service_name=?1 AND section_name=?2 AND graph_name=?3"
        );
        let old = tx.query_row(&sql, params![service, section, graph], row_to_graph).optional()?;
        let previous = old.as_ref().map(|g| g.number);
        match old {
            None => {
                let count: i64 = tx.query_row("SELECT COUNT(*) FROM graphs", [], |r| r.get(0))?;
                if u64::try_from(count).unwrap_or(0) >= max_graphs {
                    return Ok(None);
                }
                let color =
                    p.color.map(str::to_string).unwrap_or_else(|| default_color(service, section, graph));
                tx.execute(
                    "INSERT INTO graphs (service_name, section_name, graph_name, number, mode, \
                     description, color, llimit, sllimit, created_at, updated_at) \
                     VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?10)",
                    params![
                        service,
                        section,
                        graph,
                        p.number,
                        p.mode,
                        p.description.unwrap_or(""),
                        color,
                        NEW_GRAPH_LLIMIT,
                        NEW_GRAPH_SLLIMIT,
                        p.now_secs
                    ],
                )?;
            }
            Some(g) => {
                // GrowthForecast's modes: count accumulates, modified leaves
                // the row (and its update time) alone when nothing changed.
                let (number, touch) = match p.mode {
                    "count" => (g.number.saturating_add(p.number), true),
                    "modified" => (p.number, p.number != g.number),
                    _ => (p.number, true),
                };
                if touch {
                    tx.execute(
                        "UPDATE graphs SET number=?1, mode=?2, updated_at=?3 WHERE id=?4",
                        params![number, p.mode, p.now_secs, g.id],
                    )?;
                }
                if let Some(c) = p.color {
                    tx.execute("UPDATE graphs SET color=?1 WHERE id=?2", params![c, g.id])?;
                }
                if let Some(d) = p.description {
                    tx.execute("UPDATE graphs SET description=?1 WHERE id=?2", params![d, g.id])?;
                }
            }
        }
        let row = tx.query_row(&sql, params![service, section, graph], row_to_graph)?;
        // Dropping the transaction on an error rolls the change back.
        write(&row, previous)?;
        tx.commit()?;
        Ok(Some((row, previous)))
    }

    /// Writes every editable column of `g` (GF's `update_graph`): names,
    /// description, sort, gmode, color, type/stype, limits, adjust,
    /// adjustval and unit. The number, mode and times are left alone.
    pub fn update_graph(&self, g: &Graph) -> rusqlite::Result<bool> {
        let n = self.conn.execute(
            "UPDATE graphs SET service_name=?1, section_name=?2, graph_name=?3, description=?4, \
             sort=?5, gmode=?6, color=?7, type=?8, stype=?9, llimit=?10, ulimit=?11, sllimit=?12, \
             sulimit=?13, adjust=?14, adjustval=?15, unit=?16 WHERE id=?17",
            params![
                g.service_name,
                g.section_name,
                g.graph_name,
                g.description,
                g.sort,
                g.gmode,
                g.color,
                g.kind,
                g.stype,
                g.llimit,
                g.ulimit,
                g.sllimit,
                g.sulimit,
                g.adjust,
                g.adjustval,
                g.unit,
                g.id
            ],
        )?;
        Ok(n == 1)
    }

    /// Removes the graph's row; false when there was none.
    pub fn delete_graph(&self, id: i64) -> rusqlite::Result<bool> {
        Ok(self.conn.execute("DELETE FROM graphs WHERE id=?1", params![id])? == 1)
    }

    pub fn get_complex(
        &self,
        service: &str,
        section: &str,
        graph: &str,
    ) -> rusqlite::Result<Option<Complex>> {
        let sql = format!(
            "SELECT {COMPLEX_COLUMNS} FROM complex_graphs \
             WHERE service_name=?1 AND section_name=?2 AND graph_name=?3"
        );
        self.conn.query_row(&sql, params![service, section, graph], row_to_complex).optional()
    }

    pub fn get_complex_by_id(&self, id: i64) -> rusqlite::Result<Option<Complex>> {
        let sql = format!("SELECT {COMPLEX_COLUMNS} FROM complex_graphs WHERE id=?1");
        self.conn.query_row(&sql, params![id], row_to_complex).optional()
    }

    /// The graphs and complexes of one section.
    pub fn section(&self, service: &str, section: &str) -> rusqlite::Result<(Vec<Graph>, Vec<Complex>)> {
        let sql =
            format!("SELECT {COLUMNS} FROM graphs WHERE service_name=?1 AND section_name=?2 ORDER BY id");
        let mut st = self.conn.prepare(&sql)?;
        let graphs =
            st.query_map(params![service, section], row_to_graph)?.collect::<rusqlite::Result<_>>()?;
        let sql = format!(
            "SELECT {COMPLEX_COLUMNS} FROM complex_graphs WHERE service_name=?1 AND section_name=?2 ORDER BY id"
        );
        let mut st = self.conn.prepare(&sql)?;
        let complexes =
            st.query_map(params![service, section], row_to_complex)?.collect::<rusqlite::Result<_>>()?;
        Ok((graphs, complexes))
    }

    pub fn all_complexes(&self) -> rusqlite::Result<Vec<Complex>> {
        let sql = format!(
            "SELECT {COMPLEX_COLUMNS} FROM complex_graphs \
             ORDER BY service_name, section_name, sort DESC, graph_name"
        );
        let mut st = self.conn.prepare(&sql)?;
        let rows = st.query_map([], row_to_complex)?;
        rows.collect()
    }

    pub fn create_complex(&self, spec: &ComplexSpec, now_secs: i64) -> rusqlite::Result<Complex> {
        self.execute_complex(
            "INSERT INTO complex_graphs (service_name, section_name, graph_name, description, sort, \
             sumup, data, created_at, updated_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?8)",
            spec,
            &[&now_secs],
        )?;
        let id = self.conn.last_insert_rowid();
        self.get_complex_by_id(id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)
    }

    pub fn update_complex(&self, id: i64, spec: &ComplexSpec, now_secs: i64) -> rusqlite::Result<bool> {
        let n = self.execute_complex(
            "UPDATE complex_graphs SET service_name=?1, section_name=?2, graph_name=?3, \
             description=?4, sort=?5, sumup=?6, data=?7, updated_at=?8 WHERE id=?9",
            spec,
            &[&now_secs, &id],
        )?;
        Ok(n == 1)
    }

    /// Runs `sql` with a complex graph's columns as ?1 to ?7 (service,
    /// section, graph, description, sort, sumup, the data as JSON), then
    /// `more` from ?8 on.
    fn execute_complex(&self, sql: &str, spec: &ComplexSpec, more: &[&dyn ToSql]) -> rusqlite::Result<usize> {
        let data = serde_json::to_string(&spec.data).unwrap_or_else(|_| "[]".into());
        let sumup = i64::from(spec.sumup);
        let mut bound: Vec<&dyn ToSql> = vec![
            &spec.service_name,
            &spec.section_name,
            &spec.graph_name,
            &spec.description,
            &spec.sort,
            &sumup,
            &data,
        ];
        bound.extend_from_slice(more);
        self.conn.execute(sql, bound.as_slice())
    }

    pub fn delete_complex(&self, id: i64) -> rusqlite::Result<bool> {
        Ok(self.conn.execute("DELETE FROM complex_graphs WHERE id=?1", params![id])? == 1)
    }
}

/// One vertical rule as GF's vrule API stores and lists it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Vrule {
    pub id: i64,
    /// `/`, `/service`, `/service/section` or `/service/section/graph`.
    pub graph_path: String,
    pub time: i64,
    pub color: String,
    pub description: String,
    pub dashes: String,
}

fn row_to_vrule(r: &rusqlite::Row<'_>) -> rusqlite::Result<Vrule> {
    Ok(Vrule {
        id: r.get(0)?,
        graph_path: r.get(1)?,
        time: r.get(2)?,
        color: r.get(3)?,
        description: r.get(4)?,
        dashes: r.get(5)?,
    })
}

impl Store {
    /// Stores a vrule; `Ok(None)` (nothing stored) when `max` exist.
    pub fn add_vrule(&self, v: &Vrule, max: u64) -> rusqlite::Result<Option<Vrule>> {
        let count: i64 = self.conn.query_row("SELECT COUNT(*) FROM vrules", [], |r| r.get(0))?;
        if u64::try_from(count).unwrap_or(0) >= max {
            return Ok(None);
        }
        self.conn.execute(
            "INSERT INTO vrules (graph_path, time, color, description, dashes) VALUES (?1,?2,?3,?4,?5)",
            params![v.graph_path, v.time, v.color, v.description, v.dashes],
        )?;
        Ok(Some(Vrule { id: self.conn.last_insert_rowid(), ..v.clone() }))
    }

    /// The vrules stored under any of `paths` with `from <= time <= to`,
    /// oldest first, at most `limit` (the latest ones).
    pub fn vrules(&self, paths: &[String], from: i64, to: i64, limit: usize) -> rusqlite::Result<Vec<Vrule>> {
        let marks = vec!["?"; paths.len()].join(",");
        let sql = format!(
            "SELECT id, graph_path, time, color, description, dashes FROM vrules \
             WHERE time BETWEEN ?1 AND ?2 AND graph_path IN ({marks}) ORDER BY time DESC, id DESC LIMIT {limit}"
        );
        let mut args: Vec<&dyn rusqlite::ToSql> = vec![&from, &to];
        args.extend(paths.iter().map(|p| p as &dyn rusqlite::ToSql));
        let mut st = self.conn.prepare(&sql)?;
        let mut rows = st.query_map(args.as_slice(), row_to_vrule)?.collect::<rusqlite::Result<Vec<_>>>()?;
        rows.reverse();
        Ok(rows)
    }
}

/// A stable colour per graph, where GrowthForecast picks a random one.
fn default_color(service: &str, section: &str, graph: &str) -> String {
    // FNV-1a: deterministic across runs, unlike std's RandomState.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in service.bytes().chain([0]).chain(section.bytes()).chain([0]).chain(graph.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("#{:02X}{:02X}{:02X}", (h >> 16) as u8 & 0xDF, (h >> 8) as u8 & 0xDF, h as u8 & 0xDF)
}

/// `YYYY/MM/DD HH:MM:SS` in UTC.
pub fn gf_time(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}/{m:02}/{d:02} {:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

/// `YYYY-MM-DDTHH:MM:SSZ`, for clients (Grafana) that want ISO 8601.
pub fn iso_time(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// Proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Day count since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_in_utc() {
        assert_eq!(gf_time(0), "1970/01/01 00:00:00");
        assert_eq!(gf_time(1_700_000_000), "2023/11/14 22:13:20");
        assert_eq!(iso_time(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(days_from_civil(2023, 11, 14), 1_700_000_000 / 86_400);
    }

    #[test]
    fn count_accumulates_and_modified_keeps_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("m.db")).unwrap();
        let p = |n, mode, t| Posted { number: n, mode, color: None, description: None, now_secs: t };
        let (g, prev) = s.post("a", "b", "c", &p(5, "count", 100)).unwrap();
        assert_eq!((g.number, prev), (5, None));
        assert_eq!((g.llimit, g.sllimit), (NEW_GRAPH_LLIMIT, NEW_GRAPH_SLLIMIT));
        let (g, prev) = s.post("a", "b", "c", &p(3, "count", 200)).unwrap();
        assert_eq!((g.number, prev), (8, Some(5)));
        let (g, _) = s.post("a", "b", "c", &p(8, "modified", 300)).unwrap();
        assert_eq!(g.updated_at, gf_time(200));
        assert!(g.color.starts_with('#') && g.color.len() == 7);
    }

    #[test]
    fn paths_are_unique_across_graphs_and_complexes() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("m.db")).unwrap();
        let p = Posted { number: 1, mode: "gauge", color: None, description: None, now_secs: 1 };
        let (g, _) = s.post("a", "b", "c", &p).unwrap();
        assert!(s.path_taken("a", "b", "c", None).unwrap());
        assert!(!s.path_taken("a", "b", "c", Some((false, g.id))).unwrap());
        assert!(s.path_taken("a", "b", "c", Some((true, g.id))).unwrap());
        let spec = ComplexSpec {
            service_name: "a".into(),
            section_name: "b".into(),
            graph_name: "x".into(),
            description: String::new(),
            sort: 19,
            sumup: true,
            data: vec![ComplexItem {
                graph_id: g.id,
                kind: "AREA".into(),
                gmode: "gauge".into(),
                stack: true,
            }],
        };
        let c = s.create_complex(&spec, 5).unwrap();
        assert_eq!((c.sumup, c.data.len(), c.complex), (true, 1, true));
        assert!(s.path_taken("a", "b", "x", Some((false, g.id))).unwrap());
        assert!(s.delete_complex(c.id).unwrap());
        assert!(s.get_complex_by_id(c.id).unwrap().is_none());
        assert!(s.delete_graph(g.id).unwrap());
        assert!(!s.delete_graph(g.id).unwrap());
    }
}
