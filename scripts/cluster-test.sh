#!/usr/bin/env bash
# The cluster mode's end-to-end proof (issue 15): 3 Kafka brokers (KRaft)
# and 3 rrdscale nodes on this machine, real clients (Debian's rrdtool,
# `rrdtool -` sessions sending `update --daemon`, and Debian's collectd with
# its rrdcached plugin, one per node) at every node, a broker
# killed and a node killed (-9) mid-stream, then:
#   - every acknowledged update is in the owners' files, and every file
#     dumps (`rrdtool dump`) equal to what a single-node rrdscale daemon
#     makes of the same stream;
#   - reads (FETCH) through every node saw the pending values (equal to the
#     flushed result, while values were still pending);
#   - the killed node restarted with its disk intact applies nothing twice
#     (the files stay equal to the reference).
# scripts/cluster_test.py does the driving and checking; this script builds,
# starts the brokers and cleans up. Fails loudly when java, mvn, rrdtool,
# collectd or python3 is missing. Runs in about a minute and a half here.
#
#   bash scripts/cluster-test.sh            (KEEP=1 keeps the work directory)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
for tool in java mvn rrdtool python3 cargo; do
    command -v "$tool" >/dev/null || { echo "cluster-test: $tool is missing (see .ci/run)" >&2; exit 1; }
done
[ -x /usr/sbin/collectd ] || { echo "cluster-test: /usr/sbin/collectd is missing (collectd-core, see .ci/run)" >&2; exit 1; }
started=$SECONDS
work=$(mktemp -d /tmp/rrdscale-cluster-test.XXXXXX)
export KAFKA_PORT_BASE=${KAFKA_PORT_BASE:-29092}
cleanup() {
    local rc=$?
    if [ -f "$work/pids" ]; then
        while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$work/pids"
    fi
    bash "$here/kafka-cluster.sh" stop "$work/kafka" >/dev/null 2>&1 || true
    if [ $rc -ne 0 ]; then
        echo "cluster-test: FAILED (logs in $work)" >&2
        for f in "$work"/node*/log; do [ -f "$f" ] && { echo "== $f"; tail -n 20 "$f"; }; done >&2
    elif [ "${KEEP:-0}" != 1 ]; then
        rm -rf "$work"
    fi
    exit $rc
}
trap cleanup EXIT
(cd "$repo" && cargo build --release -q -p rrdscale)
bootstrap=$(bash "$here/kafka-cluster.sh" start "$work/kafka")
echo "cluster-test: brokers up at $bootstrap after $((SECONDS - started)) s"
python3 "$here/cluster_test.py" --rrdscale "$repo/target/release/rrdscale" --bootstrap "$bootstrap" \
    --work "$work" --kafka-script "$here/kafka-cluster.sh"
echo "cluster-test: passed in $((SECONDS - started)) s"
