#!/usr/bin/env python3
"""Per-operation costs from two callgrind files: total and the top functions by self cost.
Usage: table.py EVENT OPS before.cg after.cg [N]  (EVENT: Ir, D1mr, D1mw, ...)."""
import re, subprocess, sys

def costs(path, event):
    out = subprocess.run(["callgrind_annotate", f"--show={event}", "--threshold=100", "--inclusive=no", path],
                         capture_output=True, text=True, check=True).stdout
    total, funcs = None, {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)$", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        what = m.group(2)
        if "PROGRAM TOTALS" in what:
            total = n
        elif ":" in what:
            name = what.split(":", 1)[1].split(" [")[0].strip()
            funcs[name] = funcs.get(name, 0) + n
    return total, funcs

event, ops, a, b = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
top = int(sys.argv[5]) if len(sys.argv) > 5 else 15
ta, fa = costs(a, event)
tb, fb = costs(b, event)
print(f"{'total':>12} {ta/ops:12.1f} {tb/ops:12.1f}  {100*(tb-ta)/ta:+.1f}%")
for name in sorted(set(fa) | set(fb), key=lambda n: -max(fa.get(n, 0), fb.get(n, 0)))[:top]:
    print(f"{'':>12} {fa.get(name,0)/ops:12.1f} {fb.get(name,0)/ops:12.1f}  {name[:110]}")
