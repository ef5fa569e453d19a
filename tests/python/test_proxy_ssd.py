"""Proxy mode: the SSD cache tier under a tiny DRAM tier, against a real Apache Cassandra 5.0.9.

Starts Cassandra with scripts/cassandra.sh on port 9192 (or $PROXY_SSD_UPSTREAM_PORT) and a
Peregrine proxy whose DRAM budget holds a handful of entries, so most results spill to the SSD
tier (`proxy.cache_dir`). Both are stopped at the end of the module. Skipped only when the
Cassandra jars are not installed (scripts/setup.sh installs them).
"""

import os
import shutil
import tempfile
import time
import uuid

import pytest
from cassandra.cluster import Cluster

import proxy_support as ps
from proxy_support import metrics

UPSTREAM_PORT = int(os.environ.get("PROXY_SSD_UPSTREAM_PORT", "9192"))
KEYS = 300
SSD_BUDGET = 64 * 1024 * 1024


@pytest.fixture(scope="module")
def upstream():
    ps.start_cassandra(UPSTREAM_PORT)
    try:
        yield f"127.0.0.1:{UPSTREAM_PORT}"
    finally:
        ps.stop_cassandra(UPSTREAM_PORT)


@pytest.fixture(scope="module")
def proxy(upstream):
    """A proxy with 16 KiB of DRAM (16 shards of 1 KiB: two or three small entries each) over
    a 64 MiB SSD tier; max_staleness is long so the re-reads below find valid entries."""
    ssd_dir = tempfile.mkdtemp(prefix="peregrine-proxy-ssd-")
    p = ps.Proxy(upstream, "request_timeout: 5s\nproxy:\n  max_staleness: 120s\n  connect_timeout: 2s\n"
                 f"  cache_bytes: 16384\n  cache_dir: {ssd_dir}\n"
                 f"  ssd_cache_bytes: {SSD_BUDGET}\n", prefix="peregrine-proxy-ssd-")
    try:
        yield p.port
    finally:
        p.stop()
        out = p.log_tail(1 << 30)
        shutil.rmtree(p.dir, ignore_errors=True)
        shutil.rmtree(ssd_dir, ignore_errors=True)
    assert p.proc.returncode in (0, -15), out[-3000:]
    assert "SSD cache" not in out, out[-3000:]  # no open failure or write error was logged


@pytest.fixture(scope="module")
def session(proxy):
    c = Cluster(["127.0.0.1"], port=proxy, protocol_version=4, connect_timeout=10)
    s = c.connect()
    name = "pxssd_" + uuid.uuid4().hex[:10]
    s.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    s.set_keyspace(name)
    s.execute("CREATE TABLE kv (k int PRIMARY KEY, v text)")
    yield s
    s.execute(f"DROP KEYSPACE IF EXISTS {name}")
    c.shutdown()


def wait_for(session, name, at_least, timeout=10):
    deadline = time.time() + timeout
    while True:
        m = metrics(session)
        if m[name] >= at_least or time.time() > deadline:
            return m
        time.sleep(0.1)


def test_spilled_entries_are_served_from_ssd_and_writes_stay_visible(session):
    ins = session.prepare("INSERT INTO kv (k, v) VALUES (?, ?)")
    upd = session.prepare("UPDATE kv SET v = ? WHERE k = ?")
    dele = session.prepare("DELETE FROM kv WHERE k = ?")
    sel = session.prepare("SELECT v FROM kv WHERE k = ?")
    model = {}
    for k in range(KEYS):
        session.execute(ins, (k, f"v{k}"))
        model[k] = f"v{k}"

    # First pass: every read goes upstream; the tiny DRAM tier lets most results go to SSD.
    for k in range(KEYS):
        assert session.execute(sel, (k,)).one().v == model[k]
    m0 = wait_for(session, "cache_ssd_entries", KEYS - 64)
    assert m0["cache_dram_entries"] < 64, m0
    assert m0["cache_ssd_entries"] >= KEYS - 64, m0
    assert 0 < m0["cache_ssd_bytes"] <= SSD_BUDGET, m0
    assert m0["cache_ssd_errors_total"] == 0, m0

    # Second pass: answered by the cache, mostly the SSD tier, without going upstream.
    for k in range(KEYS):
        assert session.execute(sel, (k,)).one().v == model[k]
    m1 = metrics(session)
    assert m1["cache_ssd_hits_total"] - m0["cache_ssd_hits_total"] >= KEYS - 64, (m0, m1)
    assert m1["cache_hits_total"] - m0["cache_hits_total"] >= KEYS - 10, (m0, m1)
    # The driver's own background queries may pass through meanwhile, hence the slack.
    assert m1["upstream_requests_total"] - m0["upstream_requests_total"] < 20, (m0, m1)

    # Read-your-write for entries living on SSD: prepared updates and deletes (partition
    # invalidation), then an unprepared update (table invalidation).
    for k in range(0, KEYS, 3):
        session.execute(upd, (f"u{k}", k))
        model[k] = f"u{k}"
        assert session.execute(sel, (k,)).one().v == model[k]
    for k in range(1, KEYS, 25):
        session.execute(dele, (k,))
        model[k] = None
        assert session.execute(sel, (k,)).one() is None
    for k in range(KEYS):
        row = session.execute(sel, (k,)).one()
        assert (row.v if row else None) == model[k], f"key {k}"
    session.execute("UPDATE kv SET v = 'table-wide' WHERE k = 2")
    model[2] = "table-wide"
    for k in range(KEYS):
        row = session.execute(sel, (k,)).one()
        assert (row.v if row else None) == model[k], f"key {k} after a table invalidation"
    m2 = metrics(session)
    assert m2["cache_ssd_misses_total"] > m1["cache_ssd_misses_total"], (m1, m2)
    assert m2["cache_ssd_errors_total"] == 0, m2
