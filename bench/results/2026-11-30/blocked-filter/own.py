import collections, re, sys
def own(path, idx):
    c = collections.Counter(); fn=None; after=False
    for line in open(path):
        if line.startswith("fn="): fn = re.sub(r"::h[0-9a-f]{16}$", "", line[3:].strip())
        elif line.startswith("calls="): after=True
        elif line[:1].isdigit() or line[:1] in "+-*":
            if after: after=False
            elif fn is not None:
                p=line.split()
                if len(p) > idx: c[fn]+=int(p[idx])
    return c
ops=int(sys.argv[3]); idx=int(sys.argv[4])  # column: 1 Ir,2 Dr,3 Dw,4 I1mr,5 D1mr,6 D1mw,7 ILmr,8 DLmr,9 DLmw
a=own(sys.argv[1],idx); b=own(sys.argv[2],idx)
print("total", sum(a.values())/ops, sum(b.values())/ops)
keys=sorted(set(a)|set(b), key=lambda k: -max(a[k],b[k]))[:25]
for k in keys: print(f"{a[k]/ops:9.2f} {b[k]/ops:9.2f}  {k[:110]}")
