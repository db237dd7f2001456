#!/bin/sh
# A long power-loss campaign: crates/rrd-daemon/tests/power_loss.rs at a
# larger scale (more runs, crash points and images), with a fresh random
# seed per round unless RRDSCALE_POWER_SEED is set.
#
#   scripts/crash-images.sh [ROUNDS] [SCALE]
#
# Each round prints its seed, the images built and the acknowledged values
# verified; a failure prints the seed to replay with
#   RRDSCALE_POWER_SEED=N cargo test --release -p rrd-daemon --test power_loss
set -eu
rounds=${1:-10}
scale=${2:-10}
cd "$(dirname "$0")/.."
cargo test --release -p rrd-daemon --test power_loss --no-run
log=$(mktemp)
trap 'rm -f "$log"' EXIT
i=1
while [ "$i" -le "$rounds" ]; do
    echo "== round $i of $rounds (scale $scale)"
    if ! RRDSCALE_POWER_SCALE=$scale cargo test --release -p rrd-daemon --test power_loss -- --nocapture >"$log" 2>&1; then
        cat "$log"
        echo "round $i FAILED"
        exit 1
    fi
    grep -E 'seed|verified|images' "$log" || true
    i=$((i + 1))
done
