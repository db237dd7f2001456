"""rrd_client.h through ctypes against a running rrdcached (tests/rrdc.rs).

Usage: python3 rrdc.py LIBRARY SOCKET DIR

Connects LIBRARY's client to the daemon at SOCKET and runs every rrdc_*
call on files in DIR; prints one JSON document of results.
"""

import ctypes as C
import json
import os
import sys

lib = C.CDLL(sys.argv[1])
sock, d = sys.argv[2], sys.argv[3]
os.chdir(d)
log = []
lib.rrd_get_error.restype = C.c_char_p
lib.rrdc_last.restype = C.c_long
lib.rrdc_first.restype = C.c_long


class Info(C.Structure):
    pass


class Blob(C.Structure):
    _fields_ = [("size", C.c_ulong), ("ptr", C.c_void_p)]


class InfoVal(C.Union):
    _fields_ = [("u_cnt", C.c_ulong), ("u_val", C.c_double), ("u_str", C.c_char_p), ("u_int", C.c_int), ("u_blo", Blob)]


Info._fields_ = [("key", C.c_char_p), ("type", C.c_int), ("value", InfoVal), ("next", C.POINTER(Info))]
lib.rrdc_info.restype = C.POINTER(Info)


def record(name, value):
    err = lib.rrd_get_error().decode()
    lib.rrd_clear_error()
    log.append([name, value, err])


f = os.path.join(d, "c.rrd").encode()
record("is_any_connected before", lib.rrdc_is_any_connected())
record("connect", lib.rrdc_connect(("unix:" + sock).encode()))
record("is_connected", lib.rrdc_is_connected(("unix:" + sock).encode()))
record("is_any_connected", lib.rrdc_is_any_connected())
defs = (C.c_char_p * 2)(b"DS:v:GAUGE:600:U:U", b"RRA:AVERAGE:0.5:1:100")
record("create", lib.rrdc_create(f, C.c_ulong(60), C.c_long(1600000000), 0, 2, defs))
record("create again, no overwrite", lib.rrdc_create(f, C.c_ulong(60), C.c_long(1600000000), 1, 2, defs))
for i in range(1, 30):
    vals = (C.c_char_p * 1)(("%d:%d" % (1600000000 + 60 * i, i * 3)).encode())
    record("update", lib.rrdc_update(f, 1, vals))
vals = (C.c_char_p * 1)(b"1600000000:1")
record("update past", lib.rrdc_update(f, 1, vals))
record("last", lib.rrdc_last(f))
record("flush", lib.rrdc_flush(f))
record("first", lib.rrdc_first(f, 0))
p = lib.rrdc_info(f)
items = []
q = p
while q:
    n = q.contents
    k = n.key.decode()
    if not k.endswith(".cur_row"):
        v = n.value
        value = {0: lambda: repr(v.u_val), 1: lambda: v.u_cnt, 2: lambda: v.u_str.decode(), 3: lambda: v.u_int}[n.type]()
        items.append([k, n.type, value])
    q = n.next
record("info", items)
lib.rrd_info_free(p)
start, end, step, cnt = C.c_long(1600000000), C.c_long(1600001800), C.c_ulong(0), C.c_ulong(0)
names = C.POINTER(C.c_char_p)()
data = C.POINTER(C.c_double)()
rc = lib.rrdc_fetch(f, b"AVERAGE", C.byref(start), C.byref(end), C.byref(step), C.byref(cnt), C.byref(names), C.byref(data))
rows = (end.value - start.value) // step.value if rc == 0 and step.value else 0
record("fetch", [rc, start.value, end.value, step.value, [names[i].decode() for i in range(cnt.value)],
                 [repr(data[i]) for i in range(rows * cnt.value)]])
rc = lib.rrdc_fetch(f, b"NOPE", C.byref(start), C.byref(end), C.byref(step), C.byref(cnt), C.byref(names), C.byref(data))
record("fetch bad cf", rc)
record("forget", lib.rrdc_forget(f))
record("flush missing", lib.rrdc_flush(os.path.join(d, "missing.rrd").encode()))
record("flush_if_daemon", lib.rrdc_flush_if_daemon(("unix:" + sock).encode(), f))
# argv-style calls with --daemon, then with RRDCACHED_ADDRESS.
lib.rrd_info.restype = C.POINTER(Info)
lib.rrd_last.restype = C.c_long
lib.rrd_first.restype = C.c_long


def argv(*words):
    return len(words), (C.c_char_p * (len(words) + 1))(*[w.encode() for w in words], None)


def info_keys(p):
    out = []
    while p:
        k = p.contents.key.decode()
        if not k.endswith(".cur_row"):
            out.append(k)
        p = p.contents.next
    return out


daemon = "unix:" + sock
g = os.path.join(d, "g.rrd")
record("create --daemon", lib.rrd_create(*argv("create", g, "--daemon", daemon, "--start", "1600000000", "--step", "60",
                                                "DS:v:COUNTER:600:U:U", "RRA:LAST:0:1:20")))
for i in range(1, 15):
    record("update --daemon", lib.rrd_update(*argv("update", "--daemon", daemon, g, "%d:%d" % (1600000000 + 60 * i, i * 100))))
record("update --daemon past", lib.rrd_update(*argv("update", "--daemon", daemon, g, "1600000000:1")))
record("last --daemon", lib.rrd_last(*argv("last", "--daemon", daemon, g)))
record("first --daemon", lib.rrd_first(*argv("first", "--daemon", daemon, g)))
record("info --daemon", info_keys(lib.rrd_info(*argv("info", "--daemon", daemon, g))))
start, end, step, cnt = C.c_long(), C.c_long(), C.c_ulong(), C.c_ulong()
rc = lib.rrd_fetch(*argv("fetch", "--daemon", daemon, g, "LAST", "-s", "1600000000", "-e", "1600000840"),
                   C.byref(start), C.byref(end), C.byref(step), C.byref(cnt), C.byref(names), C.byref(data))
rows = (end.value - start.value) // step.value if rc == 0 else 0
record("fetch --daemon", [rc, start.value, end.value, step.value, [repr(data[i]) for i in range(rows * cnt.value)]])
record("flushcached", lib.rrd_flushcached(*argv("flushcached", "--daemon", daemon, g)))
os.environ["RRDCACHED_ADDRESS"] = daemon
for i in range(15, 20):
    record("update RRDCACHED_ADDRESS", lib.rrd_update(*argv("update", g, "%d:%d" % (1600000000 + 60 * i, i * 100))))
record("last RRDCACHED_ADDRESS", lib.rrd_last(*argv("last", g)))
record("updatev RRDCACHED_ADDRESS", bool(lib.rrd_update_v(*argv("updatev", g, "1600001300:5000"))))
os.environ["RRDCACHED_ADDRESS"] = "unix:" + os.path.join(d, "no-such-socket")
record("update unreachable", lib.rrd_update(*argv("update", g, "1600001400:6000")))
record("info unreachable", info_keys(lib.rrd_info(*argv("info", g))))
rc = lib.rrd_fetch(*argv("fetch", g, "LAST", "-s", "1600000000", "-e", "1600000840"),
                   C.byref(start), C.byref(end), C.byref(step), C.byref(cnt), C.byref(names), C.byref(data))
rows = (end.value - start.value) // step.value if rc == 0 else 0
record("fetch unreachable", [rc, start.value, end.value, [repr(data[i]) for i in range(rows * cnt.value)]])
del os.environ["RRDCACHED_ADDRESS"]
record("update --daemon unreachable", lib.rrd_update(*argv("update", "--daemon", "unix:/nonexistent/sock", g, "1600001500:7000")))


class Stats(C.Structure):
    pass


class StatsVal(C.Union):
    _fields_ = [("counter", C.c_uint64), ("gauge", C.c_double)]


Stats._fields_ = [("name", C.c_char_p), ("type", C.c_uint16), ("flags", C.c_uint16), ("value", StatsVal),
                  ("next", C.POINTER(Stats))]


def stats():
    head = C.POINTER(Stats)()
    rc = lib.rrdc_stats_get(C.byref(head))
    out = []
    q = head
    while rc == 0 and q:
        n = q.contents
        out.append([n.name.decode(), n.type, n.flags, repr(n.value.gauge) if n.type == 1 else n.value.counter])
        q = n.next
    lib.rrdc_stats_free(head)
    return [rc, out]


record("connect for stats", lib.rrdc_connect(daemon.encode()))
record("stats_get", stats())
record("disconnect", lib.rrdc_disconnect())
record("stats_get disconnected", stats())
record("is_any_connected after", lib.rrdc_is_any_connected())
record("update disconnected", lib.rrdc_update(f, 1, vals))
json.dump(log, sys.stdout, indent=0)
