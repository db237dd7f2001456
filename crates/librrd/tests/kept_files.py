"""rrd_update_r in a long-running process while other processes change the
files between calls (tests/kept_files.rs).

Usage: python3 kept_files.py LIBRARY DIR

Our library keeps each file's descriptor and decoded header between calls;
Debian's opens every file afresh. Between calls, another process (Debian's
rrdtool, or a Python child) replaces a file by rename (same and different
schema), truncates one, holds rrdtool's lock on one, and deletes one. Every
call's return value and error text are recorded, and the files' bytes are
compared by the Rust side. Prints one JSON document: {"log": [...],
"fds": [descriptor numbers of .rrd files this process holds open]}.
"""

import ctypes as C
import json
import os
import shutil
import subprocess
import sys
import time

lib = C.CDLL(sys.argv[1])
os.chdir(sys.argv[2])
lib.rrd_get_error.restype = C.c_char_p
log = []
# Debian's rrdtool, on Debian's library, as the other process.
env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}


def foreign(*words):
    subprocess.run(["/usr/bin/rrdtool", *words], check=True, env=env, capture_output=True)


def error():
    e = lib.rrd_get_error().decode()
    lib.rrd_clear_error()
    return e


def record(name, rc):
    log.append([name, rc, error()])


def settle():
    # Stamps younger than 50 ms are not trusted; wait them out so the kept
    # header is really what the next call validates.
    time.sleep(0.08)


def create(name, ds=2):
    defs = [b"DS:d%d:GAUGE:600:U:U" % i for i in range(ds)] + [b"RRA:AVERAGE:0.5:1:30", b"RRA:MAX:0.5:3:30"]
    arr = (C.c_char_p * len(defs))(*defs)
    record("create " + name, lib.rrd_create_r(name.encode(), C.c_ulong(300), C.c_long(1600000000), len(defs), arr))


def update(name, t, *values):
    v = (C.c_char_p * 1)((":".join([str(t)] + [str(x) for x in values])).encode())
    record("update %s %d" % (name, t), lib.rrd_update_r(name.encode(), None, 1, v))


names = ["f%02d.rrd" % i for i in range(40)]
for n in names:
    create(n)
t = 1600000000
# Two passes over 40 files: with RRDSCALE_LIBRRD_MAX_OPEN=8 ours keeps at
# most 8 descriptors, the others open and close per call.
for _ in range(2):
    t += 300
    for i, n in enumerate(names):
        update(n, t, i, t % 1000)
settle()

# 1. Replaced by rename (same schema): a copy updated by Debian's rrdtool is
# renamed over f00. The old inode stays reachable through a hard link: our
# kept descriptor must not write to it.
os.link("f00.rrd", "old00.rrd")
before_old = open("old00.rrd", "rb").read()
shutil.copy("f00.rrd", "new.tmp")
foreign("update", "new.tmp", "%d:77:88" % (t + 300))
os.rename("new.tmp", "f00.rrd")
update("f00.rrd", t + 300, 1, 1)  # refused: the new file has this time already
update("f00.rrd", t + 600, 5, 6)
log.append(["old inode untouched", open("old00.rrd", "rb").read() == before_old, ""])
os.unlink("old00.rrd")
settle()

# 2. Replaced by rename with another schema (3 data sources).
create("three.rrd", ds=3)
os.rename("three.rrd", "f01.rrd")
update("f01.rrd", t + 300, 1, 2)  # two values for three data sources
update("f01.rrd", t + 300, 1, 2, 3)
settle()

# 3. Truncated by another process: no update may write into it, extend it
# or read past its end.
with open("f02.rrd", "r+b") as f:
    f.truncate(1000)
v = (C.c_char_p * 1)(b"%d:1:1" % (t + 300))
rc = lib.rrd_update_r(b"f02.rrd", None, 1, v)
# The texts differ by design (librrd names the header section it was
# loading; ours the lengths); both must say something.
log.append(["update truncated", rc, bool(error())])
log.append(["truncated length", os.path.getsize("f02.rrd"), ""])
os.unlink("f02.rrd")
settle()

# 4. rrdtool's lock held by another process: the call fails at once, and
# works once the lock is released.
locker = subprocess.Popen(
    [sys.executable, "-c",
     "import fcntl,sys\n"
     "f=open('f03.rrd','r+b')\n"
     "fcntl.lockf(f, fcntl.LOCK_EX)\n"
     "print('locked', flush=True)\n"
     "sys.stdin.readline()\n"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
assert locker.stdout.readline().strip() == b"locked"
update("f03.rrd", t + 300, 3, 3)
locker.stdin.write(b"go\n")
locker.stdin.close()
locker.wait()
update("f03.rrd", t + 300, 3, 3)
settle()

# 5. Deleted, then created again under the same name by another process.
os.unlink("f04.rrd")
update("f04.rrd", t + 300, 4, 4)
foreign("create", "f04.rrd", "-b", str(t), "-s", "300", "DS:d0:GAUGE:600:U:U", "DS:d1:GAUGE:600:U:U",
        "RRA:AVERAGE:0.5:1:30", "RRA:MAX:0.5:3:30")
update("f04.rrd", t + 300, 4, 4)
settle()

# 6. Updated by another process in between (kept header now stale).
foreign("update", "f05.rrd", "%d:9:9" % (t + 300))
update("f05.rrd", t + 600, 5, 5)

# Another pass over everything.
t += 900
for i, n in enumerate(names):
    update(n, t, i, i)

fds = []
for fd in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink("/proc/self/fd/" + fd)
    except OSError:
        continue
    if target.endswith(".rrd"):
        fds.append(int(fd))
json.dump({"log": log, "fds": sorted(fds)}, sys.stdout, indent=0)
