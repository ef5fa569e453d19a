"""Inclusive cost of one event column (0 = position, 1 = Ir, ... 8 = DLmr with --cache-sim)
of the calls into functions whose name contains each PATTERN. Usage: cgevents.py PROFILE
COLUMN PATTERN...  (--compress-strings=no; e.g. column 8 for LL data read misses)"""
import sys
col = int(sys.argv[2]); pats = sys.argv[3:]
tot = {p: 0 for p in pats}; cfn = None; pending = None
for line in open(sys.argv[1]):
    if line.startswith("cfn="): cfn = line[4:].strip()
    elif line.startswith("calls="): pending = next((p for p in pats if cfn and p in cfn), None)
    elif pending and (line[:1].isdigit() or line[:1] in "+-*"):
        parts = line.split()
        if len(parts) > col: tot[pending] += int(parts[col])
        pending = None
print(tot)
