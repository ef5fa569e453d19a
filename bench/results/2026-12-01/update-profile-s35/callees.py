import collections, re, sys
# callees.py FILE OPS SUBSTR: inclusive Ir of each callee of functions matching SUBSTR, plus self
path, ops, sub = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = collections.Counter(); selfc=0; fn=cfn=None; take=False; after=False
for line in open(path):
    if line.startswith("fn="): fn = line[3:].strip()
    elif line.startswith("cfn="): cfn = line[4:].strip()
    elif line.startswith("calls="): take = True
    elif (line[:1].isdigit() or line[:1] in "+-*") and fn and sub in fn:
        p=line.split()
        if take: c[cfn[:120]]+=int(p[1]); take=False
        elif len(p)>1: selfc+=int(p[1])
    elif take and (line[:1].isdigit() or line[:1] in "+-*"): take=False
print(f"self {selfc/ops:9.1f}")
for k,v in c.most_common(25): print(f"{v/ops:9.1f}  {k}")
