"""Materialized views through the Python driver (issue 11, item 5).

- with the default configuration (materialized_views_enabled off, as in Cassandra) CREATE
  MATERIALIZED VIEW is refused with Cassandra's message;
- on a server started here with `materialized_views_enabled: true`:
  - the driver's schema metadata shows the view (base table, columns, key, WHERE clause, CQL),
    also on a second client that only learns of it through the pushed SCHEMA_CHANGE events,
    even when that client's refresh of the view ends before its refresh of the base table;
  - CREATE MATERIALIZED VIEW carries Cassandra's "experimental" warning;
  - a view created over existing data holds every row at once, and reads of it page across
    partitions with small fetch sizes, agreeing with the view computed here from the base;
  - the views survive a clean restart and a SIGKILL in the middle of writes to the base
    (commitlog_sync: batch): afterwards each view agrees with its base.
"""

import signal
import threading

import pytest
from cassandra.metadata import SchemaParserV4
from cassandra.query import SimpleStatement

from test_indexes import own_server_lifetime, wait_until

VIEW = ("CREATE MATERIALIZED VIEW {ks}.by_v AS SELECT k, c, v, w FROM {ks}.t "
        "WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k, c)")


def test_views_are_disabled_by_default(session, ks):
    session.execute("CREATE TABLE t (k int, c int, v int, w int, PRIMARY KEY (k, c))")
    with pytest.raises(Exception, match="Materialized views are disabled. Enable in cassandra.yaml to use."):
        session.execute(VIEW.format(ks=ks))


@pytest.fixture(scope="module")
def views_server():
    yield from own_server_lifetime("peregrine-views-", "materialized_views_enabled: true\n", start=True)


@pytest.fixture
def vsession(views_server):
    c, session = views_server.session()
    yield session
    c.shutdown()


def expected_by_v(session, ks):
    """by_v computed here from a full scan of the base: (v, k, c, w) of rows with v."""
    rows = session.execute(SimpleStatement(f"SELECT k, c, v, w FROM {ks}.t", fetch_size=5000))
    return sorted((r.v, r.k, r.c, r.w) for r in rows if r.v is not None)


def read_by_v(session, ks, fetch_size):
    rows = session.execute(SimpleStatement(f"SELECT v, k, c, w FROM {ks}.by_v", fetch_size=fetch_size))
    return [(r.v, r.k, r.c, r.w) for r in rows]


def events_only_client(views_server):
    """A second client, connected before the DDL: it learns of the DDL only from the
    SCHEMA_CHANGE events pushed on its control connection.

    executor_threads=1: cassandra-driver 3.30.1 runs the schema refresh each event asks for on
    its executor, a random 0-2 s after the event (schema_event_refresh_window), or 10 ms after
    the previous one if that is still to come; with the default two threads the refreshes for a
    table and for a view created right after it then run at once. If the view's ends first,
    KeyspaceMetadata._add_view_metadata finds no base table and drops the view without a word,
    and no later event brings it back. That is the driver's race, the same against Cassandra
    5.0.9 (the events are the same); Peregrine's DDL is fast enough that the two events nearly
    always fall in one window, so it showed here under load. One thread refreshes in the order
    the server sent the events.
    """
    return views_server.session(executor_threads=1)


@pytest.mark.parametrize("overtake", [False, True], ids=["plain", "base-refresh-held"])
def test_driver_metadata_shows_the_view(vsession, views_server, monkeypatch, overtake):
    """With `overtake`, the second client's refresh of the base table waits for its refresh of
    the view (3 s at most: with one executor thread that never comes first) — the interleaving
    that lost the view under load, made certain."""
    session = vsession
    ks = "mo" if overtake else "m"
    session.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    other = {}
    view_refreshed = threading.Event()
    held = []
    get_table = SchemaParserV4.get_table

    def holding_get_table(parser, keyspaces, keyspace, table):
        mine = "c" in other and parser.connection is other["c"].control_connection._connection
        if mine and keyspace == ks and table == "t":
            held.append(view_refreshed.wait(3))
        meta = get_table(parser, keyspaces, keyspace, table)
        if mine and keyspace == ks and table == "by_v":
            view_refreshed.set()
        return meta
    if overtake:
        monkeypatch.setattr(SchemaParserV4, "get_table", holding_get_table)
    other_c, _ = events_only_client(views_server)
    other["c"] = other_c
    try:
        session.execute(f"CREATE TABLE {ks}.t (k int, c int, v int, w int, PRIMARY KEY (k, c))")
        session.execute(VIEW.format(ks=ks) + " WITH CLUSTERING ORDER BY (k DESC, c ASC) AND comment = 'vv'")
        session.cluster.refresh_schema_metadata()
        km = session.cluster.metadata.keyspaces[ks]
        view = km.views["by_v"]
        assert view.base_table_name == "t"
        assert not view.include_all_columns
        assert view.where_clause == "k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL"
        assert [c.name for c in view.partition_key] == ["v"]
        assert [c.name for c in view.clustering_key] == ["k", "c"]
        assert set(view.columns) == {"v", "k", "c", "w"}
        assert view.options["comment"] == "vv"
        assert "by_v" in km.tables["t"].views
        assert "by_v" not in km.tables
        cql = view.as_cql_query()
        assert cql.startswith(f"CREATE MATERIALIZED VIEW {ks}.by_v AS SELECT v, k, c, w FROM {ks}.t "
                              "WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL ")
        assert "PRIMARY KEY (v, k, c)" in cql and "CLUSTERING ORDER BY (k DESC, c ASC)" in cql

        def seen_by_other():
            k = other_c.metadata.keyspaces.get(ks)
            return k is not None and "by_v" in k.views
        wait_until(seen_by_other, what="the second client's metadata to show the view")
        assert "by_v" in other_c.metadata.keyspaces[ks].tables["t"].views
        if overtake:
            assert held, "the second client never refreshed the base table"
        session.execute(f"DROP MATERIALIZED VIEW {ks}.by_v")
        wait_until(lambda: "by_v" not in other_c.metadata.keyspaces[ks].views,
                   what="the second client's metadata to drop the view")
        rows = list(session.execute(f"SELECT view_name FROM system_schema.views WHERE keyspace_name = '{ks}'"))
        assert rows == []
    finally:
        other_c.shutdown()


def test_view_built_over_existing_data_pages_like_a_table(vsession):
    session = vsession
    session.execute("CREATE KEYSPACE p WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE p.t (k int, c int, v int, w int, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO p.t (k, c, v, w) VALUES (?, ?, ?, ?)")
    for k in range(60):
        for c in range(4):
            session.execute(ins, (k, c, None if (k + c) % 7 == 0 else (k * 3 + c) % 11, k * 10 + c))
    rs = session.execute(VIEW.format(ks="p"))
    assert rs.response_future.warnings == [
        "Materialized views are experimental and are not recommended for production use."]
    built = [(r.view_name, r.status_replicated) for r in session.execute(
        "SELECT view_name, status_replicated FROM system.built_views WHERE keyspace_name = 'p'")]
    assert built == [("by_v", True)]
    want = expected_by_v(session, "p")
    assert len(want) > 150
    whole = read_by_v(session, "p", 5000)
    assert sorted(whole) == want
    for fetch_size in (1, 7, 50):
        assert read_by_v(session, "p", fetch_size) == whole, f"fetch_size {fetch_size}"
    # One view partition, paged, in clustering order.
    part = [(r.k, r.c) for r in session.execute(
        SimpleStatement("SELECT k, c FROM p.by_v WHERE v = 3", fetch_size=2))]
    assert part == sorted((k, c) for (v, k, c, _) in want if v == 3)
    assert [r.k for r in session.execute("SELECT k FROM p.by_v WHERE v = 3 LIMIT 3")] == [k for k, _ in part[:3]]
    # A write that moves a row to another view key.
    session.execute("UPDATE p.t SET v = 100 WHERE k = 1 AND c = 1")
    assert sorted(read_by_v(session, "p", 3)) == expected_by_v(session, "p")
    assert [(r.k, r.c) for r in session.execute("SELECT k, c FROM p.by_v WHERE v = 100")] == [(1, 1)]


def test_views_survive_restart_and_kill(views_server):
    s = views_server
    c, session = s.session()
    session.execute("CREATE KEYSPACE d WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE d.t (k int, c int, v int, w int, PRIMARY KEY (k, c))")
    session.execute(VIEW.format(ks="d"))
    ins = session.prepare("INSERT INTO d.t (k, c, v, w) VALUES (?, ?, ?, ?)")
    for k in range(40):
        session.execute(ins, (k, 0, k % 5, k))
    assert sorted(read_by_v(session, "d", 9)) == expected_by_v(session, "d")
    c.shutdown()
    s.stop(signal.SIGTERM)

    s.start()
    c, session = s.session()
    assert len(expected_by_v(session, "d")) == 40
    assert sorted(read_by_v(session, "d", 9)) == expected_by_v(session, "d")
    # Writes in flight when the process is killed: whatever happened to them, each view row
    # afterwards is exactly what its base row implies.
    upd = session.prepare("UPDATE d.t SET v = ?, w = ? WHERE k = ? AND c = ?")
    futures = [session.execute_async(upd, (i % 7, i, i % 50, i % 3)) for i in range(400)]
    for f in futures[:200]:
        f.result()
    s.stop(signal.SIGKILL)
    c.shutdown()

    s.start()
    c, session = s.session()
    want = expected_by_v(session, "d")
    assert len(want) >= 40
    assert sorted(read_by_v(session, "d", 9)) == want
    c.shutdown()
