#!/usr/bin/env bash
# A 3-broker Apache Kafka cluster (KRaft, each node broker + controller) on
# this machine, for rrdscale's cluster mode: its tests, its demo and the
# README's runbook.
#
#   scripts/kafka-cluster.sh start  DIR   format (first time) and start 3 brokers
#   scripts/kafka-cluster.sh stop   DIR   stop them (SIGTERM, then SIGKILL)
#   scripts/kafka-cluster.sh status DIR   which brokers run
#   scripts/kafka-cluster.sh kill   DIR N kill -9 broker N (1..3), for fault tests
#   scripts/kafka-cluster.sh restart DIR N start broker N again
#
# DIR holds node1..node3 (data dir, config, log, pid). Ports: clients on
# KAFKA_PORT_BASE+1..3 (default 19093..19095), controllers on
# KAFKA_PORT_BASE+11..13. The bootstrap list is printed by `start` and
# written to DIR/bootstrap.
#
# The broker comes from the Maven registry (scripts/kafka/pom.xml, fetched
# once into target/kafka-lib with `mvn dependency:copy-dependencies`) and
# runs on the machine's Java 17 with `java -cp 'target/kafka-lib/*'
# kafka.Kafka`. Each broker gets a small heap (KAFKA_HEAP, default
# -Xmx256m -Xms128m): the machine is small and shared.
#
# Needs: java (17+), mvn. Fails loudly without them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
lib="${KAFKA_LIB:-$repo/target/kafka-lib}"
base="${KAFKA_PORT_BASE:-19092}"
heap="${KAFKA_HEAP:--Xmx256m -Xms128m}"
# C1 only: brokers start faster and take less CPU while warming up (tests);
# benchmarks set KAFKA_JIT= for the full JIT.
jit="${KAFKA_JIT--XX:TieredStopAtLevel=1}"
nodes=3

die() { echo "kafka-cluster: $*" >&2; exit 1; }

fetch() {
    command -v java >/dev/null || die "java not found (install openjdk-17-jre-headless)"
    if [ ! -f "$lib/.complete" ]; then
        command -v mvn >/dev/null || die "mvn not found (install maven) and no broker jars in $lib"
        echo "kafka-cluster: fetching the broker jars into $lib (mvn dependency:copy-dependencies)" >&2
        rm -rf "$lib"
        mvn -q -B -f "$here/kafka/pom.xml" dependency:copy-dependencies -DoutputDirectory="$lib" >&2 \
            || die "mvn could not fetch the Kafka jars"
        touch "$lib/.complete"
    fi
}

bootstrap() {
    local list="" i
    for i in $(seq 1 $nodes); do list="${list:+$list,}127.0.0.1:$((base + i))"; done
    echo "$list"
}

voters() {
    local list="" i
    for i in $(seq 1 $nodes); do list="${list:+$list,}$i@127.0.0.1:$((base + 10 + i))"; done
    echo "$list"
}

write_config() {
    local dir=$1 i=$2
    mkdir -p "$dir/node$i/data"
    cat >"$dir/node$i/server.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$(voters)
listeners=PLAINTEXT://127.0.0.1:$((base + i)),CONTROLLER://127.0.0.1:$((base + 10 + i))
advertised.listeners=PLAINTEXT://127.0.0.1:$((base + i))
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/node$i/data
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=3000
# A dead broker is fenced (and its partitions get new leaders) after 4 s,
# not the default 9 s: writes to its partitions stall that long.
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
log.flush.interval.messages=9223372036854775807
EOF
    # KAFKA_EXTRA: more broker settings, ';'-separated (experiments).
    [ -z "${KAFKA_EXTRA:-}" ] || tr ';' '\n' <<<"$KAFKA_EXTRA" >>"$dir/node$i/server.properties"
    cat >"$dir/node$i/log4j2.yaml" <<EOF
Configuration:
  Appenders:
    File:
      name: F
      fileName: "$dir/node$i/broker.log"
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: F
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
EOF
}

java_opts() {
    local dir=$1 i=$2
    # shellcheck disable=SC2086
    echo $heap -XX:+UseSerialGC $jit -Xss512k \
        -Dlog4j2.configurationFile="$dir/node$i/log4j2.yaml" -Djava.awt.headless=true
}

format() {
    local dir=$1 i=$2 cid=$3
    [ -f "$dir/node$i/data/meta.properties" ] && return 0
    # shellcheck disable=SC2046
    java $(java_opts "$dir" "$i") -cp "$lib/*" kafka.tools.StorageTool format \
        -t "$cid" -c "$dir/node$i/server.properties" >"$dir/node$i/format.log" 2>&1 \
        || { cat "$dir/node$i/format.log" >&2; die "formatting node $i failed"; }
}

running() {
    local pidf=$1
    [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null
}

start_one() {
    local dir=$1 i=$2
    running "$dir/node$i/pid" && return 0
    # shellcheck disable=SC2046
    nohup java $(java_opts "$dir" "$i") -cp "$lib/*" kafka.Kafka "$dir/node$i/server.properties" \
        >>"$dir/node$i/stdout.log" 2>&1 </dev/null &
    echo $! >"$dir/node$i/pid"
}

# Waits until every broker answers a metadata request listing all 3.
wait_serving() {
    local dir=$1 deadline=$((SECONDS + ${KAFKA_START_TIMEOUT:-120})) i
    while :; do
        if java -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
            -Dlog4j2.configurationFile="$dir/node1/log4j2.yaml" -cp "$lib/*" \
            org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$(bootstrap)" \
            2>/dev/null | grep -c '^127.0.0.1:' | grep -qx "$nodes"; then
            return 0
        fi
        for i in $(seq 1 $nodes); do
            running "$dir/node$i/pid" || { tail -n 30 "$dir/node$i/stdout.log" "$dir/node$i/broker.log" >&2 || true; die "broker $i exited"; }
        done
        [ $SECONDS -lt "$deadline" ] || die "brokers not serving after ${KAFKA_START_TIMEOUT:-120} s"
        sleep 1
    done
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|stop|status|kill|restart DIR [N]"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
case "$cmd" in
start)
    fetch
    t0=$(date +%s.%N)
    if [ ! -f "$dir/cluster.id" ]; then
        # A KRaft cluster id: 16 random bytes, URL-safe base64 without padding,
        # not starting with '-' (kafka-storage would take it for an option:
        # one start in 64 failed with "--cluster-id: expected one argument").
        cid=-
        while [ "${cid#-}" != "$cid" ]; do
            cid=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
        done
        printf '%s' "$cid" >"$dir/cluster.id"
    fi
    cid=$(cat "$dir/cluster.id")
    for i in $(seq 1 $nodes); do
        write_config "$dir" "$i"
        format "$dir" "$i" "$cid" &
    done
    wait
    for i in $(seq 1 $nodes); do start_one "$dir" "$i"; done
    wait_serving "$dir"
    bootstrap >"$dir/bootstrap"
    t1=$(date +%s.%N)
    echo "kafka-cluster: 3 brokers serving at $(bootstrap) after $(echo "$t1 - $t0" | bc 2>/dev/null || echo "?") s" >&2
    bootstrap
    ;;
stop)
    for i in $(seq 1 $nodes); do
        running "$dir/node$i/pid" && kill "$(cat "$dir/node$i/pid")" 2>/dev/null || true
    done
    for _ in $(seq 1 30); do
        alive=0
        for i in $(seq 1 $nodes); do running "$dir/node$i/pid" && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.5
    done
    for i in $(seq 1 $nodes); do
        running "$dir/node$i/pid" && kill -9 "$(cat "$dir/node$i/pid")" 2>/dev/null || true
        rm -f "$dir/node$i/pid"
    done
    ;;
status)
    for i in $(seq 1 $nodes); do
        if running "$dir/node$i/pid"; then echo "broker $i: running (pid $(cat "$dir/node$i/pid")) on 127.0.0.1:$((base + i))"
        else echo "broker $i: stopped"; fi
    done
    ;;
kill)
    i=${3:?broker number}
    running "$dir/node$i/pid" && kill -9 "$(cat "$dir/node$i/pid")"
    rm -f "$dir/node$i/pid"
    ;;
restart)
    i=${3:?broker number}
    start_one "$dir" "$i"
    ;;
*) die "unknown command $cmd" ;;
esac
