//! `rrdscale restore`: rrdtool's options and operands, then the engine's
//! restore.
//!
//! `file.xml` may be `-` for standard input (read up to end of file or a
//! Ctrl-Z byte, the end marker of rrdtool's pipe mode); `file.rrd` may be
//! `-` for standard output, as with rrdtool.
//!
//! A gzip-compressed XML file is read as rrdtool reads it (libxml2 opens
//! files through zlib): recognised by its first two bytes whatever its
//! name, one gzip member decompressed, anything after that member ignored.
//! Standard input is never decompressed, as in rrdtool (its pipe-mode
//! reader passes the bytes through); compressed bytes there are refused
//! with a message saying so. The decompressed XML is held in memory, as
//! plain XML is, so it is bounded: at most [`gzip_limit`] bytes, the larger
//! of 1 GiB and 64 times the compressed file's size (real dumps compress
//! 5 to 30 times; a deflate stream can expand about 1000 times, so a small
//! "bomb" file gets 1 GiB at most). Beyond the bound the restore fails and
//! says to decompress the file first (plain XML has no bound);
//! `RRDSCALE_GZIP_XML_MAX=BYTES` sets another bound. xz, which
//! Debian's libxml2 also reads, is refused with a message.
//!
//! Pipe mode holds the standard input lock while it reads commands, so it
//! must call [`run_with_input`] with its reader: [`run`] locks standard
//! input itself (only when the XML comes from `-`).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use flate2::read::GzDecoder;

use anyhow::{anyhow, Result};
use rrd_engine::restore::{self, RestoreError, RestoreOptions};

use crate::opts::{self, flag};

const SPECS: &[opts::Spec] = &[flag(Some('r'), "range-check"), flag(Some('f'), "force-overwrite")];

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    execute(args, out, None)
}

/// As [`run`], reading an XML given as `-` from `input` (up to end of input
/// or a Ctrl-Z byte) instead of locking standard input.
#[allow(dead_code)] // for pipe mode
pub fn run_with_input(args: &[String], out: &mut dyn Write, input: &mut dyn BufRead) -> Result<()> {
    execute(args, out, Some(input))
}

fn execute(args: &[String], out: &mut dyn Write, input: Option<&mut dyn BufRead>) -> Result<()> {
    if args.is_empty() {
        return super::command_help(out, "restore");
    }
    let parsed = opts::parse(args, SPECS)?;
    let options = RestoreOptions {
        range_check: parsed.has("range-check"),
        force_overwrite: parsed.has("force-overwrite"),
    };
    let [xml_path, rrd_path] = parsed.operands.as_slice() else {
        return Err(anyhow!(
            "usage rrdtool restore [--range-check|-r] [--force-overwrite|-f] file.xml file.rrd"
        ));
    };
    let xml = if xml_path == "-" {
        let mut buf = Vec::new();
        let read = match input {
            Some(r) => r.read_until(0x1a, &mut buf),
            None => std::io::stdin().lock().read_until(0x1a, &mut buf),
        };
        read.map_err(|cause| RestoreError::Read { path: "-".into(), cause })?;
        if buf.last() == Some(&0x1a) {
            buf.pop();
        }
        buf
    } else {
        read_xml_file(xml_path)?
    };
    if xml_path == "-" && (xml.starts_with(&GZIP_MAGIC) || xml.starts_with(&XZ_MAGIC)) {
        return Err(anyhow!(
            "reading '-': the XML on standard input is compressed; rrdscale (like rrdtool) decompresses \
             only XML read from a file: give its name instead of '-', or decompress it first"
        ));
    }
    let restored = restore::parse(&xml, options.range_check)?;
    let cur_rows = restored.random_cur_rows();
    if rrd_path == "-" {
        restored.write_to(out, &cur_rows).map_err(|cause| RestoreError::Write { path: "-".into(), cause })?;
    } else {
        restore::write_file(&restored, &cur_rows, Path::new(rrd_path), options.force_overwrite)?;
    }
    Ok(())
}

/// The first bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The first bytes of an xz stream.
const XZ_MAGIC: [u8; 6] = [0xfd, b'7', b'z', b'X', b'Z', 0];

/// Sets [`gzip_limit`] in bytes instead (for a machine with more or less
/// memory to spare, and for tests).
const GZIP_LIMIT_ENV: &str = "RRDSCALE_GZIP_XML_MAX";

/// The most decompressed bytes taken from a gzip file of `compressed`
/// bytes: the larger of 1 GiB and 64 times its size, unless
/// `RRDSCALE_GZIP_XML_MAX` gives a number of bytes.
pub fn gzip_limit(compressed: u64) -> Result<u64> {
    match std::env::var(GZIP_LIMIT_ENV) {
        Err(std::env::VarError::NotPresent) => Ok((1u64 << 30).max(compressed.saturating_mul(64))),
        Ok(v) => v.parse().map_err(|_| anyhow!("{GZIP_LIMIT_ENV} must be a number of bytes, not '{v}'")),
        Err(_) => Err(anyhow!("{GZIP_LIMIT_ENV} must be a number of bytes")),
    }
}

/// The XML in the file at `path`: its bytes, or, for a gzip file, its first
/// member decompressed (within [`gzip_limit`]).
fn read_xml_file(path: &str) -> Result<Vec<u8>> {
    let read_err = |cause| RestoreError::Read { path: path.into(), cause };
    let mut file = File::open(path).map_err(read_err)?;
    let mut head = [0u8; XZ_MAGIC.len()];
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]).map_err(read_err)? {
            0 => break,
            n => got += n,
        }
    }
    let head = &head[..got];
    file.seek(SeekFrom::Start(0)).map_err(read_err)?;
    if head.starts_with(&XZ_MAGIC) {
        return Err(anyhow!(
            "reading '{path}': xz-compressed XML is not supported; decompress it first (xz -d)"
        ));
    }
    let mut xml = Vec::new();
    if !head.starts_with(&GZIP_MAGIC) {
        file.read_to_end(&mut xml).map_err(read_err)?;
        return Ok(xml);
    }
    let limit = gzip_limit(file.metadata().map_err(read_err)?.len())?;
    // One member, as zlib's gzread under libxml2 reads it: what follows
    // the first member is not read.
    GzDecoder::new(BufReader::with_capacity(256 * 1024, file))
        .take(limit.saturating_add(1))
        .read_to_end(&mut xml)
        .map_err(|e| anyhow!("reading '{path}': gzip data: {}", rrd_lang::ctext::io_text(&e)))?;
    if xml.len() as u64 > limit {
        return Err(anyhow!(
            "reading '{path}': the gzip-compressed XML expands to more than {limit} bytes, the most \
             rrdscale decompresses in memory; decompress it first (gunzip) and restore the plain XML"
        ));
    }
    Ok(xml)
}
