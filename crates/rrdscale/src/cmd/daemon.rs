//! `rrdscale daemon [rrdcached options]`: the caching daemon, a drop-in for
//! rrdcached 1.7.2. Everything lives in the rrd-daemon crate; this is glue.
//! A refused command line exits with rrdcached's status for it.

use std::io::Write;

use anyhow::Result;

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    match rrd_daemon::run(args, out) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = out.flush();
            if !e.message.is_empty() {
                eprintln!("{}", e.message);
            }
            std::process::exit(e.status);
        }
    }
}
