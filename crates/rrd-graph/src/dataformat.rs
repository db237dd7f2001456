//! `graph -a XML|XMLENUM|JSON|JSONTIME|CSV|TSV|SSV`: instead of a
//! picture, RRDtool 1.7.2 exports the series of the graph's LINE, AREA and
//! STACK elements (`rrd_graph_xport`), byte for byte as written here:
//! - XML (always with a `<t>` time per row; XMLENUM also numbers the
//!   `<v0>`, `<v1>` tags) and JSON (JSONTIME adds the time to each row)
//!   carry, after the legend, the PRINT results, the GPRINT/COMMENT/
//!   LINE/AREA/TEXTALIGN texts and the rules, with RRDtool's quirks: LINE
//!   legends lose their leading blanks and AREA legends keep them, an
//!   HRULE is always `0.0000000000e+00` and a VRULE `0` (RRDtool prints
//!   fields it never fills), only PRINT/GPRINT/COMMENT texts are
//!   JSON-escaped (by `graph`, which also replays RRDtool's one reused
//!   text buffer: a strftime PRINT of a VDEF without a time repeats the
//!   previous text; NaN and -0 print unsigned, as RRDtool's own printf
//!   does), and every line is cut at 255 bytes (RRDtool's buffer);
//! - CSV, TSV and SSV: a header of quoted legends, then one row per step,
//!   values quoted, CRLF line ends.
//!
//! The table itself (which rows, which step) is computed in `graph`.

use rrd_lang::cformat::rrd_snprintf_e;
use rrd_lang::numparse::trim_c_space;

/// The data formats (`-a XML|XMLENUM|JSON|JSONTIME|CSV|TSV|SSV`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataFormat {
    Xml,
    XmlEnum,
    Json,
    JsonTime,
    Csv,
    Tsv,
    Ssv,
}

impl DataFormat {
    /// The format `-a` names (upper case, as rrdtool compares it).
    pub fn parse(name: &str) -> Option<DataFormat> {
        Some(match name {
            "XML" => DataFormat::Xml,
            "XMLENUM" => DataFormat::XmlEnum,
            "JSON" => DataFormat::Json,
            "JSONTIME" => DataFormat::JsonTime,
            "CSV" => DataFormat::Csv,
            "TSV" => DataFormat::Tsv,
            "SSV" => DataFormat::Ssv,
            _ => return None,
        })
    }

    /// The lower-case name RRDtool's messages use.
    pub fn name(self) -> &'static str {
        match self {
            DataFormat::Xml => "xml",
            DataFormat::XmlEnum => "xmlenum",
            DataFormat::Json => "json",
            DataFormat::JsonTime => "jsontime",
            DataFormat::Csv => "csv",
            DataFormat::Tsv => "tsv",
            DataFormat::Ssv => "ssv",
        }
    }
}

/// The exported series: `rows` rows stamped `start + step`, `start +
/// 2 step`, ... up to `end`; values row-major.
pub(crate) struct Table {
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub legends: Vec<String>,
    pub data: Vec<f64>,
    /// The `--x-grid` label format: times are printed through it (local
    /// time) instead of as seconds.
    pub timefmt: Option<String>,
}

impl Table {
    fn rows(&self) -> usize {
        ((self.end - self.start) / self.step).max(0) as usize
    }

    /// A time as the formats print it: seconds, or the label format in a
    /// buffer of `size` bytes.
    fn time(&self, t: i64, size: usize) -> String {
        match &self.timefmt {
            Some(f) => crate::timefmt::strftime_local_in(f, t, size),
            None => t.to_string(),
        }
    }
}

/// One entry of the XML/JSON meta lists, in element order. PRINT, GPRINT
/// and COMMENT texts come as written (escaped for JSON by the caller).
pub(crate) enum MetaEntry {
    Print(String),
    Gprint(String),
    Comment(String),
    /// A LINE's legend (written without its leading blanks).
    Line(String),
    /// An AREA's legend (written as it is).
    Area(String),
    Align(&'static str),
    Hrule,
    /// A VRULE's text: `0`, or its time under the label format.
    Vrule(String),
}

/// What `snprintf(buf, 256, ...)` keeps of a line.
fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut at = max;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.truncate(at);
    }
    s
}

/// RRDtool's `escapeJSON`: a backslash before `"` and `\`.
pub(crate) fn escape_json(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    // It works in a 1024-byte buffer.
    cut(out, 1023)
}

fn value_e(v: f64) -> String {
    rrd_snprintf_e(v, 10)
}

/// Writes `table` (and, for XML/JSON, `meta`) as RRDtool does: the
/// in-memory output (a file named `-`) and, when it differs, what goes to
/// a named file. RRDtool drops a comma just before the end of the meta
/// lists only in memory (JSON with PRINTs and no GPRINT-like entries nor
/// rules: only XPORT columns).
pub(crate) fn write(format: DataFormat, table: &Table, meta: &[MetaEntry]) -> (Vec<u8>, Option<Vec<u8>>) {
    let file = write_file(format, table, meta);
    if !matches!(format, DataFormat::Json | DataFormat::JsonTime) {
        return (file.into_bytes(), None);
    }
    let marker = "     },\n  \"data\": [\n";
    let Some(at) = file.find(marker) else { return (file.into_bytes(), None) };
    if !file[..at].ends_with(",\n") {
        return (file.into_bytes(), None);
    }
    let mut memory = file[..at - 2].to_string();
    memory.push('\n');
    memory.push_str(&file[at..]);
    (memory.into_bytes(), Some(file.into_bytes()))
}

fn write_file(format: DataFormat, table: &Table, meta: &[MetaEntry]) -> String {
    match format {
        DataFormat::Csv => write_sv(',', table),
        DataFormat::Tsv => write_sv('\t', table),
        DataFormat::Ssv => write_sv(';', table),
        DataFormat::Xml => write_xml(table, meta, false),
        DataFormat::XmlEnum => write_xml(table, meta, true),
        DataFormat::Json => write_json(table, meta, false),
        DataFormat::JsonTime => write_json(table, meta, true),
    }
}

fn write_sv(sep: char, t: &Table) -> String {
    let cols = t.legends.len();
    let mut s = String::with_capacity(1024 + (12 + 19 * cols) * (1 + t.rows()));
    s.push_str("\"time\"");
    for legend in &t.legends {
        s.push_str(&cut(format!("{sep}\"{}\"", trim_c_space(legend)), 254));
    }
    s.push_str("\r\n");
    for row in 0..t.rows() {
        s.push_str(&t.time(t.start + (row as i64 + 1) * t.step, 254));
        for &v in &t.data[row * cols..(row + 1) * cols] {
            if v.is_nan() {
                s.push(sep);
                s.push_str("\"NaN\"");
            } else {
                s.push_str(&format!("{sep}\"{}\"", value_e(v)));
            }
        }
        s.push_str("\r\n");
    }
    s
}

/// The prints, gprints and rules lists.
fn meta_lists(meta: &[MetaEntry], json: bool) -> (String, String, String) {
    let (mut prints, mut gprints, mut rules) = (String::new(), String::new(), String::new());
    for entry in meta {
        let (list, tag, text) = match entry {
            MetaEntry::Print(t) => (&mut prints, "print", t.clone()),
            MetaEntry::Gprint(t) => (&mut gprints, "gprint", t.clone()),
            MetaEntry::Comment(t) => (&mut gprints, "comment", t.clone()),
            MetaEntry::Line(t) => (&mut gprints, "line", trim_c_space(t).to_string()),
            MetaEntry::Area(t) => (&mut gprints, "area", t.clone()),
            MetaEntry::Align(a) => (&mut gprints, "align", a.to_string()),
            MetaEntry::Hrule => (&mut rules, "hrule", value_e(0.0)),
            MetaEntry::Vrule(t) => (&mut rules, "vrule", t.clone()),
        };
        let line = if json {
            format!(",\n        {{ \"{tag}\": \"{text}\" }}")
        } else {
            format!("        <{tag}>{text}</{tag}>\n")
        };
        list.push_str(&cut(line, 255));
    }
    (prints, gprints, rules)
}

fn write_xml(t: &Table, meta: &[MetaEntry], enum_ds: bool) -> String {
    let cols = t.legends.len();
    let mut s = String::with_capacity(1024 + (12 + 19 * cols) * (1 + t.rows()));
    s.push_str("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n\n<xport>\n  <meta>\n");
    s.push_str(&format!("    <start>{}</start>\n", t.time(t.start + t.step, 1024)));
    s.push_str(&format!("    <end>{}</end>\n", t.time(t.end, 1024)));
    s.push_str(&format!("    <step>{}</step>\n", t.step));
    s.push_str(&format!("    <rows>{}</rows>\n", t.rows()));
    s.push_str(&format!("    <columns>{cols}</columns>\n"));
    s.push_str("    <legend>\n");
    for legend in &t.legends {
        s.push_str(&cut(format!("      <entry>{}</entry>\n", trim_c_space(legend)), 255));
    }
    s.push_str("    </legend>\n");
    let (prints, gprints, rules) = meta_lists(meta, false);
    for (name, list) in [("prints", prints), ("gprints", gprints), ("rules", rules)] {
        if !list.is_empty() {
            s.push_str(&format!("    <{name}>\n{list}    </{name}>\n"));
        }
    }
    s.push_str("  </meta>\n  <data>\n");
    for row in 0..t.rows() {
        s.push_str(&format!("    <row><t>{}</t>", t.time(t.start + (row as i64 + 1) * t.step, 1024)));
        for (j, &v) in t.data[row * cols..(row + 1) * cols].iter().enumerate() {
            let text = if v.is_nan() { "NaN".to_string() } else { value_e(v) };
            if enum_ds {
                s.push_str(&format!("<v{j}>{text}</v{j}>"));
            } else {
                s.push_str(&format!("<v>{text}</v>"));
            }
        }
        s.push_str("</row>\n");
    }
    s.push_str("  </data>\n</xport>\n");
    s
}

fn write_json(t: &Table, meta: &[MetaEntry], show_time: bool) -> String {
    let cols = t.legends.len();
    let mut s = String::with_capacity(1024 + (12 + 19 * cols) * (1 + t.rows()));
    s.push_str("{ \"about\": \"RRDtool graph JSON output\",\n  \"meta\": {\n");
    // Under a label format the times are strings.
    let quoted = |v: String| if t.timefmt.is_some() { format!("\"{v}\"") } else { v };
    s.push_str(&format!("    \"start\": {},\n", quoted(t.time(t.start + t.step, 1024))));
    s.push_str(&format!("    \"end\": {},\n", quoted(t.time(t.end, 1024))));
    s.push_str(&format!("    \"step\": {},\n", t.step));
    s.push_str("    \"legend\": [\n");
    for (j, legend) in t.legends.iter().enumerate() {
        s.push_str(&cut(format!("      \"{}\"", trim_c_space(legend)), 255));
        if j + 1 < cols {
            s.push(',');
        }
        s.push('\n');
    }
    s.push_str("          ]\n");
    let (prints, gprints, rules) = meta_lists(meta, true);
    // Each list is written without its first ",\n".
    if !prints.is_empty() {
        s.push_str(&format!("    \"prints\": [\n{}\n        ],\n", &prints[2..]));
    }
    if !gprints.is_empty() {
        s.push_str(&format!("    ,\"gprints\": [\n{}\n        ]\n", &gprints[2..]));
    }
    if !rules.is_empty() {
        s.push_str(&format!("    ,\"rules\": [\n{}\n        ]\n", &rules[2..]));
    }
    s.push_str("     },\n  \"data\": [\n");
    let rows = t.rows();
    for row in 0..rows {
        s.push_str("    [ ");
        if show_time {
            s.push_str(&format!("\"{}\",", t.time(t.start + (row as i64 + 1) * t.step, 1024)));
        }
        for (j, &v) in t.data[row * cols..(row + 1) * cols].iter().enumerate() {
            if v.is_nan() || v.is_infinite() {
                s.push_str("null");
            } else {
                s.push_str(&value_e(v));
            }
            if j + 1 < cols {
                s.push_str(", ");
            }
        }
        s.push_str(if row + 1 < rows { " ],\n" } else { " ]\n" });
    }
    s.push_str("  ]\n}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            start: 900,
            end: 1800,
            step: 300,
            legends: vec!["  in".into(), "out".into()],
            data: vec![1.5, f64::NAN, -2.0, f64::INFINITY, 0.0, 3.0],
            timefmt: None,
        }
    }

    #[test]
    fn separated_values_quote_everything_and_end_lines_with_crlf() {
        let csv = String::from_utf8(write(DataFormat::Csv, &table(), &[]).0).unwrap();
        assert_eq!(
            csv,
            "\"time\",\"in\",\"out\"\r\n1200,\"1.5000000000e+00\",\"NaN\"\r\n\
             1500,\"-2.0000000000e+00\",\"inf\"\r\n1800,\"0.0000000000e+00\",\"3.0000000000e+00\"\r\n"
        );
        let ssv = String::from_utf8(write(DataFormat::Ssv, &table(), &[]).0).unwrap();
        assert!(ssv.starts_with("\"time\";\"in\";\"out\"\r\n1200;"));
    }

    #[test]
    fn json_meta_lists_and_escaping() {
        let meta = vec![
            MetaEntry::Print(escape_json("a\"b\\")),
            MetaEntry::Line("  l".into()),
            MetaEntry::Area("  a\"".into()),
            MetaEntry::Hrule,
        ];
        let json = String::from_utf8(write(DataFormat::JsonTime, &table(), &meta).0).unwrap();
        assert!(json.contains(
            "          ]\n    \"prints\": [\n        { \"print\": \"a\\\"b\\\\\" }\n        ],\n    ,\"gprints\": [\n        { \"line\": \"l\" },\n        { \"area\": \"  a\"\" }\n        ]\n    ,\"rules\": [\n        { \"hrule\": \"0.0000000000e+00\" }\n        ]\n     },\n"
        ));
        assert!(json.contains("    [ \"1500\",-2.0000000000e+00, null ],\n"));
        assert!(json.ends_with("    [ \"1800\",0.0000000000e+00, 3.0000000000e+00 ]\n  ]\n}\n"));
    }

    #[test]
    fn a_label_format_prints_times_through_strftime() {
        // `%s` is the epoch seconds in any time zone.
        let t = Table { timefmt: Some("%s!".into()), ..table() };
        let csv = String::from_utf8(write(DataFormat::Csv, &t, &[]).0).unwrap();
        assert!(csv.contains("\r\n1200!,\"1.5000000000e+00\""), "{csv}");
        let json = String::from_utf8(write(DataFormat::JsonTime, &t, &[]).0).unwrap();
        assert!(json.contains("    \"start\": \"1200!\",\n    \"end\": \"1800!\",\n"), "{json}");
        assert!(json.contains("    [ \"1500!\",-2.0000000000e+00, null ],\n"), "{json}");
        let xml = String::from_utf8(write(DataFormat::Xml, &t, &[]).0).unwrap();
        assert!(xml.contains("<start>1200!</start>") && xml.contains("<row><t>1800!</t>"), "{xml}");
    }

    #[test]
    fn xml_enum_numbers_the_value_tags() {
        let xml = String::from_utf8(write(DataFormat::XmlEnum, &table(), &[MetaEntry::Vrule("0".into())]).0)
            .unwrap();
        assert!(xml.contains("    <rules>\n        <vrule>0</vrule>\n    </rules>\n  </meta>\n"));
        assert!(xml.contains("    <row><t>1200</t><v0>1.5000000000e+00</v0><v1>NaN</v1></row>\n"));
    }
}
