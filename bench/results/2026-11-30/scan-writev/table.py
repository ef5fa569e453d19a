#!/usr/bin/env python3
"""Per-operation self costs of two callgrind files, by function (the lead's own.py, from
/tmp/lead/cgsim): the total and the functions that cost most in either.
Usage: table.py BEFORE.cg AFTER.cg OPS COLUMN [N]
COLUMN: 1 Ir, 2 Dr, 3 Dw, 4 I1mr, 5 D1mr, 6 D1mw, 7 ILmr, 8 DLmr, 9 DLmw."""
import collections
import re
import sys


def own(path, idx):
    c = collections.Counter()
    fn, after = None, False
    for line in open(path):
        if line.startswith("fn="):
            fn = re.sub(r"::h[0-9a-f]{16}$", "", line[3:].strip())
        elif line.startswith("calls="):
            after = True  # the next cost line is the call's inclusive cost, not this function's
        elif line[:1].isdigit() or line[:1] in "+-*":
            if after:
                after = False
            elif fn is not None:
                p = line.split()
                if len(p) > idx:
                    c[fn] += int(p[idx])
    return c


a, b = own(sys.argv[1], int(sys.argv[4])), own(sys.argv[2], int(sys.argv[4]))
ops = int(sys.argv[3])
top = int(sys.argv[5]) if len(sys.argv) > 5 else 25
ta, tb = sum(a.values()), sum(b.values())
print(f"total {ta / ops:.1f} {tb / ops:.1f} ({100 * (tb - ta) / ta:+.1f}%)")
for k in sorted(set(a) | set(b), key=lambda k: -max(a[k], b[k]))[:top]:
    print(f"{a[k] / ops:10.2f} {b[k] / ops:10.2f}  {k[:110]}")
