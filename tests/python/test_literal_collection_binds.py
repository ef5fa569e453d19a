"""Bind markers in a literal list or set argument of a collection function, prepared through the
Python driver (the differential runner sends unprepared statements, so these live here).
Expected answers are Cassandra 5.0.9's: the list takes its type from its other elements
(60_literal_collections.cql), each marker binds an element of that type, a bound null stays
in the list (counted by collection_count, skipped by the others), and a list of markers only
has no type.
"""

import pytest
from cassandra import InvalidRequest


@pytest.fixture
def lc(make_cluster, ks):
    s = make_cluster(protocol_version=4).connect(ks)
    s.execute("CREATE TABLE IF NOT EXISTS lc (k int PRIMARY KEY, v int)")
    s.execute("INSERT INTO lc (k, v) VALUES (1, 1)")
    return s


@pytest.mark.parametrize("query,values,expected", [
    ("SELECT collection_sum([?, 2]) FROM lc", (1,), 3),
    ("SELECT collection_sum([1, ?]) FROM lc", (1,), 2),
    ("SELECT collection_sum([1, ?]) FROM lc", (None,), 1),
    ("SELECT collection_count([1, ?]) FROM lc", (None,), 2),
    ("SELECT collection_max([?, 2, ?]) FROM lc", (5, 1), 5),
    ("SELECT collection_max(['a', ?]) FROM lc", ("z",), "z"),
    ("SELECT collection_avg([1.5, ?]) FROM lc", (2.5,), 2.0),
    ("SELECT collection_sum([100000000000000000000, ?]) FROM lc", (1,), 100000000000000000001),
    # A literal set: the bound elements join it sorted, without duplicates.
    ("SELECT collection_sum({1, ?}) FROM lc", (2,), 3),
    ("SELECT collection_sum({1, ?}) FROM lc", (1,), 1),
    ("SELECT collection_count({1, ?}) FROM lc", (1,), 1),
    ("SELECT collection_count({1, ?, ?}) FROM lc", (3, 2), 3),
    ("SELECT collection_min({5, ?}) FROM lc", (3,), 3),
    ("SELECT collection_max({'a', ?}) FROM lc", ("z",), "z"),
    # Under a type hint each marker binds an element of the hinted type, a null one kept in a
    # list (Cassandra 5.0.9 builds it as a selector of its items).
    ("SELECT collection_count((list<int>)[1, ?]) FROM lc", (5,), 2),
    ("SELECT collection_count((list<int>)[1, ?]) FROM lc", (None,), 2),
    ("SELECT (list<int>)[1, ?] FROM lc", (5,), [1, 5]),
    ("SELECT collection_max((set<text>){'a', ?}) FROM lc", ("b",), "b"),
    ("SELECT (tuple<int, text>)(1, ?) FROM lc", ("a",), (1, "a")),
    ("SELECT (map<int, text>){1: ?} FROM lc", ("a",), {1: "a"}),
])
def test_a_bound_element_takes_the_lists_type(lc, query, values, expected):
    assert list(lc.execute(lc.prepare(query), values).one()) == [expected]


@pytest.mark.parametrize("query,arg", [
    ("SELECT collection_max([?]) FROM lc", "[?]"),
    ("SELECT collection_max([?, null]) FROM lc", "[?, NULL]"),
    ("SELECT collection_sum([1.5, 2, ?]) FROM lc", "[1.5, 2, ?]"),
])
def test_a_list_without_one_type_is_refused(lc, query, arg):
    with pytest.raises(InvalidRequest) as e:
        lc.prepare(query)
    f = "collection_max" if "max" in query else "collection_sum"
    assert (f"Cannot infer type of argument {arg} in call to function system.{f}"
            "(numeric_set_or_list): use type casts to disambiguate") in str(e.value)


def test_a_hinted_literal_binds_markers_of_its_element_type(lc):
    p = lc.prepare("SELECT collection_count((list<int>)[1, ?]) FROM lc")
    assert [(c.name, c.type.typename) for c in p.column_metadata] == [("[selection]", "int")]
    assert [c[2] for c in p.result_metadata] == ["system.collection_count((list<int>)[1, ?])"]


def test_a_list_bound_as_a_whole_is_refused(lc):
    with pytest.raises(InvalidRequest) as e:
        lc.prepare("SELECT collection_sum(?) FROM lc")
    assert ("Cannot infer type of argument ? in call to function system.collection_sum"
            "(numeric_set_or_list): use type casts to disambiguate") in str(e.value)
