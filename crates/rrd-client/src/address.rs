//! Daemon addresses as librrd's client reads them (`--daemon ADDR`,
//! `RRDCACHED_ADDRESS`):
//!
//! ```text
//! unix:/path/sock   a UNIX socket (any path, even relative)
//! /path/sock        a UNIX socket
//! [v6addr]:port     TCP, IPv6; `[v6addr]` alone takes port 42217
//! host:port         TCP: the LAST colon splits, the port is a service
//!                   name or number handed to getaddrinfo
//! host              TCP, port 42217
//! ```
//!
//! This is deliberately not the daemon's `ListenAddress`: the client keeps
//! the port as text (getaddrinfo resolves service names, and its error
//! names the port as given) and words malformed addresses differently.
//! The address text itself is the connection's identity: replies' errors
//! name it (`rrdcached@ADDR: ...`) and a cached connection is reused only
//! for the same text.

use crate::error::ClientError;

/// The environment variable that names a daemon when `--daemon` is absent.
pub const ENV_ADDRESS: &str = "RRDCACHED_ADDRESS";
/// Stripped from absolute names sent to a remote daemon.
pub const ENV_STRIP_PATH: &str = "RRDCACHED_STRIPPATH";
/// The default TCP port, as the service string getaddrinfo gets.
pub const DEFAULT_PORT: &str = "42217";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Unix(String),
    Network { host: String, port: String },
}

impl Endpoint {
    /// Splits an address. Errors are the texts librrd gives (they end up
    /// after `Unable to connect to rrdcached: `).
    pub fn parse(address: &str) -> Result<Endpoint, ClientError> {
        if let Some(path) = address.strip_prefix("unix:") {
            return Ok(Endpoint::Unix(path.to_string()));
        }
        if address.starts_with('/') {
            return Ok(Endpoint::Unix(address.to_string()));
        }
        if let Some(inner) = address.strip_prefix('[') {
            let Some(close) = inner.find(']') else {
                return Err(ClientError::Connect(format!("malformed address: {address}")));
            };
            let host = inner[..close].to_string();
            let after = &inner[close + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => p.to_string(),
                None if after.is_empty() => DEFAULT_PORT.to_string(),
                None => return Err(ClientError::Connect(format!("garbage after address: {after}"))),
            };
            return Ok(Endpoint::Network { host, port });
        }
        Ok(match address.rfind(':') {
            Some(i) => {
                Endpoint::Network { host: address[..i].to_string(), port: address[i + 1..].to_string() }
            }
            None => Endpoint::Network { host: address.to_string(), port: DEFAULT_PORT.to_string() },
        })
    }
}

/// Whether librrd treats `address` as a local daemon (whose file names are
/// made absolute by the client) rather than a remote one.
pub fn is_local(address: &str) -> bool {
    address.starts_with('/') || address.starts_with("unix:")
}

/// The daemon a command talks to: `--daemon`'s value when given (an empty
/// one means none, without looking at the environment), else a non-empty
/// `RRDCACHED_ADDRESS`.
pub fn chosen(option: Option<&str>) -> Option<String> {
    let address = match option {
        Some(a) => a.to_string(),
        None => std::env::var_os(ENV_ADDRESS)?.to_string_lossy().into_owned(),
    };
    (!address.is_empty()).then_some(address)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(host: &str, port: &str) -> Endpoint {
        Endpoint::Network { host: host.into(), port: port.into() }
    }

    #[test]
    fn parses_like_librrd() {
        assert_eq!(Endpoint::parse("unix:/a/s"), Ok(Endpoint::Unix("/a/s".into())));
        assert_eq!(Endpoint::parse("unix:rel"), Ok(Endpoint::Unix("rel".into())));
        assert_eq!(Endpoint::parse("/a/s"), Ok(Endpoint::Unix("/a/s".into())));
        assert_eq!(Endpoint::parse("127.0.0.1:4000"), Ok(net("127.0.0.1", "4000")));
        assert_eq!(Endpoint::parse("localhost"), Ok(net("localhost", "42217")));
        assert_eq!(Endpoint::parse("h:rrdcached"), Ok(net("h", "rrdcached")));
        assert_eq!(Endpoint::parse(":4000"), Ok(net("", "4000")));
        assert_eq!(Endpoint::parse("[::1]:9"), Ok(net("::1", "9")));
        assert_eq!(Endpoint::parse("[::1]"), Ok(net("::1", "42217")));
        assert_eq!(
            Endpoint::parse("[::1").unwrap_err().to_string(),
            "Unable to connect to rrdcached: malformed address: [::1"
        );
        assert_eq!(
            Endpoint::parse("[::1]x").unwrap_err().to_string(),
            "Unable to connect to rrdcached: garbage after address: x"
        );
        assert!(is_local("unix:x") && is_local("/x") && !is_local("host:1"));
    }

    #[test]
    fn the_option_wins_and_empty_means_none() {
        assert_eq!(chosen(Some("unix:/x")), Some("unix:/x".to_string()));
        assert_eq!(chosen(Some("")), None);
    }
}
