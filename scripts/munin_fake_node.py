#!/usr/bin/env python3
"""A fake munin-node for scripts/munin-pixels.sh.

Speaks the munin-node protocol on 127.0.0.1:PORT for one host ("node")
with four plugins shaped like Munin's core ones: load (a LINE), cpu
(DERIVE counters drawn as stacked AREAs, with an outage), memory (stacked
GAUGE AREAs) and if_eth0 (in/out traffic, negative out). Values depend only
on how many times a plugin was fetched, so every run draws the same data.

Usage: munin_fake_node.py PORT
"""

import math
import socketserver
import sys

CONFIGS = {
    "load": """graph_title Load average
graph_args --base 1000 -l 0
graph_vlabel load
graph_scale no
graph_category system
load.label load
load.warning 10
load.critical 120
""",
    "cpu": """graph_title CPU usage
graph_order system user nice idle iowait
graph_args --base 1000 -r --lower-limit 0 --upper-limit 200
graph_vlabel %
graph_scale no
graph_category system
system.label system
system.draw AREA
system.type DERIVE
system.min 0
system.cdef system,100,/
user.label user
user.draw STACK
user.type DERIVE
user.min 0
user.cdef user,100,/
nice.label nice
nice.draw STACK
nice.type DERIVE
nice.min 0
nice.cdef nice,100,/
idle.label idle
idle.draw STACK
idle.type DERIVE
idle.min 0
idle.cdef idle,100,/
iowait.label iowait
iowait.draw STACK
iowait.type DERIVE
iowait.min 0
iowait.cdef iowait,100,/
""",
    "memory": """graph_title Memory usage
graph_args --base 1024 -l 0 --upper-limit 8589934592
graph_vlabel Bytes
graph_category system
graph_order apps page_tables swap_cache cached buffers free
apps.label apps
apps.draw AREA
page_tables.label page_tables
page_tables.draw STACK
swap_cache.label swap_cache
swap_cache.draw STACK
cached.label cache
cached.draw STACK
buffers.label buffers
buffers.draw STACK
free.label unused
free.draw STACK
""",
    "if_eth0": """graph_title eth0 traffic
graph_order down up
graph_args --base 1000
graph_vlabel bits in (-) / out (+) per ${graph_period}
graph_category network
down.label received
down.type DERIVE
down.graph no
down.cdef down,8,*
down.min 0
up.label bps
up.type DERIVE
up.negative down
up.cdef up,8,*
up.min 0
""",
}

fetches = {name: 0 for name in CONFIGS}
counters = {}


def counter(key, rate, n):
    counters[key] = counters.get(key, 0) + int(rate * 300)
    return counters[key]


def fetch(name):
    n = fetches[name] = fetches[name] + 1
    wave = math.sin(n / 20.0)
    if name == "load":
        return [f"load.value {1.5 + wave + (n % 7) / 10:.2f}"]
    if name == "cpu":
        if 200 <= n < 207:  # a 35-minute outage
            return []
        rates = {"system": 20 + 10 * wave, "user": 60 + 30 * math.cos(n / 13.0), "nice": 2,
                 "idle": 100 - 20 * wave, "iowait": 5 + (n % 5)}
        return [f"{k}.value {counter(k, v, n)}" for k, v in rates.items()]
    if name == "memory":
        gib = 1 << 30
        values = {"apps": 2.5 * gib * (1 + 0.2 * wave), "page_tables": 0.05 * gib, "swap_cache": 0.01 * gib,
                  "cached": 3 * gib, "buffers": 0.3 * gib, "free": 1.5 * gib * (1 - 0.2 * wave)}
        return [f"{k}.value {int(v)}" for k, v in values.items()]
    return [f"down.value {counter('down', 2e6 * (1.2 + wave), n)}",
            f"up.value {counter('up', 5e5 * (1.1 - wave), n)}"]


class Node(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(b"# munin node at node\n")
        for raw in self.rfile:
            words = raw.decode().split()
            if not words or words[0] == "quit":
                return
            cmd, arg = words[0], words[1] if len(words) > 1 else ""
            if cmd == "cap":
                out = "cap multigraph\n"
            elif cmd == "nodes":
                out = "node\n.\n"
            elif cmd == "list":
                out = " ".join(CONFIGS) + "\n"
            elif cmd == "config" and arg in CONFIGS:
                out = CONFIGS[arg] + ".\n"
            elif cmd == "fetch" and arg in CONFIGS:
                out = "".join(line + "\n" for line in fetch(arg)) + ".\n"
            elif cmd == "version":
                out = "munins node on node version: 2.0.73\n"
            else:
                out = "# Unknown command.\n.\n"
            self.wfile.write(out.encode())
            self.wfile.flush()


if __name__ == "__main__":
    socketserver.TCPServer.allow_reuse_address = True
    with socketserver.TCPServer(("127.0.0.1", int(sys.argv[1])), Node) as server:
        server.serve_forever()
