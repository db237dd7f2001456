//! A BATCH's next lines, resolved before their turn, so that the memory
//! their UPDATEs touch is on its way into the CPU's caches while earlier
//! lines are handled.
//!
//! Why: over more files than the CPU caches hold, each line of a steady
//! BATCH waits for two cache misses: its file's entry, and the end of the
//! file's pending values, whose address is in the entry. The addresses are
//! known ahead: the line after the current one names the next entry, and
//! the entry loaded for it one line ago gives where its values end. So,
//! while line `k` is handled, the entry of line `k + 2` and the values of
//! line `k + 1` are prefetched (`Cache::prefetch_entry`,
//! `Cache::prefetch_values`), and line `k + 1`'s cache key, resolved here
//! once, is handed to it rather than resolved again. Measured in
//! docs/BENCHMARKS.md (2026-11-29).
//!
//! Only complete lines of the chunk being run are looked at, by their
//! offsets in it; [`LookAhead::reset`] forgets them when the chunk is
//! consumed. A line the fast path does not take (another command, a name
//! refused) is simply not resolved here. Everything done here is a hint or
//! a cache of what the line's own handling would compute.

use crate::paths::Paths;
use crate::state::Daemon;
use rrd_protocol::fields;

/// One line resolved ahead: where it starts and ends in the chunk (the end
/// past its newline, as the framer's consumed count is), its cache key and
/// the key's hash (`Cache::hash`, computed once for both prefetches).
#[derive(Default)]
struct Resolved {
    start: usize,
    end: usize,
    key: String,
    hash: u64,
    valid: bool,
}

/// The two lines after the current one (see the module doc).
#[derive(Default)]
pub struct LookAhead {
    /// The line after the current one.
    near: Resolved,
    /// The line after that.
    far: Resolved,
}

impl LookAhead {
    /// The cache key of the line ending at `end`, when it was resolved
    /// ahead: swapped into `key` (whose old buffer is kept for reuse).
    pub fn take(&mut self, end: usize, key: &mut String) -> bool {
        if !(self.near.valid && self.near.end == end) {
            return false;
        }
        std::mem::swap(key, &mut self.near.key);
        self.near.valid = false;
        std::mem::swap(&mut self.near, &mut self.far);
        true
    }

    /// Called while the line ending at `next` is handled: makes sure the
    /// two lines after it are resolved, and prefetches what they will touch.
    pub fn advance(&mut self, daemon: &Daemon, paths: &Paths, chunk: &[u8], next: usize) {
        let cache = &daemon.cache;
        if self.near.valid && self.near.start == next {
            // Its entry was prefetched one line ago: now where its values end.
            cache.prefetch_values(self.near.hash, &self.near.key);
        } else if resolve(&mut self.near, paths, chunk, next) {
            self.near.hash = cache.hash(&self.near.key);
            cache.prefetch_entry(self.near.hash);
        } else {
            self.far.valid = false;
            return;
        }
        if resolve(&mut self.far, paths, chunk, self.near.end) {
            self.far.hash = cache.hash(&self.far.key);
            cache.prefetch_entry(self.far.hash);
        }
    }

    /// Forgets every line (the chunk they were in is consumed).
    pub fn reset(&mut self) {
        self.near.valid = false;
        self.far.valid = false;
    }
}

/// Resolves the UPDATE line starting at `start` of `chunk` into `r`, when
/// there is a complete one the fast path would take.
fn resolve(r: &mut Resolved, paths: &Paths, chunk: &[u8], start: usize) -> bool {
    r.valid = false;
    let Some(rest) = chunk.get(start..) else { return false };
    let Some(len) = memchr::memchr(b'\n', rest) else { return false };
    let line = rest[..len].strip_suffix(b"\r").unwrap_or(&rest[..len]);
    let Some((name, _)) = fields::plain_update(line) else { return false };
    let Ok(name) = std::str::from_utf8(name) else { return false };
    if paths.resolve_into(name, &mut r.key).is_err() {
        return false;
    }
    (r.start, r.end, r.valid) = (start, start + len + 1, true);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> Paths {
        Paths::new(Some(std::path::Path::new("/base")), true)
    }

    #[test]
    fn a_line_resolved_ahead_is_handed_to_its_turn_and_only_to_it() {
        let chunk = b"UPDATE a.rrd 1:1\nUPDATE b.rrd 1:2\nUPDATE c.rrd 1:3\n";
        let (p, mut la) = (paths(), LookAhead::default());
        let (e1, e2) = (17, 34);
        assert!(resolve(&mut la.near, &p, chunk, e1) && resolve(&mut la.far, &p, chunk, e2));
        let mut key = String::from("old");
        assert!(!la.take(e1, &mut key), "the line ending at e1 was not resolved ahead");
        assert!(la.take(e2, &mut key));
        assert_eq!(key, "/base/b.rrd");
        assert!(la.take(chunk.len(), &mut key));
        assert_eq!(key, "/base/c.rrd");
        assert!(!la.take(chunk.len(), &mut key), "taken once");
    }

    #[test]
    fn only_complete_plain_updates_are_resolved() {
        let p = paths();
        let mut r = Resolved::default();
        assert!(!resolve(&mut r, &p, b"UPDATE a.rrd 1:1", 0), "no newline yet");
        assert!(!resolve(&mut r, &p, b"FLUSH a.rrd\n", 0));
        assert!(!resolve(&mut r, &p, b"UPDATE ../x.rrd 1:1\n", 0), "outside the base");
        assert!(resolve(&mut r, &p, b"UPDATE d/./a.rrd 1:1\r\n", 0));
        assert_eq!((r.key.as_str(), r.end), ("/base/d/a.rrd", 22));
    }

    #[test]
    fn reset_forgets_every_line() {
        let chunk = b"UPDATE a.rrd 1:1\nUPDATE b.rrd 1:2\n";
        let (p, mut la) = (paths(), LookAhead::default());
        assert!(resolve(&mut la.near, &p, chunk, 0));
        la.reset();
        let mut key = String::new();
        assert!(!la.take(17, &mut key));
    }
}
