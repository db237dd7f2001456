//! The requests rrdtool's commands send, and how librrd 1.7.2 reads their
//! replies back into values.
//!
//! File names: for a daemon on a UNIX socket the client sends absolute,
//! symlink-free names (`realpath`; for a file that does not exist yet, its
//! directory's realpath plus the last component); for a remote daemon it
//! sends relative names as given and refuses absolute ones, unless
//! `RRDCACHED_STRIPPATH` is a prefix to cut off. An empty name is refused
//! without a message (as librrd).
//!
//! `N:` at the start of an update value becomes the client's clock, as in
//! librrd; any other time syntax is the daemon's business.
//!
//! TUNE and DUMP are sent as rrdtool 1.9's librrd sends them
//! (`rrd_client_tune`: `tune <file> <argc> <argv...>`, argv being the
//! tune command line, `tune` first; `rrd_client_dump`: `dump <file>
//! <dtd|xsd|none>`, the XML read until the daemon closes); a daemon that
//! does not know them (rrdcached before 1.8/1.9) answers `Unknown command`,
//! which [`TuneOutcome::Unknown`] and [`DumpOutcome::Unknown`] report so
//! that the caller does the work itself.
//!
//! Deliberately absent: FETCHBIN, STATS, PENDING (rrdtool's commands do not
//! send them).

use std::io::Write;

use crate::address::{is_local, ENV_STRIP_PATH};
use crate::connection::{Client, Streamed};
use rrd_lang::numparse::{atoi, atol, strtol};

use crate::ctext::{atof, io_text, strtod_whole};
use crate::error::ClientError;

/// One `key type value` line of an INFO reply, read as librrd reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct InfoItem {
    pub key: String,
    pub value: InfoValue,
}

/// Info types 0 to 3 (librrd refuses blobs over the wire).
#[derive(Clone, Debug, PartialEq)]
pub enum InfoValue {
    /// Type 0: a double (`atof`; a value starting with `N` is NaN).
    Value(f64),
    /// Type 1: a count (`atol`).
    Count(u64),
    /// Type 2: a string.
    Str(String),
    /// Type 3: an int (`atoi`).
    Int(i32),
}

/// A FETCH reply: rows `start + step`, `start + 2 step`, ... up to `end`.
#[derive(Clone, Debug, PartialEq)]
pub struct FetchReply {
    pub start: i64,
    pub end: i64,
    pub step_secs: u64,
    pub ds_names: Vec<String>,
    /// Row-major, `ds_names.len()` values per row.
    pub data: Vec<f64>,
}

/// A CREATE request, fields as rrdtool's `create` resolved them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreateRequest {
    pub file: String,
    /// `-s`: 0 when not given (the daemon then uses its default).
    pub step_secs: u64,
    /// `-b`, already resolved to seconds; sent only when given.
    pub start: Option<i64>,
    pub no_overwrite: bool,
    /// `-r` and `-t`: sent as given (the daemon resolves them).
    pub sources: Vec<String>,
    pub template: Option<String>,
    /// DS and RRA definitions.
    pub definitions: Vec<String>,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// What a TUNE request did.
#[derive(Debug, PartialEq, Eq)]
pub enum TuneOutcome {
    /// The daemon tuned the file.
    Tuned,
    /// The daemon does not know TUNE.
    Unknown,
}

/// What a DUMP request did.
#[derive(Debug, PartialEq, Eq)]
pub enum DumpOutcome {
    /// The XML was copied to the output; the connection is closed.
    Dumped,
    /// The daemon does not know DUMP (nothing was written).
    Unknown,
}

/// Whether an error reply says the command is not known to the daemon.
fn unknown_command(message: &str) -> bool {
    message.starts_with("Unknown command")
}

impl Client {
    /// `tune file argc argv...`: the daemon tunes `file` with the tune
    /// command line `argv` (`argv[0]` is `tune`).
    pub fn tune(&mut self, file: &str, argv: &[String]) -> Result<TuneOutcome, ClientError> {
        let path = self.daemon_path(file)?;
        let argc = argv.len().to_string();
        let mut fields = vec!["tune", path.as_str(), argc.as_str()];
        fields.extend(argv.iter().map(String::as_str));
        match self.request(&fields) {
            Ok(_) => Ok(TuneOutcome::Tuned),
            Err(ClientError::Daemon { message, .. }) if unknown_command(&message) => Ok(TuneOutcome::Unknown),
            Err(e) => Err(e),
        }
    }

    /// `dump file header`: the file's XML (`header`: `dtd`, `xsd` or
    /// `none`) copied to `out` as it arrives.
    pub fn dump(
        &mut self,
        file: &str,
        header: &str,
        out: &mut dyn Write,
    ) -> Result<DumpOutcome, ClientError> {
        let path = self.daemon_path(file)?;
        match self.request_stream(&["dump", &path, header], out)? {
            Streamed::Done => Ok(DumpOutcome::Dumped),
            Streamed::Refused(line) => {
                let message = line.split_once(' ').map_or(line.as_str(), |(_, m)| m);
                if unknown_command(message) {
                    return Ok(DumpOutcome::Unknown);
                }
                Err(ClientError::Stream(format!("failed to dump: {line}")))
            }
        }
    }

    /// The name to send for `file` (see the module doc).
    pub fn daemon_path(&self, file: &str) -> Result<String, ClientError> {
        daemon_path(is_local(self.address()), file, std::env::var(ENV_STRIP_PATH).ok().as_deref())
    }

    /// `UPDATE file values...`.
    pub fn update(&mut self, file: &str, values: &[String]) -> Result<(), ClientError> {
        let path = self.daemon_path(file)?;
        let now = now_secs();
        let values: Vec<String> = values
            .iter()
            .map(|v| match v.strip_prefix("N:") {
                Some(rest) => format!("{now}:{rest}"),
                None => v.clone(),
            })
            .collect();
        let mut fields = vec!["update", path.as_str()];
        fields.extend(values.iter().map(String::as_str));
        self.request(&fields).map(|_| ())
    }

    /// `FLUSH file`: returns once the daemon wrote the file's values.
    pub fn flush(&mut self, file: &str) -> Result<(), ClientError> {
        let path = self.daemon_path(file)?;
        self.request(&["flush", &path]).map(|_| ())
    }

    /// `FORGET file`: the daemon drops the file's pending values.
    pub fn forget(&mut self, file: &str) -> Result<(), ClientError> {
        let path = self.daemon_path(file)?;
        self.request(&["forget", &path]).map(|_| ())
    }

    /// `FLUSHALL`.
    pub fn flush_all(&mut self) -> Result<(), ClientError> {
        self.request(&["flushall"]).map(|_| ())
    }

    /// `LAST file`: the status line's number.
    pub fn last(&mut self, file: &str) -> Result<i64, ClientError> {
        let path = self.daemon_path(file)?;
        let r = self.request(&["last", &path])?;
        Ok(atol(r.message.as_bytes()))
    }

    /// `FIRST file rra_index`.
    pub fn first(&mut self, file: &str, rra_index: i32) -> Result<i64, ClientError> {
        let path = self.daemon_path(file)?;
        // librrd prints the int with %lu.
        let index = (rra_index as i64 as u64).to_string();
        let r = self.request(&["first", &path, &index])?;
        Ok(atol(r.message.as_bytes()))
    }

    /// `LIST [RECURSIVE] dir`: the names, one per reply line.
    pub fn list(&mut self, recursive: bool, dir: &str) -> Result<Vec<String>, ClientError> {
        let mut fields = vec!["list"];
        if recursive {
            fields.push("RECURSIVE");
        }
        fields.push(dir);
        Ok(self.request(&fields)?.lines)
    }

    /// `INFO file`.
    pub fn info(&mut self, file: &str) -> Result<Vec<InfoItem>, ClientError> {
        let path = self.daemon_path(file)?;
        let r = self.request(&["info", &path])?;
        parse_info(&r.lines)
    }

    /// `CREATE ...` with the options in librrd's order.
    pub fn create(&mut self, req: &CreateRequest) -> Result<(), ClientError> {
        let path = self.daemon_path(&req.file)?;
        let mut owned: Vec<String> = vec!["create".into(), path];
        if let Some(start) = req.start {
            owned.push("-b".into());
            owned.push((start as u64).to_string());
        }
        owned.push("-s".into());
        owned.push(req.step_secs.to_string());
        if req.no_overwrite {
            owned.push("-O".into());
        }
        for s in &req.sources {
            owned.push("-r".into());
            owned.push(s.clone());
        }
        if let Some(t) = &req.template {
            owned.push("-t".into());
            owned.push(t.clone());
        }
        owned.extend(req.definitions.iter().cloned());
        let fields: Vec<&str> = owned.iter().map(String::as_str).collect();
        self.request(&fields).map(|_| ())
    }

    /// `FETCH file CF [start [end]]`: times are sent only when positive.
    pub fn fetch(&mut self, file: &str, cf: &str, start: i64, end: i64) -> Result<FetchReply, ClientError> {
        let path = self.daemon_path(file)?;
        let (s, e) = (start.to_string(), end.to_string());
        let mut fields = vec!["FETCH", path.as_str(), cf];
        if start > 0 {
            fields.push(&s);
            if end > 0 {
                fields.push(&e);
            }
        }
        let r = self.request(&fields)?;
        parse_fetch(&r.lines)
    }
}

/// librrd's `get_path`, with the environment passed in.
pub fn daemon_path(local: bool, file: &str, strip: Option<&str>) -> Result<String, ClientError> {
    if local {
        if file.is_empty() {
            return Err(ClientError::Silent);
        }
        if let Ok(p) = std::fs::canonicalize(file) {
            return Ok(p.to_string_lossy().into_owned());
        }
        // Not there (yet): resolve the directory, keep the last component.
        // A name whose only slash is the first resolves "." (librrd does).
        let (dir, tail) = match file.rfind('/') {
            None => (".", format!("/{file}")),
            Some(0) => (".", file.to_string()),
            Some(i) => (&file[..i], file[i..].to_string()),
        };
        return match std::fs::canonicalize(dir) {
            Ok(d) => Ok(format!("{}{tail}", d.to_string_lossy())),
            Err(e) => Err(ClientError::Realpath { path: file.to_string(), reason: io_text(&e) }),
        };
    }
    if file.starts_with('/') {
        return match strip {
            Some(prefix) if file.starts_with(prefix) => {
                Ok(file[prefix.len()..].trim_start_matches('/').into())
            }
            Some(_) => Err(ClientError::Silent),
            None => Err(ClientError::AbsolutePath),
        };
    }
    Ok(file.to_string())
}

/// Reads INFO lines as librrd does: the key ends at the first space, the
/// type is `atoi` of what follows, the value is after the next space. A
/// line without a type or without a value ends the list there.
pub fn parse_info(lines: &[String]) -> Result<Vec<InfoItem>, ClientError> {
    let mut items = Vec::new();
    for line in lines {
        let b = line.as_bytes();
        let Some(sp) = b.iter().position(|&c| c == b' ') else { break };
        let key = &line[..sp];
        let rest = &b[sp + 1..];
        if rest.is_empty() {
            break;
        }
        let kind = atoi(rest);
        let Some(sp2) = rest.iter().position(|&c| c == b' ') else { break };
        let value = &rest[sp2 + 1..];
        if value.is_empty() {
            break;
        }
        let value = match kind {
            0 if value[0] == b'N' => InfoValue::Value(f64::NAN),
            0 => InfoValue::Value(atof(value)),
            1 => InfoValue::Count(atol(value) as u64),
            2 => InfoValue::Str(String::from_utf8_lossy(value).trim_end_matches(['\r', '\n']).to_string()),
            3 => InfoValue::Int(atoi(value)),
            4 => return Err(ClientError::Info("BLOB objects are not supported".into())),
            other => return Err(ClientError::Info(format!("Unsupported info type {other}"))),
        };
        items.push(InfoItem { key: key.to_string(), value });
    }
    Ok(items)
}

/// `Key: value` (librrd's `parse_header`): the key before the first colon,
/// the value after it and any spaces or tabs, never empty.
fn header(line: &str) -> Option<(&str, &str)> {
    let colon = line.find(':')?;
    let value = line[colon + 1..].trim_start_matches([' ', '\t']);
    (!value.is_empty()).then_some((&line[..colon], value))
}

/// A numeric header: `strtol` base 0 that must read something without
/// overflowing.
fn numeric_header(line: &str, name: &str) -> Result<i64, ClientError> {
    let bad = || ClientError::Fetch(format!("Unable to parse header `{name}'"));
    let (key, value) = header(line).ok_or_else(bad)?;
    let long = strtol(value, 0);
    if long.consumed == 0 || long.overflow {
        return Err(bad());
    }
    let v = long.value;
    if !key.eq_ignore_ascii_case(name) {
        return Err(ClientError::Fetch(format!("Unexpected header line: Expected `{name}', got `{key}'")));
    }
    Ok(v)
}

/// Exactly `count` whitespace-separated fields (more are ignored, as
/// librrd's split stops at `count`).
fn fields(value: &str, count: usize) -> Option<Vec<&str>> {
    let f: Vec<&str> = value.split([' ', '\t', '\r', '\n']).filter(|s| !s.is_empty()).take(count).collect();
    (f.len() == count).then_some(f)
}

/// Reads a FETCH reply's lines as librrd's `rrdc_fetch` does, with its
/// checks and its messages.
pub fn parse_fetch(lines: &[String]) -> Result<FetchReply, ClientError> {
    let premature = || ClientError::Fetch("Premature end of response packet".into());
    if lines.is_empty() {
        return Err(premature());
    }
    let version = numeric_header(&lines[0], "FlushVersion")? as u64;
    if version != 1 {
        return Err(ClientError::Fetch(format!("Don't know how to handle flush format version {version}.")));
    }
    if lines.len() < 6 {
        return Err(premature());
    }
    let start = numeric_header(&lines[1], "Start")?;
    let end = numeric_header(&lines[2], "End")?;
    if start >= end {
        return Err(ClientError::Fetch(format!(
            "Malformed start and end times: start = {}; end = {};",
            start as u64, end as u64
        )));
    }
    let step = numeric_header(&lines[3], "Step")? as u64;
    if step < 1 {
        return Err(ClientError::Fetch(format!("Invalid number for Step: {step}")));
    }
    let ds_count = numeric_header(&lines[4], "DSCount")? as u64;
    if ds_count < 1 {
        return Err(ClientError::Fetch(format!("Invalid number for DSCount: {ds_count}")));
    }
    let names_bad = || ClientError::Fetch("Unable to parse header `DSName'".into());
    let (key, value) = header(&lines[5]).ok_or_else(names_bad)?;
    // A count no reply could carry is as unparsable as a short list.
    let want = usize::try_from(ds_count).ok().filter(|&n| n <= lines[5].len()).ok_or_else(names_bad)?;
    let names = fields(value, want).ok_or_else(names_bad)?;
    if !key.eq_ignore_ascii_case("DSName") {
        return Err(ClientError::Fetch(format!("Unexpected header line: Expected `DSName', got `{key}'")));
    }
    let rows = ((end - start) as u64) / step;
    if rows == 0 {
        return Err(ClientError::Fetch("No data returned or headers invalid.".into()));
    }
    let expected = 6u64.saturating_add(rows);
    if lines.len() as u64 != expected {
        return Err(ClientError::Fetch(format!("Got {} lines, expected {expected}", lines.len())));
    }
    let mut data = Vec::new();
    for line in &lines[6..] {
        let bad = || ClientError::Fetch("Cannot parse value line".into());
        let (stamp, value) = header(line).ok_or_else(bad)?;
        let values = fields(value, want).ok_or_else(bad)?;
        let stamp = strtol(stamp, 10);
        if stamp.consumed == 0 || stamp.overflow {
            return Err(bad());
        }
        for v in values {
            data.push(strtod_whole(v.as_bytes()).ok_or_else(bad)?);
        }
    }
    Ok(FetchReply {
        start,
        end,
        step_secs: step,
        ds_names: names.into_iter().map(String::from).collect(),
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    #[test]
    fn local_daemons_get_real_paths() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(real.join("a.rrd"), b"x").unwrap();
        std::os::unix::fs::symlink(real.join("a.rrd"), real.join("l.rrd")).unwrap();
        let r = real.display().to_string();
        let p = |f: &str| daemon_path(true, f, None);
        assert_eq!(p(&format!("{r}/l.rrd")).unwrap(), format!("{r}/a.rrd"));
        assert_eq!(p(&format!("{r}/new.rrd")).unwrap(), format!("{r}/new.rrd"));
        assert!(p(&format!("{r}/sub/../new.rrd")).unwrap_err().to_string().starts_with("realpath("));
        assert_eq!(
            p("/no/such/dir/x.rrd").unwrap_err().to_string(),
            "realpath(/no/such/dir/x.rrd): No such file or directory"
        );
        assert_eq!(p(""), Err(ClientError::Silent));
        // librrd resolves "." for a missing file at the root: the cwd.
        let cwd = std::env::current_dir().unwrap().display().to_string();
        assert_eq!(p("/surely-not-here.rrd").unwrap(), format!("{cwd}/surely-not-here.rrd"));
    }

    #[test]
    fn remote_daemons_get_names_as_given() {
        assert_eq!(daemon_path(false, "a/b.rrd", None).unwrap(), "a/b.rrd");
        assert_eq!(daemon_path(false, "/x/a.rrd", None), Err(ClientError::AbsolutePath));
        assert_eq!(daemon_path(false, "/x//a.rrd", Some("/x")).unwrap(), "a.rrd");
        assert_eq!(daemon_path(false, "/y/a.rrd", Some("/x")), Err(ClientError::Silent));
    }

    #[test]
    fn info_lines_read_like_librrd() {
        let got = parse_info(&lines(
            "filename 2 /t/b.rrd\nstep 1 300\nds[x].min 0 NaN\nds[x].value 0 5.0000000000e+02\n\
             rra[1].cdp_prep[0].value 0 -inf\nx 3 -7\nds[x].last_ds 2 \nafter 1 1",
        ))
        .unwrap();
        assert_eq!(got.len(), 6, "an empty value ends the list");
        assert_eq!(got[0].value, InfoValue::Str("/t/b.rrd".into()));
        assert_eq!(got[1].value, InfoValue::Count(300));
        assert!(matches!(got[2].value, InfoValue::Value(v) if v.is_nan()));
        assert_eq!(got[3].value, InfoValue::Value(500.0));
        assert_eq!(got[4].value, InfoValue::Value(f64::NEG_INFINITY));
        assert_eq!(got[5].value, InfoValue::Int(-7));
        assert_eq!(
            parse_info(&lines("a 4 3")).unwrap_err().to_string(),
            "rrdc_info: BLOB objects are not supported"
        );
        assert_eq!(
            parse_info(&lines("a 9 3")).unwrap_err().to_string(),
            "rrdc_info: Unsupported info type 9"
        );
    }

    const GOOD: &str = "FlushVersion: 1\nStart: 999999900\nEnd: 1000000500\nStep: 300\nDSCount: 2\n\
                        DSName: x y\n1000000200: 1.00000000000000000e+00 -nan\n\
                        1000000500: 2.33333333333333348e+00 6.66666666666666709e-03";

    #[test]
    fn fetch_replies_parse_with_librrds_checks() {
        let r = parse_fetch(&lines(GOOD)).unwrap();
        assert_eq!((r.start, r.end, r.step_secs), (999_999_900, 1_000_000_500, 300));
        assert_eq!(r.ds_names, ["x", "y"]);
        assert_eq!(r.data.len(), 4);
        assert!(r.data[1].is_nan() && r.data[1].is_sign_negative());
        let err = |text: &str| parse_fetch(&lines(text)).unwrap_err().to_string();
        assert_eq!(err(""), "rrdc_fetch: Premature end of response packet");
        assert_eq!(err("FlushVersion: 2"), "rrdc_fetch: Don't know how to handle flush format version 2.");
        assert_eq!(
            err(&GOOD.replace("Start", "Begin")),
            "rrdc_fetch: Unexpected header line: Expected `Start', got `Begin'"
        );
        assert_eq!(err(&GOOD.replace("Step: 300", "Step: x")), "rrdc_fetch: Unable to parse header `Step'");
        assert_eq!(
            err(&GOOD.replace("DSName: x y", "DSName: x")),
            "rrdc_fetch: Unable to parse header `DSName'"
        );
        assert_eq!(err(&GOOD.replace("-nan", "oops")), "rrdc_fetch: Cannot parse value line");
        let short: Vec<String> = lines(GOOD)[..7].to_vec();
        assert_eq!(parse_fetch(&short).unwrap_err().to_string(), "rrdc_fetch: Got 7 lines, expected 8");
        assert_eq!(
            err(&GOOD.replace("End: 1000000500", "End: 999999900")),
            "rrdc_fetch: Malformed start and end times: start = 999999900; end = 999999900;"
        );
    }
}
