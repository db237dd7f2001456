//! The machine a benchmark runs on, and the small chores every workload
//! shares: progress bars, directories and `syncfs`, the load average and
//! the machine's description for reports, shell quoting for the commands
//! reports print, and the sizes options take. Depends on no workload, so
//! every workload may use it.

use std::fs;
use std::io::IsTerminal;
use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::Machine;
use crate::workload::file_dirs;
use crate::BenchError;

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub fn bar(len: u64, prefix: String) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let pb = ProgressBar::with_draw_target(Some(len), target);
    let style = ProgressStyle::with_template("{prefix:>24} [{bar:30}] {pos:>7}/{len:7} {per_sec:>12} {msg}")
        .expect("static template")
        .progress_chars("=> ");
    pb.set_style(style);
    pb.set_prefix(prefix);
    pb
}

/// Quotes an argument for a POSIX shell when it needs it.
pub fn shell_quote(a: &str) -> String {
    if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c)) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// The 1-, 5- and 15-minute load averages.
pub fn load_average() -> String {
    let text = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

pub fn machine(dir: &Path, load_before: String) -> Machine {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_bytes = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024);
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    Machine {
        cpu,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes,
        kernel,
        filesystem: filesystem(dir),
        load_before,
        load_after: load_average(),
    }
}

/// The file system type of `dir`, by its magic number.
fn filesystem(dir: &Path) -> String {
    let Ok(f) = fs::File::open(dir) else { return "unknown".into() };
    let Ok(st) = rustix::fs::fstatfs(&f) else { return "unknown".into() };
    let magic = st.f_type as u64;
    match magic {
        0xEF53 => "ext4".into(),
        0x0102_1994 => "tmpfs".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlayfs".into(),
        m => format!("file system 0x{m:x}"),
    }
}

/// Writes every dirty page of the file system holding `dir` back to disk.
pub fn syncfs(dir: &Path) -> Result<(), BenchError> {
    let f = fs::File::open(dir).map_err(|e| BenchError::io(format!("opening {}", dir.display()), e))?;
    rustix::fs::syncfs(&f).map_err(|e| BenchError::io(format!("syncfs on {}", dir.display()), e.into()))
}

pub fn mkdirs(dir: &Path, count: u64) -> Result<(), BenchError> {
    for d in file_dirs(dir, count) {
        fs::create_dir_all(&d).map_err(|e| BenchError::io(format!("creating {}", d.display()), e))?;
    }
    Ok(())
}

/// `50M`, `64MiB`, `1.5G`, `4096`, `512k`: bytes (K/M/G are powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("'{s}' is not a size like 50M"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("'{s}' has an unknown unit (use K, M or G)")),
    };
    let bytes = n * mult as f64;
    if !(1.0..1e18).contains(&bytes) {
        return Err(format!("'{s}' is not a usable memory size"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("50M"), Ok(50 << 20));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5X").is_err());
        assert!(parse_size("0").is_err());
    }
}
