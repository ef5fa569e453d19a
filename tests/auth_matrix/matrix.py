"""Role matrix: drives each statement kind through each permission and records the outcome.

For every case (a set of grants given to a fresh login role), a superuser rebuilds the objects
the statements touch (keyspace `mx` with tables `t`, `t2`, type `ty`; roles), gives the grants,
then the fresh role logs in and runs every statement kind in STATEMENTS in order (destructive
ones last). Each outcome is `OK` (plus the rows, for LIST statements) or the error's class and
message, with the per-case role names replaced by placeholders so runs compare.

Run against any server with auth on (PasswordAuthenticator + CassandraAuthorizer):
    python tests/auth_matrix/matrix.py HOST PORT OUT.json [SUPERUSER PASSWORD]
tests/python/test_auth_matrix.py runs it against Peregrine and compares with
tests/auth_matrix/cassandra-5.0.9.json, recorded by this script against Cassandra 5.0.9
(scripts/cassandra.sh with CASSANDRA_AUTH=password), or against a live Cassandra.
"""

import json
import re
import sys
import time
import uuid

from cassandra import InvalidRequest, Unauthorized, AuthenticationFailed
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, NoHostAvailable
from cassandra.query import BatchStatement

# (name, grants). `U` is the case's login role, `R2` a plain role, `P` a parent role of U.
# `super` makes U a superuser, `parentsuper` makes P one and grants P to U; `parent:` grants go
# to P, and P is granted to U.
CASES = [
    ("none", []),
    ("select_table", ["SELECT ON TABLE mx.t"]),
    ("modify_table", ["MODIFY ON TABLE mx.t"]),
    ("select_modify_table", ["SELECT ON TABLE mx.t", "MODIFY ON TABLE mx.t"]),
    ("all_table", ["ALL ON TABLE mx.t"]),
    ("select_keyspace", ["SELECT ON KEYSPACE mx"]),
    ("modify_keyspace", ["MODIFY ON KEYSPACE mx"]),
    ("create_keyspace", ["CREATE ON KEYSPACE mx"]),
    ("alter_keyspace", ["ALTER ON KEYSPACE mx"]),
    ("drop_keyspace", ["DROP ON KEYSPACE mx"]),
    ("alter_table", ["ALTER ON TABLE mx.t"]),
    ("drop_table2", ["DROP ON TABLE mx.t2"]),
    ("authorize_table", ["AUTHORIZE ON TABLE mx.t"]),
    ("authorize_select_table", ["AUTHORIZE ON TABLE mx.t", "SELECT ON TABLE mx.t"]),
    ("create_all_keyspaces", ["CREATE ON ALL KEYSPACES"]),
    ("select_all_keyspaces", ["SELECT ON ALL KEYSPACES"]),
    ("all_all_keyspaces", ["ALL ON ALL KEYSPACES"]),
    ("create_all_roles", ["CREATE ON ALL ROLES"]),
    ("alter_role", ["ALTER ON ROLE R2"]),
    ("drop_role", ["DROP ON ROLE R2"]),
    ("authorize_role", ["AUTHORIZE ON ROLE R2"]),
    ("describe_all_roles", ["DESCRIBE ON ALL ROLES"]),
    ("all_all_roles", ["ALL ON ALL ROLES"]),
    ("inherited", ["parent:SELECT ON KEYSPACE mx", "parent:MODIFY ON KEYSPACE mx"]),
    ("select_auth_roles", ["SELECT ON TABLE system_auth.roles"]),
    ("superuser", ["super"]),
    ("inherited_superuser", ["parentsuper"]),
    ("all_functions", ["ALL ON ALL FUNCTIONS"]),
    ("select_all_tables", ["SELECT ON ALL TABLES IN KEYSPACE mx"]),
    ("create_all_tables", ["CREATE ON ALL TABLES IN KEYSPACE mx"]),
    ("authorize_select_all_keyspaces", ["AUTHORIZE ON ALL KEYSPACES", "SELECT ON ALL KEYSPACES"]),
]

# (name, kind, text). kinds: q = simple query, p = prepared, b = protocol BATCH of the texts
# split on '|'.
STATEMENTS = [
    ("select", "q", "SELECT * FROM mx.t"),
    ("select_prepared", "p", "SELECT * FROM mx.t WHERE k = 1"),
    ("select_count", "q", "SELECT count(*) FROM mx.t"),
    ("insert", "q", "INSERT INTO mx.t (k, v) VALUES (1, 1)"),
    ("insert_prepared", "p", "INSERT INTO mx.t (k, v) VALUES (2, 2)"),
    ("update", "q", "UPDATE mx.t SET v = 3 WHERE k = 1"),
    ("delete", "q", "DELETE FROM mx.t WHERE k = 2"),
    ("insert_lwt", "q", "INSERT INTO mx.t (k, v) VALUES (5, 5) IF NOT EXISTS"),
    ("update_lwt", "q", "UPDATE mx.t SET v = 6 WHERE k = 5 IF v = 5"),
    ("cql_batch", "q", "BEGIN BATCH INSERT INTO mx.t (k, v) VALUES (7, 7); INSERT INTO mx.t2 (k, v) VALUES (7, 7); APPLY BATCH"),
    ("protocol_batch", "b", "INSERT INTO mx.t (k, v) VALUES (8, 8)|UPDATE mx.t SET v = 9 WHERE k = 8"),
    ("use", "q", "USE mx"),
    ("select_system_local", "q", "SELECT release_version FROM system.local"),
    ("select_system_schema", "q", "SELECT keyspace_name FROM system_schema.keyspaces"),
    ("select_auth_roles", "q", "SELECT role FROM system_auth.roles"),
    ("select_auth_role_perms", "q", "SELECT role FROM system_auth.role_permissions"),
    ("describe_keyspaces", "q", "DESCRIBE KEYSPACES"),
    ("describe_table", "q", "DESCRIBE TABLE mx.t"),
    ("create_table", "q", "CREATE TABLE mx.t3 (k int PRIMARY KEY, v int)"),
    ("alter_table", "q", "ALTER TABLE mx.t ADD w int"),
    ("create_type", "q", "CREATE TYPE mx.ty2 (a int)"),
    ("alter_type", "q", "ALTER TYPE mx.ty ADD b int"),
    ("create_keyspace", "q", "CREATE KEYSPACE mx3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"),
    ("alter_keyspace", "q", "ALTER KEYSPACE mx WITH durable_writes = true"),
    ("alter_system_auth", "q", "ALTER KEYSPACE system_auth WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"),
    ("drop_system_auth_table", "q", "DROP TABLE system_auth.roles"),
    ("create_role", "q", "CREATE ROLE R3"),
    ("create_superuser_role", "q", "CREATE ROLE R4 WITH SUPERUSER = true"),
    ("alter_role", "q", "ALTER ROLE R2 WITH LOGIN = true"),
    ("alter_own_login", "q", "ALTER ROLE U WITH LOGIN = true"),
    ("alter_own_superuser", "q", "ALTER ROLE U WITH SUPERUSER = false"),
    ("grant_perm", "q", "GRANT SELECT ON TABLE mx.t TO R2"),
    ("revoke_perm", "q", "REVOKE SELECT ON TABLE mx.t FROM R2"),
    ("grant_all_perm", "q", "GRANT ALL ON TABLE mx.t TO R2"),
    ("grant_role", "q", "GRANT R2 TO R3X"),
    ("revoke_role", "q", "REVOKE R2 FROM R3X"),
    ("list_roles", "q", "LIST ROLES"),
    ("list_roles_of_r2", "q", "LIST ROLES OF R2"),
    ("list_roles_of_self", "q", "LIST ROLES OF U"),
    ("list_users", "q", "LIST USERS"),
    ("list_perms_of_self", "q", "LIST ALL PERMISSIONS OF U"),
    ("list_perms_of_r2", "q", "LIST ALL PERMISSIONS OF R2"),
    ("list_perms", "q", "LIST ALL PERMISSIONS"),
    ("list_perms_on_table", "q", "LIST ALL PERMISSIONS ON TABLE mx.t"),
    ("list_perms_on_table_norecursive", "q", "LIST SELECT ON TABLE mx.t NORECURSIVE"),
    ("list_roles_of_self_norecursive", "q", "LIST ROLES OF U NORECURSIVE"),
    ("grant_functions", "q", "GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE mx TO R2"),
    ("grant_mbeans", "q", "GRANT SELECT ON ALL MBEANS TO R2"),
    ("select_json", "q", "SELECT JSON * FROM mx.t"),
    ("truncate", "q", "TRUNCATE mx.t"),
    ("drop_type", "q", "DROP TYPE mx.ty"),
    ("drop_table2", "q", "DROP TABLE mx.t2"),
    ("drop_role", "q", "DROP ROLE R2"),
    ("drop_keyspace", "q", "DROP KEYSPACE mx"),
]

# Changing a password right after the role was created is refused by Cassandra 5.0 ("can only be
# changed every 5000ms"), so password changes are tested in tests/python/test_auth.py instead.
LISTING = ("list_", "select_auth_", "select_system_schema")

PASSWORD = "matrix-pw"


def connect(host, port, user, password):
    deadline = time.time() + 60
    while True:
        cluster = Cluster([host], port=port, protocol_version=4, connect_timeout=15,
                          auth_provider=PlainTextAuthProvider(user, password))
        try:
            return cluster, cluster.connect()
        except NoHostAvailable:
            cluster.shutdown()
            if time.time() > deadline:
                raise
            time.sleep(0.5)


def outcome(session, kind, text):
    try:
        if kind == "q":
            rows = session.execute(text, timeout=30)
        elif kind == "p":
            rows = session.execute(session.prepare(text), timeout=30)
        else:
            b = BatchStatement()
            for part in text.split("|"):
                b.add(part)
            rows = session.execute(b, timeout=30)
        return "OK", [tuple(str(x) for x in r) for r in rows]
    except (InvalidRequest, Unauthorized) as e:
        return f"ERR {type(e).__name__}: {e}", None
    except Exception as e:  # a Syntax error or anything else: its class and text
        return f"ERR {type(e).__name__}: {e}", None


def normalize(text, names):
    for real, placeholder in names:
        text = re.sub(r"\b%s\b" % re.escape(real), placeholder, text)
    # Driver error prefixes differ only by server details that are not the server's answer.
    text = re.sub(r'Error from server: code=(\w+) \[[^\]]*\] message=', r'code=\1 ', text)
    return text


def run(host, port, superuser="cassandra", password="cassandra", cases=None):
    admin_cluster, admin = connect(host, port, superuser, password)
    results = {}
    try:
        for case, grants in CASES:
            if cases and case not in cases:
                continue
            tag = uuid.uuid4().hex[:6]
            u, r2, r3, r3x, r4, p = (f"mxu_{tag}", f"mxr2_{tag}", f"mxr3_{tag}", f"mxr3x_{tag}",
                                     f"mxr4_{tag}", f"mxp_{tag}")
            names = [(u, "U"), (r2, "R2"), (r3x, "R3X"), (r3, "R3"), (r4, "R4"), (p, "P")]
            admin.execute("DROP KEYSPACE IF EXISTS mx", timeout=60)
            admin.execute("DROP KEYSPACE IF EXISTS mx3", timeout=60)
            admin.execute("CREATE KEYSPACE mx WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", timeout=60)
            admin.execute("CREATE TABLE mx.t (k int PRIMARY KEY, v int)", timeout=60)
            admin.execute("CREATE TABLE mx.t2 (k int PRIMARY KEY, v int)", timeout=60)
            admin.execute("CREATE TYPE mx.ty (a int)", timeout=60)
            admin.execute("INSERT INTO mx.t (k, v) VALUES (1, 1)")
            superuser_opt = "AND SUPERUSER = true " if "super" in grants else ""
            admin.execute(f"CREATE ROLE {u} WITH PASSWORD = '{PASSWORD}' AND LOGIN = true {superuser_opt}")
            admin.execute(f"CREATE ROLE {r2}")
            admin.execute(f"CREATE ROLE {r3x}")
            admin.execute(f"CREATE ROLE {p}" + (" WITH SUPERUSER = true" if "parentsuper" in grants else ""))
            for g in grants:
                if g in ("super", "parentsuper"):
                    continue
                target = u
                if g.startswith("parent:"):
                    g, target = g[len("parent:"):], p
                admin.execute(f"GRANT {g.replace('R2', r2)} TO {target}")
            if any(g.startswith("parent") for g in grants):
                admin.execute(f"GRANT {p} TO {u}")
            cluster, session = connect(host, port, u, PASSWORD)
            row = {}
            try:
                for name, kind, text in STATEMENTS:
                    for real, placeholder in sorted(names, key=lambda n: -len(n[1])):
                        text = re.sub(r"\b%s\b" % placeholder, real, text)
                    status, rows = outcome(session, kind, text)
                    entry = normalize(status, names)
                    if status == "OK" and name.startswith(LISTING):
                        # LIST rows keep the server's order (Cassandra sorts them); table rows
                        # are compared as sets.
                        shown = [normalize(" ".join(r), names) for r in rows
                                 if tag in " ".join(r) or name.startswith("list_roles_of")
                                 or name == "select_system_schema"]
                        if not name.startswith("list_"):
                            shown = sorted(shown)
                        if name == "select_system_schema":
                            shown = sorted(x for x in shown if x.startswith("mx"))
                        entry += " " + json.dumps(shown)
                    row[name] = entry
            finally:
                cluster.shutdown()
            results[case] = row
            for r in (u, r2, r3, r3x, r4, p):
                admin.execute(f"DROP ROLE IF EXISTS {r}")
        admin.execute("DROP KEYSPACE IF EXISTS mx", timeout=60)
        admin.execute("DROP KEYSPACE IF EXISTS mx3", timeout=60)
    finally:
        admin_cluster.shutdown()
    return results


def main():
    host, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    su = sys.argv[4] if len(sys.argv) > 4 else "cassandra"
    pw = sys.argv[5] if len(sys.argv) > 5 else "cassandra"
    results = run(host, port, su, pw)
    with open(out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
