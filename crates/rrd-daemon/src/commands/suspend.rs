//! `SUSPEND`/`RESUME <file>`, `SUSPENDALL`/`RESUMEALL`: stop and restart
//! writing files; values keep accumulating (and journaling) meanwhile.
//!
//! rrdcached 1.7.2's replies, kept: a file it has no entry for is an error
//! after which it closes the connection, and so is a missing argument.

use rrd_protocol::{Command, Reply};

use super::{access_denied, syntax_error, Args, Outcome};
use crate::state::{Daemon, Listening};

fn set(daemon: &Daemon, l: Listening, mut args: Args, command: Command, suspend: bool) -> Outcome {
    let Some(file) = args.next() else { return Outcome::ReplyThenClose(syntax_error(command)) };
    let key = match daemon.paths_of(&l).resolve(&file) {
        Ok(k) => k,
        Err(d) => return access_denied(&d.shown).into(),
    };
    let cache = &daemon.cache;
    let mut shard = cache.shard(&key);
    let Some(e) = shard.get_mut(key.as_str()) else {
        return Outcome::ReplyThenClose(Reply::error(format!("{key} - No such file or directory")));
    };
    let was = if suspend { e.suspend() } else { e.resume(cache, &key) };
    let text = match (suspend, was) {
        (true, true) => "already suspended",
        (true, false) => "suspended",
        (false, false) => "not suspended",
        (false, true) => "resumed",
    };
    Reply::ok_line(format!("{key} {text}")).into()
}

pub fn suspend(daemon: &Daemon, l: Listening, args: Args) -> Outcome {
    set(daemon, l, args, Command::Suspend, true)
}

pub fn resume(daemon: &Daemon, l: Listening, args: Args) -> Outcome {
    set(daemon, l, args, Command::Resume, false)
}

fn set_all(daemon: &Daemon, suspend: bool) -> u64 {
    let cache = &daemon.cache;
    let mut changed = 0;
    cache.for_each(|k, e| {
        let was = if suspend { e.suspend() } else { e.resume(cache, k) };
        if was != suspend {
            changed += 1;
        }
    });
    changed
}

pub fn suspend_all(daemon: &Daemon) -> Reply {
    Reply::ok_line(format!("{} rrds suspend", set_all(daemon, true)))
}

pub fn resume_all(daemon: &Daemon) -> Reply {
    Reply::ok_line(format!("{} rrds resumed", set_all(daemon, false)))
}
