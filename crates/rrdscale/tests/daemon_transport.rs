//! How the daemon carries connections: UNIX-socket clients each on a
//! thread of their own up to `--unix-threads`, the others on the shared
//! threads, with the same replies either way; and a stop that does not
//! wait for clients blocked in a read.

mod daemon_common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use daemon_common::{create_rrd, require_tools, temp_dir, Client, Daemon, Kind};

const T0: i64 = 1_000_000_000;

/// Threads of process `pid` serving a connection of their own.
fn connection_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == "rrdscale-conn")
        .count()
}

/// Waits up to 5 s for `f` to hold.
fn eventually(f: impl Fn() -> bool) -> bool {
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(5) {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// One client's session: pipelined lines, a BATCH with a failing command,
/// reads of pending values, a FLUSH and a FETCH; every reply, in order.
fn session(c: &mut Client) -> Vec<String> {
    let mut replies = Vec::new();
    // Three lines in one write: their replies come back in order.
    c.send(&format!("PING\nUPDATE f.rrd {}:1:2\nUPDATE f.rrd {}:3:4", T0 + 300, T0 + 600));
    for _ in 0..3 {
        replies.push(c.read_reply());
    }
    replies.push(c.call("BATCH"));
    c.send(&format!("UPDATE f.rrd {}:5:6", T0 + 900));
    c.send(&format!("UPDATE f.rrd {}:7:8", T0 + 900));
    c.send("NOSUCHCOMMAND");
    replies.push(c.call("."));
    replies.push(c.call("PENDING f.rrd"));
    replies.push(c.call("FLUSH f.rrd"));
    replies.push(c.call(&format!("FETCH f.rrd AVERAGE {} {}", T0, T0 + 900)));
    replies.push(c.call("HELP QUIT"));
    replies
}

/// The same session on a connection's own thread and on the shared
/// threads (`--unix-threads 0`) gets the same replies, byte for byte,
/// and they are the replies rrdcached gives (checked here in part: the
/// values enqueued, the BATCH's errors by command number).
#[test]
fn a_session_gets_the_same_replies_on_either_transport() {
    require_tools();
    let mut transcripts = Vec::new();
    // One directory (FLUSH's reply names the file), started afresh.
    let (_t, dir) = temp_dir();
    for threads in ["256", "0"] {
        let _ = std::fs::remove_dir_all(dir.join("journal"));
        let _ = std::fs::remove_file(dir.join("f.rrd"));
        create_rrd(&dir.join("f.rrd"), T0);
        let d = Daemon::start(Kind::Ours, &dir, &["--unix-threads", threads]);
        let mut c = d.client();
        let replies = session(&mut c);
        let pid = d.child.id();
        let threads_now = connection_threads(pid);
        // Own threads: this client's (and perhaps the readiness check's,
        // if it had not yet gone back to wait when this client came).
        let expected = if threads == "0" { 0..=0 } else { 1..=2 };
        assert!(
            expected.contains(&threads_now),
            "{threads_now} connection threads with --unix-threads {threads}"
        );
        d.stop();
        transcripts.push(replies);
    }
    let ours = &transcripts[0];
    assert_eq!(ours[0], "0 PONG\n");
    assert_eq!(ours[1], "0 errors, enqueued 1 value(s).\n");
    assert!(
        ours[4].starts_with("2 errors\n") && ours[4].contains("\n2 ") && ours[4].contains("\n3 "),
        "{}",
        ours[4]
    );
    assert!(ours[6].starts_with("0 "), "FLUSH: {}", ours[6]);
    assert!(ours[7].starts_with("10 Success\n") && ours[7].contains("\nStep: 300\n"), "FETCH: {}", ours[7]);
    assert_eq!(transcripts[0], transcripts[1], "own thread (left) against the shared threads (right)");
}

/// With `--unix-threads 2`, five clients at once are all served: two on
/// threads of their own, three on the shared threads. A thread whose
/// client left serves the next one: five more clients, one after the
/// other, start no thread.
#[test]
fn clients_beyond_the_thread_limit_are_served_on_the_shared_threads() {
    require_tools();
    let (_t, dir) = temp_dir();
    for i in 0..5 {
        create_rrd(&dir.join(format!("f{i}.rrd")), T0);
    }
    let d = Daemon::start(Kind::Ours, &dir, &["--unix-threads", "2"]);
    let pid = d.child.id();
    // The readiness check's thread waits for the next client.
    assert_eq!(connection_threads(pid), 1);
    let mut clients: Vec<Client> = (0..5).map(|_| d.client()).collect();
    for (i, c) in clients.iter_mut().enumerate() {
        assert_eq!(c.call("PING"), "0 PONG\n");
        assert_eq!(
            c.call(&format!("UPDATE f{i}.rrd {}:{i}:{i}", T0 + 300)),
            "0 errors, enqueued 1 value(s).\n"
        );
    }
    assert_eq!(connection_threads(pid), 2);
    for (i, c) in clients.iter_mut().enumerate() {
        assert!(c.call(&format!("PENDING f{i}.rrd")).contains(&format!("{}:{i}:{i}", T0 + 300)));
    }
    drop(clients);
    // Places freed: new clients get the threads that wait.
    for _ in 0..5 {
        let mut c = d.client();
        assert_eq!(c.call("PING"), "0 PONG\n");
        assert_eq!(connection_threads(pid), 2);
    }
    let both: Vec<Client> = (0..2).map(|_| d.client()).collect();
    let pings: Vec<String> = both.into_iter().map(|mut c| c.call("PING")).collect();
    assert_eq!(pings, ["0 PONG\n", "0 PONG\n"]);
    assert_eq!(connection_threads(pid), 2);
    d.stop();
}

/// SIGTERM ends connections whose threads are blocked in a read (idle
/// clients, one in the middle of a line): each client sees its
/// connection closed, and the daemon exits at once rather than after
/// its grace period for connections (5 s).
#[test]
fn a_stop_does_not_wait_for_clients_blocked_in_a_read() {
    require_tools();
    let (_t, dir) = temp_dir();
    let mut d = Daemon::start(Kind::Ours, &dir, &[]);
    let mut clients: Vec<UnixStream> = (0..4).map(|_| UnixStream::connect(&d.socket).unwrap()).collect();
    for c in &mut clients[..3] {
        c.write_all(b"PING\n").unwrap();
        let mut pong = [0u8; 7];
        c.read_exact(&mut pong).unwrap();
        assert_eq!(&pong, b"0 PONG\n");
    }
    clients[3].write_all(b"UPDATE f.rr").unwrap();
    // Four on threads of their own (and perhaps the readiness check's
    // thread, if it had not gone back to wait before they came).
    assert!(eventually(|| (4..=5).contains(&connection_threads(d.child.id()))));
    let began = Instant::now();
    // SAFETY: kill on our own child's pid.
    unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) };
    let status = loop {
        if let Some(status) = d.child.try_wait().unwrap() {
            break status;
        }
        assert!(began.elapsed() < Duration::from_secs(10), "the daemon did not stop");
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = began.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(3), "stopping took {took:?}");
    for c in &mut clients {
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(c.read(&mut [0u8; 64]).unwrap(), 0, "the connection is closed");
    }
}
