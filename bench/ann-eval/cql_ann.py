#!/usr/bin/env python3
"""ANN through CQL, end to end: recall@10 and queries/s of `ORDER BY v ANN OF ? LIMIT 10` on
the same generated data against one or more endpoints (Peregrine, Cassandra 5.0), with the
Python driver and prepared statements.

    bench/ann-eval/cql_ann.py --endpoint peregrine=127.0.0.1:9042 --endpoint cassandra=127.0.0.1:9142 \
        [--rows 10000] [--dim 64] [--queries 200] [--concurrency 16] [--load-concurrency 2] [--seed 42]

Data: `rows` uniform random vectors in [-1, 1]^dim (fixed seed), euclidean similarity;
recall@10 is measured against a brute force computed here. This is not `peregrine bench`
(its runner has no vector workload yet): a first measurement, client-bound (one Python
process), so queries/s compare servers only roughly.
"""

import argparse
import random
import struct
import time

from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args


def f32(x):
    return struct.unpack(">f", struct.pack(">f", x))[0]


def vec(rng, dim):
    return [f32(rng.uniform(-1.0, 1.0)) for _ in range(dim)]


def nearest(rows, q, k):
    d = [(sum((a - b) ** 2 for a, b in zip(v, q)), key) for key, v in rows.items()]
    d.sort()
    return [key for _, key in d[:k]]


def run(name, hostport, args, rows, queries, truth):
    host, port = hostport.rsplit(":", 1)
    cluster = Cluster([host], port=int(port), protocol_version=4)
    s = cluster.connect()
    ks = "ann_bench"
    s.execute(f"DROP KEYSPACE IF EXISTS {ks}")
    s.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    s.set_keyspace(ks)
    s.execute(f"CREATE TABLE t (k int PRIMARY KEY, v vector<float, {args.dim}>)")
    s.execute("CREATE CUSTOM INDEX ON t (v) USING 'StorageAttachedIndex' "
              "WITH OPTIONS = {'similarity_function': 'euclidean'}")
    ins = s.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
    t0 = time.time()
    execute_concurrent_with_args(s, ins, list(rows.items()), concurrency=args.load_concurrency)
    load = time.time() - t0
    q = s.prepare("SELECT k FROM t ORDER BY v ANN OF ? LIMIT 10")
    for query in queries[:10]:  # warm-up
        s.execute(q, (query,))
    t0 = time.time()
    results = execute_concurrent_with_args(s, q, [(x,) for x in queries],
                                           concurrency=args.concurrency, results_generator=False)
    elapsed = time.time() - t0
    hits = 0
    for (ok, res), want in zip(results, truth):
        assert ok, res
        hits += len({r.k for r in res} & set(want))
    recall = hits / (10 * len(queries))
    print(f"{name}: rows={args.rows} dim={args.dim} load={load:.1f}s "
          f"({args.rows / load:.0f} rows/s) queries={len(queries)} concurrency={args.concurrency} "
          f"recall@10={recall:.3f} qps={len(queries) / elapsed:.0f}")
    s.execute(f"DROP KEYSPACE {ks}")
    cluster.shutdown()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", action="append", required=True, help="name=host:port")
    p.add_argument("--rows", type=int, default=10000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--seed", type=int, default=42)
    # Cassandra 5.0.9 fails vector inserts beyond 3 in flight per table ("Number of outstanding
    # pooled objects has gone beyond the limit of 3"): load with fewer.
    p.add_argument("--load-concurrency", type=int, default=2)
    args = p.parse_args()
    rng = random.Random(args.seed)
    rows = {k: vec(rng, args.dim) for k in range(args.rows)}
    queries = [vec(rng, args.dim) for _ in range(args.queries)]
    truth = [nearest(rows, x, 10) for x in queries]
    for e in args.endpoint:
        name, hostport = e.split("=", 1)
        run(name, hostport, args, rows, queries, truth)


if __name__ == "__main__":
    main()
