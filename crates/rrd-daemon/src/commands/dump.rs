//! `DUMP <file> [dtd|xsd|none]` (rrdcached 1.9): the file's XML dump,
//! streamed, then the connection closed.
//!
//! The reply is rrdcached 1.9's: no status line on success, the XML as
//! `rrdtool dump` prints it, and the end of the connection marks its end
//! (librrd's `rrdc_dump` reads until the daemon closes, and takes a reply
//! that does not start with `<` as an error line). The file's pending
//! values are written first. Errors are status lines and the connection
//! stays open: `-1 <file>: failed to stat: <why>`, `-1 <file>: failed to
//! flush`, `-1 <file>: failed to relay dump: <why>` (the file as the client
//! named it).
//!
//! Ours: the header the client asks for is given (librrd sends `dtd`,
//! `xsd` or `none`; `-h X` and `--header X` are taken too; rrdcached 1.9
//! always sends the DTD one), an unknown one is the usage error; the file
//! is opened through the `-B` confinement (rrdcached 1.9 checks nothing
//! for DUMP). The XML is produced by a blocking thread in pieces of
//! [`PIECE_BYTES`], at most [`PIECES_AHEAD`] of them waiting for the
//! client: memory stays bounded whatever the file's size.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use rrd_engine::dump::{dump, DumpHeader, DumpOptions};
use rrd_engine::Rrd;
use rrd_protocol::{Command, Reply};
use tokio::sync::mpsc;

use super::flush::{flush_failure, flush_key};
use super::{access_denied, blocking, syntax_error, Args};
use crate::paths::Paths;
use crate::state::{Daemon, Listening};

/// The size of one piece of XML handed to the connection.
pub const PIECE_BYTES: usize = 256 * 1024;
/// Pieces rendered ahead of the client.
pub const PIECES_AHEAD: usize = 2;

/// A dump being rendered: its pieces, in order, until the channel closes.
pub struct DumpStream {
    pieces: mpsc::Receiver<Vec<u8>>,
}

impl DumpStream {
    /// The next piece; `None` at the end (or when rendering failed, which
    /// is logged).
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        self.pieces.recv().await
    }
}

/// Hands what is written to the connection a piece at a time; an error
/// once the connection stopped taking them.
struct PieceWriter {
    buf: Vec<u8>,
    tx: mpsc::Sender<Vec<u8>>,
}

impl PieceWriter {
    fn send(&mut self) -> std::io::Result<()> {
        let piece = std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE_BYTES));
        self.tx.blocking_send(piece).map_err(|_| std::io::Error::other("the client is gone"))
    }
}

impl Write for PieceWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= PIECE_BYTES {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The header asked for by the fields after the file name.
fn header(rest: &[String]) -> Option<DumpHeader> {
    match rest {
        [] => Some(DumpHeader::Dtd),
        [h] => DumpHeader::parse(h),
        [flag, h] if flag == "-h" || flag == "--header" => DumpHeader::parse(h),
        _ => None,
    }
}

/// Checks the request, writes the file's pending values, opens it and
/// starts rendering; the error reply otherwise.
pub async fn prepare(daemon: &Arc<Daemon>, l: Listening, mut args: Args) -> Result<DumpStream, Reply> {
    let Some(file) = args.next() else { return Err(syntax_error(Command::Dump)) };
    let header = header(&args.rest()).ok_or_else(|| syntax_error(Command::Dump))?;
    let key = daemon.paths_of(&l).resolve(&file).map_err(|d| access_denied(&d.shown))?;
    let (d, k) = (daemon.clone(), key.clone());
    let shown = file.clone();
    blocking(move || check(&d, &k, &shown)).await?;
    if flush_key(daemon, &key).await && flush_failure(daemon, &key).is_some() {
        return Err(Reply::error(format!("{file}: failed to flush")));
    }
    let (d, k) = (daemon.clone(), key.clone());
    let rrd = blocking(move || Rrd::open_in(&d.root, Path::new(&k), false))
        .await
        .map_err(|e| Reply::error(format!("{file}: failed to relay dump: {e}")))?;
    crate::log!(Info, "rrddump request for {key}");
    let (tx, rx) = mpsc::channel(PIECES_AHEAD);
    tokio::task::spawn_blocking(move || {
        let mut out = PieceWriter { buf: Vec::with_capacity(PIECE_BYTES), tx };
        let opts = DumpOptions { header };
        match dump(&rrd, &mut out, &opts).and_then(|()| {
            out.send().map_err(|source| rrd_engine::Error::Io { path: "dump output".into(), source })
        }) {
            Ok(()) => crate::log!(Info, "rrddump request for {key} succeeded"),
            Err(e) => crate::log!(Warning, "rrddump request for {key}: failed to relay dump: {e}"),
        }
    });
    Ok(DumpStream { pieces: rx })
}

/// rrdcached's `stat` of the file: it must exist and be a regular file.
fn check(daemon: &Daemon, key: &str, shown: &str) -> Result<(), Reply> {
    let failed = |why: String| Reply::error(format!("{shown}: failed to stat: {why}"));
    let file = daemon.root.open(Path::new(key), false).map_err(|e| {
        if Paths::is_escape(&e) {
            access_denied(shown)
        } else {
            failed(rrd_lang::ctext::io_text(&e))
        }
    })?;
    let meta = file.metadata().map_err(|e| failed(rrd_lang::ctext::io_text(&e)))?;
    if !meta.is_file() {
        // rrdcached prints errno, which a successful stat left as it was.
        return Err(failed("not a regular file".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_a_word_or_an_option() {
        let h = |v: &[&str]| header(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(h(&[]), Some(DumpHeader::Dtd));
        assert_eq!(h(&["none"]), Some(DumpHeader::None));
        assert_eq!(h(&["xsd"]), Some(DumpHeader::Xsd));
        assert_eq!(h(&["-h", "dtd"]), Some(DumpHeader::Dtd));
        assert_eq!(h(&["--header", "none"]), Some(DumpHeader::None));
        assert_eq!(h(&["html"]), None);
        assert_eq!(h(&["-h"]), None);
        assert_eq!(h(&["dtd", "xsd"]), None);
    }
}
