//! The create definitions of the programs whose files rrdscale keeps, as
//! those programs write them: one copy for the benchmarks, the page-cache
//! simulator and the tests, so a figure measured on "MRTG files" always
//! means the same file. Every one uses a 300 s step ([`STEP_SECS`]).
//!
//! Deliberately absent: anything that creates files (that is `create`).

/// The step of every schema here, in seconds.
pub const STEP_SECS: u64 = 300;

/// RRDtool's performance tester (perftest): 2 GAUGE DS, 7 RRAs of 600 rows (69,824
/// bytes). The heartbeat is 600 s, as in the baselines measured with it
/// (the 2007 script had 400; the file size is the same).
pub const PERFTEST: &[&str] = &[
    "DS:in:GAUGE:600:U:U",
    "DS:out:GAUGE:600:U:U",
    "RRA:AVERAGE:0.5:1:600",
    "RRA:AVERAGE:0.5:6:600",
    "RRA:MAX:0.5:6:600",
    "RRA:AVERAGE:0.5:24:600",
    "RRA:MAX:0.5:24:600",
    "RRA:AVERAGE:0.5:144:600",
    "RRA:MAX:0.5:144:600",
];

/// MRTG's own default (bin/mrtg 2.x, `Interval 5`): 2 COUNTER DS, AVERAGE
/// and MAX at 1, 6, 24 and 288 steps, `4000 / interval` = 800 rows each.
/// 105,312 bytes: the LISA paper's "typical 103 KB" MRTG file, in which the
/// MAX RRAs start in page 13 and "sometimes" lie beyond the first 16.
pub const MRTG: &[&str] = &[
    "DS:ds0:COUNTER:600:0:U",
    "DS:ds1:COUNTER:600:0:U",
    "RRA:AVERAGE:0.5:1:800",
    "RRA:AVERAGE:0.5:6:800",
    "RRA:AVERAGE:0.5:24:800",
    "RRA:AVERAGE:0.5:288:800",
    "RRA:MAX:0.5:1:800",
    "RRA:MAX:0.5:6:800",
    "RRA:MAX:0.5:24:800",
    "RRA:MAX:0.5:288:800",
];

/// The MRTG-style schema of rrdtool's documentation and of countless
/// scripts: MRTG's RRAs with 600/700/775/797 rows.
pub const MRTG_CLASSIC: &[&str] = &[
    "DS:ds0:COUNTER:600:0:U",
    "DS:ds1:COUNTER:600:0:U",
    "RRA:AVERAGE:0.5:1:600",
    "RRA:AVERAGE:0.5:6:700",
    "RRA:AVERAGE:0.5:24:775",
    "RRA:AVERAGE:0.5:288:797",
    "RRA:MAX:0.5:1:600",
    "RRA:MAX:0.5:6:700",
    "RRA:MAX:0.5:24:775",
    "RRA:MAX:0.5:288:797",
];

/// GrowthForecast's files (lib/GrowthForecast/RRD.pm): DS `num` and
/// `sub`, AVERAGE and MAX at 1/6/24/288 steps with 1440/1008/1344/2500 rows
/// (204,256 bytes; the seed's `ls` shows 204,104 for its own build).
pub const GROWTHFORECAST: &[&str] = &[
    "DS:num:GAUGE:600:U:U",
    "DS:sub:GAUGE:600:U:U",
    "RRA:AVERAGE:0.5:1:1440",
    "RRA:AVERAGE:0.5:6:1008",
    "RRA:AVERAGE:0.5:24:1344",
    "RRA:AVERAGE:0.5:288:2500",
    "RRA:MAX:0.5:1:1440",
    "RRA:MAX:0.5:6:1008",
    "RRA:MAX:0.5:24:1344",
    "RRA:MAX:0.5:288:2500",
];

/// A schema's definitions as owned strings (what `create` takes).
pub fn owned(defs: &[&str]) -> Vec<String> {
    defs.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testfile::header_at;

    /// The sizes the documents quote, so a changed definition shows.
    #[test]
    fn file_sizes_are_the_ones_quoted() {
        for (defs, len) in [(PERFTEST, 69_824), (MRTG, 105_312), (GROWTHFORECAST, 204_256)] {
            assert_eq!(header_at(1_000_000_200, STEP_SECS, defs).layout().file_len, len, "{defs:?}");
        }
    }
}
