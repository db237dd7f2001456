//! Taking over the listening sockets a service manager passed
//! (systemd's socket activation, `sd_listen_fds(3)`): descriptors
//! `3 .. 3 + n`, each checked to be a listening stream socket (UNIX, IPv4
//! or IPv6), then made close-on-exec and non-blocking and wrapped into an
//! owned std listener.
//!
//! The `unsafe` is the ownership claim on descriptors this process did not
//! open. It is sound because the protocol hands them to exactly this
//! process (the caller checks `LISTEN_PID` first), nothing else in the
//! process opened or owns them, and [`adopt_listen_fds`] takes them at most
//! once per process. Reading and removing the environment variables is the
//! caller's business (rrd-daemon's `systemd` module): no unsafe needed.

use std::net::TcpListener;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, Ordering};

/// The first passed descriptor (`SD_LISTEN_FDS_START`).
pub const LISTEN_FDS_START: RawFd = 3;

/// The most descriptors accepted (a bound on a corrupt `LISTEN_FDS`).
pub const LISTEN_FDS_MAX: usize = 1024;

/// A passed listening socket, now owned.
#[derive(Debug)]
pub enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

/// One adopted descriptor.
#[derive(Debug)]
pub struct Adopted {
    /// Its number (3, 4, ...), for messages.
    pub fd: RawFd,
    pub listener: Listener,
}

static ADOPTED: AtomicBool = AtomicBool::new(false);

/// Why descriptor `fd` cannot be served, or `None` when it is a listening
/// stream socket of a family we serve. Only looks.
fn unsuitable(fd: BorrowedFd<'_>) -> Option<String> {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    match sockopt::socket_type(fd) {
        Ok(t) if t == SocketType::STREAM => {}
        Ok(_) => return Some("not a stream socket (ListenStream= is needed)".into()),
        Err(e) => return Some(format!("not a socket ({e})")),
    }
    match sockopt::socket_acceptconn(fd) {
        Ok(true) => {}
        Ok(false) => {
            return Some("a stream socket that is not listening (Accept=yes is not supported)".into())
        }
        Err(e) => return Some(format!("cannot tell whether it listens ({e})")),
    }
    match sockopt::socket_domain(fd) {
        Ok(f) if f == AddressFamily::UNIX || f == AddressFamily::INET || f == AddressFamily::INET6 => None,
        Ok(f) => Some(format!("of address family {}, not UNIX, IPv4 or IPv6", f.as_raw())),
        Err(e) => Some(format!("cannot read its address family ({e})")),
    }
}

/// Takes descriptors `3 .. 3 + n` as listening sockets. The caller must
/// have checked that they were passed to this process (`LISTEN_PID` equal
/// to its pid, `LISTEN_FDS` = `n`) and call this before the process opens
/// anything that could land on those numbers being free (at startup).
///
/// Fails, taking none of them, on a second call, when `n` exceeds
/// [`LISTEN_FDS_MAX`], or when any descriptor is closed or is not a
/// listening stream socket of the UNIX, IPv4 or IPv6 family (the message
/// names the descriptor); a later failure to set a descriptor's flags
/// closes those taken so far. On success each is close-on-exec and
/// non-blocking.
pub fn adopt_listen_fds(n: usize) -> Result<Vec<Adopted>, String> {
    if n > LISTEN_FDS_MAX {
        return Err(format!("{n} passed descriptors: more than {LISTEN_FDS_MAX}"));
    }
    if ADOPTED.swap(true, Ordering::SeqCst) {
        return Err("the passed descriptors were already taken".into());
    }
    let fds: Vec<RawFd> = (0..n as RawFd).map(|i| LISTEN_FDS_START + i).collect();
    // First look at every descriptor without owning it.
    for &fd in &fds {
        // SAFETY: fcntl(F_GETFD) on a number only asks whether it is open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(format!("passed descriptor {fd} is not open"));
        }
        // SAFETY: `fd` is open (checked just above) and stays open for this
        // call: no other thread closes descriptors it does not own, and
        // nothing in the process owns the passed ones.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        if let Some(why) = unsuitable(borrowed) {
            return Err(format!("passed descriptor {fd} is {why}"));
        }
    }
    let mut out = Vec::with_capacity(n);
    for fd in fds {
        // SAFETY: `fd` is open and is a socket handed to this process by
        // the service manager; nothing else in the process owns it, and
        // the ADOPTED flag makes this the only time it is claimed.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        rustix::io::fcntl_setfd(&owned, rustix::io::FdFlags::CLOEXEC)
            .map_err(|e| format!("passed descriptor {fd}: cannot set close-on-exec ({e})"))?;
        rustix::io::ioctl_fionbio(&owned, true)
            .map_err(|e| format!("passed descriptor {fd}: cannot make it non-blocking ({e})"))?;
        let unix = rustix::net::sockopt::socket_domain(&owned)
            .map_err(|e| format!("passed descriptor {fd}: {e}"))?
            == rustix::net::AddressFamily::UNIX;
        let listener = if unix {
            Listener::Unix(UnixListener::from(owned))
        } else {
            Listener::Tcp(TcpListener::from(owned))
        };
        out.push(Adopted { fd, listener });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks, on sockets this test owns (adoption itself is proved
    /// end to end: crates/rrdscale/tests/daemon_systemd.rs).
    #[test]
    fn only_listening_stream_sockets_are_suitable() {
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().unwrap();
        let l = UnixListener::bind(dir.path().join("s")).unwrap();
        assert_eq!(unsuitable(l.as_fd()), None);
        let t = TcpListener::bind("127.0.0.1:0").unwrap();
        assert_eq!(unsuitable(t.as_fd()), None);
        let connected = std::os::unix::net::UnixStream::connect(dir.path().join("s")).unwrap();
        assert!(unsuitable(connected.as_fd()).unwrap().contains("not listening"));
        let dgram = std::os::unix::net::UnixDatagram::unbound().unwrap();
        assert!(unsuitable(dgram.as_fd()).unwrap().contains("not a stream socket"));
        let file = std::fs::File::open("/dev/null").unwrap();
        assert!(unsuitable(file.as_fd()).unwrap().contains("not a socket"));
        assert!(adopt_listen_fds(LISTEN_FDS_MAX + 1).is_err());
    }
}
