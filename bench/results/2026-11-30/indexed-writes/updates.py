"""OPS prepared indexed UPDATEs (all three SAI values change) on random rows of the table
`peregrine bench indexed` loads, drawn with SEED. Usage: updates.py HOST PORT ROWS OPS SEED
(../../2026-11-29/indexed-blind-rows/updates.py with the seed as an argument, so that a warm-up
and the measured run write different values)."""
import random
import sys

from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args

host, port, rows, ops, seed = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                               int(sys.argv[4]), int(sys.argv[5]))
session = Cluster([host], port=port).connect()
stmt = session.prepare(
    f"UPDATE idxbench.rows{rows} SET low = ?, high = ?, ts = ? WHERE id = ?")
rng = random.Random(seed)
base = seed * 10_000_000
args = [(1000 + rng.randrange(1000), -(base + i + 1), rows + base + i, rng.randrange(rows))
        for i in range(ops)]
results = execute_concurrent_with_args(session, stmt, args, concurrency=16, raise_on_first_error=True)
print(f"{sum(1 for ok, _ in results if ok)} of {ops} UPDATEs succeeded")
