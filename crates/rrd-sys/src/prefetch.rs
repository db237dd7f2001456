//! Asking the CPU to bring memory into its caches ahead of use.
//!
//! Why: a daemon's BATCH over more files than the CPU caches hold waits
//! on a cache miss for each line's file entry; the address of the next
//! line's entry is known while the current line is handled, so its load
//! can be started then and overlap that work. A prefetch is a hint: it
//! never faults and changes no memory, so [`read`] is safe for any
//! reference. On targets without the instruction it does nothing.

/// Starts loading the cache line holding the start of `value` into every
/// cache level, and returns at once.
#[inline(always)]
pub fn read<T: ?Sized>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let at = value as *const T as *const i8;
        // SAFETY: PREFETCHT0 neither faults nor writes; `at` comes from a
        // live reference anyway. SSE is part of the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_prefetch_changes_nothing() {
        let v = vec![7u8; 4096];
        super::read(&v[4000]);
        super::read(v.as_slice());
        assert!(v.iter().all(|&b| b == 7));
    }
}
