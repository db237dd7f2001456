//! One cache shard's map: its files' keys and entries side by side in one
//! array, in the order the files were first seen, and a hash table of
//! their positions.
//!
//! Why: pollers name the same files in the same order every interval
//! (Cacti's poller, MRTG's targets, collectd's plugins, a relay's BATCH),
//! and a BATCH over more files than the CPU caches hold reads one entry
//! per line from memory. A table that keeps its entries in its buckets
//! scatters them by hash and gives an entry's address only by reading its
//! key, so every line waited for a miss on its bucket (most of a steady
//! BATCH line's time, docs/BENCHMARKS.md). Here the table holds a 4-byte
//! position per file (the tables of every shard stay in the caches), so a
//! BATCH finds where the next lines' entries are without touching them and
//! has them prefetched while it handles the current line
//! (`connection::look_ahead`, [`ShardMap::prefetch_entry`]); and files
//! first seen one after another are neighbours in memory, as they are in
//! rrdcached's allocation-ordered tree (for which that order is worth
//! about a quarter of a steady BATCH: docs/BENCHMARKS.md, 2026-11-29).
//! A removal moves the last slot into the hole.
//!
//! The map answers by `&str` and hashes with the foldhash state it is
//! given (the cache's, randomly seeded: clients cannot aim names at one
//! bucket, and the hash that picked the shard serves the map too).
//! Deliberately absent: an entry API; [`ShardMap::get_or_insert_with`] is
//! the one lookup an UPDATE makes.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::cache::Entry;
use crate::key::Key;

/// A file's key and entry, side by side in this order (`repr(C)`): the
/// entry's fields an UPDATE touches follow the key's bytes.
#[repr(C)]
struct Slot {
    key: Key,
    entry: Entry,
}

/// The map of one shard (see the module doc).
#[derive(Default)]
pub struct ShardMap {
    /// Each file's place in `slots`.
    index: HashTable<u32>,
    /// Keys and entries, in the order the files were first seen (a removal
    /// moves the last one into the hole).
    slots: Vec<Slot>,
    hasher: foldhash::fast::RandomState,
}

impl ShardMap {
    /// An empty map hashing with `hasher` (the cache's, so that the hash
    /// that picked the shard is the one the map's methods `_hashed` take).
    pub fn with_hasher(hasher: foldhash::fast::RandomState) -> ShardMap {
        ShardMap { index: HashTable::new(), slots: Vec::new(), hasher }
    }

    /// The hash this map files `key` under.
    pub fn hash(&self, key: &str) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Starts loading the entry a lookup of the key hashed to `hash` would
    /// read (its first candidate: the only one, nearly always), without
    /// waiting for it (see `rrd_sys::prefetch`).
    pub fn prefetch_entry(&self, hash: u64) {
        if let Some(&i) = self.index.iter_hash(hash).next() {
            if let Some(slot) = self.slots.get(i as usize) {
                // The key and the entry's fields after it span several lines.
                rrd_sys::prefetch::read_all(slot);
            }
        }
    }

    /// Starts loading where the pending values of `key` (hashed to `hash`)
    /// end; reads its entry, so that is best prefetched first.
    pub fn prefetch_values(&self, hash: u64, key: &str) {
        if let Some(i) = self.place_hashed(hash, key) {
            self.slots[i].entry.prefetch_pending();
        }
    }

    /// `key`'s place in `slots`.
    fn place(&self, key: &str) -> Option<usize> {
        self.place_hashed(self.hash(key), key)
    }

    fn place_hashed(&self, hash: u64, key: &str) -> Option<usize> {
        self.index.find(hash, holds(&self.slots, key)).map(|&i| i as usize)
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.place(key).is_some()
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.place(key).map(|i| &self.slots[i].entry)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.place(key).map(|i| &mut self.slots[i].entry)
    }

    /// The stored key (shared by timers and the flush queue) and the entry.
    pub fn get_key_value(&self, key: &str) -> Option<(&Key, &Entry)> {
        self.place(key).map(|i| (&self.slots[i].key, &self.slots[i].entry))
    }

    /// `key`'s entry and stored key, the entry made by `make` when there is
    /// none (`None` when there is none and `make` gives none).
    pub fn get_or_insert_with(
        &mut self,
        key: &str,
        make: impl FnOnce() -> Option<Entry>,
    ) -> Option<(&Key, &mut Entry)> {
        self.get_or_insert_hashed(self.hash(key), key, make)
    }

    /// [`ShardMap::get_or_insert_with`] for a key whose [`ShardMap::hash`]
    /// the caller has.
    pub fn get_or_insert_hashed(
        &mut self,
        hash: u64,
        key: &str,
        make: impl FnOnce() -> Option<Entry>,
    ) -> Option<(&Key, &mut Entry)> {
        debug_assert_eq!(hash, self.hash(key));
        let i = match self.place_hashed(hash, key) {
            Some(i) => i,
            None => self.push(Key::from(key), make()?),
        };
        let slot = &mut self.slots[i];
        Some((&slot.key, &mut slot.entry))
    }

    /// Adds a file this map does not hold, at the end; its place.
    fn push(&mut self, key: Key, entry: Entry) -> usize {
        let place = self.slots.len();
        let at = u32::try_from(place).expect("fewer than 2^32 files in a shard");
        self.slots.push(Slot { key, entry });
        self.index_slot(at);
        place
    }

    /// Files slot `at` in the index.
    fn index_slot(&mut self, at: u32) {
        let (slots, hasher) = (&self.slots, &self.hasher);
        let rehash = |&i: &u32| hasher.hash_one(slots[i as usize].key.as_str());
        self.index.insert_unique(rehash(&at), at, rehash);
    }

    /// Stores `entry` as `key`'s, and gives back the entry it replaces.
    pub fn insert(&mut self, key: Key, entry: Entry) -> Option<Entry> {
        match self.place(&key) {
            Some(i) => Some(std::mem::replace(&mut self.slots[i].entry, entry)),
            None => {
                self.push(key, entry);
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Entry> {
        let found = self.index.find_entry(self.hash(key), holds(&self.slots, key)).ok()?;
        let place = found.remove().0 as usize;
        let removed = self.slots.swap_remove(place);
        if let Some(moved) = self.slots.get(place) {
            // The last slot moved into the hole: its index follows it.
            let last = self.slots.len() as u32;
            let hash = self.hash(&moved.key);
            *self.index.find_mut(hash, |&i| i == last).expect("every slot is indexed") = place as u32;
        }
        Some(removed.entry)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        self.slots.iter().map(|s| (&s.key, &s.entry))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&Key, &mut Entry)> {
        self.slots.iter_mut().map(|s| (&s.key, &mut s.entry))
    }

    /// Keeps the entries `keep` accepts, in their order.
    pub fn retain(&mut self, mut keep: impl FnMut(&Key, &mut Entry) -> bool) {
        let before = self.slots.len();
        self.slots.retain_mut(|s| keep(&s.key, &mut s.entry));
        if self.slots.len() != before {
            // Slots after a dropped one moved: the index is made again.
            self.index.clear();
            for at in 0..self.slots.len() as u32 {
                self.index_slot(at);
            }
        }
    }
}

/// Whether an index position names `key`'s slot (by the stored key's
/// bytes, [`Key::as_bytes`]).
fn holds<'a>(slots: &'a [Slot], key: &'a str) -> impl Fn(&u32) -> bool + 'a {
    move |&i| slots[i as usize].key.as_bytes() == key.as_bytes()
}

impl std::fmt::Debug for ShardMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::ShardMap;
    use crate::cache::Entry;

    fn entry(stamp: f64) -> Entry {
        Entry::new(stamp, 0, 0)
    }

    #[test]
    fn finds_what_it_holds_by_str_and_only_that() {
        let mut m = ShardMap::default();
        let long = format!("/{}", "x".repeat(200));
        assert!(m.insert("/a.rrd".into(), entry(1.0)).is_none());
        assert!(m.insert(long.as_str().into(), entry(2.0)).is_none());
        assert_eq!(m.get("/a.rrd").map(Entry::last_stamp), Some(1.0));
        assert_eq!(m.get(&long).map(Entry::last_stamp), Some(2.0));
        assert!(m.get("/a.rr").is_none() && !m.contains_key("/b.rrd"));
        let replaced = m.insert("/a.rrd".into(), entry(3.0));
        assert_eq!(replaced.map(|e| e.last_stamp()), Some(1.0));
        assert_eq!(
            (m.len(), m.get_key_value("/a.rrd").map(|(k, e)| (k.as_str(), e.last_stamp()))),
            (2, Some(("/a.rrd", 3.0)))
        );
        assert_eq!(m.remove("/a.rrd").map(|e| e.last_stamp()), Some(3.0));
        assert!(m.remove("/a.rrd").is_none() && m.get("/a.rrd").is_none());
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn a_slot_is_its_key_then_its_entry() {
        use std::mem::{offset_of, size_of};
        assert_eq!(offset_of!(super::Slot, key), 0);
        assert_eq!(offset_of!(super::Slot, entry), size_of::<crate::key::Key>());
    }

    #[test]
    fn get_or_insert_with_makes_only_what_is_missing() {
        let mut m = ShardMap::default();
        assert!(m.get_or_insert_with("/a", || None).is_none());
        assert!(m.is_empty());
        let (k, e) = m.get_or_insert_with("/a", || Some(entry(5.0))).expect("made");
        assert_eq!((k.as_str(), e.last_stamp()), ("/a", 5.0));
        let (_, e) = m.get_or_insert_with("/a", || panic!("made twice")).expect("found");
        assert_eq!(e.last_stamp(), 5.0);
        assert_eq!(m.len(), 1);
    }

    /// Growth, removals (each moving the last slot into its hole) and
    /// retain keep every other key findable, with its own entry.
    #[test]
    fn many_keys_survive_growth_removal_and_retain() {
        let mut m = ShardMap::default();
        let name = |i: u64| format!("/d/{i}.rrd");
        for i in 0..6000 {
            m.insert(name(i).as_str().into(), entry(i as f64));
        }
        for i in (0..6000).step_by(3) {
            assert_eq!(m.remove(&name(i)).map(|e| e.last_stamp()), Some(i as f64));
        }
        m.retain(|_, e| (e.last_stamp() as u64).is_multiple_of(2));
        let kept = |i: u64| !i.is_multiple_of(3) && i.is_multiple_of(2);
        for i in 0..6000 {
            let got = m.get(&name(i)).map(Entry::last_stamp);
            assert_eq!(got, kept(i).then_some(i as f64), "{}", name(i));
        }
        assert_eq!(m.len(), (0..6000).filter(|&i| kept(i)).count());
        assert!(m.iter().all(|(k, e)| k.as_str() == name(e.last_stamp() as u64)));
    }
}
