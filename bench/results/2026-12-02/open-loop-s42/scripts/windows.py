#!/usr/bin/env python3
"""windows.py OUTDIR NAME [P99_MS]: for each second of NAME's open loop (run by perfwin.sh) where
the client's p99 passed P99_MS (default 50), the server's samples in that second by thread name,
and the request threads' (`peregrine`) top symbols then; then the same for all the other seconds
(the baseline), so what the server ran in its worst seconds can be told from what it always runs."""
import collections, gzip, json, sys
d, name = sys.argv[1], sys.argv[2]
limit = float(sys.argv[3]) if len(sys.argv) > 3 else 50.0
j = json.load(open(f'{d}/{name}/open-a.json'))
t0 = j['started_unix']
bad = {t['second'] for t in j['timeline'] if t['p99_ms'] and t['p99_ms'] > limit}
by_sec = collections.defaultdict(lambda: collections.Counter())
syms = collections.defaultdict(lambda: collections.Counter())
for line in gzip.open(f'{d}/{name}.perf.txt.gz', 'rt', errors='replace'):
    # comm tid time: ip sym
    parts = line.split(None, 4)
    if len(parts) < 3:
        continue
    comm, tid, ts = parts[0], parts[1], parts[2].rstrip(':')
    sym = parts[4].strip() if len(parts) > 4 else '?'
    try:
        s = int(float(ts) - t0)
    except ValueError:
        continue
    by_sec[s][comm] += 1
    if comm == 'peregrine':
        syms[s][sym] += 1
def show(title, secs):
    threads, top = collections.Counter(), collections.Counter()
    for s in secs:
        threads.update(by_sec[s])
        top.update(syms[s])
    n = max(len(secs), 1)
    print(f"== {title}: {len(secs)} s; samples a second by thread: " +
          ", ".join(f"{k} {v / n:.0f}" for k, v in threads.most_common(5)))
    tot = sum(top.values()) or 1
    for sym, c in top.most_common(25):
        print(f"  {100 * c / tot:5.1f}%  {sym[:110]}")
tl = {t['second']: t for t in j['timeline']}
for s in sorted(bad):
    t = tl[s]
    print(f"second {s}: p99 {t['p99_ms']} ms, max {t['max_ms']} ms, {t['total']} ops; samples " +
          ", ".join(f"{k} {v}" for k, v in by_sec[s].most_common(4)))
show('worst seconds', sorted(bad))
show('other seconds', sorted(set(by_sec) - bad))
