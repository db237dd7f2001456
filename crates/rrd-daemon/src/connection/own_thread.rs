//! UNIX-socket connections served each on a thread of its own, with
//! blocking reads and writes, as rrdcached serves every connection.
//!
//! Why: a client that waits for each reply (collectd, `rrdtool --daemon`,
//! MRTG, Munin) sends a line and sleeps; on its own thread, that line wakes
//! the thread blocked in `read(2)` on the socket, which answers and reads
//! again. On the runtime's shared threads the same line costs an
//! `epoll_wait`, a second read to find the socket empty, and often a
//! hand-off between worker threads. With 16 clients on two cores the
//! round trip floor (PING) rose from 0.8 of rrdcached's to 1.3 times it
//! (docs/BENCHMARKS.md, 2026-11-28, "A thread of its own for each
//! UNIX-socket client").
//!
//! The session is the same async code as on the runtime
//! (`serve_with`), run by the runtime's `Handle::block_on` on
//! this thread: reads and writes complete in their first poll (they block
//! this thread, which serves no one else), while journal waits, FETCH's
//! turn for large replies, DUMP's rendering and CREATE's lock work as on
//! the runtime. File work the shared threads hand to the blocking pool
//! (FETCH, INFO, CREATE, LIST: `commands::blocking`) runs in place here.
//!
//! Shutdown: a thread blocked in `read(2)` does not see the shutdown
//! signal, so every such socket is registered in [`Threads`], and
//! [`Threads::shut_all`] shuts their reading side when the daemon stops:
//! the read returns, the replies already due are written, the connection
//! closes. Idle timeouts (`--idle-timeout-unix`): the socket's receive
//! timeout is set to what is left until the deadline before each read.
//!
//! How many: at most `--unix-threads` at once. A connection beyond that,
//! or one whose thread cannot be started (the process's task limit), is
//! served on the runtime like a TCP connection.

use std::collections::HashMap;
use std::io::{ErrorKind, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::{serve_with, Incoming, Received};
use crate::commands::Peer;
use crate::state::{Daemon, Listening};

/// What one read takes from the socket at most.
const READ_BYTES: usize = 64 * 1024;

/// How far the socket's receive timeout may be from what is left until the
/// idle deadline before it is set again: between lines it is the whole
/// timeout at every read, so it is set once, not once per request; a
/// connection is closed at most this late.
const TIMEOUT_SLACK: Duration = Duration::from_millis(50);

/// How long a thread whose client left waits for the next client before
/// it ends: a client that connects per command (`rrdtool update
/// --daemon`) then finds a thread ready, its stack and its allocator's
/// arena already set up, instead of starting one (measured: starting a
/// thread per connection halved the commands per second of such a
/// client).
const IDLE_THREAD_KEEP: Duration = Duration::from_secs(10);

/// Threads kept waiting for a client, at most.
const IDLE_THREADS_MAX: usize = 32;

/// The connections being served on their own threads.
pub struct Threads {
    max: usize,
    next_id: AtomicU64,
    /// One lock for both, so that a thread leaves `live` and joins `idle`
    /// at once: a new client then finds it in one or the other.
    state: Mutex<State>,
}

struct State {
    /// Each live connection's socket (`None` while it is being set up),
    /// to shut at shutdown.
    live: HashMap<u64, Option<Arc<UnixStream>>>,
    /// Threads whose client left, waiting for the next one (newest last).
    idle: Vec<(u64, std::sync::mpsc::Sender<Work>)>,
}

impl Threads {
    /// At most `max` connections on their own threads at once.
    pub fn new(max: usize) -> Threads {
        Threads {
            max,
            next_id: AtomicU64::new(0),
            state: Mutex::new(State { live: HashMap::new(), idle: Vec::new() }),
        }
    }

    /// Serves `stream` on a thread of its own until it closes, holding
    /// `permit` (its place among `--max-connections`) until then. Hands
    /// both back when `--unix-threads` connections have threads already,
    /// or when no thread can be started; `None`: taken (or, when the
    /// socket could not be moved off the runtime, closed and logged).
    pub fn spawn(
        daemon: &Arc<Daemon>,
        stream: tokio::net::UnixStream,
        listening: Listening,
        idle: Option<Duration>,
        permit: OwnedSemaphorePermit,
    ) -> Option<(tokio::net::UnixStream, OwnedSemaphorePermit)> {
        let threads = &daemon.connection_threads;
        let Some(id) = threads.slot() else { return Some((stream, permit)) };
        let registered = Registered { daemon: daemon.clone(), id };
        let socket = match stream.into_std() {
            Ok(socket) => socket,
            Err(e) => {
                crate::log!(Err, "cannot move a connection off the shared threads ({e}); closing it");
                return None;
            }
        };
        if socket.set_nonblocking(false).is_err() {
            return back_to_runtime(socket, permit);
        }
        let socket = Arc::new(socket);
        threads.state().live.insert(id, Some(socket.clone()));
        let work = Work { registered, socket, listening, idle, permit };
        // A thread whose client left takes it, else a new one.
        let Err(work) = threads.hand_to_idle(work) else { return None };
        // The thread gets its work through a channel, so that a thread that
        // cannot be started leaves the work (and the permit) here.
        let (hand_over, work_in) = std::sync::mpsc::channel::<Work>();
        let runtime = tokio::runtime::Handle::current();
        let owner = daemon.clone();
        let spawned = std::thread::Builder::new().name("rrdscale-conn".into()).spawn(move || {
            if let Ok(work) = work_in.recv() {
                serve_clients(&owner, &runtime, work);
            }
        });
        match spawned {
            Ok(_) => {
                // The thread waits in recv: the send cannot fail.
                let _ = hand_over.send(work);
                None
            }
            Err(e) => {
                crate::log!(
                    Warning,
                    "cannot start a connection thread ({e}); serving it on the shared threads"
                );
                let Work { registered, socket, permit, .. } = work;
                drop(registered);
                let socket = Arc::into_inner(socket).expect("unregistered: the only holder");
                back_to_runtime(socket, permit)
            }
        }
    }

    /// Shuts the reading side of every connection served on its own
    /// thread: each read returns, and each session ends (its replies due
    /// are still written).
    pub fn shut_all(&self) {
        let mut state = self.state();
        for socket in state.live.values().flatten() {
            let _ = socket.shutdown(std::net::Shutdown::Read);
        }
        // Threads waiting for a client end.
        state.idle.clear();
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("connection threads lock")
    }

    /// An id for one more connection, unless `max` have threads.
    fn slot(&self) -> Option<u64> {
        let mut state = self.state();
        if state.live.len() >= self.max {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        state.live.insert(id, None);
        Some(id)
    }

    /// Gives `work` to a thread waiting for a client; `Err` when none waits.
    fn hand_to_idle(&self, mut work: Work) -> Result<(), Work> {
        loop {
            let Some((_, waiting)) = self.state().idle.pop() else {
                return Err(work);
            };
            match waiting.send(work) {
                Ok(()) => return Ok(()),
                // That thread ended meanwhile: the next one.
                Err(std::sync::mpsc::SendError(back)) => work = back,
            }
        }
    }

    /// Gives back the place of the client that left (`finished`) and
    /// waits (up to [`IDLE_THREAD_KEEP`]) for the next client; `None`: the
    /// thread is to end.
    fn next_client(&self, finished: Registered) -> Option<Work> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (offer, work_in) = std::sync::mpsc::channel();
        {
            let mut state = self.state();
            state.live.remove(&finished.id);
            if state.idle.len() >= IDLE_THREADS_MAX {
                return None;
            }
            state.idle.push((id, offer));
        }
        // Its place is free already: what its drop does again is nothing.
        drop(finished);
        match work_in.recv_timeout(IDLE_THREAD_KEEP) {
            Ok(work) => Some(work),
            Err(_) => {
                let mut state = self.state();
                match state.idle.iter().position(|(waiting, _)| *waiting == id) {
                    Some(i) => {
                        state.idle.swap_remove(i);
                        None
                    }
                    // Taken just as the wait ended (the client is on its way),
                    // or the list was cleared at shutdown (the offer is gone).
                    None => {
                        drop(state);
                        work_in.recv().ok()
                    }
                }
            }
        }
    }

    fn forget(&self, id: u64) {
        self.state().live.remove(&id);
    }
}

/// A connection's place in [`Threads`], given back when its thread ends
/// (also by unwinding).
struct Registered {
    daemon: Arc<Daemon>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.daemon.connection_threads.forget(self.id);
    }
}

/// What a connection's thread serves.
struct Work {
    registered: Registered,
    socket: Arc<UnixStream>,
    listening: Listening,
    idle: Option<Duration>,
    permit: OwnedSemaphorePermit,
}

thread_local! {
    /// Whether this thread is a connection's own.
    static OWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread serves one connection of its own (blocking
/// work may run in place: `commands::blocking`).
pub fn is_current() -> bool {
    OWN.with(std::cell::Cell::get)
}

/// A connection thread's life: its client, then the next ones handed to
/// it while it waits ([`Threads::next_client`]).
fn serve_clients(daemon: &Daemon, runtime: &tokio::runtime::Handle, mut work: Work) {
    OWN.with(|own| own.set(true));
    loop {
        let finished = work.run(runtime);
        match daemon.connection_threads.next_client(finished) {
            Some(next) => work = next,
            None => return,
        }
    }
}

impl Work {
    /// Serves the client until it leaves; its place is given back by the
    /// caller (or, when this unwinds, by the place's drop).
    fn run(self, runtime: &tokio::runtime::Handle) -> Registered {
        let Work { registered, socket, listening, idle, permit } = self;
        let peer = Peer::of(&*socket);
        let incoming = Reader { socket: socket.clone(), timeout: None };
        let daemon = registered.daemon.clone();
        runtime.block_on(serve_with(daemon, incoming, Writer(socket), listening, idle, peer));
        drop(permit);
        registered
    }
}

/// The socket made non-blocking again, for the runtime; `None` (closed)
/// when that fails.
fn back_to_runtime(
    socket: UnixStream,
    permit: OwnedSemaphorePermit,
) -> Option<(tokio::net::UnixStream, OwnedSemaphorePermit)> {
    let stream = socket.set_nonblocking(true).and_then(|()| tokio::net::UnixStream::from_std(socket));
    match stream {
        Ok(stream) => Some((stream, permit)),
        Err(e) => {
            crate::log!(Err, "cannot return a connection to the shared threads ({e}); closing it");
            None
        }
    }
}

/// Blocking reads straight into the session's buffer, with the idle
/// deadline as the socket's receive timeout.
struct Reader {
    socket: Arc<UnixStream>,
    /// The receive timeout set on the socket now.
    timeout: Option<Duration>,
}

impl Incoming for Reader {
    const OWN_THREAD: bool = true;
    async fn receive(&mut self, buf: &mut Vec<u8>, deadline: Option<Instant>) -> Received {
        loop {
            let timeout = match deadline {
                None => None,
                Some(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) if left >= Duration::from_millis(1) => Some(left),
                    _ => return Received::Idle,
                },
            };
            let close_enough = match (timeout, self.timeout) {
                (Some(left), Some(set)) => left.abs_diff(set) <= TIMEOUT_SLACK,
                (left, set) => left == set,
            };
            if !close_enough {
                if self.socket.set_read_timeout(timeout).is_err() {
                    return Received::Closed;
                }
                self.timeout = timeout;
            }
            match rrd_sys::net::read_appending(self.socket.as_fd(), buf, READ_BYTES) {
                Ok(0) => return Received::Closed,
                Ok(_) => return Received::Bytes,
                // Woken early, or the timeout: the deadline decides.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Interrupted | ErrorKind::WouldBlock | ErrorKind::TimedOut
                    ) => {}
                Err(_) => return Received::Closed,
            }
        }
    }
}

/// Blocking writes: every poll completes (this thread serves no one else).
struct Writer(Arc<UnixStream>);

impl AsyncWrite for Writer {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        loop {
            match (&*self.0).write(buf) {
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                done => return Poll::Ready(done),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(self.0.shutdown(std::net::Shutdown::Write))
    }
}
