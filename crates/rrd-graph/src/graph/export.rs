//! A graph with a data format (`-a CSV|TSV|SSV|XML|XMLENUM|JSON|JSONTIME`):
//! its LINE/AREA/STACK series exported as rrdtool's `rrd_graph_xport`
//! does, instead of drawn.

use super::*;

pub(super) fn data_format(f: ImageFormat) -> Option<DataFormat> {
    match f {
        ImageFormat::Data(d) => Some(d),
        ImageFormat::Png | ImageFormat::Svg | ImageFormat::Pdf | ImageFormat::Eps => None,
    }
}

/// RRDtool's `rrd_graph_xport`: the series of every LINE, AREA and STACK
/// exported at the greatest common divisor of their steps over the graph's
/// range (aligned to it), with graphv's `graph_start`, `graph_end`,
/// `graph_step` and `print[i]`.
// Follows RRDtool's rrd_graph_xport step by step.
#[allow(clippy::too_many_lines)]
pub(super) fn render_data(
    mut im: Image<'_>,
    data: Evaluation,
    format: DataFormat,
    now: i64,
) -> Result<GraphOutput> {
    struct Column<'s> {
        start: i64,
        step: i64,
        values: std::borrow::Cow<'s, [f64]>,
    }
    let mut columns: Vec<Column<'_>> = Vec::new();
    let mut legends = Vec::new();
    for item in &im.items {
        let value = match &item.el.kind {
            Kind::Plot(p) if p.tick.is_none() => &p.value,
            Kind::Xport { vname } => &ValueRef::Var(vname.clone()),
            _ => continue,
        };
        let column = match value {
            ValueRef::Var(name) => match data.get(name) {
                Some(Variable::Series(s)) => Column {
                    start: s.start,
                    step: s.step_secs,
                    values: std::borrow::Cow::Borrowed(&s.values),
                },
                _ => return Err(GraphError::invalid(format!("{name} is not a DEF or CDEF"))),
            },
            // RRDtool reads outside its element list here; rrdscale
            // exports the constant at the graph's step.
            ValueRef::Number(n) => {
                let step = data.global_step_secs.max(1);
                let start = im.start - im.start.rem_euclid(step);
                let rows = ((im.end - start) / step + 1).max(0) as usize;
                Column { start, step, values: std::borrow::Cow::Owned(vec![*n; rows]) }
            }
        };
        columns.push(column);
        legends.push(item.el.legend.clone());
    }
    if columns.is_empty() {
        return Err(GraphError::invalid("no XPORT found, nothing to do"));
    }
    let step = columns.iter().fold(0i64, |g, c| gcd(g, c.step));
    if step <= 0 {
        return Err(GraphError::invalid("xport step is zero"));
    }
    let start = im.start - im.start % step;
    let mut end = im.end - im.end % step;
    if im.end > end {
        end += step;
    }
    let rows = ((end - start) / step).max(0);
    if rows as u128 * columns.len() as u128 > rrd_engine::fetch::MAX_FETCH_VALUES as u128 {
        return Err(GraphError::invalid(format!("xport needs {rows} rows, more than rrdscale exports")));
    }
    let mut table_data = Vec::with_capacity(rows as usize * columns.len());
    for row in 0..rows {
        let t = start + row * step;
        for c in &columns {
            let index = ((t - c.start) as f64 / c.step as f64).floor();
            let v = if index >= 0.0 { c.values.get(index as usize).copied() } else { None };
            table_data.push(v.unwrap_or(f64::NAN));
        }
    }
    drop(columns);
    // RRDtool prints times through the `--x-grid` label format when one is
    // given; rrdscale's options have no custom x grid yet.
    let timefmt: Option<String> = None;
    let table = Table { start, end, step, legends, data: table_data, timefmt: timefmt.clone() };

    let mut meta = Vec::new();
    let with_meta = !matches!(format, DataFormat::Csv | DataFormat::Tsv | DataFormat::Ssv);
    if with_meta {
        let mut prints = Vec::new();
        im.print_calc(&data, &mut prints, now, PrintPass::XportMeta)?;
        let mut prints = prints.into_iter();
        let json = matches!(format, DataFormat::Json | DataFormat::JsonTime);
        // RRDtool formats PRINT/GPRINT/COMMENT texts (and rule values) in
        // one buffer that keeps its last text: a strftime of a VDEF without
        // a time writes its dashes elsewhere and prints that last text, and
        // in JSON the buffer is escaped in place.
        let mut last = String::new();
        fn keep(last: &mut String, text: String, escape: bool) -> String {
            *last = if escape { dataformat::escape_json(&text) } else { text };
            last.clone()
        }
        for item in &im.items {
            meta.push(match &item.el.kind {
                Kind::Print { vname, format: style, graph, .. } => {
                    let computed =
                        if *graph { item.legend.clone() } else { prints.next().unwrap_or_default() };
                    let never = matches!(style, PrintStyle::Strftime(_))
                        && matches!(data.get(vname), Some(Variable::Value(v)) if v.when.is_none());
                    let text = if never {
                        let stale = last.clone();
                        keep(&mut last, stale, json)
                    } else {
                        keep(&mut last, computed, json)
                    };
                    if *graph {
                        MetaEntry::Gprint(text)
                    } else {
                        MetaEntry::Print(text)
                    }
                }
                Kind::Comment if json => MetaEntry::Comment(keep(&mut last, item.el.legend.clone(), true)),
                Kind::Comment => MetaEntry::Comment(item.el.legend.clone()),
                Kind::Plot(p) if p.tick.is_some() => continue,
                Kind::Plot(p) if p.is_area => MetaEntry::Area(item.el.legend.clone()),
                Kind::Plot(_) => MetaEntry::Line(item.el.legend.clone()),
                Kind::TextAlign(a) => MetaEntry::Align(match a {
                    Align::Left => "left",
                    Align::Right => "right",
                    Align::Center => "center",
                    Align::Justified => "justified",
                }),
                Kind::HRule { .. } => {
                    keep(&mut last, rrd_lang::cformat::rrd_snprintf_e(0.0, 10), false);
                    MetaEntry::Hrule
                }
                Kind::VRule { value, .. } => {
                    // The time as parsed (a VDEF's is not known yet here).
                    let xrule = match value {
                        ValueRef::Number(n) => *n as i64,
                        ValueRef::Var(_) => 0,
                    };
                    let text = match &timefmt {
                        Some(f) => timefmt::strftime_local_in(f, xrule, 254),
                        None => "0".to_string(),
                    };
                    MetaEntry::Vrule(keep(&mut last, text, false))
                }
                Kind::Data { .. } | Kind::Shift | Kind::Xport { .. } => continue,
            });
        }
    }
    let (image, file_image) = dataformat::write(format, &table, &meta);
    let mut info: Vec<(String, InfoValue)> = vec![
        ("graph_start".into(), InfoValue::Count(start)),
        ("graph_end".into(), InfoValue::Count(end)),
        ("graph_step".into(), InfoValue::Count(step)),
    ];
    let mut prints = Vec::new();
    let pass = if with_meta { PrintPass::AfterXport } else { PrintPass::Graph };
    im.print_calc(&data, &mut prints, now, pass)?;
    for (i, p) in prints.iter().enumerate() {
        info.push((format!("print[{i}]"), InfoValue::Text(p.clone())));
    }
    Ok(GraphOutput { info, prints, image: Some(image), file_image, image_width: 0, image_height: 0, data })
}

pub(super) fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
