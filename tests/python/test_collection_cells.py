"""Non-frozen collections (and UDTs) as per-element cells, through the Python driver.

- element writes with client timestamps resolve element by element against overwrites (whose
  collection deletion is at their timestamp - 1), over protocol v4 and v5, with prepared
  statements;
- writetime()/ttl() of a non-frozen collection are lists (list<bigint>/list<int>) with one entry
  per element and maxwritetime() the latest, in the result metadata too; writetime(m[k]) is one
  element's;
- list items keep their order across prepend/append/set-by-index, with Cassandra's errors;
- the element cells survive a restart, an element's TTL expires that element only, and an
  index entry of an element follows its cell (it goes when the element expires).
"""

import signal

import pytest

from test_indexes import own_server_lifetime, wait_until


def types_of(rs):
    return [t.cql_parameterized_type() for t in rs.column_types]


@pytest.mark.parametrize("version", [4, 5])
def test_elements_resolve_by_their_own_timestamps(session, ks, make_cluster, version):
    s = make_cluster(protocol_version=version).connect(ks)
    s.execute("CREATE TABLE c (k int PRIMARY KEY, s set<int>, m map<text, int>, l list<text>)")
    overwrite = s.prepare("UPDATE c USING TIMESTAMP ? SET s = ?, m = ?, l = ? WHERE k = ?")
    add = s.prepare("UPDATE c USING TIMESTAMP ? SET s = s + ?, m[?] = ?, l = l + ? WHERE k = ?")
    s.execute(overwrite, (1000, {1, 2}, {"a": 1}, ["x"], 1))
    s.execute(add, (2000, {3}, "b", 2, ["y"], 1))
    # Older than everything: only its deletion (at 499) would apply, and it shadows nothing.
    s.execute(overwrite, (500, {9}, {"z": 9}, ["old"], 1))
    # Between the two: removes what was written at 1000, keeps what was written at 2000.
    s.execute(overwrite, (1500, {7}, {"c": 7}, ["mid"], 1))
    read = s.prepare("SELECT s, m, l, writetime(s), writetime(m), writetime(l), "
                     "maxwritetime(s), maxwritetime(l) FROM c WHERE k = ?")
    rs = s.execute(read, [1])
    assert types_of(rs)[3:] == ["list<bigint>"] * 3 + ["bigint"] * 2
    r = rs.one()
    assert r.s == {3, 7}
    assert r.m == {"b": 2, "c": 7}
    assert r.l == ["y", "mid"], "an older overwrite's item comes after newer ones (later time key)"
    assert r.writetime_s == [2000, 1500]
    assert r.writetime_m == [2000, 1500]
    assert r.writetime_l == [2000, 1500]
    assert (r.maxwritetime_s, r.maxwritetime_l) == (2000, 2000)
    # One element's write time, the key bound.
    one = s.prepare("SELECT writetime(m[?]), maxwritetime(s[?]) FROM c WHERE k = ?")
    assert tuple(s.execute(one, ["b", 3, 1]).one()) == (2000, 2000)
    assert tuple(s.execute(one, ["a", 1, 1]).one()) == (None, None)
    # An element deletion older than the element's write does nothing; a newer one removes it.
    s.execute("DELETE s[3] FROM c USING TIMESTAMP 1999 WHERE k = 1")
    assert s.execute(read, [1]).one().s == {3, 7}
    s.execute("DELETE s[3] FROM c USING TIMESTAMP 2001 WHERE k = 1")
    assert s.execute(read, [1]).one().s == {7}


def test_list_items_by_index_prepend_and_errors(session, ks):
    session.execute("CREATE TABLE li (k int PRIMARY KEY, l list<int>)")
    session.execute("UPDATE li USING TIMESTAMP 10 SET l = [2, 3] WHERE k = 1")
    session.execute("UPDATE li USING TIMESTAMP 20 SET l = [0, 1] + l WHERE k = 1")
    session.execute("UPDATE li USING TIMESTAMP 30 SET l = l + [4] WHERE k = 1")
    set_at = session.prepare("UPDATE li USING TIMESTAMP ? SET l[?] = ? WHERE k = ?")
    session.execute(set_at, (40, 2, 20, 1))
    session.execute(set_at, (35, 2, 99, 1))  # older than the item's cell: loses
    r = session.execute("SELECT l, writetime(l) FROM li WHERE k = 1").one()
    assert r.l == [0, 1, 20, 3, 4]
    assert r.writetime_l == [20, 20, 40, 10, 30]
    with pytest.raises(Exception, match="List index 5 out of bound, list has size 5"):
        session.execute(set_at, (50, 5, 0, 1))
    with pytest.raises(Exception, match="Attempted to set an element on a list which is null"):
        session.execute(set_at, (50, 0, 0, 2))
    session.execute("UPDATE li SET l = l - [1, 3] WHERE k = 1")
    session.execute("DELETE l[0] FROM li WHERE k = 1")
    assert session.execute("SELECT l FROM li WHERE k = 1").one().l == [20, 4]


@pytest.fixture
def own_server():
    yield from own_server_lifetime("peregrine-cells-", start=True)


def test_element_cells_survive_a_restart_and_expire_one_by_one(own_server):
    c, s = own_server.session()
    s.execute("CREATE KEYSPACE d WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TYPE d.ut (a int, b text)")
    s.execute("CREATE TABLE d.t (k int PRIMARY KEY, s set<int>, m map<int, int>, u ut)")
    s.execute("CREATE INDEX ON d.t (values(s))")
    s.execute("UPDATE d.t USING TIMESTAMP 100 SET s = {1, 2}, m = {1: 1}, u = {a: 1, b: 'x'} WHERE k = 1")
    s.execute("UPDATE d.t USING TIMESTAMP 200 AND TTL 100000 SET s = s + {3}, m[2] = 2 WHERE k = 1")
    s.execute("UPDATE d.t USING TIMESTAMP 300 SET u.b = 'y' WHERE k = 1")
    s.execute("UPDATE d.t USING TIMESTAMP 150 SET u = {a: 7, b: 'z'} WHERE k = 1")
    c.shutdown()
    own_server.stop(signal.SIGTERM)
    own_server.start()
    c, s = own_server.session()
    # (ttl() of a collection with elements that do not expire holds nulls, which this driver
    # cannot decode: Cassandra answers the same.)
    r = s.execute("SELECT s, m, writetime(s), writetime(m) FROM d.t WHERE k = 1").one()
    assert (r.s, r.m) == ({1, 2, 3}, {1: 1, 2: 2})
    assert (r.writetime_s, r.writetime_m) == ([100, 100, 200], [100, 200])
    # A UDT is a cell per field too: the overwrite at 150 loses field b to the write at 300.
    r = s.execute("SELECT u, writetime(u), maxwritetime(u) FROM d.t WHERE k = 1").one()
    assert (r.u.a, r.u.b) == (7, "y")
    assert (r.writetime_u, r.maxwritetime_u) == ([150, 300], 300)
    # A new element with a short TTL: it and its index entry go; the others stay.
    s.execute("UPDATE d.t USING TTL 1 SET s = s + {4} WHERE k = 1")
    wait_until(lambda: s.execute("SELECT s FROM d.t WHERE k = 1").one().s == {1, 2, 3},
               what="the element with TTL 1 to expire")
    assert list(s.execute("SELECT k FROM d.t WHERE s CONTAINS 4")) == []
    assert [x.k for x in s.execute("SELECT k FROM d.t WHERE s CONTAINS 3")] == [1]
    c.shutdown()
