//! The parent of a run: builds the workload, creates the files once,
//! gives each side its own copy, runs each side's worker (in its own memory
//! cgroup when there is a budget), shows progress, checks the sides' files
//! against each other, and writes the report, JSON and plots.
//!
//! Invariants: sides run in lockstep, never at once: step i runs on every
//! side (one after the other) before step i+1 runs on any, so a drift in the
//! machine's background load hits all sides alike; before any worker
//! starts, all copies are written back to disk (`syncfs`), so no side pays
//! for another's write-back; a cgroup is removed even when the run fails
//! (after its worker is killed); a directory this run did not create is
//! never removed.
//!
//! Deliberately absent: measuring anything itself (workers do).

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use rrd_engine::create::{create_in, CreateOptions};

use crate::cgroup::{self, MemoryCgroup};
use crate::cli::{Cli, Common, Workload as CliWorkload};
use crate::host::{bar, load_average, machine, mkdirs, shell_quote, syncfs};
use crate::librrd::Librrd;
use crate::report::{self, CreateResult, PassResult, Results, SideResult, Verify};
use crate::schema::Schema;
use crate::side::Side;
use crate::svg::{self, Chart, Series};
use crate::worker::{Event, WorkerSpec};
use crate::workload::{self, file_path, Kind, Step, Workload};
use crate::BenchError;

/// Creates the master files with rrdscale's create (untimed).
fn create_master(w: &Workload, master: &Path) -> Result<(), BenchError> {
    mkdirs(master, w.total_files())?;
    let pb = bar(w.total_files(), "creating files".into());
    for c in &w.creations {
        let opts = CreateOptions {
            start: Some(c.start_time),
            step_secs: Some(w.schema.step_secs),
            ..Default::default()
        };
        // In groups sharing one sync (as the timed creates do).
        let mut group = rrd_engine::newfile::NewFiles::new();
        let failed = |e| BenchError::Invalid(format!("creating the benchmark files failed: {e}"));
        for i in c.first..c.end {
            let p = file_path(master, i);
            create_in(&mut group, &p, &opts, &w.schema.defs, 0).map_err(failed)?;
            if group.is_full() || i + 1 == c.end {
                group.commit().into_iter().collect::<Result<Vec<()>, _>>().map_err(failed)?;
            }
            if i % 256 == 0 {
                pb.set_position(i);
            }
        }
    }
    pb.finish_and_clear();
    Ok(())
}

/// Gives a side its copy of the master files (or the master itself, for the
/// last side).
fn copy_files(master: &Path, dest: &Path, count: u64, take: bool, label: &str) -> Result<(), BenchError> {
    if take {
        return fs::rename(master, dest)
            .map_err(|e| BenchError::io(format!("renaming {} to {}", master.display(), dest.display()), e));
    }
    mkdirs(dest, count)?;
    let pb = bar(count, format!("copying for {label}"));
    for i in 0..count {
        let (a, b) = (file_path(master, i), file_path(dest, i));
        fs::copy(&a, &b)
            .map_err(|e| BenchError::io(format!("copying {} to {}", a.display(), b.display()), e))?;
        if i % 256 == 0 {
            pb.set_position(i);
        }
    }
    pb.finish_and_clear();
    Ok(())
}

/// A running worker: its process, its event stream, and what it reported.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    events: std::io::Lines<BufReader<ChildStdout>>,
    result: SideResult,
    /// Kept until the worker is gone, then removed.
    cgroup: Option<MemoryCgroup>,
}

impl Worker {
    /// Starts a worker; it reports `Started` and then waits for go-aheads.
    fn spawn(exe: &Path, spec: &WorkerSpec, cgroup: Option<MemoryCgroup>) -> Result<Worker, BenchError> {
        let json = serde_json::to_string(spec)
            .map_err(|e| BenchError::Worker(format!("encoding the worker spec: {e}")))?;
        let mut child = Command::new(exe)
            .args(["bench", "--internal-worker", &json])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| BenchError::io(format!("starting the worker {}", exe.display()), e))?;
        let stdin = child.stdin.take();
        let events = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let result = SideResult {
            side: spec.side,
            label: spec.side.label(),
            version: String::new(),
            dir: spec.dir.clone(),
            creates: Vec::new(),
            evictions_secs: 0.0,
            passes: Vec::new(),
            memory: None,
            cgroup: cgroup.as_ref().map(|c| c.path.clone()),
        };
        let mut w = Worker { child, stdin, events, result, cgroup };
        match w.next_event()? {
            Event::Started { version, .. } => w.result.version = version,
            other => return Err(w.nonsense(&other)),
        }
        Ok(w)
    }

    fn next_event(&mut self) -> Result<Event, BenchError> {
        let label = &self.result.label;
        let line = match self.events.next() {
            Some(line) => line.map_err(|e| BenchError::io("reading the worker's events", e))?,
            None => {
                let status = self.child.wait().map_err(|e| BenchError::io("waiting for the worker", e))?;
                return Err(BenchError::Worker(format!(
                    "the {label} worker stopped early ({status}); its message is above"
                )));
            }
        };
        serde_json::from_str(&line).map_err(|e| {
            BenchError::Worker(format!("the {label} worker printed '{line}', not an event ({e})"))
        })
    }

    fn nonsense(&self, e: &Event) -> BenchError {
        BenchError::Worker(format!("the {} worker sent an unexpected event: {e:?}", self.result.label))
    }

    /// Runs step `index` and records its result.
    fn step(&mut self, index: usize, spec: &Step) -> Result<(), BenchError> {
        let label = self.result.label.clone();
        let (len, name) = match spec {
            Step::CreateBench { count, round, .. } => (*count, format!("{label} create r{round}")),
            Step::Evict { count } => (*count, format!("{label} evict")),
            Step::Pass(p) => (p.files(), format!("{label} pass {}/{}", p.group, p.pass)),
        };
        let stdin =
            self.stdin.as_mut().ok_or_else(|| BenchError::Worker("the worker's input is closed".into()))?;
        stdin
            .write_all(b"go\n")
            .and_then(|_| stdin.flush())
            .map_err(|e| BenchError::io("starting a step", e))?;
        let pb = bar(len, name.clone());
        loop {
            match self.next_event()? {
                Event::Progress { step, done } if step == index => pb.set_position(done),
                Event::Created { step, round, count, errors, first_error, counters } if step == index => {
                    pb.finish_and_clear();
                    if !pb.is_hidden() {
                        eprintln!(
                            "{name}: {count} creates in {:.2} s ({} creates/s)",
                            counters.secs,
                            report::thousands(report::rate(count, counters.secs))
                        );
                    }
                    self.result.creates.push(CreateResult { round, count, errors, first_error, counters });
                    return Ok(());
                }
                Event::Evicted { step, secs, .. } if step == index => {
                    pb.finish_and_clear();
                    self.result.evictions_secs += secs;
                    return Ok(());
                }
                Event::Passed { step, id, updates, errors, first_error, counters } if step == index => {
                    pb.finish_and_clear();
                    if !pb.is_hidden() {
                        eprintln!(
                            "{name}: {updates} updates in {:.3} s ({} updates/s, {:.2} pages read/update)",
                            counters.secs,
                            report::thousands(report::rate(updates, counters.secs)),
                            counters.read_bytes as f64 / report::PAGE_BYTES / updates.max(1) as f64
                        );
                    }
                    self.result.passes.push(PassResult { id, updates, errors, first_error, counters });
                    return Ok(());
                }
                other => return Err(self.nonsense(&other)),
            }
        }
    }

    /// Waits for the worker's end, removes its cgroup, returns its results.
    fn finish(mut self) -> Result<SideResult, BenchError> {
        drop(self.stdin.take());
        match self.next_event()? {
            Event::Finished => {}
            other => return Err(self.nonsense(&other)),
        }
        let status = self.child.wait().map_err(|e| BenchError::io("waiting for the worker", e))?;
        if !status.success() {
            return Err(BenchError::Worker(format!(
                "the {} worker failed ({status}); its message is above",
                self.result.label
            )));
        }
        if let Some(cg) = self.cgroup.take() {
            self.result.memory = Some(cg.usage());
        }
        Ok(self.result.clone())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // On an error path: stop the worker before its cgroup goes.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Compares up to `n` files (spread evenly) of every side with the first.
fn verify(sides: &[SideResult], files: u64, n: u64) -> Result<Verify, BenchError> {
    let mut v = Verify::default();
    if sides.len() < 2 || n == 0 || files == 0 {
        return Ok(v);
    }
    let picks: Vec<u64> =
        if n >= files { (0..files).collect() } else { (0..n).map(|k| k * files / n).collect() };
    for &i in &picks {
        let a_path = file_path(&sides[0].dir, i);
        let a = fs::read(&a_path).map_err(|e| BenchError::io(format!("reading {}", a_path.display()), e))?;
        let mut same = true;
        for other in &sides[1..] {
            let b_path = file_path(&other.dir, i);
            let b =
                fs::read(&b_path).map_err(|e| BenchError::io(format!("reading {}", b_path.display()), e))?;
            if a != b {
                same = false;
                if v.first_difference.is_none() {
                    let at = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
                    v.first_difference =
                        Some(format!("{} and {} differ at byte {at}", a_path.display(), b_path.display()));
                }
            }
        }
        v.compared += 1;
        v.identical += u64::from(same);
    }
    Ok(v)
}

fn plots(r: &Results, dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    fs::create_dir_all(dir).map_err(|e| BenchError::io(format!("creating {}", dir.display()), e))?;
    let mut written = Vec::new();
    let mut write = |name: &str, text: String| -> Result<(), BenchError> {
        let p = dir.join(name);
        fs::write(&p, text).map_err(|e| BenchError::io(format!("writing {}", p.display()), e))?;
        written.push(p);
        Ok(())
    };
    let pages = |x: &PassResult| x.counters.read_bytes as f64 / report::PAGE_BYTES / x.updates.max(1) as f64;
    match r.kind {
        Kind::Perftest => {
            let per_pass = |f: &dyn Fn(&PassResult) -> f64| -> Vec<Series> {
                r.sides
                    .iter()
                    .enumerate()
                    .map(|(i, s)| Series {
                        name: s.label.clone(),
                        points: s.passes.iter().map(|p| (p.id as f64 + 1.0, f(p))).collect(),
                        color: i,
                        dash: 0,
                    })
                    .collect()
            };
            let ups = per_pass(&|p| report::rate(p.updates, p.counters.secs));
            let chart = Chart {
                title: "perftest: updates/s per pass",
                x_label: "pass",
                y_label: "updates/s",
                log_x: false,
                log_y: false,
            };
            write("perftest-updates.svg", svg::line_chart(&chart, &ups))?;
            // Wall time swings with other work on the machine; CPU time per
            // update does much less.
            let cpu = per_pass(&|p| {
                (p.counters.cpu_user_secs + p.counters.cpu_sys_secs) * 1e6 / p.updates.max(1) as f64
            });
            let chart = Chart {
                title: "perftest: CPU µs per update (process doing the I/O)",
                x_label: "pass",
                y_label: "CPU µs / update",
                log_x: false,
                log_y: false,
            };
            write("perftest-cpu.svg", svg::line_chart(&chart, &cpu))?;
            let pg = per_pass(&pages);
            let chart = Chart {
                title: "perftest: pages read per update",
                x_label: "pass",
                y_label: "pages read / update",
                log_x: false,
                log_y: false,
            };
            write("perftest-pages.svg", svg::line_chart(&chart, &pg))?;
        }
        Kind::Growthforecast => {
            let max_pass = r.passes.iter().map(|p| p.pass).max().unwrap_or(0);
            let mut secs = Vec::new();
            let mut pg = Vec::new();
            for (i, s) in r.sides.iter().enumerate() {
                for k in 1..=max_pass {
                    let pts = |f: &dyn Fn(&PassResult) -> f64| -> Vec<(f64, f64)> {
                        r.passes
                            .iter()
                            .filter(|p| p.pass == k)
                            .filter_map(|p| s.pass(p.id).map(|x| (p.group as f64, f(x))))
                            .collect()
                    };
                    let name = format!("{} pass {k}{}", s.label, if k == 1 { " (cold)" } else { "" });
                    let (color, dash) = (i, k - 1);
                    secs.push(Series { name: name.clone(), points: pts(&|x| x.counters.secs), color, dash });
                    pg.push(Series { name, points: pts(&pages), color, dash });
                }
            }
            let chart = Chart {
                title: "growthforecast: seconds per pass",
                x_label: "files",
                y_label: "seconds",
                log_x: true,
                log_y: true,
            };
            write("growthforecast-seconds.svg", svg::line_chart(&chart, &secs))?;
            let chart = Chart {
                title: "growthforecast: pages read per update",
                x_label: "files",
                y_label: "pages read / update",
                log_x: true,
                log_y: false,
            };
            write("growthforecast-pages.svg", svg::line_chart(&chart, &pg))?;
        }
    }
    Ok(written)
}

fn build(cli: &Cli) -> Result<(Workload, &Common), BenchError> {
    let bad = |m: &str| Err(BenchError::Usage(m.to_string()));
    match &cli.workload {
        CliWorkload::Perftest(p) => {
            if p.files == 0 || p.updates_per_round == 0 || p.rounds == 0 {
                return bad("--files, --updates-per-round and --rounds must be at least 1");
            }
            let schema = Schema::parse(&p.schema)?;
            let w = workload::perftest(
                schema,
                p.files,
                p.updates_per_round,
                p.rounds,
                p.evict,
                p.common.start_time,
            );
            Ok((w, &p.common))
        }
        CliWorkload::Growthforecast(g) => {
            if g.sizes.is_empty() || g.sizes.contains(&0) || g.passes == 0 {
                return bad(
                    "--sizes must list numbers of files of at least 1, and --passes must be at least 1",
                );
            }
            let schema = Schema::parse(&g.schema)?;
            Ok((workload::growthforecast(schema, &g.sizes, g.passes, g.common.start_time), &g.common))
        }
        _ => Err(BenchError::Usage("this workload is not a direct-update one".into())),
    }
}

/// rrdscale's librrd.so.8 for `--mode librrd`: `--librrd`, else the
/// cdylib beside the binary (`target/release/librrd.so`).
fn our_librrd(common: &Common, exe: &Path) -> PathBuf {
    common.librrd.clone().unwrap_or_else(|| exe.with_file_name("librrd.so"))
}

/// Checks that every tool a side needs is there, before creating anything.
fn preflight(sides: &[Side], common: &Common, exe: &Path) -> Result<(), BenchError> {
    if sides.contains(&Side::Librrd) {
        drop(Librrd::load()?);
    }
    if sides.contains(&Side::Rrdscale(crate::side::Mode::Librrd)) {
        drop(Librrd::load_path(&our_librrd(common, exe))?);
    }
    if sides.contains(&Side::RrdtoolPipe) || sides.contains(&Side::RrdtoolPipeCycle) {
        let ok =
            Command::new("rrdtool").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
        if ok.is_err() {
            return Err(BenchError::Invalid(
                "--vs rrdtool-pipe needs the rrdtool program on the PATH (Debian: apt-get install rrdtool)"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// `rrdscale bench report FILE`: the report (and plots) of a saved run.
fn rerun_report(json: &Path, svg_dir: Option<&Path>, out: &mut dyn Write) -> Result<(), BenchError> {
    let text =
        fs::read_to_string(json).map_err(|e| BenchError::io(format!("reading {}", json.display()), e))?;
    let mut results: Results = serde_json::from_str(&text).map_err(|e| {
        BenchError::Invalid(format!("{} is not the JSON of a bench run: {e}", json.display()))
    })?;
    if let Some(dir) = svg_dir {
        results.plots = plots(&results, dir)?;
    }
    out.write_all(report::markdown(&results).as_bytes()).map_err(|e| BenchError::io("writing the report", e))
}

/// Runs a parsed `rrdscale bench` command line.
pub fn run(cli: &Cli, args: &[String], exe: &Path, out: &mut dyn Write) -> Result<(), BenchError> {
    match &cli.workload {
        CliWorkload::Report(r) => return rerun_report(&r.json, r.svg.as_deref(), out),
        CliWorkload::DaemonIngest(a) => return crate::daemon::ingest::run(a, args, exe, out),
        CliWorkload::DaemonFlush(a) => return crate::daemon::flush::run(a, args, exe, out),
        CliWorkload::DaemonRestart(a) => return crate::daemon::restart::run(a, args, exe, out),
        CliWorkload::DaemonRead(a) => return crate::daemon::read::run(a, args, exe, out),
        CliWorkload::DaemonCapacity(a) => return crate::daemon::capacity::run(a, args, exe, out),
        _ => {}
    }
    let (w, common) = build(cli)?;
    if common.mode.is_empty() {
        return Err(BenchError::Usage("--mode needs at least one mode".into()));
    }
    let sides = Side::all(&common.mode, &common.vs);
    preflight(&sides, common, exe)?;
    let command = std::iter::once("rrdscale bench".to_string())
        .chain(args.iter().map(|a| shell_quote(a)))
        .collect::<Vec<_>>()
        .join(" ");
    let (base, owned) = match &common.dir {
        Some(d) => (d.clone(), false),
        None => (std::env::temp_dir().join(format!("rrdscale-bench-{}", std::process::id())), true),
    };
    fs::create_dir_all(&base).map_err(|e| BenchError::io(format!("creating {}", base.display()), e))?;
    let base = base.canonicalize().map_err(|e| BenchError::io(format!("resolving {}", base.display()), e))?;
    let master = base.join("master");
    for p in std::iter::once(master.clone()).chain(sides.iter().map(|s| base.join(s.dir_name()))) {
        if p.exists() {
            return Err(BenchError::Invalid(format!(
                "{} already exists; remove it or choose another --dir",
                p.display()
            )));
        }
    }
    let outcome = run_sides(&w, common, &sides, &base, &master, exe, command);
    let keep = !owned || common.keep;
    let results = match outcome {
        Ok(mut r) => {
            r.dir_kept = keep;
            r
        }
        Err(e) => {
            if !keep {
                let _ = fs::remove_dir_all(&base);
            }
            return Err(e);
        }
    };
    let mut results = results;
    if let Some(dir) = &common.svg {
        results.plots = plots(&results, dir)?;
    }
    out.write_all(report::markdown(&results).as_bytes())
        .map_err(|e| BenchError::io("writing the report", e))?;
    if let Some(path) = &common.record.json {
        let text = serde_json::to_string_pretty(&results)
            .map_err(|e| BenchError::Worker(format!("encoding the results: {e}")))?;
        fs::write(path, text).map_err(|e| BenchError::io(format!("writing {}", path.display()), e))?;
    }
    if !keep {
        fs::remove_dir_all(&base).map_err(|e| BenchError::io(format!("removing {}", base.display()), e))?;
    }
    let failed: Vec<String> = results
        .sides
        .iter()
        .filter(|s| s.errors() > 0)
        .map(|s| format!("{} failed {} operations", s.label, s.errors()))
        .collect();
    if !failed.is_empty() {
        return Err(BenchError::Failed(format!("{} (see the report)", failed.join("; "))));
    }
    if let Some(v) = &results.verify {
        if v.identical != v.compared {
            return Err(BenchError::Failed(format!(
                "the sides' files differ after the run: {}",
                v.first_difference.clone().unwrap_or_default()
            )));
        }
    }
    Ok(())
}

fn run_sides(
    w: &Workload,
    common: &Common,
    sides: &[Side],
    base: &Path,
    master: &Path,
    exe: &Path,
    command: String,
) -> Result<Results, BenchError> {
    let load_before = load_average();
    create_master(w, master)?;
    let file_bytes = fs::metadata(file_path(master, 0)).map(|m| m.len()).unwrap_or(0);
    let cgroup_where = match common.memory_budget {
        Some(_) => {
            let (own, version) = cgroup::own_memory_cgroup()?;
            Some(format!("{version:?} under {}", own.display()))
        }
        None => None,
    };
    // Every side's copy first, written back to disk, so that no side pays
    // for another's write-back during a measured step.
    let mut dirs = Vec::new();
    for (k, side) in sides.iter().enumerate() {
        let dir = base.join(side.dir_name());
        copy_files(master, &dir, w.total_files(), k + 1 == sides.len(), &side.label())?;
        dirs.push(dir);
    }
    syncfs(base)?;
    let mut workers = Vec::new();
    for (k, (side, dir)) in sides.iter().zip(dirs).enumerate() {
        let cg = match common.memory_budget {
            Some(limit) => {
                Some(MemoryCgroup::create(&format!("rrdscale-bench-{}-{k}", std::process::id()), limit)?)
            }
            None => None,
        };
        let spec = WorkerSpec {
            side: *side,
            dir,
            schema: w.schema.clone(),
            steps: w.steps.clone(),
            cgroup: cg.as_ref().map(|c| c.path.clone()),
            chunk: common.chunk,
            max_open: common.max_open,
            rrdscale_exe: exe.to_path_buf(),
            rrdscale_librrd: our_librrd(common, exe),
        };
        workers.push(Worker::spawn(exe, &spec, cg)?);
    }
    for (index, step) in w.steps.iter().enumerate() {
        for worker in &mut workers {
            worker.step(index, step)?;
        }
    }
    let mut results = Vec::new();
    for worker in workers {
        results.push(worker.finish()?);
    }
    let verify = if sides.len() > 1 && common.record.verify > 0 {
        Some(verify(&results, w.total_files(), common.record.verify)?)
    } else {
        None
    };
    Ok(Results {
        command,
        machine: machine(base, load_before),
        kind: w.kind,
        schema: w.schema.clone(),
        file_bytes,
        memory_budget_bytes: common.memory_budget,
        cgroup: cgroup_where,
        dir: base.to_path_buf(),
        dir_kept: true,
        passes: w.passes().cloned().collect(),
        sides: results,
        final_times: w.final_times(),
        verify,
        plots: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("--files"), "--files");
        assert_eq!(shell_quote("1000,5000"), "1000,5000");
        assert_eq!(shell_quote("-s 60 DS:a"), "'-s 60 DS:a'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
