#!/usr/bin/env bash
# Values/s accepted by 1, 2 and 3 cluster nodes (3 Kafka brokers) and by a
# single-node daemon on the same workload, in one run on this machine
# (scripts/cluster_bench.py says what is measured). Prints a markdown table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
for tool in java mvn python3 cargo; do
    command -v "$tool" >/dev/null || { echo "cluster-bench: $tool is missing" >&2; exit 1; }
done
work=$(mktemp -d /tmp/rrdscale-cluster-bench.XXXXXX)
export KAFKA_PORT_BASE=${KAFKA_PORT_BASE:-29192}
# Brokers with the full JIT (the tests' C1-only brokers are slower).
export KAFKA_JIT=${KAFKA_JIT-}
cleanup() {
    local rc=$?
    [ -f "$work/pids" ] && while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$work/pids"
    bash "$here/kafka-cluster.sh" stop "$work/kafka" >/dev/null 2>&1 || true
    [ $rc -eq 0 ] && [ "${KEEP:-0}" != 1 ] && rm -rf "$work"
    exit $rc
}
trap cleanup EXIT
(cd "$repo" && cargo build --release -q -p rrdscale)
bootstrap=$(bash "$here/kafka-cluster.sh" start "$work/kafka")
python3 "$here/cluster_bench.py" --rrdscale "$repo/target/release/rrdscale" --bootstrap "$bootstrap" --work "$work"
