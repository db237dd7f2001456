//! `getrusage`, which neither std nor rustix 1 wraps: the CPU time the
//! CLI's pipe mode reports, and the blocks a thread read (how the pipe mode
//! tells a page-cache miss from a hit).

fn rusage(who: libc::c_int) -> Option<libc::rusage> {
    // SAFETY: an all-zero rusage is a valid value; getrusage fills the
    // struct we pass and has no other effects.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        (libc::getrusage(who, &mut ru) == 0).then_some(ru)
    }
}

/// This process's user and system CPU seconds (zero if unknown).
pub fn cpu_times() -> (f64, f64) {
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    rusage(libc::RUSAGE_SELF).map_or((0.0, 0.0), |ru| (t(ru.ru_utime), t(ru.ru_stime)))
}

/// 512-byte blocks the calling thread has read from disk (`ru_inblock`).
pub fn thread_blocks_read() -> Option<i64> {
    rusage(libc::RUSAGE_THREAD).map(|ru| ru.ru_inblock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_and_blocks_are_counted() {
        let (user0, _) = cpu_times();
        let mut x = 0u64;
        for i in 0..30_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        let (user1, sys1) = cpu_times();
        assert!(user1 > user0, "{user0} -> {user1}");
        assert!(sys1 >= 0.0);
        assert!(thread_blocks_read().is_some_and(|b| b >= 0));
    }
}
