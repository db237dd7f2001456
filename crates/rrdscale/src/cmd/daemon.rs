//! `rrdscale daemon [rrdcached options]`: the caching daemon, a drop-in for
//! rrdcached 1.7.2. Everything lives in the rrd-daemon crate; this is glue.
//! A refused command line exits with rrdcached's status for it.

use std::io::Write;

use anyhow::Result;

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    // `--cluster`: a node of a cluster (crates/rrd-cluster, docs/cluster.md).
    #[cfg(feature = "cluster")]
    if rrd_cluster::wanted(args) {
        return match rrd_cluster::run(args) {
            Ok(()) => Ok(()),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(e.status());
            }
        };
    }
    #[cfg(not(feature = "cluster"))]
    if args.iter().any(|a| a == "--cluster" || a.starts_with("--cluster=")) {
        eprintln!("this build has no cluster mode (built without the `cluster` feature)");
        std::process::exit(1);
    }
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
