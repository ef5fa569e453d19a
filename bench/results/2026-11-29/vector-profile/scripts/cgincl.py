"""Inclusive instructions per operation of the calls into functions whose name contains each
PATTERN (summed over call sites; a recursive function counts more than once).
Usage: cgincl.py PROFILE OPERATIONS PATTERN...  (--compress-strings=no)"""
import collections, sys

incl = collections.Counter()
cfn, pending = None, None
with open(sys.argv[1]) as f:
    for line in f:
        if line.startswith("cfn="):
            cfn = line[4:].strip()
        elif line.startswith("calls="):
            pending = next((p for p in sys.argv[3:] if cfn and p in cfn), None)
        elif pending and (line[:1].isdigit() or line[:1] in "+-*"):
            parts = line.split()
            if len(parts) >= 2:
                incl[pending] += int(parts[1])
            pending = None
ops = float(sys.argv[2])
for p in sys.argv[3:]:
    print(f"{incl[p] / ops:14,.0f}  {p}")
