"""`peregrine nodetool` and `/metrics` in proxy mode, in front of a real Cassandra 5.0.9: `info`
shows the cache tiers' counters moving with Python-driver reads, `invalidaterowcache` empties
the cache, commands about stored data say they belong to the upstream (exit 2), and the proxy
families the Grafana dashboard uses are exported."""

import os
import re

import pytest

import proxy_support as ps
from admin_support import nodetool, parse_prometheus, value
from conftest import _free_port

UPSTREAM_PORT = int(os.environ.get("NODETOOL_UPSTREAM_PORT", "9592"))


@pytest.fixture(scope="module")
def proxy():
    ps.start_cassandra(UPSTREAM_PORT)
    admin = _free_port()
    p = ps.Proxy(f"127.0.0.1:{UPSTREAM_PORT}", f"admin_listen: 127.0.0.1:{admin}\n",
                 prefix="peregrine-nodetool-proxy-")
    p.admin_port = admin
    try:
        yield p
    finally:
        p.stop_cleanly()
        ps.stop_cassandra(UPSTREAM_PORT)


def nt(proxy, *args):
    return nodetool("-p", str(proxy.admin_port), *args)


def info_cache_line(out):
    m = re.search(r"^Row Cache              : entries (\d+), size .*?, (\d+) hits, (\d+) requests, ", out, re.M)
    assert m, out
    return tuple(int(x) for x in m.groups())


def test_info_shows_cache_stats_moving(proxy):
    c = proxy.cluster(protocol_version=4)
    s = c.connect()
    try:
        s.execute("CREATE KEYSPACE IF NOT EXISTS ntp WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE IF NOT EXISTS ntp.kv (k int PRIMARY KEY, v text)")
        s.execute("INSERT INTO ntp.kv (k, v) VALUES (1, 'one')")
        rc, out, err = nt(proxy, "info")
        assert rc == 0, err
        assert re.search(r"^Native Transport active: true$", out, re.M)
        _, hits0, req0 = info_cache_line(out)
        sel = s.prepare("SELECT v FROM ntp.kv WHERE k = ?")
        for _ in range(5):
            assert s.execute(sel, (1,)).one().v == "one"
        rc, out, _ = nt(proxy, "info")
        entries, hits, req = info_cache_line(out)
        assert entries >= 1 and req - req0 >= 5 and hits - hits0 >= 4
        assert re.search(rf"^Upstream               : 127\.0\.0\.1:{UPSTREAM_PORT}$", out, re.M)
        assert nt(proxy, "invalidaterowcache")[0] == 0
        assert s.execute(sel, (1,)).one().v == "one"
    finally:
        c.shutdown()


@pytest.mark.parametrize("command", ["flush", "compact", "snapshot", "tablestats"])
def test_data_commands_belong_to_the_upstream(proxy, command):
    rc, out, err = nt(proxy, command)
    assert (rc, out) == (2, "")
    assert err.startswith(f"error: {command} acts on stored data, which lives in the upstream cluster: "
                          f"run nodetool {command} against the upstream nodes (127.0.0.1:{UPSTREAM_PORT})")


def test_proxy_metrics_per_tier(proxy):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{proxy.admin_port}/metrics", timeout=10) as r:
        families = parse_prometheus(r.read().decode())
    assert value(families, "peregrine_proxy_cache_hits_total", tier="dram") >= 1
    assert value(families, "peregrine_proxy_cache_bytes", tier="ssd") == 0
    # Per upstream node (one here).
    assert value(families, "peregrine_proxy_upstream_duration_seconds_count",
                 node=f"127.0.0.1:{UPSTREAM_PORT}") >= 1
    # The proxy's bounds (issue 14), not reached here: counted from zero.
    assert value(families, "peregrine_proxy_upstream_events_dropped_total") == 0
    assert value(families, "peregrine_proxy_upstream_pools_forgotten_total") == 0
    assert "peregrine_request_duration_seconds" in families
    assert "peregrine_storage_memtable_bytes" not in families


def test_drain_in_proxy_mode_closes_the_port(proxy):
    # Last in the module: the proxy takes no clients until enablebinary.
    assert nt(proxy, "drain") == (0, "", "")
    assert nt(proxy, "statusbinary")[1] == "not running\n"
    assert nt(proxy, "enablebinary")[0] == 0
