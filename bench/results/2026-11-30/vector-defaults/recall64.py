# test_ann.py's recall case (3,000 uniform random 64-dim vectors, euclidean, seed 1234) with
# more queries, printing the recall@10 instead of checking a floor.
import sys, random
sys.path.insert(0, "tests/python")
from cassandra.cluster import Cluster
import test_ann as T
port = int(sys.argv[1]); nq = int(sys.argv[2])
s = Cluster(["127.0.0.1"], port=port).connect()
s.execute("DROP KEYSPACE IF EXISTS rec")
s.execute("CREATE KEYSPACE rec WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
s.set_keyspace("rec")
rng, rows = T.load_vectors(s)
queries = [T.rand_vec(rng, T.DIM) for _ in range(nq)]
print(f"recall@10 over {nq} queries: {T.recall_at_10(s, rows, queries):.4f}")
s.execute("DROP KEYSPACE rec")
