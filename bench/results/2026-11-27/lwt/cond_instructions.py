"""Server instructions per operation of conditional writes and SERIAL reads against their plain
twins (issue 17 item 1), counted by Callgrind: a figure other load on the machine does not move.

    python3 cond_instructions.py BIN [OPS]     (a release build; valgrind must be installed)

Starts BIN under valgrind on a free port, loads rows, then for each pair runs OPS operations of
the plain statement and OPS of the conditional one (each on rows of its own, so every write is
applied), zeroing the counters before and dumping them after each, and prints instructions per
operation and the ratio plain / conditional (the share of the plain throughput a CPU-bound
server would reach on the conditional one). The client is the Python driver, 32 requests in
flight; its own cost is not counted (it is another process).
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import time

from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args

BIN = sys.argv[1]
OPS = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
WARM = 500
CONC = 32


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def instructions(path):
    """The total of a Callgrind dump (its `totals:` or `summary:` line), once written: the
    dump `callgrind_control -d` asks for is written by the server some time after."""
    deadline = time.time() + 300
    while time.time() < deadline:
        if os.path.exists(path):
            for line in open(path):
                m = re.match(r"(?:totals|summary):\s+(\d+)", line)
                if m:
                    return int(m.group(1))
        time.sleep(0.5)
    raise RuntimeError(f"no totals in {path}")


def main():
    work = tempfile.mkdtemp(prefix="cond-instr-")
    port = free_port()
    out = os.path.join(work, "cg")
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", BIN, "serve",
         "--listen", f"127.0.0.1:{port}", "--admin-listen", "127.0.0.1:0",
         "--data-dir", os.path.join(work, "data")],
        stdout=open(os.path.join(work, "server.log"), "wb"), stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 300
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    raise RuntimeError(f"server did not start: {work}/server.log")
                time.sleep(0.5)
        cluster = Cluster(["127.0.0.1"], port=port, protocol_version=4, connect_timeout=30,
                          control_connection_timeout=30)
        s = cluster.connect()
        s.default_timeout = 120
        s.execute("CREATE KEYSPACE b WITH replication = {'class': 'SimpleStrategy', "
                  "'replication_factor': 1}")
        s.execute("CREATE TABLE b.t (k int, c int, v int, w int, PRIMARY KEY (k, c))")
        ins = s.prepare("INSERT INTO b.t (k, c, v, w) VALUES (?, ?, ?, ?)")
        # Partitions 0.. of two rows each; every case takes partitions of its own.
        per_case = WARM + OPS
        cases = [
            ("UPDATE", "UPDATE b.t SET w = ? WHERE k = ? AND c = 0",
             "UPDATE b.t SET w = ? WHERE k = ? AND c = 0 IF EXISTS", None),
            ("UPDATE ... IF v = ?", "UPDATE b.t SET w = ? WHERE k = ? AND c = 0",
             "UPDATE b.t SET w = ? WHERE k = ? AND c = 0 IF v = 1", None),
            ("DELETE row", "DELETE FROM b.t WHERE k = ? AND c = 0",
             "DELETE FROM b.t WHERE k = ? AND c = 0 IF EXISTS", None),
            ("DELETE ... IF v = ?", "DELETE FROM b.t WHERE k = ? AND c = 0",
             "DELETE FROM b.t WHERE k = ? AND c = 0 IF v = 1", None),
            ("BATCH of 2 updates", "BEGIN BATCH UPDATE b.t SET w = ? WHERE k = ? AND c = 0; "
             "UPDATE b.t SET w = 7 WHERE k = ? AND c = 1; APPLY BATCH",
             "BEGIN BATCH UPDATE b.t SET w = ? WHERE k = ? AND c = 0 IF v = 1; "
             "UPDATE b.t SET w = 7 WHERE k = ? AND c = 1; APPLY BATCH", None),
            ("SELECT row (ONE / SERIAL)", "SELECT * FROM b.t WHERE k = ? AND c = 0",
             "SELECT * FROM b.t WHERE k = ? AND c = 0", ConsistencyLevel.SERIAL),
        ]
        n_parts = per_case * 2 * len(cases)
        execute_concurrent_with_args(
            s, ins, [(k, c, 1, 0) for k in range(n_parts) for c in (0, 1)], concurrency=64)
        base = 0
        dumped = 0
        results = []
        for name, plain, cond, serial in cases:
            per = {}
            for kind, text in (("plain", plain), ("conditional", cond)):
                st = s.prepare(text)
                if kind == "conditional" and serial is not None:
                    st.consistency_level = serial
                keys = range(base, base + per_case)
                base += per_case
                nmark = text.count("?")

                def args(k):
                    return (k,) * nmark  # the key, and the value written: both k
                warm, run = list(keys)[:WARM], list(keys)[WARM:]
                execute_concurrent_with_args(s, st, [args(k) for k in warm], concurrency=CONC)
                subprocess.run(["callgrind_control", "-z", str(server.pid)], check=True,
                               capture_output=True)
                rs = execute_concurrent_with_args(s, st, [args(k) for k in run],
                                                  concurrency=CONC, raise_on_first_error=True)
                label = re.sub(r"[^A-Za-z0-9]+", "-", f"{name}-{kind}")
                subprocess.run(["callgrind_control", "-d", label, str(server.pid)],
                               check=True, capture_output=True)
                if kind == "conditional" and serial is None:
                    applied = sum(1 for ok, r in rs if ok and r.one()[0] is True)
                    assert applied == len(run), f"{name}: {applied} of {len(run)} applied"
                dumped += 1
                per[kind] = instructions(os.path.join(work, f"cg.{dumped}")) / len(run)
            results.append((name, per["plain"], per["conditional"]))
        cluster.shutdown()
    finally:
        server.terminate()
        server.wait(timeout=120)
    print(f"{OPS} operations each, 32 in flight, server instructions per operation "
          f"(callgrind, {os.path.basename(BIN)}):")
    print("| pair | plain | conditional (SERIAL) | plain / conditional |")
    print("|---|---|---|---|")
    for name, p, c in results:
        print(f"| {name} | {p:,.0f} | {c:,.0f} | {p / c:.2f} |")
    print(f"(work dir {work})")


main()
