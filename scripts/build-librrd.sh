#!/usr/bin/env bash
# Builds rrdscale's drop-in librrd (crates/librrd) and names it as programs
# linked against RRDtool's library look for it:
#   target/release/librrd.so      the cdylib (soname librrd.so.8)
#   target/librrd/librrd.so.8 -> ../release/librrd.so
# Then: LD_LIBRARY_PATH=$PWD/target/librrd python3 your-script.py
#
# Not in target/release itself: `cargo test` puts that directory on
# LD_LIBRARY_PATH, and a librrd.so.8 there would make every test's
# /usr/bin/rrdtool (the differential tests' oracle) run on our library.
# (README.md, "Using rrdscale as librrd", has the system-wide install.)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p librrd
rm -f target/release/librrd.so.8
mkdir -p target/librrd
ln -sfn ../release/librrd.so target/librrd/librrd.so.8
lib=$(readlink -f target/librrd/librrd.so.8)
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = librrd.so.8 ] || { echo "unexpected soname '$soname' in $lib" >&2; exit 1; }
echo "$PWD/target/librrd/librrd.so.8 -> $lib (soname $soname)"
