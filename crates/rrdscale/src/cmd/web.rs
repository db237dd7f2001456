//! `rrdscale web [options]`: serves the GrowthForecast-compatible HTTP API
//! of the rrd-web crate until killed.
//!
//! Owns only the command line: defaults (127.0.0.1:5125, the
//! GrowthForecast port, and `./rrdscale-web-data`), turning them into a
//! socket address and a directory, choosing how RRD files are written
//! (through the daemon named by `--daemon` or `RRDCACHED_ADDRESS`; an
//! empty `--daemon ''` means none; else directly, the embedded path), and
//! the limits and access rules of [`rrd_web::Config`] (the `Host`
//! allow-list derives from the listen address unless `--allowed-hosts`
//! is given; the write token comes from `--auth-token` or
//! `RRDSCALE_WEB_TOKEN`). Everything else belongs to rrd-web.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use rrd_cli::opts;

const USAGE: &str = "\
Usage: rrdscale web [--listen ADDR] [--data-dir DIR] [--daemon ADDR]
                    [--max-renders N] [--max-graphs N] [--allowed-hosts H,H...]
                    [--auth-token TOKEN] [--header-timeout SECS]
                    [--tree [NAME=]DIR]... [--tree-defs FILE] [--mrtg-cfg FILE]...
                    [--tree-annotations FILE]

  -l, --listen ADDR        HOST:PORT to serve (default 127.0.0.1:5125)
  -d, --data-dir DIR       metadata and RRD files (default ./rrdscale-web-data)
  -D, --daemon ADDR        write through this rrdcached/rrdscale daemon
                           (default $RRDCACHED_ADDRESS; '' for none)
      --max-renders N      graphs drawn or exported at once (default: the cores);
                           more wait up to 5 s, then get 503
      --max-graphs N       graphs the server keeps (default 100000); a POST naming
                           a new graph beyond it gets 403
      --allowed-hosts LIST Host header values served, comma-separated; name:port
                           or a bare name (any port); '*' for any. Default: for a
                           loopback listen address its own names (the address,
                           localhost, 127.0.0.1, [::1] with the port), else any
      --auth-token TOKEN   every write must carry it (Authorization: Bearer TOKEN,
                           or basic auth with it as password); default
                           $RRDSCALE_WEB_TOKEN, else none
      --header-timeout SECS  a client must send each request's headers within it
                           (default 15), and a write's body again within it
  -t, --tree [NAME=]DIR    browse the RRD files under DIR, read-only, at /tree/NAME
                           and through grafana-rrd-server's API at /grafana/
                           (repeatable; NAME defaults to DIR's base name). Tree
                           pictures read through --daemon's FETCH when given
      --tree-defs FILE     graph definitions (JSON, see docs/tree.md) tried
                           before the embedded ones
      --mrtg-cfg FILE      an MRTG configuration whose Title[target] lines title
                           MRTG's files in the trees (repeatable)
      --tree-annotations FILE  Grafana's annotations (/grafana/annotations) from
                           this CSV file (time in ms,title,tags,text; read at
                           every request), as grafana-rrd-server's -a
  -h, --help               this text
";

/// Environment variable for the write token (keeps it out of `ps`).
const TOKEN_ENV: &str = "RRDSCALE_WEB_TOKEN";

const SPECS: [opts::Spec; 13] = [
    opts::value(Some('l'), "listen"),
    opts::value(Some('d'), "data-dir"),
    opts::value(Some('D'), "daemon"),
    opts::value(None, "max-renders"),
    opts::value(None, "max-graphs"),
    opts::value(None, "allowed-hosts"),
    opts::value(None, "auth-token"),
    opts::value(None, "header-timeout"),
    opts::value(Some('t'), "tree"),
    opts::value(None, "tree-defs"),
    opts::value(None, "mrtg-cfg"),
    opts::value(None, "tree-annotations"),
    opts::flag(Some('h'), "help"),
];

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let parsed = opts::parse(args, &SPECS)?;
    if parsed.has("help") {
        out.write_all(USAGE.as_bytes())?;
        return Ok(());
    }
    if !parsed.operands.is_empty() {
        bail!("{}", USAGE.lines().next().unwrap_or_default());
    }
    let listen = parsed.value("listen").unwrap_or("127.0.0.1:5125");
    let addr: SocketAddr = listen
        .to_socket_addrs()
        .with_context(|| format!("the listen address '{listen}' is not HOST:PORT"))?
        .next()
        .ok_or_else(|| anyhow!("the listen address '{listen}' resolves to nothing"))?;
    let data_dir = PathBuf::from(parsed.value("data-dir").unwrap_or("rrdscale-web-data"));
    let writer = rrd_web::Writer::choose(parsed.value("daemon"));
    let config = config(&parsed, addr, std::env::var(TOKEN_ENV).ok())?;
    out.flush()?;
    rrd_web::run_blocking(addr, &data_dir, writer, config)
        .with_context(|| format!("serving {} from {}", addr, data_dir.display()))?;
    Ok(())
}

/// The daemon tree pictures read through: `--daemon`, else
/// `RRDCACHED_ADDRESS`; `''` for none.
fn rrd_client_address(option: Option<&str>) -> Option<String> {
    match option {
        Some("") => None,
        Some(a) => Some(a.to_string()),
        None => std::env::var("RRDCACHED_ADDRESS").ok().filter(|a| !a.is_empty()),
    }
}

/// A whole number of at least 1 for `--name`.
fn positive(parsed: &opts::Parsed, name: &str) -> Result<Option<u64>> {
    parsed
        .value(name)
        .map(|v| match v.trim().parse::<u64>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => bail!("--{name} must be a whole number of at least 1, not '{v}'"),
        })
        .transpose()
}

fn config(parsed: &opts::Parsed, addr: SocketAddr, env_token: Option<String>) -> Result<rrd_web::Config> {
    let mut c = rrd_web::Config::default();
    if let Some(n) = positive(parsed, "max-renders")? {
        c.max_renders = usize::try_from(n.min(4096)).unwrap_or(4096);
    }
    if let Some(n) = positive(parsed, "max-graphs")? {
        c.max_graphs = n;
    }
    if let Some(n) = positive(parsed, "header-timeout")? {
        c.header_read_timeout = Duration::from_secs(n.min(3600));
    }
    let hosts: Option<Vec<String>> = parsed
        .value("allowed-hosts")
        .map(|v| v.split(',').map(str::trim).filter(|h| !h.is_empty()).map(String::from).collect());
    if hosts.as_ref().is_some_and(Vec::is_empty) {
        bail!("--allowed-hosts names no host (use '*' for any)");
    }
    c.hosts = rrd_web::guard::HostPolicy::for_listen(addr, hosts.as_deref());
    let token = parsed.value("auth-token").map(String::from).or(env_token).filter(|t| !t.is_empty());
    if token.as_ref().is_some_and(|t| t.chars().any(|c| c.is_whitespace() || c.is_control())) {
        bail!("the auth token must not contain spaces or control characters");
    }
    c.auth_token = token;
    for t in parsed.values("tree") {
        c.trees.push(rrd_web::tree::TreeSpec::parse(t)?);
    }
    if let Some(f) = parsed.value("tree-defs") {
        c.tree_defs = Some(std::fs::read_to_string(f).with_context(|| format!("reading --tree-defs {f}"))?);
    }
    for f in parsed.values("mrtg-cfg") {
        c.mrtg_cfgs.push(std::fs::read_to_string(f).with_context(|| format!("reading --mrtg-cfg {f}"))?);
    }
    c.tree_daemon = rrd_client_address(parsed.value("daemon"));
    c.tree_annotations = parsed.value("tree-annotations").map(PathBuf::from);
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rrd_web::guard::HostPolicy;

    fn cfg(args: &[&str], listen: &str, env: Option<&str>) -> Result<rrd_web::Config> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        config(&opts::parse(&args, &SPECS)?, listen.parse().unwrap(), env.map(String::from))
    }

    #[test]
    fn options_set_the_limits_and_access_rules() {
        let c = cfg(
            &[
                "--max-renders",
                "3",
                "--max-graphs=10",
                "--allowed-hosts",
                "gf.example, b:8080",
                "--auth-token",
                "t",
            ],
            "0.0.0.0:5125",
            Some("ignored"),
        )
        .unwrap();
        assert_eq!((c.max_renders, c.max_graphs, c.auth_token.as_deref()), (3, 10, Some("t")));
        assert_eq!(c.hosts, HostPolicy::Only(vec!["gf.example".into(), "b:8080".into()]));
        let c = cfg(&[], "127.0.0.1:5125", Some("from-env")).unwrap();
        assert_eq!((c.max_graphs, c.auth_token.as_deref()), (rrd_web::DEFAULT_MAX_GRAPHS, Some("from-env")));
        assert!(c.hosts.allows("localhost:5125") && !c.hosts.allows("evil.example:5125"));
        assert_eq!(cfg(&[], "192.0.2.1:5125", None).unwrap().hosts, HostPolicy::Any);
        for bad in [
            &["--max-graphs", "0"][..],
            &["--max-renders", "x"],
            &["--allowed-hosts", ","],
            &["--auth-token", "a b"],
        ] {
            assert!(cfg(bad, "127.0.0.1:5125", None).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn help_lists_every_option() {
        let mut out = Vec::new();
        run(&["--help".to_string()], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for spec in &SPECS {
            assert!(text.contains(&format!("--{}", spec.long)), "--help lacks --{}", spec.long);
        }
    }
}
