"""An index created on a table with data is built in the background (issue 11 item 3).

With `index_build_wait: 0s` CREATE INDEX answers at once, as Cassandra 5.0.9's does. Until the
build is done a query that needs the index fails as 5.0.9's does (ReadFailure naming this node,
reason INDEX_NOT_AVAILABLE 0x0006 for SAI and UNKNOWN 0x0000 for a legacy index, with the
request's consistency), then answers what a filtering scan answers. A kill -9 during a build
leaves an index the restart finishes before it serves.

Each test starts its own peregrine (as test_durability.py); skipped without the binary.
"""

import os
import shutil
import tempfile
import time

import pytest
from cassandra import ConsistencyLevel, ReadFailure
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

from test_durability import Server, _find_peregrine

ROWS = 20_000  # indexing this many partitions takes a debug build about a second


@pytest.fixture
def server():
    binary = _find_peregrine()
    if binary is None:
        pytest.skip("needs the peregrine binary")
    root = tempfile.mkdtemp(prefix="peregrine-index-build-")
    s = Server(binary, root, extra_config="index_build_wait: 0s\n")
    s.start()
    yield s
    s.kill()
    shutil.rmtree(root, ignore_errors=True)


def loaded(server):
    # v5: the failure's reason map (v4 sends only the number of failures).
    cluster = server.cluster(protocol_version=5)
    session = cluster.connect()
    session.default_timeout = 60
    session.execute("CREATE KEYSPACE ib WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE ib.t (k int PRIMARY KEY, v int, w text)")
    insert = session.prepare("INSERT INTO ib.t (k, v, w) VALUES (?, ?, ?)")
    execute_concurrent_with_args(session, insert, [(i, i % 100, f"w{i % 50}") for i in range(ROWS)],
                                 concurrency=64, raise_on_first_error=True)
    return cluster, session


def fails_as_cassandra(session, query, code):
    """The query's ReadFailure, checked field by field against what 5.0.9 answers."""
    with pytest.raises(ReadFailure) as e:
        session.execute(SimpleStatement(query, consistency_level=ConsistencyLevel.QUORUM))
    reason = {6: "INDEX_NOT_AVAILABLE", 0: "UNKNOWN"}[code]
    assert f"Operation failed - received 0 responses and 1 failures: {reason} from /127.0.0.1:7000" \
        in str(e.value), e.value
    assert e.value.consistency == ConsistencyLevel.QUORUM
    assert (e.value.received_responses, e.value.required_responses, e.value.failures) == (0, 1, 1)
    assert e.value.error_code_map == {"127.0.0.1": code}


def eventually(session, query, deadline_s=120):
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return session.execute(query).one()
        except ReadFailure:
            assert time.monotonic() < deadline, f"{query}: index still building after {deadline_s}s"
            time.sleep(0.1)


@pytest.mark.parametrize("kind", ["sai", "legacy"])
def test_queries_fail_as_cassandras_until_the_background_build_is_done(server, kind):
    cluster, session = loaded(server)
    try:
        using = " USING 'sai'" if kind == "sai" else ""
        started = time.monotonic()
        session.execute(f"CREATE INDEX vi ON ib.t (v){using}")
        answered = time.monotonic() - started
        query = "SELECT count(*) FROM ib.t WHERE v = 7"
        fails_as_cassandra(session, query, 6 if kind == "sai" else 0)
        if kind == "sai":
            row = session.execute("SELECT is_building, is_queryable FROM system_views.sai_column_indexes "
                                  "WHERE keyspace_name = 'ib' AND table_name = 't' AND index_name = 'vi'").one()
            # Read while the build may just have ended: building and queryable never both.
            assert row.is_building != row.is_queryable, row
        # Writes go on during the build and are indexed.
        session.execute("INSERT INTO ib.t (k, v, w) VALUES (%s, 7, 'new')", (ROWS,))
        assert eventually(session, query)[0] == ROWS // 100 + 1
        built = time.monotonic() - started
        scanned = session.execute("SELECT count(*) FROM ib.t WHERE v = 7 ALLOW FILTERING").one()[0]
        assert scanned == ROWS // 100 + 1
        assert list(session.execute("SELECT index_name FROM system.\"IndexInfo\"")) != []
        print(f"CREATE INDEX answered in {answered:.3f} s, queryable after {built:.1f} s")
    finally:
        cluster.shutdown()


def test_a_build_killed_midway_is_finished_by_the_restart(server):
    cluster, session = loaded(server)
    session.execute("CREATE INDEX wi ON ib.t (w) USING 'sai'")
    cluster.shutdown()
    server.kill()  # SIGKILL, most likely mid-build (the build takes seconds)
    server.start()
    cluster = server.cluster()
    try:
        session = cluster.connect()
        # The restart builds before it serves: the first query is answered.
        got = session.execute("SELECT count(*) FROM ib.t WHERE w = 'w3'").one()[0]
        assert got == ROWS // 50
        want = session.execute("SELECT count(*) FROM ib.t WHERE w = 'w3' ALLOW FILTERING").one()[0]
        assert got == want
    finally:
        cluster.shutdown()


def test_truncate_during_a_build_leaves_a_queryable_index(server):
    cluster, session = loaded(server)
    try:
        session.execute("CREATE INDEX vi ON ib.t (v) USING 'sai'")
        session.execute("TRUNCATE ib.t")
        session.execute("INSERT INTO ib.t (k, v, w) VALUES (1, 7, 'x')")
        # The table is empty after TRUNCATE, so its index is complete at once.
        assert session.execute("SELECT k FROM ib.t WHERE v = 7").all() == [(1,)]
    finally:
        cluster.shutdown()
