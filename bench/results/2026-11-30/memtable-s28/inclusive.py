"""Inclusive Callgrind costs per operation of the functions on an indexed UPDATE's (or a
read's) memtable path, before and after. Usage: inclusive.py BEFORE.cg AFTER.cg OPS
(runs `callgrind_annotate --inclusive=yes`; events Ir, D1mr, DLmr: instructions, L1 and
last-level data read misses)."""
import re
import subprocess
import sys

FUNCS = [
    "<storage::LsmStorage as storage::Storage>::write",
    "lsm_tree::tree::Tree::append_entry",
    "lsm_tree::memtable::Memtable::insert",
    "lsm_tree::memtable::Memtable::get_hashed",
    "crossbeam_skiplist::base::SkipList<K,V>::search_position",
    "crossbeam_skiplist::base::SkipList<K,V>::lower_bound",
    "<storage::LsmStorage as storage::Storage>::get_shared",
    "lsm_tree::tree::Tree::get_merged",
]
COLS = {"Ir": 0, "D1mr": 4, "DLmr": 7}


def costs(path):
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", path],
                         capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        head = line.split(" /")[0].split(" PROGRAM")[0]  # the counts, before the file name
        # Each count is "N (p%)", or "0" or "." for none.
        nums = [int(n.replace(",", "")) if n else 0
                for n, _ in re.findall(r"([\d,]+) \(\s*[\d.]+%\)|(?:^|\s)(0|\.)(?=\s|$)", head)]
        if "PROGRAM TOTALS" in line:
            found["(whole process)"] = nums
            continue
        m = re.search(r":(.+) \[/", line)  # a function's own line names its object file
        if m and m.group(1) in FUNCS and m.group(1) not in found and len(nums) >= 9:
            found[m.group(1)] = nums
    return found


before, after, ops = costs(sys.argv[1]), costs(sys.argv[2]), int(sys.argv[3])
print(f"{'per operation':58} " + " ".join(f"{c:>17}" for c in COLS))
for f in ["(whole process)"] + FUNCS:
    if f not in before and f not in after:
        continue
    cells = []
    for i in COLS.values():
        b = before.get(f, [0] * 9)[i] / ops
        a = after.get(f, [0] * 9)[i] / ops
        cells.append(f"{b:8.1f} -> {a:6.1f}" if b < 1000 else f"{b:7.0f} -> {a:7.0f}")
    print(f"{f[:58]:58} " + " ".join(f"{c:>17}" for c in cells))
