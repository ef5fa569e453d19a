"""Calls of each function whose name contains one of PATTERNS in one Callgrind dump, per
operation. Usage: cgcalls.py PROFILE OPERATIONS PATTERN...  (--compress-strings=no)"""
import collections, sys

calls = collections.Counter()
cfn = None
with open(sys.argv[1]) as f:
    for line in f:
        if line.startswith("cfn="):
            cfn = line[4:].strip()
        elif line.startswith("calls=") and cfn and any(p in cfn for p in sys.argv[3:]):
            calls[cfn] += int(line[6:].split()[0])
ops = float(sys.argv[2])
for fn, c in calls.most_common():
    print(f"{c / ops:12,.1f} calls per operation  {fn[:150]}")
