"""TLS against a real Cassandra 5.0.9: one `client_encryption_options` section, written once,
configures both Cassandra and Peregrine, and the proxy speaks mutual TLS to that Cassandra.

Cassandra runs on TLS_CASSANDRA_PORT (default 9232, a port no other test uses; its data directory
is wiped first, since another test's node may have left a cluster of its own there) with the section appended to its
cassandra.yaml (scripts/cassandra.sh, CASSANDRA_EXTRA_YAML); it is started fresh for this
module and stopped after it. Skipped when the Cassandra jars are not installed.
"""

import os
import shutil
import tempfile

import pytest

import proxy_support as ps
from test_tls import Ca, client_context, refused, roundtrip, upstream_tls_yaml
from test_tls import server as peregrine  # noqa: F401  (the fixture: one Peregrine per config)

PORT = int(os.environ.get("TLS_CASSANDRA_PORT", "9232"))


def section(ca, keystore):
    """Cassandra 5.0's keys, as its PEM-based SSL context factory takes them."""
    return ("client_encryption_options:\n"
            "  enabled: true\n"
            "  optional: false\n"
            "  ssl_context_factory:\n"
            "    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory\n"
            f"  keystore: {keystore}\n"
            f"  truststore: {ca.pem}\n"
            "  require_client_auth: true\n"
            "  accepted_protocols: [TLSv1.2, TLSv1.3]\n")


@pytest.fixture(scope="module")
def setup():
    root = tempfile.mkdtemp(prefix="peregrine-tls-cassandra-")
    ca = Ca(root, "test-ca")
    pki = {"ca": ca, "server": ca.leaf("server"), "client": ca.leaf("client")}
    extra = os.path.join(root, "extra.yaml")
    with open(extra, "w") as f:
        f.write(section(ca, pki["server"][0]))
    env = dict(os.environ, CASSANDRA_EXTRA_YAML=extra)
    ps.stop_cassandra(PORT, env=env)
    ps.start_cassandra(PORT, env=env, clean=True)
    yield pki
    ps.stop_cassandra(PORT, env=env)
    shutil.rmtree(root, ignore_errors=True)


def test_one_section_configures_cassandra_and_peregrine_alike(setup, peregrine):
    pki = setup
    p = peregrine(section(pki["ca"], pki["server"][0]))
    _, cert, key = pki["client"]
    with_cert = client_context(pki["ca"].pem, cert, key)
    assert roundtrip(PORT, with_cert) == "over tls"
    assert roundtrip(p.port, with_cert) == "over tls"
    # Both refuse a client without a certificate, and a plain client.
    for port in (PORT, p.port):
        refused(port, client_context(pki["ca"].pem))
        refused(port)


@pytest.mark.parametrize("version", [4, 5])
def test_the_proxy_speaks_mutual_tls_to_cassandra(setup, peregrine, version):
    from cassandra.cluster import Cluster

    pki = setup
    proxy = peregrine(upstream_tls_yaml(pki, PORT))
    cluster = Cluster(["127.0.0.1"], port=proxy.port, protocol_version=version, connect_timeout=10)
    try:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE IF NOT EXISTS tls WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE IF NOT EXISTS tls.t (k int PRIMARY KEY, v text)")
        s.execute("INSERT INTO tls.t (k, v) VALUES (%s, 'through the proxy')", (version,))
        # Read twice: upstream, then (cacheable) from the proxy's cache.
        for _ in range(2):
            row = s.execute("SELECT v FROM tls.t WHERE k = %s", (version,)).one()
            assert row.v == "through the proxy"
    finally:
        cluster.shutdown()


def test_the_proxy_without_a_client_certificate_is_refused_by_cassandra(setup, peregrine):
    proxy = peregrine(upstream_tls_yaml(setup, PORT, client_cert=False))
    err = refused(proxy.port)
    assert "no upstream node is reachable" in err, err
    # TLS 1.3: the client's certificate is checked after the client finished its handshake, so
    # Cassandra's refusal reaches the proxy as its alert, or as a reset when the socket is closed
    # before the alert is read (seen once in 20 runs).
    assert "CertificateRequired" in err or "Connection reset" in err, err
