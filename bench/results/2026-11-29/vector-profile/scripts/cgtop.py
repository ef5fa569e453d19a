"""Own (exclusive) instructions of the top functions of one Callgrind dump, per operation.
Usage: cgtop.py PROFILE OPERATIONS [N]   (profiles written with --compress-strings=no)
Uses bench/callgrind_diff.py's parser."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../.."))
from callgrind_diff import own_costs  # noqa: E402

costs = own_costs(sys.argv[1])
ops, n = float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 25
total = sum(costs.values())
print(f"total {total:,} instructions, {total / ops:,.0f} per operation ({ops:g} operations)")
for fn, c in costs.most_common(n):
    print(f"{100 * c / total:5.1f}% {c / ops:12,.0f}  {fn[:150]}")
