#!/usr/bin/env python3
"""Values/s accepted by a cluster of 1, 2 and 3 rrdscale nodes on 3 Kafka
brokers, all on this machine, and by a single-node daemon (journal,
--sync every:100) on the same workload, side by side in one run.

Workload: FILES files; each client process (one per node) sends ROUNDS
BATCHes, each with one UPDATE of one value for each of its files (the
"batch-per-interval" pattern of Cacti-style pollers). A value counts when
its BATCH was answered with no error, i.e. when Kafka acknowledged it
(acks=all on 2 of 3 brokers).

Latency: on the single node and on the 1-node cluster, after the timed
part, LAT_UPDATES lone UPDATEs on one connection, each awaited (median and
90th percentile round trip), then LAT_BATCHES BATCHes of 1,000 updates
(median and worst time to the BATCH's answer).

Run through scripts/cluster-bench.sh (which starts the brokers).
"""

import argparse
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_test as ct  # noqa: E402

FILES = 3000
ROUNDS = 20
T0 = 1_700_000_100
LAT_UPDATES = 300
LAT_BATCHES = 20


def latency(addr, names, label):
    """Round trips of lone UPDATEs and of BATCHes of 1,000 (values after
    the timed part's, so none is refused as too early)."""
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    f = s.makefile("rb")
    base = T0 + 300 * (ROUNDS + 10)
    rt = []
    for i in range(LAT_UPDATES):
        t = time.perf_counter()
        s.sendall(f"UPDATE {names[i % len(names)]} {base + 300 * (i // len(names))}:1:2\n".encode())
        head = f.readline().decode()
        rt.append((time.perf_counter() - t) * 1000)
        if not head.startswith("0 "):
            ct.fail(f"latency UPDATE: {head}")
    rt.sort()
    bt = []
    for r in range(LAT_BATCHES):
        body = "".join(f"UPDATE {n} {base + 300 * (10 + r)}:{r}:{r}\n" for n in names[:1000])
        t = time.perf_counter()
        s.sendall(("BATCH\n" + body + ".\n").encode())
        f.readline()
        head = f.readline().decode()
        bt.append((time.perf_counter() - t) * 1000)
        if not head.startswith("0 "):
            ct.fail(f"latency BATCH: {head}")
    bt.sort()
    s.close()
    return (f"- {label}: lone UPDATE round trip median {rt[len(rt) // 2]:.2f} ms, p90 {rt[len(rt) * 9 // 10]:.2f} ms; "
            f"BATCH of 1,000 median {bt[len(bt) // 2]:.1f} ms, worst {bt[-1]:.1f} ms")


def client(addr, names, rounds, out):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    f = s.makefile("rb")
    done = 0
    for i in range(1, rounds + 1):
        body = "".join(f"UPDATE {n} {T0 + 300 * i}:{i}:{i * 7}\n" for n in names)
        s.sendall(("BATCH\n" + body + ".\n").encode())
        f.readline()  # Go ahead
        head = f.readline().decode()
        errors = int(head.split(" ", 1)[0])
        for _ in range(errors):
            f.readline()
        if errors:
            raise SystemExit(f"{errors} errors in a BATCH at {addr}: {head}")
        done += len(names)
    out.put(done)


def drive(addrs, names):
    q = multiprocessing.Queue()
    share = [names[k::len(addrs)] for k in range(len(addrs))]
    procs = [multiprocessing.Process(target=client, args=(a, sh, ROUNDS, q)) for a, sh in zip(addrs, share)]
    t = time.time()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    elapsed = time.time() - t
    if any(p.exitcode != 0 for p in procs):
        ct.fail("a client failed")
    total = sum(q.get() for _ in procs)
    return total, elapsed


def create(addr, names):
    lines = [f"CREATE {n} -b {T0} -s 300 DS:in:GAUGE:600:U:U DS:out:GAUGE:600:U:U RRA:AVERAGE:0.5:1:600 "
             "RRA:AVERAGE:0.5:6:600 RRA:MAX:0.5:6:600" for n in names]
    for k in range(0, len(lines), 500):
        for st, head, _ in ct.request(addr, lines[k:k + 500], timeout=120):
            if st != 0:
                ct.fail(f"create: {head}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rrdscale", required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    names = [f"b{j}.rrd" for j in range(FILES)]
    rows = []
    extra = []

    # The single node, same workload, same machine.
    ref_dir = os.path.join(args.work, "single")
    os.makedirs(ref_dir)
    addr = "127.0.0.1:29229"  # below the ephemeral port range, as cluster_test.py
    os.makedirs(os.path.join(args.work, "single-journal"), exist_ok=True)
    ref = subprocess.Popen([args.rrdscale, "daemon", "-g", "-b", ref_dir, "-l", addr, "-j",
                            os.path.join(args.work, "single-journal"), "-p", os.path.join(args.work, "single.pid"),
                            "-w", "3600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(args.work, "pids"), "a") as f:
        f.write(f"{ref.pid}\n")
    for _ in range(100):
        try:
            ct.request(addr, ["PING"], timeout=2)
            break
        except OSError:
            time.sleep(0.1)
    create(addr, names)
    total, elapsed = drive([addr] * 3, names)
    rows.append(("single node (journal, --sync every:100), 3 clients", 1, total, elapsed))
    extra.append(latency(addr, names, "single node"))
    ref.send_signal(signal.SIGTERM)
    ref.wait()

    for n_nodes in (1, 2, 3):
        ns = argparse.Namespace(**vars(args))
        ns.work = os.path.join(args.work, f"c{n_nodes}")
        os.makedirs(ns.work)
        nodes = [ct.Node(ns, i) for i in range(1, n_nodes + 1)]
        for n in nodes:
            start(n, f"bench{n_nodes}", args.work)
        ct.owners(nodes)
        create(nodes[0].addr, names)
        # Every node applied its CREATEs before the timed part.
        time.sleep(2)
        addrs = [nodes[k % n_nodes].addr for k in range(3)]
        total, elapsed = drive(addrs, names)
        rows.append((f"cluster of {n_nodes} node(s), 3 clients spread over them", n_nodes, total, elapsed))
        if n_nodes == 1:
            extra.append(latency(nodes[0].addr, names, "cluster of 1 node (acks=all, 3 brokers)"))
        if n_nodes == 3:
            extra.extend(failover(nodes, names, args.work))
        for n in nodes:
            n.stop()

    print("| setup | nodes | values | seconds | values/s total | values/s per node |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, n, total, elapsed in rows:
        print(f"| {label} | {n} | {total} | {elapsed:.2f} | {total / elapsed:,.0f} | {total / elapsed / n:,.0f} |")
    print()
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores)")
    for line in extra:
        print(line)


def failover(nodes, names, work):
    """Snapshot bytes after one flush of every file, then kill -9 of node 3:
    the time until every one of its files answers FETCH at a live node."""
    out = []
    for n in nodes:
        ct.request(n.addr, ["FLUSHALL"])
    deadline = time.time() + 120
    while time.time() < deadline:
        s = [ct.stats(n.addr) for n in nodes]
        if all(x["PendingValues"] == "0" and x["ClusterSnapshotLagSecs"] == "0" for x in s) and \
                sum(int(x["ClusterSnapshotsPublished"]) for x in s) >= len(names):
            break
        time.sleep(1)
    published = sum(int(x["ClusterSnapshotsPublished"]) for x in s)
    raw = sum(int(x["ClusterSnapshotBytes"]) for x in s)
    on_disk = 0
    kdir = os.path.join(work, "kafka")
    for root, _, files in os.walk(kdir):
        if ".snapshots-" in root:
            on_disk += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".log"))
    out.append(f"- snapshots: {published} published (every file at least once), {raw / max(published, 1):,.0f} bytes "
               f"each before compression; snapshot topic on the brokers' disks: {on_disk:,} bytes for all replicas "
               f"({on_disk / 3 / max(published, 1):,.0f} bytes per snapshot per replica, lz4)")
    dead = nodes[2]
    theirs = [n for n in names if ct.partition(n) in
              {int(p) for p in ct.stats(dead.addr)["ClusterPartitions"].split(",") if p}]
    t0 = time.time()
    dead.kill9()
    live = nodes[:2]
    ct.owners(live, timeout=300)
    t_owned = time.time() - t0
    pending = list(theirs)
    while pending and time.time() - t0 < 600:
        still = []
        for name in pending:
            (st, _, _), = ct.request(live[0].addr, [f"LAST {name}"])
            if st != 0:
                still.append(name)
        pending = still
        if pending:
            time.sleep(0.2)
    t_all = time.time() - t0
    restored = sum(int(ct.stats(n.addr)["ClusterFilesRestored"]) for n in live)
    out.append(f"- failover: node 3 (owner of {len(theirs)} of {len(names)} files) killed -9; its partitions owned "
               f"again after {t_owned:.1f} s, all its files answering LAST at a live node after {t_all:.1f} s "
               f"({restored} files restored from snapshots)")
    return out


def start(node, cluster, work):
    """ct.Node.start with another cluster name (a fresh topic per size)."""
    os.makedirs(os.path.join(node.dir, "files"), exist_ok=True)
    node.proc = subprocess.Popen(
        [node.args.rrdscale, "daemon", "-g", "--cluster", node.args.bootstrap, "--cluster-name", cluster,
         "--node-id", node.id, "-b", os.path.join(node.dir, "files"), "-l", node.addr, "-w", "3600",
         "-o", os.path.join(node.dir, "log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(os.path.join(node.dir, "stderr"), "ab"))
    with open(os.path.join(work, "pids"), "a") as f:
        f.write(f"{node.proc.pid}\n")
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            ct.request(node.addr, ["PING"], timeout=2)
            return
        except OSError:
            if node.proc.poll() is not None:
                break
            time.sleep(0.2)
    ct.fail(f"node {node.id} does not answer: {open(os.path.join(node.dir, 'stderr')).read()[-1500:]}")


if __name__ == "__main__":
    main()
