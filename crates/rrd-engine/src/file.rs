//! The file layer: where an RRD's bytes live and how they reach the disk.
//!
//! Everything here knows files, descriptors and the kernel, and nothing of
//! what the bytes mean beyond the validated header: the [`store::Store`]
//! trait and its file and memory stores, an open RRD ([`rrd::Rrd`]: header,
//! layout, store; row and live-header I/O), where files may be opened from
//! ([`root`]), new files made durable ([`newfile`], with `rrd_sys::tempclean`
//! removing temporary files on a fatal signal), the page cache and the
//! memory limit ([`pagecache`], [`cgroup`]), and a store that fails on
//! purpose for tests (`fault`).
//!
//! Deliberately absent: update arithmetic ([`crate::math`]) and commands
//! ([`crate::commands`]). Nothing here depends on those layers.

/// The memory cgroup resolver (in rrd-sys: it reads the kernel's files).
pub use rrd_sys::cgroup;
#[cfg(any(test, feature = "fault-injection"))]
pub mod fault;
pub mod newfile;
/// Page-cache residency and advice (in rrd-sys, with the mapping it needs).
pub use rrd_sys::pagecache;
pub mod root;
pub mod rrd;
pub mod store;
/// Temporary files removed on a fatal signal (the handler is in rrd-sys).
pub use rrd_sys::tempclean;
