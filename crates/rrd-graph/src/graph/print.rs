//! PRINT and GPRINT (rrdtool's `print_calc`): their text, computed as
//! rrdtool computes it, for the picture, graphv and the data formats.

use super::*;

/// Which of RRDtool's PRINT passes `print_calc` is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum PrintPass {
    /// `print_calc` of a picture.
    Graph,
    /// `rrd_xport_format_addprints`: the XML/JSON meta lists.
    XportMeta,
    /// `print_calc` after the meta lists, whose `%S` became `%s`.
    AfterXport,
}

impl Image<'_> {
    /// PRINT/GPRINT values and texts, rule positions. Returns whether
    /// anything is drawn.
    // Follows RRDtool's print_calc.
    #[allow(clippy::too_many_lines)]
    pub(super) fn print_calc(
        &mut self,
        data: &Evaluation,
        prints: &mut Vec<String>,
        now: i64,
        pass: PrintPass,
    ) -> Result<bool> {
        let base = self.o.base as f64;
        let mut magfact = -1.0;
        let mut symbol: &'static str = "";
        let mut drawn = false;
        let mut tm_time = now;
        for item in &mut self.items {
            match &item.el.kind {
                Kind::Print { vname, cf, format: style, graph } => {
                    // The time `:strftime` shows: the VDEF's (none: dashes);
                    // over a DEF, the last VDEF's printed so far (0 when it
                    // had none), or now, as RRDtool's `tmvdef` carries over.
                    let (mut value, when) = match (data.get(vname), cf) {
                        (Some(Variable::Value(v)), _) => {
                            tm_time = v.when.unwrap_or(0);
                            (v.value, v.when)
                        }
                        (Some(Variable::Series(s)), Some(cf)) => (legacy_print_value(s, *cf), Some(tm_time)),
                        _ => return Err(GraphError::invalid(format!("{vname} is not a vname nor a number"))),
                    };
                    let numeric;
                    let format = match style {
                        PrintStyle::Number(f) => f,
                        // The xport meta lists know only strftime: other
                        // formatters print their format as a number.
                        PrintStyle::ValueTime(f) | PrintStyle::Duration(f)
                            if pass == PrintPass::XportMeta =>
                        {
                            numeric = PrintFormat::parse(f).map_err(|_| {
                                GraphError::invalid(format!("bad format for PRINT in \"{f}'"))
                            })?;
                            &numeric
                        }
                        other => {
                            let text = match other {
                                PrintStyle::Strftime(f) => timefmt::strftime_local(f, when),
                                PrintStyle::ValueTime(f) => {
                                    timefmt::val_strftime(f, value).ok_or_else(|| GraphError::invalid(""))?
                                }
                                PrintStyle::Duration(f) => timefmt::val_strfduration(f, value)?,
                                PrintStyle::Number(_) => unreachable!("matched above"),
                            };
                            if *graph {
                                item.legend = text;
                                drawn = true;
                            } else {
                                prints.push(text);
                            }
                            continue;
                        }
                    };
                    // After an export, RRDtool has turned each %S into %s.
                    if format.shared_scale && pass != PrintPass::AfterXport {
                        // One prefix for every %S of the graph, set by the
                        // first non-zero value (and reset by any %s).
                        if magfact < 0.0 {
                            let (v, s, m) = auto_scale(value, base);
                            value = v;
                            symbol = s;
                            magfact = m;
                            if value == 0.0 {
                                magfact = -1.0;
                            }
                        } else {
                            value /= magfact;
                        }
                    } else if format.has_symbol {
                        let (v, s, m) = auto_scale(value, base);
                        value = v;
                        symbol = s;
                        magfact = m;
                    }
                    // The meta lists are written with RRDtool's own printf.
                    let text = if pass == PrintPass::XportMeta {
                        format.format_rrd(value, symbol)
                    } else {
                        format.format(value, symbol)
                    };
                    if *graph {
                        let mut t = text;
                        // The meta lists format in a larger buffer.
                        if t.len() > GPRINT_MAX && pass != PrintPass::XportMeta {
                            let mut cut = GPRINT_MAX;
                            while !t.is_char_boundary(cut) {
                                cut -= 1;
                            }
                            t.truncate(cut);
                        }
                        item.legend = t;
                        drawn = true;
                    } else {
                        prints.push(text);
                    }
                }
                Kind::Plot(p) => {
                    if let ValueRef::Number(n) = p.value {
                        item.yrule = n;
                    }
                    drawn = true;
                }
                Kind::HRule { value, .. } => {
                    item.yrule = match value {
                        ValueRef::Number(n) => *n,
                        ValueRef::Var(v) => match data.get(v) {
                            Some(Variable::Value(v)) => v.value,
                            _ => f64::NAN,
                        },
                    };
                    drawn = true;
                }
                Kind::VRule { value, .. } => {
                    item.xrule = match value {
                        ValueRef::Number(n) => *n as i64,
                        ValueRef::Var(v) => match data.get(v) {
                            Some(Variable::Value(v)) => v.when.unwrap_or(0),
                            _ => 0,
                        },
                    };
                    drawn = true;
                }
                _ => {}
            }
        }
        Ok(drawn)
    }
}

/// The deprecated `PRINT:vname:CF:format`: the CF over every known row.
pub(super) fn legacy_print_value(s: &SeriesData, cf: Cf) -> f64 {
    let mut value = f64::NAN;
    let mut valid = 0u64;
    for &v in &s.values {
        if !v.is_finite() {
            continue;
        }
        if value.is_nan() {
            value = v;
            valid += 1;
            continue;
        }
        match cf {
            Cf::Minimum => value = value.min(v),
            Cf::Maximum | Cf::Failures => value = value.max(v),
            Cf::Last => value = v,
            _ => {
                valid += 1;
                value += v;
            }
        }
    }
    if !matches!(cf, Cf::Minimum | Cf::Maximum | Cf::Last | Cf::Failures) && valid > 1 {
        value /= valid as f64;
    }
    if value.is_nan() {
        // RRDtool's unknown (printed as "-nan").
        -f64::NAN
    } else {
        value
    }
}
