import collections, sys
# callees.py FILE EXACT_FN: self Ir and each callee's calls and inclusive Ir, of the function named exactly EXACT_FN
path, name = sys.argv[1], sys.argv[2]
n = collections.Counter(); ir = collections.Counter(); selfc = 0; fn = cfn = None; pending = None
for line in open(path):
    if line.startswith("fn="): fn = line[3:].strip()
    elif line.startswith("cfn="): cfn = line[4:].strip()
    elif line.startswith("calls="): pending = int(line[6:].split()[0])
    elif (line[:1].isdigit() or line[:1] in "+-*") and fn == name:
        p = line.split()
        if pending is not None: n[cfn] += pending; ir[cfn] += int(p[1]); pending = None
        elif len(p) > 1: selfc += int(p[1])
    elif pending is not None and (line[:1].isdigit() or line[:1] in "+-*"): pending = None
print(f"self {selfc:12d}")
for k in sorted(n, key=lambda k: -ir[k])[:25]:
    print(f"{n[k]:8d} calls {ir[k]:12d} Ir {ir[k]/n[k]:9.1f}/call  {k[:120]}")
