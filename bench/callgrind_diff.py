"""Own (exclusive) instructions per operation of each function in two Callgrind profiles, and
the functions that changed most. Usage: callgrind_diff.py OLD.cg NEW.cg OPERATIONS

Profiles must be written with --compress-strings=no (bench/instructions.sh does): a dump taken
mid-run otherwise names functions by ids defined in an earlier dump.
"""
import collections
import re
import sys


def own_costs(path):
    """Function -> its own instructions (a cost line right after `calls=` is the callee's)."""
    costs = collections.Counter()
    fn, after_call = None, False
    with open(path) as f:
        for line in f:
            if line.startswith("fn="):
                fn = re.sub(r"::h[0-9a-f]{16}$", "", line[3:].strip())
            elif line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_call:
                    after_call = False
                elif fn is not None:
                    parts = line.split()
                    if len(parts) >= 2:
                        costs[fn] += int(parts[1])
    return costs


def main():
    old, new, ops = own_costs(sys.argv[1]), own_costs(sys.argv[2]), float(sys.argv[3])
    print(f"instructions per operation: old {sum(old.values()) / ops:,.0f}  "
          f"new {sum(new.values()) / ops:,.0f}")
    changed = sorted(set(old) | set(new), key=lambda k: new[k] - old[k])
    print(f"{'change':>8} {'old':>8} {'new':>8}  function (own instructions per operation)")
    for k in changed[-15:][::-1] + changed[:15]:
        if new[k] != old[k]:
            print(f"{(new[k] - old[k]) / ops:8.1f} {old[k] / ops:8.1f} {new[k] / ops:8.1f}  {k[:140]}")


if __name__ == "__main__":
    main()
