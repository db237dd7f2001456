#!/usr/bin/env bash
# `rrdscale web --tree` over a tree of many files: the time of the first
# directory page (listing, sorting, the page's HTML), of the same page once
# the listing is kept, of the page's 100 thumbnails, of Grafana's search
# (which reads every file's header once a minute), and the server's peak
# memory (VmHWM). The worst case for listing: every file in one directory.
#
# Usage: bash scripts/tree-bench.sh [FILES]     (default 100000)
#        RRDSCALE=path/to/rrdscale bash scripts/tree-bench.sh 1000
# Needs curl and python3 (to make the hard links quickly). Everything lives
# in a temporary directory, removed at exit with the server stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-100000}

if [ -z "${RRDSCALE:-}" ]; then
    cargo build --release --no-default-features -p rrdscale
    RRDSCALE="$PWD/target/release/rrdscale"
fi
work=$(mktemp -d)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# A real file (a day of 5-minute rows with values), hard-linked FILES
# times (a copy per 50,000 links: ext4 allows 65,000 a file): the directory
# holds FILES names, the disk a few files.
now=$(date +%s)
"$RRDSCALE" create "$work/proto.rrd" --start $((now - 86400)) --step 300 \
    DS:value:GAUGE:600:U:U RRA:AVERAGE:0.5:1:288 RRA:MAX:0.5:1:288
"$RRDSCALE" update "$work/proto.rrd" $(seq $((now - 86100)) 300 "$now" | awk '{printf "%d:%d ", $1, NR % 37}')
python3 - "$work" "$files" <<'PY'
import os, shutil, sys
work, n = sys.argv[1], int(sys.argv[2])
os.makedirs(f"{work}/tree/host", exist_ok=True)
for i in range(n):
    proto = f"{work}/proto-{i // 50000}.rrd"
    if i % 50000 == 0:
        shutil.copyfile(f"{work}/proto.rrd", proto)
    os.link(proto, f"{work}/tree/host/gauge-{i:07d}.rrd")
PY

"$RRDSCALE" web --listen 127.0.0.1:0 --allowed-hosts '*' --daemon '' --data-dir "$work/gf" \
    --tree "bench=$work/tree" 2>"$work/log" &
server=$!
for _ in $(seq 100); do
    addr=$(sed -n 's/.*listening on http:\/\/\([^ ]*\).*/\1/p' "$work/log")
    [ -n "$addr" ] && break
    sleep 0.1
done
url="http://$addr/tree/bench?dir=host&range=day"

first=$(curl -fsS -o "$work/page.html" -w '%{time_total}' "$url")
again=$(curl -fsS -o /dev/null -w '%{time_total}' "$url")
listed=$(grep -o '<figure' "$work/page.html" | wc -l)
grep -o 'src="/tree/bench/png[^"]*"' "$work/page.html" | sed 's/^src="//; s/"$//; s/&amp;/\&/g' >"$work/thumbs"
t0=$(date +%s.%N)
while read -r path; do
    curl -fsS -o /dev/null "http://$addr$path"
done <"$work/thumbs"
t1=$(date +%s.%N)
search() {
    curl -fsS -o /dev/null -w '%{time_total}' -H 'Content-Type: application/json' \
        -d '{"target":"gauge-0000001"}' "http://$addr/grafana/search"
}
search_first=$(search)
search_again=$(search)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server/status")
rss=$(awk '/VmRSS/ {print $2}' "/proc/$server/status")

echo "files in the directory:      $files"
echo "first page (listing + HTML): ${first} s ($listed thumbnails on it)"
echo "same page, listing kept:     ${again} s"
echo "its thumbnails, one by one:  $(echo "$t1 - $t0" | bc) s"
echo "Grafana search, every header: ${search_first} s; list kept: ${search_again} s"
echo "server memory: peak ${hwm} kB, now ${rss} kB"
