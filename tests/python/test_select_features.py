"""SELECT features of issue 10 through the driver: GROUP BY (paged, prepared, v4 and v5),
aggregates mixed with columns, arithmetic operators and typed literals in selectors.

Every expectation here was read off a real Cassandra 5.0.9 (run this module with CQL_HOST /
CQL_PORT pointing at one to check)."""

from decimal import Decimal

import pytest
from cassandra import FunctionFailure, InvalidRequest
from cassandra.query import SimpleStatement


def fill_groups(session, partitions=5, c1s=4, c2s=3):
    session.execute("CREATE TABLE g (pk int, c1 int, c2 int, v int, s int static, PRIMARY KEY (pk, c1, c2))")
    ins = session.prepare("INSERT INTO g (pk, c1, c2, v) VALUES (?, ?, ?, ?)")
    for pk in range(partitions):
        for c1 in range(c1s):
            for c2 in range(c2s):
                session.execute(ins, (pk, c1, c2, pk * 100 + c1 * 10 + c2))
    session.execute("INSERT INTO g (pk, s) VALUES (0, 7)")


def expected_groups(partitions=5, c1s=4, c2s=3):
    """(pk, c1, count, sum(v)) per (pk, c1) group."""
    return {(pk, c1): (c2s, sum(pk * 100 + c1 * 10 + c2 for c2 in range(c2s)))
            for pk in range(partitions) for c1 in range(c1s)}


@pytest.mark.parametrize("protocol_version", [4, 5])
@pytest.mark.parametrize("fetch_size", [1, 2, 3, 7, 100])
def test_group_by_pages_never_split_or_repeat_a_group(make_cluster, session, ks, protocol_version, fetch_size):
    fill_groups(session)
    s = make_cluster(protocol_version=protocol_version).connect(ks)
    stmt = SimpleStatement("SELECT pk, c1, count(*), sum(v) FROM g GROUP BY pk, c1", fetch_size=fetch_size)
    rows = [tuple(r) for r in s.execute(stmt)]
    seen = [(r[0], r[1]) for r in rows]
    assert len(seen) == len(set(seen)), "a group came back twice"
    assert {(r[0], r[1]): (r[2], r[3]) for r in rows} == expected_groups()


@pytest.mark.parametrize("protocol_version", [4, 5])
def test_group_by_prepared_with_bind_markers_and_paging(make_cluster, session, ks, protocol_version):
    fill_groups(session)
    s = make_cluster(protocol_version=protocol_version).connect(ks)
    q = s.prepare("SELECT pk, c1, count(*) AS n, max(c2) FROM g WHERE pk = ? GROUP BY pk, c1 LIMIT ?")
    assert [c[2] for c in q.result_metadata] == ["pk", "c1", "n", "system.max(c2)"]
    q.fetch_size = 1
    rows = [tuple(r) for r in s.execute(q, (3, 3))]
    assert rows == [(3, 0, 3, 2), (3, 1, 3, 2), (3, 2, 3, 2)]
    # Grouping on the partition only, paged one group at a time, with the static column.
    q2 = s.prepare("SELECT pk, s, count(*), sum(v) FROM g WHERE pk IN ? GROUP BY pk")
    q2.fetch_size = 1
    rows = [tuple(r) for r in s.execute(q2, ([0, 1, 2],))]
    sums = {pk: sum(pk * 100 + c1 * 10 + c2 for c1 in range(4) for c2 in range(3)) for pk in range(3)}
    assert rows == [(0, 7, 12, sums[0]), (1, None, 12, sums[1]), (2, None, 12, sums[2])]


def test_group_by_limits_count_groups(session, ks):
    fill_groups(session)
    rows = list(session.execute(SimpleStatement(
        "SELECT pk, c1, count(*) FROM g GROUP BY pk, c1 PER PARTITION LIMIT 2 LIMIT 5", fetch_size=2)))
    assert len(rows) == 5  # partitions come in token order: 2 + 2 + 1 groups
    per_pk = {}
    for r in rows:
        per_pk.setdefault(r.pk, []).append(r.c1)
    assert sorted(per_pk.values()) == [[0], [0, 1], [0, 1]]


def test_aggregates_mixed_with_columns_and_empty_input(session, ks):
    fill_groups(session, partitions=1)
    r = session.execute("SELECT c1, c2, v, count(*), sum(v) FROM g WHERE pk = 0").one()
    assert tuple(r) == (0, 0, 0, 12, sum(c1 * 10 + c2 for c1 in range(4) for c2 in range(3)))
    r = session.execute("SELECT v, count(*), sum(v), avg(v), max(v) FROM g WHERE pk = 42").one()
    assert tuple(r) == (None, 0, 0, 0, None)
    assert list(session.execute("SELECT pk, count(*) FROM g WHERE pk = 42 GROUP BY pk")) == []
    # LIMIT applies to the one result row, not to the rows aggregated.
    assert session.execute("SELECT count(*) FROM g LIMIT 1").one()[0] == 12


def test_sum_and_avg_keep_the_argument_type(session, ks):
    session.execute("CREATE TABLE n (k int PRIMARY KEY, i int, b bigint, de decimal)")
    session.execute("INSERT INTO n (k, i, b, de) VALUES (1, 2147483647, 9223372036854775807, 1.25)")
    session.execute("INSERT INTO n (k, i, b, de) VALUES (2, 1, 1, 2.5)")
    # avg(de) is a running mean rounded at each step: 1.87, not 1.875 rounded.
    r = session.execute("SELECT sum(i), avg(i), sum(b), avg(b), sum(de), avg(de) FROM n")
    assert [t.typename for t in r.column_types] == ["int", "int", "bigint", "bigint", "decimal", "decimal"]
    assert tuple(r.one()) == (-2147483648, 1073741824, -9223372036854775808, 4611686018427387904,
                              Decimal("3.75"), Decimal("1.87"))


def test_group_by_errors(session, ks):
    fill_groups(session, partitions=1)
    with pytest.raises(InvalidRequest, match="Group by currently only support groups of columns following their declared order in the PRIMARY KEY"):
        session.execute("SELECT pk, count(*) FROM g GROUP BY c1")
    with pytest.raises(InvalidRequest, match="Group by is currently only supported on the columns of the PRIMARY KEY, got v"):
        session.execute("SELECT pk, count(*) FROM g GROUP BY v")
    with pytest.raises(InvalidRequest, match="Grouping on clustering columns is not allowed for SELECT DISTINCT queries"):
        session.execute("SELECT DISTINCT pk FROM g GROUP BY pk, c1")
    with pytest.raises(InvalidRequest, match="aggregate functions cannot be used as arguments of aggregate functions"):
        session.execute("SELECT sum(sum(v)) FROM g")


@pytest.mark.parametrize("protocol_version", [4, 5])
def test_arithmetic_types_names_and_errors(make_cluster, session, ks, protocol_version):
    session.execute("CREATE TABLE a (k int PRIMARY KEY, ti tinyint, m int, f float, d double, t text, ts timestamp)")
    session.execute("INSERT INTO a (k, ti, m, f, d, t, ts) VALUES (1, 127, 5, 1.5, 2.5, 'x', '2020-01-31 00:00:00+0000')")
    s = make_cluster(protocol_version=protocol_version).connect(ks)
    r = s.execute("SELECT m + 1, ti + ti, f + 1, m * 2 + 1, (m + 2) * 3, -m, m + 1.5, t + 'y', (int)1, ts + 1mo FROM a WHERE k = 1")
    assert r.column_names == ["m + 1", "ti + ti", "f + 1", "m * 2 + 1", "(m + 2) * 3", "-m", "m + 1.5",
                              "t + 'y'", "(int)1", "ts + 1mo"]
    assert [t.typename for t in r.column_types] == ["int", "tinyint", "float", "int", "int", "int", "double",
                                                     "varchar", "int", "timestamp"]
    row = r.one()
    assert tuple(row)[:9] == (6, -2, 2.5, 11, 21, -5, 6.5, "xy", 1)
    assert row[9].isoformat().startswith("2020-02-29")
    with pytest.raises(FunctionFailure, match=r"the operation 'int / int' failed: / by zero"):
        s.execute("SELECT m / 0 FROM a WHERE k = 1")
    assert s.execute("SELECT d / 0 FROM a WHERE k = 1").one()[0] == float("inf")
    with pytest.raises(InvalidRequest, match=r"Cannot infer type for term 1 in selection clause"):
        s.execute("SELECT 1 FROM a WHERE k = 1")
    with pytest.raises(InvalidRequest, match=r"Ambiguous '\+' operation with args m and \?"):
        s.prepare("SELECT m + ? FROM a WHERE k = 1")
    # Operations in WHERE and SET terms take the receiver's type.
    s.execute("UPDATE a SET d = 1 / 2, m = 7 % 4 WHERE k = 1 + 1")
    assert tuple(s.execute("SELECT d, m FROM a WHERE k = 2").one()) == (0.5, 3)


@pytest.mark.parametrize("protocol_version", [4, 5])
def test_bind_markers_in_the_select_clause(make_cluster, session, ks, protocol_version):
    session.execute("CREATE TABLE bm (k int, c int, v int, PRIMARY KEY (k, c))")
    session.execute("INSERT INTO bm (k, c, v) VALUES (1, 1, 10)")
    s = make_cluster(protocol_version=protocol_version).connect(ks)
    q = s.prepare("SELECT v + (int)?, (text)? AS t, (int):foo FROM bm WHERE k = 1 AND c = 1")
    assert [(m.name, m.type.typename) for m in q.column_metadata] == [
        ("[selection]", "int"), ("[selection]", "varchar"), ("foo", "int")]
    assert [c[2] for c in q.result_metadata] == ["v + (int)?", "t", "(int)?"]
    assert tuple(s.execute(q, (5, "x", 7)).one()) == (15, "x", 7)


@pytest.mark.parametrize("protocol_version", [4, 5])
def test_multi_column_relations_with_one_bind_marker(make_cluster, session, ks, protocol_version):
    session.execute("CREATE TABLE mc (k int, a int, b text, v int, PRIMARY KEY (k, a, b))")
    ins = session.prepare("INSERT INTO mc (k, a, b, v) VALUES (1, ?, ?, 0)")
    for a in range(3):
        for b in "xyz":
            session.execute(ins, (a, b))
    s = make_cluster(protocol_version=protocol_version).connect(ks)
    gt = s.prepare("SELECT a, b FROM mc WHERE k = 1 AND (a, b) > ?")
    assert [(m.name, m.type.cql_parameterized_type()) for m in gt.column_metadata] == [
        ("(a,b)", "frozen<tuple<int, varchar>>")]
    assert [tuple(r) for r in s.execute(gt, ((1, "y"),))] == [(1, "z"), (2, "x"), (2, "y"), (2, "z")]
    rng = s.prepare("SELECT a, b FROM mc WHERE k = 1 AND (a, b) >= ? AND (a, b) < ?")
    assert [tuple(r) for r in s.execute(rng, ((0, "z"), (2, "y")))] == [
        (0, "z"), (1, "x"), (1, "y"), (1, "z"), (2, "x")]
    eq = s.prepare("SELECT a, b FROM mc WHERE k = 1 AND (a, b) = ?")
    assert [tuple(r) for r in s.execute(eq, ((2, "z"),))] == [(2, "z")]
    in_ = s.prepare("SELECT a, b FROM mc WHERE k = 1 AND (a, b) IN ?")
    assert [(m.name, m.type.cql_parameterized_type()) for m in in_.column_metadata] == [
        ("in(a,b)", "list<frozen<tuple<int, varchar>>>")]
    assert [tuple(r) for r in s.execute(in_, ([(2, "x"), (0, "y"), (9, "q")],))] == [(0, "y"), (2, "x")]
    desc = s.prepare("SELECT a, b FROM mc WHERE k = 1 AND (a, b) IN ? ORDER BY a DESC")
    assert [tuple(r) for r in s.execute(desc, ([(0, "y"), (2, "x")],))] == [(2, "x"), (0, "y")]
    with pytest.raises(InvalidRequest, match="Invalid null value for IN restriction"):
        s.execute(in_, (None,))
    with pytest.raises(InvalidRequest, match=r"Invalid null value in condition for columns: \[a, b\]"):
        s.execute(in_, ([(0, None)],))
    # One marker per tuple; a null in an IN of one tuple is refused as in its EQ.
    each = s.prepare("SELECT a, b FROM mc WHERE k = 1 AND (a, b) IN (?, ?)")
    assert [(m.name, m.type.cql_parameterized_type()) for m in each.column_metadata] == [
        ("(a,b)", "frozen<tuple<int, varchar>>"), ("(a,b)", "frozen<tuple<int, varchar>>")]
    assert [tuple(r) for r in s.execute(each, ((2, "x"), (0, "y")))] == [(0, "y"), (2, "x")]
    with pytest.raises(InvalidRequest, match=r"Invalid null value in condition for columns: \[a, b\]"):
        s.execute(each, ((2, "x"), (0, None)))
    one = s.prepare("SELECT a, b FROM mc WHERE k = 1 AND (a, b) IN (?)")
    with pytest.raises(InvalidRequest, match="^Error from server: code=2200 .* message=\"Invalid null value for column b\""):
        s.execute(one, ((0, None),))
    with pytest.raises(InvalidRequest, match="message=\"Invalid null value for column b\""):
        s.execute(eq, ((0, None),))


def test_order_by_with_in_merges_partitions(session, ks):
    session.execute("CREATE TABLE o (k int, c int, v text, PRIMARY KEY (k, c))")
    for k, c, v in [(1, 1, "a"), (1, 4, "b"), (2, 2, "c"), (2, 3, "d"), (3, 4, "e")]:
        session.execute("INSERT INTO o (k, c, v) VALUES (%s, %s, %s)", (k, c, v))

    def rows(q):
        return [tuple(r) for r in session.execute(SimpleStatement(q, fetch_size=None))]

    assert rows("SELECT * FROM o WHERE k IN (1, 2, 3) ORDER BY c") == [
        (1, 1, "a"), (2, 2, "c"), (2, 3, "d"), (1, 4, "b"), (3, 4, "e")]
    # Ties keep the partitions' key order, DESC included.
    assert rows("SELECT * FROM o WHERE k IN (3, 2, 1) ORDER BY c DESC LIMIT 2") == [(1, 4, "b"), (3, 4, "e")]
    assert rows("SELECT k, c FROM o WHERE k IN (1, 2, 3) ORDER BY c ASC LIMIT 3") == [(1, 1), (2, 2), (2, 3)]
    assert rows("SELECT * FROM o WHERE k IN (1, 2, 3) ORDER BY c DESC PER PARTITION LIMIT 1") == [
        (1, 4, "b"), (3, 4, "e"), (2, 3, "d")]
    assert rows("SELECT v FROM o WHERE k IN (1, 2, 3) AND c > 1 ORDER BY c DESC") == [
        ("b",), ("e",), ("d",), ("c",)]
    # Groups merge by their first row.
    assert rows("SELECT k, count(*) FROM o WHERE k IN (1, 2, 3) GROUP BY k ORDER BY c DESC") == [
        (1, 2), (3, 1), (2, 2)]
    with pytest.raises(InvalidRequest, match="Cannot page queries with both ORDER BY and a IN restriction"):
        session.execute(SimpleStatement("SELECT * FROM o WHERE k IN (1, 2) ORDER BY c", fetch_size=2))


@pytest.mark.parametrize("fetch_size", [1, 2, 100])
def test_group_by_a_time_bucket_pages_by_group(session, ks, fetch_size):
    session.execute("CREATE TABLE tb (k int, t timestamp, v int, PRIMARY KEY (k, t))")
    ins = session.prepare("INSERT INTO tb (k, t, v) VALUES (?, ?, ?)")
    for minute in range(0, 300, 7):
        session.execute(ins, (1, minute * 60_000, minute))
    q = SimpleStatement("SELECT floor(t, 1h) AS hour, count(*) AS n, min(v) FROM tb WHERE k = 1 GROUP BY floor(t, 1h)",
                        fetch_size=fetch_size)
    rows = [tuple(r) for r in session.execute(q)]
    minutes = list(range(0, 300, 7))
    expected = [(h, sum(1 for m in minutes if m // 60 == h), min(m for m in minutes if m // 60 == h))
                for h in range(5)]
    assert [(r[0].hour, r[1], r[2]) for r in rows] == expected


def test_bind_markers_as_function_arguments(session, ks):
    session.execute("CREATE TABLE fa (k int PRIMARY KEY, t text)")
    session.execute("INSERT INTO fa (k, t) VALUES (1, 'abc')")
    q = session.prepare("SELECT intAsBlob(?), mask_inner(t, ?, ?) FROM fa WHERE k = 1")
    assert [(m.name, m.type.typename) for m in q.column_metadata] == [
        ("[selection]", "int"), ("[selection]", "int"), ("[selection]", "int")]
    assert [c[2] for c in q.result_metadata] == ["system.intasblob(?)", "system.mask_inner(t, ?, ?)"]
    assert tuple(session.execute(q, (5, 1, 1)).one()) == (b"\x00\x00\x00\x05", "a*c")
    with pytest.raises(InvalidRequest, match="Ambiguous call to function abs"):
        session.prepare("SELECT abs(?) FROM fa WHERE k = 1")


@pytest.mark.parametrize("protocol_version", [4, 5])
def test_aggregate_warnings_as_cassandra(make_cluster, ks, protocol_version):
    """Cassandra 5.0.9's client warnings on aggregates (the WARNING flag the driver exposes as
    `ResponseFuture.warnings`): without a partition key restriction, and with IN on it; none
    with the key, a token range or a filter on the key, and none on plain selects."""
    s = make_cluster(protocol_version=protocol_version).connect(ks)
    s.execute("CREATE TABLE w (k int, c int, v int, PRIMARY KEY (k, c))")
    s.execute("INSERT INTO w (k, c, v) VALUES (1, 1, 1)")
    without = ["Aggregation query used without partition key"]
    over_in = ["Aggregation query used on multiple partition keys (IN restriction)"]

    def warnings(query, params=None):
        f = s.execute_async(query, params)
        f.result()
        return f.warnings

    assert warnings("SELECT count(*) FROM w") == without
    assert warnings("SELECT max(v) FROM w WHERE c = 1 ALLOW FILTERING") == without
    assert warnings("SELECT k, count(*) FROM w GROUP BY k") == without
    assert warnings("SELECT count(*) FROM system.local") == without
    assert warnings("SELECT count(*) FROM w WHERE k IN (1, 2)") == over_in
    prepared = s.prepare("SELECT sum(v) FROM w WHERE k IN ?")
    assert warnings(prepared, ([1, 2],)) == over_in
    for quiet in ["SELECT count(*) FROM w WHERE k = 1",
                  "SELECT count(*) FROM w WHERE token(k) > 0",
                  "SELECT count(v) FROM w WHERE k > 0 ALLOW FILTERING",
                  "SELECT v FROM w"]:
        assert warnings(quiet) is None, quiet



def test_a_bound_limit_is_checked_with_cassandras_words_for_both_limits(session, ks):
    # Cassandra checks LIMIT and PER PARTITION LIMIT with one method and one wording.
    session.execute("CREATE TABLE bl (k int PRIMARY KEY)")
    for clause in ["LIMIT ?", "PER PARTITION LIMIT ?"]:
        q = session.prepare(f"SELECT k FROM bl {clause}")
        for value, message in [
            (None, "Invalid null value of limit"),
            (0, "LIMIT must be strictly positive"),
            (-1, "LIMIT must be strictly positive"),
        ]:
            with pytest.raises(InvalidRequest, match=message):
                session.execute(q, (value,))
