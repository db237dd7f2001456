//! `QUEUE`: files waiting for a flush worker, `<values> <file>` per line.

use rrd_protocol::Reply;

use crate::state::Daemon;

pub fn run(daemon: &Daemon) -> Reply {
    let mut body = Vec::new();
    for key in daemon.cache.queued() {
        let n = daemon.cache.shard(&key).get(&key).map_or(0, |e| e.pending_len());
        body.extend_from_slice(format!("{n} {key}\n").as_bytes());
    }
    Reply::ok("in queue.", body)
}
