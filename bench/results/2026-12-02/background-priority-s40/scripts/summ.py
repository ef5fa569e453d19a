import json,sys,re,os
for d in sys.argv[1:]:
  for w in 'abc':
    f=f'{d}/open-{w}.txt'
    if not os.path.exists(f): continue
    t=open(f).read()
    peak=re.search(r'peak (\d+) ops/s; target (\d+)',t)
    ov=[l for l in t.splitlines() if l.startswith('overall')][0].split()
    w1=re.search(r'within 1 ms: ([\d.]+)%',t).group(1)
    w25=re.search(r'within 2.5 ms: ([\d.]+)%',t).group(1)
    o10=re.search(r'within 10 ms: [\d.]+% \((\d+) over',t).group(1)
    ticks=re.search(r'ticks during the open-loop run: (\d+)',t).group(1)
    j=json.load(open(f'{d}/open-{w}.json'))
    worst=sorted((x['max_ms'] for x in j['timeline']),reverse=True)[:3]
    print(f"{os.path.basename(d):10} {w} peak {peak.group(1)} rate {ov[3]} p50 {ov[5]} p99 {ov[7]} p99.9 {ov[8]} max {ov[9]} | srv<=1ms {w1}% <=2.5ms {w25}% >10ms {o10} | cpu {int(ticks)/60:.0f}% | worst s {worst}")
