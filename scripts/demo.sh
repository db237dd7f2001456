#!/usr/bin/env bash
# The main job on an embedded default: build rrdscale, create a demo RRD
# (MRTG-like: 5-minute step, traffic counters and a gauge), feed it one day
# of synthetic values with ONE `rrdscale update` call, then print what
# `rrdscale fetch` and `rrdscale info` say about it.
#
# Usage: bash scripts/demo.sh            (uses target/release/rrdscale)
#        RRDSCALE=rrdtool bash scripts/demo.sh   (same demo with the real rrdtool)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${RRDSCALE:-}" ]; then
    cargo build --release -p rrdscale
    RRDSCALE="$PWD/target/release/rrdscale"
fi
export TZ=UTC

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rrd="$work/demo.rrd"

# 2024-01-01 00:00:00 UTC, so the output is the same on every run.
start=1704067200
step=300
day=86400

"$RRDSCALE" create "$rrd" --start "$start" --step "$step" \
    DS:in:COUNTER:600:0:U \
    DS:out:COUNTER:600:0:U \
    DS:temp:GAUGE:600:-40:100 \
    RRA:AVERAGE:0.5:1:288 \
    RRA:AVERAGE:0.5:12:168 \
    RRA:MAX:0.5:12:168 \
    RRA:MIN:0.5:12:168 \
    RRA:LAST:0.5:1:12

# One value every step for a day: byte counters that follow a daily curve
# (and wrap at 2^32 once), and a temperature wave. All in one update call.
mapfile -t values < <(awk -v start="$start" -v step="$step" -v day="$day" 'BEGIN {
    pi = 3.14159265358979
    in_ctr = 4294000000; out_ctr = 1000000
    for (t = start + step; t <= start + day; t += step) {
        phase = 2 * pi * (t - start) / day
        in_ctr += int(step * (60000 + 50000 * sin(phase)))
        out_ctr += int(step * (20000 + 15000 * cos(phase)))
        if (in_ctr >= 4294967296) in_ctr -= 4294967296
        printf "%d:%.0f:%.0f:%.2f\n", t, in_ctr, out_ctr, 20 + 8 * sin(phase - pi / 2)
    }
}')
"$RRDSCALE" update "$rrd" "${values[@]}"
echo "== fed ${#values[@]} updates in one call"

echo "== $RRDSCALE fetch demo.rrd AVERAGE -r 3600 -s $start -e $((start + day))"
(cd "$work" && "$RRDSCALE" fetch demo.rrd AVERAGE -r 3600 -s "$start" -e "$((start + day))")

echo "== $RRDSCALE info demo.rrd"
(cd "$work" && "$RRDSCALE" info demo.rrd)
