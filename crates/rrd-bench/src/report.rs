//! The results of a run and their Markdown rendering: a summary per side
//! (files, schema, mode, updates/s, pages read per update, major faults,
//! ratio against rrdtool), the per-pass (perftest) or per-size
//! (growthforecast) tables, where the files are and when they were last
//! updated, and the command that reproduces the run.
//!
//! Ratios are always "rrdscale is N× faster": updates/s of the side over
//! updates/s of the reference (librrd, else `rrdtool -`), which for
//! seconds per pass is the reference's seconds over the side's. A second
//! ratio compares CPU time per update (of the process doing the I/O), which
//! other work on the machine disturbs much less than wall time.
//!
//! Deliberately absent: any verdict on targets; the figures are stated.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cgroup::Usage;
use crate::procstat::Counters;
use crate::schema::Schema;
use crate::side::Side;
use crate::workload::{Kind, PassSpec};

/// Page size used for "pages read" (x86_64 Linux).
pub const PAGE_BYTES: f64 = 4096.0;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    pub kernel: String,
    /// File system of the benchmark directory.
    pub filesystem: String,
    /// `/proc/loadavg` (1, 5, 15 minutes) when the run started and ended:
    /// other work on the machine shows here.
    pub load_before: String,
    pub load_after: String,
}

impl Machine {
    /// The report's "Machine: ..." line (without its newline).
    pub fn line(&self) -> String {
        format!(
            "Machine: {}, {} CPUs, {:.1} GiB RAM, Linux {}, files on {}; load average {} before, {} after.",
            self.cpu,
            self.cpus,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.kernel,
            self.filesystem,
            self.load_before,
            self.load_after
        )
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CreateResult {
    pub round: usize,
    pub count: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub counters: Counters,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PassResult {
    pub id: usize,
    pub updates: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub counters: Counters,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SideResult {
    pub side: Side,
    pub label: String,
    pub version: String,
    pub dir: PathBuf,
    pub creates: Vec<CreateResult>,
    pub evictions_secs: f64,
    pub passes: Vec<PassResult>,
    pub memory: Option<Usage>,
    /// The memory cgroup the side ran in (removed after the run).
    pub cgroup: Option<PathBuf>,
}

/// Files compared byte for byte between the first side and every other.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Verify {
    pub compared: u64,
    pub identical: u64,
    pub first_difference: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    pub command: String,
    pub machine: Machine,
    pub kind: Kind,
    pub schema: Schema,
    pub file_bytes: u64,
    pub memory_budget_bytes: Option<u64>,
    pub cgroup: Option<String>,
    pub dir: PathBuf,
    pub dir_kept: bool,
    pub passes: Vec<PassSpec>,
    pub sides: Vec<SideResult>,
    /// Last update time of files `first..end` after the run.
    pub final_times: Vec<(u64, u64, i64)>,
    pub verify: Option<Verify>,
    /// SVG files written.
    pub plots: Vec<PathBuf>,
}

impl SideResult {
    fn totals(&self, keep: impl Fn(&PassResult) -> bool) -> (u64, Counters) {
        let mut c = Counters::default();
        let mut updates = 0;
        for p in self.passes.iter().filter(|p| keep(p)) {
            updates += p.updates;
            c.add(&p.counters);
        }
        (updates, c)
    }

    pub fn pass(&self, id: usize) -> Option<&PassResult> {
        self.passes.iter().find(|p| p.id == id)
    }

    pub fn errors(&self) -> u64 {
        self.passes.iter().map(|p| p.errors).sum::<u64>() + self.creates.iter().map(|c| c.errors).sum::<u64>()
    }
}

impl Results {
    /// The side ratios are taken against: librrd, else `rrdtool -`.
    pub fn reference(&self) -> Option<&SideResult> {
        self.sides
            .iter()
            .find(|s| s.side == Side::Librrd)
            .or_else(|| self.sides.iter().find(|s| s.side == Side::RrdtoolPipe))
    }
}

/// Updates per second (0 when no time passed).
pub fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// `1234567.8` → `1,234,568`.
pub fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let n = v.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

fn ratio(x: f64) -> String {
    if x.is_finite() && x > 0.0 {
        format!("{x:.2}×")
    } else {
        "–".into()
    }
}

fn per(n: f64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        n / d as f64
    }
}

/// Epoch seconds as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn utc(t: i64) -> String {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", secs / 3600, secs % 3600 / 60, secs % 60)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

/// The Markdown report.
pub fn markdown(r: &Results) -> String {
    let mut s = String::new();
    let title = match r.kind {
        Kind::Perftest => "perftest (RRDtool's performance tester)",
        Kind::Growthforecast => "growthforecast (the GrowthForecast tuning log's table)",
    };
    let _ = writeln!(s, "## rrdscale bench {title}\n");
    let _ = writeln!(s, "Command: `{}`\n", r.command);
    let _ = writeln!(s, "{}", r.machine.line());
    let versions: Vec<String> = r.sides.iter().map(|x| x.version.clone()).collect();
    let _ = writeln!(s, "Tools: {}.", versions.join(", "));
    let budget = match (r.memory_budget_bytes, &r.cgroup) {
        (Some(b), Some(cg)) => {
            format!("{} ({} bytes), page cache charged to a fresh memory cgroup per side ({cg})", mib(b), b)
        }
        (Some(b), None) => format!("{} ({b} bytes)", mib(b)),
        (None, _) => "none (warm unless a pass is marked cold)".to_string(),
    };
    let _ = writeln!(s, "Memory budget: {budget}.");
    let _ = writeln!(
        s,
        "Schema: {} (step {} s, {} data sources, {} archives, {} bytes per file): `{}`.\n",
        r.schema.name,
        r.schema.step_secs,
        r.schema.values.len(),
        r.schema.rra_pdp_counts.len(),
        thousands(r.file_bytes as f64),
        r.schema.defs.join(" ")
    );

    summary(&mut s, r, "All passes", &|_| true);
    if r.passes.iter().any(|p| p.cold) && r.passes.iter().any(|p| !p.cold) {
        let cold: Vec<usize> = r.passes.iter().filter(|p| p.cold).map(|p| p.id).collect();
        summary(&mut s, r, "Cold passes only (every file evicted just before)", &|p| cold.contains(&p.id));
        let warm: Vec<usize> = r.passes.iter().filter(|p| !p.cold).map(|p| p.id).collect();
        summary(&mut s, r, "Other passes", &|p| warm.contains(&p.id));
    }
    match r.kind {
        Kind::Perftest => perftest_passes(&mut s, r),
        Kind::Growthforecast => growthforecast_table(&mut s, r),
    }
    files_section(&mut s, r);
    s
}

fn summary(s: &mut String, r: &Results, title: &str, keep: &dyn Fn(&PassResult) -> bool) {
    let reference = r.reference();
    let ref_rate = reference.map(|x| {
        let (u, c) = x.totals(keep);
        rate(u, c.secs)
    });
    let cpu_per_update = |u: u64, c: &Counters| per((c.cpu_user_secs + c.cpu_sys_secs) * 1e6, u);
    let ref_cpu = reference.map(|x| {
        let (u, c) = x.totals(keep);
        cpu_per_update(u, &c)
    });
    let ref_label = reference.map_or("rrdtool".to_string(), |x| x.label.clone());
    let _ = writeln!(s, "### {title}\n");
    let _ = writeln!(
        s,
        "| side | files | schema | mode | updates | updates/s | pages read/update | major faults | read+write syscalls/update | CPU µs/update | creates/s | peak cgroup memory | vs {ref_label} | vs {ref_label}, CPU time |"
    );
    let _ = writeln!(s, "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let files = r.passes.iter().map(|p| p.files()).max().unwrap_or(0);
    for side in &r.sides {
        let (updates, c) = side.totals(keep);
        let ups = rate(updates, c.secs);
        let (created, create_secs) =
            side.creates.iter().fold((0u64, 0f64), |(n, t), cr| (n + cr.count, t + cr.counters.secs));
        let creates = if created > 0 { thousands(rate(created, create_secs)) } else { "–".into() };
        let vs = match ref_rate {
            Some(rr) if rr > 0.0 => ratio(ups / rr),
            _ => "–".into(),
        };
        let peak = side.memory.and_then(|u| u.max_usage_bytes).map_or("–".into(), mib);
        let cpu = cpu_per_update(updates, &c);
        let vs_cpu = match ref_cpu {
            Some(rc) if cpu > 0.0 => ratio(rc / cpu),
            _ => "–".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.2} | {} | {:.2} | {:.1} | {} | {} | {} | {} |",
            side.side.tool(),
            files,
            r.schema.name,
            side.side.mode(),
            thousands(updates as f64),
            thousands(ups),
            per(c.read_bytes as f64 / PAGE_BYTES, updates),
            thousands(c.majflt as f64),
            per((c.syscr + c.syscw) as f64, updates),
            cpu,
            creates,
            peak,
            vs,
            vs_cpu
        );
    }
    let _ = writeln!(s);
}

fn perftest_passes(s: &mut String, r: &Results) {
    let reference = r.reference();
    let _ = writeln!(s, "### Passes\n");
    let _ = writeln!(
        s,
        "Consolidations: the steps-per-row of the archives whose period ended in the pass (perftest's prefix; 1 = every step).\n"
    );
    let mut head = String::from("| round | pass | step time (UTC) | consolidations | cold |");
    let mut align = String::from("|---:|---:|---|---|---|");
    for side in &r.sides {
        let _ = write!(head, " {} updates/s | {} pages/update |", side.label, side.label);
        align.push_str("---:|---:|");
    }
    if let Some(rf) = reference {
        for side in r.sides.iter().filter(|x| !x.side.is_rrdtool()) {
            let _ = write!(head, " {} vs {} |", side.label, rf.label);
            align.push_str("---:|");
        }
    }
    let _ = writeln!(s, "{head}\n{align}");
    for p in &r.passes {
        let seg = &p.segments[0];
        let fired: Vec<String> =
            r.schema.consolidations(seg.prev_time, seg.time).iter().map(u64::to_string).collect();
        let mut row = format!(
            "| {} | {} | {} | {} | {} |",
            p.group,
            p.pass,
            utc(seg.time),
            fired.join(" "),
            if p.cold { "cold" } else { "" }
        );
        for side in &r.sides {
            match side.pass(p.id) {
                Some(x) => {
                    let _ = write!(
                        row,
                        " {} | {:.2} |",
                        thousands(rate(x.updates, x.counters.secs)),
                        per(x.counters.read_bytes as f64 / PAGE_BYTES, x.updates)
                    );
                }
                None => row.push_str(" – | – |"),
            }
        }
        if let Some(rf) = reference {
            let rr = rf.pass(p.id).map_or(0.0, |x| rate(x.updates, x.counters.secs));
            for side in r.sides.iter().filter(|x| !x.side.is_rrdtool()) {
                let v = side.pass(p.id).map_or(0.0, |x| rate(x.updates, x.counters.secs));
                let _ = write!(row, " {} |", if rr > 0.0 { ratio(v / rr) } else { "–".into() });
            }
        }
        let _ = writeln!(s, "{row}");
    }
    let _ = writeln!(s);
    // Creates per round.
    if r.sides.iter().any(|x| !x.creates.is_empty()) {
        let _ = writeln!(s, "### Creates\n");
        let _ = writeln!(s, "| side | round | files | seconds | creates/s | pages written/create |");
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
        for side in &r.sides {
            for c in &side.creates {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {:.3} | {} | {:.1} |",
                    side.label,
                    c.round,
                    c.count,
                    c.counters.secs,
                    thousands(rate(c.count, c.counters.secs)),
                    per(c.counters.write_bytes as f64 / PAGE_BYTES, c.count)
                );
            }
        }
        let _ = writeln!(s);
    }
}

fn growthforecast_table(s: &mut String, r: &Results) {
    let reference = r.reference();
    let max_pass = r.passes.iter().map(|p| p.pass).max().unwrap_or(0);
    let _ = writeln!(s, "### Seconds per pass\n");
    let _ = writeln!(
        s,
        "Pass 1 is cold (every file evicted with fdatasync + DONTNEED first); the others follow it.\n"
    );
    let mut head = String::from("| files | side |");
    let mut align = String::from("|---:|---|");
    for k in 1..=max_pass {
        let _ = write!(head, " pass {k}{} s |", if k == 1 { " (cold)" } else { "" });
        align.push_str("---:|");
    }
    head.push_str(" pages read/update (cold) | pages read/update (others) | major faults |");
    align.push_str("---:|---:|---:|");
    let _ = writeln!(s, "{head}\n{align}");
    let mut groups: Vec<u64> = r.passes.iter().map(|p| p.group).collect();
    groups.dedup();
    for g in groups {
        let specs: Vec<&PassSpec> = r.passes.iter().filter(|p| p.group == g).collect();
        for side in &r.sides {
            let mut row = format!("| {g} | {} |", side.label);
            let (mut cold_pages, mut cold_updates, mut other_pages, mut other_updates, mut majflt) =
                (0.0, 0u64, 0.0, 0u64, 0u64);
            for k in 1..=max_pass {
                match specs.iter().find(|p| p.pass == k).and_then(|p| side.pass(p.id)) {
                    Some(x) => {
                        let _ = write!(row, " {:.3} |", x.counters.secs);
                        let pages = x.counters.read_bytes as f64 / PAGE_BYTES;
                        if k == 1 {
                            cold_pages += pages;
                            cold_updates += x.updates;
                        } else {
                            other_pages += pages;
                            other_updates += x.updates;
                        }
                        majflt += x.counters.majflt;
                    }
                    None => row.push_str(" – |"),
                }
            }
            let _ = writeln!(
                s,
                "{row} {:.2} | {:.2} | {} |",
                per(cold_pages, cold_updates),
                per(other_pages, other_updates),
                thousands(majflt as f64)
            );
        }
        if let Some(rf) = reference {
            for side in r.sides.iter().filter(|x| !x.side.is_rrdtool()) {
                let mut row = format!("| {g} | {} vs {} (speedup) |", side.label, rf.label);
                for k in 1..=max_pass {
                    let id = specs.iter().find(|p| p.pass == k).map(|p| p.id);
                    let a = id.and_then(|id| side.pass(id)).map(|x| x.counters.secs);
                    let b = id.and_then(|id| rf.pass(id)).map(|x| x.counters.secs);
                    let cell = match (a, b) {
                        (Some(a), Some(b)) if a > 0.0 => ratio(b / a),
                        _ => "–".into(),
                    };
                    let _ = write!(row, " {cell} |");
                }
                let _ = writeln!(s, "{row} | | |");
            }
        }
    }
    let _ = writeln!(s);
}

fn files_section(s: &mut String, r: &Results) {
    let _ = writeln!(s, "### Files\n");
    for side in &r.sides {
        let evict = if side.evictions_secs > 0.0 {
            format!(", eviction took {:.2} s in all", side.evictions_secs)
        } else {
            String::new()
        };
        let kept = if r.dir_kept { "" } else { " (removed after the run)" };
        let _ = writeln!(s, "- Files of {}: `{}`{kept}{evict}", side.label, side.dir.display());
    }
    for side in &r.sides {
        if let Some(cg) = &side.cgroup {
            let _ =
                writeln!(s, "- Memory cgroup of {}: `{}` (removed after the run)", side.label, cg.display());
        }
    }
    for (a, b, t) in &r.final_times {
        let _ = writeln!(s, "- Last update of files {a}..{b}: {t} ({} UTC)", utc(*t));
    }
    if let Some(v) = &r.verify {
        let _ = writeln!(
            s,
            "- Byte-identical across sides: {} of {} compared files{}",
            v.identical,
            v.compared,
            v.first_difference.as_ref().map_or(String::new(), |d| format!(" (first difference: {d})"))
        );
    }
    for p in &r.plots {
        let _ = writeln!(s, "- Plot: `{}`", p.display());
    }
    for side in &r.sides {
        let errors = side.errors();
        if errors > 0 {
            let first = side
                .passes
                .iter()
                .filter_map(|p| p.first_error.clone())
                .chain(side.creates.iter().filter_map(|c| c.first_error.clone()))
                .next()
                .unwrap_or_default();
            let _ = writeln!(s, "- **{} failed {errors} operations**; first: {first}", side.label);
        }
    }
    let _ = writeln!(
        s,
        "\nReproduce with: `{}` (release build: `cargo build --release -p rrdscale`).",
        r.command
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers_and_times() {
        assert_eq!(thousands(1_234_567.8), "1,234,568");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(-1234.0), "-1,234");
        assert_eq!(utc(1_700_006_400), "2023-11-15 00:00:00");
        assert_eq!(utc(951_782_400 + 3661), "2000-02-29 01:01:01");
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(ratio(2.5), "2.50×");
        assert_eq!(ratio(f64::NAN), "–");
    }
}
