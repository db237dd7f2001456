//! Per-process counters from `/proc/PID/io` and `/proc/PID/stat`, read
//! before and after each measured step.
//!
//! `read_bytes` is what the process caused to be read from storage,
//! including readahead and `WILLNEED` it triggered; divided by the page size
//! it is "pages read". Major faults count reads through a mapping (librrd
//! maps its files), which `read_bytes` also includes. `syscr`/`syscw` count
//! read- and write-family system calls only (not `open`, `fadvise`,
//! `mmap`); `strace -c` gives the full picture.
//!
//! Deliberately absent: any averaging; the report divides.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Counters of one process at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub syscr: u64,
    pub syscw: u64,
    pub minflt: u64,
    pub majflt: u64,
    /// User and system CPU time in clock ticks.
    pub utime_ticks: u64,
    pub stime_ticks: u64,
}

/// What a step cost: wall time and counter deltas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub secs: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub syscr: u64,
    pub syscw: u64,
    pub minflt: u64,
    pub majflt: u64,
    pub cpu_user_secs: f64,
    pub cpu_sys_secs: f64,
}

impl Counters {
    pub fn add(&mut self, o: &Counters) {
        self.secs += o.secs;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.syscr += o.syscr;
        self.syscw += o.syscw;
        self.minflt += o.minflt;
        self.majflt += o.majflt;
        self.cpu_user_secs += o.cpu_user_secs;
        self.cpu_sys_secs += o.cpu_sys_secs;
    }
}

/// Reads the counters of process `pid`.
pub fn sample(pid: u32) -> std::io::Result<Sample> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io"))?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let mut s = parse_io(&io);
    parse_stat(&stat, &mut s).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("/proc/{pid}/stat has an unexpected layout"),
        )
    })?;
    Ok(s)
}

fn parse_io(text: &str) -> Sample {
    let mut s = Sample::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let v: u64 = value.trim().parse().unwrap_or(0);
        match key {
            "read_bytes" => s.read_bytes = v,
            "write_bytes" => s.write_bytes = v,
            "syscr" => s.syscr = v,
            "syscw" => s.syscw = v,
            _ => {}
        }
    }
    s
}

/// Fields after the command name (which may hold spaces and parentheses,
/// hence the search for the last `)`): state is field 3, minflt 10,
/// majflt 12, utime 14, stime 15.
fn parse_stat(text: &str, s: &mut Sample) -> Option<()> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    s.minflt = field(10)?;
    s.majflt = field(12)?;
    s.utime_ticks = field(14)?;
    s.stime_ticks = field(15)?;
    Some(())
}

fn ticks_per_sec() -> f64 {
    let t = rustix::param::clock_ticks_per_second();
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Measures one step of process `pid`: start with [`Meter::start`], end
/// with [`Meter::stop`].
pub struct Meter {
    pid: u32,
    started: Instant,
    before: Sample,
}

impl Meter {
    pub fn start(pid: u32) -> std::io::Result<Meter> {
        let before = sample(pid)?;
        Ok(Meter { pid, started: Instant::now(), before })
    }

    /// A meter of a process started at `started` or later (a fresh child):
    /// its counters began at zero.
    pub fn of_new_process(pid: u32, started: Instant) -> Meter {
        Meter { pid, started, before: Sample::default() }
    }

    pub fn stop(self) -> std::io::Result<Counters> {
        let secs = self.started.elapsed().as_secs_f64();
        let after = sample(self.pid)?;
        let b = self.before;
        let tps = ticks_per_sec();
        Ok(Counters {
            secs,
            read_bytes: after.read_bytes.saturating_sub(b.read_bytes),
            write_bytes: after.write_bytes.saturating_sub(b.write_bytes),
            syscr: after.syscr.saturating_sub(b.syscr),
            syscw: after.syscw.saturating_sub(b.syscw),
            minflt: after.minflt.saturating_sub(b.minflt),
            majflt: after.majflt.saturating_sub(b.majflt),
            cpu_user_secs: after.utime_ticks.saturating_sub(b.utime_ticks) as f64 / tps,
            cpu_sys_secs: after.stime_ticks.saturating_sub(b.stime_ticks) as f64 / tps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_formats() {
        let io = "rchar: 10\nwchar: 20\nsyscr: 3\nsyscw: 4\nread_bytes: 8192\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n";
        let mut s = parse_io(io);
        assert_eq!((s.read_bytes, s.write_bytes, s.syscr, s.syscw), (8192, 4096, 3, 4));
        let stat = "123 (a (b) c) R 1 2 3 4 5 6 77 8 99 10 11 12 13 14 15 16";
        parse_stat(stat, &mut s).unwrap();
        assert_eq!((s.minflt, s.majflt, s.utime_ticks, s.stime_ticks), (77, 99, 11, 12));
        assert!(parse_stat("garbage", &mut s).is_none());
    }

    /// This process's own counters can be read, and a step has a duration.
    #[test]
    fn own_counters_move() {
        let m = Meter::start(std::process::id()).unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let c = m.stop().unwrap();
        assert!(c.secs > 0.0);
        assert!(sample(std::process::id()).unwrap().syscr > 0);
    }
}
