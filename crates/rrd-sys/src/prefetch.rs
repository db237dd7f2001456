//! Asking the CPU to bring memory into its caches ahead of use.
//!
//! Why: a daemon's BATCH over more files than the CPU caches hold waits
//! on a cache miss for each line's file entry; the address of the next
//! line's entry is known while the current line is handled, so its load
//! can be started then and overlap that work. A prefetch is a hint: it
//! never faults and changes no memory, so [`read`] is safe for any
//! reference. On targets without the instruction it does nothing.

/// The cache line size assumed (x86_64's).
const LINE: usize = 64;

/// Starts loading the cache line holding the start of `value` into every
/// cache level, and returns at once.
#[inline(always)]
pub fn read<T: ?Sized>(value: &T) {
    line(value as *const T as *const u8);
}

/// [`read`] for every cache line `value` spans (a struct larger than a
/// line, or one that straddles two).
#[inline(always)]
pub fn read_all<T: ?Sized>(value: &T) {
    let start = value as *const T as *const u8;
    let len = std::mem::size_of_val(value);
    // From the start of the line holding the first byte to the last byte.
    let mut off = 0;
    let first = start as usize % LINE;
    while off < first + len {
        line(start.wrapping_add(off).wrapping_sub(first));
        off += LINE;
    }
}

#[inline(always)]
fn line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 neither faults nor writes, whatever the
        // address (here one within, or on the line of, a live reference).
        // SSE is part of the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at as *const i8) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_prefetch_changes_nothing() {
        let v = vec![7u8; 4096];
        super::read(&v[4000]);
        super::read(v.as_slice());
        super::read_all(&v[3..300]);
        super::read_all(&v[4095..]);
        assert!(v.iter().all(|&b| b == 7));
    }
}
