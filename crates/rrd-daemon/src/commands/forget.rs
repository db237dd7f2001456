//! `FORGET <file>`: drop the file's entry and its pending values. The drop
//! is journaled (a record with no values) so that a replay drops them too.

use std::sync::Arc;

use rrd_protocol::{Command, Reply};

use super::{access_denied, syntax_error, Args, Outcome};
use crate::state::{Daemon, Listening};

pub async fn run(daemon: &Arc<Daemon>, l: Listening, mut args: Args) -> Outcome {
    let Some(file) = args.next() else { return syntax_error(Command::Forget).into() };
    let key = match daemon.paths_of(&l).resolve(&file) {
        Ok(k) => k,
        Err(d) => return access_denied(&d.shown).into(),
    };
    let cache = &daemon.cache;
    let (number, mut shard) = cache.shard_numbered(&key);
    if !cache.forget_entry(&mut shard, &key) {
        return Reply::error("No such file or directory").into();
    }
    let ticket = daemon.journal.submit_update(number, &key, std::iter::empty());
    drop(shard);
    Outcome::AfterCommit(ticket, Reply::ok_line("Gone!"))
}
