"""Server errors reach the driver as the right exception types (that is, the right error codes)."""

import pytest
from cassandra import AlreadyExists, InvalidRequest
from cassandra.protocol import SyntaxException
from cassandra.query import SimpleStatement


def test_unknown_table_is_invalid_request(session, ks):
    with pytest.raises(InvalidRequest) as e:
        session.execute("SELECT * FROM no_such_table")
    assert "no_such_table" in str(e.value)
    assert "code=2200" in str(e.value)


def test_unknown_keyspace_is_invalid_request(session):
    with pytest.raises(InvalidRequest):
        session.execute("SELECT * FROM no_such_keyspace_xyz.t")
    with pytest.raises(InvalidRequest):
        session.execute("USE no_such_keyspace_xyz")


def test_syntax_error(session):
    with pytest.raises(SyntaxException) as e:
        session.execute("SELEKT * FROM system.local")
    assert e.value.code == 0x2000
    with pytest.raises(SyntaxException):
        session.execute("SELECT * FROM system.local WHERE")
    with pytest.raises(SyntaxException):
        session.prepare("INSERT INTO system.local (key) VALUES (?")


def test_already_exists(session, ks):
    session.execute("CREATE TABLE dup (k int PRIMARY KEY)")
    with pytest.raises(AlreadyExists) as e:
        session.execute("CREATE TABLE dup (k int PRIMARY KEY)")
    assert e.value.keyspace == ks and e.value.table == "dup"
    with pytest.raises(AlreadyExists) as e:
        session.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    assert e.value.keyspace == ks and not e.value.table
    # IF NOT EXISTS turns both into no-ops.
    session.execute("CREATE TABLE IF NOT EXISTS dup (k int PRIMARY KEY)")
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")


@pytest.mark.parametrize("stmt", [
    "SELECT nope FROM e WHERE k = 1",                       # unknown column
    "INSERT INTO e (k, nope) VALUES (1, 2)",                # unknown column
    "INSERT INTO e (k, v) VALUES ('text', 1)",              # wrong type for int
    "INSERT INTO e (k, v) VALUES (1, 'not an int')",        # wrong type for int
    "INSERT INTO e (v) VALUES (1)",                         # missing partition key
    "INSERT INTO e (k, c) VALUES (1, 1)",                   # unknown column c
    "SELECT * FROM e WHERE v = 1",                          # would need ALLOW FILTERING
    "UPDATE e SET k = 2 WHERE k = 1",                       # primary key column in SET
    "DELETE FROM e WHERE v = 1",                            # non-key WHERE
    "DROP TABLE e_missing",                                 # unknown table
    "ALTER TABLE e ADD v int",                              # column exists
    "SELECT * FROM e WHERE k = 1 ORDER BY v DESC",          # order by non-clustering
    "INSERT INTO e (k, v) VALUES (1, 1) USING TTL -1",      # negative TTL
])
def test_invalid_requests(session, ks, stmt):
    session.execute("CREATE TABLE IF NOT EXISTS e (k int PRIMARY KEY, v int)")
    with pytest.raises(InvalidRequest):
        session.execute(stmt)
    # The connection stays usable after an error.
    assert session.execute("SELECT count(*) FROM e").one()[0] >= 0


def test_prepare_error_then_connection_still_works(session, ks):
    session.execute("CREATE TABLE pe (k int PRIMARY KEY, v int)")
    with pytest.raises(InvalidRequest):
        session.prepare("SELECT nope FROM pe WHERE k = ?")
    prep = session.prepare("SELECT v FROM pe WHERE k = ?")
    assert session.execute(prep, (1,)).one() is None


def test_many_errors_on_one_connection(session, ks):
    session.execute("CREATE TABLE me (k int PRIMARY KEY)")
    futures = [session.execute_async(SimpleStatement("SELECT * FROM me_missing")) for _ in range(50)]
    for f in futures:
        with pytest.raises(InvalidRequest):
            f.result()
    assert list(session.execute("SELECT * FROM me")) == []
