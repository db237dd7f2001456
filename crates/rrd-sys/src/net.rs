//! The C library calls librrd's rrdcached client makes whose exact
//! behaviour matters and that std and rustix do not offer in that form,
//! each behind a safe function (for `rrd-client`); and a read straight
//! into a buffer's spare room, for the daemon's blocking connections.

use std::ffi::CStr;
use std::net::SocketAddr;
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;

/// Connects as librrd does: the path copied into a zeroed `sockaddr_un`
/// (cut to `max` bytes) and the whole structure's size passed, so an empty
/// path names the all-zero abstract address rather than being refused
/// (std and rustix pass the path's own length).
pub fn connect_unix(path: &[u8], max: usize) -> std::io::Result<UnixStream> {
    // SAFETY: socket/connect/close on a descriptor we own; `sa` is a
    // zeroed sockaddr_un of which we fill the family and at most `max`
    // (< sun_path's size) path bytes, leaving a NUL; from_raw_fd takes
    // ownership of a connected stream socket exactly once.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut sa: libc::sockaddr_un = std::mem::zeroed();
        sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let max = max.min(sa.sun_path.len() - 1);
        for (slot, &b) in sa.sun_path.iter_mut().zip(path.iter().take(max)) {
            *slot = b as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        if libc::connect(fd, &sa as *const libc::sockaddr_un as *const libc::sockaddr, len) != 0 {
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            return Err(e);
        }
        Ok(UnixStream::from_raw_fd(fd))
    }
}

/// `getaddrinfo(host, port)` with librrd's hints (any family, stream
/// sockets, AI_ADDRCONFIG): the addresses in its order, or its error code
/// (std's resolver takes no hints).
pub fn getaddrinfo(host: &CStr, port: &CStr) -> Result<Vec<SocketAddr>, i32> {
    let mut addrs = Vec::new();
    // SAFETY: hints is plain data set up as getaddrinfo expects; on success
    // `res` is a list we only read (each ai_addr is valid for ai_addrlen
    // bytes and of the family ai_family says) and release with
    // freeaddrinfo exactly once.
    unsafe {
        let mut hints: libc::addrinfo = std::mem::zeroed();
        hints.ai_flags = libc::AI_ADDRCONFIG;
        hints.ai_family = libc::AF_UNSPEC;
        hints.ai_socktype = libc::SOCK_STREAM;
        let mut res: *mut libc::addrinfo = std::ptr::null_mut();
        let rc = libc::getaddrinfo(host.as_ptr(), port.as_ptr(), &hints, &mut res);
        if rc != 0 {
            return Err(rc);
        }
        let mut p = res;
        while !p.is_null() {
            let ai = &*p;
            match ai.ai_family {
                libc::AF_INET => {
                    let sa = &*(ai.ai_addr as *const libc::sockaddr_in);
                    let ip = std::net::Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr));
                    addrs.push(SocketAddr::from((ip, u16::from_be(sa.sin_port))));
                }
                libc::AF_INET6 => {
                    let sa = &*(ai.ai_addr as *const libc::sockaddr_in6);
                    let ip = std::net::Ipv6Addr::from(sa.sin6_addr.s6_addr);
                    addrs.push(SocketAddr::V6(std::net::SocketAddrV6::new(
                        ip,
                        u16::from_be(sa.sin6_port),
                        sa.sin6_flowinfo,
                        sa.sin6_scope_id,
                    )));
                }
                _ => {}
            }
            p = ai.ai_next;
        }
        libc::freeaddrinfo(res);
    }
    Ok(addrs)
}

/// `gai_strerror(code)`.
pub fn gai_strerror(code: i32) -> String {
    // SAFETY: gai_strerror returns a pointer to a static NUL-terminated
    // string for any code (checked for null all the same).
    unsafe {
        let p = libc::gai_strerror(code);
        if p.is_null() {
            return format!("Unknown error {code}");
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Whether the peer of the connected socket `fd` is gone: a `poll` with no
/// events asked reports `POLLHUP` (both directions shut: a UNIX-socket
/// peer closed it), `POLLERR` (a TCP reset) or `POLLNVAL`. A peer that only
/// shut down its sending side (and may still read a reply) is not gone.
/// `fd` must be a descriptor the caller keeps open meanwhile; if it was
/// closed and its number reused, the answer concerns the other file, and
/// nothing else happens.
pub fn peer_hung_up(fd: std::os::fd::RawFd) -> bool {
    let mut p = libc::pollfd { fd, events: 0, revents: 0 };
    // SAFETY: poll reads and writes the one pollfd we pass, with a zero
    // timeout; the descriptor number is only looked at by the kernel.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// One `read(2)` of at most `max` bytes from `fd`, appended to `buf`
/// without zeroing or copying them first (std's `Read` wants initialised
/// room); the count read, 0 at end of file. On error `buf` is unchanged.
pub fn read_appending(
    fd: std::os::fd::BorrowedFd<'_>,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    buf.reserve(max);
    let len = buf.len();
    let room = buf.capacity() - len;
    // SAFETY: the kernel writes at most `room` bytes at the end of the
    // vector's allocation (reserved above), and the length grows only by
    // the count it reports written, so every byte below the new length is
    // initialised.
    unsafe {
        let n = libc::read(fd.as_raw_fd(), buf.as_mut_ptr().add(len).cast(), room.min(max));
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        buf.set_len(len + n as usize);
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_append_what_arrived_and_nothing_else() {
        use std::io::Write;
        use std::os::fd::AsFd;
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut buf = b"kept ".to_vec();
        a.write_all(b"line one\nline").unwrap();
        assert_eq!(read_appending(b.as_fd(), &mut buf, 4).unwrap(), 4);
        assert_eq!(buf, b"kept line");
        assert_eq!(read_appending(b.as_fd(), &mut buf, 1 << 16).unwrap(), 9);
        assert_eq!(buf, b"kept line one\nline");
        b.set_nonblocking(true).unwrap();
        let e = read_appending(b.as_fd(), &mut buf, 16).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        assert_eq!(buf, b"kept line one\nline", "unchanged by a failed read");
        drop(a);
        assert_eq!(read_appending(b.as_fd(), &mut buf, 16).unwrap(), 0);
    }

    #[test]
    fn resolves_numeric_hosts_and_words_errors() {
        let addrs = getaddrinfo(c"127.0.0.1", c"42217").unwrap();
        assert_eq!(addrs, ["127.0.0.1:42217".parse::<SocketAddr>().unwrap()]);
        let code = getaddrinfo(c"no such host", c"x").unwrap_err();
        assert!(!gai_strerror(code).is_empty());
    }

    #[test]
    fn connects_to_a_listening_socket_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let _l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        use std::os::unix::ffi::OsStrExt;
        connect_unix(path.as_os_str().as_bytes(), 107).unwrap();
        let e = connect_unix(b"/no/such/socket", 107).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }
}
