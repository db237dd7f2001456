//! Files for the engine's unit tests: an in-memory file whose header is
//! built field by field (no `create` parsing, no rrdtool) and whose every
//! value is known, so a read can be checked value by value; and the one
//! way the tests make a header or a file through `create` (one start, one
//! step, definitions as string slices), so each test states only its
//! definitions.

use std::path::{Path, PathBuf};

use rrd_format::{CdpPrep, Cf, DsDef, Dst, Header, HeaderParts, LiveHead, Name, PdpPrep, RraDef, Version};

use crate::create::{build_header, create, CreateOptions};
use crate::rrd::Rrd;
use crate::store::MemStore;

/// The start (last update) of the files the tests create.
pub(crate) const START: i64 = 1_000_000_000;

/// A schema like rrdtool's perftest: a GAUGE and a COUNTER, an AVERAGE
/// and a MAX archive.
pub(crate) const PERFTEST_LIKE: [&str; 4] =
    ["DS:a:GAUGE:600:U:U", "DS:b:COUNTER:600:U:U", "RRA:AVERAGE:0.5:1:10", "RRA:MAX:0.5:3:10"];

/// The `k`th update of a [`PERFTEST_LIKE`] file: `k` steps after
/// [`START`], values `k` and `1000 k`.
pub(crate) fn perftest_arg(k: u64) -> String {
    format!("{}:{}:{}", START + 300 * k as i64, k, 1000 * k)
}

/// `create`'s options for a file starting at `start` with step `step` s.
pub(crate) fn opts(start: i64, step: u64) -> CreateOptions {
    CreateOptions { start: Some(start), step_secs: Some(step), ..Default::default() }
}

/// Definitions (`DS:…`, `RRA:…`) as `create` takes them.
pub(crate) fn defs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The header `create` builds for `defs`, starting at `start` with step
/// `step` s.
pub(crate) fn header_at(start: i64, step: u64, defs: &[&str]) -> Header {
    build_header(&opts(start, step), &self::defs(defs), 0).expect("valid test definitions")
}

/// The header `create` builds for `defs`, starting at [`START`], step 300 s.
pub(crate) fn header(defs: &[&str]) -> Header {
    header_at(START, 300, defs)
}

/// Creates `dir/name` from `defs`, starting at [`START`], step 300 s.
pub(crate) fn create_file(dir: &Path, name: &str, defs: &[&str]) -> PathBuf {
    let path = dir.join(name);
    create(&path, &opts(START, 300), &self::defs(defs), 0).expect("valid test definitions");
    path
}

/// Creates `dir/a.rrd` from `defs` (as [`create_file`]) and copies it to
/// each of `copies` in `dir`: references for direct updates, or files to
/// rename over it.
pub(crate) fn create_with_copies<const N: usize>(
    dir: &Path,
    defs: &[&str],
    copies: [&str; N],
) -> (PathBuf, [PathBuf; N]) {
    let a = create_file(dir, "a.rrd", defs);
    let copies = copies.map(|name| {
        let copy = dir.join(name);
        std::fs::copy(&a, &copy).expect("copy a test file");
        copy
    });
    (a, copies)
}

/// A file of GAUGE data sources named `ds`, step `step`, last update
/// `last_up`, one archive per `(cf, pdp_count, row_count, cur_row)`, the
/// value at file row `row` of archive `rra` for DS `d` being
/// `value(rra, row, d)`.
pub(crate) fn mem_file(
    step: u64,
    last_up: i64,
    ds: &[&str],
    rras: &[(Cf, u64, u64, u64)],
    value: impl Fn(usize, u64, usize) -> f64,
) -> Rrd<MemStore> {
    let defs = ds
        .iter()
        .map(|n| DsDef {
            name: Name::new(n),
            dst_name: Name::new("GAUGE"),
            dst: Dst::Gauge,
            par: [600, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        })
        .collect::<Vec<_>>();
    let rra = rras
        .iter()
        .map(|&(cf, pdp_count, row_count, _)| RraDef {
            cf_name: Name::new(cf.name()),
            cf,
            pad: [0; 4],
            row_count,
            pdp_count,
            par: [0.5f64.to_bits(), 0, 0, 0, 0, 0, 0, 0, 0, 0],
        })
        .collect::<Vec<_>>();
    let header = Header::from_parts(HeaderParts {
        version: Version(3),
        stat_pad: [0; 7],
        pdp_step: step,
        stat_par: [0; 10],
        live: LiveHead { last_up, last_up_usec: 0 },
        pdp: ds.iter().map(|_| PdpPrep { last_ds: [0; 30], pad: [0; 2], scratch: [0; 10] }).collect(),
        cdp: (0..ds.len() * rras.len()).map(|_| CdpPrep { scratch: [0; 10] }).collect(),
        rra_ptr: rras.iter().map(|r| r.3).collect(),
        ds: defs,
        rra,
    })
    .expect("a valid test header");
    let mut bytes = header.encode();
    for (i, r) in rras.iter().enumerate() {
        for row in 0..r.2 {
            for d in 0..ds.len() {
                bytes.extend_from_slice(&value(i, row, d).to_le_bytes());
            }
        }
    }
    Rrd::from_store(Path::new("mem.rrd"), MemStore::new(bytes)).expect("a valid test file")
}
