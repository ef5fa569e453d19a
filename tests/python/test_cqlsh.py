"""cqlsh 6.2.2 against the endpoint: DESCRIBE (server-side in 6.x), SELECT output, COPY TO/FROM."""

import csv
import os
import subprocess


def run_cqlsh(cqlsh_bin, endpoint, *args, timeout=120, cwd=None):
    cmd = [cqlsh_bin, endpoint.host, str(endpoint.port), "--request-timeout=30", "--connect-timeout=20"]
    if endpoint.user:
        cmd += ["-u", endpoint.user, "-p", endpoint.password]
    env = dict(os.environ, CQLSH_NO_BUNDLED="TRUE", TERM="dumb")
    p = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    return p


def test_describe_keyspaces(cqlsh_bin, endpoint, ks):
    p = run_cqlsh(cqlsh_bin, endpoint, "-e", "DESCRIBE KEYSPACES")
    assert p.returncode == 0, p.stderr
    names = p.stdout.split()
    assert "system" in names and "system_schema" in names and ks in names


def test_describe_table(cqlsh_bin, endpoint, session, ks):
    session.execute("CREATE TABLE dt (k int, c text, v blob, PRIMARY KEY (k, c)) "
                    "WITH CLUSTERING ORDER BY (c DESC) AND comment = 'described'")
    p = run_cqlsh(cqlsh_bin, endpoint, "-e", f"DESCRIBE TABLE {ks}.dt")
    assert p.returncode == 0, p.stderr
    assert f"CREATE TABLE {ks}.dt" in p.stdout
    assert "PRIMARY KEY (k, c)" in p.stdout
    assert "CLUSTERING ORDER BY (c DESC)" in p.stdout
    assert "comment = 'described'" in p.stdout
    p = run_cqlsh(cqlsh_bin, endpoint, "-e", f"DESCRIBE KEYSPACE {ks}")
    assert p.returncode == 0, p.stderr
    assert f"CREATE KEYSPACE {ks}" in p.stdout and f"CREATE TABLE {ks}.dt" in p.stdout


def test_select_output(cqlsh_bin, endpoint, session, ks):
    session.execute("CREATE TABLE so (k int PRIMARY KEY, name text, score double)")
    session.execute("INSERT INTO so (k, name, score) VALUES (1, 'alice', 1.5)")
    session.execute("INSERT INTO so (k, name, score) VALUES (2, 'bob', -2)")
    p = run_cqlsh(cqlsh_bin, endpoint, "-e", f"SELECT k, name, score FROM {ks}.so WHERE k IN (1, 2)")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    header = [line for line in out.splitlines() if "name" in line][0]
    assert [h.strip() for h in header.split("|")] == ["k", "name", "score"]
    assert "alice" in out and "bob" in out and "(2 rows)" in out


def test_cqlsh_error_exit_code(cqlsh_bin, endpoint):
    p = run_cqlsh(cqlsh_bin, endpoint, "-e", "SELECT * FROM no_such_ks_q.t")
    assert p.returncode != 0
    assert "InvalidRequest" in p.stderr or "does not exist" in p.stderr


def test_copy_to_and_from(cqlsh_bin, endpoint, session, ks, tmp_path):
    session.execute("CREATE TABLE cp (k int PRIMARY KEY, v text, n bigint)")
    ins = session.prepare("INSERT INTO cp (k, v, n) VALUES (?, ?, ?)")
    for k in range(100):
        session.execute(ins, (k, f"value {k}", k * 1000))
    out = tmp_path / "cp.csv"
    p = run_cqlsh(cqlsh_bin, endpoint, "-e", f"COPY {ks}.cp (k, v, n) TO '{out}' WITH HEADER = true")
    assert p.returncode == 0, p.stderr
    with open(out, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["k", "v", "n"]
    got = sorted((int(r[0]), r[1], int(r[2])) for r in rows[1:])
    assert got == [(k, f"value {k}", k * 1000) for k in range(100)]
    # And back into another table.
    session.execute("CREATE TABLE cp2 (k int PRIMARY KEY, v text, n bigint)")
    p = run_cqlsh(cqlsh_bin, endpoint, "-e", f"COPY {ks}.cp2 (k, v, n) FROM '{out}' WITH HEADER = true")
    assert p.returncode == 0, p.stderr
    got2 = sorted((r.k, r.v, r.n) for r in session.execute("SELECT k, v, n FROM cp2"))
    assert got2 == got


def test_select_from_system_tables(cqlsh_bin, endpoint):
    """cqlsh checks a SELECT's table against the driver's schema metadata before sending it,
    so the system keyspaces' tables must be listed in system_schema.tables/columns."""
    for query, want in (("SELECT release_version FROM system.local", "release_version"),
                        ("SELECT peer FROM system.peers", "(0 rows)"),
                        ("SELECT keyspace_name FROM system_schema.keyspaces", "system_schema")):
        p = run_cqlsh(cqlsh_bin, endpoint, "-e", query)
        assert p.returncode == 0, (query, p.stderr)
        assert want in p.stdout, (query, p.stdout)
