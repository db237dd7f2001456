"""One side of the python3-rrdtool differential run (tests/python_rrdtool.rs).

Usage: python3 differential.py DIR SEED CASES

Runs CASES random schemas and update streams (from SEED, so both sides make
the same calls) through Debian's `rrdtool` module, in DIR, and prints one
JSON document: the librrd files mapped into this process and every call's
result or error text. The files are left in DIR for the Rust side to compare
byte for byte. Nothing depends on the clock: every time is explicit.
"""

import json
import os
import random
import sys

import rrdtool

directory, seed, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.chdir(directory)
rng = random.Random(seed)
log = []


def plain(value):
    """A result as JSON: tuples as lists, datetimes and bytes as text."""
    if isinstance(value, dict):
        # An RRA's current row is random in rrdtool (and in rrdscale).
        return {k: plain(v) for k, v in sorted(value.items()) if not k.endswith(".cur_row")}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return "bytes:%d" % len(value)
    if isinstance(value, float):
        return repr(value)
    if value is None or isinstance(value, (int, str)):
        return value
    return str(value)


def call(name, *args):
    try:
        result = ["ok", plain(getattr(rrdtool, name)(*args))]
    except Exception as e:  # the error text is part of the result
        result = ["error", type(e).__name__, str(e)]
    log.append([name, list(args), result])
    return result


CFS = ["AVERAGE", "MIN", "MAX", "LAST"]
TYPES = ["GAUGE", "COUNTER", "DERIVE", "ABSOLUTE"]

for case in range(cases):
    name = "c%d.rrd" % case
    step = rng.choice([1, 10, 60, 300])
    start = 1_500_000_000 + rng.randrange(0, 86400)
    nds = rng.randint(1, 3)
    ds = []
    for i in range(nds):
        kind = rng.choice(TYPES)
        lo = rng.choice(["U", "0", "-100"])
        hi = rng.choice(["U", "1000", "1e9"])
        ds.append("DS:d%d:%s:%d:%s:%s" % (i, kind, step * rng.choice([2, 3, 10]), lo, hi))
    rras = []
    for cf in rng.sample(CFS, rng.randint(1, 4)):
        for _ in range(rng.randint(1, 2)):
            rras.append("RRA:%s:%s:%d:%d" % (cf, rng.choice(["0", "0.5", "0.99"]), rng.choice([1, 2, 5]), rng.randint(3, 40)))
    call("create", name, "--start", str(start), "--step", str(step), *ds, *rras)
    t = start
    for batch in range(rng.randint(1, 4)):
        values = []
        for _ in range(rng.randint(1, 30)):
            t += rng.choice([1, step // 2 or 1, step, step, 2 * step, 7 * step + 3])
            row = []
            for _ in range(nds):
                row.append(rng.choice(["U", str(rng.randint(0, 500)), "%.3f" % rng.uniform(-50, 5000)]))
            values.append("%d:%s" % (t, ":".join(row)))
        if rng.random() < 0.3:
            r = call("updatev", name, *values)
            if r[0] == "ok" and r[1].get("return_value") == -1:
                # A failed updatev returns its list and leaves the error
                # text set; librrd's later calls would fail on that stale
                # text (see docs/compatibility.md), so clear it the only
                # way the module can: a call that fails and raises.
                call("info", "no-such-file-clears-the-error.rrd")
        else:
            call("update", name, *values)
        if rng.random() < 0.2:
            # In the past: an error, after the earlier values were written.
            call("update", name, "%d:%s" % (t - step, ":".join(["1"] * nds)))
        call("lastupdate", name)
        call("first", name)
        call("last", name)
        call("info", name)
        end = t - t % step
        for cf in sorted({r.split(":")[1] for r in rras}):
            call("fetch", name, cf, "-s", str(start), "-e", str(end))
            call("fetch", name, cf, "-s", str(end - 20 * step), "-e", str(end), "-r", str(step * 2))
        cf = rras[0].split(":")[1]
        defs = ["DEF:a=%s:d0:%s" % (name, cf), "CDEF:b=a,2,*"]
        call("xport", "-s", str(start), "-e", str(end), *defs, "XPORT:a:alpha", "XPORT:b:beta")
        g = call(
            "graphv", "g%d.png" % case, "-s", str(start), "-e", str(end), *defs,
            "LINE1:a#ff0000:a", "PRINT:a:AVERAGE:%.3lf", "GPRINT:b:MAX:%.2lf",
        )
        call("graph", "h%d.png" % case, "-s", str(start), "-e", str(end), *defs, "AREA:b#00ff00", "PRINT:b:MIN:%.1lf")
    # Settings, then a resized copy, then the XML.
    call("tune", name, "-h", "d0:%d" % (step * 5), "-a", "d0:%d" % rng.randint(2000, 9000))
    call("resize", name, "0", rng.choice(["GROW", "SHRINK"]), str(rng.randint(1, 3)))
    if os.path.exists("resize.rrd"):
        os.rename("resize.rrd", "r%d.rrd" % case)
    call("dump", name, "x%d.xml" % case)
    call("info", name)

# Errors: the text librrd leaves in rrd_get_error, through the module.
call("create", "e.rrd", "--step", "60", "DS:x:GAUGE:120:U:U")
call("create", "e.rrd", "--step", "60", "RRA:AVERAGE:0.5:1:10")
call("create", "e.rrd", "--step", "0", "DS:x:GAUGE:120:U:U", "RRA:AVERAGE:0.5:1:10")
call("create", "c0.rrd", "--no-overwrite", "DS:x:GAUGE:120:U:U", "RRA:AVERAGE:0.5:1:10")
call("update", "missing.rrd", "N:1")
call("update", "c0.rrd", "1:2:3:4:5")
call("update", "c0.rrd")
call("updatev", "c0.rrd", "--daemon", "x", "N:1")
call("info", "missing.rrd")
call("lastupdate", "missing.rrd")
call("first", "missing.rrd")
call("last", "missing.rrd")
call("first", "c0.rrd", "--rraindex", "99")
call("tune", "c0.rrd", "-h", "nosuchds:100")
call("tune", "missing.rrd", "-h", "x:100")
call("resize", "c0.rrd", "99", "GROW", "1")
call("resize", "c0.rrd", "0", "SIDEWAYS", "1")
call("dump", "missing.rrd", "m.xml")
call("xport", "-s", "1500000000", "-e", "1500086400", "DEF:a=missing.rrd:x:AVERAGE", "XPORT:a")
call("xport", "-s", "1500000000", "-e", "1500086400")
call("graphv", "e.png", "-s", "1500000000", "-e", "1500086400", "DEF:a=missing.rrd:x:AVERAGE", "LINE:a#000000")
call("graph", "e.png", "--width", "x", "DEF:a=c0.rrd:d0:AVERAGE", "LINE:a#000000")
call("list", "no/such/directory")

maps = open("/proc/self/maps").read()
libs = sorted({line.split()[-1] for line in maps.splitlines() if "librrd.so" in line})
json.dump({"libs": libs, "log": log}, sys.stdout, indent=0)
