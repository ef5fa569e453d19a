import collections, re, sys
# callers.py FILE OPS SUBSTR: inclusive Ir of calls into functions matching SUBSTR, by caller
path, ops, sub = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = collections.Counter(); fn=cfn=None; take=False
for line in open(path):
    if line.startswith("fn="): fn = re.sub(r"::h[0-9a-f]{16}$", "", line[3:].strip())
    elif line.startswith("cfn="): cfn = line[4:].strip()
    elif line.startswith("calls="): take = True
    elif take and (line[:1].isdigit() or line[:1] in "+-*"):
        take=False
        if sub in cfn: c[fn]+=int(line.split()[1])
for k,v in c.most_common(20): print(f"{v/ops:9.1f}  {k[:140]}")
