//! GNU getopt_long-style option parsing, as RRDtool's commands use it.
//!
//! rrdtool's subcommands take options anywhere among the operands
//! (`rrdtool fetch f.rrd AVERAGE -s -1d`), values attached or separate
//! (`-s-1d`, `-s -1d`, `--start=-1d`, `--start -1d`) and negative numbers as
//! option values. Scripts rely on all of these, so this parser accepts
//! exactly that grammar instead of a stricter one.

use anyhow::{bail, Result};

/// One option a command accepts.
pub struct Spec {
    pub short: Option<char>,
    pub long: &'static str,
    pub takes_value: bool,
}

pub const fn flag(short: Option<char>, long: &'static str) -> Spec {
    Spec { short, long, takes_value: false }
}

pub const fn value(short: Option<char>, long: &'static str) -> Spec {
    Spec { short, long, takes_value: true }
}

/// Options found (by long name, in order) and operands.
#[derive(Debug, Default)]
pub struct Parsed {
    pub opts: Vec<(&'static str, Option<String>)>,
    pub operands: Vec<String>,
}

impl Parsed {
    pub fn has(&self, long: &str) -> bool {
        self.opts.iter().any(|(l, _)| *l == long)
    }
    /// The last value given for an option.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.opts.iter().rev().find(|(l, _)| *l == long).and_then(|(_, v)| v.as_deref())
    }
    /// Every value given for a repeatable option.
    pub fn values(&self, long: &str) -> Vec<&str> {
        self.opts.iter().filter(|(l, _)| *l == long).filter_map(|(_, v)| v.as_deref()).collect()
    }
}

pub fn parse(args: &[String], specs: &[Spec]) -> Result<Parsed> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            out.operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            // getopt_long accepts unambiguous prefixes of long options.
            let exact = specs.iter().find(|s| s.long == name);
            let candidates: Vec<&Spec> = specs.iter().filter(|s| s.long.starts_with(name)).collect();
            let spec = match (exact, candidates.len()) {
                (Some(s), _) => s,
                (None, 1) => candidates[0],
                (None, 0) => bail!("unrecognized option '--{name}'"),
                _ => bail!("option '--{name}' is ambiguous"),
            };
            let value = if spec.takes_value {
                match inline {
                    Some(v) => Some(v),
                    None if i < args.len() => {
                        i += 1;
                        Some(args[i - 1].clone())
                    }
                    None => bail!("option '--{}' requires an argument", spec.long),
                }
            } else {
                if inline.is_some() {
                    bail!("option '--{}' doesn't allow an argument", spec.long);
                }
                None
            };
            out.opts.push((spec.long, value));
        } else if arg.len() > 1 && arg.starts_with('-') {
            let chars: Vec<char> = arg[1..].chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let Some(spec) = specs.iter().find(|s| s.short == Some(c)) else {
                    bail!("invalid option -- '{c}'");
                };
                if spec.takes_value {
                    let rest: String = chars[j..].iter().collect();
                    let value = if !rest.is_empty() {
                        rest
                    } else if i < args.len() {
                        i += 1;
                        args[i - 1].clone()
                    } else {
                        bail!("option requires an argument -- '{c}'");
                    };
                    out.opts.push((spec.long, Some(value)));
                    break;
                }
                out.opts.push((spec.long, None));
            }
        } else {
            out.operands.push(arg.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    const SPECS: &[Spec] =
        &[value(Some('s'), "start"), value(Some('e'), "end"), flag(Some('a'), "align-start")];

    #[test]
    fn options_mix_with_operands_and_take_negative_values() {
        let p = parse(&s(&["f.rrd", "-s", "-1d", "AVERAGE", "--end=now", "-a"]), SPECS).unwrap();
        assert_eq!(p.operands, s(&["f.rrd", "AVERAGE"]));
        assert_eq!(p.value("start"), Some("-1d"));
        assert_eq!(p.value("end"), Some("now"));
        assert!(p.has("align-start"));
    }

    #[test]
    fn attached_short_values_and_long_prefixes() {
        let p = parse(&s(&["-s-2h", "--al", "--en", "x"]), SPECS).unwrap();
        assert_eq!(p.value("start"), Some("-2h"));
        assert_eq!(p.value("end"), Some("x"));
        assert!(p.has("align-start"));
    }

    #[test]
    fn unknown_and_missing_values_are_errors() {
        assert!(parse(&s(&["-x"]), SPECS).is_err());
        assert!(parse(&s(&["--start"]), SPECS).is_err());
        assert!(parse(&s(&["--bogus"]), SPECS).is_err());
    }
}
