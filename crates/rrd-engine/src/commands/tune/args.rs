//! tune's command line as rrdtool reads it: a port of the `optparse`
//! rrdtool bundles, shared by `rrdscale tune` and the daemon's TUNE (whose
//! arguments are the client's whole command line, as rrdtool's client
//! sends it).
//!
//! rrdtool parses tune's options with its bundled `optparse`, not with
//! getopt, and scripts see the difference: long options must be spelled in
//! full (no unambiguous prefixes), options and operands mix freely (the
//! operands are moved behind the options), and the arguments are parsed
//! twice, once to find the file name and once to apply the options in
//! order after the file is open. The same command line picks the same
//! file, applies the same options and fails with the same message at the
//! same point.

use std::path::Path;

use super::{finish_modify_in, TuneOption, Tuner};
use crate::error::{Error, Result};
use crate::store::Store;

/// tune's options: long name and short letter (all take an argument).
const LONG_OPTIONS: &[(&str, char)] = &[
    ("heartbeat", 'h'),
    ("minimum", 'i'),
    ("maximum", 'a'),
    ("data-source-type", 'd'),
    ("data-source-rename", 'r'),
    ("deltapos", 'p'),
    ("deltaneg", 'n'),
    ("window-length", 'w'),
    ("failure-threshold", 'f'),
    ("alpha", 'x'),
    ("beta", 'y'),
    ("gamma", 'z'),
    ("gamma-deviation", 'v'),
    ("smoothing-window", 's'),
    ("smoothing-window-deviation", 'S'),
    ("aberrant-reset", 'b'),
    ("step", 't'),
    ("daemon", 'D'),
];

/// What one step of the parser found.
#[derive(Debug, PartialEq)]
enum Event {
    End,
    Option(char, String),
    Error(String),
}

/// A port of the `optparse` rrdtool bundles (permuting, long options by
/// exact name, every option taking an argument).
struct OptParse {
    /// The arguments, with the program name first and room past the end:
    /// permuting can move an argument into the `argv[argc]` slot.
    argv: Vec<Option<String>>,
    argc: usize,
    optind: usize,
    subopt: usize,
}

impl OptParse {
    fn new(args: &[String]) -> OptParse {
        let mut argv: Vec<Option<String>> = vec![Some("tune".to_string())];
        argv.extend(args.iter().cloned().map(Some));
        let argc = argv.len();
        argv.extend([None, None]);
        OptParse { argv, argc, optind: 1, subopt: 0 }
    }

    fn restart(&mut self) {
        self.optind = 1;
        self.subopt = 0;
    }

    fn arg(&self, i: usize) -> Option<String> {
        if i < self.argc {
            self.argv[i].clone()
        } else {
            None
        }
    }

    fn permute(&mut self, index: usize) {
        let last = (self.optind - 1).min(self.argv.len() - 1);
        let nonoption = self.argv[index].take();
        for i in index..last {
            self.argv[i] = self.argv[i + 1].take();
        }
        self.argv[last] = nonoption;
    }

    fn next(&mut self) -> Event {
        let Some(option) = self.arg(self.optind) else { return Event::End };
        if option == "--" {
            self.optind += 1;
            return Event::End;
        }
        let is_short = option.len() > 1 && option.starts_with('-') && !option.starts_with("--");
        if is_short {
            return self.next_short(&option);
        }
        let is_long = option.len() > 2 && option.starts_with("--");
        if !is_long {
            // A non-option: parse what follows, then move it behind.
            let index = self.optind;
            self.optind += 1;
            let event = self.next();
            self.permute(index);
            self.optind -= 1;
            return event;
        }
        let body = &option[2..];
        self.optind += 1;
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let Some(&(long, short)) = LONG_OPTIONS.iter().find(|(l, _)| *l == name) else {
            return Event::Error(format!("invalid option -- '{body}'"));
        };
        let value = match inline {
            Some(v) => v,
            None => {
                let v = self.arg(self.optind);
                self.optind += 1;
                match v {
                    Some(v) => v,
                    None => return Event::Error(format!("option requires argument -- '{long}'")),
                }
            }
        };
        Event::Option(short, value)
    }

    fn next_short(&mut self, option: &str) -> Event {
        let rest = &option[1 + self.subopt..];
        let c = rest.chars().next().unwrap_or('\0');
        let after = &rest[c.len_utf8()..];
        if !LONG_OPTIONS.iter().any(|(_, s)| *s == c) {
            self.optind += 1;
            return Event::Error(format!("invalid option -- '{c}'"));
        }
        self.subopt = 0;
        self.optind += 1;
        if !after.is_empty() {
            return Event::Option(c, after.to_string());
        }
        match self.arg(self.optind) {
            Some(v) => {
                self.optind += 1;
                Event::Option(c, v)
            }
            None => Event::Error(format!("option requires an argument -- '{c}'")),
        }
    }
}

fn tune_option(c: char, v: String) -> TuneOption {
    match c {
        'h' => TuneOption::Heartbeat(v),
        'i' => TuneOption::Minimum(v),
        'a' => TuneOption::Maximum(v),
        'd' => TuneOption::DataSourceType(v),
        'r' => TuneOption::DataSourceRename(v),
        'p' => TuneOption::DeltaPos(v),
        'n' => TuneOption::DeltaNeg(v),
        'w' => TuneOption::WindowLength(v),
        'f' => TuneOption::FailureThreshold(v),
        'x' => TuneOption::Alpha(v),
        'y' => TuneOption::Beta(v),
        'z' => TuneOption::Gamma(v),
        'v' => TuneOption::GammaDeviation(v),
        's' => TuneOption::SmoothingWindow(v),
        'S' => TuneOption::SmoothingWindowDeviation(v),
        'b' => TuneOption::AberrantReset(v),
        't' => TuneOption::Step(v),
        _ => TuneOption::Daemon(v),
    }
}

/// What the first pass over a command line found.
#[derive(Debug, Default, PartialEq)]
pub struct Scan {
    /// The last `--daemon|-D` given.
    pub daemon: Option<String>,
    /// The first operand (the file), `None` when there is none.
    pub file: Option<String>,
}

/// One tune command line, parsed the way rrdtool parses it.
pub struct CommandLine {
    parser: OptParse,
}

impl CommandLine {
    /// `args`: the arguments after the command's name (`argv[1..]`).
    pub fn new(args: &[String]) -> CommandLine {
        CommandLine { parser: OptParse::new(args) }
    }

    /// The first pass: the daemon option and the file name (option errors
    /// wait for [`CommandLine::apply`]).
    pub fn scan(&mut self) -> Scan {
        let mut scan = Scan::default();
        self.parser.restart();
        loop {
            match self.parser.next() {
                Event::End => break,
                Event::Option('D', v) => scan.daemon = Some(v),
                _ => {}
            }
        }
        let p = &self.parser;
        if p.optind > 0 && p.optind < p.argc {
            scan.file = p.argv[p.optind].clone();
        }
        scan
    }

    /// The command line as the parser has arranged it so far, `tune` first
    /// (after [`CommandLine::scan`]: options first, then the operands, as
    /// rrdtool's client sends it to a daemon's TUNE).
    pub fn argv(&self) -> Vec<String> {
        self.parser.argv[..self.parser.argc].iter().flatten().cloned().collect()
    }

    /// The second pass: the options applied in order to `tuner` (what was
    /// applied before a failure stays applied, as it does in rrdtool's
    /// memory-mapped file), the header written back, then the structural
    /// arguments (the operands after the first) applied to the file at
    /// `path`.
    pub fn apply<S: Store>(&mut self, tuner: &mut Tuner<S>, path: &Path) -> Result<()> {
        self.apply_in(tuner, &crate::root::Root::Anywhere, path)
    }

    /// [`CommandLine::apply`] whose structural rewrite is made beneath
    /// `root` (`finish_modify_in`).
    pub fn apply_in<S: Store>(
        &mut self,
        tuner: &mut Tuner<S>,
        root: &crate::root::Root,
        path: &Path,
    ) -> Result<()> {
        self.parser.restart();
        loop {
            let failure = match self.parser.next() {
                Event::End => break,
                Event::Option(c, v) => tuner.apply(&tune_option(c, v)).err(),
                Event::Error(msg) => Some(Error::Invalid(msg)),
            };
            if let Some(e) = failure {
                tuner.write_header()?;
                return Err(e);
            }
        }
        tuner.write_header()?;
        let p = &self.parser;
        let structural: Vec<String> = (p.optind + 1..p.argc).map_while(|i| p.argv[i].clone()).collect();
        finish_modify_in(tuner, root, path, &structural)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(args: &[&str]) -> (Vec<Event>, Vec<Option<String>>, usize) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut p = OptParse::new(&args);
        let mut out = Vec::new();
        loop {
            match p.next() {
                Event::End => break,
                e => out.push(e),
            }
        }
        let argc = p.argc;
        (out, p.argv[..argc].to_vec(), p.optind)
    }

    fn some(v: &[&str]) -> Vec<Option<String>> {
        v.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn operands_move_behind_the_options() {
        let (ev, argv, optind) = events(&["f.rrd", "DS:x:GAUGE:1:U:U", "-h", "a:5", "--step=100"]);
        assert_eq!(ev, [Event::Option('h', "a:5".into()), Event::Option('t', "100".into())]);
        assert_eq!(argv, some(&["tune", "-h", "a:5", "--step=100", "f.rrd", "DS:x:GAUGE:1:U:U"]));
        assert_eq!(optind, 4);
    }

    #[test]
    fn long_options_need_their_full_name() {
        let (ev, _, _) = events(&["f", "--heart", "a:1", "-q", "-ha:2"]);
        assert_eq!(
            ev,
            [
                Event::Error("invalid option -- 'heart'".into()),
                Event::Error("invalid option -- 'q'".into()),
                Event::Option('h', "a:2".into())
            ]
        );
        let (ev, _, _) = events(&["f", "-h"]);
        assert_eq!(ev, [Event::Error("option requires an argument -- 'h'".into())]);
    }

    #[test]
    fn a_trailing_long_option_without_value_loses_the_file_name() {
        // rrdtool then reports "missing file name".
        let args: Vec<String> = ["f.rrd", "--heartbeat"].iter().map(|s| s.to_string()).collect();
        let mut p = OptParse::new(&args);
        while p.next() != Event::End {}
        assert!(p.optind >= p.argc);
    }
}
