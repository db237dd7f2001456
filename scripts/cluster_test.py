#!/usr/bin/env python3
"""Drives and checks the cluster test (see scripts/cluster-test.sh).

Phases, each asserting what it proves:
 1. 3 nodes start and the group gives out all partitions.
 2. Files are created through every node (`rrdtool create --daemon`).
 3. Three `rrdtool -` sessions (one per node) send `update --daemon` lines,
    and three collectd daemons (Debian's, rrdcached plugin, one per node)
    write their own files (see Collectd);
    each file's values in time order. A quarter in, broker 3 is killed -9
    (writes go on with 2 of 3 in sync); halfway, node 2 is killed -9. A
    session whose node died retries its line at the next node, as a client
    with a list of nodes would: an update counts as acknowledged when some
    node said OK. (A retry of a value that was in the log already is
    skipped when applied, as rrdtool skips nothing: its time is not later.)
 4. Once the dead node's partitions have new owners: FETCH of every file
    through both live nodes while values are pending; then FLUSHALL; FETCH
    again must be equal (the reads saw the pending values).
 5. A single-node rrdscale daemon is fed the same acknowledged stream; every
    file's owner copy must dump equal to the reference.
 6. Node 2 restarts with its disk intact; after the rebalance the files are
    still equal to the reference (nothing applied twice).
 7. Node 3 is killed -9, its disk wiped, and it restarts: the files it owns
    again are restored from snapshots and completed from the log, equal to
    the reference.
Snapshots: after the kill the new owners must have restored files from the
snapshot topic (not only replayed the log).
 8. Huge requests: a CREATE whose file would not fit in one snapshot message
    is refused; one BATCH of HUGE_BATCH updates (several group records of
    one partition) is acknowledged, every value is in the file (FETCH
    through another node), and every node still answers.
/metrics: the cluster figures appear on every node and change (owned
partitions grow after the kill, commands applied grow).
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

PARTITIONS = 12
HUGE_BATCH = 100_000
FILES = 36
ROUNDS = 40
T0 = 1_700_000_100  # a multiple of 300
STEP = 300
SCHEMA = ["-s", "300", "DS:a:GAUGE:600:U:U", "DS:b:COUNTER:600:U:U",
          "RRA:AVERAGE:0.5:1:60", "RRA:MAX:0.5:4:30", "RRA:LAST:0.5:12:10"]


def fnv1a64(data: bytes) -> int:
    """docs/cluster.md's partition hash, written independently of the Rust."""
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def partition(rel: str) -> int:
    return fnv1a64(rel.encode()) % PARTITIONS


T_START = time.time()

# collectd: per instance k (1..3, pointed at node k) three files, one per
# data source type, written by its rrdcached plugin (`CreateFiles false`:
# the files are created through the cluster first, as the plugin would
# otherwise create them on collectd's own disk). The values are PUTVALs
# through collectd's unixsock plugin with explicit times, so the stream is
# known exactly and the single-node reference gets the same text (the
# plugin formats a GAUGE with %f, a DERIVE or COUNTER as an integer).
# collectd 2 writes rounds 1..ROUNDS//4 only, all acknowledged before node 2
# is killed (the plugin drops a value its one daemon does not take, so what
# it sent after the kill is not known to be acknowledged); collectd 1 and 3
# write all rounds, across the broker kill and the node kill, and their logs
# must show no failed update.
CD_TYPES = [("gauge", "a", "GAUGE"), ("derive", "b", "DERIVE"), ("counter", "c", "COUNTER")]


def cd_files(k):
    return [(f"h{k}/test/{t}-{inst}", f"collectd/h{k}/test/{t}-{inst}.rrd", kind) for t, inst, kind in CD_TYPES]


def cd_value(kind, k, i):
    """The value PUTVAL gives, and the text the plugin sends for it."""
    if kind == "GAUGE":
        v = (k * 11 + i * 7) % 50 + 0.25 * (i % 4)
        return f"{v}", f"{v:f}"
    v = 5000 * k + i * i * 17
    return str(v), str(v)


def cd_schema(kind):
    return ["-s", "300", f"DS:value:{kind}:600:{'0' if kind == 'DERIVE' else 'U'}:U",
            "RRA:AVERAGE:0.5:1:60", "RRA:MAX:0.5:4:30"]


class Collectd:
    def __init__(self, args, k, node):
        self.k, self.node = k, node
        self.dir = os.path.join(args.work, f"collectd{k}")
        self.sock = os.path.join(self.dir, "sock")
        self.log = os.path.join(self.dir, "log")
        self.proc = None
        self.sent = []  # (file, time, text)

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        conf = os.path.join(self.dir, "collectd.conf")
        with open(conf, "w") as f:
            f.write(f"""Hostname "h{self.k}"
FQDNLookup false
BaseDir "{self.dir}"
PIDFile "{self.dir}/pid"
TypesDB "/usr/share/collectd/types.db"
Interval 300
WriteThreads 1
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File "{self.log}"
</Plugin>
LoadPlugin unixsock
<Plugin unixsock>
  SocketFile "{self.sock}"
</Plugin>
LoadPlugin rrdcached
<Plugin rrdcached>
  DaemonAddress "{self.node.addr}"
  DataDir "collectd"
  CreateFiles false
  CollectStatistics false
</Plugin>
""")
        self.proc = subprocess.Popen(["/usr/sbin/collectd", "-C", conf, "-f"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "stderr"), "ab"))
        with open(os.path.join(self.dir, "..", "pids"), "a") as f:
            f.write(f"{self.proc.pid}\n")
        deadline = time.time() + 20
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.time() > deadline:
                fail(f"collectd {self.k} did not start: {open(os.path.join(self.dir, 'stderr')).read()[-1500:]}")
            time.sleep(0.1)
        self.conn = socket.socket(socket.AF_UNIX)
        self.conn.connect(self.sock)
        self.rd = self.conn.makefile("rb")

    def round(self, i):
        t = T0 + STEP * i
        for ident, rel, kind in cd_files(self.k):
            given, text = cd_value(kind, self.k, i)
            self.conn.sendall(f'PUTVAL "{ident}" interval=300 {t}:{given}\n'.encode())
            reply = self.rd.readline().decode()
            if not reply.startswith("0 "):
                fail(f"collectd {self.k} PUTVAL {ident}: {reply.strip()}")
            self.sent.append((rel, t, f"{t}:{text}"))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)

    def failures(self):
        with open(self.log) as f:
            return [l.strip() for l in f if "rrdcached plugin" in l and ("fail" in l or "Fail" in l)]


def wait_last(addr, rel, t, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        (st, head, _), = request(addr, [f"LAST {rel}"])
        if st == 0 and int(head.split(" ", 1)[1]) >= t:
            return
        time.sleep(0.1)
    fail(f"{what}: {rel} never reached {t} (last reply: {head.strip()})")


def say(msg):
    print(f"cluster-test: [{time.time() - T_START:5.1f} s] {msg}", flush=True)


def fail(msg):
    say(f"FAIL: {msg}")
    sys.exit(1)


def request(addr, lines, timeout=30):
    """Sends rrdcached protocol lines; returns each reply (status, lines)."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(("".join(l + "\n" for l in lines)).encode())
        f = s.makefile("rb")
        out = []
        for _ in lines:
            head = f.readline().decode()
            if not head:
                raise OSError("connection closed")
            n = int(head.split(" ", 1)[0])
            body = [f.readline().decode().rstrip("\n") for _ in range(max(n, 0))]
            out.append((n, head.rstrip("\n"), body))
        return out


def scrape(node):
    """The node's /metrics as {name with labels: value}."""
    host, port = node.metrics_addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.decode().partition("\r\n\r\n")
    if not head.startswith("HTTP/1.1 200"):
        fail(f"/metrics of {node.id}: {head.splitlines()[:1]}")
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def check_metrics(nodes, label):
    """Cluster figures in every live node's /metrics: the owned partitions
    add up to all of them, as STATS says."""
    got = {n.id: scrape(n) for n in nodes}
    for n in nodes:
        m = got[n.id]
        for name in ("rrdscale_cluster_consumer_lag_records", "rrdscale_cluster_snapshot_age_seconds",
                     "rrdscale_cluster_uncommitted_records", "rrdscale_cluster_records_applied_total",
                     f'rrdscale_cluster_node_info{{node="{n.id}",cluster="test"}}'):
            if name not in m:
                fail(f"{label}: {name} missing from {n.id}'s /metrics")
        owned = int(stats(n.addr)["ClusterPartitionsOwned"])
        if m["rrdscale_cluster_partitions_owned"] != owned:
            fail(f"{label}: {n.id}'s /metrics says {m['rrdscale_cluster_partitions_owned']} partitions owned, "
                 f"STATS {owned}")
    total = sum(m["rrdscale_cluster_partitions_owned"] for m in got.values())
    if total != PARTITIONS:
        fail(f"{label}: /metrics of the live nodes own {total} partitions, not {PARTITIONS}")
    return got


def stats(addr):
    (_, _, body), = request(addr, ["STATS"])
    return dict(l.split(": ", 1) for l in body)


class Node:
    def __init__(self, args, i):
        self.i = i
        self.id = f"n{i}"
        # Below the kernel's ephemeral range (32768-60999 by default): a
        # port in it can be the local end of some client's connection (the
        # brokers', collectd's) when the node binds it, and the bind fails.
        self.addr = f"127.0.0.1:{29210 + i}"
        self.metrics_addr = f"127.0.0.1:{29220 + i}"
        self.dir = os.path.join(args.work, f"node{i}")
        self.args = args
        self.proc = None

    def start(self):
        os.makedirs(os.path.join(self.dir, "files"), exist_ok=True)
        self.proc = subprocess.Popen(
            [self.args.rrdscale, "daemon", "-g", "-V", "LOG_INFO", "--cluster", self.args.bootstrap,
             "--cluster-name", "test", "--node-id", self.id, "-b", os.path.join(self.dir, "files"),
             "-l", self.addr, "-w", "8", "-z", "1", "-o", os.path.join(self.dir, "log"),
             "--metrics", self.metrics_addr],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "stderr"), "ab"))
        with open(os.path.join(self.args.work, "pids"), "a") as f:
            f.write(f"{self.proc.pid}\n")
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                request(self.addr, ["PING"], timeout=2)
                return
            except OSError:
                if self.proc.poll() is not None:
                    fail(f"node {self.id} exited: {open(os.path.join(self.dir, 'stderr')).read()[-2000:]}")
                time.sleep(0.2)
        fail(f"node {self.id} does not answer")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def owners(nodes, timeout=90):
    """Waits until the live nodes own every partition exactly once, each
    node some (the group has settled)."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        owner = {}
        ok = True
        for n in nodes:
            try:
                s = stats(n.addr)
            except OSError:
                ok = False
                break
            parts = [int(p) for p in s.get("ClusterPartitions", "").split(",") if p]
            for p in parts:
                if p in owner:
                    ok = False
                owner[p] = n
        last = sorted(owner)
        spread = all(any(o is n for o in owner.values()) for n in nodes)
        if ok and len(owner) == PARTITIONS and spread:
            return owner
        time.sleep(0.5)
    fail(f"partitions not all owned after {timeout} s: {last}")


def create_files(nodes, names):
    for j, name in enumerate(names):
        n = nodes[j % len(nodes)]
        r = subprocess.run(["rrdtool", "create", "--daemon", n.addr, name, "-b", str(T0)] + SCHEMA,
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"create {name} through {n.id}: {r.stderr}")


def value(j, i):
    # A GAUGE that varies and a COUNTER that grows, as digit strings.
    return f"{(j * 7 + i * 13) % 100}.{i % 10}:{1000 + j * 50 + i * i * 3}"


class Driver(threading.Thread):
    """One `rrdtool -` session sending update --daemon lines, failing over
    to the next live node when its node stops answering."""

    def __init__(self, k, nodes, files, acked, progress, gate):
        super().__init__()
        self.gate = gate
        self.k, self.nodes, self.files, self.acked, self.progress = k, nodes, files, acked, progress
        self.target = k
        self.retries = 0
        self.error = None

    def run(self):
        def session():
            return subprocess.Popen(["rrdtool", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                    bufsize=1)
        p = session()
        try:
            for i in range(1, ROUNDS + 1):
                if i == ROUNDS // 2 + 1:
                    # Halfway every session waits for the node kill, so
                    # that the kill is mid-stream however slow the machine.
                    self.gate.wait(120)
                for j, name in self.files:
                    line = f"{T0 + STEP * i}:{value(j, i)}"
                    deadline = time.time() + 60
                    while True:
                        addr = self.nodes[self.target].addr
                        try:
                            p.stdin.write(f"update --daemon {addr} {name} {line}\n")
                            p.stdin.flush()
                            reply = p.stdout.readline()
                        except BrokenPipeError:
                            reply = ""
                        if not reply:
                            # rrdtool died of SIGPIPE writing to the killed
                            # node: a new session, the line not acknowledged.
                            p.wait()
                            p = session()
                        if reply.startswith("OK"):
                            self.acked.append((name, line))
                            break
                        self.retries += 1
                        if time.time() > deadline:
                            raise RuntimeError(f"{name} {line}: no node took it: {reply.strip()}")
                        self.target = (self.target + 1) % len(self.nodes)
                        time.sleep(0.05)
                self.progress[self.k] = i
        except Exception as e:  # reported by the main thread
            self.error = e
        finally:
            p.stdin.close()
            p.wait()


def fetch_all(addr, names):
    out = {}
    for name in names:
        r = subprocess.run(["rrdtool", "fetch", "--daemon", addr, name, "AVERAGE", "-s", str(T0),
                            "-e", str(T0 + STEP * (ROUNDS + 1))], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"fetch {name} through {addr}: {r.stderr}")
        out[name] = r.stdout
    return out


def graph_print(program, daemon, name):
    """PRINTs of a graph over the whole stream (AVERAGE and MAX of both DS)."""
    r = subprocess.run([program, "graph"] + daemon + ["/dev/null", "--start", str(T0), "--end",
                        str(T0 + STEP * ROUNDS), f"DEF:a={name}:a:AVERAGE", f"DEF:b={name}:b:AVERAGE",
                        "PRINT:a:AVERAGE:%.6lf", "PRINT:a:MAX:%.6lf", "PRINT:b:AVERAGE:%.6lf",
                        "PRINT:b:MAX:%.6lf"], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{program} graph {' '.join(daemon)} {name}: {r.stderr}")
    return r.stdout.splitlines()[1:]


def dump(path):
    r = subprocess.run(["rrdtool", "dump", path], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"dump {path}: {r.stderr}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rrdscale", required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--kafka-script", required=True)
    args = ap.parse_args()
    t_start = time.time()

    nodes = [Node(args, i) for i in (1, 2, 3)]
    for n in nodes:
        n.start()
    owner = owners(nodes)
    say(f"3 nodes own the {PARTITIONS} partitions "
          f"({', '.join(f'{n.id}: {sum(1 for o in owner.values() if o is n)}' for n in nodes)})")

    metrics_before = check_metrics(nodes, "at the start")
    names = [f"d{j % 4}/f{j}.rrd" for j in range(FILES)]
    create_files(nodes, names)
    # A bad definition is refused by the node that takes the CREATE, as one
    # node refuses it, instead of an OK for a file that never appears.
    r = subprocess.run(["rrdtool", "create", "--daemon", nodes[1].addr, "bad.rrd", "-b", str(T0), "-s", "300",
                        "DS:x:GAUGE:600:U:U", "RRA:AVERAGE:2:1:10"], capture_output=True, text=True)
    if r.returncode == 0 or "RRD Error" not in r.stderr:
        fail(f"a CREATE with xff 2 was not refused: {r.returncode} {r.stderr!r}")

    cd_names = []
    for k in (1, 2, 3):
        for _, rel, kind in cd_files(k):
            n = nodes[(k + len(cd_names)) % 3]
            r = subprocess.run(["rrdtool", "create", "--daemon", n.addr, rel, "-b", str(T0)] + cd_schema(kind),
                               capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"create {rel} through {n.id}: {r.stderr}")
            cd_names.append(rel)
    collectds = [Collectd(args, k, nodes[k - 1]) for k in (1, 2, 3)]
    for c in collectds:
        c.start()
    cd_fed = {1: 0, 2: 0, 3: 0}
    CD2_ROUNDS = ROUNDS // 4

    def feed_collectd(upto):
        for c in collectds:
            limit = min(upto, CD2_ROUNDS) if c.k == 2 else upto
            while cd_fed[c.k] < limit:
                cd_fed[c.k] += 1
                c.round(cd_fed[c.k])

    acked = []
    progress = [0, 0, 0]
    gate = threading.Event()
    drivers = [Driver(k, nodes, [(j, names[j]) for j in range(FILES) if j % 3 == k], acked, progress, gate)
               for k in range(3)]
    for d in drivers:
        d.start()
    broker_killed = node_killed = False
    t_kill = None
    while any(d.is_alive() for d in drivers):
        feed_collectd(max(progress))
        done = min(progress)
        if not broker_killed and done >= ROUNDS // 4:
            subprocess.run(["bash", args.kafka_script, "kill", os.path.join(args.work, "kafka"), "3"], check=True)
            broker_killed = True
            say(f"broker 3 killed -9 at round {done}")
        if not node_killed and progress[1] >= ROUNDS // 2:
            # collectd 2's stream is all acknowledged first (module doc).
            feed_collectd(CD2_ROUNDS)
            for _, rel, _ in cd_files(2):
                wait_last(nodes[0].addr, rel, T0 + STEP * CD2_ROUNDS, "collectd 2 before the kill")
            nodes[1].kill9()
            gate.set()
            node_killed = True
            t_kill = time.time()
            say(f"node n2 killed -9 at round {done}")
        time.sleep(0.05)
    for d in drivers:
        if d.error:
            fail(f"driver {d.k}: {d.error}")
    if not node_killed:
        fail("the stream ended before the node was killed")
    if sum(d.retries for d in drivers) == 0:
        fail("no client had to retry at another node: the node was not killed mid-stream")
    feed_collectd(ROUNDS)
    total = FILES * ROUNDS
    if len(acked) != total:
        fail(f"{len(acked)} acknowledged updates, expected {total}")
    say(f"{total} updates acknowledged ({sum(d.retries for d in drivers)} retried at another node) "
          f"in {time.time() - t_start:.1f} s")

    live = [nodes[0], nodes[2]]
    owner = owners(live)
    say(f"n2's partitions moved within {time.time() - t_kill:.1f} s of the kill")
    for c in (collectds[0], collectds[2]):
        for _, rel, _ in cd_files(c.k):
            wait_last(live[0].addr, rel, T0 + STEP * ROUNDS, f"collectd {c.k}")
    for c in collectds:
        c.stop()
        if c.failures():
            fail(f"collectd {c.k} logged failed updates: {c.failures()[:3]}")
    cd_sent = [x for c in collectds for x in c.sent]
    if len(cd_sent) != len(CD_TYPES) * (2 * ROUNDS + CD2_ROUNDS):
        fail(f"collectd sent {len(cd_sent)} values")
    say(f"collectd (rrdcached plugin) wrote {len(cd_sent)} values through n1, n2 and n3, none refused "
        f"(collectd 2 rounds 1-{CD2_ROUNDS}, before n2's kill)")
    metrics_after = check_metrics(live, "after n2's kill")
    for n in live:
        a, b = metrics_before[n.id], metrics_after[n.id]
        if not b["rrdscale_cluster_records_applied_total"] > a["rrdscale_cluster_records_applied_total"]:
            fail(f"{n.id}'s /metrics: records applied did not grow ({a} -> {b})")
        if not b["rrdscale_cluster_partitions_owned"] > a["rrdscale_cluster_partitions_owned"]:
            fail(f"{n.id}'s /metrics: owned partitions did not grow after n2's kill")
    say("/metrics: " + ", ".join(
        f"{n.id} owns {metrics_before[n.id]['rrdscale_cluster_partitions_owned']:.0f} -> "
        f"{metrics_after[n.id]['rrdscale_cluster_partitions_owned']:.0f} partitions, applied "
        f"{metrics_after[n.id]['rrdscale_cluster_records_applied_total']:.0f} commands, lag "
        f"{metrics_after[n.id]['rrdscale_cluster_consumer_lag_records']:.0f}" for n in live))
    restored = sum(int(stats(n.addr)["ClusterFilesRestored"]) for n in live)
    published = sum(int(stats(n.addr)["ClusterSnapshotsPublished"]) for n in live)
    if restored == 0:
        fail("the new owners restored no file from snapshots")
    say(f"the new owners restored {restored} files from snapshots ({published} snapshots published by them)")

    # Reads through every live node while values are pending.
    pending = sum(int(stats(n.addr)["PendingValues"]) for n in live)
    if pending == 0:
        fail("no value was pending when the reads ran: they prove nothing")
    before = {n.id: fetch_all(n.addr, names) for n in live}
    # rrdscale's own client (graph --daemon) through both nodes, pending
    # values included: compared with rrdtool graph on the flushed files below.
    graphed = {(n.id, name): graph_print(args.rrdscale, ["--daemon", n.addr], name)
               for n in live for name in names[:6]}
    for n in live:
        request(n.addr, ["FLUSHALL"])
    # FLUSHALL queues; FLUSH of each file waits for its write.
    for name in names:
        (st, head, _), = request(live[0].addr, [f"FLUSH {name}"])
        if st != 0:
            fail(f"FLUSH {name}: {head}")
    after = fetch_all(live[0].addr, names)
    for nid, got in before.items():
        for name in names:
            if got[name] != after[name]:
                fail(f"FETCH {name} through {nid} before the flush differs from after it")
    owner = owners(live)
    for (nid, name), got in graphed.items():
        want = graph_print("rrdtool", [], os.path.join(owner[partition(name)].dir, "files", name))
        if got != want:
            fail(f"rrdscale graph --daemon through {nid} of {name}: {got} != rrdtool graph of the flushed file {want}")
    say(f"FETCH (rrdtool) and graph --daemon (rrdscale) through both live nodes saw the pending values "
        f"({pending} pending at the time; e.g. {names[0]}: {graphed[(live[0].id, names[0])]})")
    if any("nan" in v for vals in graphed.values() for v in vals):
        fail("a graph PRINT is NaN: the comparison proves nothing")

    # The reference: a single-node daemon fed the same acknowledged stream.
    ref_dir = os.path.join(args.work, "reference")
    for d in range(4):
        os.makedirs(os.path.join(ref_dir, f"d{d}"), exist_ok=True)
    for k in (1, 2, 3):
        os.makedirs(os.path.join(ref_dir, f"collectd/h{k}/test"), exist_ok=True)
    sock = "127.0.0.1:29219"
    os.makedirs(os.path.join(args.work, "reference-journal"), exist_ok=True)
    ref = subprocess.Popen([args.rrdscale, "daemon", "-g", "-b", ref_dir, "-l", sock,
                            "-j", os.path.join(args.work, "reference-journal"), "-p",
                            os.path.join(args.work, "reference.pid")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(args.work, "pids"), "a") as f:
        f.write(f"{ref.pid}\n")
    for _ in range(100):
        try:
            request(sock, ["PING"], timeout=2)
            break
        except OSError:
            time.sleep(0.1)
    create_cmds = "".join(f"create --daemon {sock} {name} -b {T0} {' '.join(SCHEMA)}\n" for name in names)
    per_file = {}
    for name, line in acked:
        per_file.setdefault(name, []).append(line)
    update_cmds = "".join(f"update --daemon {sock} {name} {line}\n"
                          for name in names for line in sorted(set(per_file[name]), key=lambda l: int(l.split(":")[0])))
    create_cmds += "".join(f"create --daemon {sock} {rel} -b {T0} {' '.join(cd_schema(kind))}\n"
                           for k in (1, 2, 3) for _, rel, kind in cd_files(k))
    update_cmds += "".join(f"update --daemon {sock} {rel} {line}\n" for rel, _, line in cd_sent)
    r = subprocess.run(["rrdtool", "-"], input=create_cmds + update_cmds + f"flushcached --daemon {sock} "
                       + " ".join(names + cd_names) + "\n", capture_output=True, text=True)
    if "ERROR" in r.stdout:
        fail(f"the reference run failed: {[l for l in r.stdout.splitlines() if 'ERROR' in l][:3]}")
    ref.send_signal(signal.SIGTERM)
    ref.wait()

    def compare(label):
        owner = owners([n for n in nodes if n.proc.poll() is None])
        for n in nodes:
            if n.proc.poll() is None:
                request(n.addr, ["FLUSHALL"])
        for name in names + cd_names:
            o = owner[partition(name)]
            (st, head, _), = request(o.addr, [f"FLUSH {name}"])
            if st != 0:
                fail(f"FLUSH {name} at {o.id}: {head}")
            got = dump(os.path.join(o.dir, "files", name))
            want = dump(os.path.join(ref_dir, name))
            if got != want:
                fail(f"{label}: {name} at its owner {o.id} differs from the single-node reference")
        say(f"{label}: all {FILES} + {len(cd_names)} (collectd's) files at their owners dump equal to the "
            "single-node reference")

    compare("after the node kill")

    # The killed node comes back with its disk intact.
    nodes[1].start()
    time.sleep(2)
    owners(nodes)
    compare("after n2 restarted with its disk intact")
    # A node whose disk is lost.
    nodes[2].kill9()
    import shutil
    shutil.rmtree(nodes[2].dir)
    nodes[2].start()
    time.sleep(2)
    owner = owners(nodes)
    compare("after n3 restarted with its disk wiped")
    rebuilt = [name for name in names if owner[partition(name)] is nodes[2]]
    if not rebuilt:
        fail("n3 owns no file after its restart: the wiped-disk case proved nothing")
    n3_restored = int(stats(nodes[2].addr)["ClusterFilesRestored"])
    if n3_restored == 0:
        fail("n3 restored no file from snapshots after its disk was wiped")
    say(f"n3 rebuilt the {len(rebuilt)} files it owns ({n3_restored} restored from snapshots, the rest from the log)")
    s = {n.id: stats(n.addr) for n in nodes}
    say("values skipped as already applied: "
          + ", ".join(f"{k} {v['ClusterValuesSkipped']}" for k, v in s.items()))
    huge(nodes)
    for n in nodes:
        n.stop()
    print("cluster-test: 7 passed, 0 failed", flush=True)


def huge(nodes):
    r = subprocess.run(["rrdtool", "create", "--daemon", nodes[0].addr, "huge.rrd", "-b", str(T0), "-s", "1",
                        "DS:x:GAUGE:2:U:U", "RRA:AVERAGE:0.5:1:10000000"], capture_output=True, text=True)
    if r.returncode == 0 or "cluster mode keeps files of at most" not in r.stderr:
        fail(f"a CREATE of an 80 MB file was not refused: {r.returncode} {r.stderr!r}")
    name = "big/batch.rrd"
    r = subprocess.run(["rrdtool", "create", "--daemon", nodes[0].addr, name, "-b", str(T0), "-s", "1",
                        "DS:x:GAUGE:2:U:U", f"RRA:LAST:0.5:1:{HUGE_BATCH}"], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"create {name}: {r.stderr}")
    t = time.time()
    body = "".join(f"UPDATE {name} {T0 + i}:{i % 97}\n" for i in range(1, HUGE_BATCH + 1))
    host, port = nodes[1].addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=120) as s:
        s.sendall(("BATCH\n" + body + ".\n").encode())
        f = s.makefile("rb")
        f.readline()
        head = f.readline().decode()
    if not head.startswith("0 "):
        fail(f"a BATCH of {HUGE_BATCH} updates: {head.strip()}")
    acked = time.time() - t
    wait_last(nodes[2].addr, name, T0 + HUGE_BATCH, "the huge BATCH")
    r = subprocess.run(["rrdtool", "fetch", "--daemon", nodes[2].addr, name, "LAST", "-s", str(T0),
                        "-e", str(T0 + HUGE_BATCH)], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"fetch {name}: {r.stderr}")
    got = {}
    for line in r.stdout.splitlines():
        if ":" in line and line.split(":")[0].strip().isdigit():
            ts, v = line.split(":", 1)
            got[int(ts)] = v.strip()
    wrong = [i for i in range(1, HUGE_BATCH + 1)
             if got.get(T0 + i) is None or got[T0 + i] == "-nan" or float(got[T0 + i]) != i % 97]
    if wrong:
        fail(f"the huge BATCH: {len(wrong)} of {HUGE_BATCH} values missing or wrong in the file, e.g. "
             f"{[(T0 + i, got.get(T0 + i)) for i in wrong[:3]]}")
    for n in nodes:
        request(n.addr, ["PING"], timeout=5)
    say(f"huge requests: an 80 MB CREATE refused; a BATCH of {HUGE_BATCH} updates acknowledged in {acked:.1f} s, "
        f"all {HUGE_BATCH} values in the file (FETCH through {nodes[2].id}); every node answers")


if __name__ == "__main__":
    main()
