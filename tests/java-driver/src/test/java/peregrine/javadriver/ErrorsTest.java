package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.NodeState;
import com.datastax.oss.driver.api.core.servererrors.AlreadyExistsException;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.servererrors.SyntaxError;
import com.datastax.oss.driver.api.core.type.codec.CodecNotFoundException;
import java.util.Locale;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Server errors map to the driver's exception classes (so the error codes are right), client-side
 * errors never reach the server, and after each the same session keeps working.
 */
@ExtendWith(CqlExtension.class)
class ErrorsTest {
    private static String table;

    @BeforeAll
    static void createTable(Cql cql) {
        table = cql.table("errors");
        cql.session.execute("CREATE TABLE " + table + " (k int PRIMARY KEY, v text)");
    }

    /** The session is still usable: a write and a read on it succeed, and the node is still up. */
    @AfterEach
    void sessionStillWorks(Cql cql) {
        cql.session.execute("INSERT INTO " + table + " (k, v) VALUES (1, 'ok')");
        assertEquals("ok", cql.session.execute("SELECT v FROM " + table + " WHERE k = 1").one().getString("v"));
        Node node = cql.session.getMetadata().getNodes().values().iterator().next();
        assertEquals(NodeState.UP, node.getState());
        assertTrue(node.getOpenConnections() >= 1);
    }

    @Test
    void unknownTableIsInvalidQuery(Cql cql) {
        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> cql.session.execute("SELECT * FROM " + cql.keyspace + ".no_such_table"));
        assertTrue(e.getMessage().toLowerCase(Locale.ROOT).contains("no_such_table"), e.getMessage());
    }

    @Test
    void unknownKeyspaceIsInvalidQuery(Cql cql) {
        assertThrows(InvalidQueryException.class, () -> cql.session.execute("SELECT * FROM no_such_keyspace_jd.t"));
    }

    @Test
    void syntaxErrorIsSyntaxError(Cql cql) {
        assertThrows(SyntaxError.class, () -> cql.session.execute("SELEKT * FROM " + table));
        assertThrows(SyntaxError.class, () -> cql.session.execute("SELECT * FROM " + table + " WHERE"));
    }

    @Test
    void preparingAnUnknownColumnIsInvalidQuery(Cql cql) {
        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> cql.session.prepare("SELECT nope FROM " + table + " WHERE k = ?"));
        assertTrue(e.getMessage().contains("nope"), e.getMessage());
    }

    @Test
    void creatingAnExistingTableIsAlreadyExists(Cql cql) {
        AlreadyExistsException e = assertThrows(AlreadyExistsException.class,
                () -> cql.session.execute("CREATE TABLE " + table + " (k int PRIMARY KEY)"));
        assertTrue(e.getMessage().contains("errors"), e.getMessage());
    }

    /** A value of the wrong Java type for a bind marker fails in the driver, before any request. */
    @Test
    void wrongBoundTypeFailsClientSide(Cql cql) {
        PreparedStatement ps = cql.session.prepare("INSERT INTO " + table + " (k, v) VALUES (?, ?)");
        assertThrows(CodecNotFoundException.class, () -> ps.bind("not an int", "v"));
        assertThrows(CodecNotFoundException.class, () -> ps.boundStatementBuilder().setString("k", "x"));
        assertThrows(CodecNotFoundException.class, () -> ps.boundStatementBuilder().setInt("v", 3));
    }

    /** Without PREPARE the driver cannot check: the server must reject a 5-byte text and an 8-byte bigint for an int. */
    @Test
    void wrongValueSentUnpreparedIsInvalidQuery(Cql cql) {
        assertThrows(InvalidQueryException.class, () -> cql.session.execute(SimpleStatement.newInstance(
                "INSERT INTO " + table + " (k, v) VALUES (?, ?)", "three", "v")));
        assertThrows(InvalidQueryException.class, () -> cql.session.execute(SimpleStatement.newInstance(
                "INSERT INTO " + table + " (k, v) VALUES (?, ?)", 2L, "v")));
    }

    @Test
    void badLiteralIsInvalidQuery(Cql cql) {
        assertThrows(InvalidQueryException.class,
                () -> cql.session.execute("INSERT INTO " + table + " (k, v) VALUES ('one', 'v')"));
        assertThrows(InvalidQueryException.class,
                () -> cql.session.execute("SELECT * FROM " + table + " WHERE v = 'x'"));
    }
}
