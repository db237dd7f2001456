//! `rrdscale fincore [--pages] [--summary] [--json] [-n] [-r] [--all-files]
//! FILE|DIR...`: how much of each file is in the page cache, the LISA
//! paper's `fincore` tool.
//!
//! Output (text, one line per file, after a heading unless `-n`):
//!
//! ```text
//! RES_PAGES     PAGES    RES_BYTES FILE
//!         3        27        12288 a.rrd
//! ```
//!
//! resident pages, pages in the file, resident bytes (resident pages times
//! the page size, as util-linux `fincore` counts its RES column), file name
//! last so names with spaces stay parseable. `--pages` adds a RESIDENT
//! column before the name with the resident page numbers as ranges (`0-3,17`,
//! `-` for none). `--summary` prints, instead of the per-file lines, the
//! totals and a histogram of resident pages per file with cumulative
//! percentages (the paper's Figure 12). `--json` prints the same as one JSON
//! object (`{"files":[...]}` or `{"summary":{...}}`).
//!
//! Directories among the operands are walked recursively (`-r` says so
//! explicitly; it is the default), taking regular files whose names end in
//! `.rrd`, or every regular file with `--all-files`; entries are visited in
//! name order and symlinks to directories are not followed.
//!
//! A file that cannot be examined (missing, not a regular file, empty,
//! unreadable) gets one line on stderr; the others are still examined and the
//! command fails at the end. Empty files are such failures: they have no
//! page to map (util-linux prints a zero line for them instead).
//!
//! Deliberately absent: reading file data. Each file costs open, fstat,
//! mmap, mincore, munmap, close, so hundreds of thousands of files take
//! seconds and do not disturb the cache being measured.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use rrd_engine::pagecache;
use rrd_lang::ctext::io_text as os_message;

use rrd_cli::opts;

const HELP: &str = "\
Usage: rrdscale fincore [options] FILE|DIR...
Pages of each file resident in the page cache (mmap + mincore; no data is read).

  -p, --pages        add a RESIDENT column with the resident page numbers (0-3,17)
  -s, --summary      print totals and a histogram of resident pages per file
                     instead of one line per file
  -J, --json         print one JSON object instead of text
  -n, --noheadings   no heading line
  -r, --recursive    walk directory operands (the default for directories)
  -a, --all-files    in directories, take every regular file, not only *.rrd
  -h, --help         this text

Columns: RES_PAGES PAGES RES_BYTES [RESIDENT] FILE, where RES_BYTES is
RES_PAGES times the page size (util-linux fincore's RES). Files that cannot
be examined (missing, empty, not regular) are reported on stderr and make the
exit status 1; the other files are still examined.
";

/// One examined file.
struct Report {
    resident_pages: u64,
    pages: u64,
    size_bytes: u64,
    /// The resident page map, kept only when `--pages` asks for it.
    resident: Option<Vec<bool>>,
}

/// Resident pages of one path, or a sentence saying why there are none.
fn examine(path: &Path, keep_map: bool) -> std::result::Result<Report, String> {
    let (file, meta) = open_regular(path)?;
    if meta.len() == 0 {
        return Err("the file is empty, so it has no pages to examine".to_string());
    }
    let map = pagecache::resident_pages(&file).map_err(|e| format!("cannot map: {}", os_message(&e)))?;
    Ok(Report {
        resident_pages: map.iter().filter(|&&r| r).count() as u64,
        pages: map.len() as u64,
        size_bytes: meta.len(),
        resident: keep_map.then_some(map),
    })
}

/// Opens `path` for reading if it is a regular file, or says why not
/// (`cannot open: …`, `cannot stat: …`, `not a regular file`). O_NONBLOCK:
/// a FIFO among the operands must not hang the walk. Shared with `fadvise`.
pub(super) fn open_regular(path: &Path) -> std::result::Result<(fs::File, fs::Metadata), String> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot open: {}", os_message(&e)))?;
    let meta = file.metadata().map_err(|e| format!("cannot stat: {}", os_message(&e)))?;
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    Ok((file, meta))
}

/// Expands operands into the files to examine, in order, calling `file` for
/// each and `fail` for each path that could not be walked. Shared with
/// `fadvise`.
pub(super) fn walk_operands(
    operands: &[String],
    all_files: bool,
    file: &mut dyn FnMut(PathBuf) -> Result<()>,
    fail: &mut dyn FnMut(&Path, String),
) -> Result<()> {
    for operand in operands {
        let path = PathBuf::from(operand);
        match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => walk_dir(&path, all_files, file, fail)?,
            // Anything else, missing files included, is examined so that the
            // error names what went wrong with that file.
            _ => file(path)?,
        }
    }
    Ok(())
}

fn walk_dir(
    dir: &Path,
    all_files: bool,
    file: &mut dyn FnMut(PathBuf) -> Result<()>,
    fail: &mut dyn FnMut(&Path, String),
) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            fail(dir, format!("cannot read the directory: {}", os_message(&e)));
            return Ok(());
        }
    };
    let mut children = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => children.push(entry),
            Err(e) => fail(dir, format!("cannot read the directory: {}", os_message(&e))),
        }
    }
    children.sort_by_key(|e| e.file_name());
    for entry in children {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        let wanted = all_files || path.extension().is_some_and(|x| x == "rrd");
        if kind.is_dir() {
            walk_dir(&path, all_files, file, fail)?;
        } else if kind.is_file() && wanted {
            file(path)?;
        } else if kind.is_symlink() && wanted {
            // A link to a file is taken; a link to a directory is not
            // followed, so link cycles cannot loop the walk.
            if fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                file(path)?;
            }
        }
    }
    Ok(())
}

/// JSON string literal for a path (lossy for names that are not UTF-8).
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Totals and the resident-pages histogram over the examined files.
#[derive(Default)]
struct Summary {
    files: u64,
    pages: u64,
    resident_pages: u64,
    /// resident pages -> number of files with that many.
    histogram: BTreeMap<u64, u64>,
}

impl Summary {
    fn add(&mut self, r: &Report) {
        self.files += 1;
        self.pages += r.pages;
        self.resident_pages += r.resident_pages;
        *self.histogram.entry(r.resident_pages).or_default() += 1;
    }

    fn percent(part: u64, whole: u64) -> f64 {
        if whole == 0 {
            0.0
        } else {
            100.0 * part as f64 / whole as f64
        }
    }

    fn write_text(&self, out: &mut dyn Write, page: u64, failed: u64, headings: bool) -> io::Result<()> {
        writeln!(out, "files           {}", self.files)?;
        if failed > 0 {
            writeln!(out, "failed          {failed}")?;
        }
        writeln!(out, "pages           {}", self.pages)?;
        writeln!(
            out,
            "resident pages  {} ({:.1}% of pages, {:.2} per file)",
            self.resident_pages,
            Self::percent(self.resident_pages, self.pages),
            if self.files == 0 { 0.0 } else { self.resident_pages as f64 / self.files as f64 }
        )?;
        writeln!(out, "resident bytes  {}", self.resident_pages * page)?;
        writeln!(out, "page size       {page}")?;
        if headings {
            writeln!(out, "{:>9} {:>9} {:>8} {:>10}", "RES_PAGES", "FILES", "PERCENT", "CUMULATIVE")?;
        }
        let mut cumulative = 0;
        for (&resident, &files) in &self.histogram {
            cumulative += files;
            writeln!(
                out,
                "{:>9} {:>9} {:>7.2}% {:>9.2}%",
                resident,
                files,
                Self::percent(files, self.files),
                Self::percent(cumulative, self.files)
            )?;
        }
        Ok(())
    }

    fn write_json(&self, out: &mut dyn Write, page: u64, failed: u64) -> io::Result<()> {
        let histogram: Vec<String> =
            self.histogram.iter().map(|(r, f)| format!("{{\"resident_pages\":{r},\"files\":{f}}}")).collect();
        writeln!(
            out,
            "{{\"summary\":{{\"files\":{},\"failed\":{failed},\"pages\":{},\"resident_pages\":{},\
             \"resident_bytes\":{},\"page_size\":{page},\"histogram\":[{}]}}}}",
            self.files,
            self.pages,
            self.resident_pages,
            self.resident_pages * page,
            histogram.join(",")
        )
    }
}

struct Options {
    pages: bool,
    summary: bool,
    json: bool,
    headings: bool,
}

/// Writes one file's line (or JSON element).
fn write_report(
    out: &mut dyn Write,
    o: &Options,
    path: &Path,
    r: &Report,
    page: u64,
    first: bool,
) -> io::Result<()> {
    let ranges = r.resident.as_deref().map(|m| pagecache::format_ranges(&pagecache::resident_ranges(m)));
    if o.json {
        let ranges_field = ranges.map(|s| format!(",\"resident\":\"{s}\"")).unwrap_or_default();
        write!(
            out,
            "{}{{\"file\":{},\"resident_pages\":{},\"pages\":{},\"resident_bytes\":{},\"size_bytes\":{}{}}}",
            if first { "\n" } else { ",\n" },
            json_string(&path.to_string_lossy()),
            r.resident_pages,
            r.pages,
            r.resident_pages * page,
            r.size_bytes,
            ranges_field
        )
    } else {
        write!(out, "{:>9} {:>9} {:>12} ", r.resident_pages, r.pages, r.resident_pages * page)?;
        if let Some(ranges) = ranges {
            write!(out, "{ranges} ")?;
        }
        writeln!(out, "{}", path.display())
    }
}

fn fincore(args: &[String], out: &mut dyn Write) -> Result<()> {
    let parsed = opts::parse(
        args,
        &[
            opts::flag(Some('p'), "pages"),
            opts::flag(Some('s'), "summary"),
            opts::flag(Some('J'), "json"),
            opts::flag(Some('n'), "noheadings"),
            opts::flag(Some('r'), "recursive"),
            opts::flag(Some('a'), "all-files"),
            opts::flag(Some('h'), "help"),
        ],
    )?;
    if parsed.has("help") {
        out.write_all(HELP.as_bytes())?;
        return Ok(());
    }
    if parsed.operands.is_empty() {
        bail!("fincore: no files given (see 'rrdscale fincore --help')");
    }
    let o = Options {
        pages: parsed.has("pages"),
        summary: parsed.has("summary"),
        json: parsed.has("json"),
        headings: !parsed.has("noheadings"),
    };
    let page = pagecache::page_size();
    let per_file = !o.summary;
    if per_file && o.json {
        write!(out, "{{\"files\":[")?;
    } else if per_file && o.headings {
        write!(out, "{:>9} {:>9} {:>12} ", "RES_PAGES", "PAGES", "RES_BYTES")?;
        if o.pages {
            write!(out, "RESIDENT ")?;
        }
        writeln!(out, "FILE")?;
    }
    let mut summary = Summary::default();
    // Failures come from two places, the walk (unreadable directories) and
    // the examination of each file; each callback keeps its own count.
    let mut walk_failed = 0u64;
    let mut examine_failed = 0u64;
    let mut first = true;
    walk_operands(
        &parsed.operands,
        parsed.has("all-files"),
        &mut |path| {
            match examine(&path, o.pages && per_file) {
                Ok(report) => {
                    summary.add(&report);
                    if per_file {
                        write_report(out, &o, &path, &report, page, first)?;
                        first = false;
                    }
                }
                Err(why) => {
                    eprintln!("rrdscale fincore: {}: {why}", path.display());
                    examine_failed += 1;
                }
            }
            Ok(())
        },
        &mut |path, why| {
            eprintln!("rrdscale fincore: {}: {why}", path.display());
            walk_failed += 1;
        },
    )?;
    let failed = walk_failed + examine_failed;
    if per_file && o.json {
        writeln!(out, "{}]}}", if first { "" } else { "\n" })?;
    }
    if o.summary {
        if o.json {
            summary.write_json(out, page, failed)?;
        } else {
            summary.write_text(out, page, failed, o.headings)?;
        }
    }
    if failed > 0 {
        bail!("fincore: {failed} of {} files or directories could not be examined", failed + summary.files);
    }
    Ok(())
}

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    match fincore(args, out) {
        // `rrdscale fincore dir | head` stops reading early; that is not an
        // error of the files examined.
        Err(e) if e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) => {
            Ok(())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;

    #[test]
    fn json_strings_escape_quotes_and_controls() {
        assert_eq!(json_string("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
    }

    #[test]
    fn histogram_is_cumulative_over_files() {
        let mut s = Summary::default();
        for (r, p) in [(0, 4), (0, 4), (2, 4), (4, 4)] {
            s.add(&Report { resident_pages: r, pages: p, size_bytes: p * 4096, resident: None });
        }
        let mut text = Vec::new();
        s.write_text(&mut text, 4096, 0, true).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("files           4\n"), "{text}");
        assert!(text.contains("resident pages  6 (37.5% of pages, 1.50 per file)"), "{text}");
        assert!(text.contains("        0         2   50.00%     50.00%\n"), "{text}");
        assert!(text.contains("        2         1   25.00%     75.00%\n"), "{text}");
        assert!(text.contains("        4         1   25.00%    100.00%\n"), "{text}");
    }

    #[test]
    fn walk_takes_rrd_files_in_name_order_and_reports_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir_all(d.join("sub/deeper")).unwrap();
        for name in ["b.rrd", "a.rrd", "notes.txt", "sub/c.rrd", "sub/deeper/d.rrd"] {
            File::create(d.join(name)).unwrap();
        }
        let missing = d.join("missing.rrd").to_string_lossy().into_owned();
        let mut seen = Vec::new();
        let mut fails = 0;
        walk_operands(
            &[d.to_string_lossy().into_owned(), missing],
            false,
            &mut |p| {
                seen.push(p);
                Ok(())
            },
            &mut |_, _| fails += 1,
        )
        .unwrap();
        let rel: Vec<String> =
            seen.iter().map(|p| p.strip_prefix(d).unwrap_or(p).to_string_lossy().into_owned()).collect();
        assert_eq!(rel, vec!["a.rrd", "b.rrd", "sub/c.rrd", "sub/deeper/d.rrd", "missing.rrd"]);
        assert_eq!(fails, 0, "a missing operand is reported by the examination, not the walk");
    }
}
