//! Shared by the engine's tests against the real rrdtool 1.7.2 (`dump_restore`,
//! `mapped`): running it. A missing rrdtool fails the test loudly.

#![allow(dead_code)]

use std::process::Command;

/// Runs `rrdtool ARGS` with `TZ=UTC` and `LC_ALL=C`, asserting success;
/// returns its stdout.
pub fn rrdtool(args: &[&str]) -> Vec<u8> {
    let out = Command::new("rrdtool")
        .args(args)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .expect("rrdtool 1.7.2 must be installed (/usr/bin/rrdtool) for these tests");
    assert!(out.status.success(), "rrdtool {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}
