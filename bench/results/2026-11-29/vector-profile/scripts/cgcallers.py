"""Who calls functions whose name contains PATTERN, and how often, per operation.
Usage: cgcallers.py PROFILE OPERATIONS PATTERN  (--compress-strings=no)"""
import collections, re, sys

calls = collections.Counter()
fn = cfn = None
with open(sys.argv[1]) as f:
    for line in f:
        if line.startswith("fn="):
            fn = re.sub(r"::h[0-9a-f]{16}$", "", line[3:].strip())
        elif line.startswith("cfn="):
            cfn = line[4:].strip()
        elif line.startswith("calls=") and cfn and sys.argv[3] in cfn:
            calls[fn] += int(line[6:].split()[0])
ops = float(sys.argv[2])
for caller, c in calls.most_common(12):
    print(f"{c / ops:12,.1f}  {caller[:240]}")
