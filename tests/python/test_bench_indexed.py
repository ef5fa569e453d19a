"""`peregrine bench indexed` (issue 11 item 7) run briefly against a real `peregrine serve`:
it creates the SAI-indexed table, loads it, runs the high/low/range/write phases, and its
report's counts are what the table's shape says (every lookup by `high` one row, every `low`
lookup its LIMIT, every range its rows; the write phase's rows found by their new `high` and,
after the restore, by their loaded one). `--reuse` keeps a loaded table, and a wrong answer
(a stray row the table's shape does not allow) is counted as invalid, not as an operation.

Runs unchanged against Cassandra 5.0.9 (the bench only uses `CREATE INDEX ... USING 'sai'` and
prepared statements); these tests start their own Peregrine."""

import json
import os
import subprocess
import tempfile

import pytest

from admin_support import Server, binary

ROWS = 2000
LOW = 10  # distinct `low` values: 200 rows each, so LIMIT 100 returns 100
TABLE = f"idxbench.rows{ROWS}"


@pytest.fixture(scope="module")
def server():
    s = Server(admin=False)
    yield s
    s.cleanup()


def bench(server, out, name, *extra):
    args = [binary(), "bench", "indexed",
            "--endpoint", f"peregrine=127.0.0.1:{server.port}@{server.proc.pid}",
            "--rows", str(ROWS), "--low-cardinality", str(LOW),
            "--phase", "1500ms", "--settle", "300ms", "--concurrency", "8",
            "--load-concurrency", "32", "--out", out, "--name", name, "--seed", "7", *extra]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(out, name + ".json")) as f:
        rep = json.load(f)
    with open(os.path.join(out, name + ".txt")) as f:
        assert f.read() == r.stdout
    return rep


def by_kind(rep):
    return {p["kind"]: p for p in rep["phases"]}


def test_load_and_every_phase_count_what_the_shape_says(server):
    with tempfile.TemporaryDirectory() as out:
        rep = bench(server, out, "first")
    assert rep["rows"] == ROWS
    (load,) = rep["loads"]
    assert load["loaded"] and load["rows"] == ROWS and load["server_cpu_seconds"] > 0
    phases = by_kind(rep)
    assert sorted(phases) == ["high", "low", "range", "write"]
    for kind, p in phases.items():
        assert p["errors"] == 0 and p["invalid"] == 0, (kind, p["error_samples"])
        assert p["ops"] > 0, kind
        assert p["p50_us"] > 0 and p["p99_us"] >= p["p50_us"], kind
        assert p["server_cpu_seconds"] > 0, kind
        assert p["ops_per_server_cpu_second"] > 0, kind
    assert phases["high"]["rows"] == phases["high"]["ops"]
    assert phases["low"]["rows"] == 100 * phases["low"]["ops"]
    assert phases["range"]["rows"] == 100 * phases["range"]["ops"]
    w = phases["write"]
    check = w["write_check"]
    assert check["updates_sent"] >= w["ops"] > 0
    assert 0 < check["rows_restored"] <= ROWS
    assert check["checked"] == min(200, check["rows_restored"]) and check["wrong"] == 0, check
    assert check["restored_checked"] == check["checked"] and check["restored_wrong"] == 0, check
    assert [s["kind"] for s in rep["summary"]] == ["high", "low", "range", "write"]


def test_reuse_keeps_the_table_and_a_wrong_answer_is_counted_invalid(server):
    with tempfile.TemporaryDirectory() as out:
        # The table the first test loaded (and whose written rows it put back) is reused.
        rep = bench(server, out, "reused", "--reuse", "--phases", "high")
        (load,) = rep["loads"]
        assert not load["loaded"]
        assert by_kind(rep)["high"]["invalid"] == 0
        # A stray row with low = 3 and ts = 5: the table's shape has no such row.
        c = server.cluster()
        s = c.connect()
        s.execute(f"INSERT INTO {TABLE} (id, low, high, ts, payload) VALUES (-1, 3, -5, 5, 'x')")
        c.shutdown()
        # Every `low = 3` lookup (no LIMIT cut) and every range (the whole table) meets it.
        rep = bench(server, out, "stray", "--reuse", "--phases", "low,range",
                    "--limit", "1000", "--range-rows", str(ROWS))
        assert not rep["loads"][0]["loaded"]
        for kind, p in by_kind(rep).items():
            assert p["invalid"] > 0, (kind, p)
            assert any("invalid" in e for e in p["error_samples"]), p["error_samples"]
        # Without --reuse the table is dropped and loaded again: no stray row.
        rep = bench(server, out, "reloaded", "--phases", "low")
        assert rep["loads"][0]["loaded"]
        assert by_kind(rep)["low"]["invalid"] == 0
