"""TLS on the client port (`client_encryption_options`) and to the proxy's upstream
(`proxy.upstream_encryption_options`), with the Python driver's `ssl_context`.

Every certificate is made here, in a temporary directory, with the `openssl` command line (a
test CA, leaf certificates signed by it, an expired one, one from another CA); no key is kept.
Each test starts its own Peregrine with its own config file.
"""

import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import time

import pytest
from cassandra.cluster import Cluster, NoHostAvailable
from cassandra.query import SimpleStatement

from auth_support import AuthServer
from conftest import _free_port, _port_open

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")

CA_CONFIG = """
[ca]
default_ca = test
[test]
dir = .
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
unique_subject = no
[any]
commonName = supplied
[leaf]
basicConstraints = CA:FALSE
keyUsage = digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
"""


class Ca:
    """A throw-away certificate authority in `dir`."""

    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "ca.cnf"), "w") as f:
            f.write(CA_CONFIG)
        open(os.path.join(self.dir, "index.txt"), "w").close()
        with open(os.path.join(self.dir, "serial"), "w") as f:
            f.write("1000\n")
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                      "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                      "-subj", f"/CN={name}")
        self.pem = os.path.join(self.dir, "ca.pem")

    def _openssl(self, *args):
        r = subprocess.run(["openssl", *args], cwd=self.dir, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr

    def leaf(self, cn, expired=False):
        """A keystore (certificate + key in one PEM file) and the key and certificate apart."""
        self._openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                      "-nodes", "-keyout", f"{cn}.key", "-out", f"{cn}.csr", "-subj", f"/CN={cn}")
        dates = (["-startdate", "20200101000000Z", "-enddate", "20210101000000Z"] if expired
                 else ["-days", "2"])
        self._openssl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key",
                      "-in", f"{cn}.csr", "-out", f"{cn}.pem", "-extensions", "leaf", "-notext",
                      *dates)
        cert, key = os.path.join(self.dir, f"{cn}.pem"), os.path.join(self.dir, f"{cn}.key")
        keystore = os.path.join(self.dir, f"{cn}.keystore.pem")
        with open(keystore, "w") as out:
            out.write(open(cert).read() + open(key).read())
        return keystore, cert, key


@pytest.fixture(scope="module")
def pki():
    root = tempfile.mkdtemp(prefix="peregrine-tls-pki-")
    ca, other = Ca(root, "test-ca"), Ca(root, "other-ca")
    yield {
        "root": root,
        "ca": ca,
        "other": other,
        "server": ca.leaf("server"),
        "client": ca.leaf("client"),
        "expired": ca.leaf("expired", expired=True),
        "stranger": other.leaf("stranger"),
    }
    shutil.rmtree(root, ignore_errors=True)


class TlsServer(AuthServer):
    """A Peregrine with `yaml` as its whole config (no authentication)."""

    def __init__(self, yaml):
        super().__init__(env={"RUST_LOG": "info"})
        with open(self.config, "w") as f:
            f.write(yaml)

    def wait_log(self, text, timeout=10):
        deadline = time.time() + timeout
        while text not in self.log():
            assert time.time() < deadline, f"`{text}` not logged:\n{self.log()[-3000:]}"
            time.sleep(0.05)


def tls_yaml(keystore, truststore=None, require_client_auth="false", optional=False, extra=""):
    y = ("client_encryption_options:\n"
         "  enabled: true\n"
         f"  optional: {str(optional).lower()}\n"
         f"  keystore: {keystore}\n"
         f"  require_client_auth: {require_client_auth}\n")
    if truststore:
        y += f"  truststore: {truststore}\n"
    return y + extra


@pytest.fixture
def server():
    started = []

    def start(yaml):
        s = TlsServer(yaml).start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def client_context(ca_pem, cert=None, key=None):
    ctx = ssl.create_default_context(cafile=ca_pem)
    ctx.check_hostname = False  # the certificates name 127.0.0.1; the chain is what is checked
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def roundtrip(port, ssl_context=None):
    """Connects with the driver, writes a row and reads it back."""
    cluster = Cluster(["127.0.0.1"], port=port, ssl_context=ssl_context, protocol_version=4,
                      connect_timeout=10)
    try:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE IF NOT EXISTS tls WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE IF NOT EXISTS tls.t (k int PRIMARY KEY, v text)")
        s.execute("INSERT INTO tls.t (k, v) VALUES (1, 'over tls')")
        return s.execute("SELECT v FROM tls.t WHERE k = 1").one().v
    finally:
        cluster.shutdown()


def refused(port, ssl_context=None):
    """The driver's error text when it cannot connect."""
    with pytest.raises(NoHostAvailable) as e:
        roundtrip(port, ssl_context)
    return str(e.value)


def peer_cn(port, ca_pem):
    """The CN of the certificate the server presents to a new TLS connection."""
    ctx = client_context(ca_pem)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with ctx.wrap_socket(raw) as tls:
            subject = dict(x[0] for x in tls.getpeercert()["subject"])
            return subject["commonName"]


def options_frame():
    """A bare v4 OPTIONS request."""
    return struct.pack(">BBhBI", 4, 0, 0, 0x05, 0)


def closed_by_server(sock, timeout=10):
    """True once the server closed the socket (EOF or reset), reading whatever it sent first."""
    sock.settimeout(timeout)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return True


def test_server_only_tls_serves_a_verified_client_and_refuses_plain_ones(pki, server):
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore))
    assert roundtrip(s.port, client_context(pki["ca"].pem)) == "over tls"
    # A plain driver on the TLS port: refused, and the server says why.
    refused(s.port)
    s.wait_log("did not speak TLS")
    # Plain CQL bytes on the TLS port: a clean close, not a hang.
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
        raw.sendall(options_frame())
        assert closed_by_server(raw)
    assert roundtrip(s.port, client_context(pki["ca"].pem)) == "over tls"


@pytest.mark.parametrize("version", [4, 5])
def test_a_large_scan_over_tls_returns_every_row(pki, server, version):
    # Pages of several hundred KB: their row data goes out through the TLS stream's vectored
    # write, not copied into the write buffer (server::writer::SEND_AS_IS).
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore))
    cluster = Cluster(["127.0.0.1"], port=s.port, ssl_context=client_context(pki["ca"].pem),
                      protocol_version=version, connect_timeout=10)
    try:
        session = cluster.connect()
        session.execute("CREATE KEYSPACE IF NOT EXISTS tls WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute("CREATE TABLE IF NOT EXISTS tls.wide (k int, c int, v blob, PRIMARY KEY (k, c))")
        value = lambda c: bytes((c * 13 + j) % 256 for j in range(1000 + 997 * (c % 50)))
        ins = session.prepare("INSERT INTO tls.wide (k, c, v) VALUES (0, ?, ?)")
        for c in range(200):
            session.execute(ins, (c, value(c)))
        for fetch_size in (7, 1000):
            st = SimpleStatement("SELECT c, v FROM tls.wide WHERE k = 0", fetch_size=fetch_size)
            rows = [(r.c, r.v) for r in session.execute(st)]
            assert [c for c, _ in rows] == list(range(200))
            assert all(v == value(c) for c, v in rows)
    finally:
        cluster.shutdown()


def test_a_client_that_trusts_another_ca_refuses_the_server(pki, server):
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore))
    assert "CERTIFICATE_VERIFY_FAILED" in refused(s.port, client_context(pki["other"].pem))


def test_an_expired_server_certificate_is_refused_by_the_client(pki, server):
    keystore, _, _ = pki["expired"]
    s = server(tls_yaml(keystore))
    assert "certificate has expired" in refused(s.port, client_context(pki["ca"].pem))


def test_mutual_tls_requires_a_client_certificate_from_the_truststore(pki, server):
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore, pki["ca"].pem, require_client_auth="true"))
    _, cert, key = pki["client"]
    assert roundtrip(s.port, client_context(pki["ca"].pem, cert, key)) == "over tls"
    # No certificate.
    refused(s.port, client_context(pki["ca"].pem))
    s.wait_log("sent no certificate and require_client_auth is true")
    # A certificate from another CA.
    _, cert, key = pki["stranger"]
    refused(s.port, client_context(pki["ca"].pem, cert, key))
    s.wait_log("the client's certificate was refused: UnknownIssuer")
    # An expired certificate from the right CA.
    _, cert, key = pki["expired"]
    refused(s.port, client_context(pki["ca"].pem, cert, key))
    s.wait_log("the client's certificate was refused: Expired")


def test_require_client_auth_optional_checks_a_certificate_only_when_sent(pki, server):
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore, pki["ca"].pem, require_client_auth="optional"))
    assert roundtrip(s.port, client_context(pki["ca"].pem)) == "over tls"
    _, cert, key = pki["stranger"]
    refused(s.port, client_context(pki["ca"].pem, cert, key))


def test_optional_mode_serves_plain_and_tls_clients_on_one_port(pki, server):
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore, optional=True))
    assert roundtrip(s.port) == "over tls"
    assert roundtrip(s.port, client_context(pki["ca"].pem)) == "over tls"
    # Both at once, on open sessions.
    plain = Cluster(["127.0.0.1"], port=s.port, protocol_version=4)
    tls = Cluster(["127.0.0.1"], port=s.port, protocol_version=4,
                  ssl_context=client_context(pki["ca"].pem))
    try:
        a, b = plain.connect(), tls.connect()
        a.execute("INSERT INTO tls.t (k, v) VALUES (2, 'plain')")
        assert b.execute("SELECT v FROM tls.t WHERE k = 2").one().v == "plain"
    finally:
        plain.shutdown()
        tls.shutdown()


def test_a_disabled_section_with_a_keystore_is_optional_as_in_cassandra(pki, server):
    # Cassandra 5.0 listens "optionally encrypted" with `enabled: false` and a keystore file.
    keystore, _, _ = pki["server"]
    s = server(f"client_encryption_options:\n  enabled: false\n  keystore: {keystore}\n")
    assert roundtrip(s.port) == "over tls"
    assert roundtrip(s.port, client_context(pki["ca"].pem)) == "over tls"
    s = server(f"client_encryption_options:\n  enabled: false\n  optional: false\n"
               f"  keystore: {keystore}\n")
    refused(s.port, client_context(pki["ca"].pem))


def test_tls_garbage_on_a_plain_port_is_answered_and_closed(pki, server):
    s = server("")
    with pytest.raises(ssl.SSLError):
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as raw:
            client_context(pki["ca"].pem).wrap_socket(raw)
    # Random bytes that start like a TLS record, without a handshake behind them.
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
        raw.sendall(b"\x16\x03\x01\x00\x05hello")
        assert closed_by_server(raw)
    assert roundtrip(s.port) == "over tls"


def read_frame(sock):
    """One whole response envelope (v4 header + body)."""
    answer = b""
    while len(answer) < 9 or len(answer) < 9 + struct.unpack(">I", answer[5:9])[0]:
        chunk = sock.recv(4096)
        assert chunk, f"closed after {answer!r}"
        answer += chunk
    return answer


def tls_options(ctx, port):
    """A TLS connection that sent OPTIONS, and the answer."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    tls = ctx.wrap_socket(raw)
    tls.sendall(options_frame())
    return tls, read_frame(tls)


def test_a_tls_connection_over_max_connections_is_told_so_over_tls(pki, server):
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore, extra="max_connections: 1\n"))
    ctx = client_context(pki["ca"].pem)
    # The start-up probe's connection may still hold the slot for a moment: wait until a
    # connection gets SUPPORTED.
    deadline = time.time() + 10
    while True:
        first, answer = tls_options(ctx, s.port)
        if answer[4] == 0x06:
            break
        first.close()
        assert time.time() < deadline, "no connection got the only slot"
        time.sleep(0.05)
    try:
        second, answer = tls_options(ctx, s.port)
        second.close()
        assert answer[4] == 0x00  # ERROR
        assert struct.unpack(">I", answer[9:13])[0] == 0x1001  # Overloaded
        assert b"Too many connections" in answer
    finally:
        first.close()


def test_the_handshake_timeout_covers_the_tls_handshake(pki, server):
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore, extra="handshake_timeout: 1s\n"))
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
        started = time.time()
        assert closed_by_server(raw, timeout=15)
        assert time.time() - started < 10
    s.wait_log("no TLS handshake within 1s (handshake_timeout)")


def replace_keystore(path, source):
    """Swaps the keystore file whole (rename), as a certificate manager does."""
    tmp = path + ".new"
    shutil.copyfile(source, tmp)
    os.replace(tmp, path)


def wait_cn(port, ca_pem, cn, timeout=15):
    deadline = time.time() + timeout
    while peer_cn(port, ca_pem) != cn:
        assert time.time() < deadline, f"the server never presented {cn}"
        time.sleep(0.1)


def test_a_changed_certificate_file_is_served_to_new_connections(pki, server, tmp_path):
    keystore = str(tmp_path / "keystore.pem")
    shutil.copyfile(pki["server"][0], keystore)
    s = server(tls_yaml(keystore, extra="tls_reload_interval: 200ms\n"))
    assert peer_cn(s.port, pki["ca"].pem) == "server"
    open_cluster = Cluster(["127.0.0.1"], port=s.port, protocol_version=4,
                           ssl_context=client_context(pki["ca"].pem))
    try:
        session = open_cluster.connect()
        replace_keystore(keystore, pki["client"][0])
        wait_cn(s.port, pki["ca"].pem, "client")
        s.wait_log("certificates reloaded (the files changed)")
        # The connection opened before the reload goes on.
        assert session.execute("SELECT release_version FROM system.local").one() is not None
        # A broken file keeps the last good certificate.
        with open(keystore + ".new", "w") as f:
            f.write("not a certificate\n")
        os.replace(keystore + ".new", keystore)
        s.wait_log("reload (the files changed) failed, keeping the previous certificates")
        assert peer_cn(s.port, pki["ca"].pem) == "client"
    finally:
        open_cluster.shutdown()


def test_a_changed_truststore_admits_clients_of_the_new_ca(pki, server, tmp_path):
    truststore = str(tmp_path / "truststore.pem")
    shutil.copyfile(pki["ca"].pem, truststore)
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore, truststore, require_client_auth="true",
                        extra="tls_reload_interval: 200ms\n"))
    _, cert, key = pki["stranger"]
    stranger = client_context(pki["ca"].pem, cert, key)
    refused(s.port, stranger)
    with open(truststore + ".new", "w") as f:
        f.write(open(pki["ca"].pem).read() + open(pki["other"].pem).read())
    os.replace(truststore + ".new", truststore)
    s.wait_log("certificates reloaded (the files changed)")
    assert roundtrip(s.port, stranger) == "over tls"


def test_sighup_reloads_the_certificate(pki, server, tmp_path):
    keystore = str(tmp_path / "keystore.pem")
    shutil.copyfile(pki["server"][0], keystore)
    s = server(tls_yaml(keystore, extra="tls_reload_interval: 0s\n"))
    assert peer_cn(s.port, pki["ca"].pem) == "server"
    replace_keystore(keystore, pki["client"][0])
    s.proc.send_signal(signal.SIGHUP)
    wait_cn(s.port, pki["ca"].pem, "client")
    s.wait_log("certificates reloaded (SIGHUP)")


def start_failure(yaml):
    """Starts a Peregrine that must refuse its config; returns what it printed."""
    s = TlsServer(yaml)
    r = subprocess.run([s.binary, "serve", "--config", s.config, "--listen",
                        f"127.0.0.1:{_free_port()}", "--data-dir", os.path.join(s.root, "data")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    return r.stdout + r.stderr


def test_bad_tls_settings_stop_the_start_with_a_clear_error(pki, tmp_path):
    keystore, cert, key = pki["server"]
    encrypted = str(tmp_path / "encrypted.pem")
    r = subprocess.run(["openssl", "pkcs8", "-topk8", "-in", key, "-passout", "pass:secret",
                        "-out", encrypted], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(encrypted, "a") as f:
        f.write(open(cert).read())
    out = start_failure(tls_yaml(encrypted, extra="  keystore_password: secret\n"))
    assert "holds an encrypted private key, which is not supported" in out
    assert "secret" not in out.replace("keystore_password", "")
    out = start_failure(tls_yaml(keystore, extra="  store_type: JKS\n"))
    assert "only PEM files are supported" in out
    out = start_failure(tls_yaml(keystore, extra="  protocol: TLSv1.1\n"))
    assert "only TLSv1.2 and TLSv1.3" in out
    out = start_failure(tls_yaml(keystore, require_client_auth="true"))
    assert "`truststore` (a PEM file of CA certificates) is required" in out
    out = start_failure(tls_yaml(str(tmp_path / "missing.pem")))
    assert "cannot read `keystore`" in out


def test_protocol_and_cipher_suites_narrow_what_is_offered(pki, server):
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore, extra="  accepted_protocols: [TLSv1.2]\n"
                        "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n"))
    ctx = client_context(pki["ca"].pem)
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
        with ctx.wrap_socket(raw) as tls:
            assert tls.version() == "TLSv1.2"
            assert tls.cipher()[0] == "ECDHE-ECDSA-AES256-GCM-SHA384"
    only13 = client_context(pki["ca"].pem)
    only13.minimum_version = ssl.TLSVersion.TLSv1_3
    with pytest.raises(ssl.SSLError):
        with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
            only13.wrap_socket(raw)


def upstream_tls_yaml(pki, upstream_port, client_cert=True):
    """A proxy config in front of `upstream_port` with TLS to it (mutual unless told not)."""
    y = (f"upstream: [127.0.0.1:{upstream_port}]\n"
         "proxy:\n"
         "  connect_timeout: 3s\n"
         "  upstream_encryption_options:\n"
         "    enabled: true\n"
         f"    truststore: {pki['ca'].pem}\n"
         "    require_endpoint_verification: true\n")
    if client_cert:
        y += f"    keystore: {pki['client'][0]}\n"
    return y


def test_the_proxy_speaks_mutual_tls_to_its_upstream(pki, server):
    # The upstream: a standalone Peregrine that accepts only TLS clients with a certificate.
    keystore, _, _ = pki["server"]
    upstream = server(tls_yaml(keystore, pki["ca"].pem, require_client_auth="true"))
    proxy = server(upstream_tls_yaml(pki, upstream.port))
    assert roundtrip(proxy.port) == "over tls"
    # Without a client certificate the upstream refuses the proxy, and the client hears why.
    proxy = server(upstream_tls_yaml(pki, upstream.port, client_cert=False))
    assert "CertificateRequired" in refused(proxy.port)
    upstream.wait_log("sent no certificate and require_client_auth is true")


def test_the_proxy_serves_tls_on_its_client_port(pki, server):
    upstream = server("")
    keystore, _, _ = pki["server"]
    proxy = server(f"upstream: [127.0.0.1:{upstream.port}]\n" + tls_yaml(keystore))
    assert roundtrip(proxy.port, client_context(pki["ca"].pem)) == "over tls"
    refused(proxy.port)


def test_the_proxy_refuses_an_upstream_certificate_from_another_ca(pki, server):
    upstream = server(tls_yaml(pki["stranger"][0]))
    proxy = server(upstream_tls_yaml(pki, upstream.port))
    assert "UnknownIssuer" in refused(proxy.port)


JAVA_DRIVER = os.path.join(os.path.dirname(__file__), "..", "java-driver")


@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven for the Java driver tests")
def test_the_java_driver_over_mutual_tls(pki, server, tmp_path):
    keystore, _, _ = pki["server"]
    s = server(tls_yaml(keystore, pki["ca"].pem, require_client_auth="true"))
    _, cert, key = pki["client"]
    env = dict(os.environ, CQL_TLS_PORT=str(s.port), CQL_TLS_CA=pki["ca"].pem, CQL_TLS_CERT=cert,
               CQL_TLS_KEY=key)
    r = subprocess.run([os.path.join(JAVA_DRIVER, "run.sh"), str(s.port), "127.0.0.1",
                        "-Dtest=TlsTest", f"-Dperegrine.build.dir={tmp_path}"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    report = os.path.join(tmp_path, "surefire-reports", "peregrine.javadriver.TlsTest.txt")
    with open(report) as f:
        # Both tests ran (none skipped for a missing variable).
        assert "Tests run: 2, Failures: 0, Errors: 0, Skipped: 0" in f.read()
