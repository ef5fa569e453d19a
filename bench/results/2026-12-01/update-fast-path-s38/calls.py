import collections, sys
# calls.py FILE SUBSTR...: for each function whose name contains SUBSTR, the number of calls
# into it and their inclusive Ir (summed over callers other than itself), and Ir per call
path, subs = sys.argv[1], sys.argv[2:]
n = collections.Counter(); ir = collections.Counter(); fn = cfn = None; pending = None
for line in open(path):
    if line.startswith("fn="): fn = line[3:].strip()
    elif line.startswith("cfn="): cfn = line[4:].strip()
    elif line.startswith("calls="): pending = int(line[6:].split()[0])
    elif pending is not None and (line[:1].isdigit() or line[:1] in "+-*"):
        if cfn != fn:
            for s in subs:
                if s in cfn: n[cfn] += pending; ir[cfn] += int(line.split()[1])
        pending = None
for k in sorted(n, key=lambda k: -ir[k])[:30]:
    print(f"{n[k]:8d} calls {ir[k]:12d} Ir {ir[k]/n[k]:9.1f}/call  {k[:110]}")
