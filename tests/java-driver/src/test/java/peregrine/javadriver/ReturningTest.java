package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.servererrors.SyntaxError;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code DELETE ... RETURNING} (Peregrine's extension, docs/extensions.md) through the unchanged
 * driver: an ordinary Rows result, prepared with bind markers, at v4 and v5, and the
 * conditional form's {@code [applied]} read by {@code wasApplied()}. Cassandra (and the proxy,
 * which passes the statement to it) answer with a syntax error: the test is then skipped.
 */
@ExtendWith(CqlExtension.class)
class ReturningTest {
    @Test
    void deleteReturningAnswersWithTheDeletedRows(Cql cql) {
        String t = cql.table("ret_t");
        cql.session.execute("CREATE TABLE " + t + " (k int, c int, v text, PRIMARY KEY (k, c))");
        try {
            cql.session.execute("DELETE FROM " + t + " WHERE k = 0 RETURNING *");
        } catch (SyntaxError e) {
            Assumptions.abort("the endpoint is not standalone Peregrine: " + e.getMessage());
        }
        for (String version : List.of("V4", "V5")) {
            try (CqlSession s = cql.open(version)) {
                for (int c = 1; c <= 3; c++) {
                    s.execute("INSERT INTO " + t + " (k, c, v) VALUES (1, " + c + ", 'v" + c + "')");
                }
                PreparedStatement row = s.prepare("DELETE FROM " + t + " WHERE k = ? AND c = ? RETURNING c, v");
                Row r = s.execute(row.bind(1, 2)).one();
                assertEquals(2, r.getInt("c"));
                assertEquals("v2", r.getString("v"));
                assertNull(s.execute(row.bind(1, 2)).one(), "a second delete finds nothing");

                PreparedStatement cond = s.prepare("DELETE FROM " + t + " WHERE k = ? AND c = ? IF v = ? RETURNING v");
                ResultSet rs = s.execute(cond.bind(1, 1, "nope"));
                assertFalse(rs.wasApplied());
                assertEquals("v1", rs.one().getString("v"));
                rs = s.execute(cond.bind(1, 1, "v1"));
                assertTrue(rs.wasApplied());
                assertEquals("v1", rs.one().getString("v"));

                List<Row> rest = s.execute(s.prepare("DELETE FROM " + t + " WHERE k = ? RETURNING *").bind(1)).all();
                assertEquals(1, rest.size());
                assertEquals(3, rest.get(0).getInt("c"));
                assertNull(s.execute("SELECT * FROM " + t + " WHERE k = 1").one());
            }
        }
    }
}
