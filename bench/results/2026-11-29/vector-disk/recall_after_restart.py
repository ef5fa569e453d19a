import sys, array, operator, math
from cassandra.cluster import Cluster
port = int(sys.argv[1]); NQ = 100
V = "/root/.cache/peregrine/vectors/"
def fvecs(p, n):
    a = array.array("f"); 
    with open(p, "rb") as f: a.frombytes(f.read(385 * 4 * n))
    return [a[i * 385 + 1:(i + 1) * 385].tolist() for i in range(n)]
base = fvecs(V + "base.fvecs", 10000); qs = fvecs(V + "query.fvecs", NQ)
def cos(a, b): return sum(map(operator.mul, a, b)) / math.sqrt(sum(map(operator.mul, b, b)))
s = Cluster(["127.0.0.1"], port=port).connect("vecbench")
cols = [c for c in s.cluster.metadata.keyspaces["vecbench"].tables["vec10000"].columns]
p = s.prepare(f"SELECT {cols[0]} FROM vec10000 ORDER BY v ANN OF ? LIMIT 10")
hits = 0
for q in qs:
    truth = set(sorted(range(len(base)), key=lambda i: -cos(q, base[i]))[:10])
    got = [r[0] for r in s.execute(p, (q,))]
    hits += len(truth & set(got))
print("recall@10 over", NQ, "queries:", hits / (10 * NQ))
