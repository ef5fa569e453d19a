"""pytest wrapper for run.py.

* Scenario tests (one per scenarios/*.cql) run when env DIFF_CASSANDRA=host:port names the
  reference Cassandra; the candidate is the session's endpoint (CQL_HOST/CQL_PORT, or a Peregrine
  started from PEREGRINE_BIN, see tests/conftest.py).
* The runner's own tests (parsing, comparison) need no server and always run.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

DIFF_CASSANDRA = os.environ.get("DIFF_CASSANDRA")


@pytest.fixture(scope="module")
def sessions(endpoint):
    ca, sa = run.connect(run.parse_hostport(DIFF_CASSANDRA), endpoint.user, endpoint.password)
    cb, sb = run.connect((endpoint.host, endpoint.port), endpoint.user, endpoint.password)
    yield sa, sb
    ca.shutdown()
    cb.shutdown()


@pytest.mark.skipif(not DIFF_CASSANDRA, reason="set DIFF_CASSANDRA=host:port of a reference Cassandra")
@pytest.mark.parametrize("path", run.scenario_paths(), ids=os.path.basename)
def test_scenario(sessions, path):
    sa, sb = sessions
    lines = []
    report = run.run_scenario(path, sa, sb, run.Report(), run.load_known(), out=lines.append)
    detail = "\n".join(lines)
    assert report.scenario_problems == 0, "scenario expectations broken on the reference:\n" + detail
    assert report.failed == 0, f"{report.failed} statement(s) differ:\n" + detail
    assert report.passed + report.known > 0


# ---------------------------------------------------------------- runner self-tests

def test_parse_splits_statements_batches_and_directives(tmp_path):
    p = tmp_path / "x.cql"
    p.write_text(
        "-- comment\n"
        "CREATE TABLE t (k int PRIMARY KEY, v text);\n"
        "INSERT INTO t (k, v) VALUES (1, 'semi;colon -- not a comment');  -- trailing\n"
        "BEGIN BATCH\n  INSERT INTO t (k) VALUES (2);\n  INSERT INTO t (k) VALUES (3);\nAPPLY BATCH;\n"
        "-- @sleep 1.5\n-- @unordered\n-- @tolerance ttl(v)=2\nSELECT k,\n  ttl(v) FROM t;\n"
        "// @error\nSELEC x;\n")
    stmts = run.parse_scenario(str(p))
    assert [s.line for s in stmts] == [2, 3, 4, 11, 14]
    assert stmts[1].text == "INSERT INTO t (k, v) VALUES (1, 'semi;colon -- not a comment')"
    assert stmts[2].text.startswith("BEGIN BATCH") and stmts[2].text.endswith("APPLY BATCH")
    assert stmts[3].text == "SELECT k, ttl(v) FROM t"
    assert stmts[3].sleep == 1.5
    assert stmts[3].directives == {"unordered": True, "tolerance": {"ttl(v)": 2.0}}
    assert stmts[4].directives == {"error": True}


def test_parse_rejects_unterminated_statement(tmp_path):
    p = tmp_path / "y.cql"
    p.write_text("SELECT * FROM t\n")
    with pytest.raises(ValueError):
        run.parse_scenario(str(p))


def _rows(cols, rows):
    return run.Outcome(columns=cols, rows=rows)


def test_compare_detects_row_value_order_and_type_differences():
    st = run.Statement(text="SELECT k, v FROM t", line=1)
    cols = [("k", "int"), ("v", "varchar")]
    a = _rows(cols, [(1, "a"), (2, "b")])
    assert run.compare(st, a, _rows(cols, [(1, "a"), (2, "b")])) == []
    assert run.compare(st, a, _rows(cols, [(1, "a"), (2, "c")]))           # value
    assert run.compare(st, a, _rows(cols, [(2, "b"), (1, "a")]))           # order
    assert run.compare(st, a, _rows(cols, [(1, "a")]))                     # count
    assert run.compare(st, a, _rows([("k", "bigint"), ("v", "varchar")], [(1, "a"), (2, "b")]))  # type
    assert run.compare(st, a, _rows([("k", "int"), ("w", "varchar")], [(1, "a"), (2, "b")]))     # name
    unordered = run.Statement(text="x", line=1, directives={"unordered": True})
    assert run.compare(unordered, a, _rows(cols, [(2, "b"), (1, "a")])) == []


def test_compare_errors_by_code():
    st = run.Statement(text="x", line=1)
    inv = run.Outcome(error=0x2200, error_text="invalid")
    assert run.compare(st, inv, run.Outcome(error=0x2200, error_text="other words")) == []
    assert run.compare(st, inv, run.Outcome(error=0x2000, error_text="syntax"))
    assert run.compare(st, inv, _rows([], []))


def test_compare_tolerance_and_nullness():
    cols = [("k", "int"), ("ttl(v)", "int"), ("writetime(v)", "bigint")]
    a = _rows(cols, [(1, 100, 1700000000000000)])
    b = _rows(cols, [(1, 99, 1700000000000123)])
    plain = run.Statement(text="x", line=1)
    assert run.compare(plain, a, b)
    relaxed = run.Statement(text="x", line=1, directives={"tolerance": {"ttl(v)": 2.0},
                                                          "nullness": {"writetime(v)"}})
    assert run.compare(relaxed, a, b) == []
    assert run.compare(relaxed, a, _rows(cols, [(1, 99, None)]))
    assert run.compare(relaxed, a, _rows(cols, [(1, 90, 5)]))


def test_pages_directive_compares_page_boundaries(tmp_path):
    p = tmp_path / "p.cql"
    p.write_text("-- @pages 3\nSELECT * FROM t;\n")
    st = run.parse_scenario(str(p))[0]
    assert st.directives == {"pages": 3}
    cols = [("k", "int")]
    a = run.Outcome(columns=cols, rows=[(1,), (2,), (3,)], pages=[(3, True), (0, False)])
    same = run.Outcome(columns=cols, rows=[(1,), (2,), (3,)], pages=[(3, True), (0, False)])
    last_full = run.Outcome(columns=cols, rows=[(1,), (2,), (3,)], pages=[(3, False)])
    assert run.compare(st, a, same) == []
    assert run.compare(st, a, last_full)


def test_norm_value_maps_keyspace_and_types():
    import decimal
    import uuid
    assert run.norm_value("ks_a.t", "ks_a") == "$KS.t"
    assert run.norm_value(b"\x01\xff", "k") == "0x01ff"
    assert run.norm_value(float("nan"), "k") == "NaN"
    assert run.norm_value(decimal.Decimal("1.50"), "k") != run.norm_value(decimal.Decimal("1.5"), "k")
    assert run.norm_value({3, 1}, "k") == ("set", (1, 3))
    assert run.norm_value(uuid.UUID(int=1), "k") == "uuid:00000000-0000-0000-0000-000000000001"


def test_known_differences_file_parses():
    known = run.load_known()
    assert isinstance(known, dict)
    for (scenario, stmt), _reason in known.items():
        assert os.path.exists(os.path.join(run.SCENARIOS, scenario)), scenario
