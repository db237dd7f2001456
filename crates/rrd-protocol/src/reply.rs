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

/// The errors collected during one BATCH, every one of them listed at its
/// end (as rrdcached does), kept compactly: the texts in one buffer, with
/// each error's command number and offset.
///
/// Memory is bounded by [`BatchErrors::BYTES_MAX`] of error text: once it
/// is reached the BATCH is full ([`BatchErrors::is_full`]); the connection
/// then runs none of its later commands and the reply ends with one line
/// naming the first command not run ([`BatchErrors::stop_at`]).
#[derive(Clone, Debug, Default)]
pub struct BatchErrors {
    /// `(command number, start of its text in `texts`)`.
    index: Vec<(u64, usize)>,
    texts: String,
    /// Whether an error arrived after one of a later command.
    out_of_order: bool,
    /// The first command not run because the BATCH was full.
    stopped_at: Option<u64>,
}

impl BatchErrors {
    /// Error text one BATCH may hold before its later commands are not run.
    pub const BYTES_MAX: usize = 64 << 20;

    pub fn push(&mut self, command_number: u64, message: impl Into<String>) {
        if self.index.last().is_some_and(|&(n, _)| n > command_number) {
            self.out_of_order = true;
        }
        self.index.push((command_number, self.texts.len()));
        self.texts.push_str(&message.into());
    }

    /// Whether the errors have reached [`BatchErrors::BYTES_MAX`].
    pub fn is_full(&self) -> bool {
        self.texts.len() >= Self::BYTES_MAX
    }

    /// Notes that command `command_number` and the ones after it are not
    /// run (the first call counts).
    pub fn stop_at(&mut self, command_number: u64) {
        self.stopped_at.get_or_insert(command_number);
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty() && self.stopped_at.is_none()
    }

    /// The reply to `.`: `<n> errors` and one line per error in command
    /// order (errors found late, such as a failed journal commit, may have
    /// been pushed out of order), then, if the BATCH was full, the line for
    /// the first command not run.
    pub fn into_reply(mut self) -> Reply {
        let ends: Vec<usize> =
            self.index.iter().skip(1).map(|&(_, at)| at).chain([self.texts.len()]).collect();
        let mut spans: Vec<(u64, usize, usize)> =
            self.index.iter().zip(ends).map(|(&(n, start), end)| (n, start, end)).collect();
        if self.out_of_order {
            spans.sort_by_key(|&(n, _, _)| n);
        }
        let mut body = Vec::with_capacity(self.texts.len() + 12 * spans.len());
        for (n, start, end) in spans {
            body.extend_from_slice(n.to_string().as_bytes());
            body.push(b' ');
            body.extend_from_slice(&self.texts.as_bytes()[start..end]);
            body.push(b'\n');
        }
        self.texts = String::new();
        if let Some(n) = self.stopped_at {
            body.extend_from_slice(
                format!(
                    "{n} BATCH too large: its errors passed {} MiB of text; this command and the ones after it were not run\n",
                    Self::BYTES_MAX >> 20
                )
                .as_bytes(),
            );
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

    #[test]
    fn every_error_is_listed() {
        let mut e = BatchErrors::default();
        for n in 1..=250_000u64 {
            e.push(n, "bad");
        }
        let reply = e.into_reply();
        assert_eq!(reply.status, 250_000);
        assert!(reply.body.ends_with(b"250000 bad\n"));
    }

    #[test]
    fn a_full_batch_names_the_first_command_not_run() {
        let mut e = BatchErrors::default();
        e.push(1, "x".repeat(BatchErrors::BYTES_MAX));
        assert!(e.is_full());
        e.stop_at(2);
        e.stop_at(3);
        let reply = e.into_reply();
        assert_eq!(reply.status, 2);
        assert!(String::from_utf8_lossy(&reply.body).ends_with("\n2 BATCH too large: its errors passed 64 MiB of text; this command and the ones after it were not run\n"));
    }
}
