//! The daemon's log, as rrdcached keeps it: every line has a syslog
//! priority, `-V LEVEL` keeps the lines at that priority or more urgent
//! (default `LOG_ERR`, rrdcached's "don't pollute syslog"), and a line goes
//! to one place:
//!
//! - `-o FILE`: appended to FILE as rrdcached writes it
//!   (`2024-05-01 12:00:00 [3] message`, UTC, the number the priority);
//!   [`reopen`] (SIGHUP) opens FILE anew, so logrotate can move it away;
//! - otherwise in the foreground (`-g`): standard error, each line
//!   `<N>message` when standard error is systemd's journal stream
//!   (`JOURNAL_STREAM` names its device and inode, sd-daemon(3)'s priority
//!   prefixes, so journald records the priority), else
//!   `2024-05-01T12:00:00.123Z ERROR message`;
//! - otherwise syslog (facility `LOG_DAEMON`, identity `rrdcached`, as
//!   rrdcached), with the line's priority.
//!
//! Before [`init`] (and in a process that never calls it: the cluster mode,
//! which uses this crate as a library with its own `tracing` subscriber),
//! lines go to `tracing` at the nearest level.
//!
//! Deliberately different from rrdcached: in the foreground rrdcached
//! writes every line to standard error AND to syslog or `-o`; we write it
//! once (under systemd both copies would reach the journal).

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// A syslog priority (`syslog.h`'s levels), most urgent first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    Emerg = 0,
    Alert = 1,
    Crit = 2,
    Err = 3,
    Warning = 4,
    Notice = 5,
    Info = 6,
    Debug = 7,
}

const ALL: [Priority; 8] = [
    Priority::Emerg,
    Priority::Alert,
    Priority::Crit,
    Priority::Err,
    Priority::Warning,
    Priority::Notice,
    Priority::Info,
    Priority::Debug,
];

impl Priority {
    /// `-V`'s names (`LOG_EMERG` .. `LOG_DEBUG`), exactly as rrdcached
    /// compares them (case matters).
    pub fn from_name(name: &str) -> Option<Priority> {
        ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Priority::Emerg => "LOG_EMERG",
            Priority::Alert => "LOG_ALERT",
            Priority::Crit => "LOG_CRIT",
            Priority::Err => "LOG_ERR",
            Priority::Warning => "LOG_WARNING",
            Priority::Notice => "LOG_NOTICE",
            Priority::Info => "LOG_INFO",
            Priority::Debug => "LOG_DEBUG",
        }
    }

    /// The word a terminal line shows.
    fn word(self) -> &'static str {
        match self {
            Priority::Emerg => "EMERG",
            Priority::Alert => "ALERT",
            Priority::Crit => "CRIT",
            Priority::Err => "ERROR",
            Priority::Warning => "WARNING",
            Priority::Notice => "NOTICE",
            Priority::Info => "INFO",
            Priority::Debug => "DEBUG",
        }
    }

    pub fn number(self) -> u8 {
        self as u8
    }
}

/// Where lines go ([`init`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sink {
    Syslog,
    File(PathBuf),
    /// Standard error; `journal`: with sd-daemon priority prefixes.
    Stderr {
        journal: bool,
    },
}

enum Out {
    Syslog,
    File { path: PathBuf, file: Mutex<std::fs::File> },
    Stderr { journal: bool },
}

struct Logger {
    max: Priority,
    out: Out,
}

static LOGGER: OnceLock<Logger> = OnceLock::new();

fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().create(true).append(true).open(path)
}

/// Starts the log: lines at `max` or more urgent go to `sink`. The first
/// call wins (a test process that runs several daemons keeps the first
/// log); a file that cannot be opened is an error.
pub fn init(max: Priority, sink: Sink) -> std::io::Result<()> {
    let out = match sink {
        Sink::Syslog => {
            rrd_sys::process::openlog();
            Out::Syslog
        }
        Sink::File(path) => {
            let file = Mutex::new(open_append(&path)?);
            Out::File { path, file }
        }
        Sink::Stderr { journal } => Out::Stderr { journal },
    };
    let _ = LOGGER.set(Logger { max, out });
    Ok(())
}

/// Whether a line at `p` is kept (cheap: call before formatting).
pub fn enabled(p: Priority) -> bool {
    match LOGGER.get() {
        Some(l) => p <= l.max,
        None => true,
    }
}

/// Opens the `-o` file anew (after logrotate moved it): lines written
/// before go to the old file, lines after to the new one. `Ok(false)` when
/// the log is not a file.
pub fn reopen() -> std::io::Result<bool> {
    let Some(Logger { out: Out::File { path, file }, .. }) = LOGGER.get() else { return Ok(false) };
    let new = open_append(path)?;
    *file.lock().unwrap_or_else(|e| e.into_inner()) = new;
    Ok(true)
}

/// Whether `JOURNAL_STREAM` (`DEVICE:INODE`, decimal) names the file
/// `dev`/`ino`, standard error's: only then does standard error go to
/// journald, and only then are priority prefixes wanted (sd-daemon(3)).
pub fn journal_stream_is(value: &str, dev: u64, ino: u64) -> bool {
    let Some((d, i)) = value.split_once(':') else { return false };
    d.parse::<u64>().ok() == Some(dev) && i.parse::<u64>().ok() == Some(ino)
}

/// Whether this process's standard error is the journal stream that the
/// `JOURNAL_STREAM` environment variable names.
pub fn stderr_is_journal() -> bool {
    use std::os::fd::AsFd;
    let Ok(value) = std::env::var("JOURNAL_STREAM") else { return false };
    match rustix::fs::fstat(std::io::stderr().as_fd()) {
        Ok(st) => journal_stream_is(&value, st.st_dev, st.st_ino),
        Err(_) => false,
    }
}

/// `YYYY-MM-DD HH:MM:SS` (rrdcached's `-o` stamp) or, `iso`,
/// `YYYY-MM-DDTHH:MM:SS.mmmZ`; UTC.
fn stamp(iso: bool) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let Some(tm) = rrd_sys::ctime::gmtime(now.as_secs() as i64) else { return String::new() };
    let (y, mo, d, h, mi, s) =
        (tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if iso {
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z", now.subsec_millis())
    } else {
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
    }
}

/// The text written for one message (each of its lines) in `sink`'s form.
fn render(p: Priority, message: &str, out: &Out) -> String {
    let mut text = String::with_capacity(message.len() + 32);
    let lines = message.lines().filter(|l| !l.is_empty());
    match out {
        Out::Syslog => {}
        Out::File { .. } => {
            let s = stamp(false);
            for l in lines {
                text.push_str(&format!("{s} [{}] {l}\n", p.number()));
            }
        }
        Out::Stderr { journal: true } => {
            for l in lines {
                text.push_str(&format!("<{}>{l}\n", p.number()));
            }
        }
        Out::Stderr { journal: false } => {
            let s = stamp(true);
            for l in lines {
                text.push_str(&format!("{s} {} {l}\n", p.word()));
            }
        }
    }
    text
}

/// Writes one message at `p` (use [`crate::log!`], which checks
/// [`enabled`] first).
pub fn write(p: Priority, args: fmt::Arguments<'_>) {
    let message = args.to_string();
    let Some(logger) = LOGGER.get() else {
        match p {
            Priority::Emerg | Priority::Alert | Priority::Crit | Priority::Err => {
                tracing::error!("{message}")
            }
            Priority::Warning => tracing::warn!("{message}"),
            Priority::Notice | Priority::Info => tracing::info!("{message}"),
            Priority::Debug => tracing::debug!("{message}"),
        }
        return;
    };
    if p > logger.max {
        return;
    }
    match &logger.out {
        Out::Syslog => {
            for l in message.lines().filter(|l| !l.is_empty()) {
                rrd_sys::process::syslog(p.number(), l);
            }
        }
        out @ Out::File { file, .. } => {
            let text = render(p, &message, out);
            let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
            let _ = f.write_all(text.as_bytes());
        }
        out @ Out::Stderr { .. } => {
            let _ = std::io::stderr().write_all(render(p, &message, out).as_bytes());
        }
    }
}

/// `log!(Err, "cannot open {}: {e}", path)`: one message at a syslog
/// priority ([`Priority`]'s variant names), formatted only when kept.
#[macro_export]
macro_rules! log {
    ($p:ident, $($arg:tt)+) => {
        if $crate::log::enabled($crate::log::Priority::$p) {
            $crate::log::write($crate::log::Priority::$p, format_args!($($arg)+))
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_order_are_syslogs() {
        assert_eq!(Priority::from_name("LOG_WARNING"), Some(Priority::Warning));
        assert_eq!(Priority::from_name("LOG_DEBUG").map(Priority::number), Some(7));
        assert_eq!(Priority::from_name("LOG_EMERG").map(Priority::number), Some(0));
        assert_eq!(Priority::from_name("log_err"), None, "rrdcached compares with strcmp");
        assert_eq!(Priority::from_name("LOG_ERROR"), None);
        assert!(Priority::Err < Priority::Warning && Priority::Notice < Priority::Info);
        for p in ALL {
            assert_eq!(Priority::from_name(p.name()), Some(p));
        }
    }

    #[test]
    fn lines_are_rendered_per_sink() {
        let journal = Out::Stderr { journal: true };
        assert_eq!(render(Priority::Err, "a\nb\n", &journal), "<3>a\n<3>b\n");
        assert_eq!(render(Priority::Debug, "x", &journal), "<7>x\n");
        let terminal = render(Priority::Warning, "w", &Out::Stderr { journal: false });
        assert!(terminal.ends_with("Z WARNING w\n"), "{terminal}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let file = Out::File { file: Mutex::new(open_append(&path).unwrap()), path };
        let line = render(Priority::Notice, "n", &file);
        // 2024-05-01 12:00:00 [5] n
        assert_eq!(line.len(), "2024-05-01 12:00:00 [5] n\n".len(), "{line}");
        assert!(line.ends_with(" [5] n\n") && line.as_bytes()[10] == b' ', "{line}");
    }

    #[test]
    fn journal_stream_must_name_stderr() {
        assert!(journal_stream_is("8:12345", 8, 12345));
        assert!(!journal_stream_is("8:12345", 8, 12346));
        assert!(!journal_stream_is("8", 8, 12345));
        assert!(!journal_stream_is("x:y", 0, 0));
        assert!(!journal_stream_is("", 0, 0));
    }
}
