//! Graph definitions as data: which lines a file is drawn with.
//!
//! `defs.json` (embedded) holds the writers' definitions: collectd's
//! common types (types.db names: `if_octets` as bits and mirrored,
//! `load`, `memory`, `df`, `cpu`, ...), MRTG's `ds0`/`ds1` as in/out in
//! bits/s, Munin's one-DS files (label from the field in the file name,
//! or from munin-update's datafile: see `munin`),
//! Ganglia's `sum`, and a generic definition last (one line per DS, its
//! name as label). `--tree-defs FILE` adds definitions in the same shape,
//! tried before the embedded ones. The first definition whose matchers
//! all hold draws the file; a definition has no code, only matchers,
//! lines and text templates.

use serde::Deserialize;

use super::TreeError;

const EMBEDDED: &str = include_str!("defs.json");

/// The palette lines without a colour take, in order.
pub const PALETTE: [&str; 8] =
    ["0000ff", "00cc00", "ff0000", "ff8800", "8800ff", "00aaaa", "aa00aa", "888800"];

#[derive(Debug, Deserialize)]
struct File {
    defs: Vec<Def>,
}

/// One definition.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Def {
    pub name: String,
    /// collectd types (the file name before its first `-`).
    #[serde(default, rename = "type")]
    pub types: Vec<String>,
    /// A glob on the file name without `.rrd`.
    pub file: Option<String>,
    /// A glob on the parent directory's name.
    pub dir: Option<String>,
    /// DS names the file must have.
    #[serde(default)]
    pub ds: Vec<String>,
    /// The exact number of DS the file must have.
    pub ds_count: Option<usize>,
    /// A group: one picture of every file of a directory whose name
    /// matches (`type`, `file`, `dir`), each drawn with `lines` (a
    /// directory of collectd's per-state `cpu-*.rrd` stacked). Shown
    /// before the files' own thumbnails when two files or more match.
    #[serde(default)]
    pub group: bool,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub vlabel: String,
    pub lines: Vec<Line>,
}

/// One drawn line (or area) of a definition.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    /// A DS name, or `*` for every DS of the file.
    pub ds: String,
    #[serde(default)]
    pub label: String,
    #[serde(default = "line1")]
    pub draw: String,
    pub color: Option<String>,
    #[serde(default = "one")]
    pub scale: f64,
}

fn line1() -> String {
    "LINE1".into()
}

fn one() -> f64 {
    1.0
}

/// What a file offers to the matchers and the text templates.
#[derive(Clone, Debug)]
pub struct Subject<'a> {
    /// The file name without `.rrd`.
    pub file: &'a str,
    /// The parent directory's name (empty at the root).
    pub dir: &'a str,
    pub ds: &'a [String],
}

impl Subject<'_> {
    /// collectd's type and instance: the file name split at its first `-`.
    fn type_instance(&self) -> (&str, &str) {
        self.file.split_once('-').unwrap_or((self.file, ""))
    }

    /// Munin's field: the file name's second field from the right.
    fn field(&self) -> &str {
        self.file.rsplit('-').nth(1).unwrap_or(self.file)
    }

    /// `template` with `{file}`, `{dir}`, `{type}`, `{instance}`,
    /// `{field}` and `{ds}` replaced.
    pub fn fill(&self, template: &str, ds: &str) -> String {
        let (t, i) = self.type_instance();
        template
            .replace("{file}", self.file)
            .replace("{dir}", self.dir)
            .replace("{type}", t)
            .replace("{instance}", i)
            .replace("{field}", self.field())
            .replace("{ds}", ds)
            .trim()
            .to_string()
    }
}

impl Def {
    fn matches(&self, s: &Subject) -> bool {
        self.matches_name(s) && self.ds.iter().all(|d| s.ds.contains(d))
    }

    /// The matchers on names only (a group's, without reading headers).
    fn matches_name(&self, s: &Subject) -> bool {
        (self.types.is_empty() || self.types.iter().any(|t| t == s.type_instance().0))
            && self.file.as_deref().is_none_or(|g| glob(g.as_bytes(), s.file.as_bytes()))
            && self.dir.as_deref().is_none_or(|g| glob(g.as_bytes(), s.dir.as_bytes()))
            && self.ds_count.is_none_or(|n| n == s.ds.len())
    }

    fn check(&self) -> Result<(), TreeError> {
        let bad = |m: String| Err(TreeError::Defs(format!("definition '{}': {m}", self.name)));
        if self.lines.is_empty() {
            return bad("it has no lines".into());
        }
        for l in &self.lines {
            if !matches!(l.draw.as_str(), "LINE1" | "LINE2" | "LINE3" | "AREA" | "STACK") {
                return bad(format!("draw '{}' is not LINE1, LINE2, LINE3, AREA or STACK", l.draw));
            }
            if l.color.as_deref().is_some_and(|c| c.len() != 6 || !c.bytes().all(|b| b.is_ascii_hexdigit())) {
                return bad("a color is six hex digits (RRGGBB)".into());
            }
            if !l.scale.is_finite() || l.scale == 0.0 {
                return bad("a scale is a finite non-zero number".into());
            }
            if l.ds != "*" && !valid_ds(&l.ds) {
                return bad(format!("'{}' is not a DS name", l.ds));
            }
        }
        Ok(())
    }
}

/// rrdtool's DS names: 1 to 19 of `[a-zA-Z0-9_]`.
pub fn valid_ds(s: &str) -> bool {
    (1..=19).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Every definition, the user's first, the generic one last; and the
/// titles MRTG's configuration gives its targets.
pub struct Defs {
    defs: Vec<Def>,
    /// `Title[target]` of `--mrtg-cfg` files, by target (lower case, as
    /// MRTG names its files).
    mrtg_titles: std::collections::HashMap<String, String>,
    /// Munin's datafiles, read when a Munin file is drawn.
    pub munin: super::munin::Datafiles,
}

impl Defs {
    /// The embedded definitions, after those of `user` (a JSON text of
    /// the same shape) when given.
    pub fn load(user: Option<&str>) -> Result<Defs, TreeError> {
        let mut defs = Vec::new();
        if let Some(text) = user {
            let f: File = serde_json::from_str(text).map_err(|e| TreeError::Defs(e.to_string()))?;
            defs.extend(f.defs);
        }
        let f: File = serde_json::from_str(EMBEDDED).map_err(|e| TreeError::Defs(e.to_string()))?;
        defs.extend(f.defs);
        for d in &defs {
            d.check()?;
        }
        Ok(Defs { defs, mrtg_titles: Default::default(), munin: Default::default() })
    }

    /// Adds the `Title[target]: text` lines of an MRTG configuration.
    pub fn add_mrtg_titles(&mut self, cfg: &str) {
        for line in cfg.lines() {
            let Some(rest) = line.get(..6).filter(|h| h.eq_ignore_ascii_case("title[")).map(|_| &line[6..])
            else {
                continue;
            };
            if let Some((target, text)) = rest.split_once("]:") {
                self.mrtg_titles.insert(target.trim().to_lowercase(), text.trim().to_string());
            }
        }
    }

    /// The title MRTG's configuration gives the target drawn from `file`
    /// (a file name without `.rrd`), when `def` is an MRTG definition.
    pub fn mrtg_title(&self, def: &Def, file: &str) -> Option<&str> {
        def.name.starts_with("MRTG").then(|| self.mrtg_titles.get(&file.to_lowercase()))?.map(String::as_str)
    }

    /// Whether `def` is one of Munin's (its files take their words from
    /// Munin's datafile).
    pub fn is_munin(def: &Def) -> bool {
        def.name.starts_with("Munin")
    }

    /// The definition that draws `s` alone (the generic one matches
    /// anything).
    pub fn find(&self, s: &Subject) -> &Def {
        let generic = self.defs.last().expect("the embedded definitions end with the generic one");
        self.defs.iter().find(|d| !d.group && d.matches(s)).unwrap_or(generic)
    }

    /// Group definition `i` (an index [`Defs::groups`] gave).
    pub fn group(&self, i: usize) -> Option<&Def> {
        self.defs.get(i).filter(|d| d.group)
    }

    /// The groups of a directory named `dir` holding `files` (names with
    /// `.rrd`): each group definition's index, name and matching files,
    /// when two or more match.
    pub fn groups<'f>(
        &self,
        dir: &str,
        files: &'f [std::ffi::OsString],
    ) -> Vec<(usize, &str, Vec<&'f std::ffi::OsString>)> {
        let mut out = Vec::new();
        for (i, d) in self.defs.iter().enumerate().filter(|(_, d)| d.group) {
            let members: Vec<&std::ffi::OsString> = files
                .iter()
                .filter(|f| {
                    let name = f.to_string_lossy();
                    let file = name.strip_suffix(".rrd").unwrap_or(&name);
                    d.matches_name(&Subject { file, dir, ds: &[] })
                })
                .collect();
            if members.len() >= 2 {
                out.push((i, d.name.as_str(), members));
            }
        }
        out
    }
}

/// A shell-style glob over bytes: `*`, `?` and `[...]` (with `!` or `^`
/// negation and ranges).
pub fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((ok, next)) = class(&pattern[p..], text[t]) {
                        if ok {
                            p += next;
                            t += 1;
                            continue;
                        }
                    } else if text[t] == b'[' {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
                c if c == text[t] => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                p = sp + 1;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// A `[...]` class at the start of `p`: whether `c` is in it and the
/// class's length; `None` when unterminated.
fn class(p: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(1), Some(b'!' | b'^'));
    if negate {
        i += 1;
    }
    let mut found = false;
    let first = i;
    while i < p.len() && (p[i] != b']' || i == first) {
        if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
            found |= (p[i]..=p[i + 2]).contains(&c);
            i += 3;
        } else {
            found |= p[i] == c;
            i += 1;
        }
    }
    (i < p.len()).then_some((found != negate, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn writers_files_find_their_definitions() {
        let defs = Defs::load(None).unwrap();
        let find = |file: &str, dir: &str, names: &[&str]| {
            let d = ds(names);
            defs.find(&Subject { file, dir, ds: &d }).name.clone()
        };
        assert_eq!(find("if_octets", "interface-eth0", &["rx", "tx"]), "collectd if_octets");
        assert_eq!(find("cpu-user", "cpu-0", &["value"]), "collectd cpu");
        assert_eq!(find("load", "load", &["shortterm", "midterm", "longterm"]), "collectd load");
        assert_eq!(find("router_eth0", "", &["ds0", "ds1"]), "MRTG");
        assert_eq!(find("localhost-cpu-user-d", "localdomain", &["42"]), "Munin");
        assert_eq!(find("cpu_user", "host1", &["sum"]), "Ganglia");
        assert_eq!(find("whatever", "", &["a", "b"]), "generic");
        let files: Vec<std::ffi::OsString> =
            ["cpu-idle.rrd", "cpu-user.rrd", "other.rrd"].iter().map(|f| f.into()).collect();
        let groups = defs.groups("cpu-0", &files);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].2.len(), 2);
        assert!(defs.group(groups[0].0).is_some());
    }

    #[test]
    fn templates_and_user_definitions() {
        let d = ds(&["42"]);
        let s = Subject { file: "host-df-root-g", dir: "grp", ds: &d };
        assert_eq!(s.fill("{field} on {dir} ({ds})", "42"), "root on grp (42)");
        let user = r#"{"defs":[{"name":"mine","file":"host-*","lines":[{"ds":"42","label":"x"}]}]}"#;
        assert_eq!(Defs::load(Some(user)).unwrap().find(&s).name, "mine");
        let mut defs = Defs::load(None).unwrap();
        defs.add_mrtg_titles("WorkDir: /x\nTitle[Router_A]: Uplink <b>1</b>\ntitle[b]: B\n");
        let d = ds(&["ds0", "ds1"]);
        let mrtg = defs.find(&Subject { file: "router_a", dir: "", ds: &d }).clone();
        assert_eq!(defs.mrtg_title(&mrtg, "router_a"), Some("Uplink <b>1</b>"));
        assert_eq!(defs.mrtg_title(&mrtg, "c"), None);
        let bad = r#"{"defs":[{"name":"bad","lines":[{"ds":"a:b"}]}]}"#;
        assert!(Defs::load(Some(bad)).is_err());
    }

    #[test]
    fn glob_matches_like_the_shell() {
        for (p, t, want) in [
            ("*", "", true),
            ("a*c", "abbbc", true),
            ("a*c", "abbb", false),
            ("*-*-*-[dcga]", "h-cpu-user-d", true),
            ("*-*-*-[dcga]", "h-cpu-user-x", false),
            ("if_?ctets", "if_octets", true),
            ("[!a]x", "bx", true),
            ("[!a]x", "ax", false),
            ("[", "[", true),
        ] {
            assert_eq!(glob(p.as_bytes(), t.as_bytes()), want, "{p} {t}");
        }
    }
}
