//! Option parsing as RRDtool 1.7.2's commands do it (its `optparse`:
//! getopt_long-style, but long names only in full, and its own messages).
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

/// rrdtool's option parser keeps its message in 48 bytes (with the NUL):
/// longer ones are cut.
fn optparse_message(mut message: String) -> String {
    let mut cut = message.len().min(47);
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    message.truncate(cut);
    message
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
            // rrdtool 1.7.2's option parser (optparse) matches long names
            // exactly: no abbreviations.
            let Some(spec) = specs.iter().find(|s| s.long == name) else {
                bail!(optparse_message(format!("invalid option -- '{long}'")));
            };
            let value = if spec.takes_value {
                match inline {
                    Some(v) => Some(v),
                    None if i < args.len() => {
                        i += 1;
                        Some(args[i - 1].clone())
                    }
                    None => bail!(optparse_message(format!("option requires argument -- '{}'", spec.long))),
                }
            } else {
                if inline.is_some() {
                    bail!(optparse_message(format!("option takes no arguments -- '{}'", spec.long)));
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
    fn attached_short_values_and_no_long_prefixes() {
        let p = parse(&s(&["-s-2h", "--align-start", "--end", "x"]), SPECS).unwrap();
        assert_eq!(p.value("start"), Some("-2h"));
        assert_eq!(p.value("end"), Some("x"));
        assert!(p.has("align-start"));
        // rrdtool 1.7.2: `invalid option -- 'al'`, as for any unknown name.
        let e = parse(&s(&["--al"]), SPECS).unwrap_err();
        assert_eq!(e.to_string(), "invalid option -- 'al'");
    }

    #[test]
    fn unknown_and_missing_values_are_errors() {
        // rrdtool 1.7.2's texts, cut at 47 bytes as its 48-byte buffer does.
        let text = |a: &[&str]| parse(&s(a), SPECS).unwrap_err().to_string();
        assert_eq!(text(&["-x"]), "invalid option -- 'x'");
        assert_eq!(text(&["--start"]), "option requires argument -- 'start'");
        assert_eq!(text(&["--bogus=1"]), "invalid option -- 'bogus=1'");
        assert_eq!(text(&["--align-start=5"]), "option takes no arguments -- 'align-start'");
        let long = text(&["--aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]);
        assert_eq!(long, "invalid option -- 'aaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    }
}
