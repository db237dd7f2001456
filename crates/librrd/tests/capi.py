"""The C API itself, through ctypes (tests/python_rrdtool.rs).

Usage: python3 capi.py LIBRARY DIR

Loads LIBRARY (ours or Debian's librrd.so.8) and calls the entry points
python3-rrdtool does not: the thread-safe `_r` variants, rrd_test_error and
rrd_clear_error, rrd_info_r lists walked as C sees them, rrd_lastupdate_r's
arrays, and errors of every kind (including fetch errors, which the module
itself cannot survive with Debian's library: it frees uninitialised
pointers). Prints one JSON document of results.
"""

import ctypes as C
import json
import os
import shutil
import subprocess
import sys
import threading
import time

lib = C.CDLL(sys.argv[1])
os.chdir(sys.argv[2])
log = []

lib.rrd_get_error.restype = C.c_char_p
lib.rrd_strversion.restype = C.c_char_p
lib.rrd_version.restype = C.c_double
lib.rrd_last_r.restype = C.c_long
lib.rrd_first_r.restype = C.c_long
lib.rrd_last.restype = C.c_long
lib.rrd_first.restype = C.c_long
lib.rrd_set_to_DNAN.restype = C.c_double


class Blob(C.Structure):
    _fields_ = [("size", C.c_ulong), ("ptr", C.POINTER(C.c_ubyte))]


class InfoVal(C.Union):
    _fields_ = [("u_cnt", C.c_ulong), ("u_val", C.c_double), ("u_str", C.c_char_p), ("u_int", C.c_int), ("u_blo", Blob)]


class Info(C.Structure):
    pass


Info._fields_ = [("key", C.c_char_p), ("type", C.c_int), ("value", InfoVal), ("next", C.POINTER(Info))]
lib.rrd_info_r.restype = C.POINTER(Info)
lib.rrd_info.restype = C.POINTER(Info)
lib.rrd_update_v.restype = C.POINTER(Info)


def argv(*words):
    arr = (C.c_char_p * (len(words) + 1))(*[w.encode() for w in words], None)
    return len(words), arr


def error():
    """The error text and test flag, then cleared."""
    e = [lib.rrd_test_error(), lib.rrd_get_error().decode()]
    lib.rrd_clear_error()
    e.append(lib.rrd_test_error())
    return e


def record(name, result):
    log.append([name, result, error()])


def info_list(p):
    out = []
    while p:
        n = p.contents
        v = n.value
        key = n.key.decode()
        if key.endswith(".cur_row"):
            pass
        elif n.type == 0:
            out.append([key, "VAL", repr(v.u_val)])
        elif n.type == 1:
            out.append([key, "CNT", v.u_cnt])
        elif n.type == 2:
            out.append([key, "STR", v.u_str.decode()])
        elif n.type == 3:
            out.append([key, "INT", v.u_int])
        else:
            out.append([key, "BLO", v.u_blo.size])
        p = n.next
    return out


record("strversion", lib.rrd_strversion().decode())
record("version", lib.rrd_version())
record("DNAN", repr(lib.rrd_set_to_DNAN()))

# rrd_create_r2 with definitions only, then rrd_update_r with a template.
defs = (C.c_char_p * 3)(b"DS:a:GAUGE:600:U:U", b"DS:b:COUNTER:600:0:U", b"RRA:AVERAGE:0.5:1:20")
record("create_r", lib.rrd_create_r(b"r.rrd", C.c_ulong(300), C.c_long(1600000000), 3, defs))
for i in range(1, 12):
    vals = (C.c_char_p * 1)(("%d:%d:%d" % (1600000000 + 290 * i, i * 7, i * 1000)).encode())
    tmpl = b"b:a" if i % 2 else None
    record("update_r", lib.rrd_update_r(b"r.rrd", tmpl, 1, vals))
vals = (C.c_char_p * 1)(b"1600000001:1:1")
record("update_r past", lib.rrd_update_r(b"r.rrd", None, 1, vals))
record("update_r missing", lib.rrd_update_r(b"nope.rrd", None, 1, vals))
record("last_r", lib.rrd_last_r(b"r.rrd"))
record("first_r", lib.rrd_first_r(b"r.rrd", 0))
record("first_r bad index", lib.rrd_first_r(b"r.rrd", 5))
p = lib.rrd_info_r(b"r.rrd")
record("info_r", info_list(p))
lib.rrd_info_free(p)
record("info_r missing", bool(lib.rrd_info_r(b"nope.rrd")))

last = C.c_long()
cnt = C.c_ulong()
names = C.POINTER(C.c_char_p)()
lastds = C.POINTER(C.c_char_p)()
rc = lib.rrd_lastupdate_r(b"r.rrd", C.byref(last), C.byref(cnt), C.byref(names), C.byref(lastds))
record("lastupdate_r", [rc, last.value, [names[i].decode() for i in range(cnt.value)], [lastds[i].decode() for i in range(cnt.value)]])


def free_strings(arr, n):
    """Frees a malloced array of n malloced strings, as the caller must."""
    ptrs = C.cast(arr, C.POINTER(C.c_void_p))
    for i in range(n):
        lib.rrd_freemem(C.c_void_p(ptrs[i]))
    lib.rrd_freemem(ptrs)


free_strings(names, cnt.value)
free_strings(lastds, cnt.value)
rc = lib.rrd_lastupdate_r(b"nope.rrd", C.byref(last), C.byref(cnt), C.byref(names), C.byref(lastds))
record("lastupdate_r missing", rc)

# rrd_fetch_r: start, end and step are in and out.
start, end, step = C.c_long(1600000000), C.c_long(1600003000), C.c_ulong(300)
cnt = C.c_ulong()
names = C.POINTER(C.c_char_p)()
data = C.POINTER(C.c_double)()
rc = lib.rrd_fetch_r(b"r.rrd", b"AVERAGE", C.byref(start), C.byref(end), C.byref(step), C.byref(cnt), C.byref(names), C.byref(data))
rows = (end.value - start.value) // step.value
record("fetch_r", [rc, start.value, end.value, step.value, [names[i].decode() for i in range(cnt.value)],
                   [repr(data[i]) for i in range(rows * cnt.value)]])
free_strings(names, cnt.value)
lib.rrd_freemem(data)
for cf in (b"NOPE", b"MAX"):
    rc = lib.rrd_fetch_r(b"r.rrd", cf, C.byref(start), C.byref(end), C.byref(step), C.byref(cnt), C.byref(names), C.byref(data))
    record("fetch_r " + cf.decode(), rc)
    if rc == 0:
        free_strings(names, cnt.value)
        lib.rrd_freemem(data)

# rrd_fetch's argument errors (the module cannot show them with librrd).
for words in (
    ["fetch", "r.rrd"],
    ["fetch", "r.rrd", "NOPE"],
    ["fetch", "nope.rrd", "AVERAGE"],
    ["fetch", "r.rrd", "AVERAGE", "-s", "1600003000", "-e", "1600000000"],
    ["fetch", "r.rrd", "AVERAGE", "-s", "yesterday-noon-garbage"],
    ["fetch", "r.rrd", "AVERAGE", "-r", "0"],
    ["fetch", "r.rrd", "AVERAGE", "--nosuchoption"],
):
    n, a = argv(*words)
    rc = lib.rrd_fetch(n, a, C.byref(start), C.byref(end), C.byref(step), C.byref(cnt), C.byref(names), C.byref(data))
    record(" ".join(words), rc)

# argv-style calls with bad arguments: the return value and the text.
for words in (
    ["create", "x.rrd", "--step", "abc", "DS:a:GAUGE:1:U:U", "RRA:AVERAGE:0.5:1:1"],
    ["create", "x.rrd", "DS:a:NOTATYPE:1:U:U", "RRA:AVERAGE:0.5:1:1"],
    ["create", "x.rrd", "DS:a:GAUGE:1:U:U", "RRA:AVERAGE:2:1:1"],
    ["update", "r.rrd", "--template", "zz", "N:1"],
    ["update", "r.rrd", "abc"],
    ["tune", "r.rrd", "--heartbeat", "a"],
    ["resize", "r.rrd", "0"],
    ["restore", "nope.xml", "y.rrd"],
    ["dump", "nope.rrd"],
):
    n, a = argv(*words)
    fn = getattr(lib, "rrd_" + words[0])
    record(" ".join(words), fn(n, a))
n, a = argv("last", "nope.rrd")
record("last nope", lib.rrd_last(n, a))
n, a = argv("first", "nope.rrd")
record("first nope", lib.rrd_first(n, a))
n, a = argv("info", "nope.rrd")
record("info nope", bool(lib.rrd_info(n, a)))
n, a = argv("updatev", "r.rrd", "1600009000:1:2", "1600000000:1:1")
p = lib.rrd_update_v(n, a)
record("updatev fails later", info_list(p))
lib.rrd_info_free(p)
n, a = argv("updatev", "r.rrd")
record("updatev too few", bool(lib.rrd_update_v(n, a)))

# rrd_update_r in a long-running process keeps headers between calls; other
# writers (Debian's rrdtool: an update, a tune, a replaced file) change the
# file in between, after the 50 ms in which a stamp is not trusted.
env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}


def foreign(*words):
    subprocess.run(["/usr/bin/rrdtool", *words], check=True, env=env, capture_output=True)


t = 1600009000
for i in range(8):
    t += 300
    vals = (C.c_char_p * 1)(("%d:%d:%d" % (t, i, i * 500 + 20000)).encode())
    record("update_r kept %d" % i, lib.rrd_update_r(b"r.rrd", None, 1, vals))
    time.sleep(0.08)
    if i == 2:
        t += 300
        foreign("update", "r.rrd", "%d:5:30000" % t)
    elif i == 4:
        foreign("tune", "r.rrd", "-h", "a:900", "-i", "a:-5")
    elif i == 6:
        t += 300
        shutil.copy("r.rrd", "r.tmp")
        foreign("update", "r.tmp", "%d:7:40000" % t)
        os.rename("r.tmp", "r.rrd")
    time.sleep(0.08)
p = lib.rrd_info_r(b"r.rrd")
record("info_r after foreign writers", info_list(p))
lib.rrd_info_free(p)

# The dump of r.rrd, without and with the XML header, to files.
record("dump_opt_r", lib.rrd_dump_opt_r(b"r.rrd", b"r.xml", 0))
record("dump_opt_r 1", lib.rrd_dump_opt_r(b"r.rrd", b"r-1.xml", 1))
record("dump_opt_r 2", lib.rrd_dump_opt_r(b"r.rrd", b"r-2.xml", 2))
record("dump_r", lib.rrd_dump_r(b"r.rrd", b"r2.xml"))
record("dump_r missing", lib.rrd_dump_r(b"nope.rrd", b"n.xml"))

# Threads: rrd_update_r is thread-safe; four threads update their own files
# at once (ctypes releases the GIL around each call).
def writer(k):
    defs = (C.c_char_p * 2)(b"DS:v:DERIVE:600:U:U", b"RRA:AVERAGE:0.5:1:50")
    codes = [lib.rrd_create_r(("t%d.rrd" % k).encode(), C.c_ulong(60), C.c_long(1600000000), 2, defs)]
    for i in range(1, 150):
        vals = (C.c_char_p * 1)(("%d:%d" % (1600000000 + 60 * i + k, i * i * (k + 1))).encode())
        codes.append(lib.rrd_update_r(("t%d.rrd" % k).encode(), None, 1, vals))
    results[k] = codes


results = {}
threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
record("threads", [sorted(set(results[k])) for k in range(4)])

# Helpers: consolidation function numbers, pointer arrays, mkdir -p, the
# callback dump.
for cf in (b"AVERAGE", b"MIN", b"MAX", b"LAST", b"HWPREDICT", b"SEASONAL", b"DEVPREDICT", b"DEVSEASONAL",
           b"FAILURES", b"MHWPREDICT", b"average", b"NOPE"):
    record("cf_conv " + cf.decode(), lib.rrd_cf_conv(cf))
arr = C.POINTER(C.c_char_p)()
size = C.c_size_t(0)
for word in (b"one", b"two", b"three"):
    lib.rrd_add_strdup(C.byref(arr), C.byref(size), word)
record("add_strdup", [size.value] + [arr[i].decode() for i in range(size.value)])
lib.rrd_free_ptrs(C.byref(arr), C.byref(size))
record("free_ptrs", [size.value, bool(arr)])
record("random", lib.rrd_random() >= 0)
lib.rrd_scaled_duration.restype = C.c_char_p
for token, divisor in ((b"300", 60), (b"5m", 60), (b"5mx", 60), (b"7m", 120), (b"1y", 86400), (b"0", 1),
                       (b"0s", 1), (b"-5", 1), (b"5q", 1), (b"5", 0), (b"99999999999999999999999h", 1),
                       (b"2w", 3600), (b"3M", 1)):
    v = C.c_ulong(12345)
    msg = lib.rrd_scaled_duration(token, C.c_ulong(divisor), C.byref(v))
    record("scaled_duration %s/%d" % (token.decode(), divisor), [msg and msg.decode(), v.value])
record("mkdir_p", [lib.rrd_mkdir_p(b"a/b/c", 0o755), os.path.isdir("a/b/c")])
record("mkdir_p over a file", lib.rrd_mkdir_p(b"r.rrd/x", 0o755))
os.removedirs("a/b/c")
CB = C.CFUNCTYPE(C.c_size_t, C.c_void_p, C.c_size_t, C.c_void_p)
chunks = []


def collect(data, length, user):
    chunks.append(C.string_at(data, length))
    return length


lib.rrd_dump_cb_r.argtypes = [C.c_char_p, C.c_int, CB, C.c_void_p]
record("dump_cb_r", lib.rrd_dump_cb_r(b"r.rrd", 1, CB(collect), None))
with open("cb.xml", "wb") as f:
    f.write(b"".join(chunks))
record("dump_cb_r missing", lib.rrd_dump_cb_r(b"nope.rrd", 1, CB(collect), None))

json.dump(log, sys.stdout, indent=0)
