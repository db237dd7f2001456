#!/usr/bin/env python3
"""What one `fdatasync` costs after a journal-sized append, by how the
blocks written were set aside: reserved with `fallocate` (unwritten
extents, as the journal's windows are now), appended past the end (as a
large commit beyond the windows is), or written with zeros and synced
beforehand (nothing left for the sync but the data and the disk's cache
flush).

    python3 scripts/sync-cost.py [DIR] [ROUNDS]

DIR (default /var/tmp) should be on the journal's file system. Each line:
wall time per write-and-sync, this thread's CPU per sync (the file
system's journal thread is not counted), and the sync's median and 99th
percentile. Writes one file of about 70 MiB in DIR and removes it.
"""

import os
import sys
import time

CHUNK = 180 * 1024  # what one sync covered in the bulk bench (4 clients, BATCHes of 1,000 lines)
SYNCS = 400


def measure(directory, mode):
    path = os.path.join(directory, f"sync-cost-{os.getpid()}-{mode}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        total = SYNCS * CHUNK
        if mode == "fallocate":
            os.posix_fallocate(fd, 0, total)
        elif mode == "zeroed":
            zeros = b"\0" * (1 << 20)
            for offset in range(0, total, len(zeros)):
                os.pwrite(fd, zeros, offset)
        os.fsync(fd)
        data = os.urandom(CHUNK)
        cpu0, wall0 = time.process_time(), time.monotonic()
        latencies = []
        for i in range(SYNCS):
            os.pwrite(fd, data, i * CHUNK)
            t = time.monotonic()
            os.fdatasync(fd)
            latencies.append(time.monotonic() - t)
        wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
    finally:
        os.close(fd)
        os.unlink(path)
    latencies.sort()
    p50, p99 = latencies[SYNCS // 2], latencies[int(SYNCS * 0.99)]
    return wall / SYNCS * 1e6, cpu / SYNCS * 1e6, p50 * 1e6, p99 * 1e6


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "/var/tmp"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    print("| blocks | wall µs per write+sync | CPU µs per sync | sync p50 µs | sync p99 µs |")
    print("|---|---:|---:|---:|---:|")
    for _ in range(rounds):
        for mode in ("fallocate", "append", "zeroed"):
            wall, cpu, p50, p99 = measure(directory, mode)
            print(f"| {mode} | {wall:.0f} | {cpu:.0f} | {p50:.0f} | {p99:.0f} |")


if __name__ == "__main__":
    main()
