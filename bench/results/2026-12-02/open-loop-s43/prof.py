import gzip,sys,collections,re
f=sys.argv[1]; top=int(sys.argv[2]) if len(sys.argv)>2 else 40
comm=collections.Counter(); sym=collections.Counter(); kern=collections.Counter()
tot=0
for line in gzip.open(f,'rt'):
    parts=line.split()
    if len(parts)<4: continue
    c=parts[0]
    # find ip: first hex after time
    m=re.match(r'(\S+)\s+(\d+)\s+([\d.]+):\s+([0-9a-f]+)\s+(.*)',line.strip())
    if not m: continue
    c,tid,t,ip,s=m.groups()
    comm[c]+=1
    if not c.startswith('tokio') and not c.startswith('peregrine-core') and c!='peregrine': continue
    tot+=1
    k=ip.startswith('ffff')
    sym[('K ' if k else 'U ')+s.split('+')[0]]+=1
    kern['kernel' if k else 'user']+=1
print(comm.most_common(12))
print(tot,kern)
for s,n in sym.most_common(top): print(f"{n/tot*100:5.1f}% {s}")
