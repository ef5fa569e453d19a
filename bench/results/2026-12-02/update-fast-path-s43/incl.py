import collections, sys
# incl.py FILE DIVISOR PATTERN...: inclusive instructions (calls from other functions) of the
# functions whose names contain a PATTERN, per DIVISOR
path = sys.argv[1]; div = float(sys.argv[2]); pats = sys.argv[3:]
ir = collections.Counter(); n = collections.Counter(); fn = cfn = None; pending = None
for line in open(path):
    if line.startswith("fn="): fn = line[3:].strip()
    elif line.startswith("cfn="): cfn = line[4:].strip()
    elif line.startswith("calls="): pending = int(line[6:].split()[0])
    elif pending is not None and (line[:1].isdigit() or line[:1] in "+-*"):
        if cfn != fn and any(p in cfn for p in pats) and not any(p in fn for p in pats):
            ir[cfn] += int(line.split()[1]); n[cfn] += pending
        pending = None
for f, c in ir.most_common(40):
    print(f"{c:>14,} {c/div:>9,.0f}  calls {n[f]:>9,}  {f[:140]}")
