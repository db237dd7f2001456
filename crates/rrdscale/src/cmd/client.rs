//! What the commands share about `--daemon`/`RRDCACHED_ADDRESS`: rrdtool's
//! conventions for a daemon that is named but unreachable, and for a failed
//! flush before a read.
//!
//! rrdtool keeps one error text per process and prints it (`ERROR: ...`,
//! exit status 1) after any command that leaves one set, even a command
//! that then did its work on the file directly. So a read command whose
//! daemon is unreachable prints its local result and still fails with the
//! connection error, unless its local work failed with an error of its own,
//! which replaces it. [`after_fallback`] is that rule.
//!
//! Deliberately absent: the daemon conversation itself (crates/rrd-client).

use anyhow::{anyhow, Result};
use rrd_client::ClientError;

/// The outcome of a command that fell back to the file because its daemon
/// was unreachable: the local error if there was one, else the connection
/// error.
pub fn after_fallback(local: Result<()>, unreachable: ClientError) -> Result<()> {
    local.and(Err(unreachable.into()))
}

/// The error rrdtool reports when the flush before a read (`info`,
/// `lastupdate`) fails: the failure's own text, or librrd's wording of its
/// status when it set none.
pub fn flush_failure(file: &str, e: ClientError) -> anyhow::Error {
    if e.message().is_some() {
        return e.into();
    }
    let status = e.status();
    if status > 0 {
        anyhow!("rrdc_flush ({file}) failed: {}", rrd_client::ctext::strerror(status))
    } else {
        anyhow!("rrdc_flush ({file}) failed with status {status}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_keeps_the_local_error_first() {
        let unreachable = || ClientError::Connect("No such file or directory".into());
        let e = after_fallback(Ok(()), unreachable()).unwrap_err();
        assert_eq!(e.to_string(), "Unable to connect to rrdcached: No such file or directory");
        let e = after_fallback(Err(anyhow!("opening 'x': gone")), unreachable()).unwrap_err();
        assert_eq!(e.to_string(), "opening 'x': gone");
    }

    #[test]
    fn flush_failures_are_worded_like_librrd() {
        assert_eq!(
            flush_failure("f", ClientError::Silent).to_string(),
            "rrdc_flush (f) failed with status -1."
        );
        assert_eq!(
            flush_failure("f", ClientError::Errno(libc::ENOBUFS)).to_string(),
            "rrdc_flush (f) failed: No buffer space available"
        );
        assert_eq!(flush_failure("f", ClientError::Send).to_string(), ClientError::Send.to_string());
    }
}
