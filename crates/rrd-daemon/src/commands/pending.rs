//! `PENDING <file>`: the values not yet written, in order. rrdcached 1.7.2
//! answers `0 updates pending` for a file it does not know (even a missing
//! one), and so do we.

use rrd_protocol::{Command, Reply};

use super::{syntax_error, Args};
use crate::state::{Daemon, Listening};

pub fn run(daemon: &Daemon, l: Listening, mut args: Args) -> Reply {
    let Some(file) = args.next() else { return syntax_error(Command::Pending) };
    // rrdcached does not apply -B to PENDING; a refused name cannot have an
    // entry anyway.
    let Ok(key) = daemon.paths_of(&l).resolve(&file) else { return Reply::ok_line("updates pending") };
    let mut body = Vec::new();
    if let Some(e) = daemon.cache.shard(&key).get(key.as_str()) {
        for v in e.unwritten() {
            body.extend_from_slice(v.as_bytes());
            body.push(b'\n');
        }
    }
    Reply::ok("updates pending", body)
}
