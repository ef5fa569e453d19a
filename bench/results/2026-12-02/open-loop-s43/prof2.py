import gzip,sys,collections,re
f=sys.argv[1]
cat=collections.Counter(); tot=0; ks=collections.Counter()
def group(s,k):
    if k: return 'kernel'
    for p,g in [('quick_cache','block cache'),('crossbeam_skiplist','memtable skiplist'),('lsm_tree::memtable','memtable'),('lsm_tree','lsm_tree other'),('fjall','fjall'),('engine::','engine'),('<engine::','engine'),('server::','server'),('tokio::','tokio'),('<tokio','tokio'),('proto::','proto'),('<proto','proto'),('storage::','storage'),('<storage','storage'),('_mi_','mimalloc'),('mi_','mimalloc'),('__mem','libc mem'),('bytes::','bytes'),('__vdso','vdso'),('arc_swap','arc_swap'),('<arc_swap','arc_swap')]:
        if s.startswith(p): return g
    return 'other:'+s[:40]
other=collections.Counter()
for line in gzip.open(f,'rt'):
    m=re.match(r'(\S+)\s+(\d+)\s+([\d.]+):\s+([0-9a-f]+)\s+(.*)',line.strip())
    if not m: continue
    c,tid,t,ip,s=m.groups()
    if c not in ('peregrine',): continue
    tot+=1; k=ip.startswith('ffff'); g=group(s,k); cat[g]+=1
    if g.startswith('other'): other[s.split('+')[0][:70]]+=1
    if k: ks[s.split('+')[0]]+=1
for g,n in cat.most_common(30): print(f"{n/tot*100:5.1f}% {g}")
print('--- other'); [print(f"{n/tot*100:5.2f}% {s}") for s,n in other.most_common(15)]
print('--- kernel'); [print(f"{n/tot*100:5.2f}% {s}") for s,n in ks.most_common(25)]
