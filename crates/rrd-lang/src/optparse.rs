//! Option parsing as RRDtool 1.7.2 does it, in one copy for the CLI's
//! commands and the daemon: rrdtool's `optparse` (src/optparse.c), which
//! its commands and rrdcached 1.7.2 (`read_options`) both call through
//! `optparse_long`. Not glibc's `getopt_long`: long names match only in
//! full (`--hel` is `invalid option -- 'hel'`, where getopt_long would take
//! it for `--help`), and the messages are optparse's, kept in its 48-byte
//! buffer (47 bytes and the NUL; longer ones are cut).
//!
//! The grammar: options anywhere among the operands (permutation:
//! `rrdtool fetch f.rrd AVERAGE -s -1d`), values attached or separate
//! (`-s-1d`, `-s -1d`, `--start=-1d`, `--start -1d`), so negative numbers
//! are option values; clustered short flags (`-gF`, `-gw300`); `--` ends
//! the options; a lone `-` is an operand. A short-only option (rrdcached's
//! letters) has no long form: `--w` is invalid.
//!
//! Deliberately absent: what an option means (the caller walks
//! [`Parsed::opts`] in order, which matters where an option applies to
//! the next one, as rrdcached's `-P`/`-s`/`-m` to the next `-l`).

/// One option a command accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub short: Option<char>,
    /// The long name, which is also the key in [`Parsed::opts`].
    pub long: &'static str,
    /// Whether `--long` is accepted (false: a short-only option, whose
    /// `long` is only its key).
    pub long_form: bool,
    pub takes_value: bool,
}

pub const fn flag(short: Option<char>, long: &'static str) -> Spec {
    Spec { short, long, long_form: true, takes_value: false }
}

pub const fn value(short: Option<char>, long: &'static str) -> Spec {
    Spec { short, long, long_form: true, takes_value: true }
}

/// A short-only flag; `key` names it in [`Parsed::opts`].
pub const fn short_flag(short: char, key: &'static str) -> Spec {
    Spec { short: Some(short), long: key, long_form: false, takes_value: false }
}

/// A short-only option with a value; `key` names it in [`Parsed::opts`].
pub const fn short_value(short: char, key: &'static str) -> Spec {
    Spec { short: Some(short), long: key, long_form: false, takes_value: true }
}

/// Options found (by key, in order) and operands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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

/// A refused command line: optparse's message (at most 47 bytes), and
/// what was parsed before the refused word (a caller that acts on options
/// as optparse hands them out, as rrdcached does, acts on those first).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OptError {
    pub message: String,
    pub before: Parsed,
}

/// optparse keeps its message in 48 bytes (with the NUL): longer ones are cut.
fn cut(mut message: String) -> String {
    let mut end = message.len().min(47);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message.truncate(end);
    message
}

/// Parses `args` (without the program and command names) as optparse does.
pub fn parse(args: &[String], specs: &[Spec]) -> Result<Parsed, OptError> {
    let refuse =
        |out: &mut Parsed, message: String| OptError { message: cut(message), before: std::mem::take(out) };
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
            let Some(spec) = specs.iter().find(|s| s.long_form && s.long == name) else {
                return Err(refuse(&mut out, format!("invalid option -- '{long}'")));
            };
            let value = if spec.takes_value {
                match inline {
                    Some(v) => Some(v),
                    None if i < args.len() => {
                        i += 1;
                        Some(args[i - 1].clone())
                    }
                    None => {
                        return Err(refuse(&mut out, format!("option requires argument -- '{}'", spec.long)))
                    }
                }
            } else {
                if inline.is_some() {
                    return Err(refuse(&mut out, format!("option takes no arguments -- '{}'", spec.long)));
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
                    return Err(refuse(&mut out, format!("invalid option -- '{c}'")));
                };
                if spec.takes_value {
                    let rest: String = chars[j..].iter().collect();
                    let value = if !rest.is_empty() {
                        rest
                    } else if i < args.len() {
                        i += 1;
                        args[i - 1].clone()
                    } else {
                        return Err(refuse(&mut out, format!("option requires an argument -- '{c}'")));
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

    const SPECS: &[Spec] = &[
        value(Some('s'), "start"),
        value(Some('e'), "end"),
        flag(Some('a'), "align-start"),
        short_flag('g', "g"),
        short_value('w', "w"),
    ];

    #[test]
    fn options_mix_with_operands_and_take_negative_values() {
        let p = parse(&s(&["f.rrd", "-s", "-1d", "AVERAGE", "--end=now", "-a"]), SPECS).unwrap();
        assert_eq!(p.operands, s(&["f.rrd", "AVERAGE"]));
        assert_eq!(p.value("start"), Some("-1d"));
        assert_eq!(p.value("end"), Some("now"));
        assert!(p.has("align-start"));
        let p = parse(&s(&["x", "--", "-s", "y"]), SPECS).unwrap();
        assert_eq!((p.operands, p.opts.len()), (s(&["x", "-s", "y"]), 0));
        assert_eq!(parse(&s(&["-"]), SPECS).unwrap().operands, s(&["-"]));
    }

    #[test]
    fn attached_short_values_clusters_and_no_long_prefixes() {
        let p = parse(&s(&["-s-2h", "--align-start", "--end", "x", "-gw300", "-gg"]), SPECS).unwrap();
        assert_eq!(p.value("start"), Some("-2h"));
        assert_eq!(p.value("end"), Some("x"));
        assert!(p.has("align-start"));
        assert_eq!(p.opts[3..], [("g", None), ("w", Some("300".into())), ("g", None), ("g", None)]);
        // rrdtool 1.7.2 (and rrdcached: `--hel`): `invalid option -- 'al'`.
        let e = parse(&s(&["-s", "1", "op", "--al", "-g"]), SPECS).unwrap_err();
        assert_eq!(e.to_string(), "invalid option -- 'al'");
        // What came before the refused word, for a caller that acts in order.
        assert_eq!(e.before.opts, [("start", Some("1".into()))]);
        assert_eq!(e.before.operands, s(&["op"]));
        // A short-only option has no long form.
        assert_eq!(parse(&s(&["--w=3"]), SPECS).unwrap_err().to_string(), "invalid option -- 'w=3'");
    }

    #[test]
    fn unknown_and_missing_values_are_errors() {
        // optparse's texts, cut at 47 bytes as its 48-byte buffer does.
        let text = |a: &[&str]| parse(&s(a), SPECS).unwrap_err().to_string();
        assert_eq!(text(&["-x"]), "invalid option -- 'x'");
        assert_eq!(text(&["-g", "-w"]), "option requires an argument -- 'w'");
        assert_eq!(text(&["--start"]), "option requires argument -- 'start'");
        assert_eq!(text(&["--bogus=1"]), "invalid option -- 'bogus=1'");
        assert_eq!(text(&["--align-start=5"]), "option takes no arguments -- 'align-start'");
        let long = text(&["--aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]);
        assert_eq!(long, "invalid option -- 'aaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    }
}
