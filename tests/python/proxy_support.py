"""What the proxy test modules share: a real Apache Cassandra 5.0.9 started by
scripts/cassandra.sh, and `peregrine serve --upstream` processes in front of it.

Importing it skips the importing module when the Cassandra jars are not installed
(scripts/setup.sh installs them).
"""

import os
import subprocess
import tempfile
import time

import pytest
from cassandra.cluster import Cluster

from conftest import _find_peregrine, _free_port, _port_open

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.environ.get("PEREGRINE_CACHE", os.path.expanduser("~/.cache/peregrine"))
CASSANDRA_HOME = os.environ.get("PEREGRINE_CASSANDRA_HOME", os.path.join(CACHE, "cassandra-5.0.9"))
SCRIPT = os.path.join(REPO, "scripts", "cassandra.sh")

if not os.path.exists(os.path.join(CASSANDRA_HOME, "lib", "cassandra-all-5.0.9.jar")):
    pytest.skip(f"Cassandra 5.0.9 jars not installed in {CASSANDRA_HOME} (run scripts/setup.sh)",
                allow_module_level=True)


def start_cassandra(port, env=None, clean=False):
    """Starts (or finds running) the Cassandra of `port`; fails the test if it does not answer.
    `clean` wipes its data directory first."""
    r = subprocess.run([SCRIPT, "start", "--port", str(port)] + (["--clean"] if clean else []),
                       capture_output=True, text=True, timeout=300, env=env)
    if r.returncode != 0:
        pytest.fail(f"Cassandra on {port} did not start:\n{r.stdout}\n{r.stderr}")


def stop_cassandra(port, env=None):
    subprocess.run([SCRIPT, "stop", "--port", str(port)], capture_output=True, timeout=120, env=env)


def cassandra_pid(port):
    d = os.environ.get("CASSANDRA_DIR", os.path.join(CACHE, f"cassandra-run-{port}"))
    with open(os.path.join(d, "cassandra.pid")) as f:
        return int(f.read().strip())


def find_peregrine():
    binary = _find_peregrine()
    if binary is None:
        pytest.fail("no peregrine binary: build it (cargo build) or set PEREGRINE_BIN")
    return binary


def metrics(session):
    """`system_views.peregrine_cache` as a dict."""
    return {r.name: r.value for r in session.execute("SELECT * FROM system_views.peregrine_cache")}


def metric(session, name):
    return metrics(session)[name]


def upstream_requests_settled(session, quiet_for, within):
    """The proxy's `upstream_requests_total` once it has not moved for `quiet_for` seconds;
    None if it kept moving for `within`. Reading the metric itself is answered by the proxy
    and sends nothing upstream."""
    deadline = time.monotonic() + within
    last = metric(session, "upstream_requests_total")
    while time.monotonic() < deadline:
        time.sleep(quiet_for)
        now = metric(session, "upstream_requests_total")
        if now == last:
            return now
        last = now
    return None


def wait_upstream_quiet(session, quiet_for=0.3, timeout=10.0):
    """Waits until the proxy has sent nothing upstream for `quiet_for` seconds, so a test that
    counts upstream requests does not count the drivers' background queries (a schema refresh
    after another test's DDL is a dozen of them); the count then (or at `timeout`)."""
    settled = upstream_requests_settled(session, quiet_for, timeout)
    return settled if settled is not None else metric(session, "upstream_requests_total")


class Proxy:
    """One `peregrine serve --upstream` process with the config file `yaml`, on `port` (a free
    one by default), listing `peers` as the other proxies."""

    def __init__(self, upstream, yaml, port=None, peers=(), prefix="peregrine-proxy-"):
        self.port = port or _free_port()
        self.dir = tempfile.mkdtemp(prefix=prefix)
        cfg = os.path.join(self.dir, "proxy.yaml")
        with open(cfg, "w") as f:
            f.write(yaml)
        args = [find_peregrine(), "serve", "--config", cfg, "--listen", f"127.0.0.1:{self.port}",
                "--upstream", upstream, "--data-dir", os.path.join(self.dir, "data")]
        if peers:
            args += ["--proxy-peers", ",".join(peers)]
        self.log_path = os.path.join(self.dir, "proxy.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info")))
        deadline = time.time() + 30
        while not _port_open("127.0.0.1", self.port):
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                pytest.fail("proxy did not start:\n" + self.log_tail(3000))
            time.sleep(0.05)

    def cluster(self, **kw):
        kw.setdefault("connect_timeout", 10)
        return Cluster(["127.0.0.1"], port=self.port, **kw)

    def log_tail(self, n=4000):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()[-n:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()

    def stop_cleanly(self):
        """Stops it and checks it exited 0 (or by the SIGTERM) rather than crashing."""
        self.stop()
        assert self.proc.returncode in (0, -15), self.log_tail(3000)
