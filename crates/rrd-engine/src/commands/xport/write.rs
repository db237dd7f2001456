//! The writers: an [`XportResult`] as `rrdtool xport` prints it, in XML
//! or (`--json`) JSON.

use std::io::{self, Write};

use super::{XportFormat, XportResult};
use rrd_lang::cformat::rrd_snprintf_e;

/// Writes the table as `rrdtool xport` prints its XML.
pub fn write_xml(r: &XportResult, format: XportFormat, out: &mut dyn Write) -> io::Result<()> {
    let mut s = String::with_capacity(512 + r.data.len() * 24);
    s.push_str("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n\n<xport>\n  <meta>\n");
    s.push_str(&format!("    <start>{}</start>\n", r.start + r.step_secs));
    s.push_str(&format!("    <end>{}</end>\n", r.end));
    s.push_str(&format!("    <step>{}</step>\n", r.step_secs));
    s.push_str(&format!("    <rows>{}</rows>\n", r.row_count()));
    s.push_str(&format!("    <columns>{}</columns>\n", r.legends.len()));
    s.push_str("    <legend>\n");
    for legend in &r.legends {
        s.push_str(&format!("      <entry>{}</entry>\n", crate::numparse::trim_c_space(legend)));
    }
    s.push_str("    </legend>\n  </meta>\n  <data>\n");
    for row in 0..r.row_count() {
        s.push_str("    <row>");
        if format.show_time {
            s.push_str(&format!("<t>{}</t>", r.start + (row as i64 + 1) * r.step_secs));
        }
        for (j, v) in r.data[row * r.legends.len()..(row + 1) * r.legends.len()].iter().enumerate() {
            let text = if v.is_nan() { "NaN".to_string() } else { rrd_snprintf_e(*v, 10) };
            if format.enum_ds {
                s.push_str(&format!("<v{j}>{text}</v{j}>"));
            } else {
                s.push_str(&format!("<v>{text}</v>"));
            }
        }
        s.push_str("</row>\n");
        if s.len() > 1 << 16 {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    s.push_str("  </data>\n</xport>\n");
    out.write_all(s.as_bytes())
}

/// Writes the table as `rrdtool xport --json` prints it.
pub fn write_json(r: &XportResult, format: XportFormat, out: &mut dyn Write) -> io::Result<()> {
    let mut s = String::with_capacity(512 + r.data.len() * 20);
    s.push_str("{ \"about\": \"RRDtool graph JSON output\",\n  \"meta\": {\n");
    s.push_str(&format!("    \"start\": {},\n", r.start + r.step_secs));
    s.push_str(&format!("    \"end\": {},\n", r.end));
    s.push_str(&format!("    \"step\": {},\n", r.step_secs));
    s.push_str("    \"legend\": [\n");
    for (j, legend) in r.legends.iter().enumerate() {
        // 1.7.2 writes legends unescaped.
        s.push_str("      \"");
        s.push_str(crate::numparse::trim_c_space(legend));
        s.push('"');
        if j + 1 < r.legends.len() {
            s.push(',');
        }
        s.push('\n');
    }
    s.push_str("          ]\n     },\n  \"data\": [\n");
    let rows = r.row_count();
    let cols = r.legends.len();
    for row in 0..rows {
        s.push_str("    [ ");
        if format.show_time {
            s.push_str(&format!("\"{}\",", r.start + (row as i64 + 1) * r.step_secs));
        }
        for (j, v) in r.data[row * cols..(row + 1) * cols].iter().enumerate() {
            if v.is_nan() || v.is_infinite() {
                s.push_str("null");
            } else {
                s.push_str(&rrd_snprintf_e(*v, 10));
            }
            if j + 1 < cols {
                s.push_str(", ");
            }
        }
        s.push_str(if row + 1 < rows { " ],\n" } else { " ]\n" });
        if s.len() > 1 << 16 {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    s.push_str("  ]\n}\n");
    out.write_all(s.as_bytes())
}
