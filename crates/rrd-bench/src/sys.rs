//! The bench's one use of `unsafe` besides librrd's C API ([`crate::librrd`]):
//! running code in a child between `fork` and `exec`.
//!
//! Everything else that talks to the kernel goes through rustix's safe
//! wrappers; the crate denies `unsafe_code` outside these two modules.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Runs `f` in the child between `fork` and `exec` (`CommandExt::pre_exec`).
/// `f` must make only async-signal-safe calls (raw system calls, no
/// allocation, no locks): the child of a threaded process has one thread
/// and whatever locks the others held.
pub fn pre_exec<F>(cmd: &mut Command, f: F)
where
    F: FnMut() -> std::io::Result<()> + Send + Sync + 'static,
{
    // SAFETY: the callers' closures make raw system calls through rustix
    // (getpid, open, write, close) on stack buffers and an already built
    // path: async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(f);
    }
}
