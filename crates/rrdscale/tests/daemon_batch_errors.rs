//! A BATCH lists every error, as rrdcached does, so that a client can tell
//! which of its commands failed, however many did (before: the first
//! 100,000, then `0 N more errors not shown`).

mod daemon_common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use daemon_common::{require_tools, temp_dir, Daemon, Kind};

#[test]
fn a_batch_with_more_than_100000_errors_lists_them_all() {
    require_tools();
    let (_t, dir) = temp_dir();
    let d = Daemon::start(Kind::Ours, &dir, &[]);
    let n = 150_000u64;
    let s = UnixStream::connect(&d.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut input = String::from("BATCH\n");
    for i in 0..n {
        // Every command fails: UPDATE of a missing file, and PING, which a
        // BATCH does not allow.
        if i % 2 == 0 {
            input.push_str(&format!("UPDATE missing{}.rrd 1000000300:1\n", i % 7));
        } else {
            input.push_str("PING\n");
        }
    }
    input.push_str(".\n");
    let writer = {
        let mut w = s.try_clone().unwrap();
        std::thread::spawn(move || w.write_all(input.as_bytes()).unwrap())
    };
    let mut r = BufReader::new(&s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, "0 Go ahead.  End with dot '.' on its own line.\n");
    line.clear();
    r.read_line(&mut line).unwrap();
    let failing = n;
    assert_eq!(line, format!("{failing} errors\n"));
    let mut numbers = Vec::new();
    for _ in 0..failing {
        line.clear();
        r.read_line(&mut line).unwrap();
        numbers.push(line.split(' ').next().unwrap().parse::<u64>().unwrap());
    }
    writer.join().unwrap();
    assert!(numbers.iter().copied().eq(1..=n), "every command's number, in order");
    d.stop();
}
