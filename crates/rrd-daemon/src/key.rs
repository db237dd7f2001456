//! The cache key: a file's normalized path, kept inline when it is short.
//!
//! Why: an UPDATE looks its file up in a shard's map, which compares the
//! key of the slot whose tag matches. With the path in a separate
//! allocation that compare is one more cache miss per UPDATE (measured:
//! about a quarter of the daemon's time in a BATCH of 20,000 cached files,
//! docs/BENCHMARKS.md). A key of up to [`INLINE_MAX`] bytes (most RRD
//! paths) lives in the slot itself, next to the entry
//! (crate::shard_map), so the compare reads memory the lookup brings in
//! anyway; a longer one is shared on the heap. Either way it hashes,
//! compares and orders exactly as the `str` it holds, so maps keyed by it
//! are looked up with `&str`.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Longest key kept inline (the inline form is 88 bytes with its length).
pub const INLINE_MAX: usize = 86;

#[derive(Clone)]
pub struct Key(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE_MAX] },
    Heap(Arc<str>),
}

impl Key {
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                // Only ever filled from a whole `&str` (see `From`).
                std::str::from_utf8(&bytes[..*len as usize]).expect("an inline key holds UTF-8")
            }
            Repr::Heap(s) => s,
        }
    }
}

impl Key {
    /// The key's bytes, without the UTF-8 check [`Key::as_str`] makes
    /// (what a lookup compares: checking the stored key again on every
    /// probe was about 4% of a steady BATCH line, docs/BENCHMARKS.md).
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
            Repr::Heap(s) => s.as_bytes(),
        }
    }
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        if s.len() <= INLINE_MAX {
            let mut bytes = [0u8; INLINE_MAX];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Key(Repr::Inline { len: s.len() as u8, bytes })
        } else {
            Key(Repr::Heap(s.into()))
        }
    }
}

impl std::ops::Deref for Key {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Key {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<std::path::Path> for Key {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(self.as_str())
    }
}

// Hash, Eq and Ord as the `str` (Borrow requires the same Hash and Eq).
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    /// Short and long keys give back their text, hash like the `str`
    /// (so `&str` lookups find them), and compare and order like it.
    #[test]
    fn keys_behave_as_their_text() {
        let short = "/srv/rrd/host/if_octets.rrd";
        let long = format!("/srv/rrd/{}/x.rrd", "d".repeat(200));
        let edge = "e".repeat(INLINE_MAX);
        let over = "o".repeat(INLINE_MAX + 1);
        let state = foldhash::fast::RandomState::default();
        for text in [short, long.as_str(), edge.as_str(), over.as_str(), ""] {
            let k = Key::from(text);
            assert_eq!(k.as_str(), text);
            assert_eq!(state.hash_one(&k), state.hash_one(text));
            assert_eq!(k, Key::from(text));
        }
        assert!(Key::from("/a") < Key::from("/b"));
        assert!(Key::from(long.as_str()) > Key::from("/srv/rrd/d"));
        let mut map: hashbrown::HashMap<Key, u32, foldhash::fast::RandomState> = Default::default();
        map.insert(short.into(), 1);
        map.insert(long.as_str().into(), 2);
        assert_eq!(map.get(short), Some(&1));
        assert_eq!(map.get(long.as_str()), Some(&2));
        assert_eq!(map.get("/srv/rrd/host/if_octets.rr"), None);
        assert_eq!(Key::from(short).as_bytes(), short.as_bytes());
        assert_eq!(std::mem::size_of::<Key>(), 88);
    }
}
