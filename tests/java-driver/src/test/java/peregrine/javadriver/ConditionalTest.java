package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BatchType;
import com.datastax.oss.driver.api.core.cql.ColumnDefinition;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 17 item 1's conditional operations at v4 and v5 with Cassandra's result rows:
 * {@code wasApplied()} and the columns a failed condition returns for INSERT IF NOT EXISTS,
 * UPDATE IF (regular, static and map-element conditions), DELETE IF EXISTS and conditional
 * batches (also mixing IF NOT EXISTS with column conditions); SERIAL reads and a serial
 * consistency set on the statement.
 */
@ExtendWith(CqlExtension.class)
class ConditionalTest {
    private static String t;

    @BeforeAll
    static void createTable(Cql cql) {
        t = cql.table("cond");
        cql.session.execute("CREATE TABLE " + t + " (k int, c int, v text, n int, st text static, m map<text, int>,"
                + " PRIMARY KEY (k, c))");
    }

    private static int key(String version) {
        return version.equals("V4") ? 4 : 5;
    }

    /** The result's column names, [applied] first. */
    private static List<String> columns(ResultSet rs) {
        List<String> out = new ArrayList<>();
        for (ColumnDefinition d : rs.getColumnDefinitions()) {
            out.add(d.getName().asInternal());
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void insertIfNotExistsAndDeleteIfExists(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version);
        PreparedStatement insert = s.prepare("INSERT INTO " + t + " (k, c, v, n) VALUES (?, ?, ?, ?) IF NOT EXISTS");
        ResultSet first = s.execute(insert.bind(k, 1, "first", 1).setSerialConsistencyLevel(ConsistencyLevel.LOCAL_SERIAL));
        assertTrue(first.wasApplied());
        assertEquals(List.of("[applied]"), columns(first));

        ResultSet second = s.execute(insert.bind(k, 1, "second", 2));
        assertFalse(second.wasApplied());
        assertEquals(List.of("[applied]", "k", "c", "st", "m", "n", "v"), columns(second), "the existing row, all columns");
        Row existing = second.one();
        assertEquals("first", existing.getString("v"));
        assertEquals(1, existing.getInt("n"));
        assertTrue(existing.isNull("st") && existing.isNull("m"));

        PreparedStatement delete = s.prepare("DELETE FROM " + t + " WHERE k = ? AND c = ? IF EXISTS");
        ResultSet gone = s.execute(delete.bind(k, 1));
        assertTrue(gone.wasApplied());
        ResultSet again = s.execute(delete.bind(k, 1));
        assertFalse(again.wasApplied());
        assertEquals(List.of("[applied]"), columns(again), "nothing to show when the row does not exist");
        Row serial = s.execute(s.prepare("SELECT v FROM " + t + " WHERE k = ? AND c = ?").bind(k, 1)
                .setConsistencyLevel(ConsistencyLevel.SERIAL)).one();
        assertNull(serial, "a SERIAL read sees the delete");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void updateIfConditions(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version) + 10;
        s.execute(s.prepare("INSERT INTO " + t + " (k, c, v, n, st, m) VALUES (?, 1, 'a', 10, 'static', ?)").bind(k, Map.of("x", 1)));
        PreparedStatement update = s.prepare("UPDATE " + t + " SET v = ? WHERE k = ? AND c = 1 IF v = ? AND n > ?");
        ResultSet failed = s.execute(update.bind("b", k, "a", 10));
        assertFalse(failed.wasApplied());
        assertEquals(List.of("[applied]", "v", "n"), columns(failed), "the condition's columns, in their order");
        Row r = failed.one();
        assertEquals(10, r.getInt("n"));
        assertEquals("a", r.getString("v"));
        assertTrue(s.execute(update.bind("b", k, "a", 9)).wasApplied());

        PreparedStatement onElement = s.prepare("UPDATE " + t + " SET m[?] = ? WHERE k = ? AND c = 1 IF m[?] = ?");
        ResultSet elementFailed = s.execute(onElement.bind("y", 2, k, "x", 5));
        assertFalse(elementFailed.wasApplied());
        assertEquals(Map.of("x", 1), elementFailed.one().getMap("m", String.class, Integer.class));
        assertTrue(s.execute(onElement.bind("y", 2, k, "x", 1)).wasApplied());

        PreparedStatement onStatic = s.prepare("UPDATE " + t + " SET st = ? WHERE k = ? IF st = ?");
        ResultSet staticFailed = s.execute(onStatic.bind("new", k, "other"));
        assertFalse(staticFailed.wasApplied());
        assertEquals("static", staticFailed.one().getString("st"));
        assertTrue(s.execute(onStatic.bind("new", k, "static")).wasApplied());
        ResultSet missing = s.execute(update.bind("c", k + 100, "a", 0));
        assertFalse(missing.wasApplied());
        assertEquals(List.of("[applied]"), columns(missing), "a condition on a missing row returns [applied] only");

        Row now = s.execute(s.prepare("SELECT v, st, m FROM " + t + " WHERE k = ? AND c = 1").bind(k)
                .setConsistencyLevel(ConsistencyLevel.SERIAL)).one();
        assertNotNull(now);
        assertEquals("b", now.getString("v"));
        assertEquals("new", now.getString("st"));
        assertEquals(Map.of("x", 1, "y", 2), now.getMap("m", String.class, Integer.class));

        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("UPDATE " + t + " SET v = ? WHERE k = ? IF k = ?"));
        assertEquals("PRIMARY KEY column 'k' cannot have IF conditions", e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void conditionalBatch(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version) + 20;
        PreparedStatement insert = s.prepare("INSERT INTO " + t + " (k, c, v) VALUES (?, ?, ?) IF NOT EXISTS");
        PreparedStatement update = s.prepare("UPDATE " + t + " SET v = ? WHERE k = ? AND c = ? IF v = ?");
        ResultSet created = s.execute(BatchStatement.newInstance(BatchType.LOGGED, insert.bind(k, 1, "one"), insert.bind(k, 2, "two")));
        assertTrue(created.wasApplied());

        BatchStatement conflicting = BatchStatement.newInstance(BatchType.LOGGED,
                update.bind("uno", k, 1, "one"), update.bind("dos", k, 2, "wrong"));
        ResultSet failed = s.execute(conflicting);
        assertFalse(failed.wasApplied());
        assertEquals(List.of("[applied]", "k", "c", "v"), columns(failed));
        List<String> rows = new ArrayList<>();
        for (Row r : failed) {
            assertFalse(r.getBoolean("[applied]"));
            rows.add(r.getInt("c") + "=" + r.getString("v"));
        }
        assertEquals(List.of("1=one", "2=two"), rows, "the current values of every conditioned row");

        ResultSet applied = s.execute(BatchStatement.newInstance(BatchType.LOGGED,
                update.bind("uno", k, 1, "one"), update.bind("dos", k, 2, "two")).setSerialConsistencyLevel(ConsistencyLevel.SERIAL));
        assertTrue(applied.wasApplied());
        List<String> now = new ArrayList<>();
        s.execute(s.prepare("SELECT c, v FROM " + t + " WHERE k = ?").bind(k)).forEach(r -> now.add(r.getInt("c") + "=" + r.getString("v")));
        assertEquals(List.of("1=uno", "2=dos"), now);

        // With an IF NOT EXISTS among the conditions Cassandra reads whole rows: every column,
        // the rows in clustering order, statics null as no statement touches them.
        ResultSet mixed = s.execute(BatchStatement.newInstance(BatchType.LOGGED,
                update.bind("x", k, 2, "wrong"), insert.bind(k, 1, "again")));
        assertFalse(mixed.wasApplied());
        assertEquals(List.of("[applied]", "k", "c", "st", "m", "n", "v"), columns(mixed));
        List<String> whole = new ArrayList<>();
        for (Row r : mixed) {
            assertTrue(r.isNull("st") && r.isNull("m") && r.isNull("n"));
            whole.add(r.getInt("c") + "=" + r.getString("v"));
        }
        assertEquals(List.of("1=uno", "2=dos"), whole);

        InvalidQueryException e = assertThrows(InvalidQueryException.class, () -> s.execute(BatchStatement.newInstance(
                BatchType.LOGGED, update.bind("x", k, 1, "uno"), update.bind("y", k + 1, 1, "x"))));
        assertEquals("Batch with conditions cannot span multiple partitions", e.getMessage());
    }
}
