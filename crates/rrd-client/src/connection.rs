//! One connection to a daemon, and the request/reply exchange librrd uses
//! on it: a command line of escaped fields, then a status line `<n>
//! message` and, when `n > 0`, `n` more lines.
//!
//! Kept from librrd: a request line may be at most 4096 bytes with its
//! newline (longer: ENOBUFS, nothing sent); a failed send reconnects once
//! and sends again; a reply cut short, or without a number, closes the
//! connection; a negative status becomes the error `rrdcached@ADDR:
//! message`. Synchronous and blocking, with no timeouts, as librrd.
//!
//! Deliberately absent: librrd splits a reply line longer than 4095 bytes
//! into two lines (its read buffer); we read whole lines.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

use rrd_lang::numparse::strtol;

use crate::address::Endpoint;
use crate::ctext::{gai_strerror, io_text};
use crate::error::ClientError;

/// librrd's request buffer (`RRD_CMD_MAX`): the longest line, newline included.
pub const REQUEST_MAX: usize = 4096;
/// A UNIX socket path longer than this is cut (librrd copies at most
/// `sizeof(sun_path) - 1` bytes).
const SUN_PATH_MAX: usize = 107;

/// One reply: its status (≥ 0 here; negative ones are errors) and lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: i32,
    pub message: String,
    pub lines: Vec<String>,
}

/// Builds `fields` into one request line as librrd does: each field with
/// spaces and backslashes escaped by a backslash, fields separated by one
/// space, a newline at the end. `Errno(ENOBUFS)` when it would not fit.
pub fn request_line(fields: &[&str]) -> Result<Vec<u8>, ClientError> {
    let mut line = Vec::with_capacity(128);
    for field in fields {
        for &b in field.as_bytes() {
            if b == b' ' || b == b'\\' {
                line.push(b'\\');
            }
            line.push(b);
        }
        line.push(b' ');
        if line.len() > REQUEST_MAX {
            return Err(ClientError::Errno(libc::ENOBUFS));
        }
    }
    match line.last_mut() {
        Some(last) => *last = b'\n',
        None => line.push(b'\n'),
    }
    Ok(line)
}

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Link {
    reader: BufReader<Stream>,
    writer: Stream,
}

impl Link {
    fn open(endpoint: &Endpoint) -> Result<Link, String> {
        let stream = match endpoint {
            Endpoint::Unix(path) => Stream::Unix(connect_unix(path.as_bytes()).map_err(|e| io_text(&e))?),
            Endpoint::Network { host, port } => Stream::Tcp(connect_tcp(host, port)?),
        };
        let writer = stream.try_clone().map_err(|e| io_text(&e))?;
        Ok(Link { reader: BufReader::new(stream), writer })
    }
}

/// Connects as librrd does ([`rrd_sys::net::connect_unix`]).
fn connect_unix(path: &[u8]) -> std::io::Result<UnixStream> {
    rrd_sys::net::connect_unix(path, SUN_PATH_MAX)
}

/// The addresses getaddrinfo gives for `host`/`port` with librrd's hints
/// (any family, stream sockets, AI_ADDRCONFIG), tried in order.
fn connect_tcp(host: &str, port: &str) -> Result<TcpStream, String> {
    let c_host = std::ffi::CString::new(host).map_err(|_| "Invalid argument".to_string())?;
    let c_port = std::ffi::CString::new(port).map_err(|_| "Invalid argument".to_string())?;
    let addrs = rrd_sys::net::getaddrinfo(&c_host, &c_port).map_err(|rc| {
        format!("failed to resolve address '{host}' (port {port}): {} ({rc})", gai_strerror(rc))
    })?;
    let mut last = "Internal error".to_string();
    for addr in addrs {
        match TcpStream::connect(addr) {
            Ok(s) => return Ok(s),
            Err(e) => last = io_text(&e),
        }
    }
    Err(last)
}

/// A client bound to one daemon address.
pub struct Client {
    address: String,
    endpoint: Endpoint,
    /// `None` once the connection failed; requests then get ENOTCONN.
    link: Option<Link>,
}

impl Client {
    /// Connects to `address` (see [`crate::address`]).
    pub fn connect(address: &str) -> Result<Client, ClientError> {
        let endpoint = Endpoint::parse(address)?;
        let link = Link::open(&endpoint).map_err(ClientError::Connect)?;
        Ok(Client { address: address.to_string(), endpoint, link: Some(link) })
    }

    /// The address as given: how errors name the daemon.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Whether the connection is still open (a failed exchange closes it).
    pub fn is_connected(&self) -> bool {
        self.link.is_some()
    }

    /// Sends one command made of `fields` and reads its reply. A negative
    /// status is returned as [`ClientError::Daemon`].
    pub fn request(&mut self, fields: &[&str]) -> Result<Response, ClientError> {
        let line = request_line(fields)?;
        let Some(link) = self.link.as_mut() else { return Err(ClientError::Errno(libc::ENOTCONN)) };
        if link.writer.write_all(&line).is_err() {
            // librrd reconnects once and sends the request again.
            self.link = Link::open(&self.endpoint).ok();
            let resent = match self.link.as_mut() {
                Some(l) => l.writer.write_all(&line).is_ok(),
                None => false,
            };
            if !resent {
                self.link = None;
                return Err(ClientError::Send);
            }
        }
        let link = self.link.as_mut().expect("present: just written to");
        match read_response(&mut link.reader) {
            Some(Ok(r)) => Ok(r),
            Some(Err(message)) => Err(ClientError::Daemon { address: self.address.clone(), message }),
            None => {
                self.link = None;
                Err(ClientError::Receive)
            }
        }
    }
}

/// What a streamed request (DUMP) got back.
#[derive(Debug, PartialEq, Eq)]
pub enum Streamed {
    /// The payload was copied to the output, up to the daemon's close.
    Done,
    /// A status line instead: the daemon's error (or "Unknown command"),
    /// nothing copied. The connection stays usable.
    Refused(String),
}

impl Client {
    /// Sends one command whose successful reply is a payload that starts
    /// with `<` and ends where the daemon closes the connection (rrdcached
    /// 1.9's DUMP), copying it to `out`; a reply starting with anything
    /// else is a status line, returned whole. The connection is closed
    /// after a payload.
    pub fn request_stream(&mut self, fields: &[&str], out: &mut dyn Write) -> Result<Streamed, ClientError> {
        let line = request_line(fields)?;
        let Some(link) = self.link.as_mut() else { return Err(ClientError::Errno(libc::ENOTCONN)) };
        if link.writer.write_all(&line).is_err() {
            self.link = None;
            return Err(ClientError::Send);
        }
        let first = match link.reader.fill_buf() {
            Ok([]) | Err(_) => {
                self.link = None;
                return Err(ClientError::Receive);
            }
            Ok(buf) => buf[0],
        };
        if first != b'<' {
            let Some(status) = read_line(&mut link.reader) else {
                self.link = None;
                return Err(ClientError::Receive);
            };
            return Ok(Streamed::Refused(String::from_utf8_lossy(&status).into_owned()));
        }
        let mut link = self.link.take().expect("present: just read from");
        std::io::copy(&mut link.reader, out).map_err(|e| ClientError::Stream(io_text(&e)))?;
        Ok(Streamed::Done)
    }
}

/// One line without its trailing newlines and carriage returns (`None` at
/// end of stream or on a read error).
fn read_line<R: BufRead>(reader: &mut R) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    match reader.read_until(b'\n', &mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => {
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            Some(line)
        }
    }
}

/// Reads a reply. `None`: the stream broke or the status line had no
/// number; `Some(Err(message))`: a negative status.
fn read_response<R: BufRead>(reader: &mut R) -> Option<Result<Response, String>> {
    let first = read_line(reader)?;
    let status = strtol(&first, 0);
    if status.consumed == 0 {
        return None;
    }
    let rest = &first[status.consumed..];
    // The status is a C int.
    let status = status.value as i32;
    let skip = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    let message = String::from_utf8_lossy(&rest[skip..]).into_owned();
    if status < 0 {
        return Some(Err(message));
    }
    let mut lines = Vec::new();
    for _ in 0..status {
        lines.push(String::from_utf8_lossy(&read_line(reader)?).into_owned());
    }
    Some(Ok(Response { status, message, lines }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::os::unix::net::UnixListener;

    #[test]
    fn lines_escape_and_respect_the_buffer() {
        assert_eq!(request_line(&["update", "/a b.rrd", "1:2"]).unwrap(), b"update /a\\ b.rrd 1:2\n");
        assert_eq!(request_line(&["x\\y"]).unwrap(), b"x\\\\y\n");
        let fits = "a".repeat(REQUEST_MAX - 1);
        assert_eq!(request_line(&[&fits]).unwrap().len(), REQUEST_MAX);
        let too_long = "a".repeat(REQUEST_MAX);
        assert_eq!(request_line(&[&too_long]), Err(ClientError::Errno(libc::ENOBUFS)));
    }

    #[test]
    fn replies_parse_like_librrd() {
        let mut r = Cursor::new(
            b"2 Statistics follow\r\nA: 1\nB: 2\n0 PONG\n-1 No such file: x\nnope\n3 x\na\n".to_vec(),
        );
        let ok = read_response(&mut r).unwrap().unwrap();
        assert_eq!((ok.status, ok.message.as_str(), ok.lines.len()), (2, "Statistics follow", 2));
        assert_eq!(ok.lines[1], "B: 2");
        assert_eq!(read_response(&mut r).unwrap().unwrap().message, "PONG");
        assert_eq!(read_response(&mut r).unwrap(), Err("No such file: x".to_string()));
        assert!(read_response(&mut r).is_none(), "no status number");
        assert!(read_response(&mut r).is_none(), "cut short");
    }

    #[test]
    fn exchanges_over_a_socket_and_reports_the_daemon_by_address() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s");
        let listener = UnixListener::bind(&sock).unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(s.try_clone().unwrap());
            let mut w = s;
            let mut got = Vec::new();
            for reply in [&b"0 PONG\n"[..], b"-1 No such file: /x.rrd\n"] {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                got.push(line);
                w.write_all(reply).unwrap();
            }
            got
        });
        let address = format!("unix:{}", sock.display());
        let mut c = Client::connect(&address).unwrap();
        assert_eq!(c.request(&["PING"]).unwrap().message, "PONG");
        let err = c.request(&["flush", "/x.rrd"]).unwrap_err();
        assert_eq!(err.to_string(), format!("rrdcached@{address}: No such file: /x.rrd"));
        assert_eq!(server.join().unwrap(), ["PING\n", "flush /x.rrd\n"]);
        // The server is gone: the next exchange fails and closes the link.
        assert!(c.request(&["PING"]).is_err());
        assert!(!c.is_connected());
        assert_eq!(c.request(&["PING"]), Err(ClientError::Errno(libc::ENOTCONN)));
    }

    #[test]
    fn connect_errors_are_worded_like_librrd() {
        let dir = tempfile::tempdir().unwrap();
        let missing = format!("unix:{}/none", dir.path().display());
        assert_eq!(
            Client::connect(&missing).err().unwrap().to_string(),
            "Unable to connect to rrdcached: No such file or directory"
        );
        // A port nobody listens on.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        assert_eq!(
            Client::connect(&format!("127.0.0.1:{port}")).err().unwrap().to_string(),
            "Unable to connect to rrdcached: Connection refused"
        );
    }
}
