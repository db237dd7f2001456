//! Line framing: received bytes in, command lines out.
//!
//! Why here: the daemon and the cluster front end read the same rrdcached
//! protocol, so where a line ends, what a too-long line is and when its
//! error is given must exist once. The framer only looks at bytes the
//! caller has read into its own buffer; reading, timeouts and what to do
//! with a line stay with the caller.
//!
//! Rules:
//! - a line ends at `\n`; one `\r` before it is dropped;
//! - a line of more than [`LINE_LEN_MAX`] bytes (not counting its `\r\n`
//!   or `\n`) is not a command: it gets one "Line too long" error, in its
//!   place among the replies, and is skipped up to its newline, however
//!   the bytes were split across reads;
//! - bytes after the last newline are not a line yet: they wait for more
//!   input (at end of input they are dropped, as rrdcached drops them).
//!
//! Invariant: no allocation or copy per line; a line is a slice of the
//! caller's buffer.

use crate::{Reply, LINE_LEN_MAX};

/// What [`LineFramer::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line, without its `\r\n` or `\n`.
    Line(&'a [u8]),
    /// A complete line longer than [`LINE_LEN_MAX`]: send this error in
    /// its place.
    TooLong(Reply),
}

/// Splits one connection's buffer into lines; keeps, between reads, whether
/// it is inside an over-long line.
///
/// Use per read: call [`LineFramer::next`] on the buffer until it returns
/// `None`, then [`LineFramer::compact`] once before reading more into the
/// same buffer.
#[derive(Debug, Default)]
pub struct LineFramer {
    /// Bytes at the start of the buffer already framed (lines handed out,
    /// bytes skipped).
    consumed: usize,
    /// Inside an over-long line whose error was already given: what comes
    /// up to its newline is dropped.
    skipping: bool,
}

impl LineFramer {
    pub fn new() -> LineFramer {
        LineFramer::default()
    }

    /// The next complete line of `buf` not yet framed, or `None` when only
    /// a partial line (or nothing) is left.
    pub fn next<'a>(&mut self, buf: &'a [u8]) -> Option<Frame<'a>> {
        loop {
            let rest = &buf[self.consumed..];
            let end = memchr::memchr(b'\n', rest)?;
            self.consumed += end + 1;
            if self.skipping {
                self.skipping = false;
                continue;
            }
            let line = &rest[..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.len() > LINE_LEN_MAX {
                return Some(Frame::TooLong(too_long()));
            }
            return Some(Frame::Line(line));
        }
    }

    /// How many bytes at the start of the buffer are framed: the offset
    /// just after the line [`LineFramer::next`] returned last.
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// Whether the rest of an over-long line is being skipped (the line
    /// has not ended, though its bytes are no longer in the buffer).
    pub fn skipping(&self) -> bool {
        self.skipping
    }

    /// Drops the framed bytes from `buf`. If the partial line left is
    /// already too long, drops it too and returns its error (once per
    /// line: the rest of it, read later, is skipped silently).
    pub fn compact(&mut self, buf: &mut Vec<u8>) -> Option<Reply> {
        buf.drain(..self.consumed);
        self.consumed = 0;
        let may_still_fit = match buf.len() {
            n if n <= LINE_LEN_MAX => true,
            n => n == LINE_LEN_MAX + 1 && buf.last() == Some(&b'\r'),
        };
        if may_still_fit {
            return None;
        }
        buf.clear();
        if self.skipping {
            return None;
        }
        self.skipping = true;
        Some(too_long())
    }
}

fn too_long() -> Reply {
    Reply::error(format!("Line too long (more than {LINE_LEN_MAX} bytes); ignored"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` as successive reads; returns what the caller would
    /// see, in order: lines as text, errors as "ERR".
    fn frame(chunks: &[&[u8]]) -> Vec<String> {
        let mut framer = LineFramer::new();
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(frame) = framer.next(&buf) {
                out.push(match frame {
                    Frame::Line(l) => String::from_utf8(l.to_vec()).unwrap(),
                    Frame::TooLong(reply) => {
                        assert!(reply.is_error());
                        assert!(reply.message.starts_with("Line too long"), "{}", reply.message);
                        "ERR".to_string()
                    }
                });
            }
            if framer.compact(&mut buf).is_some() {
                out.push("ERR".to_string());
            }
            assert!(buf.len() <= LINE_LEN_MAX + 1, "the partial line is bounded");
        }
        out
    }

    fn long(n: usize) -> Vec<u8> {
        vec![b'x'; n]
    }

    #[test]
    fn lines_end_at_newline_and_lose_one_carriage_return() {
        assert_eq!(frame(&[b"STATS\r\nPING\nA\r\r\n\n"]), ["STATS", "PING", "A\r", ""]);
        assert_eq!(frame(&[b"PI", b"NG\r", b"\nQUIT\n"]), ["PING", "QUIT"]);
    }

    #[test]
    fn a_final_line_without_newline_waits_and_is_never_a_line() {
        let mut framer = LineFramer::new();
        let mut buf = b"PING\nUPDATE a 1:2".to_vec();
        assert_eq!(framer.next(&buf), Some(Frame::Line(b"PING")));
        assert_eq!(framer.next(&buf), None);
        assert_eq!(framer.consumed(), 5);
        assert_eq!(framer.compact(&mut buf), None);
        assert_eq!(buf, b"UPDATE a 1:2", "kept for the next read");
        assert_eq!(framer.next(&buf), None);
        buf.extend_from_slice(b"\n");
        assert_eq!(framer.next(&buf), Some(Frame::Line(b"UPDATE a 1:2")));
        assert_eq!(frame(&[b"PING\nSTATS"]), ["PING"]);
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_a_line() {
        let mut exact = long(LINE_LEN_MAX);
        exact.push(b'\n');
        let mut crlf = long(LINE_LEN_MAX);
        crlf.extend_from_slice(b"\r\n");
        let x = "x".repeat(LINE_LEN_MAX);
        assert_eq!(frame(&[&exact, b"PING\n"]), [x.as_str(), "PING"]);
        // Split so that the partial line is the limit plus its `\r`.
        let (head, tail) = crlf.split_at(LINE_LEN_MAX + 1);
        assert_eq!(frame(&[head, tail, b"PING\n"]), [x.as_str(), "PING"]);
        let (head, tail) = exact.split_at(LINE_LEN_MAX);
        assert_eq!(frame(&[head, tail]), [x.as_str()]);
    }

    #[test]
    fn an_over_long_line_is_skipped_with_one_error_then_the_next_line_is_read() {
        let mut over = long(LINE_LEN_MAX + 1);
        over.push(b'\n');
        // Whole in one read, between two lines: the error takes its place.
        assert_eq!(frame(&[b"A\n", &[&over[..], b"B\n"].concat()]), ["A", "ERR", "B"]);
        // The limit plus a `\r` that is not followed by `\n`.
        let mut almost = long(LINE_LEN_MAX);
        almost.extend_from_slice(b"\rx\n");
        assert_eq!(frame(&[&almost, b"B\n"]), ["ERR", "B"]);
        let (head, tail) = almost.split_at(LINE_LEN_MAX + 2);
        assert_eq!(frame(&[head, tail, b"B\n"]), ["ERR", "B"]);
        // Over many reads: still one error, and the line after it is whole.
        let big = long(5 * LINE_LEN_MAX);
        let pieces: Vec<&[u8]> = big.chunks(LINE_LEN_MAX / 3 + 7).collect();
        let mut chunks = vec![&b"A\n"[..]];
        chunks.extend(pieces);
        chunks.push(b"tail of it\nB");
        chunks.push(b"\nC\n");
        assert_eq!(frame(&chunks), ["A", "ERR", "B", "C"]);
    }

    #[test]
    fn each_over_long_line_gets_its_own_error() {
        let mut two = long(LINE_LEN_MAX + 10);
        two.push(b'\n');
        two.extend(long(LINE_LEN_MAX + 10));
        two.extend_from_slice(b"\nPING\n");
        assert_eq!(frame(&[&two]), ["ERR", "ERR", "PING"]);
        // The same bytes in reads of 1000 bytes.
        let pieces: Vec<&[u8]> = two.chunks(1000).collect();
        assert_eq!(frame(&pieces), ["ERR", "ERR", "PING"]);
        // A long line right after a skipped one, the newline at a read's end.
        let mut a = long(LINE_LEN_MAX + 2);
        a.push(b'\n');
        assert_eq!(frame(&[&a, &a, b"OK\n"]), ["ERR", "ERR", "OK"]);
    }
}
