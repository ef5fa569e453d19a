"""Every native CQL type round-tripped through simple (CQL literal) and prepared (binary) statements."""

import datetime
import ipaddress
import math
import uuid
from decimal import Decimal

import pytest
from cassandra.util import Date, Duration, Time

TYPES = ["ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "duration", "float", "inet",
         "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid", "varchar", "varint"]

# Several values per type, including the edges. Each is (value sent, value expected back).
VALUES = {
    "ascii": ["", "plain ascii", "~!@#$%^&*()'\"", "x" * 1000],
    "bigint": [0, 1, -1, 2**63 - 1, -2**63],
    "blob": [b"", b"\x00", bytes(range(256)), b"\xff" * 70000],
    "boolean": [True, False],
    "date": [Date(datetime.date(2024, 2, 29)), Date(datetime.date(1970, 1, 1)), Date(datetime.date(1, 1, 1)),
             Date(datetime.date(9999, 12, 31)), Date(-100)],
    "decimal": [Decimal("0"), Decimal("3.14159265358979323846264338327950288"), Decimal("-1E-30"),
                Decimal("123456789012345678901234567890"), Decimal("-0.5")],
    "double": [0.0, -1.5, 1.7976931348623157e308, 5e-324, float("inf"), float("-inf")],
    "duration": [Duration(0, 0, 0), Duration(1, 2, 3), Duration(-1, -2, -3_000_000_000), Duration(14, 0, 0)],
    "float": [0.0, 1.5, -3.25, 3.4028234663852886e38, float("-inf")],
    "inet": ["127.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "2001:db8::8a2e:370:7334"],
    "int": [0, 1, -1, 2**31 - 1, -2**31],
    "smallint": [0, 1, -1, 32767, -32768],
    "text": ["", "héllo wörld", "中文字符", "emoji 😀🚀", "quote ' inside", "x" * 10000],
    "time": [Time(0), Time(1), Time(86399999999999), Time(datetime.time(12, 34, 56, 789012))],
    "timestamp": [datetime.datetime(2024, 1, 2, 3, 4, 5, 678000), datetime.datetime(1970, 1, 1),
                  datetime.datetime(1900, 6, 1, 0, 0, 0, 1000), datetime.datetime(2262, 4, 11, 23, 47, 16)],
    "timeuuid": [uuid.UUID("d2177dd0-eaa2-11de-a572-001b779c76e3"), uuid.UUID("00000000-0000-1000-8000-000000000000")],
    "tinyint": [0, 1, -1, 127, -128],
    "uuid": [uuid.UUID(int=0), uuid.UUID("550e8400-e29b-41d4-a716-446655440000"), uuid.UUID(int=2**128 - 1)],
    "varchar": ["", "varchar ✓"],
    "varint": [0, 1, -1, 127, 128, -128, -129, 2**64, -(2**64), 10**40, -(10**40)],
}


def _same(t, sent, got):
    if t == "float":
        return (math.isinf(sent) and sent == got) or math.isclose(got, sent, rel_tol=1e-6)
    if t == "inet":
        return ipaddress.ip_address(got) == ipaddress.ip_address(sent)
    if t == "date" and isinstance(got, Date):
        return got.days_from_epoch == sent.days_from_epoch
    if t == "time":
        return got == sent
    return got == sent and type(got) is type(sent) or (t == "decimal" and got == sent)


@pytest.fixture
def typed_table(session, ks):
    cols = ", ".join(f"c_{t} {t}" for t in TYPES)
    session.execute(f"CREATE TABLE alltypes (k int PRIMARY KEY, {cols})")
    return "alltypes"


@pytest.mark.parametrize("mode", ["simple", "prepared"])
@pytest.mark.parametrize("cql_type", TYPES)
def test_round_trip(session, typed_table, cql_type, mode):
    col = f"c_{cql_type}"
    values = VALUES[cql_type]
    if mode == "prepared":
        stmt = session.prepare(f"INSERT INTO {typed_table} (k, {col}) VALUES (?, ?)")
        for i, v in enumerate(values):
            session.execute(stmt, (i, v))
        sel = session.prepare(f"SELECT {col} FROM {typed_table} WHERE k = ?")
        got = [session.execute(sel, (i,)).one()[0] for i in range(len(values))]
    else:
        # The driver renders parameters of a simple statement as CQL literals in the query text.
        for i, v in enumerate(values):
            session.execute(f"INSERT INTO {typed_table} (k, {col}) VALUES (%s, %s)", (i, v))
        got = [session.execute(f"SELECT {col} FROM {typed_table} WHERE k = %s", (i,)).one()[0]
               for i in range(len(values))]
    for sent, g in zip(values, got):
        if cql_type == "decimal" and mode == "simple":
            sent = Decimal(repr(float(sent)))  # the driver renders a Decimal literal through float()
        assert _same(cql_type, sent, g), f"{cql_type} {mode}: sent {sent!r}, got {g!r}"
    # Result metadata names the column's CQL type.
    rs = session.execute(f"SELECT {col} FROM {typed_table} WHERE k = 0")
    assert rs.column_names == [col]
    expect = "varchar" if cql_type == "text" else cql_type
    assert rs.column_types[0].typename == expect


def test_nulls_for_every_type(session, typed_table):
    session.execute(f"INSERT INTO {typed_table} (k) VALUES (1)")
    row = session.execute(f"SELECT * FROM {typed_table} WHERE k = 1").one()
    assert row.k == 1
    assert all(getattr(row, f"c_{t}") is None for t in TYPES)
    prep = session.prepare(f"INSERT INTO {typed_table} (k, {', '.join('c_' + t for t in TYPES)}) "
                           f"VALUES (?, {', '.join('?' for _ in TYPES)})")
    session.execute(prep, [2] + [None] * len(TYPES))
    row = session.execute(f"SELECT * FROM {typed_table} WHERE k = 2").one()
    assert row is not None and all(getattr(row, f"c_{t}") is None for t in TYPES)


def test_cql_literal_forms(session, typed_table):
    # Literal syntaxes that a driver never produces but users type in cqlsh.
    session.execute(f"""INSERT INTO {typed_table} (k, c_blob, c_date, c_time, c_timestamp, c_duration, c_uuid,
                        c_double, c_varint, c_inet, c_boolean, c_decimal)
                        VALUES (7, 0xCAFE, '2020-05-17', '13:14:15.123456789', '2020-05-17 13:14:15.123+0000',
                        1y2mo3w4d5h6m7s8ms9us10ns, 123e4567-e89b-12d3-a456-426614174000, -NaN, -12345678901234567890,
                        '10.1.2.3', TRUE, -3.14159265358979323846264338327950288E-5)""")
    row = session.execute(f"SELECT * FROM {typed_table} WHERE k = 7").one()
    assert row.c_blob == b"\xca\xfe"
    assert row.c_date == Date(datetime.date(2020, 5, 17))
    assert row.c_time == Time(datetime.time(13, 14, 15, 123456)) or row.c_time.nanosecond_time == 47655123456789
    assert row.c_timestamp == datetime.datetime(2020, 5, 17, 13, 14, 15, 123000)
    assert row.c_duration == Duration(14, 4 + 21, ((((5 * 60) + 6) * 60 + 7) * 1000 + 8) * 1_000_000 + 9010)
    assert row.c_uuid == uuid.UUID("123e4567-e89b-12d3-a456-426614174000")
    assert math.isnan(row.c_double)
    assert row.c_varint == -12345678901234567890
    assert row.c_inet == "10.1.2.3"
    assert row.c_boolean is True
    assert row.c_decimal == Decimal("-3.14159265358979323846264338327950288E-5")
    assert session.execute(f"SELECT c_time FROM {typed_table} WHERE k = 7").one().c_time.nanosecond_time == \
        ((13 * 60 + 14) * 60 + 15) * 10**9 + 123456789


def test_collections_and_tuples(session, ks):
    session.execute("CREATE TABLE coll (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, bigint>, "
                    "t tuple<int, text>, fl frozen<list<blob>>)")
    prep = session.prepare("INSERT INTO coll (k, l, s, m, t, fl) VALUES (?, ?, ?, ?, ?, ?)")
    session.execute(prep, (1, [3, 1, 2], {"b", "a"}, {"x": 1, "y": -2}, (5, "five"), [b"\x01", b""]))
    session.execute("UPDATE coll SET l = l + [9], s = s + {'c'}, m['z'] = 26 WHERE k = 1")
    row = session.execute("SELECT * FROM coll WHERE k = 1").one()
    assert row.l == [3, 1, 2, 9]
    assert sorted(row.s) == ["a", "b", "c"]
    assert dict(row.m) == {"x": 1, "y": -2, "z": 26}
    assert row.t == (5, "five")
    assert row.fl == [b"\x01", b""]


def test_bound_sets_and_map_keys_are_stored_in_comparator_order(session, ks):
    """Bound values are normalized as Cassandra stores them: set elements and map keys sorted
    by their type (and deduplicated), at any depth, so a frozen set as key matches whatever
    order it was sent in. The driver serializes a list bound to a set, and a dict, in the
    order given; it returns maps in the server's order."""
    session.execute("CREATE TABLE norm (k frozen<set<int>> PRIMARY KEY, m map<int, text>, "
                    "t tuple<frozen<map<text, int>>, int>, n text)")
    ins = session.prepare("INSERT INTO norm (k, m, t, n) VALUES (?, ?, ?, ?)")
    session.execute(ins, ([3, -1, 2, 3], {3: "c", -1: "a", 2: "b"}, ({"b": 2, "a": 1}, 7), "first"))
    row = session.execute("SELECT k, m, t FROM norm").one()
    assert list(row.m.keys()) == [-1, 2, 3]
    assert list(row.t[0].keys()) == ["a", "b"]
    session.execute(ins, ([2, 3, -1], None, None, "second"))  # the same key
    rows = session.execute("SELECT n FROM norm").all()
    assert [r.n for r in rows] == ["second"]
    sel = session.prepare("SELECT n FROM norm WHERE k = ?")
    assert session.execute(sel, ([-1, 2, 3],)).one().n == "second"
    assert session.execute(sel, ([3, 2, -1, -1],)).one().n == "second"
    assert session.execute("SELECT n FROM norm WHERE k = {-1, 2, 3}").one().n == "second"
