//! `HELP [command]`: rrdcached's usage overview or one command's help.

use rrd_protocol::{Command, Reply};

use super::Args;

pub fn run(mut args: Args) -> Reply {
    let wanted = args.next().and_then(|name| Command::find(name.as_bytes()));
    if let Some(c) = wanted.filter(|c| c.syntax().is_some() || c.help().is_some()) {
        let mut body = String::new();
        if let Some(s) = c.syntax() {
            body.push_str(&format!("Usage: {s}\n"));
        }
        if let Some(h) = c.help() {
            body.push_str(&format!("{h}\n"));
        }
        return Reply::ok(format!("Help for {}", c.name()), body.into_bytes());
    }
    let body: String = Command::all().filter_map(Command::syntax).collect();
    Reply::ok("Command overview", body.into_bytes())
}
