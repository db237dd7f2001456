//! Fuzzes AT-style time specs (`now-1d`, `end-2h`, `noon yesterday`,
//! `teatime 20260101`, `@1700000000`...) as fetch, xport, graph, create
//! and update take them: `attime::parse`, then resolution against a clock
//! and against each other. The input is `start\nend`; the first 4 bytes
//! move the clock. Nothing may panic (overflow included: the fuzz build
//! checks it), and resolving must be deterministic.

use rrd_lang::attime;

/// The target: one input.
pub fn run(data: &[u8]) {
    if data.len() < 4 {
        return;
    }
    let now = 1_000_000_000 + i64::from(u32::from_le_bytes([data[0], data[1], data[2], data[3]]));
    let text = String::from_utf8_lossy(&data[4..]);
    let (start, end) = text.split_once('\n').unwrap_or((&text, "now"));
    let parsed = attime::parse(start);
    let _ = attime::parse_time(start, now);
    let first = attime::parse_start_end(start, end, now);
    assert_eq!(first, attime::parse_start_end(start, end, now), "resolution is deterministic");
    if let Ok(at) = parsed {
        let now_spec = attime::parse("now").expect("now parses");
        let _ = attime::resolve_start_end(&at, &now_spec, now);
        let _ = attime::resolve_start_end(&now_spec, &at, now);
        let _ = attime::resolve_start_end(&at, &at, now);
    }
}
