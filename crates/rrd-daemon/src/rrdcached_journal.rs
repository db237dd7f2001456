//! Switching from rrdcached: the `rrd.journal.*` files that rrdcached 1.7.2
//! leaves in the journal directory become records of our journal at
//! startup, so `rrdscale daemon -j DIR` loses none of the values rrdcached
//! had pending.
//!
//! This module owns finding those files (the names rrdcached 1.7.2 writes
//! or leaves, in the order it replays them, with the trust checks it makes),
//! parsing its text format, deciding with rrdcached's rules which values are
//! still pending, and the hand-over: the values are appended to OUR journal
//! and synced before rrdcached's files are deleted. It exists because
//! rrdcached's journal is the only copy of those values (rrdcached without
//! `-F` stops without writing them), and nothing else in the daemon reads
//! rrdcached's format. `server` calls [`migrate`] between opening our
//! journal and starting the journal thread; the records it adds to the
//! replay report are then applied by [`crate::replay`] with our own, before
//! any client is served. docs/journal.md ("Migrating from rrdcached") has
//! the rules and the crash argument.
//!
//! What rrdcached 1.7.2 writes (its source and the binary agree):
//!
//! - One file per start and per rotation, `rrd.journal.<sec>.<usec>` (10 and
//!   6 digits, so names sort by time). No temporary or renamed files; at
//!   startup it renames the legacy names `rrd.journal.old` and `rrd.journal`
//!   to `rrd.journal.0000` and `rrd.journal.0001`, then replays every
//!   regular file whose name begins with `rrd.journal`, in `strcmp` order,
//!   refusing (with an error) files not owned by its user or writable by
//!   group or others. A clean stop with `-F` deletes them all; SIGTERM
//!   without `-F` and kill -9 leave them.
//! - Lines go through stdio without a flush per line: a kill -9 loses what
//!   the buffer held, and the file can end in the middle of a line.
//! - `update <arguments>`: the client's arguments exactly as sent (names
//!   and values escaped the client's way, relative names unresolved), cut
//!   to 4095 bytes; written before the values are checked, so a line can
//!   hold values the client was refused.
//! - `wrote <file>` after each write of a file, `forget <file>` after a
//!   FORGET: the name as rrdcached resolved it, NOT escaped.
//!
//! Our rules (each one argued in docs/journal.md):
//!
//! - A FORGET drops the values before it for that name (rrdcached's own
//!   replay splits an unescaped name at a space and so misses names with
//!   spaces; we read the name as written).
//! - A WROTE drops nothing: values already written are not later than the
//!   file's last update and are skipped by the rule below, and values that
//!   arrived while rrdcached was writing (journaled before the WROTE, not
//!   written) are kept, where rrdcached's own replay would drop them.
//! - On each `update` line, values are taken in order until one has no
//!   timestamp or is not later than the file's newest (its last update,
//!   our journal's values, the lines before): rrdcached's acceptance, so a
//!   value the client was refused stays refused.
//! - Names become our cache keys through [`Paths`] of the daemon's default
//!   base (the last `-b`: rrdcached had one), `-B` included.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rrd_journal::{Journal, Record, ReplayReport};

use crate::commands::update_value_time;
use crate::paths::Paths;
use crate::replay;

/// Every file whose name begins with this is one of rrdcached's journals.
pub const NAME_PREFIX: &str = "rrd.journal";

/// rrdcached copies an UPDATE's arguments into a buffer of 4096 bytes
/// (NUL included) before journaling them: arguments this long may be cut.
const ARGS_JOURNALED_MAX: usize = 4095;

/// A value longer than this cannot be one of our journal's arguments.
const VALUE_LEN_MAX: usize = u16::MAX as usize;

/// What one of our records holds (u16 count, payload at most 1 MiB). Each
/// line becomes ONE record, which the crash argument needs; a line of
/// rrdcached's (at most 4095 bytes of arguments) is far below both.
const RECORD_VALUES_MAX: usize = u16::MAX as usize;
const RECORD_PAYLOAD_MAX: usize = rrd_journal::RECORD_LEN_MAX as usize;

/// Bad lines logged one by one per journal file; the rest are counted.
const BAD_LINES_LOGGED: u64 = 100;

/// One line of an rrdcached journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// The file name as the client sent it (unescaped, maybe relative) and
    /// the values rrdcached could have accepted: those before the first one
    /// without a timestamp.
    Update { name: String, values: Vec<String> },
    /// rrdcached wrote this file (name as it resolved it).
    Wrote { file: String },
    /// The file's pending values were dropped (name as rrdcached resolved it).
    Forget { file: String },
}

/// What [`parse_line`] made of one line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedLine {
    /// What the line says, when anything usable is left.
    pub line: Option<Line>,
    /// Values after the first one without a timestamp (refused when sent).
    pub refused: u64,
    /// What is wrong with the line, to be logged as an error.
    pub problem: Option<String>,
}

impl ParsedLine {
    fn bad(why: impl Into<String>) -> ParsedLine {
        ParsedLine { line: None, refused: 0, problem: Some(why.into()) }
    }
}

/// A field as rrdcached's field reader takes it: up to a space or the end
/// of the line, a backslash taking the next byte literally.
struct Field {
    bytes: Vec<u8>,
    /// Ended by a space (rather than the end of the line).
    spaced: bool,
}

/// Reads the next field of `rest`; `None` when nothing is left, `Err` when
/// a backslash ends the line (rrdcached fails such a field). After the last
/// field `rest` is `None`; a line ending in a space has an empty last field.
fn next_field(rest: &mut Option<&[u8]>) -> Option<Result<Field, ()>> {
    let bytes = (*rest)?;
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b' ' => {
                *rest = Some(&bytes[i + 1..]);
                return Some(Ok(Field { bytes: out, spaced: true }));
            }
            b'\\' => {
                let Some(&next) = bytes.get(i + 1) else {
                    *rest = None;
                    return Some(Err(()));
                };
                out.push(next);
                i += 2;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    *rest = None;
    Some(Ok(Field { bytes: out, spaced: false }))
}

fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut s: String = text.chars().take(200).collect();
    if text.chars().count() > 200 {
        s.push_str("...");
    }
    s
}

/// Parses one journal line (without its `\n`). `terminated` says whether the
/// line ended with a newline: the last line of a file cut by kill -9 did
/// not, and then its last field may be cut; fields before it followed by a
/// space are complete and kept.
pub fn parse_line(text: &[u8], terminated: bool) -> ParsedLine {
    if text.is_empty() {
        return ParsedLine::bad(if terminated { "empty line" } else { "empty incomplete line" });
    }
    if text.contains(&0) {
        return ParsedLine::bad("NUL byte in the line");
    }
    let mut rest = Some(text);
    let (command, spaced) = match next_field(&mut rest) {
        Some(Ok(f)) => (String::from_utf8_lossy(&f.bytes).to_ascii_lowercase(), f.spaced),
        _ => (String::new(), false),
    };
    let known = ["update", "wrote", "forget"].contains(&command.as_str());
    if !spaced {
        return ParsedLine::bad(if !terminated {
            "incomplete line (rrdcached stopped while writing it)".to_string()
        } else if known {
            "no file name".to_string()
        } else {
            format!("'{}' is not a journal command", shown(command.as_bytes()))
        });
    }
    if command == "wrote" || command == "forget" {
        // Written unescaped: the rest of the line is the name.
        let name = rest.unwrap_or_default();
        if !terminated {
            return ParsedLine::bad("incomplete line (rrdcached stopped while writing it)");
        }
        let Ok(file) = std::str::from_utf8(name) else {
            return ParsedLine::bad("file name is not UTF-8");
        };
        if file.is_empty() {
            return ParsedLine::bad("no file name");
        }
        let file = file.to_string();
        let line = if command == "wrote" { Line::Wrote { file } } else { Line::Forget { file } };
        return ParsedLine { line: Some(line), ..Default::default() };
    }
    if command != "update" {
        return ParsedLine::bad(format!("'{}' is not a journal command", shown(command.as_bytes())));
    }
    let args_len = rest.map_or(0, <[u8]>::len);
    let mut fields = Vec::new();
    while let Some(f) = next_field(&mut rest) {
        match f {
            Ok(f) => fields.push(f),
            // rrdcached stops reading values at a field it cannot read.
            Err(()) => break,
        }
    }
    let mut problem = None;
    if !terminated {
        if fields.last().is_some_and(|f| !f.spaced) {
            fields.pop();
        }
        problem = Some("incomplete line (rrdcached stopped while writing it)".to_string());
    } else if args_len == ARGS_JOURNALED_MAX && fields.len() > 1 {
        // rrdcached cut the arguments to 4095 bytes: the last may be partial.
        fields.pop();
        problem = Some(format!("arguments of {args_len} bytes may have been cut by rrdcached"));
    }
    let mut fields = fields.into_iter();
    let name = match fields.next() {
        Some(f) if !f.bytes.is_empty() => f.bytes,
        _ => {
            return ParsedLine::bad(
                problem.map_or_else(|| "no file name".into(), |p| format!("{p}; no file name")),
            )
        }
    };
    let Ok(name) = String::from_utf8(name) else {
        return ParsedLine::bad("file name is not UTF-8");
    };
    let mut values = Vec::new();
    let mut refused = 0;
    let mut stopped = false;
    for f in fields {
        if stopped {
            refused += u64::from(!f.bytes.is_empty());
            continue;
        }
        let value = match String::from_utf8(f.bytes) {
            Ok(v) if v.len() <= VALUE_LEN_MAX && update_value_time(&v).is_some() => v,
            Ok(v) => {
                // rrdcached refused it and the rest of the line ("Cannot
                // find timestamp"); an empty field (a trailing space) is no
                // value at all.
                refused += u64::from(!v.is_empty());
                stopped = true;
                continue;
            }
            Err(_) => {
                refused += 1;
                stopped = true;
                problem.get_or_insert_with(|| "value is not UTF-8".to_string());
                continue;
            }
        };
        values.push(value);
    }
    if values.is_empty() && problem.is_some() {
        return ParsedLine { line: None, refused, problem };
    }
    ParsedLine { line: Some(Line::Update { name, values }), refused, problem }
}

/// rrdcached's journal files in `dir`, in the order rrdcached replays them:
/// every name beginning with `rrd.journal`, by `strcmp`, the legacy
/// `rrd.journal.old` and `rrd.journal` where their renamed forms
/// (`.0000`, `.0001`) sort.
pub fn find(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        if name.as_bytes().starts_with(NAME_PREFIX.as_bytes()) {
            names.push(name);
        }
    }
    let order = |n: &std::ffi::OsStr| -> Vec<u8> {
        match n.as_bytes() {
            b"rrd.journal.old" => b"rrd.journal.0000".to_vec(),
            b"rrd.journal" => b"rrd.journal.0001".to_vec(),
            b => b.to_vec(),
        }
    };
    names.sort_by(|a, b| order(a).cmp(&order(b)).then_with(|| a.cmp(b)));
    Ok(names.into_iter().map(|n| dir.join(n)).collect())
}

/// rrdcached's checks before it replays a journal: a regular file, owned by
/// the daemon's user, not writable by group or others (anyone who can
/// write it could make the daemon write any RRD file).
fn trusted(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot stat it: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let uid = rustix::process::geteuid().as_raw();
    if meta.uid() != uid {
        return Err(format!("owned by uid {}, not by the daemon's user (uid {uid})", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!("writable by group or others (mode {:o})", meta.mode() & 0o7777));
    }
    Ok(())
}

/// What the migration found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Journal files read (deleted once their values are in our journal).
    pub files: u64,
    /// Journal files not read and left in place (rrdcached's trust checks).
    pub files_kept: u64,
    pub lines: u64,
    pub bad_lines: u64,
    pub wrote_lines: u64,
    pub forget_lines: u64,
    /// Values copied into our journal (and so into the cache).
    pub values_migrated: u64,
    /// RRD files those values are for.
    pub rrd_files: u64,
    /// Not later than the file's newest value: already written, or refused
    /// when they were sent (and the rest of their line with them).
    pub values_skipped: u64,
    /// Dropped by a later FORGET.
    pub values_forgotten: u64,
    /// Without a timestamp (and the rest of their line): refused when sent;
    /// also values beyond what one record holds (not rrdcached's lines).
    pub values_refused: u64,
    /// For files that cannot be read as RRD files now.
    pub values_unreadable: u64,
    /// For names `-B` refuses.
    pub values_denied: u64,
}

/// The outcome of [`read`]: our records, and the files to retire.
#[derive(Debug, Default)]
pub struct Migration {
    /// rrdcached's journal files that were read, in replay order.
    pub files: Vec<PathBuf>,
    /// The values still pending, as our records (cache keys), in order.
    pub records: Vec<Record>,
    pub summary: Summary,
}

/// An `update` line still alive after the FORGETs.
struct Pending {
    name: String,
    values: Vec<String>,
    alive: bool,
}

/// The key rrdcached's cache used for a name: relative names joined to the
/// base directory, nothing normalized (so `x.rrd` and `./x.rrd` were two
/// entries). FORGET lines name entries this way.
fn rrdcached_key(paths: &Paths, name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("{}/{}", paths.base().display(), name)
    }
}

/// Reads and parses rrdcached's journals in `dir` and decides which values
/// are still pending, after `ours` (our own journal's records, which replay
/// applies first). No side effect but logging. `Err` when a journal that
/// passed the trust checks cannot be read: its values would be lost.
// One pass over the journals; its checks share the per-file state.
#[allow(clippy::too_many_lines)]
pub fn read(dir: &Path, paths: &Paths, ours: &[Record]) -> Result<Migration, String> {
    let found = find(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut m = Migration::default();
    let s = &mut m.summary;
    let mut pending: Vec<Pending> = Vec::new();
    let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
    for path in found {
        if let Err(why) = trusted(&path) {
            crate::log!(
                Err,
                "rrdcached journal {}: not read and left in place: {why} (rrdcached refuses it too)",
                path.display()
            );
            s.files_kept += 1;
            continue;
        }
        let file = std::fs::File::open(&path)
            .map_err(|e| format!("cannot open rrdcached journal {}: {e}", path.display()))?;
        let mut reader = BufReader::new(file);
        let (mut n, mut bad, mut updates, mut buf) = (0u64, 0u64, 0u64, Vec::new());
        loop {
            buf.clear();
            let got = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| format!("cannot read rrdcached journal {}: {e}", path.display()))?;
            if got == 0 {
                break;
            }
            n += 1;
            let terminated = buf.last() == Some(&b'\n');
            let text = if terminated { &buf[..buf.len() - 1] } else { &buf[..] };
            let parsed = parse_line(text, terminated);
            s.values_refused += parsed.refused;
            if let Some(why) = &parsed.problem {
                bad += 1;
                if bad <= BAD_LINES_LOGGED {
                    let kept = match &parsed.line {
                        Some(Line::Update { values, .. }) => {
                            format!("; {} complete value(s) kept", values.len())
                        }
                        _ => "; not applied".to_string(),
                    };
                    crate::log!(
                        Err,
                        "rrdcached journal {}, line {n}: {why}{kept}: {}",
                        path.display(),
                        shown(text)
                    );
                }
            }
            match parsed.line {
                None => {}
                Some(Line::Update { name, values }) => {
                    updates += 1;
                    if !values.is_empty() {
                        by_key.entry(rrdcached_key(paths, &name)).or_default().push(pending.len());
                        pending.push(Pending { name, values, alive: true });
                    }
                }
                Some(Line::Wrote { .. }) => s.wrote_lines += 1,
                Some(Line::Forget { file }) => {
                    s.forget_lines += 1;
                    for i in by_key.remove(&file).unwrap_or_default() {
                        pending[i].alive = false;
                        s.values_forgotten += pending[i].values.len() as u64;
                    }
                }
            }
        }
        if bad > BAD_LINES_LOGGED {
            crate::log!(
                Err,
                "rrdcached journal {}: {} more bad line(s) not shown",
                path.display(),
                bad - BAD_LINES_LOGGED
            );
        }
        crate::log!(
            Info,
            "rrdcached journal {}: {n} line(s), {updates} update(s), {bad} bad",
            path.display()
        );
        s.files += 1;
        s.lines += n;
        s.bad_lines += bad;
        m.files.push(path);
    }
    drop(by_key);

    // Names to our keys (-B applies), once per name.
    let mut keys: HashMap<String, Option<String>> = HashMap::new();
    for p in pending.iter().filter(|p| p.alive) {
        if !keys.contains_key(&p.name) {
            let key = paths.resolve(&p.name).and_then(|k| paths.check_resolved(&k).map(|()| k));
            let key = match key {
                Ok(k) => Some(k),
                Err(d) => {
                    crate::log!(
                        Err,
                        "rrdcached journal names {}, outside the base directory (-B): its values are not applied",
                        d.shown
                    );
                    None
                }
            };
            keys.insert(p.name.clone(), key);
        }
    }
    let mut distinct: Vec<String> = keys.values().flatten().cloned().collect();
    distinct.sort_unstable();
    distinct.dedup();
    // Opened beneath that base under -B, as replay opens them.
    let root = crate::paths::open_root(std::slice::from_ref(paths), paths.base_only());
    let last_ups = replay::read_parallel(distinct, |p| replay::read_last_update(&root, p).map(|(t, _)| t));
    // Each file's newest value once our own journal is replayed: replay
    // applies a value later than the newest and makes it the newest; a
    // FORGET starts again from the file's last update.
    let mut newest: HashMap<&str, f64> =
        last_ups.iter().filter_map(|(k, t)| t.map(|t| (k.as_str(), t))).collect();
    for r in ours {
        let (Some(stamp), Some(Some(last_up))) = (newest.get_mut(r.path.as_str()), last_ups.get(&r.path))
        else {
            continue;
        };
        if r.args.is_empty() {
            *stamp = *last_up;
        }
        for t in r.args.iter().filter_map(|a| update_value_time(a)) {
            if t > *stamp {
                *stamp = t;
            }
        }
    }

    let mut unreadable: HashMap<&str, u64> = HashMap::new();
    let mut updated: HashSet<&str> = HashSet::new();
    for p in pending.iter().filter(|p| p.alive) {
        let count = p.values.len() as u64;
        let Some(key) = keys.get(&p.name).and_then(Option::as_ref) else {
            s.values_denied += count;
            continue;
        };
        let Some(stamp) = newest.get_mut(key.as_str()) else {
            s.values_unreadable += count;
            *unreadable.entry(key.as_str()).or_default() += count;
            continue;
        };
        // rrdcached's acceptance: in order, until one is not later.
        let mut taken = Vec::new();
        let mut payload = 4 + key.len();
        for v in &p.values {
            if taken.len() == RECORD_VALUES_MAX || payload + 2 + v.len() > RECORD_PAYLOAD_MAX {
                // Not a line rrdcached writes; one line stays one record.
                crate::log!(
                    Err,
                    "rrdcached journal: a line for {key} has more values than one record holds; \
                     {} value(s) after the first {} are not applied",
                    p.values.len() - taken.len(),
                    taken.len()
                );
                s.values_refused += (p.values.len() - taken.len()) as u64;
                break;
            }
            match update_value_time(v) {
                Some(t) if t > *stamp => {
                    *stamp = t;
                    payload += 2 + v.len();
                    taken.push(v.clone());
                }
                _ => {
                    s.values_skipped += (p.values.len() - taken.len()) as u64;
                    break;
                }
            }
        }
        if taken.is_empty() {
            continue;
        }
        s.values_migrated += taken.len() as u64;
        updated.insert(key.as_str());
        m.records.push(Record { path: key.clone(), args: taken });
    }
    s.rrd_files = updated.len() as u64;
    for (key, count) in unreadable {
        crate::log!(
            Warning,
            "rrdcached journal: {key} cannot be read as an RRD file; its {count} pending value(s) are dropped \
             (rrdcached drops them too)"
        );
    }
    Ok(m)
}

/// Writes `m`'s records to our journal and syncs it, whatever the sync
/// policy: once this returns `Ok`, rrdcached's files may go.
pub fn commit(m: &Migration, journal: &mut Journal) -> rrd_journal::Result<()> {
    const CHUNK: usize = 4 << 20;
    let mut frames = Vec::new();
    for r in &m.records {
        r.encode_frame(&mut frames)?;
        if frames.len() >= CHUNK {
            journal.write_encoded(&frames)?;
            frames.clear();
        }
    }
    if !frames.is_empty() {
        journal.write_encoded(&frames)?;
    }
    journal.sync()
}

/// Deletes the journal files `m` read, then syncs the directory. Returns
/// what could not be done (each a message); nothing is lost by a failure,
/// the values being in our journal: a later start reads the files again
/// and skips every value (docs/journal.md).
pub fn retire(m: &Migration, dir: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    for f in &m.files {
        if let Err(e) = std::fs::remove_file(f) {
            failures.push(format!("cannot delete {}: {e}", f.display()));
        }
    }
    if !m.files.is_empty() {
        if let Err(e) = rrd_journal::io::sync_dir(dir) {
            failures.push(format!("cannot sync {}: {e}", dir.display()));
        }
    }
    failures
}

/// The whole migration, at startup, after our journal was replayed into
/// `report` and opened as `journal`, before the journal thread starts:
/// reads rrdcached's journals in `dir`, writes the values still pending to
/// our journal and syncs it, deletes rrdcached's files, and appends the
/// records to `report` (after ours, as they are in the journal) so replay
/// applies them. `Ok(None)` when there was nothing of rrdcached's.
///
/// `Err` (the daemon must not start) when a journal cannot be read or ours
/// cannot take the values; rrdcached's files are then left as they are.
pub fn migrate(
    dir: &Path,
    paths: &Paths,
    journal: &mut Journal,
    report: &mut ReplayReport,
) -> Result<Option<Summary>, String> {
    let m = read(dir, paths, &report.records)?;
    if m.files.is_empty() {
        return Ok((m.summary.files_kept > 0).then_some(m.summary));
    }
    commit(&m, journal).map_err(|e| {
        format!("cannot copy rrdcached's pending values into the journal ({e}); rrdcached's journal files are kept")
    })?;
    let failures = retire(&m, dir);
    for f in &failures {
        crate::log!(
            Warning,
            "retiring rrdcached's journal: {f} (its values are in our journal; nothing is lost)"
        );
    }
    let s = &m.summary;
    crate::log!(
        Notice,
        "migrated from rrdcached: {} journal file(s), {} line(s); {} value(s) for {} RRD file(s) are now in \
         our journal; skipped: {} not later than the file's newest value (already written, or refused when \
         sent), {} forgotten, {} without a timestamp, {} for unreadable files, {} outside -B; {} WROTE and \
         {} FORGET line(s), {} bad line(s); rrdcached's journal files {}",
        s.files,
        s.lines,
        s.values_migrated,
        s.rrd_files,
        s.values_skipped,
        s.values_forgotten,
        s.values_refused,
        s.values_unreadable,
        s.values_denied,
        s.wrote_lines,
        s.forget_lines,
        s.bad_lines,
        if failures.is_empty() { "deleted" } else { "NOT all deleted" },
    );
    let summary = m.summary.clone();
    report.records.extend(m.records);
    Ok(Some(summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(name: &str, values: &[&str]) -> Option<Line> {
        Some(Line::Update { name: name.into(), values: values.iter().map(|v| v.to_string()).collect() })
    }

    #[test]
    fn update_lines_unescape_like_rrdcached() {
        let p = parse_line(b"update a.rrd 1000000300:1:2 1000000600:U:3", true);
        assert_eq!(
            p,
            ParsedLine { line: update("a.rrd", &["1000000300:1:2", "1000000600:U:3"]), ..Default::default() }
        );
        // The command is case-insensitive; backslash takes the next byte.
        let p = parse_line(br"UPDATE sp\ ace\\x.rrd 1000000300:1", true);
        assert_eq!(p.line, update(r"sp ace\x.rrd", &["1000000300:1"]));
        assert_eq!(p.problem, None);
        // A trailing space is an empty field, not a refused value.
        let p = parse_line(b"update a.rrd 1000000300:1 ", true);
        assert_eq!((p.line, p.refused, p.problem), (update("a.rrd", &["1000000300:1"]), 0, None));
        // A file and no values: nothing to apply, nothing wrong.
        assert_eq!(parse_line(b"update a.rrd", true).line, update("a.rrd", &[]));
    }

    #[test]
    fn a_value_without_timestamp_ends_the_line() {
        let p = parse_line(b"update a.rrd 1000000300:1 N:2 1000000900:3  1000001200:4", true);
        assert_eq!(p.line, update("a.rrd", &["1000000300:1"]));
        assert_eq!(p.refused, 3);
        assert_eq!(p.problem, None, "refused when sent, not a damaged journal");
        let p = parse_line(b"update a.rrd 1000000300:1  1000000600:2", true);
        assert_eq!((p.line, p.refused), (update("a.rrd", &["1000000300:1"]), 1));
        // A backslash ending the line: rrdcached stops reading values there.
        let p = parse_line(b"update a.rrd 1000000300:1 1000000600:2\\", true);
        assert_eq!(p.line, update("a.rrd", &["1000000300:1"]));
    }

    #[test]
    fn wrote_and_forget_take_the_rest_of_the_line_verbatim() {
        let p = parse_line(b"wrote /srv/rrd/sp ace.rrd", true);
        assert_eq!(
            p,
            ParsedLine {
                line: Some(Line::Wrote { file: "/srv/rrd/sp ace.rrd".into() }),
                ..Default::default()
            }
        );
        let p = parse_line(br"forget /srv/rrd/a\b.rrd", true);
        assert_eq!(p.line, Some(Line::Forget { file: r"/srv/rrd/a\b.rrd".into() }));
        assert!(parse_line(b"wrote", true).problem.is_some());
        assert!(parse_line(b"wrote /srv/rrd/a.rr", false).line.is_none());
    }

    #[test]
    fn a_truncated_last_line_keeps_its_complete_values() {
        let p = parse_line(b"update a.rrd 1000000300:1 1000000600:2 1000000900:3", false);
        assert_eq!(p.line, update("a.rrd", &["1000000300:1", "1000000600:2"]));
        assert!(p.problem.unwrap().contains("incomplete"));
        // Cut in the first value: nothing to keep.
        let p = parse_line(b"update a.rrd 10000003", false);
        assert_eq!(p.line, None);
        assert!(p.problem.is_some());
        // Cut in the name or the command.
        assert_eq!(parse_line(b"update a.rr", false).line, None);
        assert_eq!(parse_line(b"upd", false).line, None);
        // Cut right after a space: every field is complete.
        let p = parse_line(b"update a.rrd 1000000300:1 ", false);
        assert_eq!(p.line, update("a.rrd", &["1000000300:1"]));
        assert!(p.problem.is_some());
        // Cut after a backslash: the escaped byte is missing.
        let p = parse_line(b"update a.rrd 1000000300:1 1000000600:2\\", false);
        assert_eq!(p.line, update("a.rrd", &["1000000300:1"]));
        assert!(p.problem.is_some());
    }

    #[test]
    fn arguments_rrdcached_may_have_cut_lose_their_last_value() {
        let mut line = b"update a.rrd".to_vec();
        let mut t = 1_000_000_300u64;
        while line.len() < 7 + ARGS_JOURNALED_MAX {
            line.extend_from_slice(format!(" {t}:1").as_bytes());
            t += 300;
        }
        line.truncate(7 + ARGS_JOURNALED_MAX);
        let p = parse_line(&line, true);
        let Some(Line::Update { values, .. }) = &p.line else { panic!("{p:?}") };
        let complete = String::from_utf8_lossy(&line[13..]).split(' ').count() - 1;
        assert_eq!(values.len(), complete);
        assert!(p.problem.unwrap().contains("cut"));
    }

    #[test]
    fn garbage_is_reported_not_applied() {
        for bad in
            [&b""[..], b"flush a.rrd", b"hello", b"update", b"update  1000000300:1", b"update a\0.rrd 1:2"]
        {
            let p = parse_line(bad, true);
            assert_eq!(p.line, None, "{:?}", String::from_utf8_lossy(bad));
            assert!(p.problem.is_some(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn files_are_found_in_rrdcacheds_replay_order() {
        let dir = tempfile::tempdir().unwrap();
        for n in [
            "rrd.journal.1700000001.000002",
            "rrd.journal",
            "rrd.journal.1700000000.999999",
            "rrd.journal.old",
            "journal.0000000000000001",
            "other",
            "rrd.journal.0000",
        ] {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        let names: Vec<String> = find(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "rrd.journal.0000",
                "rrd.journal.old",
                "rrd.journal",
                "rrd.journal.1700000000.999999",
                "rrd.journal.1700000001.000002"
            ]
        );
    }
}
