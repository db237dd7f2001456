//! Listen addresses as rrdcached's `-l` takes them:
//!
//! ```text
//! unix:/path/to/sock   a UNIX socket
//! /path/to/sock        a UNIX socket (must start with a slash)
//! host                 TCP, default port 42217
//! host:port            TCP (IPv4 or a name: the last colon splits)
//! [v6addr]:port        TCP, IPv6
//! :port, ""            TCP on every interface
//! ```
//!
//! Parsing is pure; resolving names is the caller's business.

use thiserror::Error;

/// rrdcached's default address (1.7.2 as built by Debian).
pub const DEFAULT_ADDRESS: &str = "unix:/tmp/rrdcached.sock";
/// rrdcached's TCP port.
pub const DEFAULT_PORT: u16 = 42217;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddress {
    Unix(String),
    /// `host` empty means every interface.
    Tcp {
        host: String,
        port: u16,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum AddressError {
    #[error("Malformed address: {0}")]
    Malformed(String),
    #[error("Garbage after address: {0}")]
    Garbage(String),
    #[error("Invalid port in address: {0}")]
    Port(String),
    #[error("Empty UNIX socket path in address: {0}")]
    EmptyPath(String),
}

impl ListenAddress {
    pub fn parse(addr: &str) -> Result<ListenAddress, AddressError> {
        if let Some(path) = addr.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(AddressError::EmptyPath(addr.to_string()));
            }
            return Ok(ListenAddress::Unix(path.to_string()));
        }
        if addr.starts_with('/') {
            return Ok(ListenAddress::Unix(addr.to_string()));
        }
        let (host, port) = if let Some(inner) = addr.strip_prefix('[') {
            let close = inner.find(']').ok_or_else(|| AddressError::Malformed(addr.to_string()))?;
            let host = &inner[..close];
            let after = &inner[close + 1..];
            let port = match after {
                "" => None,
                p if p.starts_with(':') => Some(&p[1..]),
                p => return Err(AddressError::Garbage(p.to_string())),
            };
            (host, port)
        } else {
            match addr.rfind(':') {
                Some(i) => (&addr[..i], Some(&addr[i + 1..])),
                None => (addr, None),
            }
        };
        let port = match port {
            None => DEFAULT_PORT,
            Some(p) => p.parse::<u16>().map_err(|_| AddressError::Port(addr.to_string()))?,
        };
        Ok(ListenAddress::Tcp { host: host.to_string(), port })
    }

    /// How the address is shown in logs.
    pub fn display(&self) -> String {
        match self {
            ListenAddress::Unix(p) => format!("unix:{p}"),
            ListenAddress::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
            ListenAddress::Tcp { host, port } => format!("{host}:{port}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> ListenAddress {
        ListenAddress::Tcp { host: host.into(), port }
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(ListenAddress::parse("unix:/a/b.sock"), Ok(ListenAddress::Unix("/a/b.sock".into())));
        assert_eq!(ListenAddress::parse("/a/b.sock"), Ok(ListenAddress::Unix("/a/b.sock".into())));
        assert_eq!(ListenAddress::parse("localhost"), Ok(tcp("localhost", DEFAULT_PORT)));
        assert_eq!(ListenAddress::parse("127.0.0.1:1234"), Ok(tcp("127.0.0.1", 1234)));
        assert_eq!(ListenAddress::parse("[::1]:99"), Ok(tcp("::1", 99)));
        assert_eq!(ListenAddress::parse("[::1]"), Ok(tcp("::1", DEFAULT_PORT)));
        assert_eq!(ListenAddress::parse(":4000"), Ok(tcp("", 4000)));
        assert_eq!(ListenAddress::parse(""), Ok(tcp("", DEFAULT_PORT)));
        assert!(ListenAddress::parse("[::1").is_err());
        assert!(ListenAddress::parse("[::1]x").is_err());
        assert!(ListenAddress::parse("h:notaport").is_err());
        assert!(ListenAddress::parse("unix:").is_err());
    }
}
