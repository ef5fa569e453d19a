"""Callees of functions matching PATTERN in a Callgrind profile (--compress-strings=no):
inclusive cost of each call edge, per operation. Usage: callees.py FILE OPS PATTERN..."""
import collections, re, sys
path, ops, pats = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
edges = collections.Counter(); own = collections.Counter(); ncalls = collections.Counter()
fn = cfn = None; after = False
norm = lambda s: re.sub(r"::h[0-9a-f]{16}$", "", s.strip())
with open(path) as f:
    for line in f:
        if line.startswith("fn="):
            fn = norm(line[3:]); after = False
        elif line.startswith("cfn="):
            cfn = norm(line[4:])
        elif line.startswith("calls="):
            after = True; ncalls[(fn, cfn)] += int(line[6:].split()[0])
        elif line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if len(parts) >= 2:
                if after:
                    edges[(fn, cfn)] += int(parts[1]); after = False
                else:
                    own[fn] += int(parts[1])
for p in pats:
    rx = re.compile(p)
    fns = sorted({f for f in own if rx.search(f)} | {f for (f, _) in edges if rx.search(f)})
    for f in fns:
        tot = own[f] + sum(c for (a, _), c in edges.items() if a == f)
        print(f"== {f}: own {own[f]/ops:.0f}, inclusive (own + callees) {tot/ops:.0f}")
        for (a, b), c in sorted(edges.items(), key=lambda x: -x[1]):
            if a == f and c / ops >= 20:
                print(f"   {c/ops:8.0f}  {ncalls[(a,b)]/ops:6.2f}x  {c/max(ncalls[(a,b)],1):7.0f}/call  {b[:130]}")
