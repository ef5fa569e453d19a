#!/usr/bin/env python3
"""summ2.py RUN_DIR/NAME...: one line per run of run1.sh/perfwin.sh: peak, open-loop rate, client
p50/p99/p99.9/max, the server's share within 1 and 2.5 ms, request-thread and worker CPU, block
loads missing the cache over the open loop (reads' loads; warming is not counted), and the
number of seconds whose client p99 passed 10 and 50 ms."""
import json, os, re, sys
def metric(path, name):
    for line in open(path):
        if line.startswith(name + ' '):
            return float(line.split()[1])
    return 0.0
for d in sys.argv[1:]:
    t = open(f'{d}/open-a.txt').read()
    peak = re.search(r'peak (\d+) ops/s', t).group(1)
    ov = [l for l in t.splitlines() if l.startswith('overall')][0].split()
    w1 = re.search(r'within 1 ms: ([\d.]+)%', t).group(1)
    w25 = re.search(r'within 2.5 ms: ([\d.]+)%', t).group(1)
    req = re.search(r'  peregrine: [\d.]+ \(([\d.]+)%\)', t).group(1)
    bg = re.search(r'  fjall:worker: [\d.]+ \(([\d.]+)%\)', t)
    b, a = f'{d}/open-a.before', f'{d}/open-a.after'
    g = lambda n: metric(a, n) - metric(b, n)
    hits, miss = g('peregrine_storage_block_cache_hits_total'), g('peregrine_storage_block_cache_misses_total')
    j = json.load(open(f'{d}/open-a.json'))
    over10 = sum(1 for x in j['timeline'] if x['p99_ms'] and x['p99_ms'] > 10)
    over50 = sum(1 for x in j['timeline'] if x['p99_ms'] and x['p99_ms'] > 50)
    print(f"{d:28} peak {peak:>6} rate {ov[3]:>7} p50 {ov[5]:>6} p99 {ov[7]:>6} p99.9 {ov[8]:>6} max {ov[9]:>6}"
          f" | srv<=1ms {float(w1):5.1f}% <=2.5ms {float(w25):5.1f}% | req {req}% bg {bg.group(1) if bg else '-'}%"
          f" | misses {100 * miss / max(hits + miss, 1):4.1f}% ({miss:,.0f}) | s p99>10ms {over10} >50ms {over50}")
