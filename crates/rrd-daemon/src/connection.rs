//! One client connection: bytes in, lines out, commands run, replies back
//! in order.
//!
//! Lines are framed by [`rrd_protocol::framing`]: they end in `\n` (a `\r`
//! before it is dropped); a line longer than
//! [`rrd_protocol::LINE_LEN_MAX`] gets an error reply and is skipped up to
//! its newline.
//! The first field names the command (any case); then, as rrdcached checks:
//! unknown command, socket permission (`-P`), context (client or BATCH).
//!
//! Pipelining and group commit: every complete line already received is
//! run before any reply is written; then this connection writes the
//! journal records of those lines itself, with one `write(2)`
//! ([`crate::journaler::Journaler::wait`]), and, only under
//! `--sync always`, waits for the sync thread's `fdatasync`. A client that
//! sends many UPDATE lines at once (or a BATCH) therefore has them all
//! written by one write and covered by one sync, and replies still come
//! back in command order. A single UPDATE waiting for its reply costs one
//! read, one journal write and one reply write, on this thread.
//!
//! The UPDATE fast path: most lines a busy daemon sees are UPDATEs. Those
//! are handled in place, synchronously, without copying the line or
//! splitting it into owned fields: the file name becomes its cache key in a
//! reused buffer (a name already in normal form is taken as it is), the
//! values go straight into the entry, and the journal record is framed from
//! the line's bytes. A file's first UPDATE opens it here too (one confined
//! open and one `fstat`, as rrdcached checks it in its connection thread).
//! In a BATCH, the two lines after the current one are resolved ahead and
//! the memory their UPDATEs touch is prefetched (`look_ahead`).
//! Anything else (another command, a backslash, a name refused) takes the
//! general path, which gives the same replies.
//!
//! Idle connections: with an idle timeout (`--idle-timeout-tcp`,
//! `--idle-timeout-unix`), a connection that sends nothing for that long
//! is closed, and so is one whose line does not complete within that
//! long of its first byte (a byte now and then does not keep a line
//! open: the deadline is per line, not per read).
//!
//! HTTP: a connection whose first line is an HTTP request line
//! ([`looks_like_http`]) is closed before anything from it runs, and
//! logged at LOG_WARNING: a web page can make a browser POST to the
//! daemon's TCP port (no CORS preflight for a `text/plain` form), and
//! rrdcached would run the lines of its body as commands.
//!
//! BATCH: successes are silent, errors are collected with their command
//! number and sent at `.`, every one of them (up to 64 MiB of error text;
//! past that the BATCH runs none of its later commands and says so), after every journal commit of the batch is done
//! (its records are written every `BATCH_WRITE_BYTES` of input and at
//! the `.`).
//! QUIT (or a handler that closes) inside a BATCH closes without a reply,
//! as rrdcached does.
//!
//! DUMP (rrdcached 1.9): the replies before it are written, then its XML
//! as it is rendered (`commands::dump`), then the connection is closed;
//! lines after it are not run.
//!
//! Transports: the same session code serves a connection on the runtime's
//! shared threads ([`serve_peer`]: TCP, and UNIX sockets beyond
//! `--unix-threads`) and on a thread of its own with blocking reads and
//! writes ([`own_thread`]: UNIX sockets). Only how bytes arrive differs
//! (`Incoming`); replies go through `AsyncWrite` either way.

mod look_ahead;
pub mod own_thread;

use std::sync::Arc;
use std::time::Duration;

use rrd_protocol::reply::BatchErrors;
use rrd_protocol::{fields, gate, Command, Context, Fields, Frame, LineFramer, Permissions, Reply};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::cache::unix_now;
use crate::commands::{self, journal_error, Accepted, Args, Outcome, Peer};
use crate::journaler::Ticket;
use crate::prefetch::HeaderPrefetch;
use crate::state::{Daemon, Listening};
use crate::stats::Stats;

/// A reply waiting to be written.
enum Queued {
    Ready(Reply),
    AfterCommit(Ticket, Reply),
    /// A FETCH answer, written in pieces as the client takes them.
    Stream(Box<commands::fetch::FetchReply>),
    /// A DUMP's XML, written as it is rendered; the connection closes
    /// after it.
    Dump(commands::dump::DumpStream),
}

/// How much of a streamed reply is rendered before it is written.
const STREAM_CHUNK_BYTES: usize = 256 * 1024;

struct Batch {
    /// Commands seen since BATCH (the `.` counts too, as in rrdcached).
    count: u64,
    errors: BatchErrors,
    /// Journal records of the batch's commands whose failure is to be
    /// reported, as runs of consecutive command numbers with one ticket:
    /// `(ticket, first, last)`. A batch written in a few commits is a few
    /// runs, however many lines it has.
    runs: Vec<(Ticket, u64, u64)>,
    /// The newest ticket of the batch (what its end waits for).
    newest: Ticket,
    /// Bytes of the batch received since its records were last written.
    unwritten_bytes: usize,
}

/// A BATCH's records are written once this many bytes of it arrived (and
/// at its end): large batches reach the journal in writes of about this
/// size, and the staging buffers stay small enough that the write copies
/// records still in the CPU's caches (1 MiB made a steady BATCH line cost
/// about 15% more CPU than 128 KiB; 64 KiB and 256 KiB were not better:
/// docs/BENCHMARKS.md, 2026-11-29).
const BATCH_WRITE_BYTES: usize = 128 << 10;

impl Batch {
    /// Notes a journal record of command `n` (`None`: the command already
    /// got its error, only its record is waited for).
    fn commit(&mut self, n: Option<u64>, ticket: Ticket) {
        if let Some(n) = n {
            match self.runs.last_mut() {
                Some((t, _, last)) if *t == ticket && *last + 1 == n => *last = n,
                _ => self.runs.push((ticket.clone(), n, n)),
            }
        }
        self.newest = std::mem::replace(&mut self.newest, Ticket::Done).max(ticket);
    }
}

/// What to do after a line.
enum Next {
    Continue,
    Close,
}

struct Session {
    daemon: Arc<Daemon>,
    /// The listener's settings: base directory, permissions, skip flag.
    listening: Listening,
    batch: Option<Batch>,
    queue: Vec<Queued>,
    /// The cache key of the line being handled (reused, not reallocated).
    key: String,
    /// A BATCH's next lines, resolved and prefetched ahead.
    ahead: look_ahead::LookAhead,
    /// Headers of files met for the first time, read ahead.
    prefetch: HeaderPrefetch,
    /// The client, whose leaving ends a long LIST.
    peer: Peer,
    /// Served on a thread of its own ([`own_thread`]): blocking is free.
    own_thread: bool,
}

impl Session {
    fn reply(&mut self, r: Reply) {
        match &mut self.batch {
            Some(b) if r.is_error() => b.errors.push(b.count, r.message),
            Some(_) => {}
            None => self.queue.push(Queued::Ready(r)),
        }
    }

    /// Handles `line` if it is an UPDATE the fast path can take (see the
    /// module doc); `false` leaves it to [`Session::line`], untouched.
    /// `chunk` holds the complete lines received, the next one at `next`
    /// (where a first touch looks ahead: [`HeaderPrefetch`]).
    fn fast_update(&mut self, line: &[u8], now: i64, chunk: &[u8], next: usize) -> bool {
        let Some((name, values)) = fields::plain_update(line) else { return false };
        let context = if self.batch.is_some() { Context::Batch } else { Context::Client };
        if !gate::admits(Command::Update, self.listening.permissions, context) {
            return false;
        }
        let daemon = &self.daemon;
        let paths = daemon.paths_of(&self.listening);
        let skip_past = self.listening.skip_past_updates;
        if !self.ahead.take(next, &mut self.key) {
            let Ok(name) = std::str::from_utf8(name) else { return false };
            if paths.resolve_into(name, &mut self.key).is_err() {
                return false;
            }
        }
        Stats::add(&daemon.stats.updates_received, 1);
        if let Some(b) = &mut self.batch {
            b.count += 1;
            if b.errors.is_full() {
                b.errors.stop_at(b.count);
                return true;
            }
        }
        if self.batch.is_some() {
            self.ahead.advance(daemon, paths, chunk, next);
        }
        let key = self.key.as_str();
        let values = values.into_iter().flat_map(|v| v.split(' '));
        let mut fresh = None;
        let outcome = match commands::update_values(daemon, skip_past, key, &mut fresh, values.clone(), now) {
            Some(outcome) => outcome,
            // A file's first UPDATE: its checks are one open and one fstat,
            // done here (as rrdcached does in its connection thread).
            None => {
                self.prefetch.ahead(&daemon.cache, paths, chunk, next);
                match commands::open_entry(daemon, key, self.prefetch.take(&daemon.cache, key)) {
                    Err(reply) => Err(reply),
                    Ok(found) => {
                        fresh = Some(found);
                        commands::update_values(daemon, skip_past, key, &mut fresh, values, now)
                            .expect("made from the fresh header")
                    }
                }
            }
        };
        match outcome {
            Err(reply) => self.reply(reply),
            Ok(accepted) => self.after_update(accepted),
        }
        true
    }

    /// Queues an UPDATE's reply (or, in a BATCH, its error and commit).
    fn after_update(&mut self, mut accepted: Accepted) {
        match (&mut self.batch, accepted.ticket.take()) {
            // A success inside a BATCH has no reply to build.
            (Some(b), Some(ticket)) if accepted.error.is_none() => b.commit(Some(b.count), ticket),
            (_, Some(ticket)) => self.after_commit(ticket, accepted.reply()),
            (_, None) => self.reply(accepted.reply()),
        }
    }

    /// Queues a reply that waits for `ticket` (FORGET; UPDATE on the general path).
    fn after_commit(&mut self, ticket: Ticket, reply: Reply) {
        match &mut self.batch {
            Some(b) if reply.is_error() => {
                b.errors.push(b.count, reply.message);
                b.commit(None, ticket);
            }
            Some(b) => b.commit(Some(b.count), ticket),
            None => self.queue.push(Queued::AfterCommit(ticket, reply)),
        }
    }

    async fn line(&mut self, line: &[u8]) -> Next {
        let mut fields = Fields::new(line);
        let Some(Ok(name)) = fields.next_field() else {
            self.reply(Reply::error("Unable to parse command (a lone backslash ends the line)"));
            return Next::Continue;
        };
        if let Some(b) = &mut self.batch {
            b.count += 1;
            // A BATCH whose errors reached their bound runs nothing more.
            if b.errors.is_full() && &name[..] != b"." {
                b.errors.stop_at(b.count);
                return Next::Continue;
            }
        }
        let context = if self.batch.is_some() { Context::Batch } else { Context::Client };
        let (command, args) = match gate::line(&name, fields, self.listening.permissions, context) {
            Ok(gated) => gated,
            Err(refusal) => {
                self.reply(refusal);
                return Next::Continue;
            }
        };
        match command {
            Command::Batch => {
                self.reply(Reply::ok_line("Go ahead.  End with dot '.' on its own line."));
                self.batch = Some(Batch {
                    count: 0,
                    errors: BatchErrors::default(),
                    runs: Vec::new(),
                    newest: Ticket::Done,
                    unwritten_bytes: 0,
                });
                return Next::Continue;
            }
            Command::BatchEnd => {
                let b = self.batch.take().expect("`.` is only allowed inside a BATCH");
                let mut errors = b.errors;
                // Tickets are ordered: one wait (one sync) covers them all.
                let _ = self.daemon.journal.wait(&b.newest).await;
                for (ticket, first, last) in &b.runs {
                    if let Err(why) = self.daemon.journal.failure(ticket) {
                        for n in *first..=*last {
                            errors.push(n, journal_error(&why));
                        }
                    }
                }
                self.queue.push(Queued::Ready(errors.into_reply()));
                return Next::Continue;
            }
            _ => {}
        }
        let in_batch = self.batch.is_some();
        if matches!(command, Command::Fetch | Command::FetchBin) && !in_batch {
            let binary = command == Command::FetchBin;
            match commands::fetch::prepare(&self.daemon, self.listening, Args::new(args), binary).await {
                Ok(reply) => self.queue.push(Queued::Stream(Box::new(reply))),
                Err(reply) => self.reply(reply),
            }
            return Next::Continue;
        }
        if command == Command::Dump {
            // DUMP is a client command (never in a BATCH); its end is the
            // connection's.
            return match commands::dump::prepare(&self.daemon, self.listening, Args::new(args)).await {
                Ok(stream) => {
                    self.queue.push(Queued::Dump(stream));
                    Next::Close
                }
                Err(reply) => {
                    self.reply(reply);
                    Next::Continue
                }
            };
        }
        match commands::execute_for(
            &self.daemon,
            self.listening,
            command,
            Args::new(args),
            in_batch,
            self.peer,
        )
        .await
        {
            Outcome::Reply(r) => self.reply(r),
            Outcome::AfterCommit(ticket, r) => self.after_commit(ticket, r),
            Outcome::ReplyThenClose(r) => {
                if self.batch.is_none() {
                    self.queue.push(Queued::Ready(r));
                }
                return Next::Close;
            }
            Outcome::Close => return Next::Close,
        }
        Next::Continue
    }

    /// Writes every queued reply, in order, waiting for journal commits.
    async fn write_replies<W: AsyncWrite + Unpin>(&mut self, w: &mut W) -> std::io::Result<()> {
        let mut out = Vec::new();
        let newest = self.queue.iter().fold(Ticket::Done, |m, q| match q {
            Queued::AfterCommit(t, _) => m.max(t.clone()),
            Queued::Ready(_) | Queued::Stream(_) | Queued::Dump(_) => m,
        });
        if self.own_thread {
            // Nothing else to serve here while the writer lock is taken:
            // wait on the lock itself (no wake-up list to join).
            self.daemon.journal.commit(&newest);
        }
        let _ = self.daemon.journal.wait(&newest).await;
        let queue = std::mem::take(&mut self.queue);
        for q in queue {
            let reply = match q {
                Queued::Ready(r) => r,
                Queued::AfterCommit(ticket, r) => match self.daemon.journal.failure(&ticket) {
                    Err(why) if !r.is_error() => Reply::error(journal_error(&why)),
                    _ => r,
                },
                Queued::Stream(stream) => {
                    self.write_stream(w, &mut out, stream).await?;
                    continue;
                }
                Queued::Dump(mut dump) => {
                    if !out.is_empty() {
                        w.write_all(&out).await?;
                        out.clear();
                    }
                    while let Some(piece) = dump.next().await {
                        w.write_all(&piece).await?;
                    }
                    continue;
                }
            };
            reply.encode(&mut out);
        }
        if !out.is_empty() {
            w.write_all(&out).await?;
            w.flush().await?;
        }
        Ok(())
    }

    /// Writes a streamed reply after what `out` holds, a piece at a time
    /// (memory: one piece). A large one waits for its turn among the
    /// large replies being written.
    async fn write_stream<W: AsyncWrite + Unpin>(
        &self,
        w: &mut W,
        out: &mut Vec<u8>,
        mut stream: Box<commands::fetch::FetchReply>,
    ) -> std::io::Result<()> {
        let _turn = if stream.is_large() {
            if !out.is_empty() {
                w.write_all(out).await?;
                out.clear();
            }
            w.flush().await?;
            Some(self.daemon.large_replies.clone().acquire_owned().await)
        } else {
            None
        };
        loop {
            let done = stream.render(out, STREAM_CHUNK_BYTES);
            if done && out.len() < STREAM_CHUNK_BYTES {
                // Small enough to go with what follows.
                return Ok(());
            }
            w.write_all(out).await?;
            out.clear();
            if done {
                return Ok(());
            }
            if self.daemon.is_shutting_down() {
                return Err(std::io::Error::other("shutting down in the middle of a reply"));
            }
        }
    }
}

/// Whether `line` (a connection's first) is an HTTP request line:
/// `METHOD TARGET HTTP/1.x` (or HTTP/2's preface), which no rrdcached
/// command resembles.
pub fn looks_like_http(line: &[u8]) -> bool {
    const METHODS: [&[u8]; 10] =
        [b"GET", b"POST", b"PUT", b"HEAD", b"OPTIONS", b"DELETE", b"PATCH", b"CONNECT", b"TRACE", b"PRI"];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut words = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return false;
    };
    METHODS.contains(&method)
        && !target.is_empty()
        && (version.starts_with(b"HTTP/1.") || version == b"HTTP/2.0")
}

/// Serves one connection until the client leaves, QUIT, or shutdown, as
/// a connection of the default socket with `permissions`
/// ([`Daemon::default_listening`]).
///
/// `idle`: close the connection when the client sends nothing for this
/// long (a client in the middle of a line counts as idle too).
pub async fn serve<S>(daemon: Arc<Daemon>, stream: S, permissions: Permissions, idle: Option<Duration>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let listening = daemon.default_listening(permissions);
    serve_peer(daemon, stream, listening, idle, Peer::default()).await
}

/// How a wait for a connection's bytes ended.
pub(crate) enum Received {
    /// Bytes were appended to the buffer.
    Bytes,
    /// The client closed its end, or the read failed.
    Closed,
    /// The deadline passed first.
    Idle,
    /// The daemon is shutting down.
    Shutdown,
}

/// Where a connection's bytes come from: the runtime's reactor
/// ([`Reactor`]) or a blocking read on the connection's own thread
/// ([`own_thread`]).
pub(crate) trait Incoming {
    /// Whether the connection has its thread to itself (may block it).
    const OWN_THREAD: bool;
    /// Waits for bytes and appends them to `buf`, giving up at `deadline`.
    async fn receive(&mut self, buf: &mut Vec<u8>, deadline: Option<Instant>) -> Received;
}

/// A connection's reading half on the runtime: a read, the shutdown
/// signal and the idle deadline, whichever comes first.
struct Reactor<R> {
    rd: R,
    shutdown: tokio::sync::watch::Receiver<bool>,
}

impl<R: AsyncRead + Unpin> Incoming for Reactor<R> {
    const OWN_THREAD: bool = false;
    async fn receive(&mut self, buf: &mut Vec<u8>, deadline: Option<Instant>) -> Received {
        let idle = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = self.rd.read_buf(buf) => match r {
                Ok(0) | Err(_) => Received::Closed,
                Ok(_) => Received::Bytes,
            },
            _ = self.shutdown.changed() => Received::Shutdown,
            () = idle => Received::Idle,
        }
    }
}

/// [`serve`] for a connection of the listener `listening`, on a socket
/// whose client's leaving ends long commands.
pub async fn serve_peer<S>(
    daemon: Arc<Daemon>,
    stream: S,
    listening: Listening,
    idle: Option<Duration>,
    peer: Peer,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (rd, wr) = tokio::io::split(stream);
    let incoming = Reactor { rd, shutdown: daemon.shutdown.subscribe() };
    serve_with(daemon, incoming, wr, listening, idle, peer).await;
}

/// The session loop over any transport: read what arrived, run its
/// complete lines, write their replies, until the client leaves, QUIT,
/// the idle deadline or shutdown.
// One read loop; every branch shares its timeout and pipelining state.
#[allow(clippy::too_many_lines)]
pub(crate) async fn serve_with<I, W>(
    daemon: Arc<Daemon>,
    mut incoming: I,
    mut wr: W,
    listening: Listening,
    idle: Option<Duration>,
    peer: Peer,
) where
    I: Incoming,
    W: AsyncWrite + Unpin,
{
    Stats::add(&daemon.stats.connections, 1);
    let mut session = Session {
        daemon: daemon.clone(),
        listening,
        batch: None,
        queue: Vec::new(),
        key: String::new(),
        ahead: look_ahead::LookAhead::default(),
        prefetch: HeaderPrefetch::default(),
        peer,
        own_thread: I::OWN_THREAD,
    };
    let mut buf: Vec<u8> = Vec::with_capacity(128 * 1024);
    let mut lines = LineFramer::new();
    // When the first byte of the line not yet complete arrived: that line
    // must complete within `idle` of it.
    let mut line_began: Option<Instant> = None;
    let mut first_line = true;
    loop {
        if *daemon.shutdown.borrow() {
            break;
        }
        buf.reserve(64 * 1024);
        let deadline = idle.map(|d| line_began.unwrap_or_else(Instant::now) + d);
        match incoming.receive(&mut buf, deadline).await {
            Received::Bytes => {}
            Received::Closed | Received::Shutdown => break,
            Received::Idle => {
                Stats::add(&daemon.stats.connections_idle_closed, 1);
                let secs = idle.unwrap_or_default().as_secs();
                if line_began.is_some() {
                    crate::log!(Debug, "closing a connection whose line did not complete within {secs} s");
                } else {
                    crate::log!(Debug, "closing a connection idle for {secs} s");
                }
                break;
            }
        }
        let read_at = Instant::now();
        let now = unix_now();
        let mut close = false;
        let mut framed_any = false;
        let complete = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
        while let Some(frame) = lines.next(&buf) {
            framed_any = true;
            let line = match frame {
                Frame::Line(line) => line,
                Frame::TooLong(reply) => {
                    first_line = false;
                    session.reply(reply);
                    continue;
                }
            };
            if std::mem::take(&mut first_line) && looks_like_http(line) {
                let method = line.split(|&b| b == b' ').next().unwrap_or_default();
                crate::log!(
                    Warning,
                    "closed a connection{} whose first line is an HTTP {} request; nothing from it was run \
                     (this port speaks rrdcached's protocol; a web page may have sent it)",
                    session.peer.addr().map(|a| format!(" from {}", a.ip())).unwrap_or_default(),
                    String::from_utf8_lossy(method)
                );
                Stats::add(&daemon.stats.connections_http_closed, 1);
                session.queue.clear();
                let _ = wr.shutdown().await;
                return;
            }
            if session.fast_update(line, now, &buf[..complete], lines.consumed()) {
                continue;
            }
            if let Next::Close = session.line(line).await {
                close = true;
                break;
            }
        }
        if let Some(b) = &mut session.batch {
            b.unwritten_bytes += lines.consumed();
            if b.unwritten_bytes >= BATCH_WRITE_BYTES {
                b.unwritten_bytes = 0;
                // Tickets only grow: the last one covers the batch so far.
                session.daemon.journal.commit(&b.newest);
            }
        }
        session.prefetch.reset(&session.daemon.cache);
        session.ahead.reset();
        if let Some(reply) = lines.compact(&mut buf).filter(|_| !close) {
            session.reply(reply);
        }
        // A line is pending (or an over-long one is being skipped) when
        // bytes after the last newline were read: it began in this read if
        // a line ended in it, else no later than it already had.
        line_began = if buf.is_empty() && !lines.skipping() {
            None
        } else if framed_any {
            Some(read_at)
        } else {
            Some(line_began.unwrap_or(read_at))
        };
        if session.write_replies(&mut wr).await.is_err() || close {
            break;
        }
    }
    let _ = session.write_replies(&mut wr).await;
    let _ = wr.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::looks_like_http;

    #[test]
    fn http_request_lines_are_recognised_and_commands_are_not() {
        for http in [
            &b"POST / HTTP/1.1"[..],
            b"GET /metrics HTTP/1.0\r",
            b"PUT /x?y=1 HTTP/1.1",
            b"HEAD * HTTP/1.1",
            b"OPTIONS * HTTP/1.1",
            b"DELETE /a HTTP/1.1",
            b"PRI * HTTP/2.0",
        ] {
            assert!(looks_like_http(http), "{}", String::from_utf8_lossy(http));
        }
        for line in [
            &b"UPDATE f.rrd N:1"[..],
            b"PING",
            b"GET",
            b"POST / HTTP/1.1 extra",
            b"POST  HTTP/1.1",
            b"post / HTTP/1.1",
            b"GET / SMTP/1.0",
            b"FLUSH HTTP/1.1",
            b"",
        ] {
            assert!(!looks_like_http(line), "{}", String::from_utf8_lossy(line));
        }
    }
}
