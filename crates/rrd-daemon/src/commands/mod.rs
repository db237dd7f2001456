//! One module per command (or family), and the dispatch between them.
//!
//! A handler gets the daemon, the fields after the command name, and
//! whether it runs inside a BATCH; it returns an [`Outcome`]: a reply now, a
//! reply once journal records are durable, or "close the connection".
//! Handlers never panic on input: every malformed line is an error reply.

use std::sync::Arc;

use rrd_protocol::{Command, Reply};

use crate::journaler::Ticket;
use crate::state::{Daemon, Listening};

mod create;
pub mod dump;
pub mod fetch;
pub mod flush;
mod forget;
mod help;
mod info;
mod list;
mod pending;
mod queue;
mod stats;
mod suspend;
mod tune;
mod update;

pub use update::value_time as update_value_time;
pub use update::{check_value, open_entry, ValueRefusal, FUTURE_SECS_MAX};
pub(crate) use update::{update_values, Accepted};

/// What a command produced.
pub enum Outcome {
    Reply(Reply),
    /// The reply, but only once the ticket's record is durable; if it
    /// fails, an error reply naming the journal failure replaces it.
    AfterCommit(Ticket, Reply),
    /// Reply, then close the connection (rrdcached's handlers that return
    /// an error status do that).
    ReplyThenClose(Reply),
    /// Close without a reply (QUIT).
    Close,
}

impl From<Reply> for Outcome {
    fn from(r: Reply) -> Outcome {
        Outcome::Reply(r)
    }
}

/// The usage error rrdcached gives for a malformed command.
pub fn syntax_error(command: Command) -> Reply {
    let syntax = command.syntax().unwrap_or("Syntax error.\n");
    Reply::error(format!("Usage: {}", syntax.trim_end_matches('\n')))
}

/// The error for an update the journal did not take.
pub fn journal_error(why: &crate::journaler::JournalError) -> String {
    format!("Journal write failed, update not acknowledged: {why}")
}

/// The message for a refused file name.
pub fn access_denied(shown: &str) -> Reply {
    Reply::error(format!("{shown}: Permission denied"))
}

/// The arguments of one command line (after the command name).
pub struct Args {
    fields: std::vec::IntoIter<String>,
}

impl Args {
    pub fn new(fields: Vec<String>) -> Args {
        Args { fields: fields.into_iter() }
    }

    /// The next field, if any (an empty field counts).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<String> {
        self.fields.next()
    }

    pub fn rest(self) -> Vec<String> {
        self.fields.collect()
    }
}

/// The client a command runs for, as far as long commands need it:
/// whether it is still connected (`None`: not known, assumed there), and
/// its address (TCP), for the log.
#[derive(Clone, Copy, Debug, Default)]
pub struct Peer {
    fd: Option<std::os::fd::RawFd>,
    addr: Option<std::net::SocketAddr>,
}

impl Peer {
    /// The client at the other end of `socket`, which must stay open while
    /// the commands it sends run (the connection holds it).
    pub fn of(socket: &impl std::os::fd::AsRawFd) -> Peer {
        Peer { fd: Some(socket.as_raw_fd()), addr: None }
    }

    /// The same client, known by its TCP address.
    pub fn at(self, addr: Option<std::net::SocketAddr>) -> Peer {
        Peer { addr, ..self }
    }

    /// The TCP address, when known.
    pub fn addr(&self) -> Option<std::net::SocketAddr> {
        self.addr
    }

    /// Whether the client closed its connection (or it was reset).
    pub fn gone(&self) -> bool {
        self.fd.is_some_and(rrd_sys::net::peer_hung_up)
    }
}

/// Runs one command, as for a client of the default socket
/// ([`Daemon::default_listening`], every command allowed).
pub async fn execute(daemon: &Arc<Daemon>, command: Command, args: Args, in_batch: bool) -> Outcome {
    let l = daemon.default_listening(rrd_protocol::Permissions::all());
    execute_for(daemon, l, command, args, in_batch, Peer::default()).await
}

/// [`execute`] for a client of the listener `l` (its base directory and
/// `--skip-past-updates`) whose leaving ends long commands (LIST).
pub async fn execute_for(
    daemon: &Arc<Daemon>,
    l: Listening,
    command: Command,
    args: Args,
    in_batch: bool,
    peer: Peer,
) -> Outcome {
    match command {
        Command::Update => update::run(daemon, l, args).await,
        Command::Flush => flush::flush(daemon, l, args).await,
        Command::FlushAll => flush::flush_all(daemon).await,
        Command::Pending => pending::run(daemon, l, args).into(),
        Command::Forget => forget::run(daemon, l, args).await,
        Command::Queue => queue::run(daemon).into(),
        Command::Stats => stats::run(daemon).into(),
        Command::Help => help::run(args).into(),
        Command::Ping => Reply::ok_line("PONG").into(),
        Command::Fetch => fetch::run(daemon, l, args, false).await,
        Command::FetchBin => fetch::run(daemon, l, args, true).await,
        Command::Info => info::info(daemon, l, args).await,
        Command::First => info::first(daemon, l, args).await,
        Command::Last => info::last(daemon, l, args).await,
        Command::List => list::run(daemon, l, args, peer).await,
        Command::Create => create::run(daemon, l, args).await,
        Command::Suspend => suspend::suspend(daemon, l, args),
        Command::Resume => suspend::resume(daemon, l, args),
        Command::SuspendAll => suspend::suspend_all(daemon).into(),
        Command::ResumeAll => suspend::resume_all(daemon).into(),
        Command::Tune => tune::run(daemon, l, args).await,
        Command::Quit => Outcome::Close,
        // DUMP's reply is a stream the connection writes (dump::prepare).
        Command::Dump => Reply::error("Can't use 'DUMP' here.").into(),
        // BATCH and `.` are the connection's business; WROTE exists only in
        // rrdcached's journal and never reaches here (its context is Journal).
        Command::Batch | Command::BatchEnd | Command::Wrote => {
            let _ = in_batch;
            Reply::error(format!("Can't use '{}' here.", command.name())).into()
        }
    }
}

/// Runs blocking file work off the async threads: on the blocking pool
/// from the runtime's shared threads, in place on a connection's own
/// thread (`crate::connection::own_thread`), which serves no one else.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    if crate::connection::own_thread::is_current() {
        return f();
    }
    tokio::task::spawn_blocking(f).await.expect("blocking task panicked")
}
