"""What test_nodetool.py and test_metrics.py share: a Peregrine started with its admin endpoint
on a free port, `peregrine nodetool` against it, and a small Prometheus text-format parser."""

import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest
from cassandra.cluster import Cluster

from conftest import _find_peregrine, _free_port, _port_open

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "nodetool")


def binary():
    b = _find_peregrine()
    if b is None:
        pytest.fail("no peregrine binary: build it (cargo build) or set PEREGRINE_BIN")
    return b


class Server:
    """`peregrine serve` with `--admin-listen` on a free loopback port (or `admin_yaml`)."""

    def __init__(self, data_dir=None, yaml="", admin=True):
        self.port = _free_port()
        self.admin_port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="peregrine-admin-")
        self.data_dir = data_dir or os.path.join(self.dir, "data")
        cfg = os.path.join(self.dir, "peregrine.yaml")
        with open(cfg, "w") as f:
            f.write(yaml)
        args = [binary(), "serve", "--config", cfg, "--listen", f"127.0.0.1:{self.port}",
                "--data-dir", self.data_dir]
        if admin:
            args += ["--admin-listen", f"127.0.0.1:{self.admin_port}"]
        self.log_path = os.path.join(self.dir, "peregrine.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while not (_port_open("127.0.0.1", self.port) and (not admin or _port_open("127.0.0.1", self.admin_port))):
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                pytest.fail("peregrine did not start:\n" + self.log_tail())
            time.sleep(0.05)

    def log_tail(self, n=4000):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()[-n:]

    def cluster(self, **kw):
        kw.setdefault("connect_timeout", 10)
        kw.setdefault("protocol_version", 4)
        return Cluster(["127.0.0.1"], port=self.port, **kw)

    def nodetool(self, *args, creds=()):
        return nodetool("-h", "127.0.0.1", "-p", str(self.admin_port), *creds, *args)

    def scrape(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.admin_port}/metrics", timeout=10) as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain")
            return r.read().decode()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()

    def cleanup(self):
        self.stop()
        assert self.proc.returncode in (0, -15), self.log_tail()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    """A Peregrine with its admin endpoint, for one test module."""
    s = Server()
    yield s
    s.cleanup()


@pytest.fixture(scope="module")
def session(server):
    """A driver session on `server` (this module's, not the session-wide endpoint's)."""
    c = server.cluster()
    yield c.connect()
    c.shutdown()


def nodetool(*args):
    """Runs `peregrine nodetool ARGS`: (exit code, stdout, stderr)."""
    r = subprocess.run([binary(), "nodetool", *args], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def http(port, method, path, body=None, headers=None):
    """(status, body) of one request to the admin endpoint."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def parse_prometheus(text):
    """The Prometheus text format (0.0.4): {family: {"type": t, "samples": [(name, labels, value)]}}.
    Fails on any line that does not parse, a sample outside a declared family, or a family
    declared twice."""
    families = {}
    current = None
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert name not in families, f"family {name} declared twice"
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            families[name] = {"type": kind, "samples": []}
            current = name
            continue
        assert not line.startswith("#"), line
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name, _, labels_text, value = m.groups()
        labels = {}
        if labels_text:
            consumed = 0
            for lm in LABEL.finditer(labels_text):
                assert lm.start() == consumed, f"bad labels in {line!r}"
                labels[lm.group(1)] = lm.group(2)
                consumed = lm.end()
            assert consumed == len(labels_text), f"bad labels in {line!r}"
        v = float(value)  # "+Inf", "NaN" parse too
        assert current is not None and (name == current or name.startswith(current + "_")), \
            f"sample {name} outside its family ({current})"
        families[current]["samples"].append((name, labels, v))
    return families


def value(families, name, **labels):
    """The one sample `name` with exactly these labels (plus any others when not given)."""
    family = name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in families:
            family = name[: -len(suffix)]
    matches = [v for (n, l, v) in families[family]["samples"]
               if n == name and all(l.get(k) == str(w) for k, w in labels.items())]
    assert len(matches) == 1, f"{name}{labels}: {len(matches)} samples"
    return matches[0]
