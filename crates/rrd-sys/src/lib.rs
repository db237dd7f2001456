//! Where rrdscale talks to the kernel and the C library through raw
//! pointers: every `unsafe` block of the engine lives here, behind small
//! safe functions and types, each with a SAFETY comment. The other crates
//! of the workspace (except `librrd`, whose C ABI takes raw pointers by
//! definition) forbid `unsafe_code`.
//!
//! What is here is what rustix has no safe wrapper for: open-file-description
//! record locks ([`lock`]), `sync_file_range` ([`writeback`]), shared file
//! mappings and `mincore` ([`map`]), `glob(3)` ([`glob`]), the signal
//! handler that removes temporary files ([`tempclean`]), `getrusage`
//! ([`rusage`]), the daemon's `fork`, process-wide `setuid`/`setgid`,
//! name lookups and syslog ([`process`]), the CPU's prefetch hint
//! ([`prefetch`]), the listening sockets systemd
//! passes ([`sdlisten`]), and the client's librrd-exact
//! connect and `getaddrinfo`, and whether a client hung up ([`net`]), glibc's number conversions
//! ([`clib`]) and time functions ([`ctime`]), whose exact output rrdtool's
//! is compared with, and rrdtool's own librrd opened with `dlopen` for the
//! benchmark's comparison ([`librrd`]). Calls rustix wraps
//! safely (`fadvise`, `fdatasync`, `syncfs`, `statvfs`, `umask`, `fstat`)
//! are made with rustix by their callers.
//!
//! With them, the modules built on them that only talk to the kernel: the
//! page cache as one file sees it ([`pagecache`]: residency, fadvise,
//! evict, the memory limit) and the one memory-cgroup resolver
//! ([`cgroup`]), which the engine, the daemon and the bench share.
//!
//! Deliberately absent: policy. Error meanings (a lock held elsewhere is
//! `Error::Locked` in the engine), budgets and which ranges to advise stay
//! with the callers; this crate depends on no other crate of the workspace.

pub mod cgroup;
pub mod clib;
pub mod ctime;
pub mod glob;
pub mod librrd;
pub mod lock;
pub mod map;
pub mod net;
pub mod pagecache;
pub mod prefetch;
pub mod process;
pub mod rusage;
pub mod sdlisten;
pub mod tempclean;
pub mod writeback;
