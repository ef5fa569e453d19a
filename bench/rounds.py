#!/usr/bin/env python3
"""Per-round figures of `peregrine bench compare` JSON reports: ops/s, ops per server CPU
second and client CPU of every round of every endpoint (the tables give medians only).

    python3 bench/rounds.py report.json [...]
"""
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    print(f)
    for ep in d['endpoints']:
        name = ep['endpoint']['name']
        ops = [round(r['overall']['ops_per_sec_sustained']) for r in ep['rounds']]
        cpu = [round(r.get('ops_per_server_cpu_second') or 0) for r in ep['rounds']]
        cl = [round(r.get('client_cpu_percent') or 0) for r in ep['rounds']]
        print(f"  {name:10s} ops/s {ops}  per server CPU s {cpu}  client% {cl}")
