//! Switching from rrdcached loses no pending value: journals written by the
//! REAL rrdcached 1.7.2 (`-j DIR -b BASE -w 3600`, no `-F`), left by kill -9,
//! by SIGTERM (two runs, so two journal files), and by a run in which some
//! files were FLUSHed (so WROTE lines exist), are taken over by
//! `rrdscale daemon -j DIR -b BASE`: after a FLUSHALL every RRD file holds
//! exactly what `rrdtool update` with the values rrdcached accepted gives
//! (compared with `rrdtool dump` and byte for byte), rrdcached's journal
//! files are gone, and a restart changes nothing. A last case restores
//! rrdcached's files after a migration (a crash before they were deleted)
//! with newer values in our journal: each value is applied once.
//!
//! rrdcached 1.7.2 writes its journal through stdio without flushing each
//! line, so a kill -9 loses what the buffer held (up to one block) and can
//! cut the last line. The kill tests send padding updates for `pad.rrd`
//! after the values under test, so that those are on disk; `pad.rrd` must
//! then hold exactly a prefix of its values.

mod daemon_common;

use std::path::{Path, PathBuf};

use daemon_common::{create_rrd, require_tools, rrdtool, temp_dir, Client, Daemon, Kind};

const T0: i64 = 1_000_000_000;

/// Files under test and the names clients use for them (relative, `./`,
/// absolute, escaped).
const FILES: [&str; 5] = ["f0.rrd", "f1.rrd", "f2.rrd", "f3.rrd", "s p.rrd"];

struct Scene {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    reference: PathBuf,
    /// Values rrdcached accepted (and did not forget), per file, in order.
    accepted: Vec<Vec<String>>,
    pad: Vec<String>,
    step: i64,
}

impl Scene {
    fn new() -> Scene {
        require_tools();
        let (tmp, dir) = temp_dir();
        let reference = dir.join("reference");
        std::fs::create_dir_all(&reference).unwrap();
        for f in FILES.iter().chain(&["pad.rrd"]) {
            create_rrd(&dir.join(f), T0);
            std::fs::copy(dir.join(f), reference.join(f)).unwrap();
        }
        Scene { _tmp: tmp, dir, reference, accepted: vec![Vec::new(); FILES.len()], pad: Vec::new(), step: 0 }
    }

    fn wire_name(&self, i: usize) -> String {
        match i {
            1 => "./f1.rrd".to_string(),
            2 => self.dir.join(FILES[2]).display().to_string(),
            4 => r"s\ p.rrd".to_string(),
            _ => FILES[i].to_string(),
        }
    }

    fn next_value(&mut self, i: usize) -> String {
        self.step += 1;
        format!(
            "{}:{}:{}",
            T0 + 300 * self.step + i as i64,
            (self.step * 7 + i as i64) % 100,
            self.step * 1000
        )
    }

    /// One round: an UPDATE of one to three values for every file.
    fn round(&mut self, c: &mut Client) {
        for i in 0..FILES.len() {
            let n = 1 + (self.step as usize + i) % 3;
            let values: Vec<String> = (0..n).map(|_| self.next_value(i)).collect();
            let r = c.call(&format!("UPDATE {} {}", self.wire_name(i), values.join(" ")));
            assert_eq!(r, format!("0 errors, enqueued {n} value(s).\n"));
            self.accepted[i].extend(values);
        }
    }

    /// Enough updates of pad.rrd to push the values under test out of
    /// rrdcached's stdio buffer before a kill -9.
    fn pad(&mut self, c: &mut Client) {
        for _ in 0..40 {
            let values: Vec<String> = (0..100)
                .map(|_| {
                    let k = self.pad.len() as i64 + 1;
                    let v = format!("{}:{}:{}", T0 + 300 * k, k % 50, k * 10);
                    self.pad.push(v.clone());
                    v
                })
                .collect();
            let r = c.call(&format!("UPDATE pad.rrd {}", values.join(" ")));
            assert_eq!(r, "0 errors, enqueued 100 value(s).\n");
        }
    }

    fn journal(&self) -> PathBuf {
        self.dir.join("journal")
    }

    /// rrdcached's journal files and their text, in name order.
    fn rrdcached_journals(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = std::fs::read_dir(self.journal())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("rrd.journal"))
            .map(|n| {
                let text =
                    String::from_utf8_lossy(&std::fs::read(self.journal().join(&n)).unwrap()).into_owned();
                (n, text)
            })
            .collect();
        v.sort();
        v
    }

    /// rrdcached wrote none of the files under test: each still has its
    /// last update at `T0` (`wrote_it` says what would have written it).
    fn assert_unwritten(&self, wrote_it: &str) {
        for f in FILES {
            assert_eq!(last_update(&self.dir.join(f)), T0, "{f}: {wrote_it} wrote it");
        }
    }

    /// The values under test must be in rrdcached's journal (not in its
    /// stdio buffer) for the test to mean anything.
    fn assert_journaled(&self) {
        let all: String = self.rrdcached_journals().into_iter().map(|(_, t)| t).collect();
        for (i, values) in self.accepted.iter().enumerate() {
            if let Some(last) = values.last() {
                assert!(
                    all.contains(last.as_str()),
                    "{}: {last} is not in rrdcached's journal (still in its stdio buffer?)",
                    FILES[i]
                );
            }
        }
    }

    fn start_ours(&self) -> Daemon {
        Daemon::start(Kind::Ours, &self.dir, &["-V", "LOG_INFO"])
    }

    /// Starts our daemon on rrdcached's journal directory, writes
    /// everything, stops it; checks the files and the retirement; restarts
    /// once more and checks that nothing changes. Returns the log.
    fn migrate_and_check(&self) -> String {
        let journals = self.rrdcached_journals();
        assert!(!journals.is_empty(), "rrdcached left no journal file");
        let log = self.run_ours_and_flush();
        assert!(log.contains("migrated from rrdcached"), "no migration logged:\n{log}");
        assert_eq!(self.rrdcached_journals().len(), 0, "rrdcached's journal files were not retired:\n{log}");
        let snapshot = self.check_files(&log);
        // A restart finds nothing more to do.
        self.run_ours_and_flush();
        for (f, bytes) in snapshot {
            assert_eq!(std::fs::read(self.dir.join(&f)).unwrap(), bytes, "{f} changed on restart");
        }
        log
    }

    fn run_ours_and_flush(&self) -> String {
        let daemon = self.start_ours();
        let mut c = daemon.client();
        assert_eq!(c.call("FLUSHALL"), "0 Started flush.\n");
        for f in FILES.iter().chain(&["pad.rrd"]) {
            let r = c.call(&format!("FLUSH {}", f.replace(' ', r"\ ")));
            assert!(r.starts_with("0 "), "FLUSH {f}: {r}");
        }
        drop(c);
        let log_path = daemon.log.clone();
        daemon.stop();
        std::fs::read_to_string(log_path).unwrap_or_default()
    }

    /// Every file equals its reference updated by rrdtool with the accepted
    /// values (pad.rrd: with the prefix of its values that reached the
    /// journal). Returns the files' bytes.
    fn check_files(&self, log: &str) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for (i, f) in FILES.iter().enumerate() {
            self.update_reference(f, &self.accepted[i]);
            out.push(self.compare(f, log));
        }
        let last: i64 =
            rrdtool(&["last", self.dir.join("pad.rrd").to_str().unwrap()]).trim().parse().unwrap();
        let prefix: Vec<String> = self
            .pad
            .iter()
            .take_while(|v| v.split(':').next().unwrap().parse::<i64>().unwrap() <= last)
            .cloned()
            .collect();
        if !self.pad.is_empty() {
            assert!(!prefix.is_empty(), "no padding value was migrated:\n{log}");
            assert_eq!(prefix.last().unwrap().split(':').next().unwrap(), last.to_string());
        }
        self.update_reference("pad.rrd", &prefix);
        out.push(self.compare("pad.rrd", log));
        out
    }

    fn update_reference(&self, f: &str, values: &[String]) {
        let path = self.reference.join(f).display().to_string();
        for chunk in values.chunks(500) {
            let mut args = vec!["update", path.as_str()];
            args.extend(chunk.iter().map(String::as_str));
            rrdtool(&args);
        }
    }

    fn compare(&self, f: &str, log: &str) -> (String, Vec<u8>) {
        let ours = self.dir.join(f);
        let want = self.reference.join(f);
        let (dump_ours, dump_want) =
            (rrdtool(&["dump", ours.to_str().unwrap()]), rrdtool(&["dump", want.to_str().unwrap()]));
        if dump_ours != dump_want {
            panic!("{f}: migrated values differ from rrdtool's\n--- want\n{dump_want}\n--- have\n{dump_ours}\n--- log\n{log}");
        }
        let bytes = std::fs::read(&ours).unwrap();
        assert_eq!(bytes, std::fs::read(&want).unwrap(), "{f}: same dump, different bytes");
        (f.to_string(), bytes)
    }
}

fn last_update(path: &Path) -> i64 {
    rrdtool(&["last", path.to_str().unwrap()]).trim().parse().unwrap()
}

/// (a) rrdcached killed with SIGKILL: its journal holds the values, the
/// last line possibly cut.
#[test]
fn values_left_by_a_killed_rrdcached_are_migrated() {
    let mut s = Scene::new();
    let rrdcached = Daemon::start(Kind::Rrdcached, &s.dir, &[]);
    let mut c = rrdcached.client();
    for _ in 0..4 {
        s.round(&mut c);
    }
    s.pad(&mut c);
    drop(c);
    rrdcached.kill9();
    s.assert_journaled();
    s.assert_unwritten("rrdcached (-w 3600)");
    s.migrate_and_check();
}

/// (b) rrdcached stopped with SIGTERM, without -F, twice: 1.7.2 writes no
/// pending value and leaves its journals (every file since the last
/// rotation, complete lines, no WROTE for unwritten values); the second
/// run replays the first one's journal and keeps it. Also: an UPDATE
/// refused part-way (only the values before the refusal count) and a
/// FORGET (values before it are dropped).
#[test]
fn values_left_by_rrdcached_stopped_without_f_are_migrated() {
    let mut s = Scene::new();
    let rrdcached = Daemon::start(Kind::Rrdcached, &s.dir, &[]);
    let mut c = rrdcached.client();
    s.round(&mut c);
    // Refused at its second value: the third is refused with it.
    let (ok, old, new) = (s.next_value(3), format!("{}:1:1", T0 + 1), s.next_value(3));
    let r = c.call(&format!("UPDATE f3.rrd {ok} {old} {new}"));
    assert!(r.starts_with("-1 illegal attempt to update"), "{r}");
    s.accepted[3].push(ok);
    s.round(&mut c);
    assert_eq!(c.call(r"FORGET s\ p.rrd"), "0 Gone!\n");
    s.accepted[4].clear();
    s.round(&mut c);
    drop(c);
    rrdcached.stop();
    let first = s.rrdcached_journals();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].1.contains("update ") && !first[0].1.contains("wrote "), "{}", first[0].1);
    assert!(first[0].1.ends_with('\n'), "SIGTERM leaves complete lines");

    let rrdcached = Daemon::start(Kind::Rrdcached, &s.dir, &[]);
    let mut c = rrdcached.client();
    s.round(&mut c);
    s.round(&mut c);
    drop(c);
    rrdcached.stop();
    let journals = s.rrdcached_journals();
    assert_eq!(journals.len(), 2, "the second run keeps the first run's journal: {journals:?}");
    s.assert_unwritten("SIGTERM without -F");
    s.migrate_and_check();
}

/// (c) Some files FLUSHed before the kill: their journal has WROTE lines,
/// the values before them are in the files already (written by librrd
/// 1.7.2), the values after them are not.
#[test]
fn values_after_wrote_lines_are_migrated_and_written_ones_skipped() {
    let mut s = Scene::new();
    let rrdcached = Daemon::start(Kind::Rrdcached, &s.dir, &[]);
    let mut c = rrdcached.client();
    s.round(&mut c);
    s.round(&mut c);
    for i in [0, 2, 4] {
        let r = c.call(&format!("FLUSH {}", s.wire_name(i)));
        assert!(r.starts_with("0 Successfully flushed"), "{r}");
    }
    s.round(&mut c);
    s.round(&mut c);
    s.pad(&mut c);
    drop(c);
    rrdcached.kill9();
    s.assert_journaled();
    let text: String = s.rrdcached_journals().into_iter().map(|(_, t)| t).collect();
    assert_eq!(text.matches("\nwrote ").count(), 3, "{text}");
    assert!(last_update(&s.dir.join(FILES[0])) > T0);
    s.migrate_and_check();
}

/// The crash argument end to end: a migration copied rrdcached's values
/// into our journal and deleted rrdcached's files; clients then updated
/// some of the files through us; kill -9. Putting rrdcached's files back
/// (as if the crash had come before they were deleted) gives a start with
/// the same values in both journals, and newer ones in ours: each value is
/// applied once.
#[test]
fn a_crash_before_retiring_applies_each_value_once() {
    let mut s = Scene::new();
    let rrdcached = Daemon::start(Kind::Rrdcached, &s.dir, &[]);
    let mut c = rrdcached.client();
    for _ in 0..3 {
        s.round(&mut c);
    }
    drop(c);
    rrdcached.stop();
    let saved = s.rrdcached_journals();

    let ours = s.start_ours();
    let mut c = ours.client();
    for i in [0, 4] {
        let v = s.next_value(i);
        assert_eq!(c.call(&format!("UPDATE {} {v}", s.wire_name(i))), "0 errors, enqueued 1 value(s).\n");
        s.accepted[i].push(v);
    }
    drop(c);
    ours.kill9();
    assert!(s.rrdcached_journals().is_empty());
    for (name, text) in &saved {
        use std::os::unix::fs::PermissionsExt;
        let path = s.journal().join(name);
        std::fs::write(&path, text).unwrap();
        // As rrdcached makes them (it refuses group- or world-writable ones).
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let log = s.migrate_and_check();
    assert!(log.contains("0 value(s) for 0 RRD file(s) are now in our journal"), "{log}");
}
