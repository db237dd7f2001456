//! Which partition a file belongs to: FNV-1a 64 of its path relative to
//! the base directory (`-b`), modulo the update topic's partition count.
//!
//! The hash must give the same answer on every node and in every release:
//! a node that disagrees would apply a file's records from a partition it
//! does not own, or forward a read to the wrong node. So it is spelled out
//! here (FNV-1a, 64-bit, offset basis 0xcbf29ce484222325, prime
//! 0x100000001b3, over the UTF-8 bytes of the relative path as the daemon
//! normalizes it: no leading `/`, no `.` or empty components, `..`
//! resolved), never a `Hasher` whose output may change between Rust
//! versions, and pinned by tests with fixed values. docs/cluster.md has the
//! same definition for other tools.

/// FNV-1a, 64-bit.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The partition of the file whose path relative to the base directory is
/// `relative` (see the module doc), for a topic of `partitions` partitions.
pub fn partition_of(relative: &str, partitions: i32) -> i32 {
    assert!(partitions > 0, "a topic has at least one partition");
    (fnv1a64(relative.as_bytes()) % partitions as u64) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_the_published_test_vectors() {
        // The FNV reference's vectors for FNV-1a 64.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn partitions_are_pinned_for_known_paths() {
        // Fixed forever: a change here splits a running cluster's files.
        let got: Vec<i32> =
            ["a.rrd", "router1/if1.rrd", "f0.rrd", "f1.rrd"].iter().map(|p| partition_of(p, 12)).collect();
        // Also computed by scripts/cluster-test.sh's Python, independently.
        assert_eq!(got, vec![2, 4, 1, 2]);
        assert_eq!(partition_of("a.rrd", 1), 0);
        assert!(got.iter().all(|p| (0..12).contains(p)));
    }
}
