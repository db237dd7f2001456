#!/usr/bin/env bash
# Long crash run of `rrdscale daemon`: hundreds of kill -9 cycles under load
# with --sync always, then a check that every acknowledged update is in the
# files (see crates/rrdscale/tests/daemon_crash.rs for what one cycle does).
#
# Usage: scripts/crash_loop.sh [cycles per run] [runs]
#   defaults: 200 cycles, 5 runs (each run a fresh seed, printed on failure
#   so it can be repeated with RRDSCALE_CRASH_SEED=<seed>).
# Needs rrdtool and rrdcached (apt-get install rrdtool rrdcached).
set -euo pipefail
cd "$(dirname "$0")/.."
cycles="${1:-200}"
runs="${2:-5}"
cargo build --release -p rrdscale --tests >/dev/null
for run in $(seq 1 "$runs"); do
    echo "== crash run $run/$runs: $cycles cycles"
    log="$(mktemp)"
    if ! RRDSCALE_CRASH_CYCLES="$cycles" cargo test --release -q -p rrdscale --test daemon_crash -- --nocapture >"$log" 2>&1; then
        cat "$log" >&2
        echo "crash run $run FAILED (log above)" >&2
        exit 1
    fi
    grep -E "crash test|test result" "$log" || true
    rm -f "$log"
done
echo "== all $runs crash runs passed"
