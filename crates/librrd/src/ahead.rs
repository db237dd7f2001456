//! Read-ahead across calls for callers that update their files in the same
//! order every cycle (collectd, MRTG, most pollers), when memory is short.
//!
//! Why: a library is called for one file at a time, so on a cold cache each
//! update reads its header page and row page synchronously, one disk read
//! after the other (13k reads/s at queue depth 1 on the benchmark disk,
//! 114k at depth 64), as librrd does. The batch updater and the daemon
//! avoid that by asking for many files' pages at once; a library can only
//! do so by predicting the next calls. This module remembers, for each
//! file, which file was updated after it and which pages its next update
//! will need (the header's, and the page of the next row of each archive
//! that consolidates at the next step, as the header its last update left
//! says: `writer::next_pages`), and
//! keeps [`WINDOW`] files ahead of the caller asked for with
//! `POSIX_FADV_WILLNEED`.
//!
//! Active only while memory is short: once the kept headers no longer fit
//! their memory bound ([`crate::writer`]), the files' pages do not fit the
//! page cache either. Warm, it stays off (a WILLNEED on cached pages is a
//! wasted system call). It only ever advises the kernel: a wrong guess
//! costs a read of pages nobody uses, never a wrong result.
//! `RRDSCALE_LIBRRD_AHEAD=0` keeps it off, `=always` turns it on from the
//! first call (tests).
//!
//! Bounded: [`MAX_FILES`] files remembered (then it forgets everything and
//! learns again). Deliberately absent: several interleaved orders (threads
//! updating different sets): the successor recorded is whichever call came
//! next, so prediction then degrades to guesses.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use rrd_engine::pagecache::{advise, Advice};

/// Files asked for ahead of the caller (two to four pages each).
pub const WINDOW: usize = 48;
/// Files remembered.
pub const MAX_FILES: usize = 1 << 20;
/// Pages remembered per file (the header's and the archives' next rows).
const PAGES: usize = 12;
const PAGE_LEN: u64 = 4096;

#[derive(Default)]
struct Seen {
    next: Option<OsString>,
    pages: Vec<u64>,
}

#[derive(Default)]
struct Ahead {
    files: HashMap<OsString, Seen>,
    last: Option<OsString>,
    /// The furthest file asked for, and how many asked-for files lie
    /// between the caller and it.
    cursor: Option<OsString>,
    lead: usize,
}

static STATE: Mutex<Option<Ahead>> = Mutex::new(None);
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Memory is short (a kept header did not fit its bound): start reading
/// ahead.
pub fn activate() {
    static ALLOWED: OnceLock<bool> = OnceLock::new();
    if *ALLOWED.get_or_init(|| std::env::var_os("RRDSCALE_LIBRRD_AHEAD").is_none_or(|v| v != "0")) {
        ACTIVE.store(true, Ordering::Relaxed);
    }
}

/// Whether the read-ahead is on (forced, or memory is short): the caller
/// then works out the pages each update's file will need next.
pub fn wanted() -> bool {
    static ALWAYS: OnceLock<bool> = OnceLock::new();
    *ALWAYS.get_or_init(|| std::env::var_os("RRDSCALE_LIBRRD_AHEAD").is_some_and(|v| v == "always"))
        || ACTIVE.load(Ordering::Relaxed)
}

/// Notes that `path` was just updated and that its next update will need
/// `pages`, and asks for the pages of the files predicted to come next.
pub fn after_update(path: &Path, pages: &[u64]) {
    if !wanted() {
        return;
    }
    let mut guard = STATE.lock().unwrap_or_else(|p| p.into_inner());
    guard.get_or_insert_with(Ahead::default).note(path, pages, &mut ask);
}

impl Ahead {
    fn note(&mut self, path: &Path, pages: &[u64], ask: &mut dyn FnMut(&Path, &[u64])) {
        if self.files.len() >= MAX_FILES {
            *self = Ahead::default();
        }
        let key = path.as_os_str();
        if let Some(last) = self.last.take() {
            if last != key {
                let seen = self.files.entry(last).or_default();
                if seen.next.as_deref() != Some(key) {
                    seen.next = Some(key.to_owned());
                }
            }
        }
        let seen = self.files.entry(key.to_owned()).or_default();
        seen.pages.clear();
        seen.pages.push(0);
        seen.pages.extend(pages.iter().copied().filter(|&p| p != 0).take(PAGES - 1));
        self.last = Some(key.to_owned());

        // The caller reached the cursor, or nothing is ahead: start from here.
        if self.lead == 0 || self.cursor.as_deref() == Some(key) {
            self.cursor = Some(key.to_owned());
            self.lead = 0;
        } else {
            self.lead -= 1;
        }
        while self.lead < WINDOW {
            let Some(cursor) = self.cursor.take() else { break };
            let Some(next) = self.files.get(&cursor).and_then(|s| s.next.clone()) else { break };
            if next == key {
                break; // a cycle shorter than the window: all of it asked for
            }
            if let Some(s) = self.files.get(&next) {
                ask(Path::new(&next), &s.pages);
            }
            self.cursor = Some(next);
            self.lead += 1;
        }
        if self.cursor.is_none() {
            self.lead = 0;
        }
    }
}

/// `WILLNEED` for `pages` of `path` (opened for the advice only).
fn ask(path: &Path, pages: &[u64]) {
    let Ok(file) = File::open(path) else { return };
    for &p in pages {
        let _ = advise(&file, Advice::WillNeed, p * PAGE_LEN, PAGE_LEN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two cycles over 200 files: the first only learns; in the second,
    /// every file is asked for once, with the pages its previous update
    /// wrote, before its own update and at most WINDOW updates earlier.
    #[test]
    fn a_repeated_order_is_read_ahead_by_the_window() {
        let names: Vec<String> = (0..200).map(|i| format!("/d/f{i:03}.rrd")).collect();
        let mut a = Ahead::default();
        let mut asked: Vec<(usize, String, Vec<u64>)> = Vec::new();
        for cycle in 0..2 {
            for (i, n) in names.iter().enumerate() {
                let at = cycle * names.len() + i;
                a.note(Path::new(n), &[0, 3 + i as u64 % 5], &mut |p, pages| {
                    asked.push((at, p.to_string_lossy().into_owned(), pages.to_vec()))
                });
            }
        }
        // Nothing is known ahead during the first cycle.
        assert!(asked.iter().all(|(at, _, _)| *at >= names.len() - 1), "{:?}", &asked[..3.min(asked.len())]);
        for (i, n) in names.iter().enumerate().skip(1) {
            // Asked for before its update in the second cycle (later asks
            // are for a third one).
            let due = names.len() + i;
            let when: Vec<usize> =
                asked.iter().filter(|(at, p, _)| p == n && *at < due).map(|(at, _, _)| *at).collect();
            assert_eq!(when.len(), 1, "{n} asked for once: {when:?}");
            assert!(when[0] < due && due - when[0] <= WINDOW, "{n}: asked at {}, updated at {due}", when[0]);
            let pages = &asked.iter().find(|(_, p, _)| p == n).unwrap().2;
            assert_eq!(pages, &vec![0, 3 + i as u64 % 5], "{n}: the header page and last time's row page");
        }
    }

    /// A caller that jumps elsewhere (another order) restarts from where it
    /// is instead of following a stale cursor.
    #[test]
    fn a_jump_restarts_from_the_current_file() {
        let mut a = Ahead::default();
        let mut asked = Vec::new();
        for _ in 0..2 {
            for i in 0..10 {
                a.note(Path::new(&format!("/a/{i}")), &[], &mut |p, _| asked.push(p.to_path_buf()));
            }
        }
        asked.clear();
        // A file never seen: nothing predicted after it.
        a.note(Path::new("/b/new"), &[], &mut |p, _| asked.push(p.to_path_buf()));
        assert!(asked.is_empty(), "{asked:?}");
        // Back into the known order at /a/3: the files after it are asked for.
        a.note(Path::new("/a/3"), &[], &mut |p, _| asked.push(p.to_path_buf()));
        assert_eq!(asked.first().map(|p| p.display().to_string()), Some("/a/4".into()), "{asked:?}");
    }
}
