"""Peregrine's CQL extensions (docs/extensions.md) through the unchanged Python driver, at v4 and
v5, prepared and unprepared: `DELETE ... RETURNING` on row, partition, range and column
deletes, its conditional form, its atomicity against competing deleters and writers, and
`returning` still usable as an ordinary identifier. Standalone Peregrine only: Cassandra
refuses RETURNING with a syntax error (tested last)."""

import os
import threading

import pytest
from cassandra import InvalidRequest
from cassandra.protocol import SyntaxException


@pytest.fixture(params=[4, 5], ids=["v4", "v5"])
def s(request, make_cluster, session, ks):
    session.execute("CREATE TABLE t (k int, c int, v int, w text, s int static, "
                    "PRIMARY KEY (k, c))")
    cluster = make_cluster(protocol_version=request.param)
    sess = cluster.connect(ks)
    for c in range(1, 5):
        sess.execute("INSERT INTO t (k, c, v, w) VALUES (1, %s, %s, %s)", (c, c * 10, f"w{c}"))
    sess.execute("UPDATE t SET s = 7 WHERE k = 1")
    return sess


def _standalone():
    """A standalone Peregrine: the one conftest starts, or test-all's (CQL_KIND=peregrine)."""
    return not os.environ.get("CQL_HOST") or os.environ.get("CQL_KIND") == "peregrine"


pytestmark = pytest.mark.skipif(not _standalone(), reason="RETURNING is Peregrine's extension")


def _rows(rs):
    return [tuple(r) for r in rs]


@pytest.mark.parametrize("prepared", [False, True], ids=["unprepared", "prepared"])
def test_row_delete_returns_the_row_once(s, prepared):
    q = "DELETE FROM t WHERE k = ? AND c = ? RETURNING *"
    run = (lambda a: s.execute(s.prepare(q), a)) if prepared else \
        (lambda a: s.execute(q.replace("?", "%s"), a))
    rs = run((1, 2))
    assert rs.column_names == ["k", "c", "s", "v", "w"]
    assert _rows(rs) == [(1, 2, 7, 20, "w2")]
    # Gone, and a second delete returns nothing.
    assert _rows(s.execute("SELECT * FROM t WHERE k = 1 AND c = 2")) == []
    assert _rows(run((1, 2))) == []
    # Other rows untouched.
    assert len(_rows(s.execute("SELECT * FROM t WHERE k = 1"))) == 3


def test_selectors_writetime_and_alias(s):
    wt = s.execute("SELECT writetime(v) FROM t WHERE k = 1 AND c = 1").one()[0]
    rs = s.execute(s.prepare("DELETE FROM t WHERE k = ? AND c = ? RETURNING v AS old, writetime(v)"),
                   (1, 1))
    assert rs.column_names[0] == "old"
    assert _rows(rs) == [(10, wt)]


@pytest.mark.parametrize("prepared", [False, True], ids=["unprepared", "prepared"])
def test_partition_and_range_deletes(s, prepared):
    def run(q, a):
        return s.execute(s.prepare(q), a) if prepared else s.execute(q.replace("?", "%s"), a)

    rs = run("DELETE FROM t WHERE k = ? AND c >= ? AND c < ? RETURNING c, v", (1, 2, 4))
    assert _rows(rs) == [(2, 20), (3, 30)]
    assert [r.c for r in s.execute("SELECT c FROM t WHERE k = 1")] == [1, 4]
    rs = run("DELETE FROM t WHERE k = ? RETURNING c, s", (1,))
    assert _rows(rs) == [(1, 7), (4, 7)]
    assert _rows(s.execute("SELECT * FROM t WHERE k = 1")) == []
    assert _rows(run("DELETE FROM t WHERE k = ? RETURNING *", (1,))) == []


def test_in_delete_returns_every_row(s):
    rs = s.execute(s.prepare("DELETE FROM t WHERE k = ? AND c IN ? RETURNING c"), (1, [1, 3, 9]))
    assert _rows(rs) == [(1,), (3,)]


def test_column_delete_returns_the_old_values_and_keeps_the_row(s):
    rs = s.execute(s.prepare("DELETE v FROM t WHERE k = ? AND c = ? RETURNING v, w"), (1, 3))
    assert _rows(rs) == [(30, "w3")]
    assert _rows(s.execute("SELECT v, w FROM t WHERE k = 1 AND c = 3")) == [(None, "w3")]


@pytest.mark.parametrize("prepared", [False, True], ids=["unprepared", "prepared"])
def test_conditional_form(s, prepared):
    q = "DELETE FROM t WHERE k = ? AND c = ? IF v = ? RETURNING v, w"

    def run(a):
        return s.execute(s.prepare(q), a) if prepared else s.execute(q.replace("?", "%s"), a)

    rs = run((1, 4, 99))  # condition fails: nothing deleted, the current values shown
    assert rs.column_names == ["[applied]", "v", "w"]
    assert not rs.was_applied
    assert _rows(rs) == [(False, 40, "w4")]
    rs = run((1, 4, 40))
    assert rs.was_applied
    assert _rows(rs) == [(True, 40, "w4")]
    assert _rows(s.execute("SELECT * FROM t WHERE k = 1 AND c = 4")) == []
    rs = s.execute("DELETE FROM t WHERE k = 1 AND c = 4 IF EXISTS RETURNING *")
    assert _rows(rs) == [(False, None, None, None, None, None)]


def test_returning_in_a_batch_is_refused(s):
    with pytest.raises(InvalidRequest) as e:
        s.execute("BEGIN BATCH DELETE FROM t WHERE k = 1 AND c = 1 RETURNING * APPLY BATCH")
    assert "RETURNING is not supported in a BATCH" in str(e.value)


def test_returning_is_still_an_identifier(session, ks):
    session.execute("CREATE TABLE returning (returning int PRIMARY KEY, v int)")
    session.execute("INSERT INTO returning (returning, v) VALUES (1, 2)")
    rs = session.execute("SELECT returning, v FROM returning WHERE returning = 1")
    assert _rows(rs) == [(1, 2)]
    session.execute("DELETE v FROM returning WHERE returning = 1")
    rs = session.execute("DELETE FROM returning WHERE returning = 1 RETURNING returning")
    assert _rows(rs) == [(1,)]
    assert _rows(session.execute("SELECT * FROM returning")) == []


def test_concurrent_deleters_return_each_value_exactly_once(make_cluster, session, ks):
    """Writers keep re-inserting N rows with distinct values (IF NOT EXISTS, so no write is an
    overwrite); deleters race each other on the same rows. Every inserted value must come back
    from exactly one delete or still be stored at the end."""
    session.execute("CREATE TABLE race (k int, c int, v int, PRIMARY KEY (k, c))")
    n_rows, rounds = 8, 150
    inserted, returned, errors = [], [], []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(wid):
        try:
            sess = make_cluster().connect(ks)
            ins = sess.prepare("INSERT INTO race (k, c, v) VALUES (?, ?, ?) IF NOT EXISTS")
            for i in range(rounds):
                for r in range(n_rows):
                    value = (wid * rounds + i) * n_rows + r
                    if sess.execute(ins, (r % 2, r, value)).was_applied:
                        with lock:
                            inserted.append(value)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    def deleter(whole_partition):
        try:
            sess = make_cluster().connect(ks)
            row = sess.prepare("DELETE FROM race WHERE k = ? AND c = ? RETURNING v")
            part = sess.prepare("DELETE FROM race WHERE k = ? RETURNING v")
            while not stop.is_set():
                for r in range(n_rows):
                    rs = sess.execute(part, (r % 2,)) if whole_partition and r < 2 else \
                        sess.execute(row, (r % 2, r))
                    got = [x.v for x in rs]
                    with lock:
                        returned.extend(got)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    deleters = [threading.Thread(target=deleter, args=(d == 0,)) for d in range(3)]
    for t in writers + deleters:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in deleters:
        t.join()
    assert not errors, errors
    left = [r.v for r in session.execute("SELECT v FROM race")]
    assert len(returned) == len(set(returned)), "a value was returned twice"
    assert set(returned).isdisjoint(left)
    assert sorted(returned + left) == sorted(inserted), "a value was lost"
    assert len(returned) > n_rows  # the race really happened
