#!/usr/bin/env bash
# The web front end on an embedded default: build rrdscale, start
# `rrdscale web` (GrowthForecast API + browser UI, SQLite metadata, RRD files
# under ./rrdscale-web-data), post a day of sample numbers for three graphs
# with curl, and keep serving until Ctrl-C.
#
# Usage: bash scripts/web-demo.sh            (listens on 127.0.0.1:5125)
#        LISTEN=0.0.0.0:5125 bash scripts/web-demo.sh
#        DEMO_EXIT=1 bash scripts/web-demo.sh   (post, check, stop: for CI)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${RRDSCALE:-}" ]; then
    cargo build --release -p rrdscale
    RRDSCALE="$PWD/target/release/rrdscale"
fi
listen=${LISTEN:-127.0.0.1:5125}
data=${DATA_DIR:-$PWD/rrdscale-web-data}
url="http://${listen/0.0.0.0/127.0.0.1}"

"$RRDSCALE" web --listen "$listen" --data-dir "$data" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    curl -fs "$url/json/list/all" >/dev/null 2>&1 && break
    sleep 0.1
done

# A day of 5-minute numbers, oldest first, for three graphs (backfilled with
# `timestamp`); graphs that already have newer numbers keep them.
now=$(date +%s)
start=$(( (now - 86400) / 300 * 300 ))
posted=0
for ((t = start; t <= now; t += 300)); do
    h=$(( (t / 300) % 288 ))
    req=$(awk -v h="$h" 'BEGIN { printf "%d", 120 + 80 * sin(6.2832 * h / 288) + (h * 7919) % 17 }')
    err=$(( (h * 104729) % 9 ))
    q=$(awk -v h="$h" 'BEGIN { printf "%d", 40 + 30 * cos(6.2832 * h / 288) }')
    curl -fs -d "number=$req&timestamp=$t" "$url/api/shop/frontend/requests" >/dev/null || true
    curl -fs -d "number=$err&timestamp=$t" "$url/api/shop/frontend/errors" >/dev/null || true
    curl -fs -d "number=$q&timestamp=$t" "$url/api/batch/jobs/queued" >/dev/null || true
    posted=$((posted + 3))
done
echo "== posted $posted numbers"
echo "== $url/json/list/graph"
curl -fs "$url/json/list/graph"; echo
curl -fs -o /dev/null -w "== graph PNG: %{http_code}, %{size_download} bytes\n" \
    "$url/graph/shop/frontend/requests?t=d"

cat <<MSG

Open $url/ in a browser. Post more numbers with, for example:
  curl -d number=42 $url/api/myservice/mysection/mygraph
MSG
if [ -n "${DEMO_EXIT:-}" ]; then
    exit 0
fi
echo "(serving; Ctrl-C stops)"
wait $server
