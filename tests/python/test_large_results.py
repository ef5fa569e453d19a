"""Large results arrive whole: every row of scans whose pages range from a few hundred bytes to
several MB, in protocol v3, v4 and v5, with and without compression, alone and interleaved on
one connection with many small answers.

The server sends a large rows body from where it was encoded (a vectored write, not a copy into
its write buffer) and, in v5, builds the segments around it: a byte lost, repeated or
reordered there shows up here as a wrong value, a wrong row or a driver error. Runs against
real Cassandra too (CQL_HOST/CQL_PORT)."""

import uuid

import pytest
from cassandra.concurrent import execute_concurrent
from cassandra.query import SimpleStatement

# Value sizes cycled over the clustering rows: below and above the server's send-as-is size
# (8 KiB), and one row bigger than a v5 segment's payload (128 KiB).
SIZES = [10, 700, 1100, 5000, 9000, 30000, 140000, 60]
ROWS = 96


def value(c):
    size = SIZES[c % len(SIZES)]
    return bytes((c * 7 + j + j // 251) % 256 for j in range(size))


@pytest.fixture(scope="module")
def table(endpoint):
    c = endpoint.cluster(protocol_version=4)
    s = c.connect()
    name = "t_" + uuid.uuid4().hex[:12]
    s.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    s.execute(f"CREATE TABLE {name}.wide (k int, c int, v blob, PRIMARY KEY (k, c))")
    s.execute(f"CREATE TABLE {name}.small (k int PRIMARY KEY, v int)")
    ins = s.prepare(f"INSERT INTO {name}.wide (k, c, v) VALUES (0, ?, ?)")
    for c_ in range(ROWS):
        s.execute(ins, (c_, value(c_)))
    ins = s.prepare(f"INSERT INTO {name}.small (k, v) VALUES (?, ?)")
    for k in range(50):
        s.execute(ins, (k, k * 3))
    yield name
    s.execute(f"DROP KEYSPACE {name}")
    c.shutdown()


def check_rows(rows, first=0):
    got = [(r.c, r.v) for r in rows]
    assert [c for c, _ in got] == list(range(first, first + len(got)))
    for c_, v in got:
        assert v == value(c_), f"row {c_}: {len(v)} bytes, expected {len(value(c_))}"
    return len(got)


CONNECTIONS = [(3, None), (3, "lz4"), (4, None), (4, "lz4"), (4, "snappy"), (5, None), (5, "lz4")]


@pytest.mark.parametrize("version,compression", CONNECTIONS)
@pytest.mark.parametrize("fetch_size", [3, 40, 5000])
def test_a_scan_returns_every_row_at_any_page_size(make_cluster, table, version, compression, fetch_size):
    c = make_cluster(protocol_version=version, compression=compression or False)
    s = c.connect()
    assert c.protocol_version == version
    st = SimpleStatement(f"SELECT c, v FROM {table}.wide WHERE k = 0", fetch_size=fetch_size)
    assert check_rows(s.execute(st)) == ROWS


@pytest.mark.parametrize("version,compression", [(4, None), (5, None), (5, "lz4")])
def test_large_and_small_answers_interleaved_on_one_connection(make_cluster, table, version, compression):
    c = make_cluster(protocol_version=version, compression=compression or False)
    s = c.connect()
    scan = s.prepare(f"SELECT c, v FROM {table}.wide WHERE k = 0 AND c >= ? LIMIT ?")
    point = s.prepare(f"SELECT v FROM {table}.small WHERE k = ?")
    work = []
    for i in range(300):
        if i % 3 == 0:
            first = (i * 7) % ROWS
            work.append((scan, (first, 1 + i % 25)))
        else:
            work.append((point, (i % 50,)))
    for (stmt, args), (ok, rs) in zip(work, execute_concurrent(s, work, concurrency=64, raise_on_first_error=True)):
        assert ok
        if stmt is scan:
            first, limit = args
            assert check_rows(rs, first) == min(limit, ROWS - first)
        else:
            assert [r.v for r in rs] == [args[0] * 3]
