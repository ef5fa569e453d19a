"""Malformed input on a real socket: the server answers or closes, never crashes or hangs.

Frames are encoded by hand (protocol v4 header: version, flags, stream i16, opcode u8, length i32;
v1/v2 headers have a one-byte stream). Every socket has a timeout, and after each case a fresh
driver connection must still work. The in-process Rust tests (crates/server/tests/protocol.rs)
cover some of the same cases against the server library; these run against the real binary.

Where Peregrine's documented behaviour is stricter than Cassandra 5.0's, the strict check runs
only against Peregrine (`endpoint.kind == "peregrine"`: the binary started by conftest, or
CQL_KIND=peregrine); against Cassandra the looser behaviour noted at each case is accepted:
- an oversized frame: Peregrine answers at once and closes; Cassandra first discards the whole
  announced body (so it answers nothing while the bytes do not come);
- an unsupported version or garbage: Peregrine answers and closes; Cassandra 5.0 answers and keeps
  the connection, answers version 6 as "v6-beta without USE_BETA" in a v6 header, and closes v1/v2
  connections without an answer;
- opcode 0xFF: Cassandra closes without an answer;
- a QUERY before STARTUP: Cassandra closes after the ProtocolError, Peregrine keeps the connection.
"""

import socket
import struct
import time

import pytest

V4 = 0x04
RESPONSE = 0x80
# opcodes
ERROR, STARTUP, READY, OPTIONS, SUPPORTED, QUERY, RESULT, PREPARE, EXECUTE = \
    0x00, 0x01, 0x02, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A
PROTOCOL_ERROR = 0x000A
SERVER_ERROR = 0x0000
TIMEOUT = 5.0


def frame(opcode, body=b"", stream=0, version=V4, flags=0, length=None):
    n = len(body) if length is None else length
    return struct.pack(">BBhBi", version, flags, stream, opcode, n) + body


def string(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def long_string(s):
    b = s.encode()
    return struct.pack(">i", len(b)) + b


def string_map(d):
    return struct.pack(">H", len(d)) + b"".join(string(k) + string(v) for k, v in d.items())


STARTUP_BODY = string_map({"CQL_VERSION": "3.0.0"})


def query_body(cql, consistency=0x0001, flags=0):
    return long_string(cql) + struct.pack(">HB", consistency, flags)


def connect(endpoint):
    s = socket.create_connection((endpoint.host, endpoint.port), timeout=TIMEOUT)
    s.settimeout(TIMEOUT)
    return s


def recv_exact(sock, n):
    """n bytes, or fewer if the peer closes first."""
    out = b""
    while len(out) < n:
        try:
            chunk = sock.recv(n - len(out))
        except ConnectionResetError:
            break
        if not chunk:
            break
        out += chunk
    return out


def read_frame(sock):
    """(version, flags, stream, opcode, body) of a v3+ frame; None if the connection closed."""
    hdr = recv_exact(sock, 9)
    if len(hdr) < 9:
        assert not hdr, f"connection closed inside a header: {hdr!r}"
        return None
    version, flags, stream, opcode, length = struct.unpack(">BBhBi", hdr)
    assert 0 <= length < 1 << 24, f"implausible response length {length}"
    body = recv_exact(sock, length)
    assert len(body) == length, "connection closed inside a response body"
    return version, flags, stream, opcode, body


def error_of(body):
    code, n = struct.unpack(">iH", body[:6])
    return code, body[6:6 + n].decode("utf-8", "replace")


def closed(sock, timeout=TIMEOUT):
    """True when the server closes the connection (EOF or reset) within `timeout`; data before
    the close is skipped."""
    sock.settimeout(timeout)
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    return False


@pytest.fixture
def peregrine(endpoint):
    """True when the endpoint is Peregrine: its documented (stricter) behaviour is checked."""
    return endpoint.kind == "peregrine"


def ready(endpoint):
    s = connect(endpoint)
    s.sendall(frame(STARTUP, STARTUP_BODY))
    f = read_frame(s)
    assert f is not None and f[3] == READY, f
    return s


def assert_serving(endpoint, make_cluster):
    """A raw OPTIONS round trip and a fresh driver connection both work."""
    with connect(endpoint) as s:
        s.sendall(frame(OPTIONS, stream=9))
        f = read_frame(s)
        assert f is not None and (f[2], f[3]) == (9, SUPPORTED), f
    c = make_cluster(protocol_version=4)
    session = c.connect()
    assert session.execute("SELECT key FROM system.local").one().key == "local"
    c.shutdown()


def test_truncated_header_then_close(endpoint, make_cluster):
    for n in (1, 4, 8):
        s = connect(endpoint)
        s.sendall(frame(OPTIONS)[:n])
        s.close()
    # A truncated header on a connection that stays open gets no answer (the server waits for
    # the rest); the rest then arrives and is answered.
    with connect(endpoint) as s:
        full = frame(OPTIONS, stream=3)
        s.sendall(full[:4])
        s.settimeout(0.5)
        with pytest.raises(socket.timeout):
            s.recv(1)
        s.settimeout(TIMEOUT)
        s.sendall(full[4:])
        f = read_frame(s)
        assert (f[2], f[3]) == (3, SUPPORTED), f
    assert_serving(endpoint, make_cluster)


def test_frames_sent_one_byte_at_a_time(endpoint, make_cluster):
    with connect(endpoint) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # (Cassandra needs READY before the next request: it switches its pipeline after STARTUP.)
        for data, want in ((frame(STARTUP, STARTUP_BODY, stream=1), (1, READY)),
                           (frame(QUERY, query_body("SELECT key FROM system.local"), stream=2), (2, RESULT))):
            for i in range(len(data)):
                s.sendall(data[i:i + 1])
            f = read_frame(s)
            assert f is not None and (f[2], f[3]) == want, f
    assert_serving(endpoint, make_cluster)


@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"\xff" * 64,
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(64)),  # a TLS ClientHello start
], ids=["http", "ff", "tls"])
def test_garbage_bytes(endpoint, make_cluster, peregrine, garbage):
    """A first byte that is no protocol version: at most a ProtocolError, then (Peregrine) the
    close."""
    with connect(endpoint) as s:
        s.sendall(garbage)
        hdr = recv_exact(s, 9)
        if hdr:
            assert len(hdr) == 9 and hdr[0] & RESPONSE and hdr[4] == ERROR, hdr
            length = struct.unpack(">i", hdr[5:9])[0]
            code, msg = error_of(recv_exact(s, length))
            assert code == PROTOCOL_ERROR, (code, msg)
        if peregrine:
            assert closed(s), "the connection stays open after garbage"
    assert_serving(endpoint, make_cluster)


@pytest.mark.parametrize("opcode", [0x04, 0x11, 0x20, 0x7F, 0xFF])
def test_unknown_opcode(endpoint, make_cluster, peregrine, opcode):
    """Opcodes no request has (0x04 is unused, 0x11+ do not exist) get a ProtocolError."""
    with ready(endpoint) as s:
        s.sendall(frame(opcode, b"", stream=21))
        f = read_frame(s)
        if f is None and opcode == 0xFF and not peregrine:
            pass  # Cassandra closes the connection without an answer
        else:
            assert f[3] == ERROR, f
            code, msg = error_of(f[4])
            assert code == PROTOCOL_ERROR, (code, msg)
    assert_serving(endpoint, make_cluster)


@pytest.mark.parametrize("opcode", [READY, SUPPORTED, RESULT, 0x0C])
def test_response_only_opcode_from_client(endpoint, make_cluster, opcode):
    """READY/SUPPORTED/RESULT/EVENT are server-to-client only: a client sending one is refused."""
    with ready(endpoint) as s:
        s.sendall(frame(opcode, b"", stream=22))
        f = read_frame(s)
        assert f is not None, "connection closed without an answer"
        assert f[3] == ERROR, f
        assert error_of(f[4])[0] == PROTOCOL_ERROR, error_of(f[4])
    assert_serving(endpoint, make_cluster)


@pytest.mark.parametrize("length", [0x7FFFFFFF, 0x20000000, -1], ids=["2GiB", "512MiB", "negative"])
def test_body_longer_than_max_frame_size(endpoint, make_cluster, peregrine, length):
    """A header announcing more than max_frame_bytes (default 256 MiB; Cassandra 16 MiB) or a
    negative length: ProtocolError on that stream, then the connection is closed. (Cassandra
    answers only once the announced body has arrived and been discarded: there, only the server
    staying up is checked.)"""
    if not peregrine:
        with ready(endpoint) as s:
            s.sendall(frame(QUERY, b"", stream=42, length=length) + b"\x00" * 1024)
        assert_serving(endpoint, make_cluster)
        return
    with ready(endpoint) as s:
        s.sendall(frame(QUERY, b"", stream=42, length=length) + b"\x00" * 1024)
        f = read_frame(s)
        assert f is not None, "connection closed without a ProtocolError"
        assert (f[2], f[3]) == (42, ERROR), f
        code, msg = error_of(f[4])
        assert code == PROTOCOL_ERROR, (code, msg)
        assert closed(s), "the connection stays open after an oversized frame"
    assert_serving(endpoint, make_cluster)


def test_unsupported_version_6(endpoint, make_cluster, peregrine):
    """Version 6 in a v5-shaped header: a ProtocolError in a version the server speaks (3..5),
    on the same stream, then the close. (Cassandra 5.0 knows 6 as v6-beta: it answers in a v6
    header that it needs the USE_BETA flag, and keeps the connection.)"""
    with connect(endpoint) as s:
        s.sendall(frame(OPTIONS, stream=3, version=0x06))
        f = read_frame(s)
        assert f is not None, "connection closed without a ProtocolError"
        version, _flags, stream, opcode, body = f
        assert version & RESPONSE, hex(version)
        assert (version & 0x7F) in ((3, 4, 5) if peregrine else (3, 4, 5, 6)), hex(version)
        assert (stream, opcode) == (3, ERROR), f
        code, msg = error_of(body)
        assert code == PROTOCOL_ERROR, (code, msg)
        assert "6" in msg, msg
        if peregrine:
            assert "(6)" in msg, msg
            assert closed(s)
    assert_serving(endpoint, make_cluster)


def test_unsupported_version_1(endpoint, make_cluster, peregrine):
    """A v1 client gets the ProtocolError in v1 framing (8-byte header, one-byte stream, version
    byte 0x81) so it can read it, then the close. (Cassandra 3.x replied in the client's old
    version; Cassandra 5.0 closes without an answer, accepted there.)"""
    with connect(endpoint) as s:
        # v1 header: version, flags, stream (i8), opcode, length (i32)
        s.sendall(struct.pack(">BBbBi", 0x01, 0, 5, OPTIONS, 0))
        hdr = recv_exact(s, 8)
        if not hdr and not peregrine:
            assert closed(s)
            assert_serving(endpoint, make_cluster)
            return
        assert len(hdr) == 8, f"no v1 error header: {hdr!r}"
        version, _flags, stream, opcode, length = struct.unpack(">BBbBi", hdr)
        assert (version, stream, opcode) == (0x81, 5, ERROR), hdr
        body = recv_exact(s, length)
        assert len(body) == length
        code, msg = error_of(body)
        assert code == PROTOCOL_ERROR, (code, msg)
        assert "(1)" in msg, msg
        assert closed(s)
    assert_serving(endpoint, make_cluster)


def test_query_before_startup(endpoint, make_cluster):
    """ProtocolError. Then either the connection closes (Cassandra) or it is still usable:
    STARTUP, then the query (Peregrine)."""
    with connect(endpoint) as s:
        s.sendall(frame(QUERY, query_body("SELECT key FROM system.local"), stream=1))
        f = read_frame(s)
        assert f is not None and (f[2], f[3]) == (1, ERROR), f
        code, msg = error_of(f[4])
        assert code == PROTOCOL_ERROR, (code, msg)
        assert "STARTUP" in msg, msg
        try:
            s.sendall(frame(STARTUP, STARTUP_BODY, stream=2))
            f = read_frame(s)
        except (ConnectionResetError, BrokenPipeError):
            f = None
        if f is None:
            assert_serving(endpoint, make_cluster)
            return
        assert (f[2], f[3]) == (2, READY), f
        s.sendall(frame(QUERY, query_body("SELECT key FROM system.local"), stream=3))
        f = read_frame(s)
        assert (f[2], f[3]) == (3, RESULT), f
    assert_serving(endpoint, make_cluster)


@pytest.mark.parametrize("opcode,body", [
    (QUERY, struct.pack(">i", 50) + b"SELECT"),                            # string shorter than its length
    (QUERY, long_string("SELECT key FROM system.local")),                  # no consistency/flags
    (QUERY, long_string("SELECT key FROM system.local") + b"\x00"),        # half a consistency
    (QUERY, query_body("SELECT key FROM system.local", flags=0x01)),       # values flag, no values
    (QUERY, query_body("SELECT key FROM system.local", flags=0x01) + struct.pack(">Hi", 1, 100)),
    (QUERY, query_body("SELECT key FROM system.local", flags=0x04)),       # page size flag, no size
    (QUERY, struct.pack(">i", -5)),                                        # negative string length
    (PREPARE, struct.pack(">i", 1000)),
    (EXECUTE, struct.pack(">H", 16) + b"\x01\x02"),                        # prepared id cut short
    (STARTUP, struct.pack(">H", 3) + string("CQL_VERSION")),               # map cut short
    (OPTIONS, b"\x00"),                                                    # OPTIONS has no body; extra byte
], ids=["long-string", "no-consistency", "half-consistency", "no-values", "short-value",
        "no-page-size", "negative-length", "prepare", "execute", "startup-map", "options-extra"])
def test_truncated_body_gets_an_error_and_the_connection_goes_on(endpoint, make_cluster, opcode, body):
    with ready(endpoint) as s:
        s.sendall(frame(opcode, body, stream=11))
        f = read_frame(s)
        assert f is not None, "connection closed instead of an ERROR frame"
        if opcode == OPTIONS and f[3] == SUPPORTED:
            pass  # Cassandra ignores trailing bytes after a complete OPTIONS (an empty message)
        else:
            assert (f[2], f[3]) == (11, ERROR), f
            code, msg = error_of(f[4])
            # ProtocolError; Cassandra answers some decode failures with ServerError.
            assert code in (PROTOCOL_ERROR, SERVER_ERROR), (code, msg)
        s.sendall(frame(QUERY, query_body("SELECT key FROM system.local"), stream=12))
        f = read_frame(s)
        assert f is not None, "connection closed after the error"
        assert (f[2], f[3]) == (12, RESULT), f
    assert_serving(endpoint, make_cluster)


def test_compressed_flag_without_negotiated_compression(endpoint, make_cluster):
    """The compression flag on a connection that negotiated none: Cassandra ignores the flag
    and reads the body as it is (Envelope.Decompressor without a compressor); a ProtocolError
    would do too. Either way an answer, no hang, no crash."""
    with ready(endpoint) as s:
        s.sendall(frame(QUERY, query_body("SELECT key FROM system.local"), stream=13, flags=0x01))
        f = read_frame(s)
        assert f is not None and f[2] == 13, f
        if f[3] == ERROR:
            assert error_of(f[4])[0] == PROTOCOL_ERROR, error_of(f[4])
        else:
            assert f[3] == RESULT, f
    assert_serving(endpoint, make_cluster)


def test_many_abandoned_connections(endpoint, make_cluster):
    """Connections opened and dropped in every state leave the server serving."""
    socks = []
    for i in range(50):
        s = connect(endpoint)
        part = [b"", frame(OPTIONS)[:3], frame(STARTUP, STARTUP_BODY),
                frame(STARTUP, STARTUP_BODY) + frame(QUERY, query_body("SELECT key FROM system.local"))[:20]][i % 4]
        if part:
            s.sendall(part)
        socks.append(s)
    for i, s in enumerate(socks):
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
        s.close()
    assert_serving(endpoint, make_cluster)
