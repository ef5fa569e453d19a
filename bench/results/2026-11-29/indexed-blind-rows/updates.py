"""OPS prepared indexed UPDATEs (all three SAI values change) on random rows of the table
`peregrine bench indexed` loads. Usage: updates.py HOST PORT ROWS OPS"""
import random
import sys

from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args

host, port, rows, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
session = Cluster([host], port=port).connect()
stmt = session.prepare(
    f"UPDATE idxbench.rows{rows} SET low = ?, high = ?, ts = ? WHERE id = ?")
rng = random.Random(11)
args = [(1000 + rng.randrange(1000), -(i + 1), rows + i, rng.randrange(rows)) for i in range(ops)]
results = execute_concurrent_with_args(session, stmt, args, concurrency=16, raise_on_first_error=True)
print(f"{sum(1 for ok, _ in results if ok)} of {ops} UPDATEs succeeded")
