#!/usr/bin/env python3
"""threads.py snap PID FILE | diff A B: per-thread-name CPU ticks and context switches."""
import sys, os, re, json
def snap(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            s = open(f"/proc/{pid}/task/{tid}/stat").read()
            st = open(f"/proc/{pid}/task/{tid}/status").read()
        except OSError:
            continue
        comm = s[s.index("(")+1:s.rindex(")")]
        f = s[s.rindex(")")+2:].split()
        ticks = int(f[11]) + int(f[12])
        vcs = int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", st).group(1))
        ncs = int(re.search(r"nonvoluntary_ctxt_switches:\s+(\d+)", st).group(1))
        out[tid] = [comm, ticks, vcs, ncs]
    return out
if sys.argv[1] == "snap":
    json.dump(snap(sys.argv[2]), open(sys.argv[3], "w"))
else:
    a, b = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
    n = float(sys.argv[4]) if len(sys.argv) > 4 else 1
    g = {}
    for tid, (comm, t, v, nv) in b.items():
        t0, v0, n0 = (a[tid][1:] if tid in a else (0, 0, 0))
        k = re.sub(r"[-:]?\d+$", "", comm)
        x = g.setdefault(k, [0, 0, 0, 0])
        x[0] += t - t0; x[1] += v - v0; x[2] += nv - n0
        if t - t0 > 0: x[3] += 1
    tot = [sum(x[i] for x in g.values()) for i in range(3)]
    print(f"{'thread':32} {'cpu_us/op':>9} {'vcs/op':>7} {'nvcs/op':>7} threads")
    for k, x in sorted(g.items(), key=lambda kv: -kv[1][0]):
        if x[0] == 0 and x[1] < n * 0.01: continue
        print(f"{k:32} {x[0]*1e4/n:9.2f} {x[1]/n:7.3f} {x[2]/n:7.3f} {x[3]}")
    print(f"{'TOTAL':32} {tot[0]*1e4/n:9.2f} {tot[1]/n:7.3f} {tot[2]/n:7.3f}")
