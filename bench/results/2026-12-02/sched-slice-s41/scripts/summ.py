#!/usr/bin/env python3
"""summ.py RUN_DIR...: per run of bench/latency-open-loop.sh, the open loop's client percentiles,
the server's share within 1 / 2.5 ms, and the block cache's hits and misses over the open loop."""
import json, os, re, sys

def metric(path, name):
    for line in open(path):
        if line.startswith(name + ' '):
            return float(line.split()[1])
    return 0.0

for d in sys.argv[1:]:
    for w in 'abc':
        f = f'{d}/open-{w}.txt'
        if not os.path.exists(f):
            continue
        t = open(f).read()
        peak = re.search(r'peak (\d+) ops/s', t).group(1)
        ov = [l for l in t.splitlines() if l.startswith('overall')][0].split()
        w1 = re.search(r'within 1 ms: ([\d.]+)%', t).group(1)
        w25 = re.search(r'within 2.5 ms: ([\d.]+)%', t).group(1)
        o10 = re.search(r'within 10 ms: [\d.]+% \((\d+) over', t).group(1)
        ticks = int(re.search(r'ticks during the open-loop run: (\d+)', t).group(1))
        b, a = f'{d}/open-{w}.before', f'{d}/open-{w}.after'
        hits = metric(a, 'peregrine_storage_block_cache_hits_total') - metric(b, 'peregrine_storage_block_cache_hits_total')
        miss = metric(a, 'peregrine_storage_block_cache_misses_total') - metric(b, 'peregrine_storage_block_cache_misses_total')
        j = json.load(open(f'{d}/open-{w}.json'))
        worst = sorted((x['max_ms'] for x in j['timeline']), reverse=True)[:3]
        print(f"{os.path.basename(d):10} {w} peak {peak} rate {ov[3]} p50 {ov[5]} p99 {ov[7]} p99.9 {ov[8]} max {ov[9]}"
              f" | srv<=1ms {w1}% <=2.5ms {w25}% >10ms {o10} | cpu {ticks/60:.0f}%"
              f" | cache misses {miss:,.0f} of {hits+miss:,.0f} ({100*miss/max(hits+miss,1):.1f}%) | worst s {worst}")
