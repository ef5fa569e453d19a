"""Collection elements and UDT fields one at a time, through the driver with prepared
statements, at protocol v4 and v5: bind markers inside tuple and UDT literals (named as
Cassandra names them), Cassandra's refusal of markers inside collection literals, DELETE of
map keys, set elements and list indexes, UDT field updates, and unset values in each place.
Every expectation here is Cassandra 5.0.9's answer (run with CQL_HOST/CQL_PORT against it)."""

import pytest
from cassandra import InvalidRequest
from cassandra.query import UNSET_VALUE


@pytest.fixture(params=[4, 5], ids=["v4", "v5"])
def s(request, make_cluster, session, ks):
    session.execute("CREATE TYPE addr (street text, zip int)")
    session.execute("CREATE TABLE t (k int, c int, l list<int>, s set<text>, m map<text, int>, "
                    "u addr, fu frozen<addr>, tu tuple<int, text>, st addr static, PRIMARY KEY (k, c))")
    cluster = make_cluster(protocol_version=request.param)
    return cluster.connect(ks)


def _names(prepared):
    return [c.name for c in prepared.column_metadata]


def test_bind_markers_inside_tuple_and_udt_literals(s):
    p = s.prepare("INSERT INTO t (k, c, tu, fu) VALUES (?, ?, (?, ?), {street: ?, zip: ?})")
    assert _names(p) == ["k", "c", "tu[0]", "tu[1]", "fu.street", "fu.zip"]
    s.execute(p, (1, 1, 7, "x", "main", 9))
    s.execute(p, (1, 2, None, None, "side", None))
    rows = list(s.execute("SELECT c, tu, fu FROM t WHERE k = 1"))
    assert [(r.c, r.tu, (r.fu.street, r.fu.zip)) for r in rows] == [
        (1, (7, "x"), ("main", 9)), (2, (None, None), ("side", None))]
    # An unset field is refused, naming the field.
    with pytest.raises(InvalidRequest) as e:
        s.execute(p, (1, 3, UNSET_VALUE, "y", "z", 1))
    assert "Invalid unset value for tuple field number 0" in str(e.value)
    with pytest.raises(InvalidRequest) as e:
        s.execute(p, (1, 3, 1, "y", "z", UNSET_VALUE))
    assert "Invalid unset value for field 'zip' of user defined type addr" in str(e.value)
    assert list(s.execute("SELECT * FROM t WHERE k = 1 AND c = 3")) == []


@pytest.mark.parametrize("stmt,kind,col", [
    ("INSERT INTO t (k, c, l) VALUES (?, ?, [?, ?])", "list", "l"),
    ("INSERT INTO t (k, c, s) VALUES (?, ?, {?})", "set", "s"),
    ("UPDATE t SET m = {?: ?} WHERE k = ? AND c = ?", "map", "m"),
])
def test_bind_markers_inside_collection_literals_are_refused(s, stmt, kind, col):
    with pytest.raises(InvalidRequest) as e:
        s.prepare(stmt)
    assert (f"Invalid {kind} literal for {col}: bind variables are not supported inside "
            "collection literals") in str(e.value)


def test_map_addition_and_removal_refuse_literals_with_markers(s):
    with pytest.raises(InvalidRequest) as e:
        s.prepare("UPDATE t SET m = m + {?: ?} WHERE k = ? AND c = ?")
    assert "Value for a map addition has to be a map, but was: '{?: ?}'" in str(e.value)
    with pytest.raises(InvalidRequest) as e:
        s.prepare("UPDATE t SET m = m - {?} WHERE k = ? AND c = ?")
    # Cassandra's own spelling.
    assert "Value for a map substraction has to be a set, but was: '{?}'" in str(e.value)


def test_delete_elements_with_bind_markers(s):
    s.execute("INSERT INTO t (k, c, l, s, m) VALUES (1, 1, [1, 2, 3], {'a', 'b'}, {'x': 1, 'y': 2})")
    p = s.prepare("DELETE m[?], l[?], s[?] FROM t WHERE k = ? AND c = ?")
    assert _names(p) == ["key(m)", "idx(l)", "value(s)", "k", "c"]
    s.execute(p, ("x", 0, "a", 1, 1))
    row = s.execute("SELECT l, s, m FROM t WHERE k = 1 AND c = 1").one()
    assert (row.l, set(row.s), dict(row.m)) == ([2, 3], {"b"}, {"y": 2})
    with pytest.raises(InvalidRequest) as e:
        s.execute(p, ("y", 5, "b", 1, 1))
    assert "List index 5 out of bound, list has size 2" in str(e.value)
    with pytest.raises(InvalidRequest) as e:
        s.execute(s.prepare("DELETE l[?] FROM t WHERE k = ? AND c = ?"), (None, 1, 1))
    assert "Invalid null value for list index" in str(e.value)
    with pytest.raises(InvalidRequest) as e:
        s.execute(s.prepare("DELETE m[?] FROM t WHERE k = ? AND c = ?"), (UNSET_VALUE, 1, 1))
    assert "Invalid unset map key" in str(e.value)
    with pytest.raises(InvalidRequest) as e:
        s.execute(s.prepare("DELETE l[?] FROM t WHERE k = ? AND c = ?"), (0, 2, 2))
    assert "Attempted to delete an element from a list which is null" in str(e.value)
    # Nothing of the refused statements was applied.
    row = s.execute("SELECT l, s, m FROM t WHERE k = 1 AND c = 1").one()
    assert (row.l, set(row.s), dict(row.m)) == ([2, 3], {"b"}, {"y": 2})


def test_udt_fields_one_at_a_time(s):
    p = s.prepare("UPDATE t SET u.street = ?, u.zip = ? WHERE k = ? AND c = ?")
    assert _names(p) == ["u.street", "u.zip", "k", "c"]
    s.execute(p, ("main", 7, 1, 1))
    s.execute(p, (UNSET_VALUE, 8, 1, 1))
    row = s.execute("SELECT u, u.street, u.zip FROM t WHERE k = 1 AND c = 1").one()
    assert (row.u.street, row.u.zip, row.u_street, row.u_zip) == ("main", 8, "main", 8)
    s.execute(s.prepare("DELETE u.zip FROM t WHERE k = ? AND c = ?"), (1, 1))
    row = s.execute("SELECT u FROM t WHERE k = 1 AND c = 1").one()
    assert (row.u.street, row.u.zip) == ("main", None)
    # A field update with only unset values writes nothing: no row appears.
    s.execute(p, (UNSET_VALUE, UNSET_VALUE, 2, 2))
    assert list(s.execute("SELECT * FROM t WHERE k = 2")) == []
    # Static UDT field.
    s.execute(s.prepare("UPDATE t SET st.zip = ? WHERE k = ?"), (5, 1))
    assert s.execute("SELECT st FROM t WHERE k = 1").one().st.zip == 5
    with pytest.raises(InvalidRequest) as e:
        s.prepare("UPDATE t SET fu.zip = ? WHERE k = ? AND c = ?")
    assert "Invalid operation (fu.zip = ?) for frozen UDT column fu" in str(e.value)
    with pytest.raises(InvalidRequest) as e:
        s.prepare("UPDATE t SET u.nope = ? WHERE k = ? AND c = ?")
    assert "UDT column u does not have a field named nope" in str(e.value)


def test_map_entry_set_to_unset_is_a_no_op(s):
    s.execute("INSERT INTO t (k, c, m) VALUES (1, 1, {'a': 1})")
    s.execute(s.prepare("UPDATE t SET m[?] = ? WHERE k = ? AND c = ?"), ("a", UNSET_VALUE, 1, 1))
    assert dict(s.execute("SELECT m FROM t WHERE k = 1 AND c = 1").one().m) == {"a": 1}


def test_prepare_after_the_table_is_created_anew(session, ks):
    """Found by the differential generator: a statement prepared before DROP TABLE and CREATE
    TABLE with other types is prepared again with the new types, as Cassandra does."""
    session.execute("CREATE TABLE p (k int PRIMARY KEY, v int)")
    p = session.prepare("SELECT * FROM p WHERE k = ?")
    assert p.column_metadata[0].type.typename == "int"
    session.execute("DROP TABLE p")
    session.execute("CREATE TABLE p (k text PRIMARY KEY, v int)")
    session.execute("INSERT INTO p (k, v) VALUES ('a', 1)")
    p = session.prepare("SELECT * FROM p WHERE k = ?")
    assert p.column_metadata[0].type.typename == "varchar"
    assert [tuple(r) for r in session.execute(p, ("a",))] == [("a", 1)]
