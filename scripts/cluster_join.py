#!/usr/bin/env python3
"""A third node joins a 2-node cluster under a steady stream (one client
sending BATCHes of one update for each of 600 files to node 1): for how
long each old node applies nothing after the join (STATS
ClusterRecordsApplied sampled every 50 ms), the time until the 3 nodes own
all partitions, and the writer's worst BATCH time during the join.

    bash scripts/kafka-cluster.sh start /tmp/k   # prints the bootstrap list
    python3 scripts/cluster_join.py --rrdscale target/release/rrdscale \
        --bootstrap 127.0.0.1:19093,127.0.0.1:19094,127.0.0.1:19095 --work /tmp/j --name j1
    bash scripts/kafka-cluster.sh stop /tmp/k; rm -rf /tmp/k /tmp/j
"""
import argparse, os, sys, threading, time, socket
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_test as ct, cluster_bench as cb
ap = argparse.ArgumentParser()
ap.add_argument("--rrdscale", required=True)
ap.add_argument("--bootstrap", required=True)
ap.add_argument("--work", required=True)
ap.add_argument("--name", required=True, help="cluster name (a fresh one per run)")
args = ap.parse_args()
os.makedirs(args.work, exist_ok=True)
name = args.name
nodes = [ct.Node(args, i) for i in (1, 2, 3)]
for n in nodes:
    n.addr = f"127.0.0.1:{42380 + n.i}"
for n in nodes[:2]:
    cb.start(n, name, args.work)
ct.owners(nodes[:2])
files = [f"j{j}.rrd" for j in range(600)]
cb.create(nodes[0].addr, files)
time.sleep(3)
stop = False
samples = {1: [], 2: []}
batches = []
def writer():
    host, port = nodes[0].addr.split(":")
    s = socket.create_connection((host, int(port)))
    f = s.makefile("rb")
    i = 0
    while not stop:
        i += 1
        body = "".join(f"UPDATE {n} {cb.T0 + 300 * i}:{i}:{i}\n" for n in files)
        t = time.time()
        s.sendall(("BATCH\n" + body + ".\n").encode())
        f.readline(); head = f.readline().decode()
        batches.append((t, time.time() - t))
        for _ in range(int(head.split()[0])):
            f.readline()
def sampler():
    while not stop:
        for n in nodes[:2]:
            samples[n.i].append((time.time(), int(ct.stats(n.addr)["ClusterRecordsApplied"])))
        time.sleep(0.05)
w = threading.Thread(target=writer); sm = threading.Thread(target=sampler)
w.start(); sm.start()
time.sleep(6)
t_join = time.time()
cb.start(nodes[2], name, args.work)
ct.owners(nodes)
t_owned = time.time()
time.sleep(6)
stop = True
w.join(); sm.join()
for k in (1, 2):
    gap, last_t, last_v = 0, None, None
    for t, v in samples[k]:
        if t < t_join - 1:
            last_t, last_v = t, v
            continue
        if v != last_v:
            last_t, last_v = t, v
        else:
            gap = max(gap, t - last_t)
    print(f"n{k}: longest stretch without applying anything after the join: {gap:.2f} s")
worst = max(d for t, d in batches if t >= t_join - 1)
med = sorted(d for t, d in batches if t < t_join)[len([1 for t, d in batches if t < t_join]) // 2]
print(f"join to all partitions owned: {t_owned - t_join:.1f} s; writer BATCH of 600: median before {med*1000:.0f} ms, worst during join {worst*1000:.0f} ms")
for n in nodes:
    n.stop()
