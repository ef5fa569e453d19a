"""A Peregrine started with authentication on, for the auth tests (they need their own config,
so they cannot use the shared endpoint of tests/conftest.py)."""

import atexit
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

import pytest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster

from conftest import _find_peregrine, _free_port, _port_open

START_TIMEOUT = float(os.environ.get("PEREGRINE_START_TIMEOUT", "60"))

AUTH_CONFIG = (
    "authenticator: PasswordAuthenticator\n"
    "authorizer: CassandraAuthorizer\n"
    "role_manager: CassandraRoleManager\n"
)


# The servers' directories, removed when the test run ends (a server restarts on its own
# directory, so no single test knows when it is done with it).
_ROOTS = []
atexit.register(lambda: [shutil.rmtree(r, ignore_errors=True) for r in _ROOTS])


class AuthServer:
    """One Peregrine with PasswordAuthenticator + CassandraAuthorizer, restartable on the same
    port and data directory."""

    def __init__(self, extra_config="", env=None):
        binary = _find_peregrine()
        if binary is None:
            pytest.fail("no peregrine binary: build it (cargo build) or set PEREGRINE_BIN")
        self.binary = binary
        self.root = tempfile.mkdtemp(prefix="peregrine-auth-")
        _ROOTS.append(self.root)
        self.port = _free_port()
        self.config = os.path.join(self.root, "peregrine.yaml")
        with open(self.config, "w") as f:
            f.write(AUTH_CONFIG + extra_config)
        self.env = dict(os.environ, **(env or {}))
        self.proc = None
        self.starts = 0
        self.log_path = None

    def start(self):
        assert self.proc is None
        self.starts += 1
        self.log_path = os.path.join(self.root, f"peregrine.{self.starts}.log")
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--config", self.config, "--listen", f"127.0.0.1:{self.port}",
             "--data-dir", os.path.join(self.root, "data")],
            stdout=log, stderr=subprocess.STDOUT, env=self.env)
        log.close()
        deadline = time.time() + START_TIMEOUT
        while not _port_open("127.0.0.1", self.port):
            if self.proc.poll() is not None:
                code, self.proc = self.proc.returncode, None
                pytest.fail(f"peregrine exited with {code} during start:\n{self.log()[-4000:]}")
            if time.time() > deadline:
                self.stop()
                pytest.fail(f"peregrine did not open 127.0.0.1:{self.port} in {START_TIMEOUT}s")
            time.sleep(0.05)
        return self

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = "killed after 30 s"
        self.proc = None
        assert code in (0, -signal.SIGTERM), f"peregrine exited with {code}: {self.log()[-2000:]}"

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def cluster(self, user, password, **kw):
        kw.setdefault("protocol_version", 4)
        kw.setdefault("connect_timeout", 10)
        return Cluster(["127.0.0.1"], port=self.port,
                       auth_provider=PlainTextAuthProvider(user, password), **kw)


# ---- a bare native-protocol v4 client, for what drivers never send ---------------------------

OP_ERROR, OP_STARTUP, OP_READY, OP_AUTHENTICATE, OP_QUERY = 0x00, 0x01, 0x02, 0x03, 0x07
OP_AUTH_RESPONSE, OP_AUTH_SUCCESS, OP_RESULT = 0x0F, 0x10, 0x08


def _string(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def _frame(stream, opcode, body):
    return struct.pack(">BBhBi", 4, 0, stream, opcode, len(body)) + body


class RawConnection:
    """A v4 connection speaking single frames: send one, read its answer."""

    def __init__(self, port, source=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10,
                                             source_address=(source, 0) if source else None)

    def request(self, opcode, body, stream=1):
        self.sock.sendall(_frame(stream, opcode, body))
        header = self._read(9)
        _, _, _, op, length = struct.unpack(">BBhBi", header)
        return op, self._read(length)

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed")
            out += chunk
        return out

    def startup(self):
        body = struct.pack(">H", 1) + _string("CQL_VERSION") + _string("3.0.0")
        return self.request(OP_STARTUP, body)

    def auth_response(self, token):
        body = struct.pack(">i", -1) if token is None else struct.pack(">i", len(token)) + token
        return self.request(OP_AUTH_RESPONSE, body)

    def query(self, text):
        b = text.encode()
        return self.request(OP_QUERY, struct.pack(">i", len(b)) + b + struct.pack(">HB", 1, 0))

    def close(self):
        self.sock.close()


def error_of(body):
    """(code, message) of an ERROR body."""
    code, n = struct.unpack(">iH", body[:6])
    return code, body[6:6 + n].decode()
