"""Encryption at rest (`encryption_at_rest`), through the real binary and the Python driver.

Each test runs its own peregrine on its own data dir:
- rows written by the driver are in no file of the data dir in clear (journal before a flush,
  data files after `nodetool flush` and `nodetool compact`), and read back after a restart;
- a wrong key, a key file without the data's key id, and encryption switched off all refuse to
  start with a message saying why, and change nothing (the right key still opens the data);
- SIGKILL with `commitlog_sync: batch`: every acknowledged write comes back from the encrypted
  journal;
- key rotation: a new key appended, `nodetool compact`, then the old key removed: still opens.

Needs the peregrine binary (PEREGRINE_BIN or a build under target/ or $CARGO_TARGET_DIR).
"""

import os
import shutil
import subprocess
import tempfile
import time

import pytest

from test_durability import Server, _find_peregrine, _free_port, wait_for_session

MARKER = "Quetzalcoatl-7731-"
KEY1 = "1 " + "3c" * 32
KEY1_WRONG = "1 " + "3d" * 32
KEY2 = "2 " + "a5" * 32


class EncServer(Server):
    def __init__(self, binary, root, keys, sync="batch", enabled=True):
        self.admin_port = _free_port()
        self.key_file = os.path.join(root, "keys")
        self.write_keys(keys)
        extra = f"admin_listen: 127.0.0.1:{self.admin_port}\n"
        if enabled:
            extra += f"encryption_at_rest:\n  enabled: true\n  key_file: {self.key_file}\n"
        super().__init__(binary, root, sync, extra)

    def write_keys(self, keys):
        with open(self.key_file, "w") as f:
            f.write("# test keys\n" + "".join(k + "\n" for k in keys))
        os.chmod(self.key_file, 0o600)

    def nodetool(self, *args):
        out = subprocess.run([self.binary, "nodetool", "-p", str(self.admin_port), *args],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout

    def refused(self, timeout=60):
        """Starts the server expecting it to exit with an error; returns its log."""
        log_path = os.path.join(self.root, "refused.log")
        with open(log_path, "wb") as log:
            p = subprocess.Popen(
                [self.binary, "serve", "--config", self.config, "--listen",
                 f"127.0.0.1:{self.port}", "--data-dir", self.data],
                stdout=log, stderr=subprocess.STDOUT)
            try:
                code = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                pytest.fail("peregrine started (or hung) where it had to refuse")
        assert code != 0
        return open(log_path, errors="replace").read()


@pytest.fixture
def make_server(request):
    binary = _find_peregrine()
    if binary is None or not os.path.exists(binary):
        pytest.skip("no peregrine binary (cargo build or set PEREGRINE_BIN)")
    made = []
    failed_before = request.session.testsfailed

    def make(keys, **kw):
        root = tempfile.mkdtemp(prefix="peregrine-encryption-")
        s = EncServer(binary, root, keys, **kw)
        made.append(s)
        return s

    yield make
    failed = request.session.testsfailed > failed_before
    for s in made:
        s.kill()
        if failed:
            print(f"logs of {s.root}:\n{s.logs()}")
        shutil.rmtree(s.root, ignore_errors=True)


def files_containing(root, needle):
    needle = needle.encode()
    found = []
    for d, _, files in os.walk(root):
        for name in files:
            path = os.path.join(d, name)
            with open(path, "rb") as f:
                if needle in f.read():
                    found.append(path)
    return found


def write_rows(session, n, start=0):
    session.execute("CREATE KEYSPACE IF NOT EXISTS enc WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE IF NOT EXISTS enc.t (k text PRIMARY KEY, v text)")
    insert = session.prepare("INSERT INTO enc.t (k, v) VALUES (?, ?)")
    for i in range(start, start + n):
        session.execute(insert, (f"{MARKER}k{i}", f"{MARKER}v{i}"))


def read_rows(session):
    return {r.k: r.v for r in session.execute("SELECT k, v FROM enc.t")}


def expected(n):
    return {f"{MARKER}k{i}": f"{MARKER}v{i}" for i in range(n)}


def test_nothing_in_clear_and_rows_survive_a_restart(make_server):
    s = make_server([KEY1])
    s.start()
    c = s.cluster()
    write_rows(wait_for_session(c), 50)
    c.shutdown()
    # Acknowledged in batch mode: in the journal only, sealed.
    assert files_containing(s.data, MARKER) == []
    s.nodetool("flush")
    s.nodetool("compact")
    assert files_containing(s.data, MARKER) == []
    assert os.path.exists(os.path.join(s.data, "encryption.check"))
    s.terminate()
    s.start()
    c = s.cluster()
    assert read_rows(wait_for_session(c)) == expected(50)
    c.shutdown()
    s.terminate()
    assert files_containing(s.data, MARKER) == []


def test_wrong_missing_or_disabled_key_refuses_to_start(make_server):
    s = make_server([KEY1])
    s.start()
    c = s.cluster()
    write_rows(wait_for_session(c), 10)
    c.shutdown()
    s.terminate()

    s.write_keys([KEY1_WRONG])
    log = s.refused()
    assert "does not authenticate with key 1" in log, log[-3000:]
    s.write_keys([KEY2])
    log = s.refused()
    assert "key id 1, which the key file" in log, log[-3000:]
    os.remove(s.key_file)
    log = s.refused()
    assert "cannot read key file" in log, log[-3000:]
    plain = make_server([KEY1], enabled=False)
    plain.data = s.data
    log = plain.refused()
    assert "is encrypted" in log and "encryption_at_rest" in log, log[-3000:]

    # The refusals changed nothing: the right key opens every row.
    s.write_keys([KEY1])
    s.start()
    c = s.cluster()
    assert read_rows(wait_for_session(c)) == expected(10)
    c.shutdown()
    s.terminate()


def test_kill_9_recovers_every_acknowledged_write_from_the_encrypted_journal(make_server):
    s = make_server([KEY1], sync="batch")
    s.start()
    c = s.cluster()
    write_rows(wait_for_session(c), 40)
    c.shutdown()
    s.kill()
    journals = [f for f in os.listdir(s.data) if f.endswith(".jnl")]
    assert journals, os.listdir(s.data)
    assert files_containing(s.data, MARKER) == []
    s.start()
    c = s.cluster()
    assert read_rows(wait_for_session(c)) == expected(40)
    c.shutdown()
    s.terminate()


def test_rotation_then_compaction_frees_the_old_key(make_server):
    s = make_server([KEY1])
    s.start()
    c = s.cluster()
    write_rows(wait_for_session(c), 20)
    c.shutdown()
    s.nodetool("flush")
    s.terminate()

    s.write_keys([KEY1, KEY2])
    s.start()
    c = s.cluster()
    session = wait_for_session(c)
    write_rows(session, 20, start=20)
    assert read_rows(session) == expected(40)
    c.shutdown()
    s.nodetool("compact")
    s.terminate()

    s.write_keys([KEY2])
    s.start()
    c = s.cluster()
    assert read_rows(wait_for_session(c)) == expected(40)
    c.shutdown()
    s.terminate()
    assert files_containing(s.data, MARKER) == []
