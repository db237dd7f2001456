#!/usr/bin/env python3
"""Per UPDATE line, what each daemon of a running `rrdscale bench
daemon-ingest` spends in its steady state: context switches (every
thread's, from /proc/PID/task/*/status), system calls (/proc/PID/io's
syscr + syscw) and CPU (/proc/PID/stat, all threads).

    python3 scripts/steady-cost.py SECONDS [--series PERIOD] &
    rrdscale bench daemon-ingest --pattern batch-per-interval --files 20000 \\
        --intervals 80 --syncs default --vs rrdcached

It samples every 0.2 s, for SECONDS, each daemon whose run directory the
bench made (/var/tmp/rrdscale-dbench-*/SIDE/run: its pid file and socket),
with STATS' UpdatesReceived as the line count. The window per side runs
from the first sample after 40,000 lines (past the first BATCH, when every
file is touched the first time) to the last sample before the count
stopped growing (before the bench's closing FLUSHALL). CPU comes in clock
ticks (10 ms): take windows of a second or more.

With --series PERIOD it prints, instead, one row per PERIOD seconds and
side while lines arrive: lines per second, and for the thread that ran
longest in the window (the connection's, in a BATCH) its CPU per line
and its time waiting for a CPU, from /proc/PID/task/TID/schedstat
(nanoseconds), with the process's minor page faults per 1,000 lines. It
tells a stretch of slow lines that cost more CPU from one that waited.
"""

import argparse
import glob
import os
import socket
import time

FIRST_LINES = 40_000


def updates_received(sock_path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(sock_path)
    s.sendall(b"STATS\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        lines = data.decode().split("\n")
        count = lines[0].split(" ")[0]
        if count.lstrip("-").isdigit() and len(lines) > int(count) + 1:
            break
    s.close()
    for line in data.decode().split("\n"):
        if line.startswith("UpdatesReceived:"):
            return int(line.split()[1])
    return None


def sample(run):
    pid = int(open(os.path.join(run, "daemon.pid")).read().split()[0])
    switches = 0
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            text = open(status).read()
        except OSError:
            continue  # the thread ended
        switches += sum(int(l.split()[1]) for l in text.splitlines() if "ctxt_switches" in l)
    io = dict(l.split(": ") for l in open(f"/proc/{pid}/io").read().splitlines())
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    lines = updates_received(os.path.join(run, "daemon.sock"))
    return lines, switches, int(io["syscr"]) + int(io["syscw"]), cpu


def threads(pid):
    """Per thread: (name, ns run, ns waiting for a CPU)."""
    out = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            name = open(f"{task}/comm").read().strip()
            run, wait, _ = map(int, open(f"{task}/schedstat").read().split())
        except (OSError, ValueError):
            continue  # the thread ended
        out[task.rsplit("/", 1)[1]] = (name, run, wait)
    return out


def sample_series(run):
    pid = int(open(os.path.join(run, "daemon.pid")).read().split()[0])
    minflt = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[7])
    lines = updates_received(os.path.join(run, "daemon.sock"))
    return time.monotonic(), lines, threads(pid), minflt


def print_series(side, rows):
    print(f"\n{side}\n")
    print("| s | lines/s | busiest thread | its CPU ns per line | its wait for a CPU, ms per s | minor faults per 1,000 lines |")
    print("|---:|---:|---|---:|---:|---:|")
    t0 = rows[0][0]
    for (ta, na, tha, fa), (tb, nb, thb, fb) in zip(rows, rows[1:]):
        if na is None or nb is None or nb <= na:
            continue
        n, dt = nb - na, tb - ta
        ran = [(b[1] - tha[tid][1], b[2] - tha[tid][2], b[0]) for tid, b in thb.items() if tid in tha]
        if not ran:
            continue
        run_ns, wait_ns, name = max(ran)
        print(
            f"| {tb - t0:.2f} | {n / dt:,.0f} | {name} | {run_ns / n:.0f} | {wait_ns / 1e6 / dt:.1f} | {(fb - fa) * 1000 / n:.1f} |"
        )


def collect(seconds, period, probe):
    samples = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for run in glob.glob("/var/tmp/rrdscale-dbench-*/*/run"):
            try:
                got = probe(run)
            except (OSError, ValueError):
                continue  # not started yet, or gone
            samples.setdefault(run.split("/")[-2], []).append(got)
        time.sleep(period)
    return samples


def main():
    args = argparse.ArgumentParser(description="Per-line costs of the daemons of a running bench.")
    args.add_argument("seconds", type=float, nargs="?", default=120)
    args.add_argument("--series", type=float, metavar="PERIOD", help="one row per PERIOD seconds instead")
    a = args.parse_args()
    if a.series:
        for side, rows in collect(a.seconds, a.series, sample_series).items():
            print_series(side, rows)
        return
    samples = collect(a.seconds, 0.2, sample)
    print("| side | lines in the window | context switches per line | system calls per line | CPU µs per line |")
    print("|---|---:|---:|---:|---:|")
    for side, rows in samples.items():
        rows = [r for r in rows if r[0] is not None]
        if not rows:
            continue
        final = max(r[0] for r in rows)
        window = [r for r in rows if FIRST_LINES <= r[0] < final]
        if len(window) < 2:
            print(f"| {side} | too few samples | | | |")
            continue
        a, b = window[0], window[-1]
        n = b[0] - a[0]
        print(
            f"| {side} | {n:,} | {(b[1] - a[1]) / n:.5f} | {(b[2] - a[2]) / n:.5f} | {(b[3] - a[3]) / n * 1e6:.3f} |"
        )


if __name__ == "__main__":
    main()
