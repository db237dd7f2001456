//! What can go wrong talking to a daemon, each worded as librrd 1.7.2 words
//! it (rrdtool prints these after `ERROR: `).
//!
//! librrd reports a failure two ways: an error text (`rrd_set_error`) and a
//! status number. Some failures set no text at all (a path the client
//! refuses silently, a line too long for its 4096-byte buffer, a lost
//! connection) and each rrdtool command then words them itself or says
//! nothing; [`ClientError::message`] is `None` for exactly those, and
//! [`ClientError::status`] gives the number the command would see.

use thiserror::Error;

use crate::ctext::strerror;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ClientError {
    /// Connecting failed; the reason is an errno text or a resolver message.
    #[error("Unable to connect to rrdcached: {0}")]
    Connect(String),
    /// The daemon answered with a negative status.
    #[error("rrdcached@{address}: {message}")]
    Daemon { address: String, message: String },
    /// A relative name (or its directory) could not be resolved for a
    /// daemon on a UNIX socket.
    #[error("realpath({path}): {reason}")]
    Realpath { path: String, reason: String },
    /// A remote (TCP) daemon resolves names itself.
    #[error("absolute path names not allowed when talking to a remote daemon")]
    AbsolutePath,
    /// Refused without a text (status -1): an empty file name, or an
    /// absolute name outside `RRDCACHED_STRIPPATH`.
    #[error("refused without a message")]
    Silent,
    /// A failure with an errno status and no text: the command line would
    /// not fit the 4096-byte request buffer (ENOBUFS), or the connection
    /// was already closed (ENOTCONN).
    #[error("{}", strerror(*.0))]
    Errno(i32),
    /// Sending the request failed, even after reconnecting once.
    #[error("request: socket error (-1) while talking to rrdcached")]
    Send,
    /// The reply was cut short or did not start with a status number.
    #[error("request: internal error while talking to rrdcached")]
    Receive,
    /// A FETCH reply that does not parse.
    #[error("rrdc_fetch: {0}")]
    Fetch(String),
    /// An INFO reply with a type the client cannot take.
    #[error("rrdc_info: {0}")]
    Info(String),
    /// A streamed reply (DUMP) could not be read or written on.
    #[error("rrdc_dump: {0}")]
    Stream(String),
}

impl ClientError {
    /// The text librrd would have set, `None` when it sets none.
    pub fn message(&self) -> Option<String> {
        match self {
            ClientError::Silent | ClientError::Errno(_) => None,
            other => Some(other.to_string()),
        }
    }

    /// The status number librrd's call would return: an errno value for
    /// errno failures, -1 otherwise.
    pub fn status(&self) -> i32 {
        match self {
            ClientError::Errno(code) => *code,
            _ => -1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_librrds() {
        let d = ClientError::Daemon { address: "unix:/s".into(), message: "No such file: /x".into() };
        assert_eq!(d.to_string(), "rrdcached@unix:/s: No such file: /x");
        assert_eq!(
            ClientError::Connect("No such file or directory".into()).to_string(),
            "Unable to connect to rrdcached: No such file or directory"
        );
        assert_eq!(ClientError::Errno(libc::ENOBUFS).message(), None);
        assert_eq!(ClientError::Errno(libc::ENOBUFS).status(), libc::ENOBUFS);
        assert_eq!(ClientError::Silent.status(), -1);
        assert!(ClientError::AbsolutePath.message().is_some());
    }
}
