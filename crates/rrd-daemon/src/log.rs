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
//! Repeated lines are limited ([`Repeats`]): a line identical to one
//! written less than [`REPEAT_WINDOW`] ago (same priority, same text) is
//! counted, not written; once the window is over, one summary line says
//! how many were held back (`last message repeated N times in the last S
//! s: TEXT`), at most one per window while the repetition lasts. A disk
//! that is full makes every journal append fail; without this, thousands
//! of identical lines a second would fill the log (and the disk) further.
//!
//! Deliberately different from rrdcached: in the foreground rrdcached
//! writes every line to standard error AND to syslog or `-o`; we write it
//! once (under systemd both copies would reach the journal). rrdcached
//! writes every repeated line.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A syslog priority (`syslog.h`'s levels), most urgent first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

/// How long an identical line is held back after it was written.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(5);

/// Distinct lines tracked at once; beyond, new lines are written unlimited
/// until tracked ones expire.
const REPEATS_TRACKED: usize = 256;

/// The repeat limiter: which lines were written recently, and how many
/// copies of each were held back since. Time is passed in, so tests drive
/// it with a fake clock.
#[derive(Debug)]
pub struct Repeats {
    window: Duration,
    seen: HashMap<(Priority, String), Seen>,
    /// No window ends before this: sweeps before it find nothing.
    next_expiry: Option<Instant>,
}

#[derive(Debug)]
struct Seen {
    /// When the current window began (the line, or its last summary, was
    /// written).
    since: Instant,
    held: u64,
}

impl Repeats {
    pub fn new(window: Duration) -> Repeats {
        Repeats { window, seen: HashMap::new(), next_expiry: None }
    }

    /// The lines to write for `message` at `p` at `now`: summaries of lines
    /// whose window ended, then `message` itself unless it was written
    /// less than a window ago (then it is counted; when its window is over
    /// and it comes again, its summary is written instead, and a new window
    /// begins).
    pub fn offer(&mut self, p: Priority, message: &str, now: Instant) -> Vec<(Priority, String)> {
        let window = self.window;
        let key = (p, message.to_string());
        let mut out = Vec::new();
        let line = match self.seen.get_mut(&key) {
            Some(s) if now.saturating_duration_since(s.since) < window => {
                s.held += 1;
                None
            }
            Some(s) => {
                // Its window is over and it comes again: the line itself
                // if none was held back, else one summary counting this
                // copy too; either way a new window.
                let age = now.saturating_duration_since(s.since);
                let line = if s.held == 0 { message.to_string() } else { summary(s.held + 1, age, message) };
                *s = Seen { since: now, held: 0 };
                Some(line)
            }
            None => {
                if self.seen.len() < REPEATS_TRACKED {
                    self.seen.insert(key, Seen { since: now, held: 0 });
                }
                Some(message.to_string())
            }
        };
        if line.is_some() {
            self.next_expiry = Some(self.next_expiry.map_or(now + window, |e| e.min(now + window)));
        }
        out.extend(self.expire(now));
        out.extend(line.map(|l| (p, l)));
        out
    }

    /// Summaries of the lines whose window ended by `now` with copies held
    /// back; lines whose window ended are forgotten.
    pub fn expire(&mut self, now: Instant) -> Vec<(Priority, String)> {
        if self.next_expiry.is_none_or(|e| now < e) {
            return Vec::new();
        }
        self.sweep(now, false)
    }

    /// Summaries of every line with copies held back, window over or not
    /// (before exiting); every line is forgotten.
    pub fn drain(&mut self, now: Instant) -> Vec<(Priority, String)> {
        self.sweep(now, true)
    }

    fn sweep(&mut self, now: Instant, all: bool) -> Vec<(Priority, String)> {
        let mut out = Vec::new();
        let window = self.window;
        let mut next: Option<Instant> = None;
        self.seen.retain(|(p, message), s| {
            let age = now.saturating_duration_since(s.since);
            if age < window && !all {
                next = Some(next.map_or(s.since + window, |e| e.min(s.since + window)));
                return true;
            }
            if s.held > 0 {
                out.push((*p, summary(s.held, age, message)));
            }
            false
        });
        self.next_expiry = next;
        out
    }
}

fn summary(n: u64, over: Duration, message: &str) -> String {
    let secs = over.as_secs().max(1);
    let times = if n == 1 { "time" } else { "times" };
    format!("last message repeated {n} {times} in the last {secs} s: {message}")
}

static REPEATS: OnceLock<Mutex<Repeats>> = OnceLock::new();

fn repeats() -> std::sync::MutexGuard<'static, Repeats> {
    REPEATS.get_or_init(|| Mutex::new(Repeats::new(REPEAT_WINDOW))).lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes the summaries of repeated lines whose window is over (called
/// every few seconds, so a count is not left unsaid when no other line
/// comes), or, `exiting`, of every line with copies held back.
pub fn flush_repeats(exiting: bool) {
    let now = Instant::now();
    let lines = if exiting { repeats().drain(now) } else { repeats().expire(now) };
    for (p, line) in lines {
        emit(p, &line);
    }
}

/// Writes one message at `p` (use [`crate::log!`], which checks
/// [`enabled`] first), unless [`Repeats`] holds it back.
pub fn write(p: Priority, args: fmt::Arguments<'_>) {
    if LOGGER.get().is_some_and(|l| p > l.max) {
        return;
    }
    let message = args.to_string();
    let lines = repeats().offer(p, &message, Instant::now());
    for (p, line) in lines {
        emit(p, &line);
    }
}

fn emit(p: Priority, message: &str) {
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
            let text = render(p, message, out);
            let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
            let _ = f.write_all(text.as_bytes());
        }
        out @ Out::Stderr { .. } => {
            let _ = std::io::stderr().write_all(render(p, message, out).as_bytes());
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

    /// A fake clock: `at(ms)` is `ms` milliseconds after a fixed start.
    fn clock() -> impl Fn(u64) -> Instant {
        let start = Instant::now();
        move |ms| start + Duration::from_millis(ms)
    }

    fn texts(lines: Vec<(Priority, String)>) -> Vec<String> {
        lines.into_iter().map(|(_, l)| l).collect()
    }

    #[test]
    fn a_storm_of_one_line_is_one_line_per_window() {
        let at = clock();
        let mut r = Repeats::new(Duration::from_secs(5));
        let full = "journal append failed, its updates are not acknowledged: No space left on device";
        assert_eq!(texts(r.offer(Priority::Err, full, at(0))), [full]);
        // 4,382 more in the first second: nothing written.
        for i in 0..4382 {
            assert!(r.offer(Priority::Err, full, at(i * 1000 / 4382)).is_empty());
        }
        assert!(r.expire(at(4999)).is_empty());
        // The storm goes on past the window: one summary, this one counted.
        assert_eq!(
            texts(r.offer(Priority::Err, full, at(5200))),
            [format!("last message repeated 4383 times in the last 5 s: {full}")]
        );
        assert!(r.offer(Priority::Err, full, at(6000)).is_empty());
        assert!(r.offer(Priority::Err, full, at(9000)).is_empty());
        // It stops: the next sweep after the window says how many.
        assert!(r.expire(at(10_100)).is_empty());
        assert_eq!(
            texts(r.expire(at(10_200))),
            [format!("last message repeated 2 times in the last 5 s: {full}")]
        );
        assert!(r.expire(at(20_000)).is_empty());
        // Forgotten: the next one is written in full.
        assert_eq!(texts(r.offer(Priority::Err, full, at(21_000))), [full]);
    }

    #[test]
    fn distinct_lines_and_priorities_are_not_merged() {
        let at = clock();
        let mut r = Repeats::new(Duration::from_secs(5));
        assert_eq!(texts(r.offer(Priority::Err, "a", at(0))), ["a"]);
        assert_eq!(texts(r.offer(Priority::Err, "b", at(1))), ["b"]);
        assert_eq!(texts(r.offer(Priority::Warning, "a", at(2))), ["a"]);
        assert!(r.offer(Priority::Err, "a", at(3)).is_empty());
        // A line that comes back after its window with nothing held back
        // is written as itself, after the summaries of expired windows.
        let out = r.offer(Priority::Err, "b", at(7000));
        assert_eq!(out[0], (Priority::Err, "last message repeated 1 time in the last 7 s: a".to_string()));
        assert_eq!(out[1], (Priority::Err, "b".to_string()));
        assert_eq!(out.len(), 2);
        assert_eq!(texts(r.offer(Priority::Info, "c", at(7001))), ["c"]);
        // Before exiting, every held-back count is said, window over or not.
        assert!(r.offer(Priority::Info, "c", at(7002)).is_empty());
        assert_eq!(texts(r.drain(at(8000))), ["last message repeated 1 time in the last 1 s: c"]);
        assert!(r.drain(at(8001)).is_empty());
    }

    #[test]
    fn beyond_the_tracked_lines_nothing_is_held_back() {
        let at = clock();
        let mut r = Repeats::new(Duration::from_secs(5));
        for i in 0..REPEATS_TRACKED + 10 {
            assert_eq!(r.offer(Priority::Err, &format!("line {i}"), at(0)).len(), 1);
        }
        let last = format!("line {}", REPEATS_TRACKED + 5);
        assert_eq!(r.offer(Priority::Err, &last, at(1)).len(), 1, "untracked lines are always written");
        assert!(r.offer(Priority::Err, "line 0", at(1)).is_empty(), "tracked ones are held back");
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
