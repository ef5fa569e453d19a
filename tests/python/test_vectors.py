"""vector<T, n> through the Python driver: prepared statements binding vectors, the driver's
own decoding of the VectorType custom type, the similarity functions, and the refusals.

The expected floats are Cassandra 5.0.9's answers to the same statements (the functions are
bit-exact with its jvector summation order).
"""

import os
import struct
import subprocess
import uuid

import pytest
from cassandra import InvalidRequest
from cassandra.query import SimpleStatement
from test_types import TYPES, VALUES, _same


def f32(x):
    """x rounded to a float, as a float vector stores it."""
    return struct.unpack(">f", struct.pack(">f", x))[0]


@pytest.fixture
def vt(session, ks):
    session.execute("CREATE TABLE vt (k int PRIMARY KEY, v vector<float, 3>, t vector<text, 2>, "
                    "i vector<int, 2>, l vector<list<int>, 2>)")
    return session


def test_driver_decodes_the_vector_type_natively(vt):
    vt.execute("INSERT INTO vt (k, v, t, i, l) VALUES (1, [1.0, -2.5, 0.1], ['a', 'héllo'], [7, -8], [[1, 2], []])")
    rs = vt.execute("SELECT v, t, i, l FROM vt WHERE k = 1")
    row = rs.one()
    assert row.v == [1.0, -2.5, f32(0.1)]
    assert row.t == ["a", "héllo"]
    assert row.i == [7, -8]
    assert row.l == [[1, 2], []]
    # The result metadata is Cassandra's custom type, which the driver parses into its VectorType.
    types = [t.cass_parameterized_type(full=True) for t in rs.column_types]
    assert types[0] == "org.apache.cassandra.db.marshal.VectorType(3)"
    assert rs.column_types[0].subtype.typename == "float"
    assert rs.column_types[1].subtype.typename == "text"  # UTF8Type


def test_prepared_statements_bind_whole_vectors_and_elements(vt):
    ins = vt.prepare("INSERT INTO vt (k, v) VALUES (?, ?)")
    assert ins.column_metadata[1].type.vector_size == 3
    vt.execute(ins, (1, [1.0, 2.0, 3.0]))
    vt.execute(ins, (2, (0.5, 0.25, -1.0)))
    by_element = vt.prepare("INSERT INTO vt (k, v) VALUES (?, [?, 2.0, ?])")
    vt.execute(by_element, (3, 9.0, 8.0))
    sel = vt.prepare("SELECT k, v FROM vt WHERE k = ?")
    assert vt.execute(sel, (1,)).one().v == [1.0, 2.0, 3.0]
    assert vt.execute(sel, (2,)).one().v == [0.5, 0.25, -1.0]
    assert vt.execute(sel, (3,)).one().v == [9.0, 2.0, 8.0]
    text = vt.prepare("UPDATE vt SET t = ? WHERE k = ?")
    vt.execute(text, (["", "x" * 300], 1))
    assert vt.execute("SELECT t FROM vt WHERE k = 1").one().t == ["", "x" * 300]


def test_similarity_functions_match_cassandra(vt):
    vt.execute("INSERT INTO vt (k, v) VALUES (1, [4.0, 5.0, 6.0])")
    vt.execute("INSERT INTO vt (k, v) VALUES (2, [-1.5, 2.25, 0.1])")
    vt.execute("INSERT INTO vt (k, v) VALUES (3, [0.0, 0.0, 0.0])")
    q = vt.prepare("SELECT similarity_cosine(v, ?), similarity_euclidean(v, ?), similarity_dot_product(v, ?) "
                   "FROM vt WHERE k = ?")
    assert q.column_metadata[0].type.vector_size == 3
    cos, euc, dot = vt.execute(q, ([1.0, 2.0, 4.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 1)).one()
    assert euc == 0.0357142873108387
    assert dot == 16.5
    assert cos == 0.972496509552002
    _, _, dot2 = vt.execute(q, ([1.0, 2.0, 4.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 2)).one()
    assert dot2 == 2.1500000953674316
    row = vt.execute("SELECT similarity_cosine([1.0, 2.0], [3.0, 4.0]) AS c FROM vt WHERE k = 1").one()
    assert row.c == 0.9919349551200867
    assert vt.execute(q, ([1.0, 2.0, 4.0], None, [1.0, 2.0, 3.0], 1)).one()[1] is None
    # Zero vectors: euclidean and dot product answer, cosine refuses.
    _, euc0, dot0 = vt.execute("SELECT similarity_cosine(v, v), similarity_euclidean(v, v), "
                               "similarity_dot_product(v, v) FROM vt WHERE k = 1").one()
    assert (euc0, dot0) == (1.0, 39.0)
    with pytest.raises(InvalidRequest, match="doesn't support all-zero vectors"):
        vt.execute("SELECT similarity_cosine(v, [1.0, 1.0, 1.0]) FROM vt WHERE k = 3")


def test_refusals_are_cassandras(vt):
    cases = [
        ("INSERT INTO vt (k, v) VALUES (1, [1.0, 2.0])",
         "Invalid vector literal for v of type vector<float, 3>; expected 3 elements, but given 2"),
        ("INSERT INTO vt (k, v) VALUES (1, [1.0, null, 2.0])", "null is not supported inside vectors"),
        ("INSERT INTO vt (k, v) VALUES (1, ['a', 'b', 'c'])",
         "Invalid vector literal for v: value 'a' is not of type float"),
        ("SELECT similarity_cosine(v, [1.0, 2.0]) FROM vt", "All arguments must have the same vector dimensions"),
        ("SELECT similarity_cosine(i, i) FROM vt",
         "Function system.similarity_cosine requires a float vector argument, but found argument i of type vector<int, 2>"),
        ("CREATE TABLE bad (k int PRIMARY KEY, v vector<float, 0>)",
         "vectors may only have positive dimensions; given 0"),
    ]
    for stmt, message in cases:
        with pytest.raises(InvalidRequest) as e:
            vt.execute(SimpleStatement(stmt))
        assert message in str(e.value), stmt
    # A bound vector of the wrong size is refused by the driver before it reaches the server;
    # raw bytes of the wrong size are refused by the server.
    ins = vt.prepare("INSERT INTO vt (k, v) VALUES (?, ?)")
    with pytest.raises(ValueError):
        vt.execute(ins, (1, [1.0, 2.0]))
    for raw, message in [(b"\0" * 7, "Not enough bytes to read a vector<float, 3>"),
                         (b"\0" * 13, "Unexpected 1 extraneous bytes after vector<float, 3> value"),
                         (b"", "Invalid empty vector value")]:
        bound = ins.bind((1, None))
        bound.values[1] = raw
        with pytest.raises(InvalidRequest) as e:
            vt.execute(bound)
        assert message in str(e.value)
    assert vt.execute("SELECT k FROM vt WHERE k = 1").one() is None


def test_vectors_in_keys_order_element_by_element(vt):
    vt.execute("CREATE TABLE cv (k int, c vector<float, 2>, x int, PRIMARY KEY (k, c))")
    ins = vt.prepare("INSERT INTO cv (k, c, x) VALUES (1, ?, ?)")
    for x, c in enumerate([[2.0, 1.0], [-1.0, 5.0], [2.0, -1.0], [-0.5, -7.0]]):
        vt.execute(ins, (c, x))
    rows = [r.c for r in vt.execute("SELECT c FROM cv WHERE k = 1")]
    assert rows == [[-1.0, 5.0], [-0.5, -7.0], [2.0, -1.0], [2.0, 1.0]]
    vt.execute("CREATE TABLE kv (k vector<float, 2> PRIMARY KEY, u uuid)")
    u = uuid.uuid4()
    vt.execute(vt.prepare("INSERT INTO kv (k, u) VALUES (?, ?)"), ([1.0, 2.0], u))
    assert vt.execute(vt.prepare("SELECT u FROM kv WHERE k = ?"), ([1.0, 2.0],)).one().u == u


def test_json_round_trip(vt):
    vt.execute("INSERT INTO vt JSON '{\"k\": 5, \"v\": [1, 2.5, 3], \"t\": [\"a\", \"b\"]}'")
    assert vt.execute("SELECT JSON k, v, t FROM vt WHERE k = 5").one()[0] == \
        '{"k": 5, "v": [1.0, 2.5, 3.0], "t": ["a", "b"]}'
    with pytest.raises(InvalidRequest, match="List had incorrect size: expected 3 but given 2"):
        vt.execute("INSERT INTO vt JSON '{\"k\": 6, \"v\": [1, 2]}'")


def test_cqlsh_prints_and_describes_vectors(cqlsh_bin, endpoint, vt, ks):
    vt.execute("INSERT INTO vt (k, v, t) VALUES (1, [-1.5, 2.25, 0.1], ['a', 'b'])")
    cmd = [cqlsh_bin, endpoint.host, str(endpoint.port), "--request-timeout=30", "--connect-timeout=20",
           "-e", f"SELECT v, t FROM {ks}.vt WHERE k = 1; DESCRIBE TABLE {ks}.vt"]
    env = dict(os.environ, CQLSH_NO_BUNDLED="TRUE", TERM="dumb")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert "[-1.5, 2.25, 0.1]" in p.stdout
    assert "['a', 'b']" in p.stdout
    assert "    v vector<float, 3>\n" in p.stdout
    assert "    l vector<list<int>, 2>,\n" in p.stdout


@pytest.mark.parametrize("t", TYPES)
def test_every_element_type_round_trips_through_prepared_statements(session, ks, t):
    """Packed (fixed-size) and vint-prefixed (variable-size) elements, as the driver encodes them."""
    session.execute(f"CREATE TABLE ve (k int PRIMARY KEY, v vector<{t}, 2>)")
    ins = session.prepare("INSERT INTO ve (k, v) VALUES (?, ?)")
    sel = session.prepare("SELECT v FROM ve WHERE k = ?")
    values = VALUES[t]
    for i in range(len(values)):
        pair = [values[i], values[(i + 1) % len(values)]]
        session.execute(ins, (i, pair))
        got = session.execute(sel, (i,)).one().v
        assert len(got) == 2
        for sent, back in zip(pair, got):
            assert _same(t, sent, back), (t, sent, back)
