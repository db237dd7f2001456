//! What systemd tells a service through its environment, and what the
//! service tells systemd, without libsystemd (docs/systemd.md):
//!
//! - socket activation (`sd_listen_fds(3)`): `LISTEN_PID` (must be our
//!   pid), `LISTEN_FDS` (how many descriptors from 3 on), `LISTEN_FDNAMES`
//!   (their names, colon-separated; only shown in the log); the
//!   descriptors are taken by `rrd_sys::sdlisten`;
//! - readiness and status (`sd_notify(3)`): datagrams to `NOTIFY_SOCKET`
//!   (a path, or `@name` for an abstract socket) — `READY=1`, `STOPPING=1`,
//!   `STATUS=...`, `WATCHDOG=1`, `MAINPID=`;
//! - the watchdog: `WATCHDOG_USEC` (ping at half of it), `WATCHDOG_PID`
//!   (when set, the pings are wanted only from that process).
//!
//! [`take_env`] reads them all once, at startup while the process has one
//! thread, and removes them from the environment so that no child process
//! (none is started today) mistakes them for its own. The parsing is pure
//! (the `parse_*` functions), so its edge cases are unit-tested.

use std::os::unix::net::UnixDatagram;
use std::sync::OnceLock;
use std::time::Duration;

/// Socket activation for this process: how many descriptors and their names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenFds {
    pub count: usize,
    /// One per descriptor (`"unknown"` where systemd gave none, as
    /// sd_listen_fds_with_names does).
    pub names: Vec<String>,
}

/// `LISTEN_PID`, `LISTEN_FDS`, `LISTEN_FDNAMES` → the descriptors passed
/// to process `our_pid`.
///
/// - no `LISTEN_PID`, or one naming another process (the variables were
///   inherited, not meant for us): `Ok(None)`;
/// - `LISTEN_PID` ours but `LISTEN_FDS` absent or 0: `Ok(None)` (nothing
///   passed: we bind our own sockets);
/// - a value that is not a decimal number (or a count beyond
///   `rrd_sys::sdlisten::LISTEN_FDS_MAX`): `Err`, since a service manager
///   that meant to pass sockets and got it wrong should not be silently
///   replaced by sockets of our own;
/// - names whose count differs from `LISTEN_FDS`: every name `"unknown"`.
pub fn parse_listen(
    listen_pid: Option<&str>,
    listen_fds: Option<&str>,
    fdnames: Option<&str>,
    our_pid: u32,
) -> Result<Option<ListenFds>, String> {
    let Some(pid) = listen_pid else { return Ok(None) };
    let pid: u32 = decimal(pid).ok_or_else(|| format!("invalid LISTEN_PID '{pid}'"))?;
    if pid != our_pid {
        return Ok(None);
    }
    let Some(fds) = listen_fds else { return Ok(None) };
    let count: usize = decimal(fds).ok_or_else(|| format!("invalid LISTEN_FDS '{fds}'"))?;
    if count == 0 {
        return Ok(None);
    }
    if count > rrd_sys::sdlisten::LISTEN_FDS_MAX {
        return Err(format!(
            "LISTEN_FDS={count}: more than {} descriptors",
            rrd_sys::sdlisten::LISTEN_FDS_MAX
        ));
    }
    let given: Vec<String> = fdnames.map(|n| n.split(':').map(str::to_string).collect()).unwrap_or_default();
    let names = if given.len() == count { given } else { vec!["unknown".to_string(); count] };
    Ok(Some(ListenFds { count, names }))
}

/// A plain decimal number (no sign, no spaces, as systemd writes them).
fn decimal<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Where `NOTIFY_SOCKET` points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotifyAddress {
    Path(std::path::PathBuf),
    /// `@name`: the abstract socket `\0name`.
    Abstract(Vec<u8>),
}

/// `NOTIFY_SOCKET` → its address: an absolute path, or `@name` for an
/// abstract socket. Anything else (empty, relative, `vsock:`) is refused
/// with the reason: we cannot send there.
pub fn parse_notify_socket(value: &str) -> Result<NotifyAddress, String> {
    if let Some(name) = value.strip_prefix('@') {
        if name.is_empty() {
            return Err("NOTIFY_SOCKET '@' names no abstract socket".into());
        }
        return Ok(NotifyAddress::Abstract(name.as_bytes().to_vec()));
    }
    if value.starts_with('/') {
        return Ok(NotifyAddress::Path(value.into()));
    }
    Err(format!("NOTIFY_SOCKET '{value}' is neither an absolute path nor @abstract"))
}

/// `WATCHDOG_USEC` and `WATCHDOG_PID` → the interval between pings (half
/// the timeout, as sd_watchdog_enabled(3) recommends), or `None`: no
/// watchdog, a `WATCHDOG_PID` naming another process, or values that do
/// not parse (0 included).
pub fn parse_watchdog(usec: Option<&str>, pid: Option<&str>, our_pid: u32) -> Option<Duration> {
    let usec: u64 = decimal(usec?)?;
    if usec == 0 {
        return None;
    }
    if let Some(pid) = pid {
        if decimal::<u32>(pid)? != our_pid {
            return None;
        }
    }
    Some(Duration::from_micros(usec / 2).max(Duration::from_millis(1)))
}

/// What the environment said, taken once ([`take_env`]).
#[derive(Debug)]
pub struct Env {
    /// Socket activation, or why the variables were refused.
    pub listen: Result<Option<ListenFds>, String>,
    pub notify: Option<Result<NotifyAddress, String>>,
    pub watchdog: Option<Duration>,
}

/// Reads socket activation, notification and watchdog variables and
/// removes them from the environment. Call once at startup, before any
/// thread exists (changing the environment is not thread-safe).
pub fn take_env() -> Env {
    let var = |name: &str| std::env::var(name).ok();
    let pid = std::process::id();
    let listen = parse_listen(
        var("LISTEN_PID").as_deref(),
        var("LISTEN_FDS").as_deref(),
        var("LISTEN_FDNAMES").as_deref(),
        pid,
    );
    let notify = var("NOTIFY_SOCKET").map(|v| parse_notify_socket(&v));
    let watchdog = parse_watchdog(var("WATCHDOG_USEC").as_deref(), var("WATCHDOG_PID").as_deref(), pid);
    for name in
        ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"]
    {
        std::env::remove_var(name);
    }
    Env { listen, notify, watchdog }
}

/// The notification socket, once [`set_notify`] opened it.
struct Notifier {
    socket: UnixDatagram,
    address: NotifyAddress,
}

static NOTIFIER: OnceLock<Notifier> = OnceLock::new();

/// Opens the datagram socket that [`notify`] sends from. The first call
/// wins.
pub fn set_notify(address: NotifyAddress) -> std::io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    let _ = NOTIFIER.set(Notifier { socket, address });
    Ok(())
}

/// Whether systemd listens for notifications.
pub fn notifying() -> bool {
    NOTIFIER.get().is_some()
}

/// Sends one notification (`READY=1`, `STATUS=...`; several assignments
/// separated by newlines make one message). Nothing when `NOTIFY_SOCKET`
/// was not set; a failed send is logged at LOG_DEBUG (systemd gone, or a
/// full queue) and otherwise ignored, as sd_notify's callers do.
pub fn notify(message: &str) {
    let Some(n) = NOTIFIER.get() else { return };
    if let Err(e) = send(&n.socket, &n.address, message) {
        crate::log!(Debug, "sd_notify '{}' failed: {e}", message.replace('\n', " "));
    }
}

/// One datagram from `socket` to `address`.
fn send(socket: &UnixDatagram, address: &NotifyAddress, message: &str) -> std::io::Result<()> {
    match address {
        NotifyAddress::Path(p) => socket.send_to(message.as_bytes(), p),
        NotifyAddress::Abstract(name) => {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name)
                .and_then(|a| socket.send_to_addr(message.as_bytes(), &a))
        }
    }
    .map(drop)
}

/// `STATUS=text` (one line: newlines become spaces).
pub fn status(text: &str) {
    if notifying() {
        notify(&format!("STATUS={}", text.replace('\n', " ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_fds_are_ours_only_when_listen_pid_is() {
        let p = |pid, fds, names| parse_listen(pid, fds, names, 4242);
        assert_eq!(p(None, Some("2"), None), Ok(None), "no LISTEN_PID: not activated");
        assert_eq!(p(Some("4241"), Some("2"), None), Ok(None), "inherited from another process");
        assert_eq!(
            p(Some("4242"), Some("2"), None),
            Ok(Some(ListenFds { count: 2, names: vec!["unknown".into(), "unknown".into()] }))
        );
        assert_eq!(
            p(Some("4242"), Some("2"), Some("rrd:rrd-tcp")),
            Ok(Some(ListenFds { count: 2, names: vec!["rrd".into(), "rrd-tcp".into()] }))
        );
        assert_eq!(
            p(Some("4242"), Some("2"), Some("only-one")),
            Ok(Some(ListenFds { count: 2, names: vec!["unknown".into(), "unknown".into()] })),
            "a name count that differs is ignored"
        );
        assert_eq!(p(Some("4242"), None, None), Ok(None), "LISTEN_FDS absent: nothing passed");
        assert_eq!(p(Some("4242"), Some("0"), None), Ok(None));
    }

    #[test]
    fn bad_numbers_are_refused() {
        let p = |pid, fds| parse_listen(Some(pid), Some(fds), None, 4242);
        for (pid, fds) in
            [("", "1"), ("42x", "1"), ("-4242", "1"), (" 4242", "1"), ("99999999999999999999", "1")]
        {
            assert!(p(pid, fds).unwrap_err().contains("LISTEN_PID"), "{pid:?}");
        }
        for fds in ["", "x", "-1", "1 ", "+1", "18446744073709551616"] {
            assert!(p("4242", fds).unwrap_err().contains("LISTEN_FDS"), "{fds:?}");
        }
        assert!(p("4242", "1025").unwrap_err().contains("more than 1024"));
        assert_eq!(p("4242", "1024").unwrap().unwrap().count, 1024);
    }

    #[test]
    fn notify_socket_paths_and_abstract_names() {
        assert_eq!(
            parse_notify_socket("/run/systemd/notify"),
            Ok(NotifyAddress::Path("/run/systemd/notify".into()))
        );
        assert_eq!(
            parse_notify_socket("@/org/x/notify"),
            Ok(NotifyAddress::Abstract(b"/org/x/notify".to_vec()))
        );
        assert!(parse_notify_socket("@").is_err());
        assert!(parse_notify_socket("").is_err());
        assert!(parse_notify_socket("relative/notify").is_err());
        assert!(parse_notify_socket("vsock:2:1234").is_err());
    }

    #[test]
    fn watchdog_interval_is_half_the_timeout_for_our_pid_only() {
        assert_eq!(parse_watchdog(Some("30000000"), None, 7), Some(Duration::from_secs(15)));
        assert_eq!(parse_watchdog(Some("30000000"), Some("7"), 7), Some(Duration::from_secs(15)));
        assert_eq!(parse_watchdog(Some("30000000"), Some("8"), 7), None, "meant for another process");
        assert_eq!(parse_watchdog(Some("30000000"), Some("x"), 7), None);
        assert_eq!(parse_watchdog(Some("0"), None, 7), None);
        assert_eq!(parse_watchdog(Some("soon"), None, 7), None);
        assert_eq!(parse_watchdog(None, Some("7"), 7), None);
        assert_eq!(parse_watchdog(Some("1"), None, 7), Some(Duration::from_millis(1)), "never a zero period");
    }

    /// A datagram reaches a socket bound at a path and one bound at an
    /// abstract name, as systemd's are.
    #[test]
    fn notifications_reach_path_and_abstract_sockets() {
        use std::os::linux::net::SocketAddrExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let by_path = UnixDatagram::bind(&path).unwrap();
        let name = format!("rrdscale-test-{}", std::process::id());
        let by_name = UnixDatagram::bind_addr(
            &std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap(),
        )
        .unwrap();
        let sender = UnixDatagram::unbound().unwrap();
        let mut buf = [0u8; 64];
        for (address, receiver) in [
            (parse_notify_socket(path.to_str().unwrap()).unwrap(), &by_path),
            (parse_notify_socket(&format!("@{name}")).unwrap(), &by_name),
        ] {
            send(&sender, &address, "READY=1").unwrap();
            let got = receiver.recv(&mut buf).unwrap();
            assert_eq!(&buf[..got], b"READY=1");
        }
    }
}
