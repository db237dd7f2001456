//! VDEF: RRDtool's functions that reduce a DEF or CDEF to one value (and,
//! for some, the time of that value): their names, the parsing of
//! `source,[param,]FUNCTION` and the arithmetic.

use super::eval::Series;
use super::parse::{Element, Names};
use super::VdefValue;
use crate::error::{Error, Result};
use crate::fetch::FILL_NAN;
use crate::numparse::rrd_strtod;

/// The VDEF functions of RRDtool 1.7.2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum VdefOp {
    Percent,
    PercentNan,
    Maximum,
    Average,
    Stdev,
    Minimum,
    Total,
    First,
    Last,
    LslSlope,
    LslInt,
    LslCorrel,
}

impl VdefOp {
    fn from_name(name: &str) -> Option<VdefOp> {
        Some(match name {
            "PERCENT" => VdefOp::Percent,
            "PERCENTNAN" => VdefOp::PercentNan,
            "MAXIMUM" => VdefOp::Maximum,
            "AVERAGE" => VdefOp::Average,
            "STDEV" => VdefOp::Stdev,
            "MINIMUM" => VdefOp::Minimum,
            "TOTAL" => VdefOp::Total,
            "FIRST" => VdefOp::First,
            "LAST" => VdefOp::Last,
            "LSLSLOPE" => VdefOp::LslSlope,
            "LSLINT" => VdefOp::LslInt,
            "LSLCORREL" => VdefOp::LslCorrel,
            _ => return None,
        })
    }
}

/// Parses a VDEF's `source,FUNCTION` or `source,param,FUNCTION` as
/// RRDtool's `parse_vdef` and `vdef_parse` do, with their messages.
pub(super) fn parse_vdef(vname: &str, body: &str, names: &Names, parsed: &[Element]) -> Result<Element> {
    let Some((source, function)) = body.split_once(',') else {
        return Err(Error::invalid(format!("Comma expected in VDEF definition {body}")));
    };
    let var = names
        .position(source)
        .ok_or_else(|| Error::invalid(format!("Not a valid vname: {source} in line {body}")))?;
    if !matches!(parsed[var], Element::Def(_) | Element::Cdef(_)) {
        return Err(Error::invalid(format!("variable '{source}' not DEF nor CDEF in VDEF '{body}'")));
    }
    let is_func = |s: &str| !s.is_empty() && s.len() <= 29 && s.bytes().all(|c| c.is_ascii_uppercase());
    let (param, name) = match function.split_once(',') {
        Some((p, f))
            if !p.is_empty()
                && p.len() <= 40
                && p.bytes().all(|c| c.is_ascii_digit() || b".e+-".contains(&c))
                && rrd_strtod(p).1 == p.len()
                && is_func(f) =>
        {
            (rrd_strtod(p).0, f)
        }
        _ if is_func(function) => (f64::NAN, function),
        _ => return Err(Error::invalid(format!("Unknown function string '{function}' in VDEF '{vname}'"))),
    };
    let op = VdefOp::from_name(name)
        .ok_or_else(|| Error::invalid(format!("Unknown function '{name}' in VDEF '{vname}'\n")))?;
    match op {
        VdefOp::Percent | VdefOp::PercentNan => {
            if param.is_nan() {
                return Err(Error::invalid(format!("Function '{name}' needs parameter in VDEF '{vname}'\n")));
            }
            if !(0.0..=100.0).contains(&param) {
                return Err(Error::invalid(format!(
                    "Parameter '{param:.6}' out of range in VDEF '{vname}'\n"
                )));
            }
        }
        _ if !param.is_nan() => {
            return Err(Error::invalid(format!("Function '{name}' needs no parameter in VDEF '{vname}'\n")))
        }
        _ => {}
    }
    Ok(Element::Vdef { var, op, param })
}

/// RRDtool's `vdef_calc` over the rows of `src`.
pub(super) fn vdef_calc(src: &Series, op: VdefOp, param: f64) -> VdefValue {
    let rows: Vec<f64> = (0..src.rows()).map(|r| src.value(r)).collect();
    let end_of = |row: usize| Some(src.start + (row as i64 + 1) * src.step);
    let none = |value: f64| VdefValue { value, when: None };
    match op {
        VdefOp::Percent | VdefOp::PercentNan => {
            let mut sorted: Vec<f64> =
                rows.iter().copied().filter(|v| op == VdefOp::Percent || !v.is_nan()).collect();
            if sorted.is_empty() {
                return none(FILL_NAN);
            }
            // RRDtool's order: unknown first, then -inf, finite values, +inf.
            let rank = |v: f64| match () {
                _ if v.is_nan() => 0,
                _ if v == f64::NEG_INFINITY => 1,
                _ if v == f64::INFINITY => 3,
                _ => 2,
            };
            sorted.sort_by(|a, b| {
                rank(*a).cmp(&rank(*b)).then(a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal))
            });
            let field = (param * (sorted.len() - 1) as f64 / 100.0).round() as usize;
            none(sorted[field.min(sorted.len() - 1)])
        }
        VdefOp::Maximum | VdefOp::Minimum => {
            let Some(first) = rows.iter().position(|v| !v.is_nan()) else {
                return none(FILL_NAN);
            };
            let mut best = VdefValue { value: rows[first], when: end_of(first) };
            for (row, &v) in rows.iter().enumerate().skip(first) {
                let better = if op == VdefOp::Maximum { v > best.value } else { v < best.value };
                if v.is_finite() && better {
                    best = VdefValue { value: v, when: end_of(row) };
                }
            }
            best
        }
        VdefOp::Total | VdefOp::Average | VdefOp::Stdev => {
            let finite: Vec<f64> = rows.iter().copied().filter(|v| v.is_finite()).collect();
            if finite.is_empty() {
                return none(FILL_NAN);
            }
            let sum: f64 = finite.iter().sum();
            let count = finite.len() as f64;
            none(match op {
                VdefOp::Total => sum * src.step as f64,
                VdefOp::Average => sum / count,
                _ => {
                    let average = sum / count;
                    let squares: f64 = finite.iter().map(|v| (v - average).powi(2)).sum();
                    (squares / count).sqrt()
                }
            })
        }
        VdefOp::First => match rows.iter().position(|v| !v.is_nan()) {
            Some(row) => VdefValue { value: rows[row], when: Some(src.start + row as i64 * src.step) },
            None => none(FILL_NAN),
        },
        VdefOp::Last => match rows.iter().rposition(|v| !v.is_nan()) {
            Some(row) => VdefValue { value: rows[row], when: end_of(row) },
            None => none(FILL_NAN),
        },
        VdefOp::LslSlope | VdefOp::LslInt | VdefOp::LslCorrel => {
            let (mut n, mut sx, mut sy, mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            for (x, &y) in rows.iter().enumerate() {
                if y.is_finite() {
                    let x = x as f64;
                    n += 1.0;
                    sx += x;
                    sxx += x * x;
                    sxy += x * y;
                    sy += y;
                    syy += y * y;
                }
            }
            if n == 0.0 {
                return none(FILL_NAN);
            }
            let slope = (sx * sy - n * sxy) / (sx * sx - n * sxx);
            none(match op {
                VdefOp::LslSlope => slope,
                VdefOp::LslInt => (sy - slope * sx) / n,
                _ => (sxy - sx * sy / n) / ((sxx - sx * sx / n) * (syy - sy * sy / n)).sqrt(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::eval::test_series as series;
    use super::*;
    use crate::rpn::{Node, Program};

    #[test]
    fn vdef_functions_reduce_a_series() {
        let s = series(1000, 100, &[3.0, f64::NAN, 7.0, 1.0, f64::NAN]);
        let v = |op, param| vdef_calc(&s, op, param);
        assert_eq!(v(VdefOp::Maximum, f64::NAN), VdefValue { value: 7.0, when: Some(1300) });
        assert_eq!(v(VdefOp::Minimum, f64::NAN), VdefValue { value: 1.0, when: Some(1400) });
        assert_eq!(v(VdefOp::First, f64::NAN), VdefValue { value: 3.0, when: Some(1000) });
        assert_eq!(v(VdefOp::Last, f64::NAN), VdefValue { value: 1.0, when: Some(1400) });
        assert_eq!(v(VdefOp::Average, f64::NAN).value, 11.0 / 3.0);
        assert_eq!(v(VdefOp::Total, f64::NAN).value, 1100.0);
        assert_eq!(v(VdefOp::PercentNan, 50.0).value, 3.0);
        // PERCENT counts unknown rows (sorted first).
        assert_eq!(v(VdefOp::Percent, 100.0).value, 7.0);
        assert!(v(VdefOp::Percent, 0.0).value.is_nan());
        let empty = series(0, 10, &[f64::NAN, f64::NAN]);
        assert_eq!(vdef_calc(&empty, VdefOp::Maximum, f64::NAN).when, None);
        assert!(vdef_calc(&empty, VdefOp::Average, f64::NAN).value.is_nan());
    }

    #[test]
    fn vdef_parse_messages_are_rrdtools() {
        let names = Names::from(&["a"][..]);
        let parsed = vec![Element::Cdef(Program::from_nodes(vec![Node::Number(1.0)]))];
        let err = |body: &str| parse_vdef("m", body, &names, &parsed).err().unwrap().to_string();
        assert_eq!(err("a"), "Comma expected in VDEF definition a");
        assert_eq!(err("zz,MAXIMUM"), "Not a valid vname: zz in line zz,MAXIMUM");
        assert_eq!(err("a,FOO"), "Unknown function 'FOO' in VDEF 'm'\n");
        assert_eq!(err("a,PERCENT"), "Function 'PERCENT' needs parameter in VDEF 'm'\n");
        assert_eq!(err("a,101,PERCENT"), "Parameter '101.000000' out of range in VDEF 'm'\n");
        assert_eq!(err("a,5,MAXIMUM"), "Function 'MAXIMUM' needs no parameter in VDEF 'm'\n");
        assert_eq!(err("a,MAXIMUM,1"), "Unknown function string 'MAXIMUM,1' in VDEF 'm'");
        assert!(matches!(
            parse_vdef("m", "a,95.5,PERCENT", &names, &parsed),
            Ok(Element::Vdef { var: 0, op: VdefOp::Percent, .. })
        ));
    }
}
