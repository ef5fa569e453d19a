#!/usr/bin/env python3
"""timeline.py RUN_DIR NAME [OPEN]: the open loop of RUN_DIR/NAME (open-a by default) second by
second beside sample2.sh's samples (RUN_DIR/NAME.samples): block cache misses a second and their
share of block loads, requests answered a second, the request threads' and fjall workers' CPU
(percent of a core), L0 tables, compactions active, sealed memtables; then the client's p99 and
max of that second."""
import json, sys
d, name = sys.argv[1], sys.argv[2]
opn = sys.argv[3] if len(sys.argv) > 3 else 'open-a'
j = json.load(open(f'{d}/{name}/{opn}.json'))
t0 = j['started_unix']
tl = {t['second']: t for t in j['timeline']}
rows = []
for line in open(f'{d}/{name}.samples'):
    f = line.split()
    if len(f) < 15:
        continue
    rows.append((float(f[0]), dict(zip(f[1::2], f[2::2]))))
prev = None
for ts, kv in rows:
    if ts < t0 - 1 or ts > t0 + j['shape']['duration'] + 1:
        prev = (ts, kv)
        continue
    if prev:
        dt = ts - prev[0]
        p = prev[1]
        g = lambda k: int(kv[k]) - int(p[k])
        dm, dh = g('miss'), g('hits')
        t = tl.get(int(ts - t0), {})
        print(f"{ts - t0:6.1f} miss/s {dm / dt:7.0f} ({100 * dm / max(dm + dh, 1):4.1f}%) exec/s {g('exec') / dt:6.0f}"
              f" req {g('req') / dt:4.0f}% bg {g('bg') / dt:4.0f}% l0 {kv['l0']} comp {kv['comp']} sealed {kv['sealed']}"
              f" | p99 {t.get('p99_ms')} max {t.get('max_ms')}")
    prev = (ts, kv)
