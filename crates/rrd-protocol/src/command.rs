//! The command table of rrdcached 1.7.2, in its order, with the two
//! commands rrdcached added later where 1.9 has them (TUNE from 1.8, DUMP
//! from 1.9, after WROTE): names, the contexts each command may be used
//! in, its usage line and help text, and the permission bit `-P` grants
//! for it.
//!
//! The order matters twice: `HELP` lists the commands in it, and a
//! permission set is a bit mask indexed by position (as rrdcached keeps it).
//! The texts are the replies rrdcached gives to `HELP <command>`.
//!
//! Deliberately absent: what a command does.

/// Where a command may appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// A normal client line.
    Client,
    /// A line between `BATCH` and `.`.
    Batch,
    /// A journal record being replayed.
    Journal,
}

impl Context {
    const fn bit(self) -> u8 {
        match self {
            Context::Client => 1,
            Context::Batch => 2,
            Context::Journal => 4,
        }
    }
}

const CLIENT: u8 = 1;
const BATCH: u8 = 2;
const JOURNAL: u8 = 4;
const ANY: u8 = 0x7f;

/// Every command rrdcached 1.7.2 knows, and 1.9's TUNE and DUMP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    Update,
    Wrote,
    Tune,
    Dump,
    Flush,
    FlushAll,
    Pending,
    Forget,
    Queue,
    Stats,
    Help,
    Ping,
    Batch,
    BatchEnd,
    Fetch,
    FetchBin,
    Info,
    First,
    Last,
    Create,
    List,
    Suspend,
    Resume,
    SuspendAll,
    ResumeAll,
    Quit,
}

struct Spec {
    command: Command,
    name: &'static str,
    contexts: u8,
    syntax: Option<&'static str>,
    help: Option<&'static str>,
}

const TABLE: &[Spec] = &[
    Spec {
        command: Command::Update,
        name: "UPDATE",
        contexts: ANY,
        syntax: Some("UPDATE <filename> <values> [<values> ...]\n"),
        help: Some(
            "Adds the given file to the internal cache if it is not yet known and\n\
             appends the given value(s) to the entry. See the rrdcached(1) manpage\n\
             for details.\n\
             \n\
             Each <values> has the following form:\n  \
             <values> = <time>:<value>[:<value>[...]]\n\
             See the rrdupdate(1) manpage for details.\n",
        ),
    },
    Spec { command: Command::Wrote, name: "WROTE", contexts: JOURNAL, syntax: None, help: None },
    Spec {
        command: Command::Tune,
        name: "TUNE",
        contexts: CLIENT,
        syntax: Some("TUNE <filename> [options]\n"),
        help: Some("Tunes the given file, takes the parameters as defined in rrdtool.\n"),
    },
    Spec {
        command: Command::Dump,
        name: "DUMP",
        contexts: CLIENT,
        syntax: Some("DUMP <filename> [-h none|xsd|dtd]\n"),
        help: Some("Dumps the specified RRD to XML.\n"),
    },
    Spec {
        command: Command::Flush,
        name: "FLUSH",
        contexts: CLIENT | BATCH,
        syntax: Some("FLUSH <filename>\n"),
        help: Some(
            "Adds the given filename to the head of the update queue and returns\n\
             after it has been dequeued.\n",
        ),
    },
    Spec {
        command: Command::FlushAll,
        name: "FLUSHALL",
        contexts: CLIENT,
        syntax: Some("FLUSHALL\n"),
        help: Some("Triggers writing of all pending updates.  Returns immediately.\n"),
    },
    Spec {
        command: Command::Pending,
        name: "PENDING",
        contexts: CLIENT,
        syntax: Some("PENDING <filename>\n"),
        help: Some(
            "Shows any 'pending' updates for a file, in order.\n\
             The updates shown have not yet been written to the underlying RRD file.\n",
        ),
    },
    Spec {
        command: Command::Forget,
        name: "FORGET",
        contexts: ANY,
        syntax: Some("FORGET <filename>\n"),
        help: Some(
            "Removes the file completely from the cache.\n\
             Any pending updates for the file will be lost.\n",
        ),
    },
    Spec {
        command: Command::Queue,
        name: "QUEUE",
        contexts: CLIENT,
        syntax: Some("QUEUE\n"),
        help: Some(
            "Shows all files in the output queue.\n\
             The output is zero or more lines in the following format:\n\
             (where <num_vals> is the number of values to be written)\n\
             \n\
             <num_vals> <filename>\n",
        ),
    },
    Spec {
        command: Command::Stats,
        name: "STATS",
        contexts: CLIENT,
        syntax: Some("STATS\n"),
        help: Some(
            "Returns some performance counters, see the rrdcached(1) manpage for\n\
             a description of the values.\n",
        ),
    },
    Spec {
        command: Command::Help,
        name: "HELP",
        contexts: CLIENT,
        syntax: Some("HELP [<command>]\n"),
        help: None,
    },
    Spec {
        command: Command::Ping,
        name: "PING",
        contexts: CLIENT,
        syntax: Some("PING\n"),
        help: Some("PING given, PONG returned\n"),
    },
    Spec {
        command: Command::Batch,
        name: "BATCH",
        contexts: CLIENT,
        syntax: Some("BATCH\n"),
        help: Some(
            "The 'BATCH' command permits the client to initiate a bulk load\n   \
             of commands to rrdcached.\n\
             \n\
             Usage:\n\
             \n    \
             client: BATCH\n    \
             server: 0 Go ahead.  End with dot '.' on its own line.\n    \
             client: command #1\n    \
             client: command #2\n    \
             client: ... and so on\n    \
             client: .\n    \
             server: 2 errors\n    \
             server: 7 message for command #7\n    \
             server: 9 message for command #9\n\
             \n\
             For more information, consult the rrdcached(1) documentation.\n",
        ),
    },
    Spec { command: Command::BatchEnd, name: ".", contexts: BATCH, syntax: None, help: None },
    Spec {
        command: Command::Fetch,
        name: "FETCH",
        contexts: CLIENT,
        syntax: Some("FETCH <file> <CF> [<start> [<end>] [<column>...]]\n"),
        help: Some("The 'FETCH' can be used by the client to retrieve values from an RRD file.\n"),
    },
    Spec {
        command: Command::FetchBin,
        name: "FETCHBIN",
        contexts: CLIENT,
        syntax: Some("FETCHBIN <file> <CF> [<start> [<end>] [<column>...]]\n"),
        help: Some("The 'FETCHBIN' can be used by the client to retrieve values from an RRD file.\n"),
    },
    Spec {
        command: Command::Info,
        name: "INFO",
        contexts: CLIENT,
        syntax: Some("INFO <filename>\n"),
        help: Some(
            "The INFO command retrieves information about a specified RRD file.\n\
             This is returned in standard rrdinfo format, a sequence of lines\n\
             with the format <keyname> = <value>\n\
             Note that this is the data as of the last update of the RRD file itself,\n\
             not the last time data was received via rrdcached, so there may be pending\n\
             updates in the queue.  If this bothers you, then first run a FLUSH.\n",
        ),
    },
    Spec {
        command: Command::First,
        name: "FIRST",
        contexts: CLIENT,
        syntax: Some("FIRST <filename> <rra index>\n"),
        help: Some(
            "The FIRST command retrieves the first data time for a specified RRA in\n\
             an RRD file.\n",
        ),
    },
    Spec {
        command: Command::Last,
        name: "LAST",
        contexts: CLIENT,
        syntax: Some("LAST <filename>\n"),
        help: Some(
            "The LAST command retrieves the last update time for a specified RRD file.\n\
             Note that this is the time of the last update of the RRD file itself, not\n\
             the last time data was received via rrdcached, so there may be pending\n\
             updates in the queue.  If this bothers you, then first run a FLUSH.\n",
        ),
    },
    Spec {
        command: Command::Create,
        name: "CREATE",
        contexts: CLIENT | BATCH,
        syntax: Some("CREATE <filename> [-b start] [-s step] [-O] <DS definitions> <RRA definitions>\n"),
        help: Some(
            "The CREATE command will create an RRD file, overwriting any existing file\n\
             unless the -O option is given or rrdcached was started with the -O option.\n\
             The start parameter needs to be in seconds since 1/1/70 (AT-style syntax is\n\
             not acceptable) and the step is in seconds (default is 300).\n\
             The DS and RRA definitions are as for the 'rrdtool create' command.\n",
        ),
    },
    Spec {
        command: Command::List,
        name: "LIST",
        contexts: CLIENT,
        syntax: Some("LIST [RECURSIVE] /[<path>]\n"),
        help: Some(
            "This command lists the RRD files in the storage base directory (/).\n\
             Note that this is the list of RRD files on storage as of the last update.\n\
             There may be pending updates in the queue, so a FLUSH may have to be run\n\
             beforehand.\n\
             When invoked with 'LIST RECURSIVE /<path>' it will behave similarly to\n\
             'ls -R' but limited to rrd files (listing all the rrd bases in the subtree\n \
             of <path>, skipping empty directories).\n",
        ),
    },
    Spec {
        command: Command::Suspend,
        name: "SUSPEND",
        contexts: CLIENT | BATCH,
        syntax: Some("SUSPEND <filename>\n"),
        help: Some(
            "The SUSPEND command will suspend writing to an RRD file. While a file is\n\
             suspended, all metrics for it are cached in memory until RESUME is called\n\
             for that file or RESUMEALL is called.\n",
        ),
    },
    Spec {
        command: Command::Resume,
        name: "RESUME",
        contexts: CLIENT | BATCH,
        syntax: Some("RESUME <filename>\n"),
        help: Some(
            "The RESUME command will resume writing to an RRD file previously suspended\n\
             by SUSPEND or SUSPENDALL.\n",
        ),
    },
    Spec {
        command: Command::SuspendAll,
        name: "SUSPENDALL",
        contexts: CLIENT | BATCH,
        syntax: Some("SUSPENDALL\n"),
        help: Some(
            "The SUSPENDALL command will suspend writing to all RRD files. While a file\n\
             is suspended, all metrics for it are cached in memory until RESUME is called\n\
             for that file or RESUMEALL is called.\n",
        ),
    },
    Spec {
        command: Command::ResumeAll,
        name: "RESUMEALL",
        contexts: CLIENT | BATCH,
        syntax: Some("RESUMEALL\n"),
        help: Some("The RESUMEALL command will resume writing to all RRD files previously suspended.\n"),
    },
    Spec {
        command: Command::Quit,
        name: "QUIT",
        contexts: CLIENT | BATCH,
        syntax: Some("QUIT\n"),
        help: Some("Disconnect from rrdcached.\n"),
    },
];

impl Command {
    /// All commands, in rrdcached's table order.
    pub fn all() -> impl Iterator<Item = Command> {
        TABLE.iter().map(|s| s.command)
    }

    fn spec(self) -> &'static Spec {
        TABLE.iter().find(|s| s.command == self).expect("every command is in the table")
    }

    /// Position in the table: the permission bit.
    pub fn index(self) -> usize {
        TABLE.iter().position(|s| s.command == self).expect("every command is in the table")
    }

    /// Looks a command name up, ignoring ASCII case (as `strcasecmp`).
    pub fn find(name: &[u8]) -> Option<Command> {
        TABLE.iter().find(|s| s.name.as_bytes().eq_ignore_ascii_case(name)).map(|s| s.command)
    }

    /// The canonical (upper case) name.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Whether the command may be used in `context`.
    pub fn allowed_in(self, context: Context) -> bool {
        self.spec().contexts & context.bit() != 0
    }

    /// The usage line, ending in a newline (`None` for internal commands).
    pub fn syntax(self) -> Option<&'static str> {
        self.spec().syntax
    }

    /// The help paragraph, ending in a newline.
    pub fn help(self) -> Option<&'static str> {
        self.spec().help
    }
}

/// The commands one listening socket accepts (`-P`), as a bit mask over the
/// table. `HELP` and `QUIT` are always allowed; `.` is allowed with `BATCH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permissions(u32);

impl Permissions {
    pub const fn none() -> Permissions {
        Permissions(0)
    }

    pub fn all() -> Permissions {
        Permissions((1u32 << TABLE.len()) - 1)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn add(&mut self, command: Command) {
        self.0 |= 1 << command.index();
    }

    /// Parses `-P`'s argument: names separated by commas or spaces. The
    /// error names the first unknown command.
    pub fn parse(list: &str) -> Result<Permissions, String> {
        let mut p = Permissions::none();
        for name in list.split([',', ' ']).filter(|n| !n.is_empty()) {
            let command = Command::find(name.as_bytes()).ok_or_else(|| name.to_string())?;
            p.add(command);
        }
        Ok(p)
    }

    pub fn allows(self, command: Command) -> bool {
        let command = match command {
            Command::Help | Command::Quit => return true,
            Command::BatchEnd => Command::Batch,
            c => c,
        };
        self.0 & (1 << command.index()) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_ignores_case_and_keeps_table_order() {
        assert_eq!(Command::find(b"update"), Some(Command::Update));
        assert_eq!(Command::find(b"."), Some(Command::BatchEnd));
        assert_eq!(Command::find(b"tune"), Some(Command::Tune));
        assert_eq!(Command::find(b"TUNED"), None);
        assert_eq!(Command::find(b""), None);
        assert_eq!(Command::Update.index(), 0);
        assert_eq!(Command::Quit.index(), TABLE.len() - 1);
        let shown = Command::all().filter(|c| c.syntax().is_some()).count();
        assert_eq!(shown, 24, "HELP lists 24 commands, as rrdcached 1.9");
        let order: Vec<&str> = Command::all().take(5).map(Command::name).collect();
        assert_eq!(order, ["UPDATE", "WROTE", "TUNE", "DUMP", "FLUSH"], "1.9's order");
    }

    #[test]
    fn permissions_follow_rrdcached_exceptions() {
        let p = Permissions::parse("FLUSH,PENDING").unwrap();
        assert!(p.allows(Command::Flush) && p.allows(Command::Pending));
        assert!(!p.allows(Command::Update));
        assert!(p.allows(Command::Help) && p.allows(Command::Quit));
        assert!(!p.allows(Command::BatchEnd));
        let b = Permissions::parse("batch").unwrap();
        assert!(b.allows(Command::BatchEnd));
        assert_eq!(Permissions::parse("FLUSH,NOPE"), Err("NOPE".to_string()));
        assert!(Permissions::all().allows(Command::ResumeAll));
    }

    #[test]
    fn contexts_match_rrdcached() {
        assert!(Command::Update.allowed_in(Context::Batch));
        assert!(Command::Flush.allowed_in(Context::Batch));
        assert!(!Command::Ping.allowed_in(Context::Batch));
        assert!(!Command::BatchEnd.allowed_in(Context::Client));
        assert!(!Command::Wrote.allowed_in(Context::Client));
        assert!(Command::Tune.allowed_in(Context::Client) && !Command::Tune.allowed_in(Context::Batch));
        assert!(Command::Dump.allowed_in(Context::Client) && !Command::Dump.allowed_in(Context::Batch));
    }
}
