//! `rrdscale web [--listen ADDR] [--data-dir DIR] [--daemon ADDR]`:
//! serves the GrowthForecast-compatible HTTP API of the rrd-web crate
//! until killed.
//!
//! Owns only the command line: defaults (127.0.0.1:5125, the
//! GrowthForecast port, and `./rrdscale-web-data`), turning them into a
//! socket address and a directory, and choosing how RRD files are
//! written: through the daemon named by `--daemon` (or
//! `RRDCACHED_ADDRESS`; an empty `--daemon ''` means none), else directly
//! (the embedded path). Everything else belongs to rrd-web.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};

use crate::opts;

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let parsed = opts::parse(
        args,
        &[
            opts::value(Some('l'), "listen"),
            opts::value(Some('d'), "data-dir"),
            opts::value(Some('D'), "daemon"),
        ],
    )?;
    if !parsed.operands.is_empty() {
        bail!("Usage: rrdscale web [--listen ADDR] [--data-dir DIR] [--daemon ADDR]");
    }
    let listen = parsed.value("listen").unwrap_or("127.0.0.1:5125");
    let addr: SocketAddr = listen
        .to_socket_addrs()
        .with_context(|| format!("the listen address '{listen}' is not HOST:PORT"))?
        .next()
        .ok_or_else(|| anyhow!("the listen address '{listen}' resolves to nothing"))?;
    let data_dir = PathBuf::from(parsed.value("data-dir").unwrap_or("rrdscale-web-data"));
    let writer = rrd_web::Writer::choose(parsed.value("daemon"));
    out.flush()?;
    rrd_web::run_blocking(addr, &data_dir, writer)
        .with_context(|| format!("serving {} from {}", addr, data_dir.display()))?;
    Ok(())
}
