//! Replies: a status line `<n> <message>\n`, then `n` lines when `n > 0`.
//! A negative `n` is an error (rrdcached always sends -1). Inside a BATCH,
//! successes are silent and each error becomes a line `<command number>
//! <message>` of the final `<count> errors` reply.
//!
//! Invariant: [`Reply::ok`] counts the newlines of its body, so the status
//! number and the lines that follow never disagree. The one exception is
//! FETCHBIN, whose status number counts header lines and binary blocks and
//! is therefore given explicitly ([`Reply::raw`]).

/// One reply, ready to be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Lines that follow (≥ 0) or -1 for an error.
    pub status: i64,
    /// The status line's text, without its newline.
    pub message: String,
    /// What follows the status line (complete lines).
    pub body: Vec<u8>,
}

impl Reply {
    /// A success whose status counts the lines of `body`.
    pub fn ok(message: impl Into<String>, body: Vec<u8>) -> Reply {
        let status = body.iter().filter(|&&b| b == b'\n').count() as i64;
        Reply { status, message: message.into(), body }
    }

    /// A success with nothing after the status line.
    pub fn ok_line(message: impl Into<String>) -> Reply {
        Reply { status: 0, message: message.into(), body: Vec::new() }
    }

    /// An error (`-1 message`).
    pub fn error(message: impl Into<String>) -> Reply {
        Reply { status: -1, message: message.into(), body: Vec::new() }
    }

    /// A reply whose status number is given, not counted (FETCHBIN).
    pub fn raw(status: i64, message: impl Into<String>, body: Vec<u8>) -> Reply {
        Reply { status, message: message.into(), body }
    }

    pub fn is_error(&self) -> bool {
        self.status < 0
    }

    /// The bytes on the wire.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.status.to_string().as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.message.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&self.body);
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}

/// The errors collected during one BATCH: `(command number, message)`.
#[derive(Clone, Debug, Default)]
pub struct BatchErrors {
    errors: Vec<(u64, String)>,
    /// Errors beyond the kept ones are counted but not kept (a limit on the
    /// memory one client can make the daemon hold).
    dropped: u64,
}

impl BatchErrors {
    /// The most error lines one BATCH keeps.
    pub const KEPT_MAX: usize = 100_000;

    pub fn push(&mut self, command_number: u64, message: impl Into<String>) {
        if self.errors.len() < Self::KEPT_MAX {
            self.errors.push((command_number, message.into()));
        } else {
            self.dropped += 1;
        }
    }

    pub fn len(&self) -> usize {
        self.errors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty() && self.dropped == 0
    }

    /// The reply to `.`: `<n> errors` and one line per error in command
    /// order (errors found late, such as a failed journal commit, may have
    /// been pushed out of order).
    pub fn into_reply(mut self) -> Reply {
        self.errors.sort_by_key(|(n, _)| *n);
        let mut body = Vec::new();
        for (n, msg) in &self.errors {
            body.extend_from_slice(format!("{n} {msg}\n").as_bytes());
        }
        if self.dropped > 0 {
            body.extend_from_slice(format!("0 {} more errors not shown\n", self.dropped).as_bytes());
        }
        Reply::ok("errors", body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_counts_body_lines() {
        assert_eq!(
            Reply::ok("Statistics follow", b"A: 1\nB: 2\n".to_vec()).to_bytes(),
            b"2 Statistics follow\nA: 1\nB: 2\n"
        );
        assert_eq!(Reply::ok_line("PONG").to_bytes(), b"0 PONG\n");
        assert_eq!(Reply::error("No such file: x").to_bytes(), b"-1 No such file: x\n");
    }

    #[test]
    fn batch_errors_sorted_by_command_number() {
        let mut e = BatchErrors::default();
        e.push(7, "late");
        e.push(2, "early");
        assert_eq!(e.into_reply().to_bytes(), b"2 errors\n2 early\n7 late\n");
        assert_eq!(BatchErrors::default().into_reply().to_bytes(), b"0 errors\n");
    }
}
