//! The checks a command line passes before it runs, in rrdcached's order:
//! a known command name (any case), the listening socket's permission
//! (`-P`), the context (outside or inside a BATCH), then every argument
//! field UTF-8 and not ending in a lone backslash.
//!
//! One definition for every place that runs command lines: the daemon's
//! connections (the UPDATE fast path asks [`admits`], the general path
//! [`command`] and [`arguments`]) and the cluster's front end, so that a
//! line refused by one is refused by all, with the same text.

use crate::{Command, Context, Fields, Permissions, Reply};

/// The command `name` names, if this socket may run it here; else the
/// reply rrdcached gives.
pub fn command(name: &[u8], permissions: Permissions, context: Context) -> Result<Command, Reply> {
    let Some(command) = Command::find(name) else {
        return Err(Reply::error(format!("Unknown command: {}", String::from_utf8_lossy(name))));
    };
    if !permissions.allows(command) {
        return Err(Reply::error("Permission denied."));
    }
    if !command.allowed_in(context) {
        return Err(Reply::error(format!("Can't use '{}' here.", String::from_utf8_lossy(name))));
    }
    Ok(command)
}

/// Both checks for a line whose first field was `name` and whose other
/// fields are `fields`: the command and its arguments, or the refusal.
pub fn line(
    name: &[u8],
    fields: Fields<'_>,
    permissions: Permissions,
    context: Context,
) -> Result<(Command, Vec<String>), Reply> {
    let command = command(name, permissions, context)?;
    Ok((command, arguments(command, fields)?))
}

/// Whether `command` passes [`command`]'s checks on this socket here.
pub fn admits(command: Command, permissions: Permissions, context: Context) -> bool {
    permissions.allows(command) && command.allowed_in(context)
}

/// The argument fields after the command name, as text; the usage error
/// when one is not UTF-8 or the line ends in a lone backslash.
pub fn arguments(command: Command, fields: Fields<'_>) -> Result<Vec<String>, Reply> {
    fields
        .map(|f| f.ok().and_then(|b| String::from_utf8(b).ok()))
        .collect::<Option<Vec<String>>>()
        .ok_or_else(|| {
            Reply::error(format!(
                "Usage: {} (fields must be UTF-8 and not end in a lone backslash)",
                command.syntax().unwrap_or("").trim_end()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(name: &[u8], permissions: Permissions, context: Context) -> String {
        command(name, permissions, context).unwrap_err().message
    }

    #[test]
    fn names_permissions_and_contexts_are_checked_in_order() {
        assert_eq!(command(b"uPdAtE", Permissions::all(), Context::Client).unwrap(), Command::Update);
        assert_eq!(refusal(b"TUNA", Permissions::none(), Context::Batch), "Unknown command: TUNA");
        let only_stats = Permissions::parse("STATS").unwrap();
        assert_eq!(refusal(b"update", only_stats, Context::Batch), "Permission denied.");
        assert_eq!(refusal(b"ping", Permissions::all(), Context::Batch), "Can't use 'ping' here.");
        // HELP and QUIT need no permission.
        assert_eq!(command(b"QUIT", Permissions::none(), Context::Client).unwrap(), Command::Quit);
        assert!(admits(Command::Update, Permissions::all(), Context::Batch));
        assert!(!admits(Command::Update, only_stats, Context::Client));
        assert!(!admits(Command::Ping, Permissions::all(), Context::Batch));
    }

    #[test]
    fn a_line_is_refused_for_its_name_before_its_arguments() {
        let line =
            |name: &[u8], rest: &[u8]| line(name, Fields::new(rest), Permissions::all(), Context::Client);
        assert_eq!(
            line(b"update", b"f.rrd 1:2").unwrap(),
            (Command::Update, vec!["f.rrd".into(), "1:2".into()])
        );
        assert_eq!(line(b"nope", b"\xff").unwrap_err().message, "Unknown command: nope");
        assert!(line(b"update", b"\xff").unwrap_err().message.starts_with("Usage: UPDATE"));
    }

    #[test]
    fn arguments_must_be_utf8_and_not_end_in_a_lone_backslash() {
        let args = |line: &[u8]| arguments(Command::Update, Fields::new(line));
        assert_eq!(args(b"f.rrd 1:2 3:4").unwrap(), ["f.rrd", "1:2", "3:4"]);
        assert_eq!(args(b"a\\ b.rrd").unwrap(), ["a b.rrd"]);
        for bad in [&b"f.rrd \xff:1"[..], b"f.rrd 1:2\\"] {
            let e = args(bad).unwrap_err().message;
            assert!(e.starts_with("Usage: UPDATE") && e.ends_with("lone backslash)"), "{e}");
        }
    }
}
