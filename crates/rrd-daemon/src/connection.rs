//! One client connection: bytes in, lines out, commands run, replies back
//! in order.
//!
//! Lines end in `\n` (a `\r` before it is dropped). A line longer than
//! [`LINE_LEN_MAX`] gets an error reply and is skipped up to its newline.
//! The first field names the command (any case); then, as rrdcached checks:
//! unknown command, socket permission (`-P`), context (client or BATCH).
//!
//! Pipelining and group commit: every complete line already received is
//! run before any reply is written, and UPDATE replies wait for the journal
//! only when they are written. A client that sends many UPDATE lines at
//! once (or a BATCH) therefore has them all committed by one journal sync,
//! and replies still come back in command order.
//!
//! BATCH: successes are silent, errors are collected with their command
//! number and sent at `.`, after every journal commit of the batch is done.
//! QUIT (or a handler that closes) inside a BATCH closes without a reply,
//! as rrdcached does.

use std::sync::Arc;

use rrd_protocol::reply::BatchErrors;
use rrd_protocol::{Command, Context, Fields, Permissions, Reply, LINE_LEN_MAX};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::commands::{self, Args, Outcome};
use crate::journaler::Ticket;
use crate::state::Daemon;
use crate::stats::Stats;

/// A reply waiting to be written.
enum Queued {
    Ready(Reply),
    AfterCommit(Vec<Ticket>, Reply),
}

struct Batch {
    /// Commands seen since BATCH (the `.` counts too, as in rrdcached).
    count: u64,
    errors: BatchErrors,
    commits: Vec<(u64, Vec<Ticket>)>,
}

/// What to do after a line.
enum Next {
    Continue,
    Close,
}

struct Session {
    daemon: Arc<Daemon>,
    permissions: Permissions,
    batch: Option<Batch>,
    queue: Vec<Queued>,
}

fn journal_error(why: &str) -> String {
    format!("Journal write failed, update not acknowledged: {why}")
}

impl Session {
    fn reply(&mut self, r: Reply) {
        match &mut self.batch {
            Some(b) if r.is_error() => b.errors.push(b.count, r.message),
            Some(_) => {}
            None => self.queue.push(Queued::Ready(r)),
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
        }
        let name_text = String::from_utf8_lossy(&name).into_owned();
        let Some(command) = Command::find(&name) else {
            self.reply(Reply::error(format!("Unknown command: {name_text}")));
            return Next::Continue;
        };
        if !self.permissions.allows(command) {
            self.reply(Reply::error("Permission denied."));
            return Next::Continue;
        }
        let context = if self.batch.is_some() { Context::Batch } else { Context::Client };
        if !command.allowed_in(context) {
            self.reply(Reply::error(format!("Can't use '{name_text}' here.")));
            return Next::Continue;
        }
        let mut args = Vec::new();
        for f in fields {
            let text = f.ok().and_then(|b| String::from_utf8(b).ok());
            match text {
                Some(t) => args.push(t),
                None => {
                    self.reply(Reply::error(format!(
                        "Usage: {} (fields must be UTF-8 and not end in a lone backslash)",
                        command.syntax().unwrap_or("").trim_end()
                    )));
                    return Next::Continue;
                }
            }
        }
        match command {
            Command::Batch => {
                self.reply(Reply::ok_line("Go ahead.  End with dot '.' on its own line."));
                self.batch = Some(Batch { count: 0, errors: BatchErrors::default(), commits: Vec::new() });
                return Next::Continue;
            }
            Command::BatchEnd => {
                let b = self.batch.take().expect("`.` is only allowed inside a BATCH");
                let mut errors = b.errors;
                for (n, tickets) in b.commits {
                    for t in tickets {
                        if let Err(why) = t.wait().await {
                            errors.push(n, journal_error(&why));
                            break;
                        }
                    }
                }
                self.queue.push(Queued::Ready(errors.into_reply()));
                return Next::Continue;
            }
            _ => {}
        }
        let in_batch = self.batch.is_some();
        match commands::execute(&self.daemon, command, Args::new(args), in_batch).await {
            Outcome::Reply(r) => self.reply(r),
            Outcome::AfterCommit(tickets, r) => match &mut self.batch {
                Some(b) => {
                    if r.is_error() {
                        b.errors.push(b.count, r.message);
                        // Its accepted prefix is still committed; wait for
                        // it with the others, reporting nothing more.
                        b.commits.push((0, Vec::new()));
                        for t in tickets {
                            let _ = t.wait().await;
                        }
                    } else {
                        b.commits.push((b.count, tickets));
                    }
                }
                None => self.queue.push(Queued::AfterCommit(tickets, r)),
            },
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
        for q in self.queue.drain(..) {
            let reply = match q {
                Queued::Ready(r) => r,
                Queued::AfterCommit(tickets, r) => {
                    let mut failed = None;
                    for t in tickets {
                        if let Err(why) = t.wait().await {
                            failed = Some(why);
                        }
                    }
                    match failed {
                        Some(why) if !r.is_error() => Reply::error(journal_error(&why)),
                        _ => r,
                    }
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
}

/// Serves one connection until the client leaves, QUIT, or shutdown.
pub async fn serve<S>(daemon: Arc<Daemon>, stream: S, permissions: Permissions)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    Stats::add(&daemon.stats.connections, 1);
    let mut shutdown = daemon.shutdown.subscribe();
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut session = Session { daemon: daemon.clone(), permissions, batch: None, queue: Vec::new() };
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    // Inside an over-long line: drop bytes up to the next newline.
    let mut skipping = false;
    loop {
        if *shutdown.borrow() {
            break;
        }
        let n = tokio::select! {
            r = rd.read(&mut chunk) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = shutdown.changed() => break,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut consumed = 0;
        let mut close = false;
        while let Some(pos) = buf[consumed..].iter().position(|&b| b == b'\n') {
            let end = consumed + pos;
            let mut line = &buf[consumed..end];
            consumed = end + 1;
            if skipping {
                skipping = false;
                continue;
            }
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = line.to_vec();
            if let Next::Close = session.line(&line).await {
                close = true;
                break;
            }
        }
        buf.drain(..consumed);
        if !close && buf.len() > LINE_LEN_MAX {
            buf.clear();
            if !skipping {
                skipping = true;
                session
                    .reply(Reply::error(format!("Line too long (more than {LINE_LEN_MAX} bytes); ignored")));
            }
        }
        if session.write_replies(&mut wr).await.is_err() || close {
            break;
        }
    }
    let _ = session.write_replies(&mut wr).await;
    let _ = wr.shutdown().await;
}
