import sys, re, collections
tot = collections.Counter(); by = collections.defaultdict(collections.Counter)
thread = None
for l in open(sys.argv[1]):
    m = re.match(r"\s*(\S.*?) \((\d+)\), (\d+) events", l)
    if m: thread = re.sub(r"[-:]?\d+$", "", m.group(1)); continue
    m = re.match(r"\s+(\w+)\s+(\d+)\s+(\d+)\s+[\d.]+", l)
    if m and thread:
        tot[m.group(1)] += int(m.group(2)); by[thread][m.group(1)] += int(m.group(2))
n = float(sys.argv[2])
print("per op:", " ".join(f"{k}={v/n:.3f}" for k, v in tot.most_common()))
for t, c in sorted(by.items(), key=lambda kv: -sum(kv[1].values())):
    print(f"  {t:28}", " ".join(f"{k}={v/n:.3f}" for k, v in c.most_common(6)))
