import collections, sys
# selfcost.py FILE [DIVISOR] [N]: the functions' own (exclusive) instructions in a Callgrind file
path = sys.argv[1]; div = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
own = collections.Counter(); fn = None; skip = False; total = 0
for line in open(path):
    if line.startswith("fn="): fn = line[3:].strip(); continue
    if line.startswith("calls="): skip = True; continue
    if line[:1].isdigit() or line[:1] in "+-*":
        parts = line.split()
        if len(parts) > 1:
            c = int(parts[1])
            if skip: skip = False
            else: own[fn] += c; total += c
for f, c in own.most_common(top):
    print(f"{c:>14,} {100*c/total:5.1f}% {c/div:>10,.0f}  {f[:150]}")
