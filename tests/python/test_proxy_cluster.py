"""The proxy in front of a Cassandra cluster of two nodes.

Starts two Cassandra 5.0.9 nodes with scripts/cassandra.sh, one cluster, on CQL ports 9202 and
9212 (or $PROXY_CLUSTER_PORTS="A,B"; the second joins the first), and a Peregrine proxy with
both as upstream hosts, which it sends requests to in turn. The nodes run Cassandra's
CustomPayloadMirroringQueryHandler, which answers each request with the custom payload it got.
"""

import logging
import os
import subprocess
import time

import pytest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import HostFilterPolicy, RoundRobinPolicy
from cassandra.query import BatchStatement

import proxy_support as ps
from proxy_support import metric

MIRROR = "-Dcassandra.custom_query_handler_class=" \
    "org.apache.cassandra.cql3.CustomPayloadMirroringQueryHandler"
PORTS = [int(p) for p in os.environ.get("PROXY_CLUSTER_PORTS", "9202,9212").split(",")]


def _start(port, join=None):
    env = dict(os.environ, CASSANDRA_JVM_OPTS=MIRROR)
    if join:
        env["CASSANDRA_JOIN"] = str(join)
    # --clean: a node left from an earlier run may belong to another cluster.
    r = subprocess.run([ps.SCRIPT, "start", "--port", str(port), "--clean"], capture_output=True,
                       text=True, timeout=300, env=env)
    if r.returncode != 0:
        pytest.fail(f"Cassandra on {port} did not start:\n{r.stdout}\n{r.stderr}")


@pytest.fixture(scope="module")
def nodes():
    try:
        _start(PORTS[0])
        _start(PORTS[1], join=PORTS[0])
        yield PORTS
    finally:
        for p in PORTS:
            ps.stop_cassandra(p)


def _pinned(port):
    """A session that sends every request to the node on `port` (both nodes share 127.0.0.1)."""
    profile = ExecutionProfile(load_balancing_policy=HostFilterPolicy(
        RoundRobinPolicy(), lambda h: h.endpoint.port == port))
    c = Cluster(["127.0.0.1"], port=port, protocol_version=4, connect_timeout=10,
                execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    return c, c.connect()


@pytest.fixture(scope="module")
def direct(nodes):
    made = [_pinned(p) for p in nodes]
    sessions = [s for _, s in made]
    deadline = time.monotonic() + 60
    while True:  # the seed lists the second node once gossip has told it
        rows = sessions[0].execute("SELECT peer_port FROM system.peers_v2").all()
        if len(rows) == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(rows) == 1, f"the second node did not join: {rows}"
    yield sessions
    for c, _ in made:
        c.shutdown()


@pytest.fixture(scope="module")
def proxy(nodes):
    p = ps.Proxy(",".join(f"127.0.0.1:{n}" for n in nodes), "proxy:\n  max_staleness: 30s\n  schema_agreement_wait: 10s\n")
    yield p
    p.stop_cleanly()


def test_schema_changes_through_the_proxy_wait_for_agreement(proxy, direct):
    """A DDL answered through the proxy is known to every upstream node when the client gets
    the answer, so the next request works whichever node the proxy sends it to. The client's
    driver cannot wait for agreement itself: it sees only the proxy. Without the proxy's wait,
    the second node lagged the first by tens of ms here."""
    # The driver's own agreement wait and metadata refresh off: the test reads the nodes' schema
    # versions right after the DDL's answer.
    c = proxy.cluster(protocol_version=4, max_schema_agreement_wait=0, schema_metadata_enabled=False)
    logging.getLogger("cassandra").setLevel(logging.ERROR)
    try:
        s = c.connect()
        ks = "px_cluster"
        s.execute(f"DROP KEYSPACE IF EXISTS {ks}")
        s.execute(f"CREATE KEYSPACE {ks} WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        for i in range(6):
            s.execute(f"CREATE TABLE {ks}.t{i} (k int PRIMARY KEY, v int)")
            versions = [d.execute("SELECT schema_version FROM system.local").one().schema_version
                        for d in direct]
            assert versions[0] == versions[1], f"table t{i}: nodes disagree right after the DDL"
            ins = s.prepare(f"INSERT INTO {ks}.t{i} (k, v) VALUES (?, ?)")
            for k in range(4):  # the proxy alternates between the nodes
                s.execute(ins, (k, k))
                assert s.execute(f"SELECT v FROM {ks}.t{i} WHERE k = {k}").one().v == k
        s.execute(f"DROP KEYSPACE {ks}")
    finally:
        c.shutdown()
    assert "no schema agreement" not in proxy.log_tail(100_000)


def test_custom_payloads_pass_through_both_ways(proxy, direct):
    """A request's custom payload goes upstream and the upstream's comes back (the nodes
    mirror it): for QUERY, BATCH and the EXECUTE of a cacheable read, which with a payload
    is answered by Cassandra every time, never from the cache (a custom query handler may act
    on the payload)."""
    payload = {"peregrine": b"\x00\x01payload", "empty": b""}
    with_direct = direct[0].execute_async("SELECT release_version FROM system.local",
                                          custom_payload=payload)
    with_direct.result()
    assert with_direct.custom_payload == payload, "the nodes do not mirror payloads"
    c = proxy.cluster(protocol_version=4)
    try:
        s = c.connect()
        s.execute("CREATE KEYSPACE IF NOT EXISTS px_payload WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE IF NOT EXISTS px_payload.kv (k int PRIMARY KEY, v text)")
        ins = s.prepare("INSERT INTO px_payload.kv (k, v) VALUES (?, ?)")
        sel = s.prepare("SELECT v FROM px_payload.kv WHERE k = ?")
        batch = BatchStatement()
        batch.add(ins, (2, "b"))
        for stmt, args in (("INSERT INTO px_payload.kv (k, v) VALUES (1, 'a')", None),
                           (batch, None), (sel, (1,)), (sel, (1,)), (sel, (2,))):
            f = s.execute_async(stmt, args, custom_payload=payload)
            f.result()
            assert f.custom_payload == payload, stmt
        s.execute(sel, (1,))  # cached now, without a payload
        hits = metric(s, "cache_hits_total")
        f = s.execute_async(sel, (1,), custom_payload=payload)
        assert f.result().one().v == "a"
        assert f.custom_payload == payload
        assert metric(s, "cache_hits_total") == hits
        f = s.execute_async(sel, (1,))
        f.result()
        assert not f.custom_payload  # a hit: nothing mirrored
        assert metric(s, "cache_hits_total") == hits + 1
    finally:
        c.shutdown()


def test_a_down_node_does_not_hold_schema_changes(nodes, proxy):
    """With one upstream node stopped (its peers keep its old schema version), a schema change
    through the proxy does not wait out the agreement bound (10 s here): the proxy sees the
    lagging node refuse connections and answers. Runs last: it stops the second node."""
    ps.stop_cassandra(nodes[1])
    c = proxy.cluster(protocol_version=4, max_schema_agreement_wait=0, schema_metadata_enabled=False)
    try:
        s = c.connect()
        started = time.monotonic()
        s.execute("CREATE KEYSPACE px_down WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE px_down.t (k int PRIMARY KEY, v int)")
        took = time.monotonic() - started
        assert took < 6, f"two schema changes took {took:.1f} s"
    finally:
        c.shutdown()
    log = proxy.log_tail(200_000)
    assert f"upstream node 127.0.0.1:{nodes[1]} is unreachable" in log
    assert "no schema agreement" not in log
