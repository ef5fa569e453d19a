"""callees.py CG FN OPS: what functions matching FN call, inclusive cost per op."""
import re, collections, sys
path, target, ops = sys.argv[1], sys.argv[2], int(sys.argv[3])
costs=collections.Counter(); fn=cfn=None; pending=False
for line in open(path):
    if line.startswith("fn="): fn=re.sub(r"::h[0-9a-f]{16}$","",line[3:].strip())
    elif line.startswith("cfn="): cfn=re.sub(r"::h[0-9a-f]{16}$","",line[4:].strip())
    elif line.startswith("calls="): pending=True
    elif pending and (line[:1].isdigit() or line[:1] in "+-*"):
        pending=False; parts=line.split()
        if fn and re.search(target, fn) and len(parts)>=2: costs[cfn]+=int(parts[1])
for c,v in costs.most_common(15): print(f"{v/ops:8.0f} {c[:130]}")
