//! The CLI's only `unsafe`: `getrusage`, which neither std nor rustix 1
//! wraps, behind safe functions. The crate denies `unsafe_code` everywhere
//! else.

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
