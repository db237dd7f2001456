//! Grafana annotations from a CSV file (`--tree-annotations FILE`), as
//! grafana-rrd-server reads them (`-a`): a header naming the columns
//! `time` (milliseconds since the epoch), `title`, `tags` and `text`, in
//! any order, then one annotation per row; fields quoted as CSV quotes
//! them (`"app1,app2"`). The file is read at every request, so an
//! operator's edit shows at the next refresh; it is bounded
//! ([`MAX_BYTES`]) and a row that does not parse is an error naming its
//! line, not a silent gap.

use std::io::Read;
use std::path::Path;

use serde_json::{json, Value};

use super::TreeError;

/// The largest annotations file read.
pub const MAX_BYTES: u64 = 16 << 20;

/// The annotations of `path` whose time is within `from_ms ..= to_ms`, in
/// file order, as grafana-rrd-server answers them.
pub fn between(path: &Path, from_ms: i64, to_ms: i64) -> Result<Vec<Value>, TreeError> {
    let what = |why: String| TreeError::Param(format!("annotations file {}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| what(e.to_string()))?;
    let mut text = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut text).map_err(|e| what(e.to_string()))?;
    if text.len() as u64 > MAX_BYTES {
        return Err(what(format!("larger than {MAX_BYTES} bytes")));
    }
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(text.as_slice());
    let headers = reader.headers().map_err(|e| what(e.to_string()))?.clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h.trim() == name)
            .ok_or_else(|| what(format!("the header has no '{name}' column")))
    };
    let (time, title, tags, text) = (column("time")?, column("title")?, column("tags")?, column("text")?);
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| what(e.to_string()))?;
        let line = record.position().map_or(0, |p| p.line());
        let field = |i: usize| record.get(i).unwrap_or("");
        let ms: i64 = field(time)
            .trim()
            .parse()
            .map_err(|_| what(format!("line {line}: time '{}' is not milliseconds", field(time))))?;
        if (from_ms..=to_ms).contains(&ms) {
            out.push(json!({
                "annotation": "annotation",
                "time": ms,
                "title": field(title),
                "tags": field(tags),
                "text": field(text),
            }));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_in_range_come_back_in_grafana_rrd_servers_shape() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv");
        std::fs::write(
            &path,
            "time,title,tags,text\n1000,\"Rebooted\",system,\"The server, rebooted.\"\n\
             2000,App restarted,\"app1,app2\",apps\n3000,late,x,y\n",
        )
        .unwrap();
        let got = between(&path, 1000, 2000).unwrap();
        assert_eq!(
            got,
            vec![
                json!({"annotation": "annotation", "time": 1000, "title": "Rebooted", "tags": "system", "text": "The server, rebooted."}),
                json!({"annotation": "annotation", "time": 2000, "title": "App restarted", "tags": "app1,app2", "text": "apps"}),
            ]
        );
        std::fs::write(&path, "time,title,tags,text\nsoon,a,b,c\n").unwrap();
        let e = between(&path, 0, 1).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("'soon'"), "{e}");
        std::fs::write(&path, "when,title,tags,text\n").unwrap();
        assert!(between(&path, 0, 1).unwrap_err().to_string().contains("no 'time' column"));
    }
}
