#!/usr/bin/env bash
# Builds rrdscale's drop-in librrd (crates/librrd) and names it as programs
# linked against RRDtool's library look for it:
#   target/release/librrd.so      the cdylib (soname librrd.so.8)
#   target/release/librrd.so.8 -> librrd.so
# Then: LD_LIBRARY_PATH=$PWD/target/release python3 your-script.py
# (README.md, "Using rrdscale as librrd", has the system-wide install.)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p librrd
ln -sfn librrd.so target/release/librrd.so.8
lib=$(readlink -f target/release/librrd.so.8)
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = librrd.so.8 ] || { echo "unexpected soname '$soname' in $lib" >&2; exit 1; }
echo "$PWD/target/release/librrd.so.8 -> $lib (soname $soname)"
