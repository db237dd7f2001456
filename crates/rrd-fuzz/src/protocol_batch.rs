//! Fuzzes a whole rrdcached conversation through the daemon's own
//! connection loop (`rrd_daemon::connection::serve`): the input is every
//! byte a client sends (lines, BATCH … `.`, over-long lines, `\r\n`,
//! QUIT in the middle), fed over an in-memory stream to a daemon with no
//! journal, no flusher and an empty base directory.
//!
//! Without I/O: the base directory holds no file, so UPDATE, FETCH, INFO,
//! FIRST, LAST … answer "No such file" after one failed open; CREATE is
//! refused by the socket's permissions (it is the one command that would
//! write), so every run starts from the same empty state. What runs is the
//! real path: line splitting, the UPDATE fast path, field parsing, command
//! lookup, permission and context checks, BATCH bookkeeping and replies.
//!
//! Must hold: no panic and no hang; the bytes sent back are a sequence of
//! whole replies (`<n> <message>\n` then `n` lines when `n > 0`), so a
//! client never loses its place; there are at most as many replies as
//! lines sent (plus the one for an over-long line).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rrd_daemon::config::Config;
use rrd_daemon::journaler::Journaler;
use rrd_daemon::state::Daemon;
use rrd_protocol::{Command, Permissions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct World {
    runtime: tokio::runtime::Runtime,
    /// The empty base directory (removed with the process's temp dir).
    base: PathBuf,
    _dir: tempfile::TempDir,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let base = dir.path().join("base");
        std::fs::create_dir(&base).expect("the base directory");
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
        World { runtime, base, _dir: dir }
    })
}

/// Splits a daemon's output into replies; `Err` says where it stops
/// making sense.
pub fn split_replies(mut out: &[u8]) -> Result<usize, String> {
    let mut n = 0;
    while !out.is_empty() {
        let end = out.iter().position(|&b| b == b'\n').ok_or("a status line without its newline")?;
        let line = std::str::from_utf8(&out[..end]).map_err(|_| "a status line that is not UTF-8")?;
        let (status, _message) =
            line.split_once(' ').ok_or(format!("no space in the status line {line:?}"))?;
        let status: i64 = status.parse().map_err(|_| format!("no status number in {line:?}"))?;
        out = &out[end + 1..];
        for _ in 0..status.max(0) {
            let end = out
                .iter()
                .position(|&b| b == b'\n')
                .ok_or(format!("{line:?} announces more lines than follow"))?;
            out = &out[end + 1..];
        }
        n += 1;
    }
    Ok(n)
}

/// The target: one conversation.
pub fn run(data: &[u8]) {
    let w = world();
    // Budgets given, so that no run reads the memory limit again.
    let config = Config {
        base_dir: Some(w.base.clone()),
        base_only: true,
        max_pending_bytes: 64 << 20,
        max_kept_bytes: 16 << 20,
        ..Config::default()
    };
    let daemon = Arc::new(Daemon::new(config, Journaler::disabled()));
    let mut permissions = Permissions::none();
    for c in Command::all().filter(|c| *c != Command::Create) {
        permissions.add(c);
    }
    let out = w.runtime.block_on(async {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let serving = rrd_daemon::connection::serve(daemon, server, permissions, None);
        let talking = async move {
            let (mut rd, mut wr) = tokio::io::split(&mut client);
            let send = async {
                // A closed connection (QUIT) may refuse the rest.
                let _ = wr.write_all(data).await;
                let _ = wr.shutdown().await;
            };
            let mut out = Vec::new();
            let recv = rd.read_to_end(&mut out);
            let (_, r) = tokio::join!(send, recv);
            r.expect("reading the replies");
            out
        };
        let ((), out) = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            tokio::join!(serving, talking)
        })
        .await
        .expect("the conversation ends");
        out
    });
    let replies = split_replies(&out)
        .unwrap_or_else(|e| panic!("the replies do not parse ({e}): {:?}", String::from_utf8_lossy(&out)));
    let lines = data.iter().filter(|&&b| b == b'\n').count();
    assert!(replies <= lines + 1, "{replies} replies to {lines} lines");
    assert!(std::fs::read_dir(&w.base).expect("the base directory").next().is_none(), "a file appeared");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_split_and_a_conversation_is_answered() {
        assert_eq!(split_replies(b"0 PONG\n2 Stats\nA\nB\n-1 no\n"), Ok(3));
        assert!(split_replies(b"2 Stats\nA\n").is_err());
        assert!(split_replies(b"0 PONG").is_err());
        run(b"PING\nBATCH\nUPDATE x.rrd N:1\nbogus\n.\nQUIT\n");
    }
}
