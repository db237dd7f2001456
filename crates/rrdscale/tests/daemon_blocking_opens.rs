//! Opens that could block: without `-B`, a client naming a FIFO (or any
//! file that is not a regular file) gets an error line at once, and
//! hundreds of such clients leave every other read answering promptly.
//! rrdcached answers them the same way; an open that waits for a writer
//! would take a blocking thread per client until none is left.

mod daemon_common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use daemon_common::{create_rrd, require_tools, temp_dir, Daemon, Kind};

const T0: i64 = 1_000_000_000;

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("running mkfifo");
    assert!(status.success());
}

#[test]
fn reads_of_a_fifo_are_refused_at_once_and_block_no_one() {
    require_tools();
    let (_t, dir) = temp_dir();
    let fifo = dir.join("fifo.rrd");
    mkfifo(&fifo);
    create_rrd(&dir.join("real.rrd"), T0);
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let mut c = d.client();
    for cmd in ["INFO", "LAST", "FIRST", "FETCH"] {
        let line = match cmd {
            "FIRST" => format!("FIRST {} 0", fifo.display()),
            "FETCH" => format!("FETCH {} AVERAGE", fifo.display()),
            _ => format!("{cmd} {}", fifo.display()),
        };
        let started = Instant::now();
        let reply = c.call(&line);
        assert!(reply.starts_with("-1 ") && reply.contains("Not a regular file"), "{line}: {reply}");
        assert!(started.elapsed() < Duration::from_secs(2), "{line} took {:?}", started.elapsed());
    }
    let create = format!("CREATE new.rrd -r {} DS:x:GAUGE:600:U:U RRA:AVERAGE:0.5:1:20", fifo.display());
    let reply = c.call(&create);
    assert!(reply.starts_with("-1 "), "{reply}");
    // Many clients at once, each naming the FIFO and not waiting.
    let clients: Vec<UnixStream> = (0..600)
        .map(|_| {
            let mut s = UnixStream::connect(&d.socket).unwrap();
            s.write_all(format!("INFO {}\n", fifo.display()).as_bytes()).unwrap();
            s
        })
        .collect();
    let started = Instant::now();
    let reply = c.call(&format!("LAST {}", dir.join("real.rrd").display()));
    assert_eq!(reply, format!("0 {T0}\n"));
    assert!(started.elapsed() < Duration::from_secs(2), "LAST took {:?}", started.elapsed());
    for s in &clients {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line).unwrap();
        assert!(line.starts_with("-1 "), "{line}");
    }
    d.stop();
}

/// CREATE replaces a regular file, never a FIFO or a device node
/// (rrdcached renames its new file over whatever is there).
#[test]
fn create_refuses_to_replace_what_is_not_a_regular_file() {
    require_tools();
    let (_t, dir) = temp_dir();
    let fifo = dir.join("target.rrd");
    mkfifo(&fifo);
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let mut c = d.client();
    let reply = c.call(&format!("CREATE {} DS:x:GAUGE:600:U:U RRA:AVERAGE:0.5:1:20", fifo.display()));
    assert_eq!(reply, format!("-1 Not a regular file: {}\n", fifo.display()));
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    d.stop();
}
