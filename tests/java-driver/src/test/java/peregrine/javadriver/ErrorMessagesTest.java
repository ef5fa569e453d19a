package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.servererrors.SyntaxError;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Cassandra 5.0.9's error classes and message texts through the driver's exception types, at v4
 * and v5: applications match on these texts, so each is compared whole.
 */
@ExtendWith(CqlExtension.class)
class ErrorMessagesTest {
    private static String t;

    @BeforeAll
    static void createTable(Cql cql) {
        t = cql.table("errs");
        cql.session.execute("CREATE TABLE " + t + " (k int, a int, b int, v text, PRIMARY KEY (k, a, b))");
    }

    private static void invalid(CqlSession s, String cql, String message) {
        InvalidQueryException e = assertThrows(InvalidQueryException.class, () -> s.execute(cql), cql);
        assertEquals(message, e.getMessage(), cql);
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void wrongBoundValuesAndLiterals(String version, Cql cql) {
        CqlSession s = cql.at(version);
        InvalidQueryException e = assertThrows(InvalidQueryException.class, () -> s.execute(SimpleStatement.newInstance(
                "INSERT INTO " + t + " (k, a, b, v) VALUES (?, 1, 1, 'v')", "three")));
        assertEquals("Expected 4 or 0 byte int (5)", e.getMessage());
        e = assertThrows(InvalidQueryException.class, () -> s.execute(SimpleStatement.newInstance(
                "SELECT v FROM " + t + " WHERE k = ?", 2L)));
        assertEquals("Expected 4 or 0 byte int (8)", e.getMessage());
        invalid(s, "INSERT INTO " + t + " (k, a, b, v) VALUES (1, 1, 1, 5)", "Invalid INTEGER constant (5) for \"v\" of type text");
        invalid(s, "SELECT * FROM " + t + " WHERE k = 'a'", "Invalid STRING constant (a) for \"k\" of type int");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void syntaxErrors(String version, Cql cql) {
        CqlSession s = cql.at(version);
        SyntaxError e = assertThrows(SyntaxError.class, () -> s.execute("SELEKT * FROM " + t));
        assertEquals("line 1:0 no viable alternative at input 'SELEKT' ([SELEKT]...)", e.getMessage());
        e = assertThrows(SyntaxError.class, () -> s.execute("SELECT * FROM " + t + " WHERE"));
        assertEquals("line 0:-1 no viable alternative at input '<EOF>'", e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void unknownObjects(String version, Cql cql) {
        CqlSession s = cql.at(version);
        invalid(s, "SELECT * FROM " + cql.keyspace + ".no_such_table", "table no_such_table does not exist");
        invalid(s, "SELECT * FROM no_such_keyspace_jd.t", "keyspace no_such_keyspace_jd does not exist");
        invalid(s, "SELECT nope FROM " + t, "Undefined column name nope in table " + t);
        invalid(s, "SELECT nope(v) FROM " + t, "Unknown function 'nope'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void restrictionAndStatementErrors(String version, Cql cql) {
        CqlSession s = cql.at(version);
        invalid(s, "SELECT * FROM " + t + " WHERE k = 1 AND b = 1",
                "PRIMARY KEY column \"b\" cannot be restricted as preceding column \"a\" is not restricted");
        invalid(s, "SELECT * FROM " + t + " WHERE k = 1 ORDER BY b",
                "Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY");
        invalid(s, "INSERT INTO " + t + " (k, a, v) VALUES (1, 1, 'x')", "Some clustering keys are missing: b");
        invalid(s, "UPDATE " + t + " SET k = 3 WHERE k = 1 AND a = 1 AND b = 1", "PRIMARY KEY part k found in SET part");
        invalid(s, "UPDATE " + t + " SET v = 'x' WHERE a = 1 AND b = 1", "Some partition key parts are missing: k");
        invalid(s, "DELETE FROM " + t + " WHERE k = 1 AND b = 1",
                "PRIMARY KEY column \"b\" cannot be restricted as preceding column \"a\" is not restricted");
    }
}
