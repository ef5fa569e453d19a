"""`peregrine bench vector` (issue 12) run briefly against a real `peregrine serve` on a tiny
generated data set with a fixed seed: it loads the vectors into a table with an SAI vector
index, builds the index over the loaded rows with two settings, asks ANN queries, and its
recall@10 against the exact neighbours it computes itself is above a floor; the report has the
figures the issue asks for (insert rate, build time, queries/s, latency, server CPU, memory).

The data: 3,000 unit vectors of 32 dimensions around 30 random centres (clusters, like real
embeddings, not uniform noise), 40 held-out queries from the same centres. 3,000 rows is above
the size under which Peregrine answers ANN by an exact scan (2,048), so the graph is what is
measured. A recall floor, not a timing: the phases are short and nothing asserts a speed."""

import json
import math
import os
import random
import struct
import subprocess
import tempfile

import pytest

from admin_support import Server, binary

ROWS = 3000
QUERIES = 40
DIM = 32
RECALL_FLOOR = 0.9


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def make_data(dir):
    rng = random.Random(12)
    centres = [[rng.gauss(0, 1) for _ in range(DIM)] for _ in range(30)]

    def point():
        c = rng.choice(centres)
        return unit([x + rng.gauss(0, 0.35) for x in c])

    paths = []
    for name, n in (("base", ROWS), ("query", QUERIES)):
        path = os.path.join(dir, f"{name}.fvecs")
        with open(path, "wb") as f:
            for _ in range(n):
                f.write(struct.pack(f"<i{DIM}f", DIM, *point()))
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def server():
    s = Server(admin=False)
    yield s
    s.cleanup()


def test_vector_case_reports_recall_and_costs(server):
    with tempfile.TemporaryDirectory() as out:
        base, queries = make_data(out)
        args = [binary(), "bench", "vector",
                "--endpoint", f"peregrine=127.0.0.1:{server.port}@{server.proc.pid}",
                "--base", base, "--queries", queries,
                "--setting", "default", "--setting", "optimize_for=RECALL",
                "--phase", "1s", "--settle", "200ms", "--concurrency", "4",
                "--load-concurrency", "16", "--out", out, "--name", "vec", "--seed", "7"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        with open(os.path.join(out, "vec.json")) as f:
            rep = json.load(f)
        with open(os.path.join(out, "vec.txt")) as f:
            assert f.read() == r.stdout
    assert (rep["rows"], rep["queries"], rep["dimension"], rep["k"]) == (ROWS, QUERIES, DIM, 10)
    (ins,) = rep["inserts"]
    assert ins["rows"] == ROWS and ins["rows_per_second"] > 0 and ins["retries"] == 0, ins
    assert ins["server_cpu_seconds"] > 0 and ins["server_rss_bytes"] > 0, ins
    assert [b["setting"] for b in rep["builds"]] == ["default", "optimize_for=RECALL"]
    for b in rep["builds"]:
        assert b["seconds"] >= b["create_seconds"] > 0, b
        assert b["server_cpu_seconds"] is not None and b["server_rss_bytes"] > 0, b
    phases = rep["query_phases"]
    assert [(p["setting"], p["index_from"]) for p in phases] == [
        ("default", "insert"), ("default", "build"), ("optimize_for=RECALL", "build")]
    for p in phases:
        assert p["errors"] == 0 and p["invalid"] == 0 and p["short"] == 0, p["error_samples"]
        assert p["ops"] > 0 and p["queries_per_second"] > 0, p
        assert 0 < p["p50_us"] <= p["p99_us"] <= p["max_us"], p
        assert p["queries_covered"] == QUERIES, p
        assert p["recall"] >= RECALL_FLOOR, p
        assert p["server_cpu_seconds"] > 0 and p["queries_per_server_cpu_second"] > 0, p
    assert len(rep["summary"]) == 3 and all(m["per_server_cpu_ratio"] is None
                                            for m in rep["summary"])
