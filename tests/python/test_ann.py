"""ANN queries on SAI vector indexes through the Python driver (issue 12 items 3-4).

- prepared `ORDER BY v ANN OF ? LIMIT ?` (and with a partition key marker) answer the exact
  nearest rows on small tables, for each similarity function, compared with a brute force
  computed here;
- inserts, updates, deletions (row, cell, partition), TTL expiry, TRUNCATE, DROP INDEX and a
  CREATE INDEX over existing rows are reflected in the next query;
- on a few thousand 64-dimensional vectors (where the graph answers, not a scan) recall@10
  against the brute force stays above a floor, with a fixed seed, and rows deleted after
  the graph was built never come back;
- the graph is saved (in the background once enough rows changed, and at a clean shutdown)
  and loaded at start instead of rebuilt (the server's log says which): after a clean restart
  as saved, after SIGKILL brought up to date by a scan, so the rows written after the save
  and just before the kill come first for their own vectors and deleted rows never come
  back; DROP INDEX removes the saved files; with encryption at rest nothing is saved;
- under a tiny `vector_index_memory_bytes` the graph is served from disk (saved graph files
  memory-mapped plus an in-memory delta) instead of freed: recall holds, and inserts,
  deletions, moves, TTL expiry, SIGKILL, a clean restart, TRUNCATE and DROP INDEX stay exact;
- the client warning Cassandra 5.0.9 sends on the DDL that validates a vector index.
"""

import contextlib
import math
import os
import random
import time

import pytest
from cassandra import InvalidRequest, ReadFailure, WriteFailure
from cassandra.concurrent import execute_concurrent_with_args

from test_durability import server_factory, wait_for_session  # noqa: F401 (fixture)

KS_REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


def f32(x):
    """The float a vector<float> stores for x (the driver sends 32-bit floats)."""
    import struct
    return struct.unpack(">f", struct.pack(">f", x))[0]


def score(fn, a, b):
    if fn == "DOT_PRODUCT":
        return sum(x * y for x, y in zip(a, b))
    if fn == "EUCLIDEAN":
        return 1.0 / (1.0 + sum((x - y) ** 2 for x, y in zip(a, b)))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


def nearest(fn, rows, q, k):
    """The keys of the k rows (key -> vector) most similar to q, best first."""
    return [key for key, _ in sorted(rows.items(), key=lambda kv: -score(fn, kv[1], q))[:k]]


def rand_vec(rng, dim):
    return [f32(rng.uniform(-1.0, 1.0)) for _ in range(dim)]


@pytest.mark.parametrize("fn", ["COSINE", "DOT_PRODUCT", "EUCLIDEAN"])
def test_prepared_ann_is_exact_on_small_tables(session, ks, fn):
    session.execute("CREATE TABLE t (k int, c int, v vector<float, 4>, PRIMARY KEY (k, c))")
    session.execute(
        "CREATE CUSTOM INDEX ON t (v) USING 'StorageAttachedIndex' "
        f"WITH OPTIONS = {{'similarity_function': '{fn}'}}")
    rng = random.Random(11)
    rows = {}
    ins = session.prepare("INSERT INTO t (k, c, v) VALUES (?, ?, ?)")
    for k in range(6):
        for c in range(10):
            v = rand_vec(rng, 4)
            rows[(k, c)] = v
            session.execute(ins, (k, c, v))
    q = session.prepare("SELECT k, c FROM t ORDER BY v ANN OF ? LIMIT ?")
    assert [m.name for m in q.column_metadata] == ["v", "[limit]"]
    pq = session.prepare("SELECT k, c FROM t WHERE k = ? ORDER BY v ANN OF ? LIMIT 5")
    for _ in range(5):
        query = rand_vec(rng, 4)
        got = [(r.k, r.c) for r in session.execute(q, (query, 7))]
        assert got == nearest(fn, rows, query, 7)
        part = {key: v for key, v in rows.items() if key[0] == 3}
        got = [(r.k, r.c) for r in session.execute(pq, (3, query))]
        assert got == nearest(fn, part, query, 5)


def test_ann_errors_through_prepared_statements(session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v vector<float, 2>)")
    session.execute("CREATE CUSTOM INDEX ON t (v) USING 'StorageAttachedIndex'")
    q = session.prepare("SELECT k FROM t ORDER BY v ANN OF ? LIMIT ?")
    with pytest.raises(InvalidRequest, match="requires a LIMIT that is not greater than 1000. LIMIT was 1001"):
        session.execute(q, ([0.1, 0.2], 1001))
    with pytest.raises(InvalidRequest, match="Unsupported null value for column v"):
        session.execute(q, (None, 3))
    with pytest.raises(InvalidRequest, match="Top-K queries must have a limit specified"):
        session.execute("SELECT k FROM t ORDER BY v ANN OF [0.1, 0.2]")


VECTOR_WARNING = (
    "SAI ANN indexes on vector columns are experimental and are not recommended for production use.\n"
    "They don't yet support SELECT queries with:\n"
    " * Consistency level higher than ONE/LOCAL_ONE.\n"
    " * Paging.\n"
    " * No LIMIT clauses.\n"
    " * PER PARTITION LIMIT clauses.\n"
    " * GROUP BY clauses.\n"
    " * Aggregation functions.\n"
    " * Filters on columns without a SAI index."
)


def test_vector_index_ddl_warns_as_cassandra(session, ks):
    """Cassandra 5.0.9 warns whenever it validates a vector index's options: CREATE INDEX of the
    vector index, any later CREATE INDEX on its table, ALTER TABLE ADD on it; not for other
    tables, ALTER TABLE WITH/DROP, DROP INDEX, writes, or an IF NOT EXISTS that finds the index
    (the list below is what 5.0.9 answered, statement by statement)."""
    session.execute(f"USE {ks}")
    session.execute("CREATE TABLE vw (id int PRIMARY KEY, e vector<float, 3>, t text, u text)")
    session.execute("CREATE TABLE vw_other (id int PRIMARY KEY, e vector<float, 3>, t text)")
    steps = [
        ("CREATE INDEX vw_u ON vw (u) USING 'sai'", False),
        ("CREATE INDEX vw_e ON vw (e) USING 'sai'", True),
        ("CREATE INDEX IF NOT EXISTS vw_e ON vw (e) USING 'sai'", False),
        ("ALTER TABLE vw ADD x int", True),
        ("ALTER TABLE vw WITH comment = 'c'", False),
        ("CREATE INDEX vw_t ON vw (t)", True),
        ("DROP INDEX vw_t", False),
        ("INSERT INTO vw (id, e) VALUES (1, [1, 2, 3])", False),
        ("CREATE INDEX vw_other_t ON vw_other (t) USING 'sai'", False),
        ("ALTER TABLE vw DROP x", False),
        ("DROP INDEX vw_u", False),
        ("CREATE CUSTOM INDEX vw_other_e ON vw_other (e) USING 'StorageAttachedIndex'", True),
    ]
    for query, warns in steps:
        f = session.execute_async(query)
        f.result()
        assert f.warnings == ([VECTOR_WARNING] if warns else None), query


def wait_until(what, cond, timeout=15):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_writes_are_reflected(session, ks):
    session.execute("CREATE TABLE t (k int, c int, v vector<float, 2>, PRIMARY KEY (k, c))")
    session.execute("INSERT INTO t (k, c, v) VALUES (0, 0, [1.0, 0.0])")
    session.execute("INSERT INTO t (k, c, v) VALUES (0, 1, [0.0, 1.0])")
    # Built over the rows already there.
    session.execute(
        "CREATE CUSTOM INDEX vi ON t (v) USING 'StorageAttachedIndex' "
        "WITH OPTIONS = {'similarity_function': 'euclidean'}")
    q = session.prepare("SELECT k, c FROM t ORDER BY v ANN OF ? LIMIT 10")

    def keys(vec=(1.0, 0.0)):
        return [(r.k, r.c) for r in session.execute(q, (list(vec),))]

    assert keys() == [(0, 0), (0, 1)]
    session.execute("INSERT INTO t (k, c, v) VALUES (1, 0, [0.9, 0.0])")
    assert keys() == [(0, 0), (1, 0), (0, 1)]
    session.execute("UPDATE t SET v = [1.0, 0.05] WHERE k = 0 AND c = 1")
    assert keys() == [(0, 0), (0, 1), (1, 0)]
    session.execute("DELETE v FROM t WHERE k = 0 AND c = 0")
    assert keys() == [(0, 1), (1, 0)]
    session.execute("DELETE FROM t WHERE k = 0 AND c = 1")
    assert keys() == [(1, 0)]
    # TTL 3 s lives at least 2 s (expiry has whole-second precision): the row is asserted
    # present only when the query came back within that, so a slow machine cannot fail it.
    inserted = time.monotonic()
    session.execute("INSERT INTO t (k, c, v) VALUES (2, 0, [1.0, 0.0]) USING TTL 3")
    first = keys()[0]
    if time.monotonic() - inserted < 1.9:
        assert first == (2, 0)
    wait_until("the TTL'd row to expire", lambda: keys() == [(1, 0)])
    session.execute("INSERT INTO t (k, c, v) VALUES (3, 0, [0.5, 0.5])")
    session.execute("DELETE FROM t WHERE k = 1")
    assert keys() == [(3, 0)]
    session.execute("TRUNCATE t")
    assert keys() == []
    session.execute("INSERT INTO t (k, c, v) VALUES (4, 0, [0.0, 0.0])")
    assert keys() == [(4, 0)]
    session.execute("DROP INDEX vi")
    with pytest.raises(InvalidRequest, match="ANN ordering by vector requires the column to be indexed"):
        session.execute(q, ([1.0, 0.0],))


def test_zero_vector_refused_under_cosine(session, ks):
    """As in 5.0.9, whose replica throws as it indexes or searches with it: WriteFailure /
    ReadFailure, and nothing written (scenario 91 has the other refusals)."""
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v vector<float, 2>)")
    session.execute("CREATE CUSTOM INDEX ON t (v) USING 'StorageAttachedIndex'")
    ins = session.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
    with pytest.raises(WriteFailure):
        session.execute(ins, (1, [0.0, 0.0]))
    with pytest.raises(ReadFailure):
        session.execute(session.prepare("SELECT k FROM t ORDER BY v ANN OF ? LIMIT 1"), ([0.0, 0.0],))
    assert list(session.execute("SELECT * FROM t")) == []


N_ROWS = 3000
DIM = 64


def load_vectors(session, seed=1234):
    """N_ROWS random 64-dim vectors (more than the exact-scan threshold, so the graph answers)."""
    rng = random.Random(seed)
    rows = {k: rand_vec(rng, DIM) for k in range(N_ROWS)}
    session.execute(f"CREATE TABLE big (k int PRIMARY KEY, v vector<float, {DIM}>)")
    session.execute(
        "CREATE CUSTOM INDEX ON big (v) USING 'StorageAttachedIndex' "
        "WITH OPTIONS = {'similarity_function': 'euclidean'}")
    ins = session.prepare("INSERT INTO big (k, v) VALUES (?, ?)")
    results = execute_concurrent_with_args(session, ins, list(rows.items()), concurrency=64)
    assert all(ok for ok, _ in results)
    return rng, rows


# Recall is measured on 20 queries of their own: the graph is built by concurrent inserts, so it
# differs from run to run: on 5 queries recall@10 swung between 0.88 and 0.94 (0.88 failed a CI
# run); on these 20 it stayed within 0.975-0.99 over 10 builds (debug server, concurrency 64).
PROBES = (lambda rng: [rand_vec(rng, DIM) for _ in range(20)])(random.Random(4321))


def recall_at_10(session, rows, queries):
    q = session.prepare("SELECT k FROM big ORDER BY v ANN OF ? LIMIT 10")
    hits = 0
    for query in queries:
        got = [r.k for r in session.execute(q, (query,))]
        assert len(got) == 10 and len(set(got)) == 10
        assert all(k in rows for k in got), "a row not in the table was returned"
        hits += len(set(got) & set(nearest("EUCLIDEAN", rows, query, 10)))
    return hits / (10 * len(queries))


def test_recall_floor_on_generated_vectors(session, ks):
    rng, rows = load_vectors(session)
    queries = [rand_vec(rng, DIM) for _ in range(20)]
    assert recall_at_10(session, rows, queries) >= 0.9
    # Many at once (more than the graph's search contexts): every one answers its 10 rows.
    q = session.prepare("SELECT k FROM big ORDER BY v ANN OF ? LIMIT 10")
    results = execute_concurrent_with_args(session, q, [(x,) for x in queries * 10],
                                           concurrency=64, raise_on_first_error=False)
    assert all(ok and len(list(res)) == 10 for ok, res in results)
    # Delete the current best hits of each query: the graph still holds them until the write
    # removes them, and the read re-checks every row, so they must never come back.
    gone = set()
    for query in queries[:5]:
        for k in [r.k for r in session.execute(q, (query,))][:3]:
            session.execute("DELETE FROM big WHERE k = %s", (k,))
            rows.pop(k, None)
            gone.add(k)
    for query in queries[:5]:
        got = [r.k for r in session.execute(q, (query,))]
        assert len(got) == 10 and not (set(got) & gone)
    assert recall_at_10(session, rows, queries) >= 0.9


@contextlib.contextmanager
def connected(srv, keyspace=None):
    """A session on `srv` (waiting for the driver to connect), with `keyspace` set."""
    cluster = srv.cluster()
    try:
        s = wait_for_session(cluster)
        if keyspace:
            s.set_keyspace(keyspace)
        yield s
    finally:
        cluster.shutdown()


def start_log(srv):
    """What the server logged in its latest start (the log of the running process)."""
    with open(os.path.join(srv.root, f"peregrine.{srv.starts}.log"), errors="replace") as f:
        return f.read()


def restart(srv, stop):
    """Stops the server with `stop` (`srv.kill` or `srv.terminate`), starts it again and
    returns what the new start logged."""
    stop()
    srv.start()
    return start_log(srv)


def add_exact_rows(s, rows, queries, first_key):
    """Writes each query as a row of its own (so it must come first for itself), deletes row
    `first_key - N_ROWS` and moves another far away; returns the keys that must not be in
    any result near the queries."""
    ins = s.prepare("INSERT INTO big (k, v) VALUES (?, ?)")
    for i, query in enumerate(queries):
        s.execute(ins, (first_key + i, query))
        rows[first_key + i] = query
    gone = first_key - N_ROWS
    s.execute("DELETE FROM big WHERE k = %s", (gone,))
    rows.pop(gone)
    far = [50.0] * DIM
    s.execute("UPDATE big SET v = %s WHERE k = %s", (far, gone + 1))
    rows[gone + 1] = far
    return {gone, gone + 1}


def check_exact_rows(s, rows, queries, first_key, absent):
    q = s.prepare("SELECT k FROM big ORDER BY v ANN OF ? LIMIT 10")
    for i, query in enumerate(queries):
        got = [r.k for r in s.execute(q, (query,))]
        assert got[0] == first_key + i and not (set(got) & absent), (i, got)
    assert recall_at_10(s, rows, PROBES) >= 0.9


def fill_keyspace_a(s):
    """Keyspace `a` with `big` (load_vectors) on session `s`, recall checked on PROBES; returns
    the generator, the rows and 5 queries (for add_exact_rows)."""
    s.execute(f"CREATE KEYSPACE a WITH replication = {KS_REPLICATION}")
    s.set_keyspace("a")
    rng, rows = load_vectors(s)
    queries = [rand_vec(rng, DIM) for _ in range(5)]
    assert recall_at_10(s, rows, PROBES) >= 0.9
    return rng, rows, queries


def test_graph_saved_loaded_and_caught_up_after_kill(server_factory):
    srv = server_factory()
    srv.start()
    saved = os.path.join(srv.data, "vector_indexes")
    with connected(srv) as s:
        rng, rows, queries = fill_keyspace_a(s)
        # 3000 changed rows: the background save writes the graph within seconds.
        wait_until("a background save", lambda: any(
            os.path.exists(os.path.join(saved, d, "keys.bin"))
            for d in (os.listdir(saved) if os.path.isdir(saved) else [])), timeout=60)
        absent = add_exact_rows(s, rows, queries, N_ROWS)

    # SIGKILL after the background save: the saved graph is loaded and the rows written
    # after it are re-indexed by the start-up scan, not by a rebuild.
    log = restart(srv, srv.kill)
    assert "brought up to date with the table" in log, log[-3000:]
    assert "built from the table" not in log
    with connected(srv, "a") as s:
        check_exact_rows(s, rows, queries, N_ROWS, absent)

    # A clean stop saves it; the next start loads it as saved, without a scan.
    log = restart(srv, srv.terminate)
    assert "graph of 3004 rows loaded from" in log and "(saved at a clean shutdown)" in log, \
        log[-3000:]
    assert "brought up to date" not in log and "built from the table" not in log
    queries2 = [rand_vec(rng, DIM) for _ in range(5)]
    with connected(srv, "a") as s:
        check_exact_rows(s, rows, queries, N_ROWS, absent)
        absent |= add_exact_rows(s, rows, queries2, N_ROWS + 100)

    # Written after that load, then SIGKILL: exactly those writes are caught up (5 new rows
    # and a moved one re-indexed, one deleted row removed), and every one is found.
    log = restart(srv, srv.kill)
    assert "(6 rows re-indexed, 1 removed)" in log, log[-3000:]
    with connected(srv, "a") as s:
        check_exact_rows(s, rows, queries, N_ROWS, absent)
        check_exact_rows(s, rows, queries2, N_ROWS + 100, absent)
        # DROP INDEX takes the saved graph with it.
        s.execute("DROP INDEX big_v_idx")
        assert os.listdir(saved) == []


def test_graph_over_the_memory_bound_is_served_from_disk(server_factory):
    """256 KiB for a graph of 3,000 64-dim vectors (about 1 MiB in memory): the graph is
    saved and served from its files, and everything the in-memory graph does stays exact."""
    srv = server_factory()
    with open(srv.config, "a") as f:
        f.write("vector_index_memory_bytes: 262144\n")
    saved = os.path.join(srv.data, "vector_indexes")
    srv.start()
    with connected(srv) as s:
        rng, rows, queries = fill_keyspace_a(s)
        log = start_log(srv)
        assert "now served from disk" in log, log[-3000:]
        absent = add_exact_rows(s, rows, queries, N_ROWS)
        check_exact_rows(s, rows, queries, N_ROWS, absent)
        # A row in the delta with a TTL: first for its own vector, then gone once expired.
        near = [x + 1e-3 for x in queries[0]]
        s.execute("INSERT INTO big (k, v) VALUES (%s, %s) USING TTL 3", (9999, near))
        q = s.prepare("SELECT k FROM big ORDER BY v ANN OF ? LIMIT 10")
        assert [r.k for r in s.execute(q, (near,))][0] == 9999
        wait_until("the TTL'd row to expire",
                   lambda: 9999 not in [r.k for r in s.execute(q, (near,))], timeout=30)

    # SIGKILL: the saved graph files are served again, the writes since caught up.
    log = restart(srv, srv.kill)
    assert "graph files on disk" in log and "brought up to date with the table" in log, \
        log[-3000:]
    queries2 = [rand_vec(rng, DIM) for _ in range(5)]
    with connected(srv, "a") as s:
        check_exact_rows(s, rows, queries, N_ROWS, absent)
        absent |= add_exact_rows(s, rows, queries2, N_ROWS + 100)

    # A clean stop saves the delta as one more file: the next start scans nothing.
    log = restart(srv, srv.terminate)
    assert "graph files on disk" in log and "(saved at a clean shutdown)" in log, log[-3000:]
    with connected(srv, "a") as s:
        check_exact_rows(s, rows, queries, N_ROWS, absent)
        check_exact_rows(s, rows, queries2, N_ROWS + 100, absent)
        s.execute("TRUNCATE big")
        assert list(s.execute("SELECT k FROM big ORDER BY v ANN OF %s LIMIT 3",
                              (queries[0],))) == []
        assert os.listdir(saved) == []
        s.execute("INSERT INTO big (k, v) VALUES (1, %s)", (queries[0],))
        assert [r.k for r in s.execute("SELECT k FROM big ORDER BY v ANN OF %s LIMIT 3",
                                       (queries[0],))] == [1]
        s.execute("DROP INDEX big_v_idx")
        assert os.listdir(saved) == []


def test_graph_not_saved_with_encryption_at_rest(server_factory):
    """A saved graph would hold the vectors in clear: with encryption at rest none is saved
    (a clean stop saves nothing, the next start builds from the table), and graphs saved
    before encryption was enabled (planted here) are removed at start."""
    srv = server_factory()
    key_file = os.path.join(srv.root, "keys")
    with open(key_file, "w") as f:
        f.write("1 " + "3c" * 32 + "\n")
    os.chmod(key_file, 0o600)
    with open(srv.config, "a") as f:
        f.write(f"encryption_at_rest:\n  enabled: true\n  key_file: {key_file}\n")
    saved = os.path.join(srv.data, "vector_indexes")
    srv.start()
    with connected(srv) as s:
        s.execute(f"CREATE KEYSPACE a WITH replication = {KS_REPLICATION}")
        s.set_keyspace("a")
        s.execute("CREATE TABLE t (k int PRIMARY KEY, v vector<float, 2>)")
        s.execute("CREATE CUSTOM INDEX ON t (v) USING 'StorageAttachedIndex'")
        for k in range(1, 21):
            s.execute("INSERT INTO t (k, v) VALUES (%s, %s)", (k, [float(k), 1.0]))
    srv.terminate()
    assert not os.path.exists(saved)
    os.makedirs(os.path.join(saved, "1"))
    with open(os.path.join(saved, "1", "keys.bin"), "wb") as f:
        f.write(b"PGVIDX02 planted")
    srv.start()
    log = start_log(srv)
    assert "vector index graphs are not saved with encryption at rest" in log, log[-3000:]
    assert "built from the table" in log and "loaded from" not in log
    assert not os.path.exists(saved)
    with connected(srv, "a") as s:
        got = [r.k for r in s.execute("SELECT k FROM t ORDER BY v ANN OF [20.0, 1.0] LIMIT 3")]
        assert got == [20, 19, 18]


def test_index_rebuilt_after_restart_and_kill(server_factory):
    srv = server_factory(sync="batch")
    srv.start()
    with connected(srv) as s:
        _, rows, queries = fill_keyspace_a(s)

    srv.terminate()
    srv.start()
    with connected(srv, "a") as s:
        assert recall_at_10(s, rows, PROBES) >= 0.9
        # Written just before the kill: each is exactly one query, so it must come first.
        ins = s.prepare("INSERT INTO big (k, v) VALUES (?, ?)")
        for i, query in enumerate(queries):
            s.execute(ins, (N_ROWS + i, query))
            rows[N_ROWS + i] = query
        s.execute("DELETE FROM big WHERE k = 0")
        rows.pop(0)

    srv.kill()
    srv.start()
    with connected(srv, "a") as s:
        q = s.prepare("SELECT k FROM big ORDER BY v ANN OF ? LIMIT 10")
        for i, query in enumerate(queries):
            got = [r.k for r in s.execute(q, (query,))]
            assert got[0] == N_ROWS + i and 0 not in got
        assert recall_at_10(s, rows, PROBES) >= 0.9
