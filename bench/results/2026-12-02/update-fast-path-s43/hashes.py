import collections, glob, sys
# hashes.py PREFIX DIVISOR: own instructions of the XXH3 code (xxhash-rust, twox-hash) and of
# `std::io::Write::write_all` (the table file's streaming hasher is inlined there), per DIVISOR,
# in each thread's file of a --separate-threads dump
prefix, div = sys.argv[1], float(sys.argv[2])
for path in sorted(glob.glob(prefix + "*-[0-9][0-9]")):
    own = collections.Counter(); fn = None; skip = False
    for line in open(path):
        if line.startswith("fn="): fn = line[3:].strip(); continue
        if line.startswith("calls="): skip = True; continue
        if line[:1].isdigit() or line[:1] in "+-*":
            p = line.split()
            if len(p) > 1:
                if skip: skip = False
                elif "xxh" in fn.lower() or "twox" in fn or fn == "std::io::Write::write_all": own[fn] += int(p[1])
    t = sum(own.values())
    if t > div: print(f"{path.rsplit('-',1)[1]} {t/div:>8,.0f}  " + ", ".join(f"{k.split('::')[-1]} {v/div:,.0f}" for k, v in own.most_common(4)))
