package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultProtocolVersion;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The same requests on sessions pinned to one protocol version ({@code advanced.protocol.version}),
 * and the keyspace carried per request, which only v5 has.
 */
@ExtendWith(CqlExtension.class)
class ProtocolVersionTest {
    private static final int ROWS = 35;

    @BeforeAll
    static void createTable(Cql cql) {
        cql.session.execute("CREATE TABLE " + cql.table("versions") + " (version text, id int, u uuid, PRIMARY KEY (version, id))");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V3", "V4", "V5"})
    void preparedAndPagedRequests(String version, Cql cql) {
        try (CqlSession session = cql.open(version)) {
            assertEquals(DefaultProtocolVersion.valueOf(version), session.getContext().getProtocolVersion());
            PreparedStatement insert = session.prepare("INSERT INTO " + cql.table("versions") + " (version, id, u) VALUES (?, ?, ?)");
            UUID[] written = new UUID[ROWS];
            for (int i = 0; i < ROWS; i++) {
                written[i] = UUID.randomUUID();
                session.execute(insert.bind(version, i, written[i]));
            }
            PreparedStatement select = session.prepare("SELECT id, u FROM " + cql.table("versions") + " WHERE version = ?");
            ResultSet rs = session.execute(select.bind(version).setPageSize(10));
            int i = 0;
            for (Row r : rs) {
                assertEquals(i, r.getInt("id"));
                assertEquals(written[i], r.getUuid("u"));
                i++;
            }
            assertEquals(ROWS, i);
            assertEquals(4, rs.getExecutionInfos().size(), "pages of 10 for " + ROWS + " rows");
        }
    }

    /** Before v5 the driver refuses a per-request keyspace itself; with v5 the server resolves it. */
    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void keyspacePerRequest(String version, Cql cql) {
        try (CqlSession session = cql.open(version)) {
            SimpleStatement insert = SimpleStatement.newInstance(
                    "INSERT INTO versions (version, id, u) VALUES (?, ?, ?)", "ks-" + version, 1, new UUID(7, 7))
                    .setKeyspace(cql.keyspace);
            if (version.equals("V4")) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> session.execute(insert));
                assertTrue(e.getMessage().contains("per-request keyspace"), e.getMessage());
                return;
            }
            session.execute(insert);
            Row r = session.execute(SimpleStatement.newInstance("SELECT u FROM versions WHERE version = ?", "ks-" + version)
                    .setKeyspace(cql.keyspace)).one();
            assertNotNull(r, "row written with a per-request keyspace");
            assertEquals(new UUID(7, 7), r.getUuid("u"));

            // PREPARE carries the keyspace too; the prepared statement then runs without one.
            PreparedStatement ps = session.prepare(SimpleStatement.newInstance(
                    "SELECT u FROM versions WHERE version = ? AND id = ?").setKeyspace(cql.keyspace));
            assertEquals(cql.keyspace, ps.getResultSetDefinitions().get(0).getKeyspace().asInternal());
            Row p = session.execute(ps.bind("ks-" + version, 1)).one();
            assertNotNull(p, "row read through a statement prepared with a per-request keyspace");
            assertEquals(new UUID(7, 7), p.getUuid("u"));

            // Without a keyspace anywhere the same unqualified query is the server's error.
            assertThrows(InvalidQueryException.class,
                    () -> session.execute("SELECT u FROM versions WHERE version = 'x'"));
        }
    }
}
