#!/usr/bin/env python3
"""summary.py RUN.json: a bench run's server CPU figure, each second's max latency (ms) / kops,
and each operation's p99, p99.9 and max (ms)."""
import json, sys

d = json.load(open(sys.argv[1]))
r = d if "timeline" in d else d["endpoints"][0]["rounds"][0]
print(r["started_utc"], "ops/server-cpu-s %.0f" % r["ops_per_server_cpu_second"])
print(" ".join("%d:%.0f/%.0f" % (t["second"], t["max_ms"], t["total"] / 1000) for t in r["timeline"]))
for o in r["ops"]:
    print(o["op"], "p99 %.2f p99.9 %.2f max %.1f" % (o["p99_ms"], o["p999_ms"], o["max_ms"]))
