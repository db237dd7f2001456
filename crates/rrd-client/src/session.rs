//! Choosing and keeping the daemon connection, as librrd's default client
//! does: one connection per process, reused while commands name the same
//! address (pipe mode sends many commands), replaced when another address
//! is named.
//!
//! Invariant: a [`Session`] holds the process's connection exclusively and
//! puts it back when dropped, so two commands never interleave requests.

use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

use crate::address::chosen;
use crate::connection::Client;
use crate::error::ClientError;

static CACHED: Mutex<Option<Client>> = Mutex::new(None);

/// The process's connection, lent to one command.
pub struct Session {
    client: Option<Client>,
}

impl Deref for Session {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client.as_ref().expect("a session holds its client until dropped")
    }
}

impl DerefMut for Session {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().expect("a session holds its client until dropped")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            *CACHED.lock().unwrap_or_else(|p| p.into_inner()) = Some(c);
        }
    }
}

/// Where a command's data goes.
pub enum Daemon {
    /// No daemon named: the command works on the file itself.
    Absent,
    /// Connected to the daemon named.
    Connected(Session),
    /// A daemon was named but could not be reached.
    Unreachable(ClientError),
}

/// The daemon for a command: `--daemon`'s value if given (empty: none),
/// else `RRDCACHED_ADDRESS`; connected, or the reason it is not.
pub fn daemon(option: Option<&str>) -> Daemon {
    let Some(address) = chosen(option) else { return Daemon::Absent };
    let cached = CACHED.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(c) = cached {
        if c.address() == address && c.is_connected() {
            return Daemon::Connected(Session { client: Some(c) });
        }
    }
    match Client::connect(&address) {
        Ok(c) => Daemon::Connected(Session { client: Some(c) }),
        Err(e) => Daemon::Unreachable(e),
    }
}

/// The process's connection if one is open, whichever address it was made
/// for: librrd's `rrdc_is_any_connected`, which `tune` consults when no
/// daemon is named (in pipe mode an earlier command may have connected).
pub fn any_connected() -> Option<Session> {
    let cached = CACHED.lock().unwrap_or_else(|p| p.into_inner()).take()?;
    if cached.is_connected() {
        Some(Session { client: Some(cached) })
    } else {
        None
    }
}

/// Closes the process's connection, if any (librrd's `rrdc_disconnect`).
pub fn disconnect() {
    drop(CACHED.lock().unwrap_or_else(|p| p.into_inner()).take());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixListener;

    #[test]
    fn a_kept_connection_is_found_by_any_connected_and_forgets() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.rrd");
        std::fs::write(&file, b"").unwrap();
        let sock = dir.path().join("s");
        let listener = UnixListener::bind(&sock).unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(s.try_clone().unwrap());
            let mut w = s;
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            w.write_all(b"0 Gone\n").unwrap();
            line
        });
        // Only this test touches the process's cached connection.
        assert!(any_connected().is_none(), "nothing connected yet");
        let address = format!("unix:{}", sock.display());
        let Daemon::Connected(session) = daemon(Some(&address)) else { panic!("not connected") };
        drop(session);
        let mut kept = any_connected().expect("the connection was kept");
        kept.forget(file.to_str().unwrap()).unwrap();
        let real = std::fs::canonicalize(&file).unwrap();
        assert_eq!(server.join().unwrap(), format!("forget {}\n", real.display()));
        drop(kept);
        // Taken and put back: still there for the next command.
        assert!(any_connected().is_some());
    }
}
