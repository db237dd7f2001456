//! Graph metadata in SQLite: one row per (service, section, graph), keyed
//! by an integer id that also names the graph's RRD file.
//!
//! Invariants: names are validated before they reach this module; the id
//! is the only thing derived from a row that touches the file system, so
//! a name can never choose a path. Times are epoch seconds in the table
//! and GrowthForecast's `YYYY/MM/DD HH:MM:SS` (UTC) in the JSON.
//!
//! Deliberately not here: complex graphs, edit/delete, the RRD files.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

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
}

/// The short entry of `/json/list/graph`.
#[derive(Clone, Debug, Serialize)]
pub struct GraphName {
    pub id: i64,
    pub service_name: String,
    pub section_name: String,
    pub graph_name: String,
}

pub struct Store {
    conn: Connection,
}

const COLUMNS: &str = "id, service_name, section_name, graph_name, number, mode, description, \
     sort, gmode, color, ulimit, llimit, sulimit, sllimit, type, stype, adjust, adjustval, unit, \
     created_at, updated_at";

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

impl Store {
    pub fn open(path: &Path) -> rusqlite::Result<Store> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
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
               UNIQUE (service_name, section_name, graph_name));",
        )?;
        Ok(Store { conn })
    }

    pub fn get(&self, service: &str, section: &str, graph: &str) -> rusqlite::Result<Option<Graph>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM graphs WHERE service_name=?1 AND section_name=?2 AND graph_name=?3"
        );
        self.conn.query_row(&sql, params![service, section, graph], row_to_graph).optional()
    }

    pub fn all(&self) -> rusqlite::Result<Vec<Graph>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM graphs ORDER BY service_name, section_name, sort DESC, graph_name"
        );
        let mut st = self.conn.prepare(&sql)?;
        let rows = st.query_map([], row_to_graph)?;
        rows.collect()
    }

    /// Inserts the graph with its first number; `previous` is `None`.
    /// Returns the row and the number it held before (for the `sub` DS).
    pub fn post(
        &mut self,
        service: &str,
        section: &str,
        graph: &str,
        p: &Posted<'_>,
    ) -> rusqlite::Result<(Graph, Option<i64>)> {
        let tx = self.conn.transaction()?;
        let sql = format!(
            "SELECT {COLUMNS} FROM graphs WHERE service_name=?1 AND section_name=?2 AND graph_name=?3"
        );
        let old = tx.query_row(&sql, params![service, section, graph], row_to_graph).optional()?;
        let previous = old.as_ref().map(|g| g.number);
        match old {
            None => {
                let color =
                    p.color.map(str::to_string).unwrap_or_else(|| default_color(service, section, graph));
                tx.execute(
                    "INSERT INTO graphs (service_name, section_name, graph_name, number, mode, \
                     description, color, created_at, updated_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?8)",
                    params![
                        service,
                        section,
                        graph,
                        p.number,
                        p.mode,
                        p.description.unwrap_or(""),
                        color,
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
        tx.commit()?;
        Ok((row, previous))
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
        assert_eq!(days_from_civil(2023, 11, 14), 1_700_000_000 / 86_400);
    }

    #[test]
    fn count_accumulates_and_modified_keeps_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("m.db")).unwrap();
        let p = |n, mode, t| Posted { number: n, mode, color: None, description: None, now_secs: t };
        let (g, prev) = s.post("a", "b", "c", &p(5, "count", 100)).unwrap();
        assert_eq!((g.number, prev), (5, None));
        let (g, prev) = s.post("a", "b", "c", &p(3, "count", 200)).unwrap();
        assert_eq!((g.number, prev), (8, Some(5)));
        let (g, _) = s.post("a", "b", "c", &p(8, "modified", 300)).unwrap();
        assert_eq!(g.updated_at, gf_time(200));
        assert!(g.color.starts_with('#') && g.color.len() == 7);
    }
}
