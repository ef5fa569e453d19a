import collections, sys
# lines.py FILE FN_SUBSTR DIVISOR: self Ir by source line inside functions whose name contains FN_SUBSTR
path, want, div = sys.argv[1], sys.argv[2], float(sys.argv[3])
cost=collections.Counter()
fl=fi=fn=None; pending=False
for line in open(path):
    if line.startswith('fl='): fl=line[3:].strip(); fi=None; continue
    if line.startswith(('fi=','fe=')): fi=line[3:].strip(); continue
    if line.startswith('fn='): fn=line[3:].strip(); fi=None; continue
    if line.startswith('calls='): pending=True; continue
    if line.startswith(('cfn=','cfl=','cfi=','cob=','ob=')): continue
    if line[:1].isdigit() or line[:1] in '+-*':
        if pending: pending=False; continue
        p=line.split()
        if len(p)<2 or fn is None or fn!=want: continue
        f=(fi or fl).split('/')
        cost[('/'.join(f[-2:]),p[0])]+=int(p[1])
for k,v in cost.most_common(int(sys.argv[4]) if len(sys.argv)>4 else 30): print(f"{v/div:8.1f}", k)
