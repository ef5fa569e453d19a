#!/usr/bin/env python3
"""How many times a callgrind file's measured part called a function (summed over its callers'
calls= lines), and the program's instructions per call. Usage: calls.py FILE.cg FUNCTION_SUFFIX
(the rows a YCSB E run scanned: engine::read::SelectRun::visit_row)."""
import sys

path, target = sys.argv[1], sys.argv[2]
n, cfn, total = 0, None, None
for line in open(path):
    if line.startswith("cfn="):
        cfn = line[4:].strip()
    elif line.startswith("calls=") and cfn and cfn.endswith(target):
        n += int(line[6:].split()[0])
    elif line.startswith("summary:"):
        total = int(line.split()[1])
print(f"{n} calls, {total / n:.0f} instructions per call")
