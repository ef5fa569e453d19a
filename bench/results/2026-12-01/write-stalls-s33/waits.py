#!/usr/bin/env python3
"""Waits of the request thread over a threshold in a run.sh strace (STRACE=1).

usage: waits.py threads-X.txt strace-X.txt [min_seconds=0.01]
The request thread is the first thread named `peregrine` (the tokio worker); a futex wait of it
is time it spent blocked on a lock another thread held. Prints each wait and a summary.
"""
import re, sys

threads = [l.split(None, 1) for l in open(sys.argv[1])]
worker = next(tid for tid, name in threads if name.strip() == "peregrine")
least = float(sys.argv[3]) if len(sys.argv) > 3 else 0.01
waits = []
for line in open(sys.argv[2]):
    if not line.startswith(worker + " ") or "futex" not in line and "resumed" not in line:
        continue
    m = re.search(r"<([0-9.]+)>\s*$", line)
    if m and float(m.group(1)) >= least and "ETIMEDOUT" not in line:
        waits.append(float(m.group(1)))
        print(line.split()[1], "%.1f ms" % (1000 * float(m.group(1))))
print("waits >= %.0f ms: %d, longest %.1f ms, total %.0f ms"
      % (1000 * least, len(waits), 1000 * max(waits, default=0), 1000 * sum(waits)))
