"""OPS prepared indexed UPDATEs on random rows of the table `peregrine bench indexed` loads,
each moving all three SAI values to a random new one, as the bench's write phase does (its
`Shape::shadow`: new values at random places in each index). Usage: updates.py HOST PORT ROWS OPS
(../../2026-11-29/indexed-blind-rows/updates.py sets high and ts to consecutive values, whose
index entries land next to each other in the memtable.)"""
import random
import sys

from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args

host, port, rows, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
session = Cluster([host], port=port).connect()
stmt = session.prepare(
    f"UPDATE idxbench.rows{rows} SET low = ?, high = ?, ts = ? WHERE id = ?")
rng = random.Random(11)
args = [(1000 + rng.randrange(1000), -1 - rng.randrange(1 << 40), rows + rng.randrange(rows),
         rng.randrange(rows)) for _ in range(ops)]
results = execute_concurrent_with_args(session, stmt, args, concurrency=16, raise_on_first_error=True)
print(f"{sum(1 for ok, _ in results if ok)} of {ops} UPDATEs succeeded")
