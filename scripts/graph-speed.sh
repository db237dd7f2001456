#!/usr/bin/env bash
# Graph rendering speed, rrdscale against Debian's rrdtool 1.7.2, side by
# side on the same files and command lines (docs/graph-rendering.md).
#
# Makes a week of 5-minute data in a temporary directory with rrdtool, then
# draws each of a few Munin- and Cacti-like graphs ROUNDS times (default
# 20) with each program, one process per graph as Munin's and Cacti's
# pollers do, alternating the programs so that load from other work on the
# machine falls on both. Prints milliseconds per graph for each program and
# whether the two PNGs of each graph are the same bytes (both are written
# by Cairo's PNG writer, so equal bytes are equal pixels).
#
# Usage: bash scripts/graph-speed.sh [ROUNDS]
#        RRDSCALE=path/to/rrdscale bash scripts/graph-speed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
if [ -z "${RRDSCALE:-}" ]; then
    cargo build --release -p rrdscale --no-default-features >&2
    RRDSCALE="$PWD/target/release/rrdscale"
fi
export TZ=UTC LC_ALL=C
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

start=1704067200
rrdtool create cpu.rrd --start $start --step 300 \
    DS:user:GAUGE:600:0:U DS:system:GAUGE:600:0:U DS:idle:GAUGE:600:0:U \
    RRA:AVERAGE:0.5:1:2100 RRA:MAX:0.5:1:2100 RRA:AVERAGE:0.5:12:200
python3 - "$start" > updates.txt <<'EOF'
import math, sys
start = int(sys.argv[1])
for i in range(1, 2017):
    if 700 <= i < 707:  # a 35-minute outage
        continue
    u = 30 + 20 * math.sin(i / 40)
    s = 10 + 5 * math.cos(i / 17)
    print(f"{start + i * 300}:{u:.3f}:{s:.3f}:{100 - u - s:.3f}")
EOF
xargs -n 500 rrdtool update cpu.rrd < updates.txt

end=$((start + 7 * 86400))
# Without the vertical tag, where rrdscale writes its own name.
graphs=(
    "--disable-rrdtool-tag --start $((end - 86400)) --end $end -w 400 -h 175 --title cpu-day -v percent -l 0 -u 100 -r
     DEF:u=cpu.rrd:user:AVERAGE DEF:s=cpu.rrd:system:AVERAGE DEF:i=cpu.rrd:idle:AVERAGE
     AREA:s#ff0000:system STACK:u#0000ff:user STACK:i#ffcc00:idle
     GPRINT:u:LAST:Cur\\:%6.2lf GPRINT:u:MAX:Max\\:%6.2lf\\j"
    "--disable-rrdtool-tag --start $((end - 7 * 86400)) --end $end -w 497 -h 200 --title cpu-week
     DEF:u=cpu.rrd:user:AVERAGE DEF:m=cpu.rrd:user:MAX LINE1:u#00cc00:avg LINE2:m#cc000080:max
     VDEF:p=u,95,PERCENT HRULE:p#000000:95th COMMENT:done\\r"
    "--disable-rrdtool-tag --start $((end - 3 * 3600)) --end $end -w 300 -h 100 --slope-mode --title cpu-3h
     DEF:s=cpu.rrd:system:AVERAGE AREA:s#00aa0080#ffffff:gradient LINE1:s#006600"
)

ms() { date +%s%N; }
total_theirs=0
total_ours=0
n=0
for g in "${graphs[@]}"; do
    # shellcheck disable=SC2206
    args=($g)
    t_theirs=0
    t_ours=0
    for ((r = 0; r < rounds; r++)); do
        a=$(ms); rrdtool graph theirs.png "${args[@]}" >/dev/null; b=$(ms)
        "$RRDSCALE" graph ours.png "${args[@]}" >/dev/null; c=$(ms)
        t_theirs=$((t_theirs + b - a))
        t_ours=$((t_ours + c - b))
    done
    # Both write through Cairo's PNG writer: equal bytes, equal pixels.
    if cmp -s theirs.png ours.png; then same="the same PNG bytes"; else same="PNGs differ"; fi
    name=$(echo "$g" | sed -n 's/.*--title \([^ ]*\).*/\1/p')
    awk -v n="$name" -v a="$t_theirs" -v b="$t_ours" -v r="$rounds" -v s="$same" \
        'BEGIN { printf "%-10s rrdtool %6.1f ms  rrdscale %6.1f ms  (%s)\n", n, a / r / 1e6, b / r / 1e6, s }'
    total_theirs=$((total_theirs + t_theirs))
    total_ours=$((total_ours + t_ours))
    n=$((n + rounds))
done
awk -v a="$total_theirs" -v b="$total_ours" -v n="$n" \
    'BEGIN { printf "all        rrdtool %6.1f ms  rrdscale %6.1f ms per graph, %d graphs each\n", a / n / 1e6, b / n / 1e6, n }'
