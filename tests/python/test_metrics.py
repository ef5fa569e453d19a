"""The Prometheus endpoint (`/metrics` on the admin listener) after Python-driver traffic:
the text parses, counters and histograms move for the requests made (per opcode, operation
type and table, errors by code, bytes, connections), storage gauges are there; and every query
of the Grafana dashboard shipped in ops/grafana names a metric the server exports."""

import json
import os
import re

import pytest
from cassandra import InvalidRequest

from admin_support import parse_prometheus, server, session, value  # noqa: F401 (fixtures)

DASHBOARD = os.path.join(os.path.dirname(__file__), "..", "..", "ops", "grafana", "peregrine.json")


def scrape(server):
    return parse_prometheus(server.scrape())


def test_names_are_snake_case_with_units_and_types(server, session):
    families = scrape(server)
    assert families, "no metrics"
    for name, f in families.items():
        assert re.fullmatch(r"peregrine_[a-z0-9_]+", name), name
        if f["type"] == "counter":
            assert name.endswith("_total"), name
        if f["type"] == "histogram":
            assert name.endswith("_seconds"), name
            for n, labels, _ in f["samples"]:
                assert n in (name + "_bucket", name + "_sum", name + "_count"), n
    assert value(families, "peregrine_connections_open") >= 1


def test_driver_traffic_moves_the_counters(server, session):
    session.execute("CREATE KEYSPACE m WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE m.kv (k int PRIMARY KEY, v text)")
    before = scrape(server)
    ins = session.prepare("INSERT INTO m.kv (k, v) VALUES (?, ?)")
    sel = session.prepare("SELECT v FROM m.kv WHERE k = ?")
    for k in range(30):
        session.execute(ins, (k, os.urandom(50).hex()))
    for k in range(12):
        session.execute(sel, (k,))
    with pytest.raises(InvalidRequest):
        session.execute("SELECT * FROM m.nosuch")
    after = scrape(server)

    def delta(name, **labels):
        # A table's series appears with its first request: absent before means 0.
        try:
            old = value(before, name, **labels)
        except (AssertionError, KeyError):
            old = 0
        return value(after, name, **labels) - old

    assert delta("peregrine_request_duration_seconds_count", opcode="execute") >= 42
    assert delta("peregrine_request_duration_seconds_count", opcode="prepare") >= 2
    assert delta("peregrine_operation_duration_seconds_count", op="write") >= 30
    assert delta("peregrine_operation_duration_seconds_count", op="read") >= 12
    assert delta("peregrine_table_operation_duration_seconds_count", keyspace="m", table="kv", op="write") == 30
    assert delta("peregrine_table_operation_duration_seconds_count", keyspace="m", table="kv", op="read") == 12
    assert delta("peregrine_request_errors_total", code="0x2200") == 1
    # The driver may compress: random hex still takes at least half its length.
    assert delta("peregrine_received_bytes_total") > 30 * 50
    assert delta("peregrine_sent_bytes_total") > 0
    # Histogram buckets are cumulative and end with +Inf equal to the count.
    samples = [(l, v) for n, l, v in after["peregrine_request_duration_seconds"]["samples"]
               if n.endswith("_bucket") and l["opcode"] == "execute"]
    counts = [v for _, v in samples]
    assert counts == sorted(counts) and samples[-1][0]["le"] == "+Inf"
    assert counts[-1] == value(after, "peregrine_request_duration_seconds_count", opcode="execute")


def test_storage_gauges_are_exported(server, session):
    families = scrape(server)
    for name in ("peregrine_storage_memtable_bytes", "peregrine_storage_journal_bytes",
                 "peregrine_storage_journal_syncs_total", "peregrine_storage_block_cache_hits_total",
                 "peregrine_storage_block_cache_misses_total", "peregrine_storage_compactions_active",
                 "peregrine_storage_compactions_pending", "peregrine_storage_compaction_pending_bytes",
                 "peregrine_storage_compactions_completed_total"):
        assert name in families, name
    assert value(families, "peregrine_storage_up") == 1
    assert value(families, "peregrine_storage_writes_up") == 1
    levels = [l["level"] for _, l, _ in families["peregrine_storage_tables"]["samples"]]
    assert levels[0] == "0"
    assert value(families, "peregrine_storage_memtable_bytes") > 0


def dashboard_queries():
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
    return exprs


def test_every_dashboard_query_names_an_exported_metric(server, session):
    # Proxy-only families are exported by proxy mode (test_nodetool_proxy checks them there).
    exported = set(scrape(server)) | PROXY_FAMILIES
    queries = dashboard_queries()
    assert len(queries) >= 10
    for q in queries:
        names = re.findall(r"\b(peregrine_[a-z0-9_]+)", q)
        assert names, f"query names no peregrine metric: {q}"
        for n in names:
            base = re.sub(r"_(bucket|sum|count)$", "", n) if n.endswith(("_bucket", "_sum", "_count")) \
                and re.sub(r"_(bucket|sum|count)$", "", n) in exported else n
            assert base in exported, f"{n} (in {q}) is not exported"


PROXY_FAMILIES = {
    "peregrine_proxy_cache_hits_total", "peregrine_proxy_cache_misses_total",
    "peregrine_proxy_cache_evictions_total", "peregrine_proxy_cache_bytes",
    "peregrine_proxy_cache_entries", "peregrine_proxy_upstream_duration_seconds",
    "peregrine_proxy_upstream_errors_total", "peregrine_proxy_upstream_timeouts_total",
    "peregrine_proxy_upstream_events_dropped_total", "peregrine_proxy_upstream_pools_forgotten_total",
}
