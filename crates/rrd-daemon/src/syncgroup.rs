//! One `syncfs` shared by the flush workers.
//!
//! Why: a flushed batch must be durable before its journal segments may go,
//! and one `syncfs` per batch is what makes that cheap (one device cache
//! flush instead of one `fdatasync` per file). But `syncfs` writes back the
//! whole filesystem: with every worker calling it for its own batch, each
//! call also waits for the other workers' writes, and the workers end up
//! waiting on one another (measured in docs/BENCHMARKS.md, "2026-11-22 —
//! One `syncfs` shared by the flush workers (949bac3)": a 20,000-file cold
//! flush ran at 6,300 files/s with a `syncfs` per batch,
//! 9,900 without any). Here a worker that has written its batch asks for its
//! filesystems to be synced; if a sync is running, it waits for the next
//! one, which covers every filesystem asked for in the meantime, so one
//! `syncfs` serves every worker that finished writing while the previous
//! one ran (group commit, as the journal does for updates).
//!
//! Invariant: a request is answered with the result of a sync that started
//! after the request was made (so it covers every write made before the
//! request) and that synced every filesystem the request named.
//!
//! Deliberately absent: the I/O itself (the caller passes it), and any
//! attribution of an error to a file (a failed sync fails every request it
//! answers; the flusher then syncs its files one by one).

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

/// Sync results kept for waiters (they read theirs right after it lands).
const RESULTS_KEPT: usize = 64;

#[derive(Default)]
struct State {
    /// Syncs started, and finished, so far (a sync's number is its count).
    started: u64,
    finished: u64,
    running: bool,
    /// Filesystems (device, one path on it) the next sync must cover.
    wanted: BTreeMap<u64, PathBuf>,
    /// Recent results, by sync number.
    results: VecDeque<(u64, Result<(), String>)>,
}

#[derive(Default)]
pub struct SyncGroup {
    state: Mutex<State>,
    done: Condvar,
}

impl SyncGroup {
    /// Returns once a sync that started after this call has synced every
    /// filesystem in `filesystems` (device, a path on it), with its result.
    /// `sync_one` syncs the filesystem holding a path; whichever caller
    /// finds no sync running runs the next one, for everybody.
    pub fn sync<E: std::fmt::Display>(
        &self,
        filesystems: Vec<(u64, PathBuf)>,
        sync_one: impl Fn(u64, &Path) -> Result<(), E>,
    ) -> Result<(), String> {
        let mut s = self.state.lock().expect("sync group lock");
        for (device, path) in filesystems {
            s.wanted.entry(device).or_insert(path);
        }
        // The next sync to start takes `wanted`, ours included.
        let mine = s.started + 1;
        loop {
            if s.finished >= mine {
                return match s.results.iter().find(|(n, _)| *n == mine) {
                    Some((_, r)) => r.clone(),
                    None => Err("the sync's result is no longer known".into()),
                };
            }
            if !s.running {
                s.running = true;
                s.started += 1;
                let number = s.started;
                let wanted = std::mem::take(&mut s.wanted);
                drop(s);
                let result = wanted.iter().try_for_each(|(&d, p)| sync_one(d, p)).map_err(|e| e.to_string());
                s = self.state.lock().expect("sync group lock");
                s.running = false;
                s.finished = number;
                if s.results.len() == RESULTS_KEPT {
                    s.results.pop_front();
                }
                s.results.push_back((number, result));
                self.done.notify_all();
                continue;
            }
            s = self.done.wait(s).expect("sync group lock");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn requests_made_while_a_sync_runs_share_the_next_one() {
        let group = Arc::new(SyncGroup::default());
        let calls = Arc::new(Mutex::new(Vec::<PathBuf>::new()));
        let slow = |calls: Arc<Mutex<Vec<PathBuf>>>| {
            move |_: u64, p: &Path| -> Result<(), String> {
                std::thread::sleep(Duration::from_millis(100));
                calls.lock().unwrap().push(p.to_path_buf());
                Ok(())
            }
        };
        // The first request starts a sync; three more arrive while it runs.
        let first = {
            let (g, c) = (group.clone(), calls.clone());
            std::thread::spawn(move || g.sync(vec![(1, "/a/x".into())], slow(c)))
        };
        std::thread::sleep(Duration::from_millis(30));
        let later: Vec<_> = [(1, "/a/y"), (2, "/b/z"), (1, "/a/w")]
            .into_iter()
            .map(|(d, p)| {
                let (g, c) = (group.clone(), calls.clone());
                std::thread::spawn(move || g.sync(vec![(d, PathBuf::from(p))], slow(c)))
            })
            .collect();
        first.join().unwrap().unwrap();
        for t in later {
            t.join().unwrap().unwrap();
        }
        let calls = calls.lock().unwrap().clone();
        // One sync for the first request, then ONE more covering both
        // devices for the three that waited (one path per device).
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert_eq!(calls[0], PathBuf::from("/a/x"));
        // Which of /a/y and /a/w stands for device 1 depends on which of
        // those threads got there first.
        let mut second: Vec<_> = calls[1..].to_vec();
        second.sort();
        assert!(second[0] == Path::new("/a/y") || second[0] == Path::new("/a/w"), "{calls:?}");
        assert_eq!(second[1], PathBuf::from("/b/z"), "{calls:?}");
    }

    #[test]
    fn a_failed_sync_fails_every_request_it_answers_and_only_those() {
        let group = SyncGroup::default();
        let n = AtomicUsize::new(0);
        let flaky = |_: u64, _: &Path| {
            if n.fetch_add(1, Ordering::SeqCst) == 0 {
                Err("EIO")
            } else {
                Ok(())
            }
        };
        assert_eq!(group.sync(vec![(1, "/a".into())], flaky), Err("EIO".to_string()));
        assert_eq!(group.sync(vec![(1, "/a".into())], flaky), Ok(()));
        assert_eq!(group.sync(Vec::new(), flaky), Ok(()), "nothing asked: a sync of nothing succeeds");
    }
}
