#!/usr/bin/env python3
"""`count(*)` over one very large partition, in bounded memory (issue 10 item 8).

Starts `peregrine serve` (the binary given), writes ROWS rows into ONE partition
(`k int, c int, v text`, PRIMARY KEY (k, c)) with unlogged single-partition batches, flushes
(`peregrine nodetool flush`, so the rows are read from table files, not the memtable), then runs
`SELECT count(*)` and `SELECT max(c), sum(c)` over the partition while sampling the server's
resident memory every 20 ms. Prints the counts, times, and the server's RSS before and at its
peak during each query: an aggregate that held the partition would need ROWS x ~40 bytes.

    bench/count_partition.py --binary target/release/peregrine --rows 10000000

Needs the Python driver (scripts/setup.sh's venv).
"""

import argparse
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent
from cassandra.query import BatchStatement, BatchType


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def peak_during(pid, work):
    """Runs work(); returns (its result, seconds, peak RSS sampled every 20 ms)."""
    peak = [rss(pid)]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss(pid))
            time.sleep(0.02)

    t = threading.Thread(target=sample)
    t.start()
    start = time.monotonic()
    try:
        result = work()
    finally:
        elapsed = time.monotonic() - start
        done.set()
        t.join()
    return result, elapsed, peak[0]


def run(session, statements):
    for ok, r in execute_concurrent(session, statements, concurrency=8,
                                    raise_on_first_error=True):
        assert ok, r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--batch", type=int, default=200, help="rows per unlogged batch")
    ap.add_argument("--config", default="",
                    help="server config lines, e.g. 'storage_cache_bytes: 67108864' (the block cache "
                         "fills as the partition is read: a small one shows the query's own memory)")
    args = ap.parse_args()

    root = tempfile.mkdtemp(prefix="count-partition-")
    port, admin = free_port(), free_port()
    log = open(os.path.join(root, "peregrine.log"), "wb")
    config = os.path.join(root, "peregrine.yaml")
    with open(config, "w") as f:
        f.write(args.config.replace("\\n", "\n") + "\n")
    proc = subprocess.Popen([args.binary, "serve", "--config", config, "--listen", f"127.0.0.1:{port}",
                             "--admin-listen", f"127.0.0.1:{admin}",
                             "--data-dir", os.path.join(root, "data")],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "peregrine did not start"
                time.sleep(0.1)
        cluster = Cluster(["127.0.0.1"], port=port)
        s = cluster.connect()
        s.default_timeout = 600
        s.execute("CREATE KEYSPACE big WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE big.p (k int, c int, v text, PRIMARY KEY (k, c))")
        insert = s.prepare("INSERT INTO big.p (k, c, v) VALUES (0, ?, 'abcdefghijklmnop')")
        start = time.monotonic()

        def batches():
            for first in range(0, args.rows, args.batch):
                b = BatchStatement(batch_type=BatchType.UNLOGGED)
                for c in range(first, min(first + args.batch, args.rows)):
                    b.add(insert, (c,))
                yield b

        # Batches go in chunks so the client never holds all of them.
        chunk = []
        for b in batches():
            chunk.append((b, ()))
            if len(chunk) == 500:
                run(s, chunk)
                chunk = []
        run(s, chunk)
        load_s = time.monotonic() - start
        subprocess.run([args.binary, "nodetool", "-h", "127.0.0.1", "-p", str(admin), "flush"],
                       check=True, capture_output=True)
        before = rss(proc.pid)
        print(f"loaded {args.rows} rows into one partition in {load_s:.0f} s; flushed; "
              f"server RSS {before / 2**20:.0f} MiB")
        for q in ("SELECT count(*) FROM big.p WHERE k = 0",
                  "SELECT max(c), sum(c) FROM big.p WHERE k = 0"):
            base = rss(proc.pid)
            row, secs, peak = peak_during(proc.pid, lambda: s.execute(q).one())
            print(f"{q}: {tuple(row)} in {secs:.1f} s ({args.rows / secs:,.0f} rows/s); "
                  f"RSS {base / 2**20:.0f} MiB before, peak {peak / 2**20:.0f} MiB "
                  f"(+{(peak - base) / 2**20:.0f} MiB)")
        assert s.execute("SELECT count(*) FROM big.p WHERE k = 0").one()[0] == args.rows
        cluster.shutdown()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
