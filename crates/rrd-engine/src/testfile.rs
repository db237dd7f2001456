//! In-memory files for the engine's unit tests: a header built field by
//! field (no `create` parsing, no rrdtool) and rows whose every value is
//! known, so a read can be checked value by value.

use std::path::Path;

use rrd_format::{CdpPrep, Cf, DsDef, Dst, Header, HeaderParts, LiveHead, Name, PdpPrep, RraDef, Version};

use crate::rrd::Rrd;
use crate::store::MemStore;

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
