"""callers.py CG FN OPS: who calls functions matching FN, with inclusive cost per op."""
import collections, re, sys
path, pat, ops = sys.argv[1], sys.argv[2], int(sys.argv[3])
rx = re.compile(pat)
costs = collections.Counter()
fn = cfn = None; pending = False
for line in open(path):
    if line.startswith("fn="):
        fn = re.sub(r"::h[0-9a-f]{16}$", "", line[3:].strip())
    elif line.startswith("cfn="):
        cfn = re.sub(r"::h[0-9a-f]{16}$", "", line[4:].strip())
    elif line.startswith("calls="):
        pending = True
    elif pending and (line[:1].isdigit() or line[:1] in "+-*"):
        pending = False
        parts = line.split()
        if cfn and rx.search(cfn) and len(parts) >= 2:
            costs[(fn, cfn)] += int(parts[1])
for (f, c), v in costs.most_common(25):
    print(f"{v/ops:8.0f}  {f[:110]}  ->  {c[:60]}")
