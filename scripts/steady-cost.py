#!/usr/bin/env python3
"""Per UPDATE line, what each daemon of a running `rrdscale bench
daemon-ingest` spends in its steady state: context switches (every
thread's, from /proc/PID/task/*/status), system calls (/proc/PID/io's
syscr + syscw) and CPU (/proc/PID/stat, all threads).

    python3 scripts/steady-cost.py SECONDS &
    rrdscale bench daemon-ingest --pattern batch-per-interval --files 20000 \\
        --intervals 80 --syncs default --vs rrdcached

It samples every 0.2 s, for SECONDS, each daemon whose run directory the
bench made (/var/tmp/rrdscale-dbench-*/SIDE/run: its pid file and socket),
with STATS' UpdatesReceived as the line count. The window per side runs
from the first sample after 40,000 lines (past the first BATCH, when every
file is touched the first time) to the last sample before the count
stopped growing (before the bench's closing FLUSHALL). CPU comes in clock
ticks (10 ms): take windows of a second or more.
"""

import glob
import os
import socket
import sys
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


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 120
    samples = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for run in glob.glob("/var/tmp/rrdscale-dbench-*/*/run"):
            try:
                got = sample(run)
            except (OSError, ValueError):
                continue  # not started yet, or gone
            if got[0] is not None:
                samples.setdefault(run.split("/")[-2], []).append(got)
        time.sleep(0.2)
    print("| side | lines in the window | context switches per line | system calls per line | CPU µs per line |")
    print("|---|---:|---:|---:|---:|")
    for side, rows in samples.items():
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
