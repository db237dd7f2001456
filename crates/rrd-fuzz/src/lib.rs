//! The fuzz targets' bodies, in one copy: `fuzz/` (cargo-fuzz, nightly)
//! wraps each `run` in `fuzz_target!`, and `tests/targets.rs` (stable
//! `cargo test`, so CI runs it) feeds the same `run` the committed seed
//! corpora and a few thousand inputs made from them by [`Mutator`].
//!
//! Each module is one target: what its input means, what must hold, and
//! `run(data)`, which panics (an `assert!`) when it does not. [`TARGETS`]
//! lists them with where their seeds are and the words their mutations
//! splice in.
//!
//! Deliberately absent: coverage guidance (that is what cargo-fuzz adds;
//! the stable test is a fixed-seed regression net, not a search) and
//! overflow checks in release builds (cargo-fuzz and `cargo test` without
//! `--release` have them).

#![forbid(unsafe_code)]

pub mod attime;
pub mod header_decode;
pub mod journal_replay;
pub mod protocol_batch;
pub mod protocol_line;
pub mod restore_xml;
pub mod rpn;
pub mod web_body;

/// One fuzz target.
pub struct Target {
    /// Its name in `fuzz/` (`cargo fuzz run NAME`).
    pub name: &'static str,
    pub run: fn(&[u8]),
    /// Directories of committed seeds, relative to the workspace root, and
    /// the file name suffix a seed has there ("" for any).
    pub seeds: &'static [(&'static str, &'static str)],
    /// Words a mutation may splice in (tokens of the input's language).
    pub words: &'static [&'static str],
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "header_decode",
        run: header_decode::run,
        seeds: &[("crates/rrdscale/tests/corpus", ".rrd")],
        words: &["RRD\0", "0003\0", "0004\0", "0005\0", "\0\0\0\0\0\0\0\0", "\u{7f}\u{7f}\u{7f}\u{7f}"],
    },
    Target { name: "journal_replay", run: journal_replay::run, seeds: &[], words: &[] },
    Target {
        name: "protocol_line",
        run: protocol_line::run,
        seeds: &[("fuzz/seeds/protocol_line", "")],
        words: &[
            "UPDATE ",
            "FETCH ",
            "FLUSH ",
            "FLUSHALL",
            "BATCH",
            "PENDING ",
            "FORGET ",
            "STATS",
            "HELP ",
            "QUIT",
            "LIST ",
            "INFO ",
            "FIRST ",
            "LAST ",
            "CREATE ",
            "WROTE ",
            "SUSPEND ",
            "RESUME ",
            " ",
            "\\",
            "\\ ",
            "\\\\",
            "\n",
            "unix:",
            "/tmp/x.sock",
            "127.0.0.1:42217",
            "[::1]:42217",
            "N:1:2",
            "-1",
            "flush",
            "update,fetch",
            "all",
        ],
    },
    Target {
        name: "protocol_batch",
        run: protocol_batch::run,
        seeds: &[("fuzz/seeds/protocol_batch", "")],
        words: &[
            "BATCH\n",
            ".\n",
            "UPDATE ",
            "update ",
            "FETCH ",
            "FETCHBIN ",
            "FLUSH ",
            "FLUSHALL\n",
            "PENDING ",
            "FORGET ",
            "STATS\n",
            "HELP ",
            "QUIT\n",
            "LIST ",
            "INFO ",
            "FIRST ",
            "LAST ",
            "CREATE ",
            "WROTE ",
            "SUSPEND ",
            "RESUME ",
            "SUSPENDALL\n",
            "RESUMEALL\n",
            "PING\n",
            "QUEUE\n",
            "\r\n",
            "\n",
            " ",
            "\\",
            "\\ ",
            "a.rrd",
            "/x/../a.rrd",
            "N:1:2",
            "1700000000:U",
            "@",
            "AVERAGE",
            "-s -1d",
        ],
    },
    Target {
        name: "restore_xml",
        run: restore_xml::run,
        seeds: &[("fuzz/seeds/restore_xml", "")],
        words: &[
            "<rrd>",
            "</rrd>",
            "<version>0003</version>",
            "<step>",
            "</step>",
            "<ds>",
            "</ds>",
            "<name>",
            "<type>",
            "GAUGE",
            "COUNTER",
            "DERIVE",
            "ABSOLUTE",
            "COMPUTE",
            "DCOUNTER",
            "<rra>",
            "</rra>",
            "<cf>",
            "AVERAGE",
            "HWPREDICT",
            "MHWPREDICT",
            "SEASONAL",
            "FAILURES",
            "<pdp_per_row>",
            "<row>",
            "</row>",
            "<v>",
            "</v>",
            "NaN",
            "inf",
            "-inf",
            "-1e308",
            "1e309",
            "<database>",
            "</database>",
            "<cdp_prep>",
            "<!-- ",
            " -->",
            "<lastupdate>",
            "<minimal_heartbeat>",
            "<min>",
            "<max>",
            "<last_ds>",
            "<value>",
            "<unknown_sec>",
            "<xff>",
            "<params>",
            "&amp;",
            "<![CDATA[",
            "99999999999999999999",
            "0",
            "-1",
            "4294967296",
        ],
    },
    Target {
        name: "attime",
        run: attime::run,
        seeds: &[("fuzz/seeds/attime", "")],
        words: &[
            "now",
            "start",
            "end",
            "epoch",
            "midnight",
            "noon",
            "teatime",
            "today",
            "tomorrow",
            "yesterday",
            "seconds",
            "min",
            "hours",
            "days",
            "weeks",
            "months",
            "years",
            "s",
            "m",
            "h",
            "d",
            "w",
            "mon",
            "y",
            "+",
            "-",
            "@",
            " ",
            "\n",
            "1d",
            "-1h",
            "+3w",
            "20260101",
            "12:30",
            "23:59:59",
            "am",
            "pm",
            "jan",
            "feb",
            "dec",
            "sunday",
            "fri",
            "31",
            "29.02.2024",
            "9223372036854775807",
            "-9223372036854775808",
            "4294967296",
            "99999999999",
        ],
    },
    Target {
        name: "rpn",
        run: rpn::run,
        seeds: &[("fuzz/seeds/rpn", "")],
        words: &[
            "a",
            "b",
            "c",
            ",",
            "+",
            "-",
            "*",
            "/",
            "%",
            "IF",
            "UN",
            "PREV",
            "PREV(a)",
            "COUNT",
            "TIME",
            "LTIME",
            "NOW",
            "INF",
            "NEGINF",
            "UNKN",
            "DUP",
            "POP",
            "EXC",
            "MAX",
            "MIN",
            "LIMIT",
            "TREND",
            "TRENDNAN",
            "AVG",
            "SORT",
            "REV",
            "PREDICT",
            "PREDICTSIGMA",
            "POW",
            "ATAN2",
            "ABS",
            "SQRT",
            "STEPWIDTH",
            "NEWDAY",
            "NEWWEEK",
            "ROLL",
            "INDEX",
            "COPY",
            "DEPTH",
            "MEDIAN",
            "PERCENT",
            "ADDNAN",
            "SMIN",
            "SMAX",
            "STDEV",
            "ISINF",
            "LT",
            "GE",
            "EQ",
            "NE",
            "1e308",
            "-0",
            "0x10",
            "9999999999",
            "0",
            "1",
            "2",
            "-1",
        ],
    },
    Target {
        name: "web_body",
        run: web_body::run,
        seeds: &[("fuzz/seeds/web_body", "")],
        words: &[
            "post ",
            "graph\n",
            "create\n",
            "complex\n",
            "number=",
            "&mode=",
            "derive",
            "count",
            "&color=",
            "%23FF0000",
            "&timestamp=",
            "&datetime=",
            "2026-01-01 00:00:00",
            "&description=",
            "%00",
            "%2F",
            "..",
            "{",
            "}",
            "[",
            "]",
            "\"",
            ":",
            ",",
            "null",
            "true",
            "1e400",
            "-9223372036854775809",
            "9223372036854775807",
            "\"service_name\"",
            "\"data\"",
            "\"graph_id\"",
            "\"sort\"",
            "\"color\"",
            "\"adjustval\"",
            "\"unit\"",
            "\"sumup\"",
            "\"stack\"",
            "\\u0000",
            "\\ud800",
        ],
    },
];

/// A seeded generator of inputs: choices by the workspace's test
/// generator (`rrd_testkit::Rng`, SplitMix64), and mutations of a
/// corpus entry (bit flips, interesting bytes and integers, deletions,
/// duplications, splices with another entry, inserted words, cuts): one
/// for half the inputs (most stay close to valid), two to eight for the
/// rest. The same seed gives the same inputs.
pub struct Mutator {
    rng: rrd_testkit::Rng,
}

impl Mutator {
    pub fn new(seed: u64) -> Mutator {
        Mutator { rng: rrd_testkit::Rng::new(seed) }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A number in `0..n` (0 for n = 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.rng.index(n)
    }

    /// A place in `data` (or its end), half the time among the first 256
    /// bytes, where a mode byte, a header or a command name sits.
    fn place(&mut self, len: usize) -> usize {
        if self.below(2) == 0 {
            self.below(len.min(256) + 1)
        } else {
            self.below(len + 1)
        }
    }

    fn random_bytes(&mut self, n: usize) -> Vec<u8> {
        self.rng.bytes(n)
    }

    /// A new input from `corpus` (random bytes when it is empty).
    pub fn input(&mut self, corpus: &[Vec<u8>], words: &[&str]) -> Vec<u8> {
        if corpus.is_empty() || self.below(16) == 0 {
            let most = if self.below(4) == 0 { 512 } else { 48 };
            let n = self.below(most);
            return self.random_bytes(n);
        }
        let mut data = corpus[self.below(corpus.len())].clone();
        let rounds = if self.below(2) == 0 { 1 } else { 1 + self.below(8) };
        for _ in 0..rounds {
            self.mutate(&mut data, corpus, words);
        }
        data
    }

    fn mutate(&mut self, data: &mut Vec<u8>, corpus: &[Vec<u8>], words: &[&str]) {
        const BYTES: [u8; 14] =
            [0, 1, 0x7f, 0x80, 0xff, b'\n', b' ', b'\\', b'"', b'<', b'>', b'0', b'9', b','];
        const INTS: [u64; 9] =
            [0, 1, 0xff, 0xffff, 0x7fff_ffff, 0xffff_ffff, 1 << 32, i64::MAX as u64, u64::MAX];
        let len = data.len();
        match self.below(9) {
            0 if len > 0 => {
                let p = self.below(len);
                data[p] ^= 1 << self.below(8);
            }
            1 if len > 0 => {
                let p = self.place(len).min(len - 1);
                data[p] = BYTES[self.below(BYTES.len())];
            }
            2 if len > 0 => {
                let v = INTS[self.below(INTS.len())].to_le_bytes();
                let n = [1, 2, 4, 8][self.below(4)];
                let p = self.place(len).min(len.saturating_sub(n));
                let end = (p + n).min(len);
                data[p..end].copy_from_slice(&v[..end - p]);
            }
            3 if len > 0 => {
                let p = self.place(len).min(len - 1);
                let n = 1 + self.below((len - p).min(64));
                data.drain(p..p + n);
            }
            4 if len > 0 => {
                let p = self.below(len);
                let n = 1 + self.below((len - p).min(64));
                let piece = data[p..p + n].to_vec();
                let at = self.place(len);
                data.splice(at..at, piece);
            }
            5 if !corpus.is_empty() => {
                let other = &corpus[self.below(corpus.len())];
                let from = self.below(other.len());
                let n = self.below((other.len() - from).min(128) + 1);
                let at = self.place(len);
                data.splice(at..at, other[from..from + n].iter().copied());
            }
            6 | 7 if !words.is_empty() => {
                let w = words[self.below(words.len())].as_bytes();
                let at = self.place(len);
                if self.below(2) == 0 && at < len {
                    let end = (at + w.len()).min(len);
                    data.splice(at..end, w.iter().copied());
                } else {
                    data.splice(at..at, w.iter().copied());
                }
            }
            8 if len > 0 => data.truncate(self.place(len)),
            _ => {
                let at = self.place(len);
                let n = 1 + self.below(8);
                let bytes = self.random_bytes(n);
                data.splice(at..at, bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs_and_mutations_change_them() {
        let corpus = vec![b"now-1d\nnow".to_vec(), b"UPDATE /x 1:2".to_vec()];
        let (mut a, mut b) = (Mutator::new(7), Mutator::new(7));
        let xs: Vec<Vec<u8>> = (0..200).map(|_| a.input(&corpus, &["now"])).collect();
        let ys: Vec<Vec<u8>> = (0..200).map(|_| b.input(&corpus, &["now"])).collect();
        assert_eq!(xs, ys);
        let changed = xs.iter().filter(|x| !corpus.contains(x)).count();
        assert!(changed > 150, "only {changed} of 200 inputs differ from the corpus");
        let distinct: std::collections::BTreeSet<&Vec<u8>> = xs.iter().collect();
        assert!(distinct.len() > 150, "{} distinct inputs", distinct.len());
        assert_ne!(xs, (0..200).map(|_| Mutator::new(8).input(&corpus, &[])).collect::<Vec<_>>());
        // An empty corpus gives random inputs.
        assert!((0..50).map(|_| a.input(&[], &[])).any(|x| !x.is_empty()));
    }
}
